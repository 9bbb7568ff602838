"""A scripted transport for tests: an MCP server played in process, on a virtual clock, behind
mcpstart's transport seam (mcpstart/transports/base.py). Runs take milliseconds: a wait that times
out advances the virtual clock instead of sleeping, and every wait says which timer ended it.

A ``Script`` answers each client message with a list of ``Out`` events, each after a delay in
virtual seconds: bytes on stdout or stderr, closing stdout, or an exit. ``GoodServer`` plays a
correct session of the reference server (reverse_text); a test subclasses it or wraps its
answers to misbehave.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

from mcpstart.transports.base import Ended, Exit, Frame, Transport
from mcpstart.transports.framing import LineBuffer


@dataclass
class Out:
    """One event the scripted server causes: ``kind`` "stdout" / "stderr" (``data`` written),
    "close_stdout", "close_stdin" (it reads no more), or "exit" (``code``; ``signal`` for a
    death by signal), ``after_s`` virtual seconds after the message that caused it."""

    kind: str
    data: bytes = b""
    after_s: float = 0.0
    code: int | None = 0
    signal: int | None = None


def line(message) -> bytes:
    """A JSON-RPC message as the stdio transport frames it (compact, ASCII: a lone surrogate
    in a string is written as its escape)."""
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


class GoodServer:
    """A correct reference server: initialize (echoing a handshake revision), tools/list with
    reverse_text, tools/call reverse_text by code points, server/discover for 2026-07-28, ping.
    ``answer`` returns the Out events for one client message (None for bytes that are not
    JSON); ``eof`` those for stdin EOF (an exit, as a well-behaved server does)."""

    name = "scripted"
    revisions = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")

    def result(self, method: str, params: dict):
        """The result object for ``method`` (None: no answer; an Exception: an error)."""
        if method == "initialize":
            asked = params.get("protocolVersion")
            return {"protocolVersion": asked if asked in self.revisions else self.revisions[-1],
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": self.name, "version": "1.0.0"}}
        if method == "tools/list":
            return {"tools": [{"name": "reverse_text", "description": "Reverse a text.",
                               "inputSchema": {"type": "object", "required": ["text"],
                                               "properties": {"text": {"type": "string"}}}}]}
        if method == "tools/call":
            text = str((params.get("arguments") or {}).get("text", ""))
            return {"content": [{"type": "text", "text": text[::-1]}]}
        if method == "server/discover":
            return {"resultType": "complete", "supportedVersions": [*self.revisions, "2026-07-28"],
                    "capabilities": {"tools": {}}}
        if method == "ping":
            return {}
        return KeyError(method)

    def reply(self, message) -> dict | None:
        """The response to a client message (None: none, for a notification or no answer)."""
        if not isinstance(message, dict) or "id" not in message or "method" not in message:
            return None
        result = self.result(message["method"], message.get("params") or {})
        if result is None:
            return None
        reply = {"jsonrpc": "2.0", "id": message["id"]}
        if isinstance(result, Exception):
            reply["error"] = {"code": -32601, "message": f"Method not found: {result}"}
        else:
            reply["result"] = result
        return reply

    def answer(self, message) -> list[Out]:
        reply = self.reply(message)
        return [] if reply is None else [Out("stdout", line(reply))]

    def eof(self) -> list[Out]:
        return [Out("exit", code=0)]

    def fresh(self) -> "GoodServer":
        """The same server for another process (a diagnosis in a fresh process)."""
        return type(self)()


class Timed(GoodServer):
    """A GoodServer that answers initialize ``delay_s`` (virtual) after it is asked."""

    def __init__(self, delay_s: float = 0.0):
        self.delay_s = delay_s

    def answer(self, message):
        outs = super().answer(message)
        if isinstance(message, dict) and message.get("method") == "initialize":
            for out in outs:
                out.after_s = self.delay_s
        return outs

    def fresh(self) -> "Timed":
        return Timed(self.delay_s)


class Fake(GoodServer):
    """tests/fakes/fake_server.py with no switches: a legacy server named "fake"
    (server/discover is -32601) that answers 1 ms (virtual) after each request, so every
    phase has a time."""

    name = "fake"

    def result(self, method: str, params: dict):
        return KeyError(method) if method == "server/discover" else super().result(method, params)

    def answer(self, message) -> list[Out]:
        outs = super().answer(message)
        for out in outs:
            out.after_s = 0.001
        return outs


class NeedsEnv(Fake):
    """fake_server.py --need-env FOO_API_KEY without it set: on its first message, the error
    on stderr and an exit with code 1."""

    def answer(self, message) -> list[Out]:
        return [Out("stderr", b"Error: FOO_API_KEY not set\n", after_s=0.05),
                Out("exit", code=1, after_s=0.05)]


class Banner(Fake):
    """fake_server.py --banner: a line that is not JSON-RPC before its first answer."""

    def __init__(self):
        self.greeted = False

    def answer(self, message) -> list[Out]:
        outs = super().answer(message)
        if not self.greeted:
            self.greeted = True
            outs.insert(0, Out("stdout", b"fake-server v0.0.1 starting up\n"))
        return outs


@dataclass
class _Event:
    at_s: float
    order: int
    out: Out


class ScriptedTransport(Transport):
    """A Transport whose server is ``script`` (a GoodServer or one like it), on a virtual
    clock that starts at 0 and only moves when a wait moves it.

    Attributes:
        waits: (timeout_s asked, how the wait ended: "frames", "end", "timeout") per receive.
        sent: every message the client wrote, decoded.
        grace_steps: the shutdown steps taken ("eof", "sigterm", "sigkill").
    """

    def __init__(self, script: GoodServer, ignores_eof: bool = False,
                 ignores_sigterm: bool = False):
        self.script = script
        self.ignores_eof, self.ignores_sigterm = ignores_eof, ignores_sigterm
        self.now_s = 0.0
        self._events: list[_Event] = []
        self._order = 0
        self._lines = LineBuffer()
        self._stderr_lines = LineBuffer("stderr")
        self._stdout_open = True
        self._stdin_open = True
        self._eof_sent = False
        self._started = False
        self._exit: Exit | None = None
        self._stderr = bytearray()
        self._input = bytearray()
        self.waits: list[tuple[float, str]] = []
        self.lifetime_s: float | None = None
        self.sent: list = []

    def fresh(self) -> "ScriptedTransport":
        return ScriptedTransport(self.script.fresh(), self.ignores_eof, self.ignores_sigterm)

    def clock(self) -> float:
        return self.now_s

    def now_ns(self) -> int:
        return int(self.now_s * 1e9)

    def _schedule(self, outs: list[Out]) -> None:
        for out in outs:
            self._order += 1
            self._events.append(_Event(self.now_s + out.after_s, self._order, out))
        self._events.sort(key=lambda e: (e.at_s, e.order))

    def start(self, first_message: bytes | None = None, wait_s: float = 0.0) -> None:
        self._started = True
        self.t0_ns = self.now_ns()
        if first_message:
            self.send(first_message)

    def send(self, data: bytes, message: dict | None = None) -> None:
        if self._exit is not None or (not self._stdin_open and self._eof_sent):
            return
        if not self._stdin_open:  # the server closed its stdin: the pipe refuses the bytes
            self.input_refused_ns = self.input_refused_ns or self.now_ns()
            return
        self._input += data
        while b"\n" in self._input:
            raw, _, rest = bytes(self._input).partition(b"\n")
            self._input = bytearray(rest)
            try:
                message = json.loads(raw)
            except ValueError:
                message = None
            self.sent.append(message)
            self._schedule(self.script.answer(message))

    def receive(self, timeout_s: float, quiet_s: float | None = None) -> list[Frame]:
        deadline = self.now_s + max(timeout_s, 0)
        quiet_until = self.now_s + (quiet_s or 0)
        while True:
            if quiet_s is not None and self._lines.pending:
                until = min(deadline, quiet_until)
            else:
                until = deadline
            if not (self._events and self._events[0].at_s <= until):
                break
            event = self._events.pop(0)
            self.now_s = max(self.now_s, event.at_s)
            quiet_until = self.now_s + (quiet_s or 0)
            frames, stop = self._apply(event.out)
            if frames or stop:
                self.waits.append((timeout_s, "frames" if frames else "end"))
                return frames
        self.now_s = until
        self.waits.append((timeout_s, "quiet" if until < deadline else "timeout"))
        return []

    def _apply(self, out: Out) -> tuple[list[Frame], bool]:
        if self._exit is not None:
            return [], True
        if out.kind == "stdout" and self._stdout_open:
            if self.first_byte_ns is None:
                self.first_byte_ns = self.now_ns()
            self.received_bytes += len(out.data)
            return self._lines.feed(out.data, self.now_ns()), False
        if out.kind == "stderr":
            self._stderr += out.data
            frames = [f for f in self._stderr_lines.feed(out.data, self.now_ns())
                      if f.data.lstrip()[:1] in (b"{", b"[")]
            return frames, False
        if out.kind == "close_stdin":
            self._stdin_open = False
            return [], False
        if out.kind in ("close_stdout", "exit") and self._stdout_open:
            self._stdout_open = False
            self.output_end_ns = self.now_ns()
            frames = self._lines.end(self.now_ns())
            if out.kind == "exit":
                self._exit = Exit(out.code, out.signal, self.now_ns())
            return frames, True
        if out.kind == "exit":
            self._exit = Exit(out.code, out.signal, self.now_ns(), output_open=False)
            return [], True
        return [], False

    @property
    def output_open(self) -> bool:
        return self._stdout_open

    def partial(self) -> bytes:
        return self._lines.partial

    def end_input(self) -> None:
        if not self._eof_sent:
            self._eof_sent = True
            if self._stdin_open and not self.ignores_eof:
                self._schedule(self.script.eof())
            self._stdin_open = False

    def exit(self) -> Exit | None:
        return self._exit

    def stderr_tail(self) -> str:
        return bytes(self._stderr[-2000:]).decode("utf-8", "replace")

    def shutdown(self, grace_s: float, kill_wait_s: float | None = None) -> Ended:
        began = self.now_s
        self.lifetime_s = self.now_s
        if self._exit is not None:
            return Ended("already_exited", 0.0, self._exit.code)
        self.end_input()
        how = "eof"
        self._run_until(self.now_s + grace_s)
        if self._exit is None:
            how = "sigterm"
            if not self.ignores_sigterm:
                self._schedule([Out("exit", code=-15, signal=15)])
            self._run_until(self.now_s + grace_s)
        if self._exit is None:
            how = "sigkill"
            self._schedule([Out("exit", code=-9, signal=9)])
            self._run_until(self.now_s + (grace_s if kill_wait_s is None else kill_wait_s))
        self.lifetime_s = self.now_s
        return Ended(how, (self.now_s - began) * 1000, self._exit.code if self._exit else None)

    def _run_until(self, deadline: float) -> None:
        while self._exit is None and self._events and self._events[0].at_s <= deadline:
            event = self._events.pop(0)
            self.now_s = max(self.now_s, event.at_s)
            self._apply(event.out)
        if self._exit is None:
            self.now_s = deadline

    def close(self) -> None:
        self._stdout_open = False


def first_argument(command) -> str:
    return command.argv[0]


@dataclass
class Spawner:
    """``Settings.spawner`` for scripted servers: ``key(command)`` (default: its first
    argument) names its script (``scripts``: key -> GoodServer subclass); every transport
    made is kept as (key, transport)."""

    scripts: dict
    made: list = field(default_factory=list)
    key: Callable = first_argument

    def __call__(self, command) -> ScriptedTransport:
        key = self.key(command)
        transport = ScriptedTransport(self.scripts[key]())
        self.made.append((key, transport))
        return transport


def poll_many(transports: list[ScriptedTransport], timeout_s: float) -> dict:
    """The stdio transport's ``poll_many`` (one wait over several servers started at once)
    for scripted transports: each waits up to ``timeout_s`` on its own virtual clock (the
    servers run side by side, each from its own spawn at 0); returns the new frames per
    transport. A test plugs it in as ``mcpstart.transports.session.poll_many``."""
    return {transport: transport.receive(timeout_s) for transport in transports}
