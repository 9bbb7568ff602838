"""What the Python SDK's client (mcp) makes of each case's bytes, run with the built Python
reference server's venv. argv[1]: a JSON file {name: hex}. Prints {name: {carrier: [outcome,
value]}}: outcome "reads" (value: str(result.x)), "rejects" (value: the error) or "ends" (the
transport raised: the client stops reading the server).

- line: mcp.client.stdio.stdio_client itself, on a child process that writes the bytes and a
  newline (its reader: anyio's TextReceiveStream, then jsonrpc_message_adapter.validate_json;
  a line that does not validate reaches the session as an exception, and is dropped);
- body, event: mcp.client.streamable_http.streamable_http_client itself, over an httpx2
  MockTransport answering a request with the bytes as an application/json body or as the data
  of a text/event-stream event (a parse error becomes a -32700 error answer).
"""

import json
import os
import sys
import tempfile

import anyio
import httpx2
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCError, JSONRPCRequest, JSONRPCResponse

WRITER = "import sys; sys.stdout.buffer.write(open(sys.argv[1], 'rb').read()); sys.stdout.flush()"
WAIT_S = 5.0


def outcome(item) -> list:
    if isinstance(item, SessionMessage) and isinstance(item.message, JSONRPCResponse):
        return ["reads", str(item.message.result.get("x"))]
    if isinstance(item, SessionMessage) and isinstance(item.message, JSONRPCError):
        return ["rejects", item.message.error.message[:200]]
    return ["rejects", repr(item)[:200]]


async def line(data: bytes, folder: str) -> list:
    fd, path = tempfile.mkstemp(dir=folder)
    os.write(fd, data + b"\n")
    os.close(fd)
    server = StdioServerParameters(command=sys.executable, args=["-c", WRITER, path])
    try:
        async with stdio_client(server) as (read, _write):
            with anyio.fail_after(WAIT_S):
                return outcome(await read.receive())
    except Exception as err:  # the transport's task group raised
        first = getattr(err, "exceptions", [err])[0]
        return ["ends", repr(first)[:200]]


async def http(data: bytes, content_type: str) -> list:
    body = (data if content_type == "application/json"
            else b"event: message\ndata: " + data + b"\n\n")
    client = httpx2.AsyncClient(transport=httpx2.MockTransport(
        lambda _: httpx2.Response(200, headers={"content-type": content_type}, content=body)))
    async with streamable_http_client("http://probe.invalid/mcp",
                                      http_client=client) as (read, write):
        await write.send(SessionMessage(JSONRPCRequest(jsonrpc="2.0", id=1, method="ping")))
        with anyio.fail_after(WAIT_S):
            return outcome(await read.receive())


async def main() -> None:
    with open(sys.argv[1]) as handle:
        cases = {name: bytes.fromhex(hexed) for name, hexed in json.load(handle).items()}
    out = {name: {} for name in cases}

    async def one(name, carrier, probe, *args):
        out[name][carrier] = await probe(cases[name], *args)

    with tempfile.TemporaryDirectory() as folder:
        async with anyio.create_task_group() as group:
            for name in cases:
                group.start_soon(one, name, "line", line, folder)
                group.start_soon(one, name, "body", http, "application/json")
                group.start_soon(one, name, "event", http, "text/event-stream")
    print(json.dumps(out))


anyio.run(main)
