"""Where a start goes (docs/startup.md), the logic without processes: an import tree summed
per distribution, the transport finding (and its negative control on an HTTP server), the
start-usage block, the table's rows, the why view, the hyperfine export's user and system,
and the switch that turns it all off."""

import copy
import json

from click.testing import CliRunner

from mcpstart.cli import main
from mcpstart import defaults
from mcpstart.command import Command
from mcpstart.measure import attribution, imports, usage
from mcpstart.measure.server import Server
from mcpstart.results import ServerResult
from mcpstart.measure.settings import Settings
from mcpstart.views.exports.hyperfine import series
from mcpstart.views.table import ROW_BY_PATH, cell
from mcpstart.views.why import why

IMPORTTIME = """\
import time: self [us] | cumulative | imported package
import time:       100 |        100 |   _codecs
import time:       400 |        500 | encodings
import time:       300 |        300 | site
import time:      2000 |       2000 |     json.decoder
import time:      1000 |       3000 |   json
import time:      5000 |       5000 |     zqwire.proto
import time:      4000 |      12000 |   framework
import time:      3000 |       3000 |   sdk.types
import time:      6000 |      24000 | sdk
import time:      7000 |       7000 | mytool
not an import line
"""
"""-X importtime's shape: the interpreter's own imports first (encodings, site), then the
server's: sdk imports json (stdlib), framework (an HTTP package by its classifiers) which
imports zqwire (an HTTP package under a name no list holds), and sdk.types; then the
server's own module."""

ENV = {"startup": ["_codecs", "encodings", "site", "sys"],
       "packages": {"sdk": ["sdk"], "framework": ["framework"], "zqwire": ["zq-wire"]},
       "classifiers": {"sdk": ["Topic :: Software Development"],
                       "framework": ["Topic :: Internet :: WWW/HTTP :: HTTP Servers"],
                       "zq-wire": ["Environment :: Web Environment"]},
       "stdlib": ["json", "encodings", "site", "_codecs"]}


def test_import_tree_is_summed_per_distribution_self_and_cumulative():
    roots = imports.parse(IMPORTTIME)
    assert [r["name"] for r in roots] == ["encodings", "site", "sdk", "mytool"]
    found = imports.attribute(roots, ENV)
    assert found["interpreter_ms"] == 0.8  # encodings and site: the interpreter's own
    assert found["import_ms"] == 31.0  # sdk 24 + mytool 7
    dists = found["distributions"]
    assert dists["sdk"] == {"self_ms": 9.0, "cumulative_ms": 24.0, "modules": 2}
    assert dists["framework"] == {"self_ms": 4.0, "cumulative_ms": 12.0, "modules": 1}
    assert dists["zq-wire"] == {"self_ms": 5.0, "cumulative_ms": 5.0, "modules": 1}
    assert dists[imports.STDLIB] == {"self_ms": 3.0, "cumulative_ms": 3.0, "modules": 2}
    assert dists[imports.NOT_INSTALLED] == {"self_ms": 7.0, "cumulative_ms": 7.0, "modules": 1}
    assert found["http_ms"] == 12.0  # framework, zqwire inside it counted once


def _block(transport: str) -> dict:
    found = imports.attribute(imports.parse(IMPORTTIME), ENV)
    return imports.block([(40.0, found), (50.0, found), (60.0, found)], ENV, 30.0, transport)


def test_transport_finding_names_http_packages_by_classifier_on_a_stdio_server():
    block = _block("stdio")
    assert block["instrumented_ms"] == 50.0 and block["uninstrumented_ms"] == 30.0
    assert block["share"] == 31.0 / 50.0
    assert [d["name"] for d in block["distributions"][:2]] == ["sdk", "framework"]
    assert block["other_transport"] == {"distributions": ["framework", "zq-wire"],
                                        "cumulative_ms": 12.0, "share": 12.0 / 50.0}


def test_transport_finding_does_not_fire_on_an_http_server():
    assert _block("http")["other_transport"] is None


def _run(handshake, cpu, warmup=False, names=("sh", "python3")):
    procs = [{"pid": i, "name": n, "ppid": i - 1, "started_ms": 10.0 * i, "exited": False,
              "cpu_ms": cpu / len(names), "user_ms": cpu / len(names), "system_ms": 0.0}
             for i, n in enumerate(names)]
    figures = {key: 0 for key in usage.FIGURES}
    return {"handshake": handshake, "warmup": warmup,
            "usage": {**figures, "cpu_ms": cpu, "user_ms": cpu, "read_bytes": 4096,
                      "processes": procs}}


def test_start_usage_block_medians_share_and_processes_by_name():
    runs = [_run(100.0, 500.0, warmup=True), _run(100.0, 80.0), _run(200.0, 40.0),
            _run(100.0, 10.0, names=("python3",))]
    block = usage.block(runs)
    assert block["cpu_ms"]["samples"] == [80.0, 40.0, 10.0]
    assert block["cpu_ms"]["warmup_samples"] == [500.0]
    assert block["cpu_ms"]["median"] == 40.0
    assert block["cpu_share"] == 0.2  # median of 0.8, 0.2, 0.1
    # the CPU is read at the last answer: its share is of that window, not of initialize's
    later = [{**r, "first_call": 2 * r["handshake"]} for r in runs]
    assert usage.block(later)["cpu_share"] == 0.1
    assert block["waiting_share"] == 0.8
    assert block["processes"] == [
        {"name": "sh", "runs": 2, "cpu_ms": 30.0, "user_ms": 30.0, "system_ms": 0.0,
         "wall_ms": 10.0},
        {"name": "python3", "runs": 3, "cpu_ms": 20.0, "user_ms": 20.0, "system_ms": 0.0,
         "wall_ms": 100.0}]  # median of 90, 190, 100


def _proc(pid, name, ppid, started_ms, exited=False):
    return {"pid": pid, "name": name, "ppid": ppid, "started_ms": started_ms, "exited": exited}


def test_launcher_line_parts_run_from_each_start_to_the_next_and_sum_to_the_start():
    procs = [_proc(10, "npm exec", 1, 0.0), _proc(11, "node", 10, 90.0, exited=True),
             _proc(12, "sh", 10, 300.0), _proc(13, "node", 12, 310.0)]
    assert usage.line_parts(procs, 800.0) == {10: 300.0, 12: 10.0, 13: 490.0}
    # started in the same tick as its parent: the deeper one is the server
    assert usage.line_parts(procs[:3] + [_proc(13, "node", 12, 300.0)], 800.0) == {
        10: 300.0, 12: 0.0, 13: 500.0}
    # a child the server started after the answer is not in the line
    assert usage.line_parts(procs + [_proc(14, "node", 13, 900.0)], 800.0)[13] == 490.0
    assert usage.line_parts([_proc(10, "sh", 1, 0.0, exited=True)], 800.0) == {}
    # the launcher was gone before it was seen: the first part runs from the spawn
    assert usage.line_parts([_proc(13, "node", 1, 310.0)], 800.0) == {13: 800.0}
    # per command name, a run's parts of one name are summed: node 210 + 490
    line = [{**p, **dict.fromkeys(usage.FIGURES, 0.0)}
            for p in procs[:1] + [_proc(11, "node", 10, 90.0), _proc(12, "sh", 11, 300.0),
                                  _proc(13, "node", 12, 310.0)]]
    block = usage.block([{"handshake": 800.0, "warmup": False,
                          "usage": {**dict.fromkeys(usage.FIGURES, 0.0), "processes": line}}])
    assert [(p["name"], p["wall_ms"]) for p in block["processes"]] == [
        ("npm exec", 90.0), ("node", 700.0), ("sh", 10.0)]


def _server() -> dict:
    block = usage.block([_run(100.0, 60.0), _run(100.0, 40.0)])
    return {"name": "py", "transport": "stdio", "status": "ok",
            "handshake_ms": {"n": 2, "median": 100.0, "mean": 100.0, "min": 100.0,
                             "max": 100.0, "stdev": 0.0, "samples": [100.0, 100.0]},
            "start_usage": block, "imports": _block("stdio")}


def test_rows_why_and_hyperfine_show_the_breakdown():
    server = _server()
    assert cell(server, ROW_BY_PATH["start_usage.cpu_share"]).startswith("50% CPU, 50% waiting")
    assert cell(server, ROW_BY_PATH["imports.distributions"]) == "sdk 24.0, framework 12.0, zq-wire 5.00"
    assert cell(server, ROW_BY_PATH["imports.other_transport"]).startswith(
        "12.0 ms (24.0% of the profiled start): framework, zq-wire")
    text = why({"servers": [server]}, "py")
    # 50 ms of CPU is 5 clock ticks: a split that is a tick or two landing on one side
    assert "sh: 25.0 (user/system under 10 clock ticks; wall 10.0; 2 runs)" in text
    assert cell(server, ROW_BY_PATH["start_usage.cpu_share"]).endswith(
        "(CPU 50.0 ms; user/system under 10 clock ticks)")
    busy = {**server, "start_usage": usage.block([_run(100.0, 600.0), _run(100.0, 400.0)])}
    assert "sh: 250.0 (user 250.0 + system 0.00; wall 10.0; 2 runs)" in why(
        {"servers": [busy]}, "py")
    assert cell(busy, ROW_BY_PATH["start_usage.cpu_share"]).endswith(
        "(CPU 500.0 ms: user 500.0 + system 0.00)")
    one_tick = copy.deepcopy(busy)  # the parts known in one run of the two: not shown
    one_tick["start_usage"]["user_ms"]["n"] = 1
    assert "under 10 clock ticks" in cell(one_tick, ROW_BY_PATH["start_usage.cpu_share"])
    assert "imported for another transport: 12.0 ms" in text
    doc = {"servers": [server], "environment": {"hostname": "h"}}
    (result,) = series([doc])
    assert result["user"] == 0.05 and result["system"] == 0.0


def test_no_attribution_switch_reaches_the_settings(monkeypatch):
    seen = {}

    def job_for(command, kw, settings, *rest):
        seen["settings"] = settings
        raise ValueError("stop here")

    monkeypatch.setattr("mcpstart.engine.job_for", job_for)
    CliRunner().invoke(main, ["measure", "--no-attribution", "--only", "c"])
    assert seen["settings"].attribution is False
    assert json.loads(json.dumps(Settings().record("sequential")))["attribution"] is True


def test_profiled_starts_setting_and_its_default_with_variants(monkeypatch):
    seen = []

    def job_for(command, kw, settings, *rest):
        seen.append(settings.profiled_starts)
        raise ValueError("stop here")

    monkeypatch.setattr("mcpstart.engine.job_for", job_for)
    for more in ([], ["--sdk", "python=2.2.0"], ["--sdk", "python=2.2.0", "--profiled-starts",
                                                  "5"]):
        CliRunner().invoke(main, ["measure", "--only", "python", *more])
    assert seen == [defaults.PROFILED_STARTS, defaults.PROFILED_STARTS_COMPARE, 5] == [3, 7, 5]
    assert Settings(profiled_starts=4).record("sequential")["profiled_starts"] == 4


def test_servers_profiles_run_round_by_round(monkeypatch):
    """Two servers' profiled starts alternate (attribution.interleaved), so a load that drifts
    meanwhile slows both alike; each row gets its settings.profiled_starts starts."""
    order = []

    def profiled_start(command, settings, env, at_answer, before_spawn):
        order.append(command.argv[0])
        return 40.0, IMPORTTIME, {"exe": "python3", "cwd": "/", "environ": {}}

    monkeypatch.setattr(imports, "profiled_start", profiled_start)
    monkeypatch.setattr(imports, "environment_of", lambda interpreter, timeout_s: ENV)
    servers = [Server(ServerResult(name), Command([name])) for name in ("old", "new")]
    settings = Settings(profiled_starts=4)
    attribution.interleaved([(s, imports.measure(s, settings)) for s in servers])
    assert order == ["old", "new"] * 4
    assert [s.row.imports["runs"] for s in servers] == [4, 4]
    sdk = servers[0].row.imports["distributions"][0]
    assert (sdk["name"], sdk["cumulative_ms"], sdk["samples"]) == ("sdk", 24.0, [9.0] * 4)
