"""The fault grammar: every way a correct answer can be mutated, per message, per byte stream
and per process, each with its oracle (what mcpstart must make of it).

A ``Mutation`` strikes a server's answer to one method ("initialize", "tools/list",
"tools/call", "server/discover") in every process of the server, as a real server
misbehaves the same way each time. Its ``expect`` is the outcome class the invariants hold it
to:

- "accepted": measured as if nothing happened (a note may say what was seen);
- "warned": measured, with a warning whose text holds ``evidence``;
- "failed": the request fails at once (within the diagnosis wait, never after the timeout)
  with a cause that holds ``evidence``, in the server's terms;
- "timeout": nothing evident ever came: the request fails after the timeout, with a cause
  that holds ``evidence``.

``apply(reply, message)`` turns the correct reply (a dict) into the Out events the mutated
server causes (tests/scripted.py), so the same grammar drives the scripted transport in
process and, through tests/fakes/scripted_server.py, real processes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable

from mcpstart.warnings import NOTIFICATION_FLOOD
from scripted import GoodServer, Out, line

TIMEOUT_S = 60.0
"""The --timeout of a harness run: a "sleep" mutation sleeps past it."""
METHODS = ("initialize", "tools/list", "tools/call", "server/discover")
"""Where in a session a mutation strikes, in session order (discover: its own process)."""
MARK = "@MARK@"


@dataclass(frozen=True)
class Kind:
    """One mutation kind: its name, where it may strike, its oracle and its transform."""

    name: str
    family: str  # "message", "bytes" or "process"
    expect: str
    evidence: str | None
    apply: Callable[[dict, dict], list[Out]]
    methods: tuple[str, ...] = METHODS
    needs: str | None = None
    """A method that must be answered for the evidence to be given (a warning given once
    tools/list answered)."""


def _out(data: bytes, after_s: float = 0.0) -> Out:
    return Out("stdout", data, after_s)


def _with(**changes):
    """A transform that changes members of the reply (None deletes one)."""
    def apply(reply: dict, _message: dict) -> list[Out]:
        changed = dict(reply)
        for key, value in changes.items():
            if value is None:
                changed.pop(key, None)
            else:
                changed[key] = value(reply) if callable(value) else value
        return [_out(line(changed))]
    return apply


def _bytes(transform: Callable[[bytes], bytes]):
    """A transform of the reply's framed bytes."""
    return lambda reply, _message: [_out(transform(line(reply)))]


def _marked(raw: bytes):
    """The reply with a member whose value is ``raw`` bytes, written as they are."""
    def apply(reply: dict, _message: dict) -> list[Out]:
        data = line({**reply, "x-extra": MARK})
        return [_out(data.replace(json.dumps(MARK).encode(), raw))]
    return apply


def _split(reply: dict, _message: dict) -> list[Out]:
    """The line in five writes with pauses, the cuts inside an escape sequence too."""
    data = line({**reply, "x-escape": "caf\u00e9 \u2603"})  # ASCII escapes: \u00e9 \u2603
    at = data.index(b"\\u00e9") + 3
    cuts = sorted({1, len(data) // 3, at, 2 * len(data) // 3, len(data) - 1})
    parts = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)])]
    return [_out(part, 0.05 * i) for i, part in enumerate(parts)]


def _notifications(count: int, method: str, params: dict):
    def apply(reply: dict, _message: dict) -> list[Out]:
        note = line({"jsonrpc": "2.0", "method": method, "params": params})
        return [_out(note * count + line(reply))]
    return apply


def _surrogate(reply: dict, message: dict) -> list[Out]:
    """A lone surrogate escape in a string the server sends (its name, a tool's description;
    a tool result would no longer be the reversed text, which is another finding)."""
    changed = json.loads(json.dumps(reply))
    result = changed.get("result") or {}
    if message.get("method") == "initialize":
        result["serverInfo"]["name"] = "rev\ud800erse"
    for tool in result.get("tools") or []:
        tool["description"] = "odd \udc00 text"
    changed["x-extra"] = "\ud83d"
    return [_out(line(changed))]


def _sleep(reply: dict, _message: dict) -> list[Out]:
    return [_out(line(reply), TIMEOUT_S + 10)]


def _server_request(method: str):
    def apply(reply: dict, _message: dict) -> list[Out]:
        ask = line({"jsonrpc": "2.0", "id": f"srv-{method}", "method": method, "params": {}})
        return [_out(ask + line(reply))]
    return apply


def _blocked_on(method: str):
    def apply(_reply: dict, _message: dict) -> list[Out]:
        return [_out(line({"jsonrpc": "2.0", "id": "srv-1", "method": method, "params": {}}))]
    return apply


def _cancelled(reply: dict, message: dict) -> list[Out]:
    return [_out(line({"jsonrpc": "2.0", "method": "notifications/cancelled",
                       "params": {"requestId": message["id"], "reason": "busy elsewhere"}}))]


def _no_tools_capability(reply: dict, message: dict) -> list[Out]:
    changed = json.loads(json.dumps(reply))
    changed["result"]["capabilities"] = {}
    return [_out(line(changed))]


KINDS = [
    # per message
    Kind("id_never_sent", "message", "failed", "an id mcpstart never sent",
         _with(id=lambda r: r["id"] + 1000 if isinstance(r["id"], int) else "other")),
    Kind("id_absent", "message", "failed", "answered with no id", _with(id=None)),
    Kind("id_null", "message", "failed", "answered with id null",
         lambda reply, _m: [_out(line({**reply, "id": None}))]),
    Kind("id_repeated", "message", "accepted", None,
         lambda reply, _m: [_out(line(reply) + line(reply))]),
    Kind("id_other_type", "message", "warned", "another JSON type than the id sent",
         _with(id=lambda r: str(r["id"]))),
    Kind("id_out_of_range", "message", "failed", "an id mcpstart never sent",
         _with(id=2 ** 70)),
    Kind("id_bool", "message", "failed", "answered with id true", _with(id=True)),
    Kind("jsonrpc_missing", "message", "warned", 'no "jsonrpc" member', _with(jsonrpc=None)),
    Kind("jsonrpc_wrong", "message", "warned", '"jsonrpc": "1.0"', _with(jsonrpc="1.0")),
    Kind("batch", "message", "warned", "batch array",
         lambda reply, _m: [_out(json.dumps([reply]).encode() + b"\n")]),
    Kind("extra_member", "message", "accepted", None, _with(**{"x-extra": {"a": [1, 2]}})),
    Kind("neither_member", "message", "failed", 'neither "result" nor "error"',
         _with(result=None)),
    Kind("result_and_error", "message", "failed", 'both "result" and "error"',
         _with(error={"code": -32603, "message": "also wrong"})),
    Kind("result_not_object", "message", "failed", "a result that is not an object",
         _with(result=["not", "an", "object"])),
    Kind("result_null", "message", "failed", "a result that is not an object",
         lambda reply, _m: [_out(line({**reply, "result": None}))]),
    # per byte stream
    Kind("bytes_before", "bytes", "failed", "before the JSON message",
         _bytes(lambda d: b"LOG: " + d)),
    Kind("invalid_utf8", "bytes", "warned", "invalid UTF-8", _marked(b'"caf\xe9 \xff"')),
    Kind("lone_surrogate", "bytes", "warned", "lone UTF-16 surrogate", _surrogate,
         ("initialize", "tools/list", "server/discover")),
    Kind("bom", "bytes", "failed", "byte order mark", _bytes(lambda d: b"\xef\xbb\xbf" + d)),
    Kind("cr_alone", "bytes", "failed", "a CR alone at the end", _bytes(lambda d: d[:-1] + b"\r")),
    Kind("crlf", "bytes", "accepted", None, _bytes(lambda d: d[:-1] + b"\r\n")),
    Kind("no_final_newline", "bytes", "failed", "no newline at the end", _bytes(lambda d: d[:-1])),
    Kind("nul_in_string", "bytes", "failed", "raw control character", _marked(b'"a\x00b"')),
    Kind("nul_line", "bytes", "warned", "not JSON-RPC messages", _bytes(lambda d: b"\x00\n" + d)),
    Kind("control_in_string", "bytes", "failed", "raw control character", _marked(b'"a\tb"')),
    Kind("split_writes", "bytes", "accepted", None, _split),
    Kind("two_in_one_write", "bytes", "accepted", None, _notifications(
        1, "notifications/message", {"level": "info", "data": "hello"})),
    Kind("cut_off", "bytes", "failed", "cannot be read",
         _bytes(lambda d: d[:max(len(d) * 2 // 3, d.index(b'"result"') + 12)] + b"\n")),
    Kind("long_noise_line", "bytes", "warned", "not JSON-RPC messages",
         _bytes(lambda d: b"x" * (1 << 20) + b"\n" + d)),
    Kind("deep_nesting", "bytes", "failed", "nested deeper than mcpstart's JSON parser",
         _marked(b"[" * 100_000 + b"]" * 100_000)),
    Kind("nesting_past_201", "bytes", "warned", "nested more than 201 levels",
         _marked(b"[" * 201 + b"]" * 201)),
    Kind("huge_integer", "bytes", "warned", "more than 4300 digits", _marked(b"1" * 5000)),
    Kind("nan", "bytes", "warned", "NaN or Infinity", _marked(b"NaN")),
    Kind("infinity", "bytes", "warned", "NaN or Infinity", _marked(b"-Infinity")),
    Kind("duplicate_keys", "bytes", "warned", "duplicate key",
         _bytes(lambda d: d.replace(b'{"jsonrpc":"2.0",', b'{"jsonrpc":"2.0","jsonrpc":"2.0",', 1))),
    # per process
    Kind("exit_code", "process", "failed", "exited with code 3",
         lambda _r, _m: [Out("stderr", b"fatal: giving up\n"), Out("exit", code=3)]),
    Kind("exit_signal", "process", "failed", "killed by signal 9 (SIGKILL)",
         lambda _r, _m: [Out("exit", code=-9, signal=9)]),
    Kind("close_stdout", "process", "failed", "closed stdout",
         lambda _r, _m: [Out("close_stdout")]),
    Kind("close_stdin", "process", "failed", "closed its stdin",
         lambda reply, _m: [Out("close_stdin"), _out(line(reply))], ("initialize",)),
    Kind("sleep_past_timeout", "process", "timeout", "no answer to", _sleep),
    # about 300 KiB of stderr: several times a Linux pipe's 64 KiB buffer (pipe(7))
    Kind("stderr_flood", "process", "accepted", None,
         lambda reply, _m: [Out("stderr", b"debug: " + b"y" * 200 + b"\n") for _ in range(1500)]
         + [_out(line(reply))]),
    Kind("notification_flood", "process", "warned", "notifications in all",
         _notifications(NOTIFICATION_FLOOD, "notifications/message", {"level": "debug", "data": "tick"})),
    Kind("unknown_progress", "process", "warned", "progressToken mcpstart never sent",
         _notifications(5, "notifications/progress", {"progressToken": "t-9", "progress": 1})),
    Kind("asks_ping", "process", "accepted", None, _server_request("ping")),
    Kind("asks_roots", "process", "accepted", None, _server_request("roots/list")),
    Kind("blocked_on_sampling", "process", "timeout", "sampling/createMessage",
         _blocked_on("sampling/createMessage")),
    Kind("answer_on_stderr", "process", "failed", "wrote its answer on stderr",
         lambda reply, _m: [Out("stderr", line(reply))]),
    Kind("cancelled", "process", "failed", "cancelled the request", _cancelled),
    Kind("no_tools_capability", "message", "warned", "no tools capability",
         _no_tools_capability, ("initialize",), needs="tools/list"),
]
BY_NAME = {kind.name: kind for kind in KINDS}


@dataclass(frozen=True)
class Mutation:
    """A kind striking the answers to one method."""

    kind: str
    method: str

    @property
    def spec(self) -> Kind:
        return BY_NAME[self.kind]


class MutatedServer(GoodServer):
    """A GoodServer whose answers to the methods of ``mutations`` are mutated (each method
    at most once). The reference tool call is mutated only for the small texts of the cold
    start and round trips, as a large one is for the same method."""

    def __init__(self, mutations: tuple[Mutation, ...] = ()):
        self.mutations = {m.method: m for m in mutations}

    def fresh(self) -> "MutatedServer":
        return MutatedServer(tuple(self.mutations.values()))

    def answer(self, message) -> list[Out]:
        reply = self.reply(message)
        mutation = self.mutations.get(message.get("method")) if isinstance(message, dict) \
            else None
        if reply is None or mutation is None:
            return [] if reply is None else [_out(line(reply))]
        return mutation.spec.apply(reply, message)
