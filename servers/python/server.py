from mcp.server import MCPServer

mcp = MCPServer("reverse-text", version="1.0.0")


@mcp.tool()
def reverse_text(text: str) -> str:
    """Reverse text by Unicode code points."""
    return text[::-1]


if __name__ == "__main__":
    mcp.run()
