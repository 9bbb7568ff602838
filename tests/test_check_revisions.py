"""End to end: benchmarks/revisions_check.py once, on the C floor server (the cached build):
mcpstart's revision matrix (``mcpstart revisions c``, its derived wait) equals the raw probe's
with a 30 s wait, probe for probe, and both finish well within the 30 s a silent probe would
cost."""

import sys
import time
from pathlib import Path

import pytest

from mcpstart.targets.build import cache_root, ensure_built
from mcpstart.targets.recipes import load_recipes

from conftest import unavailable

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import revisions_check  # noqa: E402


def test_the_c_floor_matrix_equals_a_raw_probe_with_a_30_s_wait():
    [recipe] = load_recipes(ROOT / "build-recipes", ["c"])
    build = ensure_built(recipe, cache_root())
    if build.status == "skipped":
        unavailable(f"c: {build.reason}")
    assert build.ok, f"c: {build.reason}\n{build.log_tail}"
    began = time.monotonic()
    protocol, mine, raw = revisions_check.compare("c", build.command(), 30.0)
    assert time.monotonic() - began < 30  # no probe sat out a wait
    assert len(raw) == 7 and mine == raw
    assert [r["verdict"] for r in raw] == ["supported"] * 5 + ["unsupported"] * 2
    assert protocol["probe_wait"]["rule"] in ("derived", "floor")
    assert protocol["probe_wait"]["source"] == "first start"
