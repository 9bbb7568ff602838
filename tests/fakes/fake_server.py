"""A stdio MCP server for the tests, with switches that make it misbehave the ways real servers do
(../shared/fault-cases.md). Standard library only. Usage: fake_server.py [--switch ...]."""

import argparse
import json
import os
import signal
import subprocess
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("--banner", action="store_true", help="a version banner on stdout first")
parser.add_argument("--debug-mid", action="store_true", help="multi-line debug text mid-session")
parser.add_argument("--not-jsonrpc", action="store_true", help="a JSON object that is not JSON-RPC")
parser.add_argument("--notify-first", action="store_true", help="notifications before answering")
parser.add_argument("--ask-first", action="store_true", help="ping + roots/list before answering")
parser.add_argument("--crlf", action="store_true", help="CRLF line ends")
parser.add_argument("--lsp", action="store_true", help="only Content-Length framing, both ways")
parser.add_argument("--lsp-reply", action="store_true", help="answer with Content-Length headers")
parser.add_argument("--chunked", action="store_true", help="write results in pieces with pauses")
parser.add_argument("--stderr-bytes", type=int, default=0, help="write this much to stderr per call")
parser.add_argument("--slow-start", type=float, default=0, help="seconds to sleep before reading")
parser.add_argument("--need-env", default=None, help="exit 1 at once unless this variable is set")
parser.add_argument("--no-flush", action="store_true", help="block-buffered stdout, never flushed")
parser.add_argument("--ignore-eof", action="store_true", help="keep running after stdin EOF")
parser.add_argument("--trap-term", action="store_true", help="ignore SIGTERM")
parser.add_argument("--wrong-reverse", action="store_true", help="reverse UTF-16 code units")
parser.add_argument("--alloc-mib", type=int, default=0, help="hold this many MiB extra during a call")
parser.add_argument("--child", action="store_true", help="start a child that ignores SIGTERM")
parser.add_argument("--escape", action="store_true", help="start a process that leaves the group")
parser.add_argument("--revision", default=None, help="protocolVersion to answer with")
parser.add_argument("--output-schema", action="store_true", help="declare outputSchema")
parser.add_argument("--reply", action="append", default=[], metavar="METHOD=JSON",
                    help="answer METHOD with this JSON object's keys (id, result, error) instead")
args = parser.parse_args()

out = os.fdopen(1, "wb", buffering=1 << 30 if args.no_flush else 0)
inp = os.fdopen(0, "rb", buffering=0)
end = b"\r\n" if args.crlf else b"\n"
sleeper = [sys.executable, "-c",
           "import signal,time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"]


def write(data: bytes) -> None:
    if args.chunked and len(data) > 3:
        step = len(data) // 3
        for piece in (data[:step], data[step:2 * step], data[2 * step:]):
            out.write(piece)
            time.sleep(0.05)
    else:
        out.write(data)


def send(message: dict) -> None:
    body = json.dumps(message).encode()
    if args.lsp or args.lsp_reply:
        write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    else:
        write(body + end)


def read_framed():
    """One Content-Length framed message from stdin, or None at EOF."""
    length = None
    while True:
        header = inp.readline()
        if not header:
            return None
        if header.strip() == b"" and length is not None:
            break
        name, _, value = header.decode(errors="replace").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
    body = b""
    while len(body) < length:
        chunk = inp.read(length - len(body))
        if not chunk:
            return None
        body += chunk
    return json.loads(body)


pending = b""


def read_line():
    global pending
    while b"\n" not in pending:
        chunk = os.read(0, 1 << 16)
        if not chunk:
            return None
        pending += chunk
    line, _, pending = pending.partition(b"\n")
    return line


def next_message():
    if args.lsp:
        return read_framed()
    while True:
        line = read_line()
        if line is None:
            return None
        if line.strip():
            return json.loads(line)


def reverse(text: str) -> str:
    if args.wrong_reverse:
        units = text.encode("utf-16-le")
        return b"".join(units[i:i + 2] for i in range(len(units) - 2, -1, -2)).decode(
            "utf-16-le", errors="replace")
    return text[::-1]


REPLIES = {m: json.loads(j) for m, _, j in (r.partition("=") for r in args.reply)}


def handle(message: dict) -> None:
    method, mid = message.get("method"), message.get("id")
    if mid is None:
        return
    if method in REPLIES:
        send({"jsonrpc": "2.0", "id": mid, **REPLIES[method]})
        return
    if method == "initialize":
        if args.notify_first:
            send({"jsonrpc": "2.0", "method": "notifications/message",
                  "params": {"level": "info", "data": "starting"}})
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        if args.ask_first:
            for n, asked in enumerate(("ping", "roots/list"), 100):
                send({"jsonrpc": "2.0", "id": n, "method": asked})
                reply = next_message()
                assert reply and reply.get("id") == n and ("result" in reply or "error" in reply)
        revision = args.revision or message["params"]["protocolVersion"]
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": revision, "capabilities": {"tools": {}},
            "serverInfo": {"name": "fake", "version": "0"}}})
    elif method == "tools/list":
        tool = {"name": "reverse_text", "inputSchema": {
            "type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}
        if args.output_schema:
            tool["outputSchema"] = {"type": "object"}
        if args.debug_mid:
            write(b"DEBUG: listing tools\n  at handler\n  at dispatch\n")
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": [tool]}})
    elif method == "tools/call":
        if args.stderr_bytes:
            os.write(2, b"e" * args.stderr_bytes)
        hold = bytearray(args.alloc_mib * 1024 * 1024)
        for i in range(0, len(hold), 4096):
            hold[i] = 1
        text = reverse(message["params"]["arguments"]["text"])
        del hold
        send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": text}]}})
    else:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "not found"}})


def main() -> None:
    if args.need_env and args.need_env not in os.environ:
        time.sleep(0.05)
        sys.stderr.write(f"Error: {args.need_env} not set\n")
        sys.exit(1)
    if args.trap_term:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if args.child:
        subprocess.Popen(sleeper)
    if args.escape:
        subprocess.Popen(sleeper, start_new_session=True)
    for second in range(int(args.slow_start)):
        sys.stderr.write(f"downloading... {second + 1}/{int(args.slow_start)}\n")
        time.sleep(1)
    if args.banner:
        write(b"fake-server v0.0.1 starting up\n")
    if args.not_jsonrpc:
        write(b'{"status": "ready"}\n')
    while (message := next_message()) is not None:
        handle(message)
    out.flush()
    if args.ignore_eof:
        while True:
            time.sleep(1)


main()
