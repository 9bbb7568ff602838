"""The per-tool warm-up rule (mcpstart/measure/warmup.py) on scripted stdio servers whose
answer times change call by call (virtual clock): a server whose times fall over its first
calls then flatten is warmed until it is flat, one flat from the start stops at the
minimum, one whose times never stop falling stops at a bound with a warning."""

from mcpstart.command import Command
from mcpstart.measure import run, warmup
from mcpstart.measure.server import Server
from mcpstart.results import ServerResult, validate
from mcpstart.views.per_tool import workload_section

from conftest import fast
from scripted import GoodServer, Spawner
from test_per_tool import PAIR, PairTools


class Curve(PairTools, GoodServer):
    """A stdio server of the pair workload's tools whose k-th call of a tool (from 0, in its
    process) takes ``ms(k)`` virtual ms."""

    def __init__(self):
        self.calls = {}

    def ms(self, k: int) -> float:
        raise NotImplementedError

    def answer(self, message):
        outs = super().answer(message)
        if isinstance(message, dict) and message.get("method") == "tools/call":
            name = message["params"]["name"]
            k = self.calls[name] = self.calls.get(name, -1) + 1
            for out in outs:
                out.after_s = self.ms(k) / 1000
        return outs

    def fresh(self):
        return type(self)()


class Warming(Curve):
    """From 10 ms down to 1 ms over its first 100 calls of a tool (a JIT compiling), then
    1 ms."""

    def ms(self, k):
        return 1.0 + 9.0 * max(0.0, 1 - k / 100)


class Flat(Curve):
    """1 ms from the first call (warm at once)."""

    def ms(self, k):
        return 1.0


class Falling(Curve):
    """300 / sqrt(k + 1) ms: ~29% faster at every doubling of the calls, never flat."""

    def ms(self, k):
        return 300.0 / (k + 1) ** 0.5


def measured(script):
    """The results of measuring a ``script`` server with the pair workload (its row ok)."""
    settings = fast(runs=1, warmup=0, round_trips=20, http_sessions=0, load_s=0,
                    workload=PAIR, call=PAIR.calls[0], spawner=Spawner({"pair": script}))
    results = run.measure([Server(ServerResult("pair"), Command(["pair"]))], settings,
                          ["mcpstart", "measure"], {})
    validate(results.to_dict())
    assert results.servers[0].status == "ok", results.servers[0].reason
    return results


def unsettled(row: ServerResult) -> list[str]:
    return [w["metric"] for w in row.warnings if w["kind"] == "warmup_unsettled"]


def test_a_server_whose_times_fall_then_flatten_is_warmed_until_flat():
    row = measured(Warming).servers[0]
    for tool in row.workload["tools"].values():
        # falling at every doubling up to 160 ([80, 160) at 1 ms against ~4.6 ms); 320
        # and 640 do not fall: settled
        assert tool["warmup"] == {"calls": 640, "settled": True}
        assert tool["warm_ms"]["p50"] == 1.0 and tool["warm_ms"]["p95"] == 1.0
    assert unsettled(row) == []


def test_a_server_warm_at_once_stops_at_the_minimum():
    row = measured(Flat).servers[0]
    minimum = 2 ** warmup.SETTLED * warmup.FIRST
    assert [t["warmup"] for t in row.workload["tools"].values()] == [
        {"calls": minimum, "settled": True}] * 2
    assert minimum == 80 and unsettled(row) == []


def test_times_that_never_stop_falling_end_at_a_bound_with_a_warning():
    results = measured(Falling)
    row = results.servers[0]
    # the answer-time bound: the sum of 300 / sqrt(k) ms over the calls reaches 10 s at 303
    calls = next(k for k in range(1, warmup.MAX_CALLS)
                 if sum(300.0 / i ** 0.5 for i in range(1, k + 1)) >= warmup.MAX_MS)
    assert calls == 303
    for tool in row.workload["tools"].values():
        assert tool["warmup"] == {"calls": calls, "settled": False}
    assert unsettled(row) == ["workload.tools.now.warm_ms", "workload.tools.count.warm_ms"]
    lines = workload_section(results.to_dict(), None)
    assert sum(f"after {calls} warm-up calls (unsettled)" in line for line in lines) == 2


def test_the_call_bound_and_a_failed_call_end_it_unsettled():
    falling = iter(100.0 / (k + 1) ** 3 for k in range(10 ** 6))  # never flat, tiny times
    assert warmup.warm_up(lambda: next(falling)) == {"calls": warmup.MAX_CALLS,
                                                     "settled": False}
    answers = iter([1.0] * 30 + [None])
    assert warmup.warm_up(lambda: next(answers)) == {"calls": 31, "settled": False}
