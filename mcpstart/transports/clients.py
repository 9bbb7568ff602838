"""What the official SDKs' clients do with a message whose bytes deviate from JSON (RFC 8259):
one table, the only place mcpstart states what another program does with a server's bytes.

Each deviation has an example message (a response to id 1 whose ``result.x`` carries the
deviation) and, per client and per carrier, a verdict. The carriers: ``line`` (a stdio line),
``body`` (an HTTP answer's ``application/json`` body) and ``event`` (the data of a
``text/event-stream`` event). The clients, at the versions the reference servers build:

- the TypeScript SDK 2.4.0: stdio lines through ``ReadBuffer`` (``Buffer.toString("utf8")``,
  then ``JSON.parse`` and ``JSONRPCMessageSchema``; a line JSON.parse refuses is skipped), JSON
  bodies through fetch's ``Response.json()``, events through ``TextDecoderStream``;
- the Python SDK (mcp) 2.3.0: stdio lines through anyio's ``TextReceiveStream`` (strict UTF-8)
  and ``jsonrpc_message_adapter.validate_json`` (pydantic), JSON bodies through
  ``validate_json`` of the bytes, events through httpx2's text decoding (U+FFFD) and
  ``validate_json``.

tests/test_client_claims.py feeds every example to each client's own code (tests/clients/) and
fails when a verdict here is wrong.
"""

from __future__ import annotations

from dataclasses import dataclass

SDK_VERSIONS = {"typescript": "2.4.0", "python": "2.3.0"}
"""The client SDKs' versions the verdicts were verified at: those the reference recipes pin."""
CLIENTS = {"typescript": f"the TypeScript SDK {SDK_VERSIONS['typescript']}",
           "python": f"the Python SDK (mcp) {SDK_VERSIONS['python']}"}
"""Client key -> its name in the texts."""
CARRIERS = ("line", "body", "event")

READS = "reads it"
REPLACES = "reads it with U+FFFD in place of the invalid bytes"
LAST = "keeps the last value"
REJECTS = "rejects it"
ENDS = "ends the connection (its stdio reader raises UnicodeDecodeError)"
REFUSED = (REJECTS, ENDS)
"""The verdicts under which the client gets no message."""
PYTHON_INT_DIGITS = 4300
"""Longest integer the Python SDK's parser reads (longer: "number out of range")."""
PYTHON_MAX_DEPTH = 201
"""Deepest nesting the Python SDK's parser reads, the message object counted as level 1
(deeper: "recursion limit exceeded")."""


def _message(x: bytes) -> bytes:
    return b'{"jsonrpc":"2.0","id":1,"result":{"x":' + x + b"}}"


@dataclass(frozen=True)
class Deviation:
    """One way a message's bytes deviate: ``what`` completes "the line ..."; ``example`` is a
    whole message showing it; ``verdicts`` is client -> carrier -> verdict."""

    what: str
    example: bytes
    verdicts: dict[str, dict[str, str]]


def _same(verdict: str) -> dict[str, str]:
    return dict.fromkeys(CARRIERS, verdict)


DEVIATIONS = {
    "bom": Deviation(
        "begins with a UTF-8 byte order mark", b"\xef\xbb\xbf" + _message(b"1"),
        {"typescript": {"line": REJECTS, "body": READS, "event": REJECTS},
         "python": _same(REJECTS)}),
    "bytes_before": Deviation(
        "has bytes before the JSON message", b"LOG: " + _message(b"1"),
        {"typescript": _same(REJECTS), "python": _same(REJECTS)}),
    "control_character": Deviation(
        "holds a raw control character in a string (RFC 8259, section 7)",
        _message(b'"a\x00b"'), {"typescript": _same(REJECTS), "python": _same(REJECTS)}),
    "nan": Deviation(
        "holds NaN or Infinity, which JSON does not allow (RFC 8259, section 6)",
        _message(b"NaN"), {"typescript": _same(REJECTS), "python": _same(READS)}),
    "infinity": Deviation(
        "holds NaN or Infinity, which JSON does not allow (RFC 8259, section 6)",
        _message(b"-Infinity"), {"typescript": _same(REJECTS), "python": _same(READS)}),
    "invalid_utf8": Deviation(
        "holds invalid UTF-8 (RFC 8259, section 8.1)", _message(b'"caf\xe9 \xff"'),
        {"typescript": _same(REPLACES),
         "python": {"line": ENDS, "body": REJECTS, "event": REPLACES}}),
    "lone_surrogate": Deviation(
        "holds a lone UTF-16 surrogate escape (RFC 8259, section 8.2)", _message(b'"\\ud800"'),
        {"typescript": _same(READS), "python": _same(REJECTS)}),
    "long_integer": Deviation(
        f"holds an integer of more than {PYTHON_INT_DIGITS} digits",
        _message(b"1" * (PYTHON_INT_DIGITS + 1)),
        {"typescript": _same(READS), "python": _same(REJECTS)}),
    "deep_nesting": Deviation(
        f"is nested more than {PYTHON_MAX_DEPTH} levels deep",
        _message(b"[" * (PYTHON_MAX_DEPTH - 1) + b"]" * (PYTHON_MAX_DEPTH - 1)),
        {"typescript": _same(READS), "python": _same(REJECTS)}),
    "duplicate_key": Deviation(
        "holds an object with a duplicate key (RFC 8259, section 4: names SHOULD be unique)",
        b'{"jsonrpc":"2.0","id":1,"result":{"x":1,"x":2}}',
        {"typescript": _same(LAST), "python": _same(LAST)}),
}


def refused_by_all(name: str, carrier: str) -> bool:
    """True when no client gets a message from a line with deviation ``name``."""
    return all(v[carrier] in REFUSED for v in DEVIATIONS[name].verdicts.values())


def split(name: str, carrier: str) -> bool:
    """True when some client gets no message from it and another does."""
    refused = [v[carrier] in REFUSED for v in DEVIATIONS[name].verdicts.values()]
    return any(refused) and not all(refused)


def verdicts(name: str, carrier: str) -> str:
    """What each client does, as a clause: "the TypeScript SDK 2.4.0 rejects it, the Python
    SDK (mcp) 2.3.0 reads it" (clients with the same verdict named together)."""
    by_verdict: dict[str, list[str]] = {}
    for client, verdict in DEVIATIONS[name].verdicts.items():
        by_verdict.setdefault(verdict[carrier], []).append(CLIENTS[client])
    return ", ".join(f"{' and '.join(names)} {verdict if len(names) == 1 else _plural(verdict)}"
                     for verdict, names in by_verdict.items())


def _plural(verdict: str) -> str:
    verb, _, rest = verdict.partition(" ")
    return f"both {verb[:-1]} {rest}"
