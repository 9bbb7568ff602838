"""A workload on real processes: a user's own stdio server with two tools (one without
arguments, one with a number) gets per-tool warm figures and a per-tool cold first call; an
HTTP server that adds 40 ms to every tool call (and nothing to initialize) is flagged by the
shared floor rule warm and under load, its per-request breakdown naming each tool."""

import sys
from dataclasses import replace
from pathlib import Path

import pytest

from mcpstart.command import Command
from mcpstart.measure import run
from mcpstart.measure.server import Server
from mcpstart.results import ServerResult, validate
from mcpstart.workload import load

from conftest import PYTHON, fake_command, fast, require_modules

pytestmark = pytest.mark.e2e
PAIR = load(str(Path(__file__).parent / "fixtures" / "workloads" / "pair.toml"))
FAKE_HTTP = Path(__file__).parent / "fakes" / "fake_http_server.py"


def measured(server: Server, **changes):
    settings = fast(**{"runs": 2, "warmup": 1, "round_trips": 30, "http_sessions": 0,
                       "load_s": 0, "attribution": False, "workload": PAIR,
                       "call": PAIR.calls[0], **changes})
    results = run.measure([server], settings, ["mcpstart", "measure"], {})
    validate(results.to_dict())
    row = results.servers[0]
    assert row.status == "ok", row.reason
    return row


def test_a_users_stdio_server_gets_per_tool_warm_figures_and_cold_first_calls():
    row = measured(Server(ServerResult("mine"), fake_command("--no-reverse-tool")))
    start = row.handshake_ms["median"]
    for name in ("now", "count"):
        tool = row.workload["tools"][name]
        assert tool["warm_ms"]["n"] == 30 and tool["warm_ms"]["p95"] is not None
        assert 0 < tool["warm_ms"]["p50"] < start  # a warm call costs less than a start
        cold = tool["cold_first_call_ms"]
        # a start, then the call: not under half the handshake series' median (other runs,
        # so not strictly above it), and a start's worth above the warm call
        assert cold["n"] == 2 and start / 2 < cold["median"]
        assert cold["median"] > 10 * tool["warm_ms"]["p50"]


def test_a_server_adding_40_ms_to_every_tool_call_is_flagged_warm_and_under_load():
    require_modules("locust", extra="http")
    command = Command([*PYTHON, str(FAKE_HTTP), "--port", "{port}", "--no-reverse-tool",
                       "--slow", "0.04"], None, {})
    row = measured(Server(ServerResult("slow-calls", "http"), command, transport="http"),
                   workload=replace(PAIR, shape="per-call"), runs=1, warmup=0,
                   round_trips=20, load_s=1.0, load_users=2)
    work = row.workload
    assert work["initialize_ms"]["p50"] < 20
    for name in ("now", "count"):
        assert 40 <= work["tools"][name]["warm_ms"]["p50"] < 80
    session = next(b for b in row.http["load"] if b["scenario"] == "session")
    assert {"initialize", "tools/call now", "tools/call count", "DELETE"} <= set(
        session["by_request"])
    flagged = {w["metric"]: w["detail"] for w in row.warnings if w["kind"] == "shared_floor"}
    assert "workload.tools.*.warm_ms" in flagged and "http.load.session.by_request" in flagged
    assert "Nagle" in flagged["workload.tools.*.warm_ms"]


def test_the_mock_api_adds_no_delayed_ack_stall():
    """Twenty GETs on one kept-alive connection to the mock API answer in a few ms each: with
    Nagle's algorithm on its socket the body, written after the headers, waits for the
    client's delayed ACK, about 40 ms on Linux, on every fetch."""
    import http.client
    import statistics
    import time
    from urllib.parse import urlsplit

    from mcpstart.measure import mock_api

    with mock_api.serving(0) as url:
        conn = http.client.HTTPConnection(urlsplit(url).netloc)
        times = []
        for _ in range(20):
            start = time.perf_counter()
            conn.request("GET", "/api")
            assert conn.getresponse().read().startswith(b'{"path": "/api"')
            times.append((time.perf_counter() - start) * 1000)
        conn.close()
    assert statistics.median(times) < 20, times
