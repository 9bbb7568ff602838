"""compare's "what changed in the start" (docs/compare.md): the distributions whose import
time changed beyond noise, the ones added and gone, and the CPU/wait split's change, from
results rows built here (no process runs)."""

import json

from click.testing import CliRunner

from mcpstart.cli import main
from mcpstart.measure import imports
from mcpstart.stats import summarize
from mcpstart.views.compare import compare, render
from test_compare import results, server, write
from test_start_attribution import ENV, IMPORTTIME


def dist(name: str, samples: list[float]) -> dict:
    """A distribution whose self time per start is ``samples``."""
    return {"name": name, "self_ms": sorted(samples)[1], "cumulative_ms": 2 * max(samples),
            "samples": samples, "modules": 3, "installed": True, "http": False}


def start_blocks(dists: list[dict], cpu: list[float], start_ms: float = 600.0,
                 share: float = 0.8) -> dict:
    """A row's ``imports`` (profiled start ``start_ms``, its imports the sum of ``dists``
    per start) and ``start_usage`` (CPU samples ``cpu``) blocks."""
    totals = [sum(d["samples"][i] for d in dists) for i in range(3)]
    return {"imports": {"runs": 3, "instrumented_ms": start_ms, "uninstrumented_ms": 500.0,
                        "import_ms": sorted(totals)[1], "import_samples": totals,
                        "interpreter_ms": 5.0, "share": 0.5, "distributions": dists,
                        "other_transport": None},
            "start_usage": {"window": "spawn to the last answer", "cpu_ms": summarize(cpu),
                            **{k: summarize([0.0] * 3) for k in (
                                "user_ms", "system_ms", "minor_faults", "major_faults",
                                "voluntary_switches", "involuntary_switches", "read_bytes")},
                            "cpu_share": share, "waiting_share": 1 - share, "processes": []}}


OLD = start_blocks([dist("mcp", [200.0, 205.0, 210.0]), dist("pydantic", [100.0, 104.0, 98.0]),
                    dist("tiny", [1.0, 1.1, 1.2]), dist("anyio", [20.0, 21.0, 19.0])],
                   cpu=[400.0, 405.0, 410.0])
NEW = start_blocks([dist("mcp", [260.0, 270.0, 265.0]),  # +60 ms, every start beyond OLD's
                    dist("pydantic", [101.0, 97.0, 103.0]),  # overlaps OLD: noise
                    dist("tiny", [3.0, 3.1, 3.2]),  # beyond OLD's, but under 1% of the start
                    dist("starlette", [40.0, 42.0, 41.0])],  # anyio gone, starlette added
                   cpu=[500.0, 510.0, 505.0], share=0.9)


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
    assert mcp["p"] == 0.1 and mcp["changed"]  # 2 / C(6, 3): every NEW start beyond OLD's
    assert found["added"] == [{"name": "starlette", "self_ms": 41.0, "cumulative_ms": 84.0}]
    assert found["gone"] == [{"name": "anyio", "self_ms": 20.0, "cumulative_ms": 42.0}]
    assert found["tested"] and found["changed"] and found["n_old"] == 3


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
    assert "mcp: 205.0 ms -> 265.0 ms (+60.0 ms, p = 0.1)" in text
    assert "added (self, cumulative): starlette 41.0 ms, 84.0 ms" in text
    assert "gone (self, cumulative): anyio 20.0 ms, 42.0 ms" in text
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
