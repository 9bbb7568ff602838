"""HTTP/1.1 framing (mcpstart/transports/http1.py) and the HTTP transport over it, as families:
every framing of an answer (Content-Length, chunked, close-delimited, after interim 1xx
answers, kept alive or not) split at any byte gives the same answer; bytes that are no
answer fail with the parser's words and keep what came before; a header field that would
break the request (a server's session id with a line break) is never sent and fails its
request at once. The transport cases run against a server played on a raw loopback socket
in a thread, so each byte it writes is the test's."""

import json
import socket
import threading
import time

import httptools
import pytest
from conftest import require_modules

require_modules("hypothesis")  # the test extra's property-based engine
from hypothesis import given, settings, strategies as st  # noqa: E402

from mcpstart.measure.client import initialize_result, result_of
from mcpstart.transports.http import MAX_CONNECTIONS, HttpTransport
from mcpstart.transports.http1 import MAX_HEAD_BYTES, Answers, request_head
from mcpstart.transports.session import Session, SessionError
from mcpstart.wire import initialize_request

from conftest import FAST


def answer_bytes(status: int, body: bytes, framing: str, *, interim: int = 0,
                 version: str = "1.1", close: bool = False, chunk: int = 7) -> bytes:
    """An HTTP answer: ``interim`` 1xx answers first, then ``status`` with ``body`` framed by
    "length", "chunked" (``chunk``-byte chunks, one with an extension) or "close"."""
    out = b"HTTP/1.1 100 Continue\r\n\r\n" * interim
    head = [f"HTTP/{version} {status} Some Reason", "Content-Type: application/json"]
    if close:
        head.append("Connection: close")
    if framing == "length":
        head.append(f"Content-Length: {len(body)}")
        payload = body
    elif framing == "chunked":
        head.append("Transfer-Encoding: chunked")
        pieces = [body[i:i + chunk] for i in range(0, len(body), chunk)]
        payload = b"".join(b"%x%s\r\n%s\r\n" % (len(p), b";ext=1" if i == 0 else b"", p)
                           for i, p in enumerate(pieces)) + b"0\r\n\r\n"
    else:
        payload = body
    return out + ("\r\n".join(head) + "\r\n\r\n").encode() + payload


def parsed(data: bytes, cuts: list[int], eof: bool) -> tuple[list[tuple], object]:
    """Every event of ``data`` fed in pieces cut at ``cuts``, then EOF when ``eof``."""
    answers, events, error = Answers(), [], None
    edges = [0, *sorted(set(c for c in cuts if 0 < c < len(data))), len(data)]
    for a, b in zip(edges, edges[1:]):
        got, error = answers.feed(data[a:b])
        events += got
        assert error is None, error
    if eof:
        got, error = answers.feed(b"")
        events += got
    return events, error


def collapse(events: list[tuple]) -> list[tuple]:
    """Events with consecutive body pieces joined (how a body is cut is the network's)."""
    out = []
    for event in events:
        if event[0] == "body" and out and out[-1][0] == "body":
            out[-1] = ("body", out[-1][1] + event[1])
        else:
            out.append(event)
    return out


@settings(max_examples=300, deadline=None)
@given(status=st.sampled_from([200, 202, 400, 404, 500]), body=st.binary(max_size=300),
       framing=st.sampled_from(["length", "chunked", "close"]), interim=st.integers(0, 2),
       close=st.booleans(), version=st.sampled_from(["1.1", "1.0"]), chunk=st.integers(1, 64),
       cuts=st.lists(st.integers(0, 700), max_size=12))
def test_any_framing_split_anywhere_is_the_same_answer(status, body, framing, interim, close,
                                                       version, chunk, cuts):
    data = answer_bytes(status, body, framing, interim=interim, version=version, close=close,
                        chunk=chunk)
    events, error = parsed(data, cuts, eof=framing == "close")
    assert error is None
    head, *rest = collapse(events)
    assert head[:3] == ("head", status, "Some Reason")
    assert ("content-type", "application/json") in head[3]
    reusable = framing != "close" and not close and version == "1.1"
    assert rest == ([("body", body)] if body else []) + [("end", reusable)]


def test_answers_back_to_back_and_bodiless_statuses():
    data = (answer_bytes(200, b'{"a":1}', "length") + b"HTTP/1.1 204 No Content\r\n\r\n"
            + answer_bytes(202, b"", "chunked"))
    events, _ = parsed(data, [], eof=False)
    assert [e[:2] for e in events] == [("head", 200), ("body", b'{"a":1}'), ("end", True),
                                       ("head", 204), ("end", True), ("head", 202),
                                       ("end", True)]


@pytest.mark.parametrize("data, words", [
    (b"SSH-2.0-OpenSSH_9.6\r\n", "Expected HTTP/"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "chunk size"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n", "Content-Length"),
    (b"HTTP/1.1 200 OK\r\n" + b"X-Pad: " + b"a" * MAX_HEAD_BYTES, "KiB of status line"),
])
def test_bytes_that_are_no_answer_fail_with_the_parsers_words(data, words):
    _, error = Answers().feed(data)
    assert error is not None and words.lower() in str(error).lower()


def test_an_error_after_an_answer_keeps_the_answer():
    events, error = Answers().feed(answer_bytes(200, b"{}", "length") + b"garbage\r\n\r\n")
    assert [e[0] for e in events] == ["head", "body", "end"] and error is not None


def test_a_request_is_what_a_server_parses_and_no_field_can_break_it():
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    data = request_head("POST", "/mcp?x=1", [("Host", "[::1]:80"), ("Mcp-Name", "a b")],
                        len(body)) + body

    class Seen:
        def __init__(self):
            self.headers, self.body, self.url, self.done = [], b"", b"", False

        def on_url(self, url): self.url += url
        def on_header(self, name, value): self.headers.append((name, value))
        def on_body(self, data): self.body += data
        def on_message_complete(self): self.done = True

    seen = Seen()
    parser = httptools.HttpRequestParser(seen)
    parser.feed_data(data)
    assert seen.done and parser.get_method() == b"POST" and seen.url == b"/mcp?x=1"
    assert seen.headers == [(b"Host", b"[::1]:80"), (b"Mcp-Name", b"a b"),
                            (b"Content-Length", str(len(body)).encode())]
    assert seen.body == body
    for headers in ([("Mcp-Session-Id", "abc\r\nX-Injected: 1")], [("X", "a\nb")],
                    [("X", "nul\x00")], [("Bad Name", "v")], [("X", "\u4e16")]):
        with pytest.raises(ValueError, match="header"):
            request_head("POST", "/mcp", headers, len(body))
    with pytest.raises(ValueError, match="target"):
        request_head("POST", "/m cp", [], len(body))


# ----- the transport against a server played on a raw socket --------------------------
class RawServer:
    """A loopback listener in a thread: each request read (httptools), ``reply(message,
    headers)`` gives the writes to make (bytes, or a float: a pause in seconds) and whether
    to close the connection after them. ``requests`` keeps what came: (message, headers)."""

    def __init__(self, reply):
        self.reply, self.requests = reply, []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/mcp"
        self.connections = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._connection, args=(conn,), daemon=True).start()

    def _connection(self, conn):
        server = self

        class Request:
            def __init__(self):
                self.headers, self.body = {}, b""

            def on_header(self, name, value):
                self.headers[name.decode().lower()] = value.decode("latin-1")

            def on_body(self, data):
                self.body += data

            def on_message_complete(self):
                message = json.loads(self.body) if self.body else None
                server.requests.append((message, self.headers))
                writes, close = server.reply(message, self.headers)
                for write in writes:
                    if isinstance(write, float):
                        time.sleep(write)
                    else:
                        conn.sendall(write)
                if close:
                    conn.close()
                    raise ConnectionAbortedError
                self.__init__()

        parser = httptools.HttpRequestParser(Request())
        with conn:
            try:
                while data := conn.recv(65536):
                    parser.feed_data(data)
            except (OSError, httptools.HttpParserError):
                return

    def close(self):
        self.listener.close()

    def __enter__(self) -> "RawServer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


INIT = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
        "serverInfo": {"name": "raw", "version": "1"}}


def json_answer(message, framing="length", session="s-1", close=False, chunk=5,
                pause=0.0, init=INIT) -> list:
    """The writes of a JSON answer to ``message`` (its result by method)."""
    result = init if message["method"] == "initialize" else {"tools": []}
    body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode()
    data = answer_bytes(200, body, framing, close=close, chunk=chunk)
    if session:
        data = data.replace(b"\r\n", f"\r\nMcp-Session-Id: {session}\r\n".encode(), 1)
    cut = len(data) // 2
    return [data[:cut], pause, data[cut:]] if pause else [data]


def connected(server: RawServer, timeout_s: float = 5) -> Session:
    return Session.start(HttpTransport(url=server.url), initialize_request("2025-11-25"),
                         wait_s=timeout_s, waits=FAST.waits)


def handshake(server: RawServer) -> Session:
    session = connected(server)
    initialize_result(session.wait(1, 5))
    return session


@pytest.mark.parametrize("framing", ["length", "chunked", "close"])
def test_every_framing_of_an_answer_is_read_when_it_is_whole(framing):
    def reply(message, headers):
        if message.get("id") is None:
            return [b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n"], False
        return json_answer(message, framing, chunk=3, pause=0.05), framing == "close"

    with RawServer(reply) as server:
        session = handshake(server)
        assert session.transport.session_id == "s-1"
        session.notify("notifications/initialized")
        # read when whole: waiting for more would end in "no answer within 60 s"
        assert session.request("tools/list", {}, 60).message["result"] == {"tools": []}
        # a close-delimited answer ends its connection: the notification (its 202 has a
        # length) and tools/list went on a second one
        assert server.connections == (2 if framing == "close" else 1)
        assert server.requests[2][1]["mcp-session-id"] == "s-1"
        session.shutdown()


def test_a_negotiated_revision_that_would_break_a_header_fails_the_next_request_at_once():
    def reply(message, headers):
        return json_answer(message, init={**INIT, "protocolVersion": "2025-11-25\r\nX: 1"}), False

    with RawServer(reply) as server:
        session = connected(server)
        session.wait(1, 5)
        with pytest.raises(SessionError, match="cannot be sent: the MCP-Protocol-Version header"):
            result_of(session.request("tools/list", {}, 60), "tools/list")
        assert len(server.requests) == 1  # nothing with the broken field went out
        session.shutdown()


@pytest.mark.parametrize("writes, words", [
    ([b"SSH-2.0-OpenSSH_9.6\r\n"], "cannot be read"),
    ([b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\""],
     "closed the connection in the middle of its answer \\(HTTP 200: the body cut short\\)"),
    ([b"HTTP/1.1 200 OK\r\n", b"X: " + b"a" * (MAX_HEAD_BYTES + 10)], "KiB of status line"),
], ids=["not-http", "cut-off-body", "endless-head"])
def test_bytes_that_are_no_answer_fail_the_request_at_once(writes, words):
    with RawServer(lambda message, headers: (writes, True)) as server:
        with pytest.raises(SessionError, match=words):  # not "no answer within 60 s"
            initialize_result(connected(server, timeout_s=60).wait(1, 60))


def test_answers_on_event_streams_the_server_keeps_open_never_starve_the_next_request():
    def reply(message, headers):
        if message.get("id") is None:
            return [b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n"], False
        answer = json.loads(b"".join(w for w in json_answer(message) if isinstance(w, bytes))
                            .split(b"\r\n\r\n", 1)[1])
        event = b"event: message\ndata: " + json.dumps(answer).encode() + b"\n\n"
        head = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nMcp-Session-Id: s-1\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n")
        return [head + b"%x\r\n%s\r\n" % (len(event), event)], False  # the stream never ends

    with RawServer(reply) as server:
        session = handshake(server)
        session.notify("notifications/initialized")
        for _ in range(7):  # more requests than connections may be open at once; a starved
            # one would end in "no answer within 60 s"
            assert session.request("tools/list", {}, 60).message["result"] == {"tools": []}
        assert len(session.transport._connections) <= MAX_CONNECTIONS
        session.shutdown()


def test_an_answer_written_twice_is_a_stray_and_the_next_request_still_gets_its_own():
    def reply(message, headers):
        if message.get("id") is None:
            return [b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n"], False
        [data] = json_answer(message)
        return [data, 0.03, data], False  # the same answer again, after the next request

    with RawServer(reply) as server:
        session = handshake(server)
        session.notify("notifications/initialized")
        for _ in range(3):  # one lost to the stray would end in "no answer within 60 s"
            assert session.request("tools/list", {}, 60).message["result"] == {"tools": []}
        assert session.traffic.stray_responses >= 2
        session.shutdown()


@pytest.mark.e2e  # a real timing: the HTTP/1.1 reader acts at once on a real socket
def test_a_server_that_closes_each_kept_alive_connection_costs_no_wait():
    # closed after each answer, with no Connection: close
    with RawServer(lambda message, headers: (
        [b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n"] if message.get("id") is None
        else json_answer(message), True)) as server:
        session = handshake(server)
        begun = time.monotonic()
        for _ in range(10):
            assert session.request("tools/list", {}, 5).message["result"] == {"tools": []}
        assert time.monotonic() - begun < 0.8  # a 100 ms wait per request read 1 s and more
        assert server.connections == 11
        session.shutdown()


def test_a_url_nothing_listens_on_fails_every_request_at_once():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/mcp"  # bound, never listening
        session = Session.start(HttpTransport(url=url), initialize_request("2025-11-25"),
                                wait_s=60, waits=FAST.waits)
        for what, response in (("initialize", session.wait(1, 60)),
                               ("tools/list", session.request("tools/list", {}, 60))):
            with pytest.raises(SessionError, match=f"^{what}: cannot connect to {url}: "
                                                    "Connection refused$"):
                result_of(response, what)
        session.shutdown()


def test_an_event_stream_ended_by_a_lone_cr_gives_its_last_event():
    from mcpstart.transports.sse import EventStream

    stream = EventStream()
    assert stream.feed(b"data: {}\r\r") == []  # the last CR might be half of a CRLF
    [event] = stream.end()
    assert event.data == b"{}" and stream.pending_bytes == 0


def test_a_notification_answered_200_with_a_body_is_accepted_with_a_note():
    with RawServer(lambda message, headers: (
        [answer_bytes(200, b'{"ok":true}', "length")] if message.get("id") is None
        else json_answer(message), False)) as server:
        session = handshake(server)
        session.notify("notifications/initialized")
        assert session.request("tools/list", {}, 5).message["result"] == {"tools": []}
        assert session.traffic.irregular == {
            "notifications/initialized answered with HTTP 200 and a body (accepted; the "
            "specification asks 202 Accepted with no body)": 1}
        session.shutdown()


def test_the_first_connection_is_made_before_the_clock():
    import sys
    from mcpstart.command import Command

    transport = HttpTransport(Command([sys.executable, "-c", "pass", "{port}"]))
    try:  # what start() needs after the clock: a socket made, the address known
        assert transport._spare is not None and transport._spare.fileno() >= 0
        assert transport._address[4] == ("127.0.0.1", transport.endpoint.port)
    finally:
        transport.close()
