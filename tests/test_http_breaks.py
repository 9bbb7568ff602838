"""Each kind of the HTTP fault harness (tests/http_mutations.py) fails its own oracle when the
rule it checks is broken: ``BREAKS`` maps every kind to a small change of mcpstart's HTTP
transport that undoes that rule (kinds that check one rule share its break), and the kind's
case (tests/test_http_mutations.py's ``check``, at tools/list) must then fail, by its
oracle, not by an internal error. A break that leaves a kind's case passing means the kind
checks nothing of that rule.
"""

import pytest

from mcpstart.transports import http
from mcpstart.transports.http import HttpTransport
from mcpstart.transports.jsonrpc import decode, is_message
from mcpstart.transports.sse import Event, EventStream

from http_mutations import BY_NAME, KINDS, Mutation
from test_http_mutations import check


def _wrap(monkeypatch, owner, name: str, make) -> None:
    """``owner.name`` replaced by ``make(original)``."""
    monkeypatch.setattr(owner, name, make(getattr(owner, name)))


def _framing(headers: dict[str, str]) -> str:
    if "chunked" in headers.get("transfer-encoding", "").lower():
        return "chunked"
    return "length" if "content-length" in headers else "close"


def end_ignored(framing: str):
    """The end of an answer framed by ``framing`` (its Content-Length reached, its last
    chunk, the server's close: RFC 9112, section 6.3) is not taken as its end."""
    def apply(mp):
        def make(event_):
            def _event(self, conn, event, woke):
                exchange = conn.exchange
                if event[0] == "end" and exchange is not None \
                        and _framing(exchange.headers_in) == framing:
                    return None
                return event_(self, conn, event, woke)
            return _event
        _wrap(mp, HttpTransport, "_event", make)
    return apply


def parsed_per_read(mp):
    """Each read's bytes are parsed as a new answer (no incremental parse)."""
    def make(read):
        def _read(self, conn, woke):
            conn.answers = http.Answers()
            return read(self, conn, woke)
        return _read
    _wrap(mp, HttpTransport, "_read", make)


def head_timeout(mp):
    """An answer not begun within 1 s fails its request (a short read timeout)."""
    def make(receive):
        def _receive(self, timeout_s, quiet_s=None):
            frames = receive(self, min(timeout_s, 1.0), quiet_s)
            if not frames and timeout_s > 1.0:
                for conn in list(self._connections):
                    if conn.exchange is not None and conn.exchange.kind == "request" \
                            and conn.exchange.status is None:
                        self._end(conn, "no answer within 1 s")
                frames = receive(self, 0.0, quiet_s)
            return frames
        return _receive
    _wrap(mp, HttpTransport, "receive", make)


def _head_fields(mp, change):
    """Every answer's header fields as ``change(fields, raw)`` gives them (``raw``: the
    parser's own (name, value) bytes)."""
    def make(complete):
        def on_headers_complete(self):
            complete(self)
            if self._events and self._events[-1][0] == "head":
                kind, status, reason, fields = self._events[-1]
                self._events[-1] = (kind, status, reason, change(fields, self._headers))
        return on_headers_complete
    _wrap(mp, http.Answers, "on_headers_complete", make)


def names_case_sensitive(mp):
    """Header field names kept as sent: looked up case-sensitively (RFC 9110, section 5.1
    says they are not)."""
    _head_fields(mp, lambda fields, raw: [(k.decode("latin-1"), v.decode("latin-1"))
                                          for k, v in raw])


def first_field_counts(mp):
    """Of a field sent twice, the first value counts, not the last."""
    _head_fields(mp, lambda fields, raw: fields[::-1])


def parse_errors_ignored(mp):
    """Bytes the HTTP parser rejects are waited past, not acted on."""
    _wrap(mp, http.Answers, "feed", lambda feed: lambda self, chunk: (feed(self, chunk)[0], None))


def closes_ignored(mp):
    """A connection the server closed mid-exchange leaves its request waiting."""
    def _lost(self, conn, cause):
        conn.exchange = None
        conn.close()
    mp.setattr(HttpTransport, "_lost", _lost)


def status_ignored(mp):
    """An error status read as 200 OK: the body passes as a successful answer's."""
    def make(event_):
        def _event(self, conn, event, woke):
            if event[0] == "head" and event[1] >= 400:
                event = ("head", 200, "OK", event[3])
            return event_(self, conn, event, woke)
        return _event
    _wrap(mp, HttpTransport, "_event", make)


def _moves_unless(mp, skip):
    """``_moves`` answers False (a plain error status) where ``skip(self, exchange)``."""
    def make(moves):
        def _moves(self, exchange, woke):
            return False if skip(self, exchange) else moves(self, exchange, woke)
        return _moves
    _wrap(mp, HttpTransport, "_moves", make)


def redirects_not_followed(mp):
    """A redirect is the request's error, wherever its Location points."""
    _moves_unless(mp, lambda self, exchange: 300 <= exchange.status < 400)


def origin_not_compared(mp):
    """A Location's scheme, host and port are dropped: any Location followed as a path."""
    def urljoin(base, location, _join=http.urljoin):
        return _join(base, http.urlsplit(location)._replace(scheme="", netloc="").geturl())
    mp.setattr(http, "urljoin", urljoin)


def no_location_is_here(mp):
    """A redirect without a Location is followed to the endpoint itself."""
    def make(moves):
        def _moves(self, exchange, woke):
            if 300 <= exchange.status < 400 and "location" not in exchange.headers_in:
                exchange.headers_in["location"] = self.endpoint.path
            return moves(self, exchange, woke)
        return _moves
    _wrap(mp, HttpTransport, "_moves", make)


def five_redirects(mp):
    """Up to five redirects followed (an HTTP library's limit), then "too many
    redirects", not one followed and the second named."""
    def make(moves):
        def _moves(self, exchange, woke):
            if 300 <= exchange.status < 400:
                self.followed = getattr(self, "followed", 0) + 1
                if self.followed > 5:
                    self._error_answer(exchange, woke, "too many redirects")
                    return True
                self._moved = None
            return moves(self, exchange, woke)
        return _moves
    _wrap(mp, HttpTransport, "_moves", make)


def sessions_not_renewed(mp):
    """A 404 to a request carrying the session id is a plain error status."""
    _moves_unless(mp, lambda self, exchange: exchange.status == 404)


def three_renewals(mp):
    """A lost session renewed up to three times, then the plain 404, not renewed once and
    the second named."""
    def skip(self, exchange):
        if exchange.status != 404:
            return False
        self.renewals = getattr(self, "renewals", 0) + 1
        self._expired = None
        return self.renewals > 3
    _moves_unless(mp, skip)


def empty_answers_ignored(mp):
    """A 2xx answer with no body to a request leaves it waiting for its answer."""
    def make(finish):
        def _finish(self, exchange, woke):
            if exchange.kind == "request" and exchange.stream is None \
                    and 200 <= (exchange.status or 0) < 300 and not exchange.buffer.strip():
                exchange.done = True
                return True
            return finish(self, exchange, woke)
        return _finish
    _wrap(mp, HttpTransport, "_finish", make)


def bodies_passed_on(mp):
    """A finished body that is not JSON-RPC goes to the session as a stray message (the
    stdio words follow), not ended at once with its status, headers and first bytes."""
    def make(finish):
        def _finish(self, exchange, woke):
            body = bytes(exchange.buffer)
            if exchange.kind == "request" and exchange.stream is None and body.strip() \
                    and not is_message(decode(body, "body").value):
                exchange.done = True
                self._frames.append(http.Frame(body, woke))
                return True
            return finish(self, exchange, woke)
        return _finish
    _wrap(mp, HttpTransport, "_finish", make)


def streams_end_quietly(mp):
    """A request's event stream that ends without its answer leaves it waiting."""
    def make(ended):
        def _stream_ended(self, exchange, woke, broke):
            if broke is None and exchange.kind == "request" and exchange.stream is not None:
                for event in exchange.stream.end():
                    self._frame(exchange, event.data, woke)
                return None
            return ended(self, exchange, woke, broke)
        return _stream_ended
    _wrap(mp, HttpTransport, "_stream_ended", make)


def codings_not_read(mp):
    """Content-Encoding is not read: the coded body is taken as it came."""
    mp.setattr(http, "content_decoder", lambda value: None)


def identity_refused(mp):
    """``identity`` (no coding, RFC 9110 section 8.4.1) refused as an unknown coding."""
    def content_decoder(value, _decoder=http.content_decoder):
        if value.strip():
            raise ValueError(f"Content-Encoding: {value.strip()}")
        return _decoder(value)
    mp.setattr(http, "content_decoder", content_decoder)


def short_codings_passed(mp):
    """A coded body whose coding ended short of its end is taken as it is."""
    def _flushed(self, conn, exchange, woke):
        self._body(conn, exchange, exchange.decoder.flush(), woke)
        return not conn.closed
    mp.setattr(HttpTransport, "_flushed", _flushed)


def _stream_class(mp, cls) -> None:
    mp.setattr(http, "EventStream", cls)


def lines_ended_by(separator: bytes):
    """Event stream lines end with ``separator`` only (the SSE rules allow CRLF, LF, CR)."""
    class Split(EventStream):
        def feed(self, chunk):
            lines = bytes(self._rest + chunk).split(separator)
            self._rest = bytearray(lines.pop())
            return [e for e in map(self._line, lines) if e is not None]
    return lambda mp: _stream_class(mp, Split)


def other_events_end_requests(mp):
    """An event whose data is not a JSON-RPC message (another event name's, a ping's)
    fails the request at once, as if its stream were the answer."""
    def make(frame):
        def _frame(self, exchange, data, woke):
            if exchange.stream is not None and not is_message(decode(data, "event").value):
                self._failed(exchange, "an event that is not JSON-RPC")
                return None
            return frame(self, exchange, data, woke)
        return _frame
    _wrap(mp, HttpTransport, "_frame", make)


def events_at_stream_end(mp):
    """A stream's events are handed on only when it ends (the whole body read first)."""
    class Held(EventStream):
        def __init__(self):
            super().__init__()
            self.held: list[Event] = []

        def feed(self, chunk):
            self.held += super().feed(chunk)
            return []

        def end(self):
            events, self.held = self.held + super().end(), []
            return events
    _stream_class(mp, Held)


def first_event_dropped(mp):
    """The first event of a stream that had a data field is dropped as its priming event,
    whether or not its data was empty."""
    class Primed(EventStream):
        def _dispatch(self):
            event = super()._dispatch()
            return None if self.ended == 1 else event
    _stream_class(mp, Primed)


def endpoint_not_looked_at(mp):
    """An ``endpoint`` event is taken as any other event."""
    class Unnamed(EventStream):
        def _dispatch(self):
            event = super()._dispatch()
            return None if event is None else Event(event.data, "message", event.id)
    _stream_class(mp, Unnamed)


BREAKS = {
    "framing_length": end_ignored("length"),
    "framing_chunked": end_ignored("chunked"),
    "framing_close": end_ignored("close"),
    "split_writes": parsed_per_read,
    "slow_headers": head_timeout,
    "header_casing": names_case_sensitive,
    "duplicate_content_type": first_field_counts,
    "chunked_malformed": parse_errors_ignored,
    **dict.fromkeys(("closed_after_1pct", "closed_after_50pct", "closed_after_99pct"),
                    closes_ignored),
    **dict.fromkeys(("status_500_text", "status_500_empty", "status_400_id_null"),
                    status_ignored),
    **dict.fromkeys(("status_302_same_origin", "status_308_same_origin_absolute"),
                    redirects_not_followed),
    "status_308_other_origin": origin_not_compared,
    "status_307_no_location": no_location_is_here,
    "status_301_again": five_redirects,
    "session_expired_404": sessions_not_renewed,
    "session_never_found_404": three_renewals,
    **dict.fromkeys(("status_200_empty", "status_202_for_request"), empty_answers_ignored),
    **{kind.name: bodies_passed_on for kind in KINDS if kind.name.startswith("not_json_rpc_")},
    "not_json_rpc_text_event-stream": streams_end_quietly,
    **dict.fromkeys(("gzip", "x_gzip", "deflate", "br", "unknown_coding", "gzip_not_gzip"),
                    codings_not_read),
    "identity": identity_refused,
    "gzip_cut": short_codings_passed,
    "sse_lf": lines_ended_by(b"\r\n"),
    "sse_crlf": lines_ended_by(b"\n"),
    "sse_cr": lines_ended_by(b"\n"),
    "sse_comments_and_names": other_events_end_requests,
    "sse_never_ends": events_at_stream_end,
    "sse_no_priming": first_event_dropped,
    "sse_ends_without_answer": streams_end_quietly,
    "sse_old_transport": endpoint_not_looked_at,
}


def test_every_kind_has_a_break():
    assert sorted(BREAKS) == sorted(BY_NAME)


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_every_http_kind_fails_when_its_rule_is_broken(tmp_path, monkeypatch, kind):
    BREAKS[kind.name](monkeypatch)
    with pytest.raises(AssertionError) as failed:
        check([Mutation(kind.name, "tools/list")], tmp_path)
    assert "mcpstart could not measure this server" not in str(failed.value)
