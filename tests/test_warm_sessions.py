"""The warm series' sessions (mcpstart/measure/warm_sessions.py) on scripted servers and a
virtual clock: the counted calls are spread over fresh starts of the server, each start's
median is kept, sessions whose medians are apart beyond their noise are flagged (a state
that lasts a session: the machine's or the server's), sessions that agree or differ within
the noise are not, and a later start that fails keeps the figure measured before it."""

from dataclasses import replace

from mcpstart.command import Command
from mcpstart.measure import per_tool, warm_sessions
from mcpstart.measure.client import Skips
from mcpstart.measure.server import Server
from mcpstart.measure.warm import tool_session
from mcpstart.results import ServerResult
from mcpstart.transports.session import Traffic

from conftest import fast
from scripted import GoodServer, Out, Spawner
from scripted_http import HttpSpawner
from test_per_tool import PAIR, Control, PairTools, measured


class Moded(GoodServer):
    """Every tools/call answered after ``ms`` virtual ms, a value fixed for the process:
    the next of MODES, one per process started (a mode that lasts a session)."""

    def __init__(self, ms: float):
        self.ms = ms

    def answer(self, message):
        outs = super().answer(message)
        if isinstance(message, dict) and message.get("method") == "tools/call":
            for out in outs:
                out.after_s = self.ms / 1000
        return outs


class ModedPair(PairTools, Moded):
    """Moded with the pair workload's two tools."""


class DiesOnInitialize(GoodServer):
    """A process that exits as soon as it is asked to initialize."""

    def answer(self, message):
        return [Out("exit", code=1)]


def spawner(script, per_process: list) -> Spawner:
    """A Spawner whose k-th process is ``script(per_process[k])`` (or ``per_process[k]()``
    for a class)."""
    made = iter(per_process)

    def start():
        item = next(made)
        return item() if isinstance(item, type) else script(item)
    return Spawner({"s": start})


def warm_row(script, per_process: list, sessions: int = 3) -> ServerResult:
    """The row of ``tool_session`` (its 30 warm round trips over ``sessions`` sessions)."""
    row = ServerResult("s")
    settings = fast(round_trips=30, warm_sessions=sessions,
                    spawner=spawner(script, per_process))
    tool_session(Command(["s"]), settings, row, Skips(), Traffic())
    return row


def kinds(row: ServerResult) -> list[tuple[str, str]]:
    return [(w["kind"], w["metric"]) for w in row.warnings]


def test_the_round_trips_are_spread_over_fresh_starts_and_a_slow_one_is_flagged():
    row = warm_row(Moded, [1.0, 10.0, 1.0])
    figure = row.round_trip_ms
    assert row.status == "ok", row.reason
    assert [(s["n"], s["p50"]) for s in figure["sessions"]] == [(10, 1.0), (10, 10.0),
                                                                (10, 1.0)]
    assert all(s["warmup"] is None for s in figure["sessions"])  # no warm-up: as before
    assert figure["n"] == 30 and figure["p50"] == 1.0 and figure["p95"] == 10.0
    assert kinds(row) == [("warm_sessions_disagree", "round_trip_ms")]
    assert "1.000 ms in one session and 10.000 ms in another of 3" in row.warnings[0]["detail"]


def test_sessions_that_agree_are_not_flagged():
    row = warm_row(Moded, [2.0, 2.0, 2.0])
    assert [(s["n"], s["p50"]) for s in row.round_trip_ms["sessions"]] == [(10, 2.0)] * 3
    assert kinds(row) == []


def test_fewer_calls_than_sessions_use_fewer_sessions():
    assert warm_sessions.shares(100, 3) == [34, 33, 33]
    assert warm_sessions.shares(2, 3) == [1, 1] and warm_sessions.shares(0, 3) == []
    row = warm_row(Moded, [1.0], sessions=1)
    assert [s["n"] for s in row.round_trip_ms["sessions"]] == [30] and kinds(row) == []


def test_a_difference_within_the_noise_is_no_finding():
    # tight sessions (every call the same): intervals apart, but 4% is within stats.NOISE
    same = [{"samples": [1.0] * 20}, {"samples": [1.04] * 20}]
    assert warm_sessions.disagreement(same) is None
    apart = [{"samples": [1.0] * 20}, {"samples": [1.06] * 20}]
    assert warm_sessions.disagreement(apart) == (apart[0], apart[1])
    # 2x apart in the medians, but spread so wide that their intervals overlap
    wide = [{"samples": [1.0, 2.0] * 10}, {"samples": [1.5, 3.0] * 10}]
    assert warm_sessions.disagreement(wide) is None


def test_a_later_start_that_fails_keeps_the_figure_before_it():
    row = warm_row(Moded, [1.0, DiesOnInitialize])
    assert row.status == "failed" and row.reason.startswith("warm round trips, session 2:")
    assert row.round_trip_ms["n"] == 10 and row.round_trip_ms["p50"] == 1.0
    assert "round_trip_ms" not in row.not_measured


def test_each_tool_of_a_workload_is_spread_over_the_starts_too():
    settings = fast(round_trips=30, warm_sessions=3, workload=PAIR,
                    spawner=spawner(ModedPair, [1.0, 1.0, 10.0]))
    server = Server(ServerResult("s"), Command(["s"]))
    per_tool.warm(server, settings, lambda _text: None)
    assert server.row.status == "ok", server.row.reason
    for name in ("now", "count"):
        tool = server.row.workload["tools"][name]
        assert [(s["n"], s["p50"]) for s in tool["warm_ms"]["sessions"]] == [
            (10, 1.0), (10, 1.0), (10, 10.0)]
        assert tool["warm_ms"]["n"] == 30 and tool["warm_ms"]["p50"] == 1.0
        assert tool["warmup"] == {"calls": 3 * 80, "settled": True}
    assert kinds(server.row) == [("warm_sessions_disagree", "workload.tools.now.warm_ms"),
                                 ("warm_sessions_disagree", "workload.tools.count.warm_ms")]


def test_over_http_each_session_of_its_own_counts_in_the_start_it_ran_in():
    server = Server(ServerResult("h", "http"), Command(["h", "{port}"]), transport="http")
    results = measured(server, http_spawner=HttpSpawner(Control), warm_sessions=2,
                       workload=replace(PAIR, shape="per-call"))
    row = results.servers[0]
    assert row.status == "ok", row.reason
    assert [s["n"] for s in row.round_trip_ms["sessions"]] == [10, 10]
    for tool in row.workload["tools"].values():  # 20 full sessions, 10 on each start
        assert [(s["n"], s["p50"]) for s in tool["warm_ms"]["sessions"]] == [(10, 0.0)] * 2
    assert row.workload["initialize_ms"]["n"] == 40
