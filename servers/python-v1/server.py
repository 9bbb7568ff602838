# The reference server for mcp 1.x, whose API differs from 2.x: the shape of the PyPI README
# of mcp 1.29.0 (FastMCP, @mcp.tool()); 1.x's FastMCP takes no version, so the server
# reports the SDK's own version. Built by build-recipes/python.toml's [[versions.sources]].
from mcp.server.fastmcp import FastMCP

mcp = FastMCP("reverse-text")


@mcp.tool()
def reverse_text(text: str) -> str:
    """Reverse text by Unicode code points."""
    return text[::-1]


if __name__ == "__main__":
    mcp.run()
