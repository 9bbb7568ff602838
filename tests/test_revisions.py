"""The revision matrix's verdicts come only from answers, on scripted servers (virtual clock):
the probes' wait is derived from the server's own measured start and named; a probe that got
no answer is unknown, never unsupported, and the matrix goes on past it; ``revisions`` exits
1 when no revision is known to be supported; a negotiated revision the matrix does not list
is warned about."""

import json
import re
from pathlib import Path

from click.testing import CliRunner

from mcpstart.cli import main
from mcpstart.command import Command
from mcpstart.measure import run
from mcpstart.results import ServerResult
from mcpstart.views.table import ROWS, cell

from conftest import fast
from scripted import GoodServer, Spawner

EVERY = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"]


class SlowStart(GoodServer):
    """Every start takes 3 s (virtual): a process answers its first request 3 s after it."""

    def __init__(self):
        self.started = False

    def answer(self, message):
        outs = super().answer(message)
        if not self.started:
            self.started = True
            for out in outs:
                out.after_s = 3.0
        return outs


class Fickle(GoodServer):
    """A legacy server (no server/discover) whose first process negotiates 2025-11-25 and
    every later one 2025-06-18, whatever it is asked."""

    processes = 0

    def __init__(self):
        Fickle.processes += 1
        self.first = Fickle.processes == 1

    def result(self, method, params):
        if method == "server/discover":
            return KeyError(method)
        result = super().result(method, params)
        if method == "initialize":
            result["protocolVersion"] = "2025-11-25" if self.first else "2025-06-18"
        return result


def measure(script, **settings):
    servers = [run.Server(ServerResult("s"), Command(["s"]))]
    results = run.measure(servers, fast(spawner=Spawner({"s": script}), runs=1, warmup=0,
                                        round_trips=0, payload_bytes=1000, **settings),
                          ["mcpstart", "measure"], {})
    row = results.servers[0]
    row.stored = json.loads(json.dumps(results.to_dict()))["servers"][0]
    return row


def shown(row, path: str) -> str:
    """The table's cell of ``row`` (as stored) for the row at ``path``."""
    return cell(row.stored, next(r for r in ROWS if r.path == path))


def revisions_cli(monkeypatch, tmp_path, *args, **settings):
    """``mcpstart revisions ARGS -o FILE -- slow`` on SlowStart: (exit code, output, row)."""
    monkeypatch.setattr("mcpstart.measure.settings.BASE",
                        fast(spawner=Spawner({"slow": SlowStart}), **settings))
    out = tmp_path / "r.json"
    result = CliRunner().invoke(main, ["revisions", "--quiet", *args, "-o", str(out), "--",
                                       "slow"])
    return result.exit_code, result.output, json.loads(out.read_text())["servers"][0]


def test_a_slow_start_gets_a_wait_derived_from_it_and_every_revision_answers(monkeypatch,
                                                                            tmp_path):
    row = measure(SlowStart, probe_floor_s=1)
    assert row.status == "ok", row.reason
    protocol = row.protocol
    assert row.handshake_ms["samples"] == [3000.0]
    assert protocol["probe_wait"] == {"s": 9.0, "rule": "derived", "slowest_start_ms": 3000.0,
                                      "source": "cold start"}
    assert protocol["supported_revisions"] == EVERY and protocol["unknown_revisions"] == []
    assert [p["verdict"] for p in protocol["matrix"]] == ["supported"] * 5 + ["unsupported"] * 2
    assert {p["wait_s"] for p in protocol["matrix"]} == {9.0}
    assert shown(row, "protocol.supported_revisions") == "2024-11..2026-07"
    assert shown(row, "protocol.probe_wait.s") == "9 s (3x the slowest cold start, 3000 ms)"
    assert not [w for w in row.warnings if w["kind"] == "protocol"]
    # alone, the revisions command derives the wait from its first start
    code, output, server = revisions_cli(monkeypatch, tmp_path, probe_floor_s=1)
    assert code == 0, output
    assert server["protocol"]["supported_revisions"] == EVERY
    assert "probe wait 9 s (3x the slowest first start, 3000 ms)" in output
    assert "unknown" not in output


def test_format_json_is_each_servers_protocol_block_as_the_results_file_has_it(monkeypatch,
                                                                               tmp_path):
    code, output, server = revisions_cli(monkeypatch, tmp_path, "--format", "json",
                                         probe_floor_s=1)
    assert code == 0, output
    printed = json.loads(output)
    assert printed == {"servers": [{"name": "slow", "status": "ok", "reason": None,
                                    "protocol": server["protocol"]}]}
    assert printed["servers"][0]["protocol"]["supported_revisions"] == EVERY


def test_with_a_short_wait_given_every_probe_is_unknown_and_revisions_exits_1(monkeypatch,
                                                                             tmp_path):
    code, output, server = revisions_cli(monkeypatch, tmp_path, "--probe-timeout", "1")
    assert code == 1, output
    protocol = server["protocol"]
    assert len(protocol["matrix"]) == 7  # the matrix went on past the first silence
    assert {(p["outcome"], p["verdict"], p["wait_s"], p["ms"]) for p in protocol["matrix"]} == {
        ("no_answer", "unknown", 1, 1000.0)}  # each probe waited its 1 s, no more
    assert output.count("unknown (no answer in 1 s)") == 8  # each probe, and the summary
    assert "unsupported" not in output and "rejected" not in output
    assert protocol["supported_revisions"] == [] and protocol["unknown_revisions"] == EVERY
    assert protocol["probe_wait"]["rule"] == "given"
    assert "--probe-timeout SECONDS gives each probe longer" in output
    assert server["status"] == "failed" and server["reason"] == (
        "no revision is known to be supported: 7 of 7 probes got no answer in 1 s (unknown: "
        "a longer --probe-timeout may tell)")
    # the first start negotiated 2025-11-25, which the matrix could not confirm
    assert protocol["negotiated_revision"] == "2025-11-25"
    assert [w["detail"] for w in server["warnings"] if w["kind"] == "protocol"] == [
        "the session negotiated 2025-11-25, yet the revision matrix does not list it as "
        "supported: its probe got no answer in 1 s (unknown)"]
    # in a measure run, the table says so too
    row = measure(SlowStart, probe_timeout_s=1)
    assert shown(row, "protocol.supported_revisions") == (
        "none; 2024-11, 2025-03, 2025-06, 2025-11, 2026-07 unknown (no answer in 1 s)")
    assert shown(row, "protocol.initialize_modern") == "unknown (no answer in 1 s)"
    assert shown(row, "protocol.probe_wait.s") == "1 s (--probe-timeout)"


def test_a_negotiated_revision_the_matrix_found_unsupported_is_warned_about():
    Fickle.processes = 0
    row = measure(Fickle)
    protocol = row.protocol
    assert protocol["negotiated_revision"] == "2025-11-25"
    assert protocol["supported_revisions"] == ["2025-06-18"]
    assert protocol["probe_wait"] == {"s": 5.0, "rule": "floor", "slowest_start_ms": 0.0,
                                      "source": "cold start"}
    assert shown(row, "protocol.probe_wait.s") == (
        "5 s (the floor, above 3x the slowest cold start, 0.00 ms)")
    assert [w["detail"] for w in row.warnings if w["kind"] == "protocol"
            and w["metric"] == "protocol.supported_revisions"] == [
        "the session negotiated 2025-11-25, yet the revision matrix does not list it as "
        "supported: its probe got 2025-06-18"]


def test_a_probe_that_reached_no_server_says_nothing_of_its_revision():
    """Silence is unknown, and so is a probe that never reached a server (the program could
    not be started, nothing accepted the connection); an exit after the start, or an HTTP
    error status, is the server's answer."""
    from mcpstart.measure.revisions import verdict
    from mcpstart.views.table import _initialize_modern, _revisions

    def probe(outcome, ms=None, code=None, data=None):
        return {"method": "initialize", "requested": "2026-07-28", "outcome": outcome,
                "answered": None, "error_code": code, "error_data": data, "ms": ms}

    unreached = [probe("exited"), probe("error", data={"http_status": None})]
    assert [verdict(p) for p in unreached] == ["unknown", "unknown"]
    assert [verdict(p) for p in (probe("exited", ms=40.0), probe("error", data={
        "http_status": 400}), probe("error", code=-32602))] == ["unsupported"] * 3
    row = {"protocol": {"unknown_revisions": ["2026-07-28"], "probe_wait": {"s": 5.0},
                        "matrix": [{**unreached[1], "verdict": "unknown"}]}}
    assert _revisions([], row) == "none; 2026-07 unknown (reached no server)"
    assert _initialize_modern({"outcome": "error", "error_code": None}, row) == \
        "unknown (reached no server)"


def test_an_error_of_several_lines_and_pipes_stays_one_markdown_cell():
    from mcpstart.views.revisions import matrix_table

    doc = json.loads((Path(__file__).parent / "fixtures" / "results" / "revisions.json")
                     .read_text())
    probe = doc["servers"][0]["protocol"]["matrix"][0]
    probe.update(outcome="error", answered=None, error_code=-32602,
                 error_message="Unsupported | 2099-01-01\nSupported: 2025-06-18")
    table = matrix_table(doc).split("\n\n")[0].splitlines()
    assert {len(re.split(r"(?<!\\)\|", line)) for line in table} == {11}  # 9 cells each
    assert "Unsupported \\| 2099-01-01 Supported: 2025-06-18" in table[2]
    plain = matrix_table(doc, "plain")
    assert "Unsupported | 2099-01-01 Supported: 2025-06-18" in plain
