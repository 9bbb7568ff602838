"""The HTTP fault grammar: ways a correct Streamable HTTP answer can be mutated (its status,
content type and coding, its framing, its event stream, its header fields, the connection
under it), each with its oracle, as tests/mutations.py does for stdio.

A ``Kind`` strikes the answers to one method ("initialize", "tools/list", "tools/call") in
every process of the server. Its ``expect``:

- "accepted": measured as if nothing happened;
- "warned": measured, with a warning whose text holds ``evidence``;
- "failed": the request fails at once (never after the timeout) with a cause that holds
  ``evidence``, in HTTP's terms.

``apply(reply, request)`` turns the correct reply (a dict) into the Wire events the mutated
server causes (tests/scripted_http.py), fed to mcpstart's own HTTP parser.
"""

from __future__ import annotations

import gzip
import json
import zlib
from dataclasses import dataclass
from typing import Callable

import mutations
from scripted_http import HttpGood, Request, Wire, answer

METHODS = ("initialize", "tools/list", "tools/call")
SESSION = (("Mcp-Session-Id", "s-1"),)
NOT_JSON_RPC = b"<!doctype html><p>Service temporarily unavailable</p>"
CONTENT_TYPES = ("application/json", "text/html", "text/plain", "application/octet-stream",
                 "text/event-stream", "application/x-unknown", "")
"""Every content type the harness serves a body that is not JSON-RPC under ("" sends
none); text/event-stream's body has no event, so the stream ends without the answer."""


@dataclass(frozen=True)
class Kind:
    name: str
    expect: str
    evidence: str | None
    apply: Callable[[dict, Request], list[Wire]]
    methods: tuple[str, ...] = METHODS


def _body(reply: dict) -> bytes:
    return json.dumps(reply).encode()


def _headers(request: Request, *more: tuple[str, str]) -> tuple[tuple[str, str], ...]:
    first = isinstance(request.message, dict) and request.message.get("method") == "initialize"
    return (SESSION if first else ()) + more


def _framed(framing: str):
    def apply(reply, request):
        wires = [Wire("bytes", answer(200, _body(reply), headers=_headers(request),
                                      framing=framing))]
        return wires + ([Wire("close")] if framing == "close" else [])
    return apply


def _coded(coding: str, encode: Callable[[bytes], bytes]):
    def apply(reply, request):
        return [Wire("bytes", answer(200, encode(_body(reply)), headers=_headers(
            request, ("Content-Encoding", coding))))]
    return apply


def _status(status: int, body: bytes = b"", kind: str = "text/plain", *more):
    return lambda reply, request: [Wire("bytes", answer(status, body, kind if body else "",
                                                        headers=more))]


HOME = "/mcp/"
"""Where a same-origin redirect of the harness points; answered there as usual."""


def _moved(status: int, location: str | None, home: bool = False):
    """``status`` with ``location`` (``{host}``: the request's Host); with ``home``, the
    correct answer to a request at HOME (where the redirect pointed)."""
    def apply(reply, request):
        if home and request.target == HOME:
            return _framed("length")(reply, request)
        more = (("Location", location.replace("{host}", request.headers.get("host", ""))),) \
            if location else ()
        return [Wire("bytes", answer(status, b"", "", headers=more))]
    return apply


def _not_found(always: bool):
    """HTTP 404 (the TypeScript SDK's "Session not found" body) to a request carrying the
    first session's id (``always``: any session's); else the correct answer."""
    def apply(reply, request):
        sid = request.headers.get("mcp-session-id")
        if sid == "s-1" or (always and sid):
            return [Wire("bytes", answer(404, b'{"jsonrpc":"2.0","id":null,"error":{"code":'
                                              b'-32001,"message":"Session not found"}}'))]
        return _framed("length")(reply, request)
    return apply


def _typed(kind: str):
    return lambda reply, request: [Wire("bytes", answer(200, NOT_JSON_RPC, kind))]


def _stream(line_end: bytes, *extra: bytes, prime: bool = True, answered: bool = True,
            ends: bool = True):
    """The answer as an event stream: ``extra`` lines before its event, lines ended by
    ``line_end``; ``ends`` False keeps the stream open (keep-alives every 15 s)."""
    def apply(reply, request):
        lines = [b"id: 0", b"retry: 3000", b"data:", b""] if prime else []
        lines += [*extra]
        if answered:
            lines += [b"event: message", b"id: 1", b"data: " + _body(reply), b""]
        events = line_end.join(lines) + line_end
        head = answer(200, b"", "text/event-stream", _headers(request), framing="close")
        wires = [Wire("bytes", head + events)]
        if ends:
            return wires + [Wire("close")]
        return wires + [Wire("bytes", b": keep-alive" + line_end * 2, 15.0 * n)
                        for n in range(1, 6)]
    return apply


def _cut(fraction: float):
    """The server closes the connection after ``fraction`` of its answer's bytes."""
    def apply(reply, request):
        data = answer(200, _body(reply), headers=_headers(request))
        return [Wire("bytes", data[:max(int(len(data) * fraction), 1)]), Wire("close")]
    return apply


def _split(reply, request):
    """The answer in single bytes of its head, then the body in halves, each 10 ms apart
    (a split, not a slow server: 7 sessions' calls stay well within the timeout)."""
    data = answer(200, _body(reply), headers=_headers(request))
    head = data.index(b"\r\n\r\n") + 4
    parts = [data[i:i + 1] for i in range(min(head, 40))] + [data[min(head, 40):head]]
    body = data[head:]
    parts += [body[:len(body) // 2], body[len(body) // 2:]]
    return [Wire("bytes", part, 0.01 * i) for i, part in enumerate(parts) if part]


def _raw_head(head: bytes, sse: bool = False):
    """The answer with its head as given (``{n}``: the body's length); ``sse``: the body is
    one event carrying it (so a misread Content-Type fails the read)."""
    def apply(reply, request):
        body = b"data: " + _body(reply) + b"\n\n" if sse else _body(reply)
        return [Wire("bytes", head.replace(b"{n}", str(len(body)).encode()) + body)]
    return apply


KINDS = [
    # framings
    *(Kind(f"framing_{f}", "accepted", None, _framed(f)) for f in ("length", "chunked", "close")),
    Kind("split_writes", "accepted", None, _split),
    Kind("slow_headers", "accepted", None,
         lambda reply, request: [Wire("bytes", w.data, 2.0) for w in _framed("length")(reply,
                                                                                       request)]),
    Kind("header_casing", "accepted", None, _raw_head(
        b"HTTP/1.1 200 OK\r\ncontent-TYPE: text/event-stream\r\nmcp-session-id: s-1\r\n"
        b"CONTENT-LENGTH: {n}\r\n\r\n", sse=True)),
    Kind("duplicate_content_type", "accepted", None, _raw_head(  # the last one counts
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Type: "
        b"text/event-stream\r\nMcp-Session-Id: s-1\r\nContent-Length: {n}\r\n\r\n",
        sse=True)),
    Kind("chunked_malformed", "failed", "cannot be read", _raw_head(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: s-1\r\n"
        b"Transfer-Encoding: chunked\r\n\r\nzz\r\n")),
    *(Kind(f"closed_after_{int(f * 100)}pct", "failed", "closed the connection", _cut(f))
      for f in (0.01, 0.5, 0.99)),
    # status codes
    Kind("status_500_text", "failed", "HTTP 500 Internal Server Error: boom",
         _status(500, b"boom")),
    Kind("status_500_empty", "failed", "HTTP 500 Internal Server Error with no body",
         _status(500)),
    Kind("status_400_id_null", "failed", "HTTP 400 Bad Request: Bad session",
         _status(400, b'{"jsonrpc":"2.0","id":null,"error":{"code":-32000,'
                      b'"message":"Bad session"}}', "application/json")),
    # redirects (followed once within the origin: a case draws one of the followed ones,
    # REDIRECTS_FOLLOWED) and a session the server lost (renewed once)
    Kind("status_302_same_origin", "warned", "HTTP 302", _moved(302, HOME, home=True)),
    Kind("status_308_same_origin_absolute", "warned", "HTTP 308",
         _moved(308, "http://{host}" + HOME, home=True)),
    Kind("status_308_other_origin", "failed", "Location: http://other.example/mcp, another "
         "origin", _moved(308, "http://other.example/mcp")),
    Kind("status_307_no_location", "failed", "with no Location", _moved(307, None)),
    Kind("status_301_again", "failed", "after an earlier redirect", _moved(301, "/again")),
    Kind("session_expired_404", "warned", "Mcp-Session-Id: s-1: the session was not found",
         _not_found(False), ("tools/list", "tools/call")),
    Kind("session_never_found_404", "failed", "not found either", _not_found(True),
         ("tools/list", "tools/call")),
    Kind("status_200_empty", "failed", "HTTP 200 OK with no body", _status(200)),
    Kind("status_202_for_request", "failed", "HTTP 202 Accepted with no answer", _status(202)),
    # content types of a body that is not JSON-RPC
    *(Kind(f"not_json_rpc_{kind.replace('/', '_') or 'untyped'}", "failed",
           "ended its event stream without the answer" if kind == "text/event-stream"
           else "not valid JSON", _typed(kind)) for kind in CONTENT_TYPES),
    # codings
    Kind("gzip", "warned", "Content-Encoding: gzip", _coded("gzip", gzip.compress)),
    Kind("x_gzip", "warned", "Content-Encoding: x-gzip", _coded("x-gzip", gzip.compress)),
    Kind("deflate", "warned", "Content-Encoding: deflate", _coded("deflate", zlib.compress)),
    Kind("identity", "accepted", None, _coded("identity", lambda b: b)),
    Kind("br", "failed", "Content-Encoding: br, a content coding mcpstart does not decode",
         _coded("br", lambda b: b"\x0b\x80" + b)),
    Kind("unknown_coding", "failed", "Content-Encoding: x-custom, a content coding mcpstart "
         "does not decode",
         _coded("x-custom", lambda b: b[::-1])),
    Kind("gzip_cut", "failed", "ended short", _coded("gzip", lambda b: gzip.compress(b)[:-9])),
    Kind("gzip_not_gzip", "failed", "cannot be decoded", _coded("gzip", lambda b: b)),
    # event streams
    *(Kind(f"sse_{name}", "accepted", None, _stream(end))
      for name, end in (("lf", b"\n"), ("crlf", b"\r\n"), ("cr", b"\r"))),
    Kind("sse_comments_and_names", "accepted", None,
         _stream(b"\n", b": comment", b"event: ping", b"data: {\"not\": \"rpc\"}", b"")),
    Kind("sse_never_ends", "accepted", None, _stream(b"\n", ends=False)),
    Kind("sse_no_priming", "accepted", None, _stream(b"\n", prime=False)),
    Kind("sse_ends_without_answer", "failed", "ended its event stream without the answer",
         _stream(b"\n", answered=False)),
    Kind("sse_old_transport", "failed", "HTTP+SSE",
         _stream(b"\n", b"event: endpoint", b"data: /messages/?session_id=1", b"",
                 answered=False, ends=False)),
]
BY_NAME = {kind.name: kind for kind in KINDS}
REDIRECTS_FOLLOWED = ("status_302_same_origin", "status_308_same_origin_absolute")
"""Kinds a case draws one of at most: a second redirect is not followed (its oracle is the
failure the "again" kind checks)."""


@dataclass(frozen=True)
class Mutation(mutations.Mutation):
    """An HTTP kind striking the answers to one method."""

    @property
    def spec(self) -> Kind:
        return BY_NAME[self.kind]


class MutatedHttp(HttpGood):
    """An HttpGood whose answers to the methods of ``mutations`` are mutated."""

    def __init__(self, mutations: tuple[Mutation, ...] = ()):
        self.mutations = {m.method: m for m in mutations}
        self.sessions = 0

    def fresh(self) -> "MutatedHttp":
        return MutatedHttp(tuple(self.mutations.values()))

    def http(self, request: Request) -> list[Wire]:
        message = request.message
        mutation = (self.mutations.get(message.get("method"))
                    if request.method == "POST" and isinstance(message, dict) else None)
        reply = self.reply(message) if mutation is not None else None
        wires = super().http(request) if reply is None else mutation.spec.apply(reply, request)
        if request.method == "POST" and isinstance(message, dict) \
                and message.get("method") == "initialize" \
                and any(b"s-1\r\n" in w.data for w in wires):  # each session its own id: s-N
            self.sessions += 1
            wires = [Wire(w.kind, w.data.replace(b"s-1\r\n", b"s-%d\r\n" % self.sessions),
                          w.after_s, w.code, w.where, w.on) for w in wires]
        return wires
