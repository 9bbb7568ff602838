"""What a row makes of bytes the official SDKs' clients disagree on (transports/clients.py):
NaN in an answer is measured, with a warning naming which client refuses it and which reads
it; invalid UTF-8 in a tool's result is named by its offset and bytes, on stdio (the scripted
server) and over HTTP (tests/fakes/fake_http_server.py, JSON and event-stream answers)."""

import sys
from pathlib import Path

import pytest

from mcpstart.command import Command
from mcpstart.measure import run
from mcpstart.measure.client import call_tool
from mcpstart.results import ServerResult
from mcpstart.transports import jsonrpc
from mcpstart.transports.clients import DEVIATIONS
from mcpstart.transports.http import HttpTransport
from mcpstart.transports.session import Session
from mcpstart.wire import UNICODE_CHECK, ToolCall, initialize_request

from conftest import PYTHON, fast
from mutations import Mutation, MutatedServer
from scripted import GoodServer, Out, Spawner, line

FAKE_HTTP = Path(__file__).parent / "fakes" / "fake_http_server.py"


def measured(server) -> ServerResult:
    settings = fast(spawner=Spawner({"server": server}), runs=1, warmup=0, round_trips=2,
                    payload_bytes=2000, order="sequential")
    results = run.measure([run.Server(ServerResult("server"), Command(["server"]))], settings,
                          ["mcpstart", "measure"], {})
    return results.servers[0]


def first_invalid(data: bytes) -> str:
    """"at byte N of the message: xx" for the first invalid UTF-8 in ``data``."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as err:
        return f"at byte {err.start} of the message: {data[err.start:err.end].hex(' ')}"
    raise AssertionError("no invalid UTF-8")


class ByteReversing(GoodServer):
    """reverse_text reverses the text's UTF-8 bytes: a non-ASCII text comes back as invalid
    UTF-8. ``written`` keeps each answer's line."""

    written: list[bytes] = []

    def answer(self, message) -> list[Out]:
        if not (isinstance(message, dict) and message.get("method") == "tools/call"):
            return super().answer(message)
        text = message["params"]["arguments"]["text"]
        data = line({"jsonrpc": "2.0", "id": message["id"],
                     "result": {"content": [{"type": "text", "text": "@T@"}]}})
        data = data.replace(b'"@T@"', b'"' + text.encode()[::-1] + b'"')
        ByteReversing.written.append(data[:-1])
        return [Out("stdout", data)]


def test_nan_in_an_answer_is_measured_and_the_refusing_client_named():
    row = measured(lambda: MutatedServer((Mutation("nan", "tools/call"),)))
    assert row.status == "ok", row.reason
    assert row.payload["verified"] is True and row.round_trip_ms["n"] == 2
    [said] = [w["detail"] for w in row.warnings if w["kind"] == "clients_disagree"]
    assert "holds NaN or Infinity" in said
    assert "the TypeScript SDK 2.4.0 rejects it" in said
    assert "the Python SDK (mcp) 2.3.0 reads it" in said


def test_invalid_utf8_in_the_tool_result_is_named_by_offset_and_bytes():
    ByteReversing.written = []
    row = measured(ByteReversing)
    assert row.status == "failed"
    check = next(d for d in ByteReversing.written if b"\xf0" in d or b"\x80" in d)
    assert first_invalid(check) in row.reason
    assert row.reason.startswith("tools/call reverse_text: the answer to the emoji / combining "
                                 "mark check holds invalid UTF-8")
    assert "the Python SDK (mcp) 2.3.0 ends the connection" in row.reason
    assert "did not reverse" not in row.reason
    assert row.payload["verified"] is True  # the ASCII payload reverses the same by bytes


def http_session(*switches: str) -> Session:
    command = Command([*PYTHON, str(FAKE_HTTP), "--port", "{port}", *switches])
    session = Session.start(HttpTransport(command), initialize_request("2025-11-25"),
                            wait_s=10, waits=fast().waits)
    session.wait(1, 10)
    session.notify("notifications/initialized")
    return session


def test_a_byte_order_mark_fails_a_stdio_line_and_is_measured_in_a_json_body():
    bom = DEVIATIONS["bom"].example
    assert jsonrpc.decode(bom, "line").strict.startswith("begins with a UTF-8 byte order mark")
    assert jsonrpc.decode(bom, "event").strict is not None
    session = http_session("--bom")
    try:
        outcome = call_tool(session, ToolCall(), "abc", 10)
        split = dict(session.traffic.split)
    finally:
        session.shutdown()
    assert outcome.text == "cba"
    [(note, count)] = split.items()  # once for initialize, once for tools/call
    assert note.startswith("begins with a UTF-8 byte order mark; the TypeScript SDK 2.4.0 reads "
                           "it, the Python SDK (mcp) 2.3.0 rejects it") and count == 2


@pytest.mark.parametrize("switches,python", [
    ((), "the Python SDK (mcp) 2.3.0 rejects it"),
    (("--sse",), "both read it with U+FFFD in place of the invalid bytes")],
    ids=["json", "event-stream"])
def test_invalid_utf8_over_http_is_named_with_what_the_clients_do_there(switches, python):
    session = http_session("--byte-reverse", *switches)
    try:
        outcome = call_tool(session, ToolCall(), UNICODE_CHECK, 10)
    finally:
        session.shutdown()
    body = (b'{"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "'
            + UNICODE_CHECK.encode()[::-1] + b'"}], "isError": false}}')
    said = outcome.response.invalid_utf8
    assert said.startswith(f"holds invalid UTF-8 (RFC 8259, section 8.1) [{first_invalid(body)}]")
    assert python in said
