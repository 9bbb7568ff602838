"""HTTP/1.1 framing for the Streamable HTTP transport: a request's head as bytes, and a
connection's answers as they arrive, parsed by llhttp (Node.js's HTTP parser, through
httptools).

The rules are RFC 9112's: a request line, header fields, a blank line, then a body whose
length is its ``Content-Length`` (section 6.2); an answer's body is delimited by
``Transfer-Encoding: chunked``, ``Content-Length``, or, with neither, by the server
closing the connection (section 6.3, rule 8: llhttp leaves that end to its caller, as
httptools has no call for end of input); 1xx answers are interim and dropped (RFC 9110,
section 15.2). A header field is sent only when its name is a token and its value holds no
control character (RFC 9110, section 5.5: a CR or LF would end the field), whoever gave the
value: an editor config, or the server itself (its ``Mcp-Session-Id``).

Both sides cost a few microseconds where a pure-Python parser (h11) costs tens of them per
exchange, which on a cold start delays each request after the first (docs/figures.md, "HTTP:
h11 against llhttp").
"""

from __future__ import annotations

import functools
import re
import zlib

import httptools

MAX_HEAD_BYTES = 64 << 10
"""Most bytes an answer's status line and header fields may take (h11's default is 16 KiB,
llhttp has none of its own): a server that sends more is not answering."""
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_FIELD_VALUE = re.compile(r"[\t\x20-\x7e\x80-\xff]*")
_TARGET = re.compile(r"[\x21-\x7e]+")


DECODED = ("gzip", "x-gzip", "deflate")
"""The content codings an answer may come in that mcpstart decodes: those the official SDK
clients ask for and decode (their HTTP clients, Node.js fetch and httpx, send
``Accept-Encoding: gzip, deflate``; mcpstart sends none)."""


def content_decoder(value: str):
    """A decoder for an answer whose ``Content-Encoding`` is ``value`` (RFC 9110, section
    8.4): None for no coding or ``identity``; a ``zlib`` decompress object (gzip or zlib
    framing, told apart by their headers) for one coding of DECODED.

    Raises:
        ValueError: a coding mcpstart does not decode, or several (the message names them).
    """
    codings = [c.strip().lower() for c in value.split(",") if c.strip()]
    codings = [c for c in codings if c != "identity"]
    if not codings:
        return None
    if len(codings) > 1 or codings[0] not in DECODED:
        raise ValueError(f"Content-Encoding: {value.strip()}")
    return zlib.decompressobj(wbits=32 + zlib.MAX_WBITS)


class AnswerError(Exception):
    """Bytes that are no HTTP/1.1 answer (the parser's own words, or the head too long)."""


def request_head(method: str, target: str, headers: list[tuple[str, str]],
                 body_length: int | None = None) -> bytes:
    """The request's head as it goes on the wire: ``method target HTTP/1.1``, ``headers`` in
    order, then ``Content-Length: body_length`` when there is a body, and the blank line;
    the body follows it as it is (never joined to the head: a body of megabytes is not
    copied).

    Raises:
        ValueError: a target or header field that cannot be sent (module doc); the message
            names it.
    """
    if not _TARGET.fullmatch(target):
        raise ValueError(f"the request target {target!r} holds a space or control character")
    lines = [f"{method} {target} HTTP/1.1", *(_field(name, value) for name, value in headers)]
    if body_length is not None:
        lines.append(f"Content-Length: {body_length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


@functools.lru_cache(maxsize=256)
def _field(name: str, value: str) -> str:
    """``name: value`` once both are checked (a connection sends the same fields again and
    again: each is checked once).

    Raises:
        ValueError: as request_head.
    """
    if not _TOKEN.fullmatch(name):
        raise ValueError(f"{name!r} is not a header field name")
    if not _FIELD_VALUE.fullmatch(value):  # the value itself is not shown: it may be a secret
        raise ValueError(f"the {name} header's value holds a character a header field cannot "
                         "carry (a control character or a line break)")
    return f"{name}: {value}"


class Answers:
    """One connection's answers, parsed incrementally. ``feed(chunk)`` returns the events the
    chunk completed, in order:

    - ``("head", status, reason, headers)``: status an int, reason the reason phrase,
      headers ``[(lower-case name, value)]`` (latin-1 decoded);
    - ``("body", data)``: body bytes, chunked encoding removed;
    - ``("end", keep_alive)``: the answer is complete; keep_alive False when the connection
      cannot carry another request (``Connection: close``, HTTP/1.0, an end at EOF).
    """

    def __init__(self):
        self._parser = httptools.HttpResponseParser(self)
        self._events: list[tuple] = []
        self._reset()

    def _reset(self) -> None:
        self._reason = bytearray()
        self._headers: list[tuple[bytes, bytes]] = []
        self._head_bytes = 0  # fed since the last head ended (a bound, not a count)
        self._in_head = True
        self._interim = False
        self._until_close = False

    def feed(self, chunk: bytes) -> tuple[list[tuple], AnswerError | None]:
        """The events ``chunk`` completes (``b""``: the server closed the connection), and
        the error that stopped the parse, if one did: the events before it still count (a
        server that writes past its answer's end has still answered)."""
        error = None
        if chunk:
            if self._in_head:
                self._head_bytes += len(chunk)
            try:
                self._parser.feed_data(chunk)
            except httptools.HttpParserUpgrade:
                error = AnswerError("the server switched protocols (HTTP 101)")
            except httptools.HttpParserError as err:
                error = AnswerError(str(err) or type(err).__name__)
            if error is None and self._in_head and self._head_bytes > MAX_HEAD_BYTES:
                error = AnswerError(f"more than {MAX_HEAD_BYTES >> 10} KiB of status line "
                                    "and header fields")
        elif not self._in_head and self._until_close:
            self._events.append(("end", False))  # RFC 9112 section 6.3, rule 8
            self._reset()
        events, self._events = self._events, []
        return events, error

    # llhttp's callbacks (httptools calls them by these names)
    def on_status(self, data: bytes) -> None:
        self._reason += data

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers.append((name, value))

    def on_headers_complete(self) -> None:
        self._in_head = False
        status = self._parser.get_status_code()
        self._interim = status < 200
        if self._interim:
            return
        headers = [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in self._headers]
        names = dict(headers)
        chunked = names.get("transfer-encoding", "").lower().rstrip().endswith("chunked")
        self._until_close = (status not in (204, 304) and "content-length" not in names
                             and not chunked)
        self._events.append(("head", status, self._reason.decode("latin-1"), headers))

    def on_body(self, data: bytes) -> None:
        self._events.append(("body", data))

    def on_message_complete(self) -> None:
        if not self._interim:
            self._events.append(("end", self._parser.should_keep_alive()))
        self._reset()
