"""The Streamable HTTP transport and what measures over it, against the fake HTTP server
(tests/fakes/fake_http_server.py, a real process on a loopback port): JSON and event-stream
answers both read, the session id and protocol headers kept, the 2026-07-28 headers, HTTP
errors and exits acted on at once, load that times out counted as errors with the row ok,
and no process left behind."""

import json
import sys
import time
from pathlib import Path

import psutil
import pytest

from conftest import PYTHON, fast, unavailable
from mcpstart.command import Command
from mcpstart.engine import job_for, measure
from mcpstart.measure import load
from mcpstart.measure.client import ProbeError, call_tool, initialize_result, list_tools
from mcpstart.endpoint import Endpoint, is_loopback
from mcpstart.transports.http import HttpTransport, header_value, retry_interval_s
from mcpstart.transports.session import Exited, Session, SessionError
from mcpstart.transports.sse import EventStream
from mcpstart.views.table import table
from mcpstart.wire import ToolCall, initialize_request, modern_request
from mcpstart import warnings as warn

FAKE = Path(__file__).parent / "fakes" / "fake_http_server.py"
WAITS = fast().waits
MIB = 1 << 20


def fake(*switches: str) -> Command:
    return Command([*PYTHON, str(FAKE), "--port", "{port}", *switches])


def started(*switches: str, timeout_s: float = 10) -> Session:
    session = Session.start(HttpTransport(fake(*switches)), initialize_request("2025-11-25"),
                            wait_s=timeout_s, waits=WAITS)
    session.wait(1, timeout_s)
    return session


def no_children() -> list:
    return [p for p in psutil.Process().children(recursive=True) if p.status() != "zombie"]


def test_event_stream_framing_follows_the_html_standard():
    stream = EventStream()
    assert stream.feed(b"id: 7\r\ndata:\r\n\r\n: keep-alive\r") == []  # priming: no event
    assert stream.ended == 1  # but an event ended (an answer after it: "sse-primed")
    assert stream.feed(b"\nevent: message\ndata: {\"a\"\ndata: :1}\r") == []
    [event] = stream.feed(b"\r\n")  # the CR was half of a CRLF
    assert (event.data, event.event, event.id, stream.comments) == (b'{"a"\n:1}', "message",
                                                                     "7", 1)
    assert stream.feed(b"data: cut off") == [] and stream.pending_bytes == 13


def test_header_values_and_the_port_retry_rule():
    assert header_value("reverse_text") == "reverse_text"
    assert header_value("Hello, 世界") == "=?base64?SGVsbG8sIOS4lueVjA==?="
    assert header_value(" padded ") == "=?base64?IHBhZGRlZCA=?="
    assert header_value("=?base64?literal?=") == "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="
    assert (retry_interval_s(0), retry_interval_s(0.01), retry_interval_s(5)) == (50e-6, 2e-4, 1e-3)
    assert is_loopback("127.0.0.9") and is_loopback("::1") and not is_loopback("10.0.0.1")
    assert Endpoint.parse("http://localhost:8080/x?y=1").path == "/x?y=1"
    with pytest.raises(ValueError, match="https"):
        Endpoint.parse("https://example.com/mcp")


@pytest.mark.parametrize("switches", [(), ("--sse",)], ids=["json", "event-stream"])
def test_json_and_event_stream_answers_both_read(switches):
    session = started(*switches)
    transport = session.transport
    try:
        assert transport.session_id and transport.protocol_version == "2025-11-25"
        # the fake's stream begins with a priming event and a log before the answer
        assert transport.answer_shape == ("sse-primed" if switches else "json")
        assert 0 < (transport.accepting_ns - transport.t0_ns) / 1e6 < 10_000
        session.notify("notifications/initialized")
        listing = list_tools(session, 5)
        assert [t["name"] for t in listing.tools] == ["reverse_text"]
        outcome = call_tool(session, ToolCall(), "abc\u00e9", 5)
        assert outcome.text == "\u00e9cba"
        if switches:  # the stream's log notification before the answer was recorded
            assert session.traffic.notifications["notifications/message"] == 3
        assert transport.end_session(5) == 204 and transport.session_id is None
    finally:
        ended = session.shutdown()
    assert ended.how == "sigterm" and not no_children()


def test_a_stateless_call_carries_the_2026_headers():
    transport = HttpTransport(fake())
    request = modern_request("tools/call", ToolCall().params("xyz"))
    session = Session.start(transport, request, wait_s=10, waits=WAITS)
    try:
        answer = session.wait(1, 10).message
        assert answer["result"]["content"][0]["text"] == "zyx", answer  # else -32020
        assert transport.session_id is None
    finally:
        session.shutdown()


def test_an_http_error_status_fails_the_call_at_once():
    session = started("--status", "500")
    try:  # the timeout's cause would be "no answer"
        with pytest.raises(ProbeError, match="HTTP 500 Internal Server Error: the tool broke"):
            call_tool(session, ToolCall(), "abc", 60)
    finally:
        session.shutdown()


def test_an_event_stream_that_ends_without_the_answer_fails_at_once():
    session = Session.start(HttpTransport(fake("--sse", "--no-answer-stream")),
                            initialize_request("2025-11-25"), wait_s=60, waits=WAITS)
    try:  # the timeout's cause would be "no answer"
        with pytest.raises(ProbeError, match="ended its event stream without the answer"):
            initialize_result(session.wait(1, 60))
    finally:
        session.shutdown()


def test_an_exit_before_answering_is_said_with_its_code():
    session = started("--exit-on-call")
    try:  # the timeout's cause would be "no answer"
        with pytest.raises(Exited, match="exited with code 3"):
            call_tool(session, ToolCall(), "abc", 60)
    finally:
        session.shutdown()


def test_a_server_that_is_slow_to_listen_is_waited_for():
    session = started("--start-delay", "0.3")
    try:
        assert (session.transport.accepting_ns - session.transport.t0_ns) / 1e6 > 300
    finally:
        session.shutdown()


@pytest.mark.e2e  # a real timing: the load engine's real request timeouts
def test_load_on_a_server_answering_after_10_s_counts_timeouts_and_the_row_stays_ok(tmp_path):
    if load.engine_version() is None:
        unavailable("Locust is not installed (pip install 'mcpstart[http]')")
    settings = fast(runs=1, warmup=0, round_trips=3, payload_bytes=1000, http_sessions=2,
                    load_s=1.0, load_users=2, load_timeout_s=0.5, load_rate=4.0,
                    transport="http")
    options = {"server_specs": (), "configs": (), "client": None, "cwd": None,
               "recipes_dir": None, "output": tmp_path / "r.json", "load_seconds": 1.0}
    command = ("python3", str(FAKE), "--port", "{port}", "--slow-load", "10")
    job = job_for(command, options, settings, ["mcpstart"], lambda _: None, name="slow")
    job.plan.ceiling = None  # the HTTP floor's build is the e2e tier's
    begun = time.monotonic()
    outcome = measure(job)
    [row] = outcome.results.to_dict()["servers"]
    assert row["status"] == "ok", row["reason"]
    blocks = {b["scenario"]: b for b in row["http"]["load"]}
    assert set(blocks) == set(load.SCENARIOS)
    for block in blocks.values():
        assert (block["ceiling_rps"], block["engine_bound"]) == (None, None)  # no ceiling: unknown
        assert block["errors"]["by_class"]["timeout"] >= 1
        assert block["errors"]["total"] == block["errors"]["by_class"]["timeout"]
        calls = block["by_request"]["tools/call"]
        assert calls["n"] >= 1 and calls["errors"] == calls["n"]  # never a success
        assert calls["p50"] >= 500
    assert any(w["kind"] == "load_errors" for w in row["warnings"])
    assert "load, calls on a session: errors" in table(outcome.results)
    assert time.monotonic() - begun < 60
    assert not no_children()
    json.loads((tmp_path / "r.json").read_text())


def test_a_url_is_loaded_only_on_loopback_or_when_the_user_asks(tmp_path):
    from mcpstart.targets.configs import load_config
    from mcpstart.targets.plan import make_plan

    def plan(url, named):
        return make_plan((), (), (), None, None, None, (), False, lambda: tmp_path,
                         transport="http", url=url, load=True, load_named=named)
    assert plan("http://127.0.0.1:9/mcp", False).targets[0].load_allowed
    assert not plan("http://192.0.2.1:9/mcp", False).targets[0].load_allowed
    assert plan("http://192.0.2.1:9/mcp", True).targets[0].load_allowed
    config = tmp_path / ".cursor" / "mcp.json"
    config.parent.mkdir()
    config.write_text(json.dumps({"mcpServers": {
        "near": {"url": "http://localhost:7/mcp", "headers": {"Authorization": "Bearer t0ken"}},
        "far": {"url": "http://192.0.2.1/mcp"}}}))
    assert [s.name for s in load_config(config).skipped] == ["near", "far"]
    near, far = load_config(config, remote=True).targets
    assert (near.url, near.headers, near.load_allowed, near.transport) == (
        "http://localhost:7/mcp", {"Authorization": "Bearer t0ken"}, True, "http")
    assert "Bearer t0ken" in near.secrets and not far.load_allowed


def test_load_figures_count_every_request_in_flight_at_the_end():
    data = {"window": {"start": 100.0, "deadline": 101.0}, "histogram": {"1": 3},
            "records": [["tools/call", 100.1, 2.0, None, None],
                        ["tools/call", 100.2, 4.0, "http_5xx", "HTTP 500: b'x'"],
                        ["tools/call", 100.95, 500.0, "timeout", "no answer within 0.5 s"]],
            "unfinished": [["tools/call", 100.99]]}
    samples = [(100.0, 0.0, 1000, 0.0), (101.0, 0.5, 3000, 0.9)]
    block = load.summarize(data, samples)
    assert block["requests"] == 4 and block["rps"] == 2.0  # two finished inside the window
    assert block["in_flight_at_end"] == 2 and block["unfinished"] == 1
    assert block["errors"]["by_class"] == {"timeout": 2, "http_4xx": 0, "http_5xx": 1,
                                           "connection": 0, "protocol": 0}
    assert block["errors"]["total"] == 3 and block["by_request"]["tools/call"]["errors"] == 2
    assert (block["cpu_percent"], block["engine_cpu_percent"], block["rss_bytes"]) == (
        50.0, 90.0, 3000)
    assert block["latency_ms"]["p50"] == 4.0 and block["latency_ms"]["histogram"] == {"1": 3}


def test_a_command_that_never_listens_is_said_so():
    command = Command([sys.executable, "-c", "import time; time.sleep(30)", "{port}"])
    session = Session.start(HttpTransport(command), initialize_request("2025-11-25"),
                            waits=WAITS)
    try:
        with pytest.raises(SessionError, match=r"within 0.3 s \(nothing accepted a connection "
                                               r"at http://127.0.0.1:\d+/mcp\)"):
            session.wait(1, 0.3)
    finally:
        session.shutdown()
    assert not no_children()


def test_one_http_process_holds_n_sessions_at_once_and_one_more_costs_what_it_holds():
    """A server that holds 8 MiB per open session: with 3 sessions open together the
    marginal session costs 8 MiB (so all 3 were open when memory was read), and the PSS is
    what /proc says of the same process."""
    from mcpstart.measure import shared_process
    from mcpstart.results import ServerResult
    from mcpstart.measure.run import Server
    from mcpstart.views.sizing import sessions_section

    server = Server(ServerResult("held", "http"), fake("--session-mib", "8"), transport="http")
    settings = fast(runs=2, warmup=1)
    block = shared_process.measure_shared(server, 3, settings)
    assert block["ready_ms"]["n"] == block["single_ready_ms"]["n"] == 2
    assert len(block["rounds"]) == 6 and {r["copies"] for r in block["rounds"]} == {1, 3}
    assert all(r["memory"] is None for r in block["rounds"] if r["warmup"])
    assert all(r["memory"]["processes"] == 1 for r in block["rounds"] if not r["warmup"])
    assert abs(block["marginal_rss_bytes"] - 8 * MIB) < 2 * MIB
    assert abs(block["marginal_pss_bytes"] - 8 * MIB) < 2 * MIB
    assert block["pss_bytes"] - block["single_pss_bytes"] > 14 * MIB
    assert 0 < block["single_ready_ms"]["median"] <= block["single_ready_ms"]["max"]
    assert not no_children()
    doc = {"startup": {"sessions": {"n": 3, "shared": {"held": {**block, "stdio_peer": None}}}}}
    [head, line] = sessions_section(doc, None)
    assert "one process" in head and "held, one HTTP process for 3 sessions" in line
    assert "+8.0 MiB" in line or "+7.9 MiB" in line or "+8.1 MiB" in line


def test_a_shared_process_that_cannot_start_is_a_cause_not_a_crash():
    from mcpstart.measure import shared_process
    from mcpstart.measure.copies import guarded
    from mcpstart.measure.run import Server
    from mcpstart.results import ServerResult

    server = Server(ServerResult("gone", "http"),
                    Command([sys.executable, "-c", "import sys; sys.exit(4)", "{port}"]),
                    transport="http")
    block = guarded(shared_process.measure_shared, server, 2, fast(runs=1, warmup=0,
                                                                   timeout_s=60))
    assert block["n"] == 2, block  # the timeout's cause would be "no answer"
    assert block["error"].startswith("initialize: the server exited with code 4 after ")
    assert not no_children()


def test_no_ceiling_is_loaded_when_no_row_was(monkeypatch):
    """A --url server that refused every connection: its row failed, so the HTTP floor is not
    loaded for a ceiling (four scenarios of the load's length for nothing)."""
    from mcpstart.measure import http_steps
    from mcpstart.measure.run import Server, new_results
    from mcpstart.results import ServerResult

    loaded = []
    monkeypatch.setattr(load, "engine_version", lambda: "2.0")
    monkeypatch.setattr(http_steps, "_load", lambda server, _settings: loaded.append(server))
    gone = Server(ServerResult("gone", "http"), None, transport="http")
    gone.row.fail("initialize: cannot connect to http://127.0.0.1:9/mcp: Connection refused")
    floor = Server(ServerResult("c-http", "http"), Command(["floor", "{port}"]),
                   transport="http")
    settings = fast(load_s=1.0, transport="http")
    http_steps.load_all([gone], floor, settings, new_results([], settings, "sequential", {}),
                        lambda _: None, lambda _: None)
    assert loaded == []


def test_the_ceiling_of_a_block_is_the_floors_in_the_same_answer_shape():
    """A stream-answering server at 0.45x of the JSON floor but 0.9x of the floor answering
    as an event stream is engine-bound; each shape's block is judged by its own ceiling."""
    def block(rps, shape, scenario="calls"):
        return {"scenario": scenario, "rps": rps, "answer_shape": shape, "rate_missed": None}
    ceilings = [block(2000.0, "json"), block(1000.0, "sse"), block(800.0, "sse-primed"),
                block(1500.0, "json", "session")]
    stream = load.engine_bound(block(900.0, "sse"), ceilings)
    assert (stream["ceiling_rps"], stream["engine_bound"]) == (1000.0, True)
    primed = load.engine_bound(block(400.0, "sse-primed"), ceilings)
    assert (primed["ceiling_rps"], primed["engine_bound"]) == (800.0, False)
    assert primed["ceiling_ratio"] == pytest.approx(400 / 800)
    assert load.engine_bound(block(1700.0, "json"), ceilings)["engine_bound"] is True
    # a shape the floor was not measured in: no ceiling, unknown
    assert load.engine_bound(block(900.0, None), ceilings)["engine_bound"] is None
    assert load.engine_bound(block(900.0, "sse", "session"), ceilings)["engine_bound"] is None


def test_a_block_at_the_engines_ceiling_is_engine_bound_and_printed_as_a_lower_bound():
    def block(scenario, rps, rate=None):
        return {"scenario": scenario, "rps": rps, "rate": rate, "users": 10,
                "rate_missed": None if rate is None else rps < 0.9 * rate}
    floor = {s: block(s, 1569.0) for s in ("session", "calls")}
    floor["rate"] = block("rate", 100.5, 100.0)
    verdicts = {rps: load.engine_bound(block("calls", rps), [floor["calls"]])
                for rps in (1569.0, 1300.0, 1100.0, 900.0, 400.0)}
    assert [v["engine_bound"] for v in verdicts.values()] == [True, True, True, False, False]
    assert verdicts[1300.0]["ceiling_ratio"] == pytest.approx(1300 / 1569)
    # a server that used its whole core is what limits the rate, however near the ceiling
    pinned = {"server": [0], "engine": [1]}
    for cpu, bound in ((95.0, False), (40.0, True), (None, True)):
        near = {**block("calls", 1300.0), "cpu_percent": cpu, "pinned_cpus": pinned}
        assert load.engine_bound(near, [floor["calls"]])["engine_bound"] is bound
    assert verdicts[1300.0]["ceiling_rps"] == 1569.0
    # no ceiling in the run (the floor failed or was not built): unknown, never "not bound"
    assert load.engine_bound(block("calls", 1300.0), [])["engine_bound"] is None
    # a pace the floor kept set both rates: not the engine's, however close
    assert load.engine_bound(block("rate", 100.2, 100.0), [floor["rate"]])["engine_bound"] is False
    # a pace the engine could not keep even against the floor: the engine's
    slow_floor = block("rate", 60.0, 100.0)
    assert load.engine_bound(block("rate", 58.0, 100.0), [slow_floor])["engine_bound"] is True
    rows = []
    # a rate well above its ceiling: that ceiling was not the engine's maximum; unknown
    above = load.engine_bound(block("calls", 1800.0), [floor["calls"]])
    assert (above["engine_bound"], above["ceiling_ratio"]) == (None, pytest.approx(1800 / 1569))
    assert load.engine_bound(block("calls", 1700.0), [floor["calls"]])["engine_bound"] is True
    for name, rps in (("fast", 1569.0), ("slow", 400.0), ("above", 1800.0)):
        blocks = [block("calls", rps), block("rate", 40.1 if name == "slow" else 100.2, 100.0)]
        for b in blocks:
            b.update(load.engine_bound(b, list(floor.values())))
        rows.append({"name": name, "transport": "http", "status": "ok",
                     "http": {"load": blocks}})
    doc = {"schema": "mcpstart/1", "created": "2026-01-01T00:00:00Z", "environment": {},
           "settings": {"load_rate": 100.0}, "servers": rows,
           "load_ceiling": {"server": "c-http", "load": list(floor.values())}}
    text = table(doc, metrics=["http.load.calls.rps", "http.load.rate.rps"])
    assert ">= 1569 (engine-bound; ceiling 1569), 10 users" in text
    assert " 400 (ceiling 1569), 10 users" in text and ">= 400" not in text
    assert " 1800 (ceiling 1569 below it: not the engine's maximum), 10 users" in text
    assert "40.1 of 100 asked (ceiling 100), 10 users" in text  # a missed pace says so
    assert " 100 (ceiling 100), 10 users" in text  # a kept pace does not
    assert ">= 100" not in text and "100.2 of" not in text


def test_the_paced_scenario_records_whether_it_missed_its_asked_rate():
    data = {"window": {"start": 100.0, "deadline": 102.0}, "histogram": {},
            "records": [["tools/call", 100.0 + i / 10, 1.0, None, None] for i in range(18)],
            "unfinished": []}
    assert load.summarize(data, [], 10.0)["rate_missed"] is False  # 9.0 of 10: within 10%
    assert load.summarize(data, [], 10.1)["rate_missed"] is True
    assert load.summarize(data, [])["rate_missed"] is None  # unpaced
    # each user's one initialize is the session it calls on, not a call of the rate
    data["records"] += [["initialize", 100.0, 3.0, None, None] for _ in range(10)]
    assert load.summarize(data, [], 10.0)["rps"] == 14.0  # every request: 28 in 2 s
    paced = load.summarize(data, [], 10.0, calls_only=True)
    assert paced["rps"] == 9.0 and paced["latency_ms"]["n"] == 18
    assert paced["latency_ms"]["p95"] == 1.0 and paced["by_request"]["initialize"]["n"] == 10
    assert paced["requests"] == 28
    bound = warn.load_bound({"calls": 1569.4}, "c-http")
    assert bound["kind"] == "load_bound" and "calls (1569/s)" in bound["detail"]
    assert "the rate is the load engine's" in bound["detail"] and "c-http" in bound["detail"]
