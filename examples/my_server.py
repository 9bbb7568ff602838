"""A stdio MCP server with one tool, reverse_text, standard library only: the example server of
the README ("Any server, stdio or HTTP"). START_DELAY_S plays a slower build."""

import json, os, sys, time

time.sleep(float(os.environ.get("START_DELAY_S", "0")))
TOOL = {"name": "reverse_text", "inputSchema": {"type": "object",
        "properties": {"text": {"type": "string"}}, "required": ["text"]}}
for line in sys.stdin:
    msg = json.loads(line)
    method, mid = msg.get("method"), msg.get("id")
    if mid is None:
        continue  # a notification
    if method == "initialize":
        reply = {"result": {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                            "serverInfo": {"name": "my-server", "version": "0.1.0"}}}
    elif method == "tools/list":
        reply = {"result": {"tools": [TOOL]}}
    elif method == "tools/call":
        text = msg["params"]["arguments"]["text"]
        reply = {"result": {"content": [{"type": "text", "text": text[::-1]}]}}
    elif method == "ping":
        reply = {"result": {}}
    else:
        reply = {"error": {"code": -32601, "message": "Method not found"}}
    print(json.dumps({"jsonrpc": "2.0", "id": mid, **reply}), flush=True)
