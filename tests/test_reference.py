"""End to end: build the six reference servers from build-recipes/ into mcpstart's build cache
($MCPSTART_CACHE_DIR, else the user cache: a run reuses unchanged builds; test_build.py covers
a fresh build), measure them through the CLI with short waits, and check every field of the
results file against independent readings; the default settle rule is checked once, on the
TypeScript server. Slow with an empty cache (minutes: a cold Rust release build). With
MCPSTART_REQUIRE_ALL=1 (CI) a missing toolchain fails instead of skipping."""

import json
import os
import shutil
import time
from pathlib import Path

import psutil
import pytest
from click.testing import CliRunner

from mcpstart.cli import main
from mcpstart.measure import memory
from mcpstart.wire import initialize_request
from mcpstart.command import Command
from conftest import fast, start
from mcpstart.measure.settings import Settings
from mcpstart.targets.recipes import load_recipes

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).parent.parent
RECIPES = ROOT / "build-recipes"
MIB = 1024 * 1024
RUNS, WARMUP = 3, 1
REQUIRED = os.environ.get("MCPSTART_REQUIRE_ALL") == "1"
SDKS = ("go", "java", "python", "rust", "typescript")
NAMES = ("c", *SDKS)
# whether each reference server answers with structuredContent (the shape its README teaches;
# see servers/*/)
STRUCTURED = {"c": False, "python": True, "go": True, "java": False, "rust": False,
              "typescript": False}
HANDSHAKE_ERA = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]
# server/discover's supportedVersions, as probed by hand, in the servers' own order
DISCOVER = {"c": [*HANDSHAKE_ERA, "2026-07-28"], "python": ["2026-07-28"],
            "typescript": ["2026-07-28"], "go": ["2026-07-28", *reversed(HANDSHAKE_ERA)],
            "rust": [*HANDSHAKE_ERA, "2026-07-28"], "java": None}
LEGACY_ONLY = {"java"}  # the Java SDK 2.1.0 answers server/discover with -32601
NO_LOCK = {"c", "java"}  # Maven has no lock file
SHORT = fast(waits=Settings().waits, probe_grace_s=Settings().probe_grace_s)
"""The waits of the measures: a short settle rule (the default settle rule is
test_node_idle_memory_is_read_after_it_settles's), the graces a user gets (a server that
exits at once waits none of them)."""


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    recipes = load_recipes(RECIPES)
    missing = [t.version_argv[0] for r in recipes for t in r.toolchains
               if shutil.which(t.version_argv[0]) is None]
    if missing and not REQUIRED:
        pytest.skip(f"toolchains not found: {', '.join(missing)} (set MCPSTART_REQUIRE_ALL=1 "
                    "to fail instead)")
    folder = tmp_path_factory.mktemp("reference")
    args = ["--recipes", str(RECIPES)]
    with pytest.MonkeyPatch.context() as patch:  # a module fixture: before conftest's FAST
        patch.setattr("mcpstart.measure.settings.BASE", SHORT)
        result = CliRunner().invoke(main, ["measure", "--runs", str(RUNS), "--warmup",
                                           str(WARMUP), "-o", str(folder / "results.json"),
                                           "--require-all", *args])
        again = CliRunner().invoke(main, ["build", *args])
        cold = CliRunner().invoke(main, ["measure", "--runs", str(RUNS), "--only", "go",
                                         "--cache-state", "cold", "--round-trips", "0",
                                         "-o", str(folder / "cold.json"), *args])
    return (result, json.loads((folder / "results.json").read_text()), again, recipes,
            cold, json.loads((folder / "cold.json").read_text()))


def rows(data) -> dict:
    return {s["name"]: s for s in data["servers"]}


def test_measure_succeeds_and_prints_a_filled_table(measured):
    result, data, _, recipes, _, _ = measured
    assert result.exit_code == 0, result.output
    table = result.stdout
    header = table.splitlines()[0]
    assert all(r.name in header for r in recipes)
    lines = [line for line in table.splitlines() if line.startswith("| ")]
    assert len(lines) >= 35
    for line in lines[1:]:
        cells = [c.strip() for c in line.strip("|").split("|")][1:]
        assert "-" not in cells, f"empty cell in row: {line}"
    assert "cold start a 2026 client sees: discover" in table
    assert "first tool call answered from spawn" in table


def test_second_build_does_no_work(measured):
    _, _, again, recipes, _, _ = measured
    assert again.exit_code == 0, again.output
    assert again.stdout.count(": cached (") == len(recipes)
    assert "nothing to do" in again.stderr


def test_run_metadata(measured):
    _, data, _, _, _, _ = measured
    assert data["schema"] == "mcpstart/1"
    assert data["mcpstart_version"] and data["created"].endswith("+00:00")
    assert data["argv"][:2] == ["mcpstart", "measure"]
    env = data["environment"]
    assert env["os"] == "Linux" and env["cpu_count"] >= 1 and len(env["load_average"]) == 3
    assert {"go", "python3", "cargo", "rustc", "node", "npm", "cc", "java", "javac",
            "mvn"} <= set(env["toolchains"])
    settings = data["settings"]
    assert settings["runs"] == RUNS and settings["warmup"] == WARMUP
    assert settings["payload_bytes"] == 5 * MIB and settings["requested_revision"] == "2025-11-25"
    assert settings["order"] == "interleave" and settings["pause_ms"] == 50  # --pause's default
    # every round runs each server once, each series in its own rounds; a legacy-only
    # server has no modern series
    for series, names in (("handshake", NAMES), ("modern", set(NAMES) - LEGACY_ONLY)):
        rounds = [[r["server"] for r in data["run_sequence"]
                   if r["round"] == n and r["series"] == series] for n in range(RUNS + WARMUP)]
        assert all(sorted(ran) == sorted(names) for ran in rounds), series


@pytest.mark.parametrize("name", NAMES)
def test_every_field_of_a_reference_server(measured, name):
    _, data, _, recipes, _, _ = measured
    row = rows(data)[name]
    recipe = next(r for r in recipes if r.name == name)
    assert row["status"] == "ok" and row["reason"] is None, row["reason"]
    assert row["language"] == name and row["sdk"] == recipe.sdk
    if recipe.sdk_version:
        assert row["sdk_version"].lstrip("v") == recipe.sdk_version.lstrip("v")
    assert row["server_info"]["name"] and row["server_info"]["version"]
    assert row["server_capabilities"]["tools"] is not None

    command = row["command"]
    assert Path(command["argv"][-1]).exists() and Path(command["cwd"]).is_dir()
    assert command["env_keys"] == []

    hs = row["handshake_ms"]
    assert hs["n"] == RUNS and len(hs["samples"]) == RUNS and len(hs["warmup_samples"]) == WARMUP
    assert 0 < hs["min"] <= hs["median"] <= hs["max"] < 60_000
    assert hs["ci_low"] == hs["min"] and hs["ci_high"] == hs["max"] and hs["ci_level"] == 0.75
    phases = row["phases_ms"]
    for fb, h, tl, fc in zip(phases["first_byte"]["samples"], hs["samples"],
                             phases["tools_list"]["samples"], phases["first_call"]["samples"]):
        assert 0 < fb <= h < tl < fc
    if name in LEGACY_ONLY:
        assert row["modern_ms"] is None and "modern_ms" in row["not_measured"]
    else:
        assert row["modern_ms"]["discover"]["n"] == RUNS
        assert row["modern_ms"]["first_call"]["n"] == RUNS

    assert row["round_trip_ms"]["n"] == 100 and 0 < row["round_trip_ms"]["p50"] <= \
        row["round_trip_ms"]["p95"]

    memory = row["memory"]
    assert memory["peak_method"] == "vmhwm"
    assert 0 < memory["idle_uss_bytes"] <= memory["idle_pss_bytes"] <= memory["idle_rss_bytes"]
    # the 5 MiB request and its reversal must pass through the server's memory
    assert memory["peak_rss_bytes_payload"] >= memory["idle_rss_bytes"] + 5 * MIB
    assert len(memory["processes"]) == 1
    assert 0 <= memory["settle_s"] < SHORT.settle.max_s + 1  # the default rule:
    # test_node_idle_memory_is_read_after_it_settles

    payload = row["payload"]
    assert payload["request_bytes"] == 5 * MIB
    assert payload["response_bytes"] >= (10 if STRUCTURED[name] else 5) * MIB
    assert payload["verified"] is True and payload["unicode_verified"] is True
    assert payload["round_trip_ms"] > 0 and payload["is_error"] is False

    assert row["tools"]["count"] == 1 and row["tools"]["list_bytes"] > 100
    assert row["tools"]["output_schema"] is STRUCTURED[name]
    assert row["tools"]["with_output_schema"] == int(STRUCTURED[name])
    assert row["tools"]["structured_content"] is STRUCTURED[name]

    footprint = row["footprint"]
    assert 0 < footprint["artifact_bytes"] < footprint["dev_tree_bytes"]
    assert footprint["tool_lines"] >= 5 and footprint["build_cached"] in (True, False)
    if name in NO_LOCK:
        assert footprint["lock_count"] is None and "footprint.lock_count" in row["not_measured"]
    if name == "c":
        assert footprint["dependency_count"] == 0
    elif name not in NO_LOCK:
        assert 1 <= footprint["dependency_count"] <= footprint["lock_count"]

    protocol = row["protocol"]
    assert protocol["requested_revision"] == protocol["negotiated_revision"] == "2025-11-25"
    assert protocol["discover_versions"] == DISCOVER[name]
    if name in LEGACY_ONLY:
        assert protocol["era"] == "legacy"
        assert protocol["supported_revisions"] == HANDSHAKE_ERA
    else:
        assert protocol["era"] == "dual"
        assert protocol["supported_revisions"] == [*HANDSHAKE_ERA, "2026-07-28"]
    outcomes = {(r["method"], r["requested"]): (r["outcome"], r["answered"])
                for r in protocol["matrix"]}
    for revision in HANDSHAKE_ERA:
        assert outcomes[("initialize", revision)] == ("answered", revision)
    assert outcomes[("initialize", "2099-12-31")] == ("answered", "2025-11-25")
    # initialize asking 2026-07-28: every default version negotiates down (rmcp 3.1.4 was
    # the one that accepted it, docs/figures.md, "The published comparison")
    modern = dict(protocol["initialize_modern"])
    assert modern.pop("wait_s") == protocol["probe_wait"]["s"] >= 5  # the floor, or 3x a start
    assert modern == {"outcome": "answered", "answered": "2025-11-25", "error_code": None,
                      "error_message": None}
    assert row["sdk_source"] is None if name == "c" else row["sdk_source"]["kind"] == "default"
    assert row["shutdown"]["how"] == "eof" and row["shutdown"]["ms"] < 2000
    assert row["orphans"] == []


def test_floor_server_is_the_floor(measured):
    _, data, _, _, _, _ = measured
    by_name = rows(data)
    floor = by_name["c"]["handshake_ms"]["median"]
    assert floor < 5  # fork, exec, a pipe and one JSON line
    assert all(by_name[n]["handshake_ms"]["median"] > floor for n in SDKS)
    # it exits on EOF at once (pidfd-timed), against the 2000 ms grace of a server that does
    # not; one sample, which a busy CI machine read at 8.3 ms
    assert by_name["c"]["shutdown"]["ms"] < 50


def test_dependency_counts_agree_with_the_package_managers(measured):
    _, data, _, _, _, _ = measured
    import subprocess

    by_name = rows(data)
    go_binary = by_name["go"]["command"]["argv"][0]
    listed = subprocess.run(["go", "version", "-m", go_binary], capture_output=True, text=True,
                            check=True).stdout
    assert by_name["go"]["footprint"]["dependency_count"] == sum(
        1 for line in listed.splitlines() if line.split()[:1] == ["dep"])
    src = by_name["typescript"]["command"]["cwd"]
    npm = subprocess.run(["npm", "ls", "--omit=dev", "--all", "--parseable"], cwd=src,
                         capture_output=True, text=True, check=True).stdout.split()
    assert by_name["typescript"]["footprint"]["dependency_count"] == len(npm) - 1  # itself
    java_src = Path(by_name["java"]["command"]["cwd"])
    build = java_src.parent
    tree = subprocess.run(["mvn", "-o", "-B", "dependency:tree", "-Dscope=runtime"], cwd=java_src,
                          capture_output=True, text=True, check=True,
                          env={**os.environ, "MAVEN_OPTS": f"-Dmaven.repo.local={build / 'm2'}"})
    lines = [l for l in tree.stdout.splitlines() if l.startswith("[INFO] ") and
             l[7:8] in ("+", "|", "\\", " ") and l.rstrip().endswith((":compile", ":runtime"))]
    assert by_name["java"]["footprint"]["dependency_count"] == len(lines) == len(
        list((java_src / "target" / "lib").iterdir()))


def test_cold_page_cache_reads_above_the_warm_run_on_go(measured):
    _, data, _, _, cold, cold_data = measured
    assert cold.exit_code == 0, cold.output
    warm_go, cold_go = rows(data)["go"], rows(cold_data)["go"]
    assert cold_data["settings"]["cache_state"] == "cold"
    page_cache = cold_go["page_cache"]
    assert page_cache["files"] >= 1
    # per run: the handshake, 2 modern (discover, first call) and the dual-era client; then
    # the package-init profile's starts, cold as the starts they are shown against
    assert len(page_cache["evicted_bytes"]) == (RUNS + WARMUP) * 4 + cold_data["settings"][
        "profiled_starts"]
    assert min(page_cache["evicted_bytes"]) > MIB  # the binary, every time
    assert cold_go["handshake_ms"]["median"] > warm_go["handshake_ms"]["median"]


def test_node_idle_memory_is_read_after_it_settles(measured):
    """The TypeScript server's idle RSS falls ~13% some 8-9 s after tools/list (V8's memory
    reducer): the settle rule's idle figure must be within 2% of the same process's RSS 15 s
    after tools/list (two copies of the server differ by a few percent, so one process)."""
    _, data, _, _, _, _ = measured
    row = rows(data)["typescript"]
    command = Command(row["command"]["argv"], row["command"]["cwd"])
    session = start(command, initialize_request("2025-11-25"))
    try:
        session.wait(1, 30)
        session.notify("notifications/initialized")
        session.request("tools/list", {}, 30)
        listed = time.monotonic()
        settled, waited = memory.settle(session.processes, session.serve, memory.SettleRule())
        idle = memory.tree_rss(session.processes)
        session.serve(15 - (time.monotonic() - listed))
        at_15_s = psutil.Process(session.transport.pid).memory_info().rss
    finally:
        session.shutdown()
    assert settled and waited >= 9.5
    assert abs(idle - at_15_s) <= 0.02 * at_15_s


def test_start_attribution_names_each_runtime_units(measured):
    """Python's start by distribution, Go's package inits by module (the SDK's module named,
    the inits summing to the block's total and staying inside the profiled start), the JVM's
    classes by jar, Node.js's modules by npm package; the other runtimes say why they have
    no block."""
    _, data, _, _, _, _ = measured
    by_name = rows(data)
    python, go = by_name["python"]["imports"], by_name["go"]["imports"]
    assert python["runtime"] == "python" and "mcp" in [d["name"] for d in python["distributions"]]
    assert go["runtime"] == "go" and go["interpreter_ms"] is None
    modules = {d["name"]: d for d in go["distributions"]}
    assert modules["github.com/modelcontextprotocol/go-sdk"]["installed"]
    assert 0 < go["import_ms"] < go["instrumented_ms"]
    # Per-package medians against the median of the starts' sums: equal on a quiet machine,
    # apart by a package's spread under load (a 2 ms total over 3 starts), so a 2x bound.
    package_sum = sum(p["clock_ms"] for p in go["packages"])
    assert go["import_ms"] / 2 <= package_sum <= 2 * go["import_ms"]
    java = by_name["java"]["classes"]
    assert java["classes"] > 1000 and java["first_class_ms"] < java["last_class_ms"]
    assert any(s["name"].startswith("mcp-core-") for s in java["sources"])
    assert "imports" in by_name["java"]["not_measured"]
    node = by_name["typescript"]["imports"]
    assert node["runtime"] == "node" and "zod" in [d["name"] for d in node["distributions"]]
    assert by_name["java"]["runtime_heap"]["runtime"] == "jvm"
    assert by_name["typescript"]["runtime_heap"]["runtime"] == "node"
    for name in ("c", "rust"):
        assert by_name[name]["imports"] is None and by_name[name]["classes"] is None
        assert {"imports", "classes", "runtime_heap"} <= set(by_name[name]["not_measured"])
        loader = by_name[name]["loader"]  # loader_check.py holds the counts to the ELF tables
        assert loader["runs"] == data["settings"]["profiled_starts"]
        assert "libc.so.6" in loader["objects"]
        assert loader["relocations"] > 0 and loader["relative_relocations"] > 0
    assert by_name["go"]["not_measured"]["loader"].startswith("a static executable")
    for name in ("java", "python", "typescript"):
        assert by_name[name]["loader"] is None and "loader" in by_name[name]["not_measured"]
