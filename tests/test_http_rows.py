"""HTTP rows as complete as stdio rows, against the fake servers (real local processes): a
server that lists no reverse_text is a row with n/a and the reason for what needs a call; a
body limit answered 413 gets the largest halving of the payload it takes, recorded, and the
load runs; a spawned server at another endpoint path is reached; ``--call TOOL --args`` with
no arguments or numeric ones works on stdio and HTTP."""

import sys
from pathlib import Path

import pytest

from conftest import PYTHON_LINE, fake_command, fast, unavailable
from mcpstart.engine import job_for, measure
from mcpstart.measure import load
from mcpstart.measure.client import NO_TOOL
from mcpstart.views.table import table
from mcpstart.wire import ToolCall

from test_http import FAKE, no_children, started

MIB = 1 << 20
CALL_BLOCKS = ("http.session_ms", "http.sessions_leak", "http.load")


def measured(tmp_path: Path, specs: tuple[str, ...], endpoint: str | None = None, **settings):
    """``mcpstart measure --transport http`` of the ``--server`` ``specs`` through the
    library (no load ceiling: the HTTP floor's build is the e2e tier's); returns the
    Outcome and its rows by name."""
    options = {"server_specs": specs, "configs": (), "client": None, "cwd": None,
               "recipes_dir": None, "output": tmp_path / "r.json",
               "load_seconds": settings.get("load_s", 0.0), "endpoint": endpoint}
    job = job_for((), options, fast(runs=1, warmup=0, round_trips=3, http_sessions=2,
                                    transport="http", **settings), ["mcpstart"], lambda _: None)
    job.plan.ceiling = None
    outcome = measure(job)
    return outcome, {r["name"]: r for r in outcome.results.to_dict()["servers"]}


@pytest.fixture(scope="module")
def two_rows(tmp_path_factory):
    """One run of two fakes served at /rpc (--endpoint /rpc): ``bare`` lists no
    reverse_text; ``limited`` refuses bodies over 4 MiB with 413. Load 0.5 s per scenario
    at 8 requests/s (about four requests in each paced one)."""
    if load.engine_version() is None:
        unavailable("Locust is not installed (pip install 'mcpstart[http]')")
    fake = f"{PYTHON_LINE} {FAKE} --port {{port}} --path /rpc"
    outcome, rows = measured(tmp_path_factory.mktemp("rows"), (
        f"bare={fake} --no-reverse-tool", f"limited={fake} --max-body {4 * MIB}"), "/rpc",
        load_s=0.5, load_users=2, load_timeout_s=2.0, load_rate=8.0)
    yield outcome, rows
    assert not no_children()


def test_a_server_without_the_reference_tool_is_ok_with_n_a_for_what_needs_a_call(two_rows):
    _, rows = two_rows
    row = rows["bare"]
    assert row["status"] == "ok", row["reason"]
    skipped = row["not_measured"]
    for block in ("payload", *CALL_BLOCKS):
        assert skipped[block] == NO_TOOL, block
    assert skipped["http.latency_ms"] == skipped["round_trip_ms"] == "no tool to call"
    assert skipped["http.start_ms.first_call"] == "no tool to call (--call TOOL names one)"
    assert row["http"]["session_ms"] is None and row["http"]["load"] == []
    # what needs no call is measured: the cold start to tools/list, the tools, idle memory
    assert row["http"]["start_ms"]["tools_list"]["n"] == 1
    assert row["tools"]["count"] == 2 and row["memory"]["idle_rss_bytes"] > 0


def test_a_413_body_limit_gets_the_largest_halving_it_takes_and_the_load_runs(two_rows):
    outcome, rows = two_rows
    row = rows["limited"]
    assert row["status"] == "ok", row["reason"]
    payload = row["payload"]
    assert payload["request_bytes"] == 5 * MIB // 2 and payload["verified"] is True
    assert [r["request_bytes"] for r in payload["refused"]] == [5 * MIB]
    assert "HTTP 413" in payload["refused"][0]["cause"]
    assert row["memory"]["peak_rss_bytes_payload"] > row["memory"]["idle_rss_bytes"]
    blocks = {b["scenario"]: b for b in row["http"]["load"]}
    assert set(blocks) == set(load.SCENARIOS)
    assert all(b["requests"] > 0 and b["errors"]["total"] == 0 for b in blocks.values())
    assert "(at 2.5 MiB: the server refused 5.0 MiB with 413)" in table(outcome.results)


def test_a_payload_refused_at_every_halving_is_n_a_with_the_sizes_tried(monkeypatch):
    from mcpstart.measure import warm
    from mcpstart.measure.client import Skips
    from mcpstart.measure.run import Server
    from mcpstart.results import ServerResult
    from mcpstart.transports.session import Traffic
    from test_http import fake

    monkeypatch.setattr(warm, "HALVINGS", 2)
    server = Server(ServerResult("tiny", "http"), fake("--max-body", "500"), transport="http")
    row = server.row
    warm.tool_session(server.command, server.spawning(fast(payload_bytes=4096, round_trips=0)),
                      row, Skips(), Traffic())
    assert [r["request_bytes"] for r in row.payload["refused"]] == [4096, 2048, 1024]
    assert row.not_measured["payload"].startswith(
        "the server refused every payload from 4096 down to 1024 bytes (3 tries): "
        "tools/call reverse_text: HTTP 413")
    assert "memory.peak_rss_bytes_payload" in row.not_measured
    assert row.status == "ok" and row.memory["before_call_rss_bytes"] > 0


def test_endpoint_names_the_path_of_the_commands_spawned_over_http(tmp_path):
    from mcpstart.targets.plan import PlanError, make_plan

    def plan(command, endpoint):
        return make_plan(command, ("s=stdio-server",), (), None, None, None, (), False,
                         lambda: tmp_path, endpoint=endpoint)
    http, stdio = plan(("srv", "--port", "{port}"), "/rpc").targets
    assert (http.endpoint_path, stdio.endpoint_path) == ("/rpc", "/mcp")
    assert plan(("srv", "{port}"), None).targets[0].endpoint_path == "/mcp"
    with pytest.raises(PlanError, match="--endpoint is the MCP endpoint's path of a server "
                                        "spawned over HTTP"):
        plan(("srv",), "/rpc")


def test_a_spawned_server_at_another_endpoint_path_is_reached(two_rows):
    _, rows = two_rows
    for row in rows.values():
        assert row["http"]["endpoint"] == "http://127.0.0.1:{port}/rpc"
        assert row["http"]["start_ms"]["initialize"]["n"] == 1
        assert row["protocol"]["negotiated_revision"] == "2025-11-25"


def test_args_take_any_json_object_and_say_where_the_payload_goes():
    assert ToolCall.parse("now", "{}") == ToolCall("now", {})
    count = ToolCall.parse("count", '{"n": 30, "deep": [1.5, null, true]}')
    assert count.params("x")["arguments"] == {"n": 30, "deep": [1.5, None, True]}
    assert not count.carries_payload and not ToolCall("now", {}).carries_payload
    assert ToolCall("echo", {"m": ["a {payload}"]}).carries_payload and ToolCall().carries_payload
    with pytest.raises(ValueError, match="must be a JSON object"):
        ToolCall.parse("count", "[30]")


@pytest.mark.parametrize("transport, call", [
    ("stdio", ToolCall("count", {"n": 30})), ("stdio", ToolCall("now", {})),
    ("http", ToolCall("now", {}))], ids=["stdio-numeric", "stdio-none", "http-none"])
def test_a_call_with_no_or_numeric_arguments_works(transport, call):
    """The cold start's first call, the warm round trips and no large call (n/a: the
    arguments place no payload), on stdio and over HTTP (numeric over HTTP: the next
    test, through every HTTP step)."""
    from mcpstart.measure.client import Skips
    from mcpstart.measure.cold import cold_start
    from mcpstart.measure.run import Server
    from mcpstart.measure.warm import tool_session
    from mcpstart.results import ServerResult
    from mcpstart.transports.session import Traffic
    from test_http import fake as http_fake

    settings = fast(call=call, round_trips=3)
    if transport == "http":
        server = Server(ServerResult("other", "http"), http_fake("--no-reverse-tool"),
                        transport="http")
        settings = server.spawning(settings)
    else:
        server = Server(ServerResult("other"), fake_command("--no-reverse-tool"))
    skips = Skips()
    first = cold_start(server.command, settings, skips)
    tool_session(server.command, settings, server.row, skips, Traffic())
    assert not skips.causes and first["first_call"] > first["tools_list"]
    assert server.row.round_trip_ms["n"] == 3 and server.row.status == "ok"
    assert server.row.not_measured["payload"] == "--args places no {payload}: no large call"


def test_a_numeric_call_is_the_one_of_every_http_step(tmp_path):
    """--call count --args '{"n": 30}' over HTTP: the cold start's first call, the round
    trips and the full sessions all call it (the fake answers a string n with an error)."""
    _, rows = measured(tmp_path, (f"other={PYTHON_LINE} {FAKE} --port {{port}} "
                                  "--no-reverse-tool",), call=ToolCall("count", {"n": 30}))
    row = rows["other"]
    assert row["status"] == "ok", row["reason"]
    assert row["http"]["start_ms"]["first_call"]["n"] == 1
    assert row["http"]["latency_ms"]["n"] == 3 and row["http"]["session_ms"]["n"] == 2
    assert row["not_measured"]["payload"] == "--args places no {payload}: no large call"


def test_the_load_engine_calls_the_chosen_tool_with_its_arguments():
    if load.engine_version() is None:
        unavailable("Locust is not installed (pip install 'mcpstart[http]')")
    session = started("--no-reverse-tool")
    try:
        block = load.run_scenario(session.transport.endpoint, "calls",
                                  fast(load_s=1.0, load_users=1, load_timeout_s=2.0),
                                  ToolCall("count", {"n": 3}), [], None)
    finally:
        session.shutdown()
    calls = block["by_request"]["tools/call"]
    assert calls["n"] > 0 and calls["errors"] == 0, block["errors"]
