"""The run loop on scripted servers (tests/scripted.py): run order, the seeded interleave, the
failure rules and the results rewrite, in milliseconds and on a virtual clock."""

import json

from mcpstart.command import Command
from mcpstart.measure import run
from mcpstart.measure.run import run_order
from mcpstart.results import Results, ServerResult

from conftest import fast
from mcpstart.measure.client import Skips
from mcpstart.measure.cold import cold_start
from scripted import GoodServer, Out, ScriptedTransport, Spawner


class Slow(GoodServer):
    """Answers initialize 40 ms (virtual) after it is asked."""

    def answer(self, message):
        outs = super().answer(message)
        if isinstance(message, dict) and message.get("method") == "initialize":
            for out in outs:
                out.after_s = 0.040
        return outs


class DiesOnThirdStart(GoodServer):
    """A server whose third spawn exits with code 2 before answering."""

    starts = 0

    def __init__(self):
        DiesOnThirdStart.starts += 1
        self.dead = DiesOnThirdStart.starts == 3

    def answer(self, message):
        if self.dead:
            return [Out("stderr", b"Error: boom\n"), Out("exit", code=2, after_s=0.01)]
        return super().answer(message)


class OnlyInitialize(GoodServer):
    def result(self, method, params):
        return super().result(method, params) if method == "initialize" else None


def measure(scripts: dict, **settings):
    settings.setdefault("payload_bytes", 1000)
    spawner = Spawner(scripts)
    servers = [run.Server(ServerResult(name), Command([name])) for name in scripts]
    updates = []
    results = run.measure(servers, fast(spawner=spawner, **settings), ["mcpstart", "measure"], {},
                          on_update=lambda r: updates.append(json.loads(json.dumps(r.to_dict()))))
    return results, updates, spawner


def test_interleaved_rounds_follow_a_seeded_shuffle():
    results, _, spawner = measure({"a": GoodServer, "b": GoodServer, "c": GoodServer},
                                  runs=2, warmup=1, seed=7, round_trips=0)
    assert results.settings["order"] == "interleave" and results.settings["seed"] == 7
    handshakes = [r for r in results.run_sequence if r["series"] == "handshake"]
    sequence = [(r["round"], r["server"]) for r in handshakes]
    assert sequence == run_order(["a", "b", "c"], 3, "interleave", 7)
    assert [r["warmup"] for r in handshakes] == [True] * 3 + [False] * 6
    rounds = [[name for n, name in sequence if n == r] for r in range(3)]
    assert all(sorted(names) == ["a", "b", "c"] for names in rounds)
    orders = {tuple(name for n, name in run_order(["a", "b", "c"], 40, "interleave", 7)
                    if n == r) for r in range(40)}
    assert len(orders) > 1  # shuffled per round, not once
    assert run_order(["a", "b"], 2, "sequential", 7) == [(0, "a"), (1, "a"), (0, "b"), (1, "b")]
    # the spawns happened in that order: the handshake series, then the matrix of each server
    spawned = [name for name, _ in spawner.made]
    assert spawned[:9] == [name for _, name in sequence]
    assert spawned[9:16] == ["a"] * 7  # discover + 6 initialize probes, each a fresh process


def test_the_times_are_the_servers_own():
    results, _, _ = measure({"slow": Slow}, runs=3, warmup=1, round_trips=2)
    row = results.servers[0]
    assert row.status == "ok", row.reason
    assert row.handshake_ms["samples"] == [40.0, 40.0, 40.0]
    assert row.phases_ms["tools_list"]["median"] == 40.0
    assert row.round_trip_ms["n"] == 2 and row.shutdown == {"how": "eof", "ms": 0.0}
    assert row.not_measured["memory"] == "the transport has no process of the server to read"


class Paced(GoodServer):
    """initialize answered after 40 ms, tools/list after 3 ms, tools/call after 2 ms."""

    def answer(self, message):
        outs = super().answer(message)
        delay = {"initialize": 0.040, "tools/list": 0.003, "tools/call": 0.002}.get(
            message.get("method") if isinstance(message, dict) else None, 0)
        for out in outs:
            out.after_s = delay
        return outs


class SlowToReact(ScriptedTransport):
    """A client that takes 5 ms (virtual) after each answer arrived before it goes on."""

    def receive(self, timeout_s, quiet_s=None):
        frames = super().receive(timeout_s, quiet_s)
        if frames:
            self.now_s += 0.005
        return frames


def test_the_phases_count_the_servers_time_not_the_clients():
    sample = cold_start(Command(["paced"]), fast(spawner=lambda _: SlowToReact(Paced())), Skips())
    # a wall clock would read 40 + 5 + 3 and 48 + 5 + 2 (settings.PHASE_RULE)
    assert (sample["handshake"], sample["tools_list"], sample["first_call"]) == (40.0, 43.0, 45.0)


def test_a_server_that_fails_a_run_keeps_its_samples_and_the_others_go_on():
    DiesOnThirdStart.starts = 0
    results, _, _ = measure({"dies": DiesOnThirdStart, "good": GoodServer}, runs=4,
                                  warmup=1, order="sequential")
    rows = {r.name: r for r in results.servers}
    dies, good = rows["dies"], rows["good"]
    assert dies.status == "failed"
    assert dies.reason.startswith("cold start run 2/4: initialize: the server exited with code 2")
    assert dies.reason.endswith("; its last error: Error: boom; stderr ended with:\n  Error: boom")
    assert dies.handshake_ms["n"] == 1 and len(dies.handshake_ms["warmup_samples"]) == 1
    runs = [r for r in results.run_sequence if r["server"] == "dies" and r["series"] == "handshake"]
    assert len(runs) == 3  # it left the later rounds
    assert dies.tools["count"] == 1  # what can still be measured is
    assert good.status == "ok" and good.handshake_ms["n"] == 4 and good.payload["verified"]


def test_the_results_are_rewritten_after_every_round_and_every_server():
    _, updates, _ = measure({"a": GoodServer, "b": GoodServer}, runs=2, warmup=0, round_trips=0)
    counts = [[(s["handshake_ms"] or {}).get("n") for s in u["servers"]] for u in updates]
    assert counts[:3] == [[None, None], [1, 1], [2, 2]]  # before the runs, then one per round
    tooled = [[s["tools"] is not None for s in u["servers"]] for u in updates]
    assert [False, False] in tooled and [True, False] in tooled and tooled[-1] == [True, True]
    assert Results.from_dict(updates[-1]).servers[1].payload["verified"] is True


def test_a_method_that_got_no_answer_is_named_and_not_asked_again():
    results, _, spawner = measure({"init-only": OnlyInitialize}, runs=3, warmup=1, timeout_s=2)
    row = results.servers[0]
    assert row.status == "failed"
    assert row.reason.startswith("no answer to tools/list within 2 s")
    assert row.handshake_ms["n"] == 3  # the handshakes are kept
    asked = [m.get("method") for _, t in spawner.made for m in t.sent if isinstance(m, dict)]
    assert asked.count("tools/list") == 1


class Interrupted(GoodServer):
    """Its third spawn is stopped by Ctrl-C (interrupts.py's SystemExit 130)."""

    starts = 0

    def __init__(self):
        Interrupted.starts += 1
        if Interrupted.starts == 3:
            raise SystemExit(130)


def test_a_row_cut_short_by_a_signal_says_so():
    """Ctrl-C in a's second counted cold start: both rows are "interrupted", each saying how
    far it got, in the last rewrite of the results; the run still exits 130."""
    Interrupted.starts = 0
    servers = [run.Server(ServerResult(name), Command([name])) for name in ("a", "b")]
    updates = []
    try:
        run.measure(servers, fast(spawner=Spawner({"a": Interrupted, "b": Interrupted}),
                                  runs=6, warmup=1, order="sequential"), ["mcpstart"], {},
                    on_update=lambda r: updates.append(r.to_dict()))
    except SystemExit as stop:
        assert stop.code == 130
    else:
        raise AssertionError("the signal was swallowed")
    rows = {row["name"]: row for row in updates[-1]["servers"]}
    assert updates[-1]["interrupted"].startswith("stopped by SIGINT")
    assert (rows["a"]["status"], rows["a"]["reason"]) == (
        "interrupted", "cut short by SIGINT after 1 of 6 cold starts; not measured: revision "
        "matrix, tool session")
    assert rows["a"]["handshake_ms"]["n"] == 1  # what was measured is kept
    assert rows["b"]["reason"] == ("cut short by SIGINT after 0 of 6 cold starts; not "
                                   "measured: revision matrix, tool session")


def test_a_cut_short_row_counts_the_cold_starts_its_statistics_count():
    """A cold start the signal cut short before its initialize answer (its server ended with
    mcpstart's process group) is in the runs without a handshake: not counted, as the row's
    ``handshake_ms`` does not count it."""
    server = run.Server(ServerResult("a"), Command(["a"]))
    server.runs = [{"warmup": True, "handshake": 3.0}, {"warmup": False, "handshake": 4.0},
                   {"warmup": False, "handshake": None}]
    assert run.cut_short(server, 6, "SIGINT").startswith("cut short by SIGINT after 1 of 6 ")
