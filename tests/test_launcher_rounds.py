"""The launcher's paired series (launcher.py, run.run_order) on the scripted virtual clock: a
launched server ("npx"), the direct command it resolves to and the launched one kept offline,
whose every start's initialize answer takes a time set by construction, so a machine's drift,
a network share and an inconclusive test can each be built exactly."""

from dataclasses import dataclass, field
from typing import Callable

import pytest

from mcpstart.command import Command
from mcpstart.measure import launcher, run
from mcpstart.results import ServerResult
from mcpstart.views.table import ROWS, cell, fmt_ms

from conftest import fast
from scripted import ScriptedTransport, Timed

NETWORK_ROW = next(r for r in ROWS if r.path == "launcher.network_each_start")


@dataclass
class Machine:
    """``Settings.spawner`` for one launched server: "npx ..." is the launcher, "direct" the
    server it starts. A start takes ``direct_s`` (the server run directly) or ``offline_s``
    (launched with npm_config_offline=true), plus ``network(n)`` for the n-th launched start
    that may go to the network, plus ``drift_s`` times the number of starts before it (every
    start slower, or faster, than the one before)."""

    drift_s: float = 0.0
    network: Callable[[int], float] = lambda n: 0.0
    direct_s: float = 1.0
    offline_s: float = 1.05
    starts: int = 0
    online: int = 0
    made: list = field(default_factory=list)

    def __call__(self, command: Command) -> ScriptedTransport:
        delay = self.direct_s
        if command.argv[0] == "npx":
            delay = self.offline_s
            if command.env.get("npm_config_offline") != "true":
                self.online += 1
                delay += self.network(self.online)
        self.made.append(command.argv[0])
        delay += self.drift_s * self.starts
        self.starts += 1
        return ScriptedTransport(Timed(delay))


def measure(monkeypatch, machine: Machine, runs: int = 6):
    monkeypatch.setattr(launcher, "resolve", lambda session: launcher.Direct(["direct"], None, {}))
    server = run.Server(ServerResult("launched"), Command(["npx", "-y", "pkg"]))
    results = run.measure([server], fast(spawner=machine, runs=runs, warmup=1, round_trips=0,
                                         payload_bytes=1000), ["mcpstart", "measure"], {})
    row = results.servers[0]
    assert row.status == "ok", row.reason
    return row, results


def network_cell(row) -> str:
    return cell({"launcher": row.launcher, "warnings": row.warnings}, NETWORK_ROW)


def test_the_three_series_share_every_round(monkeypatch):
    _, results = measure(monkeypatch, Machine())
    cold = [r for r in results.run_sequence if r["series"] in ("handshake", "direct", "offline")]
    assert len(cold) == 3 * 7 and results.settings["order"] == "sequential"
    rounds = [cold[i:i + 3] for i in range(0, len(cold), 3)]
    for number, three in enumerate(rounds):
        assert {r["round"] for r in three} == {number}
        assert sorted(r["series"] for r in three) == ["direct", "handshake", "offline"]
    assert len({tuple(r["series"] for r in three) for three in rounds}) > 1  # shuffled per round
    # many servers: each round still holds every series of every server
    owner = {"a": "a", "a (direct)": "a", "b": "b"}
    order = run.run_order(list(owner), 2, "sequential", 0, owner.get)
    assert order[:4] in ([(0, "a"), (0, "a (direct)"), (1, "a"), (1, "a (direct)")],
                         [(0, "a (direct)"), (0, "a"), (1, "a"), (1, "a (direct)")],
                         [(0, "a"), (0, "a (direct)"), (1, "a (direct)"), (1, "a")],
                         [(0, "a (direct)"), (0, "a"), (1, "a (direct)"), (1, "a")])
    assert order[4:] == [(0, "b"), (1, "b")]


@pytest.mark.parametrize("drift_s", [0.010, -0.010], ids=["slower", "faster"])
def test_a_drift_is_not_a_network_share(monkeypatch, drift_s):
    """Every start 10 ms slower (faster) than the one before, over 21 starts: 210 ms of
    drift, against a launcher that costs 50 ms and never goes to the network."""
    row, _ = measure(monkeypatch, Machine(drift_s=drift_s))
    block = row.launcher
    assert 30 <= block["overhead_ms"]["median"] <= 70  # the 50 ms built in, give or take a start
    assert abs(block["network_ms"]["median"]) <= 25
    assert block["network_each_start"] is False and block["network_p"] > 0.01
    assert network_cell(row).startswith("no: ") and "within 10% of the offline start" in \
        network_cell(row)
    assert not [w for w in row.warnings if w["kind"] == "launcher"]


def test_a_network_share_under_drift_is_found(monkeypatch):
    row, _ = measure(monkeypatch, Machine(drift_s=0.010, network=lambda n: 0.300))
    block = row.launcher
    assert 330 <= block["overhead_ms"]["median"] <= 370
    assert 280 <= block["network_ms"]["median"] <= 320
    assert block["network_each_start"] is True and block["network_p"] == pytest.approx(1 / 924)
    assert network_cell(row) == f"yes: {fmt_ms(block['network_ms']['median'])} ms (p = 0.0011)"
    warning = next(w for w in row.warnings if w["kind"] == "launcher")
    assert "went to the network on every start" in warning["detail"]


def test_a_test_that_does_not_reach_alpha_is_inconclusive(monkeypatch):
    """The network on every second launched start: the launched median is far above the
    offline one, but three of six rounds show no share, so p stays above 0.01."""
    row, _ = measure(monkeypatch, Machine(network=lambda n: 0.300 * (n % 2)))
    block = row.launcher
    assert block["network_p"] > 0.01 and block["network_each_start"] is None
    assert block["network_verdict"] == f"inconclusive (p = {block['network_p']:.2g})"
    assert network_cell(row) == block["network_verdict"]
    assert not [w for w in row.warnings if w["kind"] == "launcher"]


def test_a_network_share_larger_than_the_overhead_is_no_figure(monkeypatch):
    """The offline launch faster than the server run directly: launched minus offline (300
    ms) is more than launched minus direct (100 ms), which no launcher can do."""
    row, _ = measure(monkeypatch, Machine(network=lambda n: 0.300, direct_s=1.2, offline_s=1.0))
    block = row.launcher
    assert block["network_each_start"] is None
    assert block["network_verdict"].startswith(
        "inconclusive: the network share (300 ms) is more than the whole launcher overhead "
        "it is part of (100 ms")
    assert network_cell(row) == block["network_verdict"]
    assert not [w for w in row.warnings if w["kind"] == "launcher"]
