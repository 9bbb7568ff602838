"""Large answers are read in time that grows with their length, not its square, on stdio and in
event streams; a timeout's cause names what did arrive of the answer and blames block-buffered
output only when no answer ever came while stdin was open."""

import json
import time

import pytest

from mcpstart.measure.client import call_tool
from mcpstart.transports.framing import LineBuffer
from mcpstart.transports import jsonrpc
from mcpstart.transports.http import HttpTransport
from mcpstart.transports.session import NoAnswer, Session, Waits
from mcpstart.transports.sse import EventStream
from mcpstart.wire import ToolCall, initialize_request

from conftest import fake_command, start
from scripted import GoodServer, Out, ScriptedTransport
from test_http import fake as http_fake

REV = "2025-11-25"
WAITS = Waits(shutdown_grace_s=0.5, diagnosis_s=0.3)


class CountingLines(LineBuffer):
    """A LineBuffer that counts the bytes its ``partial`` copies."""

    copied = 0

    @property
    def partial(self) -> bytes:
        data = super().partial
        CountingLines.copied += len(data)
        return data


def test_a_long_answer_line_is_read_without_copying_it_per_chunk():
    session = start(fake_command("--pad-answer", str(2 << 20)), initialize_request(REV))
    try:
        session.wait(1, 10)
        session.transport._lines = CountingLines()
        CountingLines.copied = 0
        outcome = call_tool(session, ToolCall(), "abc", 30)
        size = outcome.response.size_bytes
        assert outcome.text == "cba" and size > 2 << 20  # 32 or more reads of 64 KiB
        assert CountingLines.copied <= size  # at most one copy of the line, never one per read
    finally:
        session.shutdown()


class CountingBytes(bytearray):
    """A bytearray that counts the bytes its ``find`` calls scan."""

    scanned = 0

    def find(self, sub, start=0, end=None):
        CountingBytes.scanned += (len(self) if end is None else end) - start
        return super().find(sub, start, end)


def test_an_event_of_4_mib_in_64_kib_chunks_is_scanned_in_linear_time():
    stream = EventStream()
    stream._rest = CountingBytes()
    CountingBytes.scanned = 0
    data = b"event: message\r\ndata: " + b"x" * (4 << 20) + b"\r\n\r\n"
    events = []
    for at in range(0, len(data), 1 << 16):
        events += stream.feed(data[at:at + (1 << 16)])
    assert [len(e.data) for e in events] == [4 << 20]
    assert CountingBytes.scanned <= 3 * len(data)  # LF and CR looked for in new bytes only


def test_an_unfinished_event_shows_its_data_so_far():
    stream = EventStream()
    assert stream.feed(b"data: {\"jsonrpc\"\ndata: :\"2.0\",\"id\":3,\"res") == []
    assert stream.unfinished == b'{"jsonrpc"\n:"2.0","id":3,"res'


class HalfWritten(GoodServer):
    """Answers initialize at once; writes the first 5000 bytes of a tools/call answer, the
    rest only at stdin EOF (``flushing``: False answers nothing before the EOF at all)."""

    flushing = True

    def __init__(self):
        self.rest = b""

    def answer(self, message):
        outs = super().answer(message)
        method = message.get("method") if isinstance(message, dict) else None
        if not self.flushing or method == "tools/call":
            data = b"".join(o.data for o in outs)
            cut = 5000 if method == "tools/call" else 0
            self.rest += data[cut:]
            return [Out("stdout", data[:cut])] if cut else []
        return outs

    def eof(self):
        return [Out("stdout", self.rest, 0.1), Out("exit", code=0, after_s=0.2)]


class NeverFlushing(HalfWritten):
    flushing = False


def scripted_timeout(server: GoodServer, by_lines: bool = True) -> str:
    transport = ScriptedTransport(server)
    transport.framed_by_lines = by_lines
    session = Session.start(transport, initialize_request(REV), waits=WAITS)
    try:
        if server.flushing:
            session.wait(1, 10)
        with pytest.raises(NoAnswer) as caught:
            session.request("tools/call", ToolCall().params("x" * 20_000), 5)
        return str(caught.value)
    finally:
        session.shutdown()


def test_a_late_answer_after_earlier_answers_is_slow_not_buffered():
    cause = scripted_timeout(HalfWritten())
    assert cause.startswith("no answer to tools/call reverse_text within 5 s; 5000 bytes of an "
                            "unfinished message had arrived, beginning '{\"jsonrpc\":\"2.0\",")
    assert "the answer came 0.1 s later, once stdin was closed; 1 earlier answer(s)" in cause
    assert "slow, not buffered" in cause and "block-buffered" not in cause


def test_an_answer_that_comes_only_at_eof_with_none_before_is_buffered():
    transport = ScriptedTransport(NeverFlushing())
    session = Session.start(transport, initialize_request(REV), waits=WAITS)
    try:
        with pytest.raises(NoAnswer, match="came only after stdin was closed: the server does "
                                           "not flush stdout .*block-buffered"):
            session.wait(1, 5)
    finally:
        session.shutdown()


def test_a_late_answer_without_a_stdin_says_only_that_it_was_late():
    cause = scripted_timeout(HalfWritten(), by_lines=False)
    assert cause.endswith("; the answer came 0.1 s later")
    assert "stdin" not in cause and "buffer" not in cause


@pytest.mark.parametrize("switches", [(), ("--sse",)], ids=["json", "event-stream"])
def test_an_http_answer_cut_short_is_named_with_its_bytes(switches):
    session = Session.start(HttpTransport(http_fake("--stall-after", "420", "--pad-answer", "1000",
                                                      *switches)),
                            initialize_request(REV), wait_s=10, waits=WAITS)
    try:
        session.wait(1, 10)
        with pytest.raises(NoAnswer) as caught:
            session.request("tools/call", ToolCall().params("abc"), 0.5)
        cause = str(caught.value)
        assert "bytes of an unfinished message had arrived, beginning '{\"jsonrpc\": \"2.0\", " \
               "\"id\": 2, \"result\"" in cause
        assert "buffer" not in cause and "stdin" not in cause
    finally:
        session.shutdown()


def test_an_http_request_is_sent_without_parsing_or_copying_its_bytes(monkeypatch):
    session = Session.start(HttpTransport(http_fake()), initialize_request(REV), wait_s=10,
                            waits=WAITS)
    transport, text = session.transport, "ab" * (1 << 19)
    encoded, written, parsed = [], [], []
    real_encode, real_write, real_loads = jsonrpc.encode, transport._write, json.loads
    monkeypatch.setattr(jsonrpc, "encode", lambda m: encoded.append(real_encode(m)) or encoded[-1])
    monkeypatch.setattr(transport, "_write", lambda conn: written.extend(
        v.obj for v in conn.out.views) or real_write(conn))
    try:
        session.wait(1, 10)
        with monkeypatch.context() as during_send:
            during_send.setattr(json, "loads", lambda s, *a, **k: parsed.append(len(s))
                                or real_loads(s, *a, **k))
            rpc_id = session.send_request("tools/call", ToolCall().params(text))
        assert not [n for n in parsed if n > len(text)]  # the session's message, not re-read
        big = [o for o in written if len(o) > len(text)]  # what went to the socket
        assert big and all(o is encoded[-1] for o in big)  # the session's bytes, not a copy
        answer = session.wait(rpc_id, 30).message
        assert answer["result"]["content"][0]["text"] == text[::-1]
    finally:
        session.shutdown()


SIXTY_EIGHT_MB = 68_000_000
"""A valid answer on one line, under the line limit (framing.MAX_LINE_BYTES), that took longer
than any timeout when each read copied the line read so far."""


@pytest.mark.e2e
def test_a_68_mb_answer_line_arrives_over_stdio():
    session = start(fake_command("--pad-answer", str(SIXTY_EIGHT_MB)), initialize_request(REV))
    try:
        session.wait(1, 30)
        outcome = call_tool(session, ToolCall(), "abc", 60)
        assert outcome.text == "cba" and outcome.response.size_bytes > SIXTY_EIGHT_MB
        assert len(outcome.result["structuredContent"]["padding"]) == SIXTY_EIGHT_MB
    finally:
        session.shutdown()


@pytest.mark.e2e
@pytest.mark.parametrize("framing", ["length", "chunked", "sse"])
def test_a_68_mb_answer_arrives_over_http(framing):
    """Over a real socket, as a Content-Length body, in 64 KiB chunks and as one event of an
    event stream: read whole within the 90 s timeout (a loose bound, 10 s: read in
    time quadratic in its length, it took longer than 20 s)."""
    switches = {"length": (), "chunked": ("--chunked",), "sse": ("--sse",)}[framing]
    session = Session.start(HttpTransport(http_fake("--pad-answer", str(SIXTY_EIGHT_MB),
                                                    *switches)),
                            initialize_request(REV), wait_s=30, waits=WAITS)
    try:
        session.wait(1, 30)
        began = time.monotonic()
        outcome = call_tool(session, ToolCall(), "abc", 90)
        took_s = time.monotonic() - began
        assert outcome.text == "cba" and outcome.response.size_bytes > SIXTY_EIGHT_MB
        assert len(outcome.result["structuredContent"]["padding"]) == SIXTY_EIGHT_MB
        assert took_s < 10, took_s
    finally:
        session.shutdown()
