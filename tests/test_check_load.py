"""End to end: the load check (benchmarks/load_check.py) once on the C floor over HTTP, short:
mcpstart's load block (Locust) and autocannon on the same server process, the same scenario
and connections, and mcpstart's engine-bound verdict from the ceiling of the same round. On
the floor the block is its own ceiling, so mcpstart must mark it engine-bound; the check's
target then holds only while autocannon reads the floor faster than Locust, which is what
makes the floor a ceiling of the engine (loose bound: a 2x error fails)."""

import importlib
from pathlib import Path

import pytest

from conftest import require_programs, unavailable
from mcpstart.measure import load
from mcpstart.targets.build import cache_root, ensure_built
from mcpstart.targets.recipes import load_recipes

pytestmark = pytest.mark.e2e

SCRIPT = Path(__file__).parent.parent / "benchmarks" / "load_check.py"


def test_the_floor_is_marked_engine_bound_and_the_independent_tool_reads_it_no_slower(
        monkeypatch):
    require_programs("node", "npm")
    if load.engine_version() is None:
        unavailable("Locust is not installed (pip install 'mcpstart[http]')")
    [recipe] = load_recipes(SCRIPT.parent.parent / "build-recipes", ["c-http"])
    if not ensure_built(recipe, cache_root()).ok:
        unavailable("c-http is not built (no C compiler)")
    monkeypatch.syspath_prepend(str(SCRIPT.parent))
    check = importlib.import_module("load_check")
    lines = []
    [row] = check.compare(["c-http"], ["calls"], rounds=1, seconds=2.0, users=10,
                          report=lines.append)
    assert row.errors == 0 and row.mcpstart_rps > 100 and row.autocannon_rps > 100
    assert row.marked is True
    # marked and not within 20% of the independent tool, by a 2x margin: Locust reads the
    # floor at most 1.6x autocannon (the target: under 0.8x)
    assert row.ratio < 2 * check.AGREE, lines
    assert lines and "engine-bound" in lines[0]
