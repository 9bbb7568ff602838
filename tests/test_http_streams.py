"""The server's side of a Streamable HTTP session beyond a POST's answer, on the virtual
clock (tests/scripted_http.py): its requests on the standalone GET stream, a stream resumed
with Last-Event-ID."""

import json

from mcpstart.measure.client import call_tool
from mcpstart.measure.session_cost import one_session
from mcpstart.transports.session import Session
from mcpstart.wire import SMALL_TEXT, ToolCall

from conftest import fast
from scripted_http import HttpGood, HttpSpawner, Wire, answer
from test_http_faults import longest_life_s, measured, said

STREAM_HEAD = answer(200, b"", "text/event-stream", framing="close")
ASK_S = 0.5


def event(message: dict, event_id: int) -> bytes:
    return b"id: %d\ndata: %s\n\n" % (event_id, json.dumps(message).encode())


class ElicitsOnGetStream(HttpGood):
    """Offers the standalone GET stream; during each tools/call it sends ``elicitation/create``
    on that stream ``ASK_S`` (virtual) after the call, and answers the call only once the
    client's reply to it has come (the conformance suite's elicitation scenario)."""

    def __init__(self):
        self.stream = None
        self.held = {}  # the elicitation's id: (the held tools/call, its answer)
        self.asked = 0

    def http(self, request):
        message = request.message
        if request.method == "GET":
            self.stream = request
            return [Wire("bytes", STREAM_HEAD + b"id: 0\ndata:\n\n")]
        if isinstance(message, dict) and message.get("method") == "tools/call" and self.stream:
            self.asked += 1
            ask = {"jsonrpc": "2.0", "id": f"e{self.asked}", "method": "elicitation/create",
                   "params": {"message": "Your name?", "requestedSchema": {
                       "type": "object", "properties": {"name": {"type": "string"}}}}}
            self.held[ask["id"]] = (request, self.reply(message))
            return [Wire("bytes", event(ask, self.asked), ASK_S, on=self.stream)]
        if isinstance(message, dict) and message.get("id") in self.held and "method" not in message:
            call, reply = self.held.pop(message["id"])
            return [Wire("bytes", answer(202, content_type="")),
                    Wire("bytes", self.body(call, reply), on=call)]
        return super().http(request)


def ok_calls_within(script, low_ms: float, high_ms: float):
    """The row of ``script`` (ok) and its transports; its 3 warm calls each took
    ``low_ms`` to ``high_ms`` of virtual time."""
    row, made = measured(script)
    assert row.status == "ok", row.reason
    calls = row.http["latency_ms"]
    assert calls["n"] == 3
    assert all(low_ms <= ms < high_ms for ms in calls["samples"]), calls
    return row, made


def test_a_request_on_the_standalone_get_stream_is_answered_and_the_call_completes():
    row, made = ok_calls_within(ElicitsOnGetStream, ASK_S * 1000, ASK_S * 1000 + 50)
    asked = row.traffic["server_requests"]["elicitation/create"]
    assert asked == row.traffic["refused_requests"]["elicitation/create"] >= 3
    assert row.traffic["streams"]["standalone_opened"] >= 1
    assert "elicitation/create" in said(row)
    gets = [r for t in made for r in t.requests if r.method == "GET"]
    assert gets and all(r.headers["accept"] == "text/event-stream"
                        and r.headers["mcp-session-id"] == "s-1" for r in gets)
    listened = [t for t in made if any(r.method == "GET" for r in t.requests)]
    assert len(listened) == 2  # the tool session's spawn and the full sessions' spawn
    # every other spawn (the timed cold start, the revision probes) sent no GET
    cold = made[0]
    assert [(r.method, (r.message or {}).get("method")) for r in cold.requests][:4] == [
        ("POST", "initialize"), ("POST", "notifications/initialized"),
        ("POST", "tools/list"), ("POST", "tools/call")]
    assert longest_life_s(made) < 20


class ResumesPostStream(HttpGood):
    """Answers tools/call with an event stream that primes (an id, ``retry: 300``) and
    closes before the answer; the answer comes on the GET that names the last event id."""

    def http(self, request):
        message = request.message
        if request.method == "GET" and request.headers.get("last-event-id") == "c-0":
            return [Wire("bytes", STREAM_HEAD + b"id: c-1\ndata: %s\n\n"
                         % json.dumps(self.reply(self.call)).encode()), Wire("close")]
        if isinstance(message, dict) and message.get("method") == "tools/call":
            self.call = message
            return [Wire("bytes", STREAM_HEAD + b"id: c-0\nretry: 300\ndata:\n\n"),
                    Wire("close", after_s=0.1)]
        return super().http(request)


def test_a_stream_closed_before_its_answer_is_resumed_with_last_event_id_after_its_retry():
    row, made = ok_calls_within(ResumesPostStream, 400, 450)  # 0.1 s open, 0.3 s retry
    assert row.traffic["streams"]["resumed"] >= 3
    resumed = [r for t in made for r in t.requests if "last-event-id" in r.headers]
    assert resumed and all(r.method == "GET" and r.headers["last-event-id"] == "c-0"
                           for r in resumed)


class ClosesWithoutReplaying(ResumesPostStream):
    """Closes the tools/call stream before the answer and offers no GET stream (405)."""

    def http(self, request):
        if request.method == "GET":
            return HttpGood.http(self, request)
        return super().http(request)


def test_a_stream_that_cannot_be_resumed_fails_at_once_saying_how_the_resumption_ended():
    row, made = measured(ClosesWithoutReplaying)
    assert row.status == "failed"
    assert "ended its event stream without the answer" in row.reason, row.reason
    assert "Last-Event-ID: c-0" in row.reason and "HTTP 405" in row.reason
    assert longest_life_s(made) < 2


class SlowAccept(HttpGood):
    """Answers notifications/initialized's 202 after 1 s (virtual)."""

    def http(self, request):
        wires = super().http(request)
        if isinstance(request.message, dict) and \
                request.message.get("method") == "notifications/initialized":
            return [Wire(w.kind, w.data, 1.0) for w in wires]
        return wires


def test_nothing_overtakes_a_notification_that_awaits_its_202():
    from scripted_http import ScriptedHttpTransport

    from mcpstart.transports.session import Session, Waits
    from mcpstart.wire import initialize_request

    transport = ScriptedHttpTransport(SlowAccept())
    transport.listen()
    session = Session.start(transport, initialize_request("2025-11-25"), wait_s=5, waits=Waits())
    session.wait(1, 5)
    session.notify("notifications/initialized")
    session.request("tools/list", {}, 5)
    session.shutdown()
    sent = {r.method + str((r.message or {}).get("method")): transport.requests.index(r)
            for r in transport.requests}
    assert sent["POSTnotifications/initialized"] < sent["GETNone"] < sent["POSTtools/list"]
    assert transport.now_s >= 1.0


def test_a_call_held_behind_a_slow_notification_is_timed_from_going_out():
    """A server that takes 50 ms (virtual) to answer notifications/initialized with its 202:
    the call waits for it, as clients send messages in order. Its answer_ms (handed to the
    transport) holds that wait, its call_ms (what a client times for the call) does not."""
    class SlowAccept(HttpGood):
        def http(self, request):
            if request.method == "POST" and isinstance(request.message, dict) \
                    and request.message.get("method") == "notifications/initialized":
                return [Wire("bytes", answer(202, content_type=""), after_s=0.05)]
            return [Wire("bytes", wire.data, after_s=0.002) for wire in super().http(request)]

    transport = HttpSpawner(SlowAccept)()
    transport.start()
    session = Session(transport)
    session.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                   "clientInfo": {"name": "t", "version": "1"}}, 5)
    session.notify("notifications/initialized")
    outcome = call_tool(session, ToolCall(), SMALL_TEXT, 5)
    assert abs(outcome.response.call_ms - 2.0) < 0.5
    assert outcome.response.answer_ms >= 50
    _, _, parts = one_session(transport, fast(), ToolCall())
    assert abs(parts["tools/call"] - 2.0) < 0.5 and abs(parts["initialize"] - 2.0) < 0.5
