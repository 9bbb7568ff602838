"""compare's "what changed in the start" (docs/compare.md): the distributions whose import
time changed beyond noise, the ones added and gone, and the CPU/wait split's change, from
results rows built here (no process runs)."""

import json
import math

from click.testing import CliRunner

from mcpstart.cli import main
from mcpstart.measure import imports
from mcpstart.stats import holm, summarize
from mcpstart.views.compare import compare, render
from test_compare import results, server, write
from test_start_attribution import ENV, IMPORTTIME


def dist(name: str, samples: list[float]) -> dict:
    """A distribution whose self time per start is ``samples``."""
    return {"name": name, "self_ms": sorted(samples)[len(samples) // 2],
            "cumulative_ms": 2 * max(samples), "samples": samples, "modules": 3,
            "installed": True, "http": False}


def start_blocks(dists: list[dict], cpu: list[float], start_ms: float = 600.0,
                 share: float = 0.8) -> dict:
    """A row's ``imports`` (profiled start ``start_ms``, its imports the sum of ``dists``
    per start) and ``start_usage`` (CPU samples ``cpu``) blocks."""
    n = len(dists[0]["samples"])
    totals = [sum(d["samples"][i] for d in dists) for i in range(n)]
    return {"imports": {"runs": n, "instrumented_ms": start_ms, "uninstrumented_ms": 500.0,
                        "import_ms": sorted(totals)[n // 2], "import_samples": totals,
                        "interpreter_ms": 5.0, "share": 0.5, "distributions": dists,
                        "other_transport": None},
            "start_usage": {"window": "spawn to the last answer", "cpu_ms": summarize(cpu),
                            **{k: summarize([0.0] * 3) for k in (
                                "user_ms", "system_ms", "minor_faults", "major_faults",
                                "voluntary_switches", "involuntary_switches", "read_bytes")},
                            "cpu_share": share, "waiting_share": 1 - share, "processes": []}}


def spread(median: float, step: float = 1.0) -> list[float]:
    """Seven samples around ``median``, in a shuffled order."""
    return [median + step * d for d in (0, -2, 3, -1, 2, -3, 1)]


OLD = start_blocks([dist("mcp", spread(205.0)), dist("pydantic", spread(100.0)),
                    dist("tiny", spread(1.0, 0.01)), dist("anyio", spread(20.0))],
                   cpu=[400.0, 405.0, 410.0])
NEW = start_blocks([dist("mcp", spread(265.0)),  # +60 ms, every start beyond OLD's
                    dist("pydantic", spread(100.5)),  # overlaps OLD: noise
                    dist("tiny", spread(3.0, 0.01)),  # beyond OLD's, but under 1% of the start
                    dist("starlette", spread(41.0))],  # anyio gone, starlette added
                   cpu=[500.0, 510.0, 505.0], share=0.9)
SEPARATED = 2 / math.comb(14, 7)
"""The two-sided p of 7 starts against 7, each of one side beyond each of the other."""


def _change(old=OLD, new=NEW, threshold: float = 10.0) -> dict:
    comparison = compare(results(server("python", **old)), results(server("python", **new)),
                         thresholds={"time": threshold, "memory": 10, "footprint": 10,
                                     "tools": 10, "load": 10})
    (change,) = comparison.start_changes
    return change


def test_import_changes_beyond_noise_added_and_gone():
    found = _change()["imports"]
    assert [d["name"] for d in found["distributions"]] == ["mcp"]
    mcp = found["distributions"][0]
    assert (mcp["old_ms"], mcp["new_ms"], mcp["change_ms"]) == (205.0, 265.0, 60.0)
    # every NEW start beyond OLD's; adjusted over the three distributions both sides have
    assert mcp["p_raw"] == SEPARATED and mcp["p"] == 3 * SEPARATED and mcp["changed"]
    assert found["family"] == 3 and found["largest"] == mcp
    assert found["added"] == [{"name": "starlette", "self_ms": 41.0, "cumulative_ms": 88.0}]
    assert found["gone"] == [{"name": "anyio", "self_ms": 20.0, "cumulative_ms": 46.0}]
    assert found["tested"] and found["changed"] and found["n_old"] == 7


def test_a_separation_that_chance_explains_is_inconclusive():
    """3 starts against 3 separate completely with p = 0.1 alone, which one distribution in
    ten does by chance: over the three tested it is 0.3, so nothing is named, and the text
    says so with the p and what more starts would reach."""
    cut = lambda blocks: start_blocks([dist(d["name"], d["samples"][:3])  # noqa: E731
                                       for d in blocks["imports"]["distributions"]],
                                      cpu=[400.0, 405.0, 410.0])
    found = _change(old=cut(OLD), new=cut(NEW))["imports"]
    assert found["distributions"] == []
    assert (found["largest"]["name"], found["largest"]["p_raw"]) == ("mcp", 0.1)
    assert round(found["largest"]["p"], 6) == 0.3
    text = render(compare(results(server("python", **cut(OLD))),
                          results(server("python", **cut(NEW)))))
    assert ("first difference inconclusive (p = 0.3 over 3 distributions, 0.1 alone): the "
            "largest, mcp +60.0 ms, is within noise; 3 vs 3 starts reach p = 0.1 at least") in text


def test_holm_adjusts_each_p_by_the_figures_not_yet_passed():
    assert holm([0.01, 0.04, 0.03, 0.5]) == [0.04, 0.09, 0.09, 0.5]
    assert holm([0.2, 0.3]) == [0.4, 0.4]  # never below the one before it
    assert holm([]) == []


def test_a_change_within_the_threshold_is_not_named():
    assert _change(threshold=50.0)["imports"]["distributions"] == []  # mcp +29%


def test_cpu_against_waiting_change():
    cpu = _change()["cpu"]
    assert (cpu["old_ms"], cpu["new_ms"], cpu["p"], cpu["changed"]) == (405.0, 505.0, 0.1, True)
    assert (cpu["old_cpu_share"], cpu["new_cpu_share"]) == (0.8, 0.9)
    assert round(cpu["new_waiting_share"], 6) == 0.1


def test_files_without_per_start_samples_list_only_added_and_gone():
    strip = lambda blocks: {**blocks, "imports": {  # noqa: E731
        **{k: v for k, v in blocks["imports"].items() if k != "import_samples"},
        "distributions": [{k: v for k, v in d.items() if k != "samples"}
                          for d in blocks["imports"]["distributions"]]}}
    found = _change(old=strip(OLD))["imports"]
    assert not found["tested"] and found["p"] is None and found["distributions"] == []
    assert [d["name"] for d in found["added"]] == ["starlette"]


def test_shown_in_text_and_json_and_never_gated(tmp_path):
    comparison = compare(results(server("python", **OLD)), results(server("python", **NEW)))
    assert comparison.exit_status == 0  # the same timed figures: causes are not a gate
    text = render(comparison)
    assert "mcp: 205.0 ms -> 265.0 ms (+60.0 ms, p = 0.0017 over 3)" in text
    assert "added (self, cumulative): starlette 41.0 ms, 88.0 ms" in text
    assert "gone (self, cumulative): anyio 20.0 ms, 46.0 ms" in text
    assert "CPU against waiting 80%/20% -> 90%/10%" in text
    path = write(tmp_path / "r.json", results(server("python@2.2.0", **OLD),
                                              server("python", **NEW)))
    out = CliRunner().invoke(main, ["compare", path, "--old-variant", "python@2.2.0",
                                    "--new-variant", "python", "--format", "json"])
    (change,) = json.loads(out.output)["start_changes"]
    assert change["server"] == "python@2.2.0 -> python"
    assert change["imports"]["distributions"][0]["name"] == "mcp"


def test_the_imports_block_keeps_each_starts_samples():
    roots = imports.parse(IMPORTTIME)
    one = imports.attribute(roots, ENV)
    two = imports.attribute(roots[:-1], ENV)  # a start without the server's own module
    block = imports.block([(40.0, one), (50.0, two)], ENV, 30.0, "stdio")
    assert block["import_samples"] == [31.0, 24.0]
    samples = {d["name"]: d["samples"] for d in block["distributions"]}
    assert samples["sdk"] == [9.0, 9.0] and samples[imports.NOT_INSTALLED] == [7.0, 0.0]
