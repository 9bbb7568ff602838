"""A Streamable HTTP MCP server for the tests (standard library only), with switches that make it
answer the ways real servers do. Usage: fake_http_server.py --port PORT [--switch ...].

POST /mcp takes one JSON-RPC message: initialize opens a session (Mcp-Session-Id), later
handshake-era requests must name it (404 for an unknown one), notifications get 202, DELETE
ends the session; a request whose params._meta names its revision is served statelessly
once MCP-Protocol-Version, Mcp-Method and (tools/call) Mcp-Name match the body (else 400
with -32020, HeaderMismatch). Answers are application/json, or with --sse an event stream
(a priming event, a comment, a log notification, then the answer).
"""

import argparse
import base64
import gzip
import json
import os
import queue
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--host", default="127.0.0.1", help="the address to listen on")
parser.add_argument("--sse", action="store_true", help="answer requests with an event stream")
parser.add_argument("--start-delay", type=float, default=0, help="seconds before listening")
parser.add_argument("--status", type=int, default=0, help="answer tools/call with this status")
parser.add_argument("--slow", type=float, default=0, help="seconds before any tools/call answer")
parser.add_argument("--slow-load", type=float, default=0,
                    help="seconds before answering tools/call from the load engine (its agent)")
parser.add_argument("--stall-at", type=float, default=None, metavar="S",
                    help="S seconds after the load engine's first tools/call, hold every "
                         "tools/call that arrives until the stall ends (--stall-for)")
parser.add_argument("--stall-for", type=float, default=1.0, metavar="S",
                    help="how long the --stall-at stall lasts (seconds)")
parser.add_argument("--exit-on-call", action="store_true", help="exit 3 at tools/call")
parser.add_argument("--session-mib", type=int, default=0,
                    help="hold this many MiB (pages touched) per open session, freed by DELETE")
parser.add_argument("--byte-reverse", action="store_true",
                    help="reverse_text reverses the text's UTF-8 bytes (invalid UTF-8 in the answer)")
parser.add_argument("--bom", action="store_true", help="begin each JSON answer with a UTF-8 BOM")
parser.add_argument("--no-answer-stream", action="store_true",
                    help="end the event stream without the answer")
parser.add_argument("--no-reverse-tool", action="store_true",
                    help="list count ({n: integer}) and now (no arguments), not reverse_text")
parser.add_argument("--max-body", type=int, default=0, metavar="BYTES",
                    help="answer a POST whose Content-Length is over BYTES with 413 before "
                         "reading its body (the Python SDK's words), then drop the body")
parser.add_argument("--path", default="/mcp", help="the MCP endpoint (404 elsewhere)")
parser.add_argument("--pad-answer", type=int, default=0, metavar="BYTES",
                    help="every tools/call answer carries BYTES more in structuredContent")
parser.add_argument("--stall-after", type=int, default=None, metavar="BYTES",
                    help="write only the first BYTES of a tools/call answer's body, then stall")
parser.add_argument("--chunked", action="store_true",
                    help="send every body with Transfer-Encoding: chunked, in 64 KiB chunks")
parser.add_argument("--gzip", action="store_true",
                    help="gzip every JSON answer (Content-Encoding: gzip), asked or not")
parser.add_argument("--old-sse", action="store_true",
                    help="the deprecated HTTP+SSE transport: every POST opens a stream whose "
                         "first event is `endpoint`, then a keep-alive every 15 s")
parser.add_argument("--own-port", action="store_true",
                    help="ignore --port: listen on a port of the kernel's choice")
parser.add_argument("--endless-cursor", action="store_true",
                    help="tools/list: the same tool and a fresh nextCursor on every page")
parser.add_argument("--notification-error", action="store_true",
                    help="answer notifications/initialized 400 with an error whose id is null")
parser.add_argument("--close-every", type=int, default=0, metavar="N",
                    help="close the connection without answering every Nth tools/call")
parser.add_argument("--elicit-on-get", action="store_true",
                    help="offer the standalone GET stream; during each tools/call of a session "
                         "that opened one, send elicitation/create on it and answer the call "
                         "once it is answered")
parser.add_argument("--bearer", metavar="TOKEN",
                    help="answer 401 to any request without Authorization: Bearer TOKEN")
args = parser.parse_args()

SESSIONS: set[str] = set()
HELD: dict[str, bytes] = {}  # --session-mib: what each open session holds
LOCK = threading.Lock()
CALLS: list[int] = []  # --close-every: the tools/call requests so far
STALL: dict = {}  # --stall-at: the stall's times and the calls it held
STREAMS: dict[str, queue.Queue] = {}  # --elicit-on-get: each session's GET stream's events
ASKED: dict[str, threading.Event] = {}  # --elicit-on-get: the elicitations not yet answered
META = "io.modelcontextprotocol/"
VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"]


def result_for(message: dict, modern: bool):
    method, params = message.get("method"), message.get("params") or {}
    if method == "initialize":
        return {"protocolVersion": params.get("protocolVersion") if params.get(
                    "protocolVersion") in VERSIONS[:4] else "2025-11-25",
                "capabilities": {"tools": {}}, "serverInfo": {"name": "fake-http", "version": "1"}}
    if method == "server/discover":
        return {"supportedVersions": VERSIONS, "capabilities": {"tools": {}}, "resultType": "complete",
                "_meta": {f"{META}serverInfo": {"name": "fake-http", "version": "1"}}}
    if method == "tools/list":
        listed = {"tools": OTHER_TOOLS if args.no_reverse_tool else [REVERSE_TOOL]}
        if args.endless_cursor:
            listed["nextCursor"] = uuid.uuid4().hex
        return listed
    if method == "tools/call":
        out = {"content": [{"type": "text", "text": call_text(params)}], "isError": False}
        if args.pad_answer:
            out["structuredContent"] = {"padding": "x" * args.pad_answer}
        return {**out, "resultType": "complete"} if modern else out
    if method == "ping":
        return {}
    return None


REVERSE_TOOL = {"name": "reverse_text", "description": "Reverse text.", "inputSchema": {
    "type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}
OTHER_TOOLS = [
    {"name": "count", "description": "Count to n.", "inputSchema": {
        "type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}},
    {"name": "now", "description": "The time.", "inputSchema": {"type": "object"}}]


def call_text(params: dict) -> str:
    """The answer's text: reverse_text reversed, count's "1 2 .. n", now's time; a call
    another tool or arguments of another shape (a string n) gets a ValueError."""
    name, arguments = params.get("name"), params.get("arguments") or {}
    if args.no_reverse_tool and name == "count" and type(arguments.get("n")) is int:
        return " ".join(str(i) for i in range(1, arguments["n"] + 1))
    if args.no_reverse_tool and name == "now" and arguments == {}:
        return str(time.time())
    if not args.no_reverse_tool and name == "reverse_text":
        return arguments.get("text", "")[::-1]
    raise ValueError(f"no tool {name} taking {json.dumps(arguments)}")


def stall_left() -> float:
    """--stall-at: seconds until the stall ends for a load tools/call arriving now (0 outside
    the stall), the first such call starting the clock. The first call after the stall
    writes it to stdout: ``stall from BEGIN to END held N`` (time.time(); N calls arrived
    in it)."""
    now = time.time()
    with LOCK:
        if not STALL:
            STALL.update(begins=now + args.stall_at, ends=now + args.stall_at + args.stall_for,
                         held=0, said=False)
        if STALL["begins"] <= now < STALL["ends"]:
            STALL["held"] += 1
            return STALL["ends"] - now
        if now >= STALL["ends"] and not STALL["said"]:
            STALL["said"] = True
            sys.stdout.write(f"stall from {STALL['begins']!r} to {STALL['ends']!r} held "
                             f"{STALL['held']}\n")
            sys.stdout.flush()
    return 0.0


def header_name(value: str) -> str:
    if value.startswith("=?base64?") and value.endswith("?="):
        return base64.b64decode(value[9:-2]).decode()
    return value


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # head and body are two writes: no 40 ms delayed-ACK stall
    stalls = False

    def log_message(self, *_):  # a quiet server
        pass

    def reply(self, status: int, body: bytes = b"", kind: str = "application/json",
              headers: dict | None = None) -> None:
        self.send_response(status)
        if args.gzip and kind == "application/json" and body:
            body = gzip.compress(body)
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Type", kind)
        if args.chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if args.stall_after is not None and self.stalls:
            self.wfile.write(body[:args.stall_after])
            self.wfile.flush()
            time.sleep(600)
        if not args.chunked:
            self.wfile.write(body)
            return
        view = memoryview(body)
        for at in range(0, len(body), 1 << 16):
            piece = view[at:at + (1 << 16)]
            self.wfile.write(b"%x\r\n" % len(piece) + piece + b"\r\n")
        self.wfile.write(b"0\r\n\r\n")

    def error(self, status: int, rpc_id, code: int, message: str) -> None:
        self.reply(status, json.dumps({"jsonrpc": "2.0", "id": rpc_id,
                                       "error": {"code": code, "message": message}}).encode())

    def old_sse(self) -> None:
        """2024-11-05 "HTTP with SSE": the stream names where to POST, then keeps alive."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        self.wfile.write(f"event: endpoint\r\ndata: /messages/?session_id={uuid.uuid4().hex}"
                         "\r\n\r\n".encode())
        self.wfile.flush()
        while True:
            time.sleep(15)
            self.wfile.write(b": ping\r\n\r\n")
            self.wfile.flush()

    def refused(self) -> bool:
        """--bearer: answered 401 (RFC 6750, invalid_token) when the token is missing."""
        if args.bearer is None or self.headers.get("Authorization") == f"Bearer {args.bearer}":
            return False
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.reply(401, b'{"error":"invalid_token"}', headers={"WWW-Authenticate": "Bearer"})
        return True

    def do_DELETE(self):
        if self.refused():
            return None
        if self.path != args.path:
            return self.reply(404, b"Not Found", "text/plain")
        sid = self.headers.get("Mcp-Session-Id")
        with LOCK:
            known = sid in SESSIONS
            SESSIONS.discard(sid)
            HELD.pop(sid, None)
            stream = STREAMS.pop(sid, None)
        if stream is not None:
            stream.put(None)
        self.reply(204 if known else 404, b"", "text/plain")

    def do_GET(self):
        if self.refused():
            return None
        sid = self.headers.get("Mcp-Session-Id")
        if not args.elicit_on_get or self.path != args.path:
            return self.reply(405, b"", "text/plain")
        if sid not in SESSIONS:
            return self.reply(404, b"", "text/plain")
        events = STREAMS[sid] = queue.Queue()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        self.wfile.write(b"id: 0\ndata:\n\n")
        self.wfile.flush()
        while (data := events.get()) is not None:
            self.wfile.write(data)
            self.wfile.flush()
        self.close_connection = True

    def elicit(self, sid: str) -> bool:
        """--elicit-on-get: elicitation/create on the session's GET stream; True once the
        client answered it (within 10 s), or when the session has no GET stream (a stateless
        call) to ask on."""
        stream, asked = STREAMS.get(sid), threading.Event()
        if stream is None:
            return True
        eid = uuid.uuid4().hex
        ASKED[eid] = asked
        ask = {"jsonrpc": "2.0", "id": eid, "method": "elicitation/create",
               "params": {"message": "Your name?", "requestedSchema": {
                   "type": "object", "properties": {"name": {"type": "string"}}}}}
        stream.put(f"id: {eid}\ndata: {json.dumps(ask)}\n\n".encode())
        return asked.wait(10)

    def do_POST(self):
        if self.refused():
            return None
        if self.path != args.path:
            return self.reply(404, b"Not Found", "text/plain")
        if args.old_sse:
            return self.old_sse()
        size = int(self.headers.get("Content-Length") or 0)
        if args.max_body and size > args.max_body:  # answered first, as uvicorn does
            self.reply(413, b"Request body too large", "text/plain")
            return self.rfile.read(size)
        body = self.rfile.read(size)
        try:
            message = json.loads(body)
        except ValueError:
            return self.error(400, None, -32700, "Parse error")
        rpc_id, method = message.get("id"), message.get("method")
        if method is None and rpc_id in ASKED:  # the client's answer to an elicitation
            ASKED.pop(rpc_id).set()
            return self.reply(202, b"", "text/plain")
        params = message.get("params") or {}
        meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
        modern = f"{META}protocolVersion" in meta
        headers = {}
        if modern:
            want = {"MCP-Protocol-Version": meta[f"{META}protocolVersion"], "Mcp-Method": method}
            if method == "tools/call":
                want["Mcp-Name"] = params.get("name")
            for key, value in want.items():
                got = self.headers.get(key)
                if (header_name(got) if got and key == "Mcp-Name" else got) != value:
                    return self.error(400, rpc_id, -32020, f"Header mismatch: {key} {got!r}")
        elif method == "initialize":
            sid = uuid.uuid4().hex
            with LOCK:
                SESSIONS.add(sid)
                if args.session_mib:
                    HELD[sid] = b"\x01" * (args.session_mib << 20)
            headers["Mcp-Session-Id"] = sid
        else:
            sid = self.headers.get("Mcp-Session-Id")
            with LOCK:
                known = sid in SESSIONS
            if not known:
                return self.error(404 if sid else 400, None, -32001, "Session not found")
        if rpc_id is None:
            if args.notification_error and method == "notifications/initialized":
                return self.error(400, None, -32600, "Invalid request: notifications/initialized")
            return self.reply(202, b"", "text/plain")
        self.stalls = method == "tools/call"
        if method == "tools/call" and args.close_every:
            with LOCK:
                CALLS.append(1)
                closes = len(CALLS) % args.close_every == 0
            if closes:
                self.close_connection = True
                return None
        if method == "tools/call":
            if args.exit_on_call:
                os._exit(3)
            delay = args.slow
            load = "gevent" in (self.headers.get("User-Agent") or "")
            if args.slow_load and load:
                delay = args.slow_load
            if args.stall_at is not None and load:
                delay = max(delay, stall_left())
            if delay:
                time.sleep(delay)
            if args.status:
                return self.reply(args.status, b"the tool broke", "text/plain")
            if args.elicit_on_get and not self.elicit(self.headers.get("Mcp-Session-Id")):
                return self.error(500, rpc_id, -32603, "elicitation/create got no answer")
        try:
            result = result_for(message, modern)
        except ValueError as err:
            return self.error(200, rpc_id, -32602, str(err))
        answer = ({"jsonrpc": "2.0", "id": rpc_id, "result": result} if result is not None else
                  {"jsonrpc": "2.0", "id": rpc_id, "error": {"code": -32601,
                                                             "message": "Method not found"}})
        data = json.dumps(answer).encode()
        if args.byte_reverse and method == "tools/call":
            text = (params.get("arguments") or {}).get("text", "")
            data = data.replace(json.dumps(text[::-1]).encode(),
                                b'"' + text.encode()[::-1] + b'"')
        if not args.sse:
            return self.reply(200, b"\xef\xbb\xbf" * args.bom + data, headers=headers)
        log = json.dumps({"jsonrpc": "2.0", "method": "notifications/message",
                          "params": {"level": "info", "data": "working"}})
        events = f"id: 1\r\ndata:\r\n\r\n: keep-alive\r\nevent: message\r\ndata: {log}\r\n\r\n"
        if not args.no_answer_stream:
            events += "event: message\r\ndata: @ANSWER@\r\n\r\n"
        self.reply(200, events.encode().replace(b"@ANSWER@", data), "text/event-stream", headers)


if args.start_delay:
    time.sleep(args.start_delay)
server = ThreadingHTTPServer((args.host, 0 if args.own_port else args.port), Handler)
server.daemon_threads = True
sys.stdout.write(f"Uvicorn running on http://{args.host}:{server.server_address[1]}\n")
sys.stdout.flush()
server.serve_forever()
