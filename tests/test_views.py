"""Tables and exports of results files: synthetic files in the results schema (docs/results.md)."""

import copy
import csv
import io
import json
import re
import statistics
from pathlib import Path

import pytest

from click.testing import CliRunner

from mcpstart.cli import main
from mcpstart.views.exports import exporter
from mcpstart.views.records import records as records_of
from mcpstart.views.table import ROWS, UnknownMetric, table

MIB = 1024 * 1024


def stats(samples: list[float], warmup: list[float] = (), ci: tuple | None = None) -> dict:
    """A <stats> block computed from ``samples`` (ms); ``ci`` = (low, high) at 96.875 %."""
    ordered = sorted(samples)
    return {"n": len(samples), "median": statistics.median(samples),
            "mean": statistics.fmean(samples),
            "stdev": statistics.stdev(samples) if len(samples) > 1 else None,
            "min": ordered[0], "max": ordered[-1], "mad": None, "p95": None,
            "samples": list(samples), "warmup_samples": list(warmup),
            "ci_low": ci[0] if ci else None, "ci_high": ci[1] if ci else None,
            "ci_level": 0.96875 if ci else None}


def process(pid: int, ppid: int, name: str, rss_mib: float) -> dict:
    return {"pid": pid, "ppid": ppid, "name": name, "cmdline": [name],
            "idle_rss_bytes": int(rss_mib * MIB), "idle_pss_bytes": None, "idle_uss_bytes": None,
            "peak_rss_bytes_hwm": None, "peak_rss_bytes_sampled": None, "exited": False}


def server(name: str, samples: list[float], **blocks) -> dict:
    """An "ok" row with every block filled; ``blocks`` replace or add keys."""
    row = {
        "name": name, "language": name, "sdk": f"{name}-sdk", "sdk_version": "1.2.3",
        "status": "ok", "reason": None, "not_measured": {},
        "server_info": {"name": f"{name}-server", "version": "0.9"},
        "server_capabilities": {"tools": {}},
        "command": {"argv": [name], "cwd": None, "env_keys": []},
        "handshake_ms": stats(samples, [samples[-1] * 1.5], (min(samples), max(samples))),
        "phases_ms": {"first_byte": stats([s * 0.5 for s in samples]),
                      "tools_list": stats([s * 1.25 for s in samples]),
                      "first_call": stats([s * 1.5 for s in samples])},
        "modern_ms": {"discover": stats([s * 0.8 for s in samples]),
                      "first_call": stats([s * 1.1 for s in samples])},
        "round_trip_ms": {"n": 100, "p50": 0.084, "p95": 0.131, "samples": [0.084] * 100},
        "memory": {"idle_rss_bytes": int(5.1 * MIB), "idle_pss_bytes": int(3.7 * MIB),
                   "idle_uss_bytes": int(3.2 * MIB), "settle_s": 0.6000000001,
                   "settle_rule": "RSS within 1% for 300 ms", "sharing": [],
                   "peak_rss_bytes_payload": int(25.1 * MIB), "peak_rss_bytes_sampled": None,
                   "peak_rss_bytes_hwm_sum": int(25.1 * MIB), "peak_method": "vmhwm",
                   "sample_interval_ms": 5, "rescan_interval_ms": 50,
                   "processes": [process(100, 1, name, 5.1)]},
        "payload": {"tool": "reverse_text", "request_bytes": 5 * MIB, "response_bytes": 5 * MIB + 40,
                    "round_trip_ms": 83.74, "verified": True, "unicode_verified": True,
                    "is_error": False},
        "tools": {"count": 3, "list_bytes": 2560, "definitions_bytes": 1843, "pages": 1,
                  "output_schema": True, "with_output_schema": 2, "structured_content": True},
        "footprint": {"artifact_bytes": int(4.1 * MIB), "dev_tree_bytes": int(316.3 * MIB),
                      "dependency_count": 72, "lock_count": 130, "tool_lines": 41,
                      "build_s": 93.37, "build_cached": True, "debug_info": False},
        "protocol": {"requested_revision": "2025-11-25", "negotiated_revision": "2025-11-25",
                     "discover_versions": ["2025-11-25", "2026-07-28"], "discover": None,
                     "supported_revisions": ["2026-07-28", "2024-11-05", "2025-11-25"],
                     "era": "dual", "matrix": []},
        "shutdown": {"how": "eof", "ms": 0.42},
        "orphans": [],
        "warnings": [],
    }
    row.update(blocks)
    return row


def results(**top) -> dict:
    """A results file: c (the floor), rust, typescript (a 3-process tree), python (slow) and
    needs-key (failed before its first answer)."""
    typescript = server("typescript", [317.3, 362.24, 380.0, 411.9, 350.1],
                        modern_ms=None, not_measured={"modern_ms": "legacy era: no server/discover"},
                        warnings=[{"kind": "noise", "metric": "handshake_ms",
                                   "detail": "skipped 4 stdout line(s) that are not JSON-RPC"}])
    typescript["memory"] = dict(typescript["memory"], idle_rss_bytes=int(161.3 * MIB), processes=[
        process(10, 1, "npm exec", 91.04), process(11, 10, "sh", 2.0), process(12, 11, "node", 68.26)],
        sharing=[{"pid": 4242, "cmdline": ["node", "other.js"]}])
    failed = {"name": "needs-key", "status": "failed",
              "reason": "exited with code 1 after 52 ms before answering\nError: FOO_API_KEY not set",
              "not_measured": {"footprint": "no recipe: a bare command"},
              "warnings": ["stderr: FOO_API_KEY not set"]}
    doc = {
        "schema": "mcpstart/1", "created": "2026-11-30T01:30:54+00:00", "mcpstart_version": "0.2.0",
        "argv": ["mcpstart", "measure", "--runs", "5", "--only", "rust"],
        "environment": {"hostname": "bench-1", "os": "Linux", "kernel": "6.1.0",
                        "cpu_model": "AMD EPYC 7B13", "cpu_count": 2,
                        "load_average": [0.12, 0.1, 0.05], "python": "3.11.7", "toolchains": {}},
        "settings": {"runs": 5, "warmup": 1, "timeout_s": 60, "payload_bytes": 5 * MIB,
                     "requested_revision": "2025-11-25", "order": "interleave", "seed": 7,
                     "pause_ms": 20, "cache_state": "warm", "round_trips": 100},
        "run_sequence": [],
        "startup": {"sequential_sum_ms": 1808.6, "concurrent_ms": stats([2010.0, 2104.5, 2200.0]),
                    "runs": [{"rust": {"first_byte": 1.0, "initialize": 3.0, "tools_list": 3.5},
                              "typescript": {"first_byte": 250.0, "initialize": 380.0,
                                             "tools_list": 392.0}}],
                    "idle_rss_bytes": int(170.2 * MIB), "idle_pss_bytes": int(150.0 * MIB),
                    "ready_rule": "tools/list answered to its last page (initialize where it "
                                  "was not)",
                    "limits": [{"client": "Codex, Claude Code", "limit_s": 30,
                                "fits": {"rust": True, "typescript": True, "python": False}}]},
        "servers": [server("c", [1.21, 1.23, 1.25, 1.3, 1.19]),
                    server("rust", [2.61, 3.05, 2.98, 3.4, 3.9]),
                    typescript,
                    server("python", [1388.2, 1441.26, 1573.9, 1402.0, 1500.0]),
                    failed],
    }
    doc.update(top)
    return doc


def grid(text: str) -> tuple[list[str], dict[str, list[str]]]:
    """The Markdown table at the top of ``text``: its header cells and {row label: cells}."""
    lines = [l for l in text.split("\n\n")[0].splitlines()]
    split = lambda line: [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
    header = split(lines[0])
    return header, {cells[0]: cells[1:] for cells in map(split, lines[2:])}


COLD = "cold start, warm page cache: median [96.9% CI] (ms)"


def test_rows_and_cells_of_a_full_file():
    header, rows = grid(table(results()))
    assert header == ["metric", "c (floor)", "rust", "typescript", "python", "needs-key"]
    assert rows["status"] == ["ok", "ok", "ok", "ok", "failed"]
    assert rows["server name/version"][:2] == ["c-server 0.9", "rust-server 0.9"]
    assert rows["supported revisions"][0] == "2024-11..2026-07"
    assert rows["protocol era"][0] == "dual"
    # precision: 0.01 ms under 10 ms, 0.1 ms under 1 s, 1 ms above; CI at the median's
    assert rows[COLD] == ["1.23 [1.19, 1.30]", "3.05 [2.61, 3.90]", "362.2 [317.3, 411.9]",
                          "1441 [1388, 1574]", "-"]
    assert rows["cold start mean ± stdev (ms)"] == ["1.24 ± 0.04", "3.19 ± 0.49", "364.3 ± 35.1",
                                                    "1461 ± 77", "-"]
    assert rows["cold start min / max (ms)"][2] == "317.3 / 411.9"
    assert rows["cold start runs (+ warm-up)"][0] == "5 (+1)"
    assert rows["first byte from spawn, median (ms)"][1] == "1.52"
    assert rows["tools/list answered from spawn, median (ms)"][3] == "1802"
    assert rows["first tool call answered from spawn, median (ms)"][2] == "543.4"
    # a block listed in not_measured is "n/a"; one a failure stopped is "-"
    assert rows["cold start a 2026 client sees: discover, median (ms)"] == [
        "0.98", "2.44", "n/a", "1153", "-"]
    assert rows["artifact (MiB)"] == ["4.1", "4.1", "4.1", "4.1", "n/a"]
    assert rows["idle RSS (MiB)"] == ["5.1", "5.1", "161.3", "5.1", "-"]
    assert rows["warm round trip p50 / p95 (ms, n)"][0] == "0.08 / 0.13 (n=100)"
    assert rows["processes in tree (idle RSS each)"][:3] == [
        "1", "1", "3: npm exec 91.0 + sh 2.0 + node 68.3 MiB"]
    assert rows["peak RSS, 5 MiB call (MiB)"][0] == "25.1 (vmhwm)"
    for sampled, cell in ((48.0, "25.1 (vmhwm; again: >= 48.0)"), (27.0, "25.1 (vmhwm)")):
        again = results()  # the second call's sampled peak: shown where it is higher
        again["servers"][0]["memory"]["peak_rss_bytes_sampled"] = int(sampled * MIB)
        assert grid(table(again))[1]["peak RSS, 5 MiB call (MiB)"][0] == cell
    assert rows["5 MiB call round trip (ms)"][0] == "83.7"
    assert rows["result verified (5 MiB, Unicode)"][0] == "yes, yes"
    assert rows["tools/list result (KiB)"][0] == "2.5"
    assert rows["tool definitions (KiB)"][0] == "1.8"
    assert rows["outputSchema (tools with one; the called tool)"][0] == "2/3; called: yes"
    assert rows["structuredContent"][0] == "yes"
    assert rows["build time (s)"][0] == "93.4 (cached)"
    assert rows["debug info in artifact"][0] == "no"
    assert rows["shutdown"] == ["eof (0.42 ms)"] * 4 + ["-"]


def test_a_single_revision_and_tiny_sizes():
    doc = results()
    doc["servers"][0]["protocol"]["supported_revisions"] = ["2025-06-18"]
    doc["servers"][0]["footprint"]["artifact_bytes"] = 16 * 1024
    _, rows = grid(table(doc))
    assert rows["supported revisions"][0] == "2025-06-18"
    assert rows["artifact (MiB)"][0] == "16.0 KiB"


@pytest.mark.parametrize("path, value", [
    ("handshake_ms.median", "fast"), ("memory.idle_rss_bytes", True), ("shutdown", {}),
    ("protocol.supported_revisions", "2025-06-18"), ("memory.processes", "npm"),
    ("handshake_ms.median", float("nan")), ("tools.count", 2.5), ("server_info", [1]),
])
def test_unexpected_values_show_a_question_mark(path, value):
    doc = results()
    block, _, key = path.rpartition(".")
    (dig_dict(doc["servers"][1], block) if block else doc["servers"][1])[key] = value
    row = next(r for r in ROWS if r.path == path)
    label = row.label.format(payload="5 MiB", cache=", warm page cache", ci=" [96.9% CI]")
    assert grid(table(doc))[1][label][1] == "?"


def dig_dict(value: dict, path: str) -> dict:
    for key in path.split("."):
        value = value[key]
    return value


def flatten(value, prefix=()):
    """Every key path of a JSON value (dict keys and list indexes), depth first."""
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return
    for key, item in items:
        yield (*prefix, key)
        yield from flatten(item, (*prefix, key))


ODD = [None, "x", -1, 2.5, True, [], {}, [None, "x"], {"a": None}, float("inf")]


SHARDS = 4
"""The key paths are tried in this many tests (every SHARDS-th path each), which test
workers run side by side."""


@pytest.mark.parametrize("shard", range(SHARDS))
def test_no_json_value_anywhere_crashes_a_view(shard):
    base = results()
    paths = [p for p in flatten(base) if len(p) <= 4 and "samples" not in p]
    assert len(paths) > 300
    for i, path in list(enumerate(paths))[shard::SHARDS]:
        doc = copy.deepcopy(base)
        target = doc
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = ODD[i % len(ODD)]
        table(doc)
        table(doc, tablefmt="plain", transpose=True)
        exporter("long_csv").render(doc)
        exporter("long_json").render(doc)
        exporter("hyperfine_markdown").render(doc)
        exporter("hyperfine_csv").render(doc)
        exporter("hyperfine_json").render(doc)


def test_no_json_value_as_a_whole_block_crashes_the_table():
    for odd in ODD:
        table([results(servers=odd), results(environment=odd, settings=odd, startup=odd,
                                             argv=odd, created=odd)])


def test_rows_without_a_value_anywhere_are_left_out_unless_asked_for():
    doc = results()
    for row in doc["servers"]:
        for key in ("modern_ms", "server_info", "footprint"):
            row.pop(key, None)
        row["not_measured"] = {}
    _, rows = grid(table(doc))
    assert not any("2026 client" in label or "MiB" == label[-5:-2] for label in rows)
    assert "server name/version" not in rows and "artifact (MiB)" not in rows
    _, rows = grid(table(doc, metrics=["footprint.artifact_bytes", "handshake_ms.median"]))
    assert list(rows) == ["artifact (MiB)", COLD]
    assert rows["artifact (MiB)"] == ["-"] * 5


def test_metrics_pick_rows_by_key_path_in_order():
    header, rows = grid(table(results(), metrics=["memory.idle_rss_bytes", "handshake_ms.median"]))
    assert list(rows) == ["idle RSS (MiB)", COLD]
    with pytest.raises(UnknownMetric) as err:
        table(results(), metrics=["handshake_ms.p99"])
    assert "'handshake_ms.p99'" in str(err.value)
    assert "handshake_ms.median" in str(err.value) and "memory.idle_rss_bytes" in str(err.value)


def test_transpose_puts_servers_in_rows():
    header, rows = grid(table(results(), metrics=["status", "handshake_ms.median"], transpose=True))
    assert header == ["server", "status", COLD]
    assert rows["typescript"] == ["ok", "362.2 [317.3, 411.9]"]
    assert rows["needs-key"] == ["failed", "-"]


def test_plain_format_has_the_same_cells():
    text = table(results(), tablefmt="plain", metrics=["handshake_ms.median"])
    first = text.splitlines()[1].split()
    assert first[:8] == ["cold", "start,", "warm", "page", "cache:", "median", "[96.9%", "CI]"]
    assert "1441 [1388, 1574]" in text.splitlines()[1]


def second_file(**top) -> dict:
    doc = results(**top)
    doc["servers"] = doc["servers"][:2]
    block = doc["servers"][1]["handshake_ms"]  # the second file's rust: 0.55 ms faster
    for key in ("median", "mean", "min", "max", "p95", "ci_low", "ci_high"):
        if block.get(key) is not None:
            block[key] -= 0.55
    block["samples"] = [v - 0.55 for v in block["samples"]]
    return doc


def test_two_files_are_labelled():
    header, rows = grid(table([results(), second_file()], labels=["before", "after"],
                              metrics=["handshake_ms.median"]))
    assert header[1:] == ["c (floor) (before)", "rust (before)", "typescript (before)",
                          "python (before)", "needs-key (before)", "c (floor) (after)",
                          "rust (after)"]
    assert rows[COLD][-1] == "2.50 [2.06, 3.35]"
    other = second_file(environment=dict(results()["environment"], hostname="bench-2"))
    assert grid(table([results(), other]))[0][-1] == "rust (bench-2)"
    later = second_file(created="2026-12-01T09:00:00+00:00")
    assert grid(table([results(), later]))[0][-2:] == ["c (floor) (bench-1 2026-12-01)",
                                                      "rust (bench-1 2026-12-01)"]
    assert grid(table([results(), later]))[0][1] == "c (floor) (bench-1 2026-11-30)"
    with pytest.raises(ValueError, match="1 label.* for 2 file"):
        table([results(), later], labels=["one"])


def test_provenance_lines_end_the_markdown_output():
    later = second_file(created="2026-12-01T09:00:00+00:00",
                        argv=["mcpstart", "measure", "--", "sh", "-c", "python server.py"])
    lines = table([results(), later]).splitlines()
    assert lines[-2] == ("bench-1 2026-11-30: Measured on bench-1 at 2026-11-30T01:30:54+00:00 with "
                         "`mcpstart measure --runs 5 --only rust` (mcpstart 0.2.0)")
    assert lines[-1] == ("bench-1 2026-12-01: Measured on bench-1 at 2026-12-01T09:00:00+00:00 with "
                         "`mcpstart measure -- sh -c 'python server.py'` (mcpstart 0.2.0)")
    assert table(results(), tablefmt="plain").splitlines()[-1].endswith(
        "with mcpstart measure --runs 5 --only rust (mcpstart 0.2.0)")


def test_notes_under_the_table():
    text = table(results())
    notes = text.split("\n\n")
    assert notes[1] == ("AMD EPYC 7B13, 2 cores, Linux 6.1.0, load average 0.12 0.10 0.05; per "
                        "server: runs 5 after 1 warm-up, order interleave, pause 20 ms, "
                        "warm page cache")
    lines = notes[2].splitlines()
    # both warning shapes: {kind, metric, detail} and a plain string
    assert "- typescript warning: handshake_ms: skipped 4 stdout line(s) that are not JSON-RPC" in lines
    assert "- needs-key warning: stderr: FOO_API_KEY not set" in lines
    # a multi-line reason continues the Markdown list item
    at = lines.index("- needs-key failed: exited with code 1 after 52 ms before answering")
    assert lines[at + 1] == "  Error: FOO_API_KEY not set"
    assert "- needs-key not measured (n/a): footprint (no recipe: a bare command)" in lines
    assert ("- idle memory read after: c (floor) 0.6 s, rust 0.6 s, typescript 0.6 s, python 0.6 s "
            "(RSS within 1% for 300 ms)") in lines
    assert ("- PSS is lower than alone where other processes of this user run the server's "
            "executable: typescript (1 other process(es), not named)") in lines
    assert "4242" not in text and "other.js" not in text  # nothing outside mcpstart is named
    assert any(l.startswith("- PSS and USS depend on what else runs") for l in lines)
    assert notes[3].splitlines() == [
        "Startup budget: every server spawned at once, as an editor does at launch",
        "- ready: tools/list answered to its last page (initialize where it was not)",
        "- one after another: the servers' median times to ready add up to 1809 ms",
        "- all at once: the last server ready after 2104 ms (median)",
        "- total idle memory: RSS 170.2 MiB, PSS 150.0 MiB",
        "- Codex, Claude Code (limit 30 s): rust fits, typescript fits, python does not fit"]


def test_no_startup_section_without_startup_and_the_cold_cache_label():
    doc = results(startup=None)
    doc["settings"]["cache_state"] = "cold"
    text = table(doc)
    assert "Startup budget" not in text
    assert "cold start, cold page cache: median [96.9% CI] (ms)" in grid(text)[1]


def test_markdown_cells_escape_pipes_and_newlines():
    doc = results()
    doc["servers"][0]["name"] = "a|b"
    doc["servers"][0]["sdk_version"] = "1\n2"
    header, rows = grid(table(doc))
    assert header[1] == "a\\|b" and rows["SDK version"][0] == "1 2"
    assert len(header) == 6


# ---- exports --------------------------------------------------------------------------------

def find(records: list[dict], server: str, metric: str) -> dict:
    [record] = [r for r in records if r["server"] == server and r["metric"] == metric]
    return record


def test_long_form_records():
    records = records_of(results())
    assert set(records[0]) == {"server", "file", "metric", "value", "unit"}
    assert find(records, "typescript", "handshake_ms.median") == {
        "server": "typescript", "file": "bench-1", "metric": "handshake_ms.median",
        "value": 362.24, "unit": "ms"}
    assert find(records, "typescript", "handshake_ms.ci_high")["value"] == 411.9
    assert find(records, "rust", "memory.idle_rss_bytes")["value"] == int(5.1 * MIB)
    assert find(records, "rust", "memory.idle_rss_bytes")["unit"] == "B"
    assert find(records, "rust", "footprint.build_s")["unit"] == "s"
    assert find(records, "rust", "handshake_ms.n") == {
        "server": "rust", "file": "bench-1", "metric": "handshake_ms.n", "value": 5, "unit": ""}
    assert find(records, "typescript", "modern_ms.discover.median")["value"] is None
    assert find(records, "needs-key", "status")["value"] == "failed"
    assert find(records, "c", "protocol.supported_revisions")["value"] == "2024-11..2026-07"
    assert find(records, "typescript", "memory.processes")["value"].startswith("3: npm exec 91.0")
    assert find(records, "c", "shutdown.ms")["value"] == 0.42
    assert not [r for r in records if r["metric"] == "shutdown"]
    assert len({(r["server"], r["metric"]) for r in records}) == len(records)


def test_long_form_records_hold_the_startup_budget():
    doc = results()
    doc["startup"]["not_started"] = {"python": "exited with code 2 after 92 ms"}
    budget = [r for r in records_of(doc) if r["metric"].startswith("startup.")]
    assert budget[:2] == [
        {"server": None, "file": "bench-1", "metric": "startup.sequential_sum_ms",
         "value": 1808.6, "unit": "ms"},
        {"server": None, "file": "bench-1", "metric": "startup.concurrent_ms.median",
         "value": 2104.5, "unit": "ms"}]
    assert find(budget, None, "startup.idle_rss_bytes")["value"] == int(170.2 * MIB)
    assert [(r["server"], r["value"]) for r in budget if r["metric"] == "startup.fits.30s"] == [
        ("rust", True), ("typescript", True), ("python", False)]
    assert find(budget, "python", "startup.not_started")["value"] == "exited with code 2 after 92 ms"
    rows = list(csv.DictReader(io.StringIO(exporter("long_csv").render(doc))))
    assert {"server": "", "file": "bench-1", "metric": "startup.sequential_sum_ms",
            "value": "1808.6", "unit": "ms"} in rows
    assert not [r for r in records_of(doc, metrics=["handshake_ms.median"])
                if r["metric"].startswith("startup.")]


def test_long_form_csv_and_json_parse_back():
    records = records_of([results(), second_file()], labels=["a", "b"],
                              metrics=["handshake_ms.median", "payload.verified"])
    assert {r["metric"] for r in records} == {
        "handshake_ms.median", "handshake_ms.ci_low", "handshake_ms.ci_high",
        "handshake_ms.ci_level", "payload.verified", "payload.unicode_verified"}
    assert json.loads(exporter("long_json").render([results(), second_file()], ["a", "b"],
                                           ["handshake_ms.median", "payload.verified"])) == records
    rows = list(csv.DictReader(io.StringIO(exporter("long_csv").render(
        [results(), second_file()], ["a", "b"], ["handshake_ms.median", "payload.verified"]))))
    assert len(rows) == len(records) == 7 * 6
    rust_b = [r for r in rows if r["server"] == "rust" and r["file"] == "b"]
    assert {r["metric"]: r["value"] for r in rust_b}["handshake_ms.median"] == "2.5"
    assert {r["metric"]: r["value"] for r in rust_b}["payload.verified"] == "true"
    failed = [r for r in rows if r["server"] == "needs-key" and r["metric"] == "handshake_ms.median"]
    assert failed[0]["value"] == "" and failed[0]["unit"] == "ms"


def test_hyperfine_json_is_in_seconds():
    data = json.loads(exporter("hyperfine_json").render(results()))
    assert [r["command"] for r in data["results"]] == ["c", "rust", "typescript", "python"]
    rust = data["results"][1]
    samples = [2.61, 3.05, 2.98, 3.4, 3.9]
    assert rust["mean"] == pytest.approx(statistics.fmean(samples) / 1000)
    assert rust["stddev"] == pytest.approx(statistics.stdev(samples) / 1000)
    assert rust["median"] == pytest.approx(0.00305)
    assert (rust["min"], rust["max"]) == (pytest.approx(0.00261), pytest.approx(0.0039))
    assert rust["times"] == pytest.approx([s / 1000 for s in samples])
    assert rust["user"] is None and rust["system"] is None


def test_hyperfine_csv_columns():
    doc = results()
    doc["servers"][0]["handshake_ms"] = stats([1.5])
    rows = list(csv.reader(io.StringIO(exporter("hyperfine_csv").render(doc))))
    assert rows[0] == ["command", "mean", "stddev", "median", "user", "system", "min", "max"]
    assert rows[1] == ["c", "0.0015", "0", "0.0015", "", "", "0.0015", "0.0015"]
    assert rows[3][0] == "typescript"
    assert float(rows[3][3]) == pytest.approx(0.36224)
    assert float(rows[3][2]) == pytest.approx(statistics.stdev([317.3, 362.24, 380.0, 411.9, 350.1]) / 1000)


def test_hyperfine_markdown_table():
    lines = exporter("hyperfine_markdown").render(results()).splitlines()
    assert lines[:2] == ["| Command | Mean [ms] | Min [ms] | Max [ms] | Relative |",
                         "|:---|---:|---:|---:|---:|"]
    assert lines[2] == "| `c` | 1.2 ± 0.0 | 1.2 | 1.3 | 1.00 |"
    c, rust = [1.21, 1.23, 1.25, 1.3, 1.19], [2.61, 3.05, 2.98, 3.4, 3.9]
    ratio = statistics.fmean(rust) / statistics.fmean(c)
    error = ratio * ((statistics.stdev(rust) / statistics.fmean(rust)) ** 2
                     + (statistics.stdev(c) / statistics.fmean(c)) ** 2) ** 0.5
    assert lines[3] == f"| `rust` | 3.2 ± 0.5 | 2.6 | 3.9 | {ratio:.2f} ± {error:.2f} |"
    assert len(lines) == 6
    slow_first = results()
    slow_first["servers"].reverse()
    lines = exporter("hyperfine_markdown").render(slow_first).splitlines()
    assert lines[0].startswith("| Command | Mean [s] |")
    assert lines[2].startswith("| `python` | 1.461 ± 0.077 | 1.388 | 1.574 | ")


# ---- mcpstart report ------------------------------------------------------------------------

def report(*args):
    return CliRunner().invoke(main, ["report", *map(str, args)])


def write(path, doc) -> str:
    path.write_text(json.dumps(doc))
    return str(path)


def test_report_prints_the_table_of_several_files(tmp_path):
    a, b = write(tmp_path / "a.json", results()), write(tmp_path / "b.json", second_file())
    result = report(a, b, "--label", "before", "--label", "after", "--metrics",
                    "handshake_ms.median", "--metrics", "status", "--transpose")
    assert result.exit_code == 0, result.output
    header, rows = grid(result.output)
    assert header == ["server", COLD, "status"]
    assert rows["rust (after)"] == ["2.50 [2.06, 3.35]", "ok"]
    assert rows["needs-key (before)"] == ["-", "failed"]


def test_report_long_form_csv_and_json(tmp_path):
    a = write(tmp_path / "a.json", results())
    out = report(a, "--format", "csv", "--metrics", "memory.idle_rss_bytes")
    assert out.exit_code == 0, out.output
    rows = list(csv.DictReader(io.StringIO(out.output)))
    assert [(r["server"], r["value"], r["unit"]) for r in rows] == [
        ("c", str(int(5.1 * MIB)), "B"), ("rust", str(int(5.1 * MIB)), "B"),
        ("typescript", str(int(161.3 * MIB)), "B"), ("python", str(int(5.1 * MIB)), "B"),
        ("needs-key", "", "B")]
    out = report(a, "--format", "json", "--metrics", "handshake_ms.n")
    assert [(r["server"], r["value"]) for r in json.loads(out.output)][:2] == [("c", 5), ("rust", 5)]


def test_report_writes_hyperfine_exports(tmp_path):
    a = write(tmp_path / "a.json", results())
    result = report(a, "--export-json", tmp_path / "h.json", "--export-csv", tmp_path / "h.csv",
                    "--export-markdown", tmp_path / "h.md")
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "h.json").read_text())
    assert data["results"][2]["command"] == "typescript"
    assert data["results"][2]["median"] == pytest.approx(0.36224)
    assert (tmp_path / "h.csv").read_text().startswith("command,mean,stddev,median,user,system,")
    assert (tmp_path / "h.md").read_text().splitlines()[2].startswith("| `c` | 1.2 ± 0.0 |")
    bad = report(a, "--export-json", tmp_path / "missing" / "h.json")
    assert bad.exit_code == 2 and "cannot write" in bad.output


@pytest.mark.parametrize("args, message", [
    (["{tmp}/none.json"], "none.json"),
    (["{tmp}/broken.json"], "broken.json"),
    (["{tmp}/other.json"], "not an mcpstart results file"),
    (["{tmp}/a.toml"], "report reads the JSON results file"),
    (["{tmp}/a.json", "--label", "x", "--label", "y"], "2 label(s) for 1 file(s)"),
    (["{tmp}/a.json", "--metrics", "handshake_ms.p99"], "known: status, server_info"),
    (["{tmp}/a.json", "--format", "githb"], "'githb' is not csv, json or one of"),
])
def test_report_refuses_bad_input_with_exit_2(tmp_path, args, message):
    write(tmp_path / "a.json", results())
    (tmp_path / "broken.json").write_text("{not json")
    write(tmp_path / "other.json", {"schema": "something/else"})
    result = report(*[a.replace("{tmp}", str(tmp_path)) for a in args])
    assert result.exit_code == 2
    assert message in result.output


def test_report_help_ends_with_an_example():
    text = CliRunner().invoke(main, ["report", "--help"]).output.rstrip().splitlines()
    assert text[-3].strip().startswith("Example:")
    assert text[-2].strip().startswith("mcpstart report laptop.json ci.json --label laptop")


def test_the_phase_rule_is_said_under_the_table_only_where_a_file_records_it():
    from mcpstart.measure.settings import PHASE_RULE

    doc = results()
    assert "tools/list and first call answered" not in table(doc)  # an older file: no rule
    doc["settings"]["phase_rule"] = PHASE_RULE
    assert f"- tools/list and first call answered: {PHASE_RULE}" in table(doc).splitlines()
    assert "tools/list and first call answered" not in table(doc, metrics=["handshake_ms.median"])


# ---- the compact terminal table, notes once ----------------------------------------------------

REFERENCE = Path(__file__).parent.parent / "benchmarks" / "figures" / "results.json"
"""A run of the reference set (docs/figures.md)."""


def test_the_compact_table_fits_100_columns_for_the_reference_set():
    doc = json.loads(REFERENCE.read_text())
    compact, full = table(doc, compact=True), table(doc)
    width = lambda text: max(len(line) for line in text.split("\n\n")[0].splitlines())
    assert width(compact) <= 100 < width(full)
    header, rows = grid(compact)
    assert header == ["metric", "c (floor)", "go", "java", "python", "rust", "typescript"]
    medians = [s["handshake_ms"]["median"] for s in doc["servers"]]  # c, go, ... in file order
    places = [2 if m < 10 else 1 if m < 1000 else 0 for m in medians]  # docs/cli.md
    assert rows["cold start, median (ms)"] == [f"{m:.{p}f}" for m, p in zip(medians, places)]
    assert all(re.fullmatch(r"[\d.]+", value) for value in rows["cold start, median (ms)"])
    assert set(rows) < set(grid(full)[1]) | {"cold start, median (ms)",
                                              "first call from spawn (ms)",
                                              "warm round trip p50 (ms)",
                                              "peak RSS, 5 MiB call (MiB)"}
    assert "- a compact table: --full (or stdout to a file) shows every row" in compact
    assert "--full" not in full
    assert "tools.tokens" not in compact  # the notes of rows it does not show are left out
    assert table(doc, compact=True, metrics=["status"]) == table(doc, metrics=["status"])


def test_a_note_servers_share_is_printed_once_naming_them():
    doc = results()
    for row in doc["servers"][:3]:
        row["not_measured"] = {**row.get("not_measured", {}), "tools.tokens": "no tokenizer"}
    twin = copy.deepcopy(doc["servers"][-1])
    twin["name"] = "needs-key-2"
    doc["servers"].append(twin)
    lines = table(doc).split("\n\n")[2].splitlines()
    assert "- needs-key, needs-key-2 failed: exited with code 1 after 52 ms before answering" in lines
    assert "- needs-key, needs-key-2 warning: stderr: FOO_API_KEY not set" in lines
    assert [n for n in lines if "tools.tokens" in n] == [
        "- c (floor), rust, typescript not measured (n/a): tools.tokens (no tokenizer)"]
    assert len(lines) == len(set(lines))


@pytest.mark.parametrize("width,transpose", [(40, False), (60, False), (80, False),
                                             (80, True)])
def test_a_table_wider_than_the_terminal_is_cut_into_blocks_of_columns_that_fit(width,
                                                                                transpose):
    """Every server (transposed: every metric) once, in order, each row's cells as in the
    whole table; each block as wide as the terminal at most, unless it holds one column
    alone; what is under the table wrapped to the width, its words unchanged."""
    doc = json.loads(REFERENCE.read_text())
    whole = table(doc, compact=True, transpose=transpose).split("\n\n")
    cut = table(doc, compact=True, transpose=transpose, width=width).split("\n\n")
    blocks, under = cut[:len(cut) - len(whole) + 1], cut[len(cut) - len(whole) + 1:]
    assert [u.split() for u in under] == [w.split() for w in whole[1:]] and len(blocks) > 1
    lines = [line for u in under for line in u.splitlines()]
    assert all(len(line) <= width or " " not in line.strip() for line in lines)
    assert max(len(line) for w in whole[1:] for line in w.splitlines()) > width  # wrapped
    header, rows = grid(whole[0])
    grids = [grid(block) for block in blocks]
    assert [name for head, _ in grids for name in head[1:]] == header[1:]
    assert {label: [c for _, r in grids for c in r[label]] for label in rows} == rows
    assert all(max(map(len, block.splitlines())) <= width or len(head) == 2
               for block, (head, _) in zip(blocks, grids))
    fits = max(map(len, whole[0].splitlines()))
    assert table(doc, compact=True, transpose=transpose, width=fits).startswith(whole[0] + "\n\n")
    assert "\n\n" not in table(doc, "tsv", compact=True, width=width)  # one table, one header


def test_measure_and_report_print_the_compact_table_on_a_terminal_only(monkeypatch, tmp_path):
    import click

    tty = []
    monkeypatch.setenv("COLUMNS", "80")  # the terminal's width, which the table is cut to
    real = click.get_text_stream
    monkeypatch.setattr(click, "get_text_stream", lambda name, *a, **k: type(
        "S", (), {"isatty": lambda self: bool(tty)})() if name == "stdout" else real(name, *a, **k))
    piped = CliRunner().invoke(main, ["report", str(REFERENCE)])
    tty.append(True)
    terminal = CliRunner().invoke(main, ["report", str(REFERENCE)])
    full = CliRunner().invoke(main, ["report", str(REFERENCE), "--full"])
    assert piped.exit_code == terminal.exit_code == full.exit_code == 0
    assert piped.stdout == full.stdout == table(json.loads(REFERENCE.read_text())) + "\n"
    assert terminal.stdout == table(json.loads(REFERENCE.read_text()), compact=True,
                                    width=80) + "\n"


def test_the_session_memory_row_says_its_figure_is_a_fitted_slope():
    """The figure is the least-squares slope over the readings, which the first and last
    readings beside it need not give (5.1 MiB over 100 would be 52 KiB)."""
    doc = json.loads(REFERENCE.read_text())
    doc["servers"][0]["http"] = {"sessions_leak": {
        "sessions": 100, "delete_status": [200], "rss_before_bytes": int(24.2 * 2**20),
        "rss_after_bytes": int(29.3 * 2**20), "bytes_per_session": 37355.52,
        "points": [[0, int(24.2 * 2**20)], [50, int(28.9 * 2**20)], [100, int(29.3 * 2**20)]]}}
    line = next(l for l in table(doc).splitlines() if "kept per session" in l)
    assert "(slope fitted to RSS readings; RSS first -> last)" in line
    assert "36.5 KiB (24.2 -> 29.3 MiB over 100)" in line


@pytest.mark.parametrize("edit, said", [
    (lambda b: b.update(samples=[-5.0, 1e9, *b["samples"][2:]]),
     "servers[1].handshake_ms.median: 3.05"),
    (lambda b: b.update(median=2.5), "servers[1].handshake_ms.median: 2.5 does not fit"),
    (lambda b: b.update(n=b["n"] + 5, min=b["min"] + 0.1), "servers[1].handshake_ms.min"),
])
def test_a_summary_its_samples_do_not_give_is_refused_by_report_and_compare(tmp_path, edit,
                                                                            said):
    """A hand-edited or damaged statistics block (report shows the stored figures, compare
    tests the samples: they would disagree) exits 2 naming the key; a part of a long series
    kept (n above the samples' count) must still lie within min and max."""
    doc = results()
    edit(doc["servers"][1]["handshake_ms"])
    path = write(tmp_path / "edited.json", doc)
    for result in (report(path), CliRunner().invoke(main, ["compare", path, path])):
        assert result.exit_code == 2 and said in result.output, result.output


def test_md_and_markdown_are_the_github_format(tmp_path):
    path = write(tmp_path / "r.json", results())
    github = report(path, "--format", "github")
    assert github.exit_code == 0
    for name in ("md", "markdown"):
        assert report(path, "--format", name).output == github.output
