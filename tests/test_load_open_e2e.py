"""The open-loop rate against a real stall (the Done-when of the open loop): a fake server
that holds every tools/call arriving in one 1 s stall, 5 s into a 10 s run at 100
requests/s, loaded once by each fixed-rate scenario through Locust as a run loads it. The
open loop times every call scheduled in the stall from its intended send time; the closed
loop (paced users) sends nothing while it waits, so its p95 never sees the stall."""

import subprocess
import sys

import pytest

from conftest import unavailable
from mcpstart.endpoint import Endpoint
from mcpstart.measure import load
from mcpstart.measure.settings import Settings
from mcpstart.transports.http import free_port
from mcpstart.wire import ToolCall

from test_http import FAKE

pytestmark = pytest.mark.e2e
STALL_AT, STALL_FOR, SECONDS, RATE = 5.0, 1.0, 10.0, 100.0


def stalled(scenario: str) -> tuple[dict, dict, tuple[float, float, int]]:
    """One 10 s run of ``scenario`` against a fresh fake that stalls STALL_FOR s at STALL_AT
    s of the load (its clock starts at the engine's first tools/call): ``(data, block,
    (stall begins, stall ends, calls held))``, the engine's records, the load block a run
    makes of them, the stall's times as the fake wrote them (time.time()) and how many
    calls reached the fake during the stall."""
    port = free_port()
    server = subprocess.Popen([sys.executable, str(FAKE), "--port", str(port), "--stall-at",
                               str(STALL_AT), "--stall-for", str(STALL_FOR)],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert "running on" in server.stdout.readline()
        settings = Settings(load_s=SECONDS, load_rate=RATE)
        data, samples, _version = load.run_engine(Endpoint("127.0.0.1", port), scenario,
                                                  settings, ToolCall(), [], None)
        _, _, begins, _, ends, _, held = server.stdout.readline().split()
        return data, load.summarize(data, samples, RATE), (float(begins), float(ends),
                                                           int(held))
    finally:
        server.kill()
        server.wait()


def test_a_stall_shows_in_the_open_loop_and_hides_in_the_closed_one(capsys):
    """Every call scheduled in the stall waited at least until its end (10 ms of slack for
    the clocks) and was sent in it (the fake held them), the open-loop p95 is at least
    400 ms, the closed-loop p95 under 100 ms (its users sent one call each in the stall),
    and the open loop sent its 1,000 calls (within 5%)."""
    if load.engine_version() is None:
        unavailable("Locust is not installed (pip install 'mcpstart[http]')")
    data, opened, (begins, ends, held) = stalled("open")
    _, closed, (_, _, held_closed) = stalled("rate")
    calls = [r for r in data["records"] if r[0] == "tools/call"]
    behind = [(start, ms) for _, start, ms, _, _ in calls if begins <= start < ends]
    short = [(start, ms) for start, ms in behind if ms < (ends - start) * 1000 - 10]
    with capsys.disabled():
        print(f"\nstall of {STALL_FOR:g} s at {STALL_AT:g} s, {RATE:g} requests/s for "
              f"{SECONDS:g} s: open-loop p95 {opened['latency_ms']['p95']:.1f} ms "
              f"(target >= 400), closed-loop p95 {closed['latency_ms']['p95']:.1f} ms "
              f"(target < 100); the open loop sent {len(calls)} calls (target 1000 +- 5%), "
              f"{len(behind)} scheduled in the stall, {len(short)} of them under its end; "
              f"calls the stall held: open loop {held}, closed loop {held_closed}")
    assert opened["errors"]["total"] == 0 and closed["errors"]["total"] == 0
    assert abs(len(calls) - RATE * SECONDS) <= 0.05 * RATE * SECONDS
    assert len(behind) >= 0.9 * RATE * STALL_FOR and not short
    assert held >= 0.9 * RATE * STALL_FOR and held_closed <= 2 * Settings().load_users
    assert opened["latency_ms"]["p95"] >= 400
    assert closed["latency_ms"]["p95"] < 100
