"""A stdio MCP server for the tests, with switches that make it misbehave the ways real servers do
(docs/faults.md). Standard library only. Usage: fake_server.py [--switch ...]."""

import argparse
import json
import os
import select
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
parser.add_argument("--burn-user", type=float, default=0,
                    help="seconds of user CPU to spend before reading")
parser.add_argument("--burn-system", type=float, default=0,
                    help="seconds of system CPU to spend before reading (reads of /dev/zero)")
parser.add_argument("--import", dest="imports", action="append", default=[], metavar="MODULE",
                    help="import this module before reading")
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
parser.add_argument("--raw", action="append", default=[], metavar="METHOD=TEXT",
                    help="answer METHOD by writing TEXT as it is ({id} becomes the request's id)")
parser.add_argument("--batch", action="store_true", help="wrap every answer in a batch array")
parser.add_argument("--no-jsonrpc", action="store_true", help='answers without "jsonrpc"')
parser.add_argument("--pretty", action="store_true", help="pretty-print answers over many lines")
parser.add_argument("--string-id", action="store_true", help='answer id 1 as "1"')
parser.add_argument("--pages", type=int, default=1, help="tools/list pages; reverse_text last")
parser.add_argument("--cursor-loop", action="store_true", help="nextCursor never advances")
parser.add_argument("--notification-error", action="store_true",
                    help="answer notifications/initialized with an error whose id is null")
parser.add_argument("--launcher", action="store_true",
                    help="fork: the child serves, the spawned process exits 0 at once")
parser.add_argument("--call-error", action="store_true",
                    help="answer a large tools/call with isError: payload too large")
parser.add_argument("--exit-on-large", action="store_true", help="exit 3 on a large line")
parser.add_argument("--only-initialize", action="store_true", help="answer initialize only")
parser.add_argument("--child-alloc-mib", type=int, default=0,
                    help="per tools/call, a child that holds this many MiB for 0.3 s, then exits")
parser.add_argument("--then-alloc-mib", type=int, default=0,
                    help="after the child: hold this many MiB for 0.3 s in the server itself")
parser.add_argument("--idle-mib", type=int, default=0,
                    help="hold this many MiB (anonymous, written) from the start on")
parser.add_argument("--helper-mib", type=int, default=0,
                    help="start a helper process holding this many MiB")
parser.add_argument("--helper-exits-on-call", action="store_true",
                    help="the helper is ended by the first large tools/call")
parser.add_argument("--double-fork-mib", type=int, default=0,
                    help="a helper that double-forks out of the session, holding this many MiB")
parser.add_argument("--discover", default=None, metavar="VERSIONS",
                    help="answer server/discover with these comma-separated supportedVersions")
parser.add_argument("--ttl-ms", type=int, default=None, metavar="MS",
                    help="caching hints: ttlMs MS, cacheScope public on discover and tools/list")
parser.add_argument("--discover-no-result-type", action="store_true",
                    help="answer server/discover without resultType")
parser.add_argument("--exit-on-discover", action="store_true",
                    help="exit 1 when the first message is not initialize")
parser.add_argument("--silent-discover", action="store_true", help="never answer server/discover")
parser.add_argument("--reject-initialize", type=int, default=None, metavar="CODE",
                    help="reject initialize with this code and data.supported (modern only)")
parser.add_argument("--print-env", action="store_true",
                    help="write the environment to stderr and exit 1 at once")
parser.add_argument("--era-pinned", action="store_true",
                    help="the first message pins the era: initialize first -> legacy only")
parser.add_argument("--deep-small-call", type=int, default=0, metavar="LEVELS",
                    help="answer a small tools/call with a result nested this deep")
parser.add_argument("--idle-exit", type=float, default=0, metavar="SECONDS",
                    help="exit 0 this long after the last message (an idle watchdog)")
parser.add_argument("--cancel-call", action="store_true",
                    help="cancel every tools/call (notifications/cancelled) and never answer")
parser.add_argument("--sampling-call", action="store_true",
                    help="on tools/call ask sampling/createMessage and never answer the call")
parser.add_argument("--answer-on-stderr", action="store_true",
                    help="write the answers to tools/call on stderr")
parser.add_argument("--flood", type=int, default=0, metavar="N",
                    help="before answering initialize: N notifications/message, then N "
                         "notifications/progress for a token nobody asked for")
parser.add_argument("--no-tools-capability", action="store_true",
                    help="initialize declares capabilities {} (tools/list still answers)")
parser.add_argument("--launcher-frees", default=None, metavar="MIB:SECONDS[,MIB:SECONDS]",
                    help="a launcher: the spawned process holds a block of MIB per step, serves "
                         "through its child, and frees each block SECONDS after the start (as "
                         "uv does, in one step or two)")
parser.add_argument("--no-reverse-tool", action="store_true",
                    help="list count ({n: integer}) and now (no arguments), not reverse_text")
parser.add_argument("--grow-on-small", type=int, default=0, metavar="MIB",
                    help="every small tools/call keeps this many MiB more (a model loaded on "
                         "the first conversions)")
parser.add_argument("--pad-answer", type=int, default=0, metavar="BYTES",
                    help="every tools/call answer carries BYTES more in structuredContent, "
                         "on its one line")
args = parser.parse_args()

out = os.fdopen(1, "wb", buffering=1 << 30 if args.no_flush else 0)
inp = os.fdopen(0, "rb", buffering=0)
end = b"\r\n" if args.crlf else b"\n"
sleeper = [sys.executable, "-S", "-c",
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
    if args.no_jsonrpc:
        message = {k: v for k, v in message.items() if k != "jsonrpc"}
    if args.string_id and message.get("id") == 1:
        message = {**message, "id": "1"}
    if args.batch and "method" not in message:
        message = [message]
    body = json.dumps(message, indent=2 if args.pretty else None).encode()
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
        if args.idle_exit and not select.select([0], [], [], args.idle_exit)[0]:
            sys.exit(0)  # the watchdog: nothing asked for a while
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
        if args.exit_on_large and len(line) > LARGE:
            sys.exit(3)
        if line.strip():
            return json.loads(line)


def reverse(text: str) -> str:
    if args.wrong_reverse:
        units = text.encode("utf-16-le")
        return b"".join(units[i:i + 2] for i in range(len(units) - 2, -1, -2)).decode(
            "utf-16-le", errors="replace")
    return text[::-1]


REPLIES = {m: json.loads(j) for m, _, j in (r.partition("=") for r in args.reply)}
RAW = {m: text for m, _, text in (r.partition("=") for r in args.raw)}
LARGE = 100_000
state = {"first": None, "helper": None}
holder = [sys.executable, "-S", "-c",
          "import sys,time,signal; signal.signal(signal.SIGTERM, signal.SIG_IGN) "
          "if len(sys.argv) > 2 else None; b = bytearray(int(sys.argv[1]) << 20); "
          "[b.__setitem__(i, 1) for i in range(0, len(b), 4096)]; time.sleep(600)"]
short_holder = [sys.executable, "-S", "-c",
                "import sys,time; b = bytearray(int(sys.argv[1]) << 20); "
                "[b.__setitem__(i, 1) for i in range(0, len(b), 4096)]; time.sleep(0.3)"]


def tool(name: str) -> dict:
    return {"name": name, "inputSchema": {
        "type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}


OTHER_TOOLS = [
    {"name": "count", "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}},
                                      "required": ["n"]}},
    {"name": "now", "inputSchema": {"type": "object"}}]


def burn(user_s: float, system_s: float) -> None:
    """Spend this much user, then system CPU time (by getrusage's own count)."""
    import resource

    def used(field: str) -> float:
        return getattr(resource.getrusage(resource.RUSAGE_SELF), field)

    start = used("ru_utime")
    while used("ru_utime") - start < user_s:
        sum(i * i for i in range(2000))
    start, block = used("ru_stime"), bytearray(1 << 20)
    with open("/dev/zero", "rb", buffering=0) as zero:
        while used("ru_stime") - start < system_s:
            for _ in range(20):
                zero.readinto(block)


def hold(mib: int, seconds: float) -> None:
    block = bytearray(mib << 20)
    for i in range(0, len(block), 4096):
        block[i] = 1
    time.sleep(seconds)


def discover(message: dict) -> None:
    mid = message["id"]
    if args.silent_discover:
        return
    if args.discover is None:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "not found"}})
        return
    result = {"supportedVersions": args.discover.split(","), "capabilities": {"tools": {}},
              "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "fake-modern",
                                                               "version": "1"}}}
    if not args.discover_no_result_type:
        result.update(resultType="complete", ttlMs=0, cacheScope="private")
        if args.ttl_ms is not None:
            result.update(ttlMs=args.ttl_ms, cacheScope="public")
    send({"jsonrpc": "2.0", "id": mid, "result": result})


def handle(message: dict) -> None:
    method, mid = message.get("method"), message.get("id")
    if method is None:  # the client's answer to a request of ours
        return
    first = state["first"] is None
    if first:
        state["first"] = method
    if mid is None:
        if args.notification_error and method == "notifications/initialized":
            send({"jsonrpc": "2.0", "id": None, "error": {
                "code": -32600, "message": "Invalid request: notifications/initialized"}})
        return
    if method in RAW:
        write(RAW[method].replace("{id}", json.dumps(mid)).encode() + end)
        return
    if method in REPLIES:
        send({"jsonrpc": "2.0", "id": mid, **REPLIES[method]})
        return
    if first and method != "initialize" and args.exit_on_discover:
        sys.exit(1)
    if args.only_initialize and method != "initialize":
        return
    if method == "server/discover":
        if args.era_pinned and state["first"] == "initialize":
            send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "not found"}})
        else:
            discover(message)
        return
    if method == "initialize" and args.reject_initialize is not None:
        send({"jsonrpc": "2.0", "id": mid, "error": {
            "code": args.reject_initialize, "message": "Unsupported protocol version",
            "data": {"supported": ["2026-07-28"],
                     "requested": message["params"].get("protocolVersion")}}})
        return
    if method == "initialize" and args.era_pinned and not first:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32600, "message": "era pinned"}})
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
        for n in range(args.flood):
            send({"jsonrpc": "2.0", "method": "notifications/message",
                  "params": {"level": "debug", "data": f"tick {n}"}})
        for n in range(args.flood):
            send({"jsonrpc": "2.0", "method": "notifications/progress",
                  "params": {"progressToken": "nobody-asked", "progress": n}})
        revision = args.revision or message["params"]["protocolVersion"]
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": revision,
            "capabilities": {} if args.no_tools_capability else {"tools": {}},
            "serverInfo": {"name": "fake", "version": "0"}}})
    elif method == "tools/list":
        tools = [tool(f"other_{n}") for n in range(args.pages - 1)] + [tool("reverse_text")]
        if args.no_reverse_tool:
            tools = OTHER_TOOLS
        if args.output_schema:
            for entry in tools:
                entry["outputSchema"] = {"type": "object"}
        if args.debug_mid:
            write(b"DEBUG: listing tools\n  at handler\n  at dispatch\n")
        cursor = (message.get("params") or {}).get("cursor")
        page = 0 if args.cursor_loop else int(cursor or 0)
        result = {"tools": [tools[page]] if args.pages > 1 else tools}
        if args.ttl_ms is not None:
            result.update(resultType="complete", ttlMs=args.ttl_ms, cacheScope="public")
        if args.cursor_loop:
            result["nextCursor"] = "same"
        elif page + 1 < args.pages:
            result["nextCursor"] = str(page + 1)
        send({"jsonrpc": "2.0", "id": mid, "result": result})
    elif method == "tools/call" and args.no_reverse_tool:
        name, arguments = message["params"]["name"], message["params"].get("arguments")
        if name == "count" and type((arguments or {}).get("n")) is int:
            answer = " ".join(str(i) for i in range(1, arguments["n"] + 1))
        elif name == "now" and arguments == {}:
            answer = str(time.time())
        else:
            return send({"jsonrpc": "2.0", "id": mid, "error": {
                "code": -32602, "message": f"no tool {name} taking {json.dumps(arguments)}"}})
        send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": answer}]}})
    elif method == "tools/call":
        text = message["params"]["arguments"]["text"]
        if args.deep_small_call and len(text) < 100:
            levels = args.deep_small_call
            write(b'{"jsonrpc":"2.0","id":%s,"result":{"content":[],"x":' % json.dumps(mid).encode()
                  + b"[" * levels + b"]" * levels + b"}}" + end)
            return
        if args.grow_on_small and len(text) < LARGE:
            grown = bytearray(args.grow_on_small << 20)
            for i in range(0, len(grown), 4096):
                grown[i] = 1
            state.setdefault("grown", []).append(grown)
        if args.cancel_call:
            send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                  "params": {"requestId": mid, "reason": "request timed out on the server"}})
            return
        if args.sampling_call:
            send({"jsonrpc": "2.0", "id": 500, "method": "sampling/createMessage",
                  "params": {"messages": [], "maxTokens": 10}})
            return
        if args.answer_on_stderr:
            os.write(2, json.dumps({"jsonrpc": "2.0", "id": mid, "result": {
                "content": [{"type": "text", "text": reverse(text)}]}}).encode() + b"\n")
            return
        if args.stderr_bytes:
            os.write(2, b"e" * args.stderr_bytes)
        if len(text) > LARGE and args.call_error:
            send({"jsonrpc": "2.0", "id": mid, "result": {
                "content": [{"type": "text", "text": "payload too large"}], "isError": True}})
            return
        if len(text) > LARGE and args.helper_exits_on_call and state["helper"]:
            state["helper"].kill()
            state["helper"].wait()
            state["helper"] = None
        if args.child_alloc_mib and len(text) > LARGE:
            subprocess.run([*short_holder, str(args.child_alloc_mib)])
        if args.then_alloc_mib and len(text) > LARGE:
            hold(args.then_alloc_mib, 0.3)
        block = bytearray(args.alloc_mib * 1024 * 1024)
        for i in range(0, len(block), 4096):
            block[i] = 1
        answer = reverse(text)
        del block
        result = {"content": [{"type": "text", "text": answer}]}
        if args.pad_answer:
            result["structuredContent"] = {"padding": "x" * args.pad_answer}
        send({"jsonrpc": "2.0", "id": mid, "result": result})
    else:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "not found"}})


def main() -> None:
    if args.print_env:
        sys.stderr.write("".join(f"{k}={v}\n" for k, v in os.environ.items()))
        sys.exit(1)
    if args.need_env and args.need_env not in os.environ:
        time.sleep(0.05)
        sys.stderr.write(f"Error: {args.need_env} not set\n")
        sys.exit(1)
    if args.trap_term:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    burn(args.burn_user, args.burn_system)
    for module in args.imports:
        __import__(module)
    if args.child:
        subprocess.Popen(sleeper)
    if args.escape:
        subprocess.Popen(sleeper, start_new_session=True)
    if args.launcher and os.fork():
        os._exit(0)  # the spawned process leaves; its child keeps the pipes and serves
    if args.launcher_frees:
        child = os.fork()
        if child:
            start = time.monotonic()
            steps = [step.split(":") for step in args.launcher_frees.split(",")]
            blocks = [bytearray(b"\1" * (int(mib) << 20)) for mib, _ in steps]  # touched
            for _, seconds in steps:
                time.sleep(max(0.0, start + float(seconds) - time.monotonic()))
                del blocks[0]
            _, status = os.waitpid(child, 0)
            os._exit(os.waitstatus_to_exitcode(status))
    if args.idle_mib:
        state["idle"] = bytearray(b"\1" * (args.idle_mib << 20))  # written: resident
    if args.helper_mib:
        state["helper"] = subprocess.Popen([*holder, str(args.helper_mib)])
    if args.double_fork_mib and os.fork() == 0:
        os.setsid()
        if os.fork():
            os._exit(0)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):  # as a daemon does: its stdio no longer the server's pipes
            os.dup2(null, fd)
        os.execv(sys.executable, [*holder, str(args.double_fork_mib), "ignore-term"])
    for second in range(int(args.slow_start)):
        sys.stderr.write(f"downloading... {second + 1}/{int(args.slow_start)}\n")
        time.sleep(1)
    time.sleep(args.slow_start % 1)
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
