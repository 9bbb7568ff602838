"""End to end: build the four reference servers from build-recipes/ into a fresh cache, measure
them through the CLI, and check every field of the results file. Slow (minutes: a cold Rust
release build). With MCPSTART_REQUIRE_ALL=1 (CI) a missing toolchain fails instead of skipping."""

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcpstart.cli import main
from mcpstart.targets.recipes import load_recipes

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).parent.parent
RECIPES = ROOT / "build-recipes"
MIB = 1024 * 1024
RUNS, WARMUP = 3, 1
REQUIRED = os.environ.get("MCPSTART_REQUIRE_ALL") == "1"
# what each SDK does by default for a tool that returns a string (see servers/*/)
STRUCTURED = {"python": True, "go": False, "rust": False, "typescript": False}


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    recipes = load_recipes(RECIPES)
    missing = [t.version_argv[0] for r in recipes for t in r.toolchains
               if shutil.which(t.version_argv[0]) is None]
    if missing and not REQUIRED:
        pytest.skip(f"toolchains not found: {', '.join(missing)} (set MCPSTART_REQUIRE_ALL=1 "
                    "to fail instead)")
    folder = tmp_path_factory.mktemp("reference")
    args = ["--recipes", str(RECIPES), "--cache-dir", str(folder / "cache")]
    result = CliRunner().invoke(main, ["measure", "--runs", str(RUNS), "--warmup", str(WARMUP),
                                       "-o", str(folder / "results.json"), "--require-all", *args])
    again = CliRunner().invoke(main, ["build", *args])
    return result, json.loads((folder / "results.json").read_text()), again, recipes


def test_measure_succeeds_and_prints_a_filled_table(measured):
    result, data, _, recipes = measured
    assert result.exit_code == 0, result.output
    table = result.stdout
    header = table.splitlines()[0]
    assert all(r.name in header for r in recipes)
    rows = [line for line in table.splitlines() if line.startswith("| ")]
    assert len(rows) >= 20
    for line in rows[1:]:
        cells = [c.strip() for c in line.strip("|").split("|")][1:]
        assert "-" not in cells, f"empty cell in row: {line}"


def test_second_build_does_no_work(measured):
    _, _, again, recipes = measured
    assert again.exit_code == 0, again.output
    assert again.stdout.count(": cached (") == len(recipes)
    assert "nothing to do" in again.stderr


def test_run_metadata(measured):
    _, data, _, _ = measured
    assert data["schema"] == "mcpstart/1"
    assert data["mcpstart_version"] and data["created"].endswith("+00:00")
    assert data["argv"][:2] == ["mcpstart", "measure"]
    env = data["environment"]
    assert env["os"] == "Linux" and env["cpu_count"] >= 1 and len(env["load_average"]) == 3
    assert {"go", "python3", "cargo", "rustc", "node", "npm"} <= set(env["toolchains"])
    assert data["settings"]["runs"] == RUNS and data["settings"]["warmup"] == WARMUP
    assert data["settings"]["payload_bytes"] == 5 * MIB
    assert data["settings"]["requested_revision"] == "2025-11-25"


@pytest.mark.parametrize("name", ["go", "python", "rust", "typescript"])
def test_every_field_of_a_reference_server(measured, name):
    _, data, _, recipes = measured
    row = next(s for s in data["servers"] if s["name"] == name)
    recipe = next(r for r in recipes if r.name == name)
    assert row["status"] == "ok" and row["reason"] is None, row["reason"]
    assert row["language"] == name and row["sdk"] == recipe.sdk
    assert row["sdk_version"].lstrip("v") == recipe.sdk_version.lstrip("v")

    command = row["command"]
    assert Path(command["argv"][-1]).exists() and Path(command["cwd"]).is_dir()
    assert command["env_keys"] == []

    hs = row["handshake_ms"]
    assert hs["n"] == RUNS and len(hs["samples"]) == RUNS and len(hs["warmup_samples"]) == WARMUP
    assert 0 < hs["min"] <= hs["median"] <= hs["max"] < 60_000
    assert hs["stdev"] is not None and hs["mad"] is not None and hs["p95"] is None
    first_byte = row["phases_ms"]["first_byte"]
    assert all(0 < fb <= h for fb, h in zip(first_byte["samples"], hs["samples"]))

    memory = row["memory"]
    assert memory["peak_method"] == "vmhwm"
    assert 1 * MIB < memory["idle_uss_bytes"] <= memory["idle_pss_bytes"] <= memory["idle_rss_bytes"]
    # the 5 MiB request and its reversal must pass through the server's memory
    assert memory["peak_rss_bytes_payload"] >= memory["idle_rss_bytes"] + 5 * MIB
    assert len(memory["processes"]) == 1

    payload = row["payload"]
    assert payload["request_bytes"] == 5 * MIB
    assert payload["response_bytes"] >= (10 if STRUCTURED[name] else 5) * MIB
    assert payload["verified"] is True and payload["unicode_verified"] is True
    assert payload["round_trip_ms"] > 0

    assert row["tools"]["count"] == 1 and row["tools"]["list_bytes"] > 100
    assert row["tools"]["output_schema"] is STRUCTURED[name]
    assert row["tools"]["structured_content"] is STRUCTURED[name]

    footprint = row["footprint"]
    assert 1 * MIB < footprint["artifact_bytes"] < footprint["dev_tree_bytes"]
    assert 1 <= footprint["dependency_count"] <= footprint["lock_count"]
    assert 5 <= footprint["tool_lines"] <= 40
    assert footprint["build_s"] > 0 and footprint["build_cached"] is False

    assert row["protocol"] == {"requested_revision": "2025-11-25",
                               "negotiated_revision": "2025-11-25"}
    assert row["shutdown"]["how"] == "eof" and row["shutdown"]["ms"] < 2000
    assert row["orphans"] == []
