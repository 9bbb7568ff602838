"""reverse_text over Streamable HTTP at http://127.0.0.1:PORT/mcp. The SDK rejects request
bodies over max_request_body_size (4 MiB by default, answered 413): raised to 16 MiB, so the
5 MiB tool call the stdio server takes is taken here too."""

import argparse

from mcp.server import MCPServer

mcp = MCPServer("reverse-text", version="1.0.0")


@mcp.tool()
def reverse_text(text: str) -> str:
    """Reverse text by Unicode code points."""
    return text[::-1]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="reverse_text over Streamable HTTP at /mcp")
    parser.add_argument("--port", type=int, required=True)
    mcp.run(transport="streamable-http", host="127.0.0.1", port=parser.parse_args().port,
            max_request_body_size=16 * 1024 * 1024)
