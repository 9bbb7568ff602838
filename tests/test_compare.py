"""mcpstart compare: the regression gate, on results files built here from plain dicts."""

import json
import random
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcpstart.cli import main
from mcpstart.stats import summarize
from mcpstart.views.compare import compare, render, thresholds_from

HANDSHAKE = [20.4, 19.8, 20.1, 21.0, 20.3, 19.9]
FIRST_BYTE = [5.1, 4.9, 5.0, 5.2, 5.3, 4.8]
TOOLS_LIST = [25.0, 24.1, 24.8, 25.6, 24.9, 25.2]
FIRST_CALL = [27.0, 26.5, 27.4, 26.9, 27.8, 26.6]


def server(name: str, scale: float = 1.0, jitter=None, status: str = "ok", **extra) -> dict:
    """A server row shaped like the results file: every series is the fixed samples above
    times ``scale``, each sample then passed through ``jitter`` when given."""
    def stats(values):
        values = [v * scale for v in values]
        return summarize([jitter(v) for v in values] if jitter else values, [v * 3 for v in values[:1]])

    row = {
        "name": name, "language": "python", "sdk": "mcp", "sdk_version": "1.0",
        "status": status, "reason": None if status == "ok" else "no answer to initialize",
        "not_measured": {},
        "handshake_ms": stats(HANDSHAKE),
        "phases_ms": {"first_byte": stats(FIRST_BYTE), "tools_list": stats(TOOLS_LIST),
                      "first_call": stats(FIRST_CALL)},
        "modern_ms": None,
        "round_trip_ms": None,
        "memory": {"idle_rss_bytes": 40 * 2**20, "idle_pss_bytes": 30 * 2**20,
                   "peak_rss_bytes_payload": 60 * 2**20},
        "footprint": {"artifact_bytes": 12 * 2**20, "dev_tree_bytes": 90 * 2**20,
                      "dependency_count": 31},
        "warnings": [],
    }
    row.update(extra)
    return row


def results(*servers: dict) -> dict:
    """A whole results file (schema mcpstart/1) holding ``servers``."""
    return {
        "schema": "mcpstart/1", "created": "2026-11-30T01:30:54+00:00",
        "mcpstart_version": "0.1.0", "argv": ["mcpstart", "measure", "--runs", "6"],
        "environment": {"hostname": "ci", "os": "Linux", "cpu_count": 2,
                        "load_average": [0.5, 0.4, 0.3]},
        "settings": {"runs": 6, "warmup": 1, "timeout_s": 60.0},
        "servers": list(servers),
    }


def write(path: Path, data: dict) -> str:
    path.write_text(json.dumps(data))
    return str(path)


def run_compare(tmp_path, old: dict, new: dict, *options):
    return CliRunner().invoke(main, ["compare", write(tmp_path / "old.json", old),
                                     write(tmp_path / "new.json", new), *options])


def test_twice_as_slow_is_a_regression(tmp_path):
    result = run_compare(tmp_path, results(server("go"), server("python")),
                         results(server("go"), server("python", scale=2.0)))
    assert result.exit_code == 1, result.output
    assert "| python   | handshake_ms" in result.output
    assert "alpha 0.01" in result.output
    assert "0.00108 with 6 vs 6 runs" in result.output  # 1/924
    assert "4 regressions: python handshake_ms; python phases_ms.first_byte; " in result.output
    rows = compare(results(server("python")), results(server("python", scale=2.0))).rows
    handshake = next(r for r in rows if r.metric == "handshake_ms")
    assert handshake.regression and handshake.u == 36 and handshake.p == 1 / 924
    assert handshake.old == pytest.approx(20.2) and handshake.new == pytest.approx(40.4)
    assert handshake.ratio == pytest.approx(2.0)


def test_identical_rerun_passes(tmp_path):
    result = run_compare(tmp_path, results(server("go")), results(server("go")))
    assert result.exit_code == 0, result.output
    assert "No regression." in result.output
    rows = compare(results(server("go")), results(server("go"))).rows
    series = [r for r in rows if r.p is not None]
    assert len(series) == 4  # handshake and three phases; modern and round trip are null
    # every sample of NEW ties one of OLD: U counts pairs NEW strictly above, 15 of 36
    assert all(r.u == 15 and r.verdict == "ok" and r.ratio == 1.0 for r in series)


def test_rerun_jittered_by_5_percent_passes(tmp_path):
    rng = random.Random(20261130)
    jittered = results(server("go", jitter=lambda v: v * rng.uniform(0.95, 1.05)))
    assert jittered["servers"][0]["handshake_ms"]["samples"] != HANDSHAKE
    # each NEW sample is at most 1.05 x its OLD one, so no median can rise 10%
    result = run_compare(tmp_path, results(server("go")), jittered)
    assert result.exit_code == 0, result.output


def test_ok_then_failed_is_a_regression(tmp_path):
    failed = {"name": "rust", "status": "failed", "reason": "no answer to initialize",
              "handshake_ms": None, "phases_ms": {"first_byte": None}, "memory": None}
    result = run_compare(tmp_path, results(server("rust")), results(failed))
    assert result.exit_code == 1, result.output
    assert "regression: no answer to initialize" in result.output
    rows = compare(results(server("rust")), results(failed)).rows
    # the failed row's missing numbers are explained by its status row, not listed one by one
    assert [(r.metric, r.old, r.new, r.regression) for r in rows] == [
        ("status", "ok", "failed", True)]


def test_an_interrupted_new_run_fails_the_gate(tmp_path):
    cut = server("rust", status="interrupted", reason="cut short by SIGINT after 3 of 6 cold starts")
    result = run_compare(tmp_path, results(server("rust")), results(cut))
    assert result.exit_code == 1, result.output
    assert "interrupted in NEW: what it did not measure cannot be judged" in result.output


def test_failed_then_ok_is_not_a_regression(tmp_path):
    result = run_compare(tmp_path, results(server("rust", status="failed")),
                         results(server("rust")))
    assert result.exit_code == 0, result.output
    assert "ok in NEW" in result.output


def test_a_server_failed_in_both_files_is_said_with_its_reason_not_a_regression(tmp_path):
    failed = {"name": "rust", "status": "failed", "reason": "no answer to initialize"}
    result = run_compare(tmp_path, results(server("go"), failed), results(server("go"), failed))
    assert result.exit_code == 0, result.output
    rows = compare(results(failed), results(failed)).rows
    assert [(r.metric, r.old, r.new, r.verdict, r.regression) for r in rows] == [
        ("status", "failed", "failed", "failed in OLD and NEW: no answer to initialize", False)]
    cells = [[c.strip() for c in line.strip("|").split("|")]
             for line in result.output.splitlines() if line.startswith("| rust ")]
    assert cells == [["rust", "status", "failed", "failed", "-", "-", "-",
                      "failed in OLD and NEW: no answer to initialize"]]
    assert [r.metric for r in compare(results(server("go")), results(server("go"))).rows
            ].count("status") == 0  # ok in both: no status row


def test_a_reason_of_several_lines_and_pipes_stays_one_markdown_cell(tmp_path):
    failed = {"name": "rust", "status": "failed",
              "reason": "exited with code 1 | after 52 ms\nError: FOO_API_KEY not set"}
    result = run_compare(tmp_path, results(server("rust")), results(failed))
    assert result.exit_code == 1, result.output
    table = [line for line in result.output.splitlines() if line.startswith("|")]
    assert len(table) == 3  # header, rule, the status row
    assert re.split(r"(?<!\\)\|", table[2])[1:-1][-1].strip() == (
        "**regression: exited with code 1 \\| after 52 ms Error: FOO_API_KEY not set**")
    plain = run_compare(tmp_path, results(server("rust")), results(failed), "--format", "plain")
    assert "regression: exited with code 1 | after 52 ms Error: FOO_API_KEY not set" in \
        plain.output


def test_too_few_runs(tmp_path):
    three = {"handshake_ms": summarize(HANDSHAKE[:3]), "phases_ms": None}
    old, new = results(server("c", **three)), results(server("c", **three))
    new["servers"][0]["handshake_ms"] = summarize([2 * v for v in HANDSHAKE[:3]])
    result = run_compare(tmp_path, old, new)
    assert result.exit_code == 3, result.output  # neither a pass nor a regression
    assert "0.05 with 3 vs 3 runs (too few runs: cannot reach alpha)" in result.output
    (row,) = [r for r in compare(old, new).rows if r.metric == "handshake_ms"]
    assert (row.verdict, row.p, row.ratio) == ("too few runs", 0.05, pytest.approx(2.0))
    # the gate neither passes nor fails: its last line and its JSON verdict say what went untested
    assert result.output.rstrip().splitlines()[-1] == (
        "No regression found, but 1 median above the threshold could not be tested (too few "
        "runs; 5 runs of each reach alpha 0.01): c handshake_ms new/old 2.000.")
    verdict = json.loads(run_compare(tmp_path, old, new, "--format", "json").output)
    assert (verdict["verdict"], verdict["exit_status"]) == ("untested slowdown", 3)
    assert verdict["untested"] == [{"server": "c", "metric": "handshake_ms",
                                    "ratio": pytest.approx(2.0)}]
    same = run_compare(tmp_path, old, old)  # untested but not slower: plainly no regression
    assert same.output.rstrip().splitlines()[-1] == "No regression." and same.exit_code == 0
    # the same data passes the test at alpha 0.05
    assert run_compare(tmp_path, old, new, "--alpha", "0.05").exit_code == 1


def test_threshold_and_small_significant_slowdowns():
    old = results(server("go"))
    new = results(server("go", handshake_ms=summarize([v * 1.08 for v in HANDSHAKE])))
    (row,) = [r for r in compare(old, new).rows if r.metric == "handshake_ms"]
    # complete separation (NEW's least 19.8 x 1.08 = 21.38 > OLD's most 21.0: p = 1/924)
    # but the median rises 8%
    assert row.p == 1 / 924 and not row.regression and row.verdict == "slower, within 10%"
    doubled = results(server("go", scale=2.0))
    assert compare(old, doubled, thresholds={"time": 150, "load": 150}).regressions == []
    assert len(compare(old, doubled, thresholds={"time": 90, "load": 90}).regressions) == 4


def test_single_values_are_gated_by_their_family_threshold():
    old = results(server("ts"))
    new = results(server("ts", memory={"idle_rss_bytes": 80 * 2**20, "idle_pss_bytes": None},
                         footprint={"dependency_count": 62}))
    rows = {r.metric: r for r in compare(old, new).rows}
    assert rows["memory.idle_rss_bytes"].ratio == 2.0  # whole MiB counts: exact
    assert rows["memory.idle_rss_bytes"].verdict == "regression"
    assert rows["footprint.dependency_count"].ratio == 2.0
    assert rows["footprint.dependency_count"].family == "footprint"
    assert {r.metric for r in compare(old, new).regressions} == {
        "memory.idle_rss_bytes", "footprint.dependency_count"}
    # present in OLD only, NEW ok: listed as such
    assert rows["memory.idle_pss_bytes"].verdict == "only in OLD"
    assert rows["footprint.artifact_bytes"].new is None
    cells = [[c.strip() for c in line.split("|")[1:-1]]
             for line in render(compare(old, new)).splitlines() if line.startswith("| ts")]
    assert ["ts", "memory.idle_rss_bytes", "40.00 MiB", "80.00 MiB", "2.000", "-", "-",
            "**regression**"] in cells
    assert ["ts", "memory.peak_rss_bytes_payload", "60.00 MiB", "-", "-", "-", "-",
            "only in OLD"] in cells
    # a threshold per family: 150% lets the doubled memory and dependencies through
    assert compare(old, new, thresholds_from(["memory=150", "footprint=150"])).regressions == []
    # small sizes in their own unit, not 0.00 MiB
    small = [results(server("ts", tools={"list_bytes": n})) for n in (900, 1800)]
    cells = [[c.strip() for c in line.split("|")[1:-1]]
             for line in render(compare(*small)).splitlines() if "tools.list_bytes" in line]
    assert cells[0][2:4] == ["900 B", "1.8 KiB"]


def test_modern_and_round_trip_series():
    old = results(server("go", modern_ms={"discover": summarize([3.0, 3.1, 2.9, 3.2, 3.0, 3.1]),
                                          "first_call": None},
                         round_trip_ms={"n": 6, "p50": 0.2, "p95": None,
                                        "samples": [0.2, 0.21, 0.19, 0.2, 0.22, 0.2]}))
    new = results(server("go", modern_ms={"discover": summarize([9.0, 9.1, 8.9, 9.2, 9.0, 9.1]),
                                          "first_call": None},
                         round_trip_ms={"n": 6, "samples": [0.2, 0.21, 0.19, 0.2, 0.22, 0.2]}))
    rows = {r.metric: r for r in compare(old, new).rows}
    discover = rows["modern_ms.discover"]
    assert discover.regression and discover.p == 1 / 924
    assert discover.ratio == pytest.approx(9.05 / 3.05)
    assert rows["round_trip_ms"].verdict == "ok" and rows["round_trip_ms"].old == 0.2
    assert "modern_ms.first_call" not in rows


def test_the_calls_of_one_session_regress_only_beyond_the_noise_floor_and_their_threshold():
    """Two runs of one unchanged server: 100 calls each, a session apart (+0.054 ms, p far
    below alpha): within noise. A real slowdown of the calls (2x and +0.5 ms) is a regression;
    +40% is within the calls family's 50%."""
    def calls(base):
        return {"n": 100, "samples": [base + i * 1e-4 for i in range(100)]}

    def verdict(old_base, new_base):
        old = results(server("go", round_trip_ms=calls(old_base)))
        new = results(server("go", round_trip_ms=calls(new_base)))
        return {r.metric: r for r in compare(old, new).rows}["round_trip_ms"]

    same = verdict(0.073, 0.127)
    assert same.p < 1e-15 and not same.regression and same.verdict == "within noise (0.1 ms)"
    slower = verdict(0.5, 1.0)
    assert slower.regression and slower.family == "calls" and slower.threshold_pct == 50.0
    assert not verdict(1.0, 1.4).regression
    assert thresholds_from(["calls=30"])["calls"] == 30.0 == thresholds_from(["30"])["calls"]
    with pytest.raises(ValueError, match="unknown metric family ''"):
        thresholds_from(["=5"])


def test_servers_in_one_file_only_are_listed(tmp_path):
    result = run_compare(tmp_path, results(server("go"), server("c")),
                         results(server("go"), server("rust")))
    assert result.exit_code == 1, result.output  # a server of OLD gone: the gate fails
    assert "Missing from NEW: c." in result.output and "Only in NEW: rust." in result.output
    assert "1 server of OLD missing from NEW." in result.output
    result = run_compare(tmp_path, results(server("go")), results(server("go"), server("rust")))
    assert result.exit_code == 0, result.output  # a server added is no failure


def test_missing_blocks_and_nulls_never_crash(tmp_path):
    odd = {"name": "odd", "status": "ok",
           "handshake_ms": {"n": 3, "samples": [None, "x", True, 1.0]},
           "phases_ms": {"first_byte": None, "tools_list": {"samples": None}},
           "modern_ms": {"discover": 5}, "round_trip_ms": [1, 2],
           "memory": {"idle_rss_bytes": None, "peak_rss_bytes_payload": "big"},
           "footprint": None}
    bare = {"name": "odd"}  # no status, no blocks
    for old, new in ((bare, server("odd")), (server("odd"), bare)):
        result = run_compare(tmp_path, results(old), results(new), "--format", "plain")
        assert result.exit_code in (0, 1), result.output
        assert result.exception is None or isinstance(result.exception, SystemExit)
    for old, new in ((odd, server("odd")), (server("odd"), odd)):  # a file the schema rejects
        result = run_compare(tmp_path, results(old), results(new), "--format", "plain")
        assert result.exit_code == 2 and "servers[0].round_trip_ms: [1, 2] is not of type" in \
            result.output
    rows = compare(results(odd), results(odd)).rows  # the reader itself tolerates any value
    # only the one valid sample (1.0) each side: tested, "too few runs"
    assert [(r.metric, r.n_old, r.verdict) for r in rows] == [("handshake_ms", 1, "too few runs")]


def test_bad_input_exits_2(tmp_path):
    good = write(tmp_path / "good.json", results(server("go")))
    assert CliRunner().invoke(main, ["compare", good, str(tmp_path / "none.json")]).exit_code == 2
    (tmp_path / "bad.json").write_text("{not json")
    assert CliRunner().invoke(main, ["compare", str(tmp_path / "bad.json"), good]).exit_code == 2
    other = write(tmp_path / "other.json", {"schema": "other/1", "servers": []})
    assert CliRunner().invoke(main, ["compare", good, other]).exit_code == 2
    toml = CliRunner().invoke(main, ["compare", str(tmp_path / "good.toml"), good])
    assert toml.exit_code == 2 and "TOML copy" in toml.output
    assert CliRunner().invoke(main, ["compare", good, good, "--format", "nope"]).exit_code == 2
    assert CliRunner().invoke(main, ["compare", good, good, "--alpha", "0"]).exit_code == 2


def test_help_explains_exit_1_and_ends_with_an_example():
    text = CliRunner().invoke(main, ["compare", "--help"]).output
    assert "Exit status: 1 a regression" in text
    assert text.rstrip().splitlines()[-1].strip().startswith("mcpstart compare ")


@pytest.mark.parametrize("fmt", ["github", "plain", "grid"])
def test_other_formats(tmp_path, fmt):
    result = run_compare(tmp_path, results(server("go")), results(server("go", scale=2.0)),
                         "--format", fmt)
    assert result.exit_code == 1
    assert "handshake_ms" in result.output and "20.20 ms" in result.output
    assert ("**regression**" in result.output) == (fmt == "github")
    assert ("**" in result.output or "`" in result.output) == (fmt == "github")  # no Markdown


def floor(scale: float = 1.0) -> dict:
    return server("c", scale, language="c", server_info={"name": "mcpstart-c-floor"})


def test_a_floor_that_moved_as_much_as_the_server_is_drift_not_a_regression(tmp_path):
    """The same binary twice, 30 s apart, on a drifting machine: the Rust server 1.63 -> 2.17
    ms while the floor (and a C harness) moved 1.60 -> 2.10: not exit 1."""
    result = run_compare(tmp_path, results(floor(), server("rust")),
                         results(floor(1.31), server("rust", scale=1.33)))
    assert result.exit_code == 0, result.output
    assert "the floor server moved x1.310" in result.output
    assert "slower as the floor is (x1.310): the machine drifted" in result.output
    assert "No regression." in result.output


def test_a_server_slower_beyond_the_floors_drift_is_a_regression(tmp_path):
    result = run_compare(tmp_path, results(floor(), server("rust")),
                         results(floor(1.3), server("rust", scale=2.0)))
    assert result.exit_code == 1, result.output
    assert "rust handshake_ms" in result.output.splitlines()[-1]


def test_without_the_floor_compare_says_it_cannot_tell_the_machine(tmp_path):
    old = results(server("rust"))
    new = results(server("rust", scale=2.0))
    new["environment"] = {**new["environment"], "hostname": "other", "load_average": [3.5]}
    result = run_compare(tmp_path, old, new)
    assert result.exit_code == 1
    assert "do not both hold the floor server" in result.output
    assert "the files come from different machines" in result.output
    assert "the 1-minute load average was 3.50 on 2 cores" in result.output
    assert "--old-variant" in result.output


def test_files_that_time_the_phases_by_other_rules_are_said_to(tmp_path):
    from mcpstart.measure.settings import PHASE_RULE

    new = results(server("go"))
    new["settings"] = {**new["settings"], "phase_rule": PHASE_RULE}
    result = run_compare(tmp_path, results(server("go")), new)
    assert result.exit_code == 0, result.output  # a note, not a regression
    assert "phases_ms: the files time these phases differently (OLD: the wall clock" in \
        result.output and f"NEW: {PHASE_RULE})" in result.output
    assert "differently" not in run_compare(tmp_path, new, new).output


def test_files_measured_with_other_settings_are_said_to():
    """A workload, a memory limit or another payload on one side: a note naming each, never
    a regression; a key an older file lacks is no difference."""
    old, new = results(server("go")), results(server("go"))
    old["settings"] = {**old["settings"], "payload_bytes": 5242880, "memory_limit_bytes": None,
                       "workload": None}
    new["settings"] = {**new["settings"], "payload_bytes": 1024,
                       "memory_limit_bytes": 104857600, "workload": {"name": "benchmark"},
                       "process_layer": "portable"}
    comparison = compare(old, new)
    (note,) = [n for n in comparison.notes if n["kind"] == "settings"]
    assert note["detail"] == (
        "the files were measured with other settings (payload_bytes 5242880 in OLD, 1024 in "
        "NEW; workload null in OLD, \"benchmark\" in NEW; memory_limit_bytes null in OLD, "
        "104857600 in NEW): part of a difference is theirs")
    assert comparison.exit_status == 0
    assert not [n for n in compare(old, old).notes if n["kind"] == "settings"]


def test_each_tool_of_a_workload_is_gated_as_its_family():
    """Per-tool series (workload.tools.NAME.warm_ms as calls, .cold_first_call_ms as time),
    a tool's name holding dots included; a tool measured on one side only is said so."""
    def tools(scale: float, names=("files.read", "search")) -> dict:
        return {"workload": {"tools": {name: {
            "warm_ms": summarize([v * scale for v in (1.0, 1.1, 0.9, 1.05, 0.95, 1.0) * 10]),
            "cold_first_call_ms": summarize([v * scale for v in HANDSHAKE])} for name in names}}}
    old = results(server("go", **tools(1.0)))
    new = results(server("go", **tools(3.0, ("files.read", "search", "fetch"))))
    rows = {r.metric: r for r in compare(old, new).rows}
    warm = rows["workload.tools.files.read.warm_ms"]
    assert warm.regression and warm.family == "calls" and abs(warm.ratio - 3.0) < 0.01
    cold = rows["workload.tools.search.cold_first_call_ms"]
    assert cold.regression and cold.family == "time"
    assert rows["workload.tools.fetch.warm_ms"].verdict == "only in NEW"
    same = {r.metric: r for r in compare(old, old).rows}
    assert not same["workload.tools.files.read.warm_ms"].regression
    broken = results(server("go", workload={"tools": ["not", "a", "table"]}))
    assert compare(old, broken).exit_status == 0


def test_first_byte_is_a_row_only_where_it_differs_from_the_handshake():
    same = server("go", phases_ms={"first_byte": summarize(HANDSHAKE), "tools_list": None,
                                   "first_call": None})
    rows = compare(results(same), results(same)).rows
    assert "phases_ms.first_byte" not in {r.metric for r in rows}
    rows = compare(results(server("go")), results(server("go"))).rows
    assert "phases_ms.first_byte" in {r.metric for r in rows}


def test_a_slowdown_the_test_cannot_confirm_is_inconclusive(tmp_path):
    """Three of six NEW runs 30% slower, three as before: the median rises past 10%, but the
    exact test cannot tell it from noise (p above 0.01)."""
    old = results(server("go"))
    mixed = [v * 1.3 for v in HANDSHAKE[:3]] + HANDSHAKE[3:]
    new = results(server("go", handshake_ms=summarize(mixed)))
    (row,) = [r for r in compare(old, new).rows if r.metric == "handshake_ms"]
    assert row.ratio > 1.1 and row.p > 0.01 and not row.regression
    assert row.verdict == f"inconclusive (p = {row.p:.2g})"
    result = run_compare(tmp_path, old, new)
    assert result.exit_code == 0 and f"inconclusive (p = {row.p:.2g})" in result.output


def fresh() -> dict:
    """A fresh results file (both transports, load), each series cut to its first 8 samples
    so that the exact test stays quick."""
    def cut(value):
        if isinstance(value, dict):
            return {k: v[:8] if k == "samples" else cut(v) for k, v in value.items()}
        return [cut(v) for v in value] if isinstance(value, list) else value
    return cut(json.loads((Path(__file__).parent / "fixtures/results/both.json").read_text()))


def changed(tmp_path, name: str, **scale) -> str:
    """A copy of ``fresh()`` with the single values ``block__key=factor`` (e.g.
    ``memory__idle_pss_bytes=1.5``) multiplied on every server."""
    data = fresh()
    for row in data["servers"]:
        for path, factor in scale.items():
            block, key = path.split("__")
            row[block][key] = round(row[block][key] * factor)
    return write(tmp_path / name, data)


def test_the_gate_covers_memory_and_size_with_a_noise_rule(tmp_path):
    fresh_file = changed(tmp_path, "fresh.json")
    cli = CliRunner()
    pss = cli.invoke(main, ["compare", fresh_file, changed(tmp_path, "pss.json",
                                                           memory__idle_pss_bytes=1.5)])
    assert pss.exit_code == 1, pss.output
    assert "3 regressions: c memory.idle_pss_bytes; python memory.idle_pss_bytes; c-http " \
           "memory.idle_pss_bytes." in pss.output
    art = cli.invoke(main, ["compare", fresh_file, changed(tmp_path, "art.json",
                                                           footprint__artifact_bytes=5)])
    assert art.exit_code == 1 and "c footprint.artifact_bytes" in art.output
    small = changed(tmp_path, "small.json", memory__idle_pss_bytes=1.02,
                    footprint__artifact_bytes=1.01)
    ok = cli.invoke(main, ["compare", fresh_file, small, "--format", "json"])
    assert ok.exit_code == 0, ok.output
    verdict = json.loads(ok.output)
    assert verdict["verdict"] == "ok" and verdict["exit_status"] == 0
    decisions = {(r["server"], r["metric"]): r["verdict"] for r in verdict["rows"]}
    assert decisions["python", "memory.idle_pss_bytes"] == "within noise (4%)"
    assert decisions["python", "footprint.artifact_bytes"] == "worse, within 10%"
    # the same +1% with a footprint threshold of 0.5%: a regression, in JSON
    strict = json.loads(cli.invoke(main, ["compare", fresh_file, small, "--format", "json",
                                          "--threshold", "footprint=0.5"]).output)
    assert strict["verdict"] == "regression" and strict["rules"]["thresholds_pct"] == {
        "time": 10.0, "calls": 50.0, "memory": 10.0, "footprint": 0.5, "tools": 10.0,
        "load": 10.0}
    assert {"server": "python", "metric": "footprint.artifact_bytes"} in strict["regressions"]
    # memory noise holds whatever the threshold: 2% stays noise at memory=1
    noise = cli.invoke(main, ["compare", fresh_file, small, "--threshold", "memory=1",
                              "--threshold", "footprint=5"])
    assert noise.exit_code == 0, noise.output
    bad = cli.invoke(main, ["compare", fresh_file, small, "--threshold", "speed=5"])
    assert bad.exit_code == 2 and "unknown metric family 'speed'" in bad.output


def test_an_unrelated_file_fails_the_gate(tmp_path):
    fresh_file = changed(tmp_path, "fresh.json")
    other = results(server("go"), server("rust"))
    result = CliRunner().invoke(main, ["compare", fresh_file, write(tmp_path / "o.json", other)])
    assert result.exit_code == 2
    assert "No server in common" in result.output and "Smallest attainable p: ." not in \
        result.output
    assert "No timing series has samples in both files: no test ran." in result.output
    as_json = CliRunner().invoke(main, ["compare", fresh_file, str(tmp_path / "o.json"),
                                        "--format", "json"])
    assert json.loads(as_json.output)["verdict"] == "no server in common"
    assert as_json.exit_code == 2


def test_an_engine_bound_load_figure_is_never_a_verdict(tmp_path):
    data = fresh()
    blocks = {b["scenario"]: b for b in data["servers"][2]["http"]["load"]}
    assert blocks["session"]["engine_bound"] is True and blocks["rate"]["engine_bound"] is False
    for block in blocks.values():
        block["rps"] /= 2
    rows = {r.metric: r for r in compare(fresh(), data).rows
            if r.server == "c-http"}
    assert rows["http.load.session.rps"].verdict == "engine-bound in OLD and NEW: no verdict"
    assert not rows["http.load.session.rps"].regression
    assert rows["http.load.rate.rps"].regression  # not engine-bound: half the rate fails


def test_servers_pair_by_command(tmp_path):
    old = results(server("go", command={"argv": ["./srv"]}))
    new = results(server("srv", command={"argv": ["./srv"]}, memory={"idle_rss_bytes": 1}))
    assert compare(old, new).exit_status == 2
    paired = compare(old, new, pair="command")
    assert paired.exit_status == 0 and paired.common == 1
    assert {r.server for r in paired.rows} == {"go -> srv"}
    result = CliRunner().invoke(main, ["compare", write(tmp_path / "a.json", old),
                                       write(tmp_path / "b.json", new), "--pair", "command"])
    assert result.exit_code == 0 and "| go -> srv" in result.output


def test_the_rules_name_as_not_gated_exactly_the_rows_that_are_not_gated(tmp_path):
    from mcpstart.views.compare import SINGLES, UNGATED, rules

    assert set(UNGATED) == {m for m, family in SINGLES.items() if family is None}
    data = fresh()
    for row in data["servers"]:
        row["footprint"]["dev_tree_bytes"] *= 5
    comparison = compare(fresh(), data)
    tree = [r for r in comparison.rows if r.metric == "footprint.dev_tree_bytes"]
    assert tree and {r.verdict for r in tree} == {"not gated"} and comparison.exit_status == 0
    said = rules(comparison)[1]
    assert "the build tree and the sessions' memory slope are shown, not gated" in said
    assert "the artifact or the dependency count more than 10%," in said


def test_a_server_from_a_config_and_the_same_command_after_dashes_pair_by_command(tmp_path):
    """The commands the two routes record (``row.command``: the Command a Target spawns) are
    the same, so ``--pair command`` pairs them though their names differ."""
    from mcpstart.command import Command
    from mcpstart.targets.plan import make_plan

    argv = ["python3", str(Path(__file__).parent / "fakes" / "fake_server.py"), "--quiet"]
    config = tmp_path / "claude_desktop_config.json"
    config.write_text(json.dumps({"mcpServers": {"fake": {"command": argv[0],
                                                          "args": argv[1:]}}}))

    def recorded(command=(), configs=()):
        [target] = make_plan(tuple(command), (), tuple(configs), None, None, None, (), False,
                             lambda: tmp_path).targets
        return target.name, Command(list(target.argv), target.cwd, target.env).record()

    (config_name, from_config), (dash_name, from_dashes) = recorded(configs=[config]), \
        recorded(command=argv)
    assert config_name == "fake" and dash_name != "fake" and from_config == from_dashes
    old = results(server(config_name, command=from_config))
    new = results(server(dash_name, command=from_dashes))
    assert compare(old, new).exit_status == 2  # by name: nothing in common
    paired = compare(old, new, pair="command")
    assert paired.exit_status == 0 and {r.server for r in paired.rows} == {
        f"fake -> {dash_name}"}
