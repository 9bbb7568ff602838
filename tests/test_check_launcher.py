"""End to end: benchmarks/launcher_check.py once, on the ``sh -c 'exec ...'`` launcher of the C
floor (built into mcpstart's cache, so only the first run pays for it): mcpstart's launcher
overhead against the C harness's, with a loose bound."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mcpstart.targets.build import cache_root, ensure_built
from mcpstart.targets.recipes import load_recipes

from conftest import unavailable

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).parent.parent
LINE = re.compile(r"^sh-exec-c\s+(-?[\d.]+)\s+(-?[\d.]+)\s+\S+\s+(met|MISSED)$", re.M)


def test_the_launcher_check_runs_on_the_floor():
    if shutil.which("cc") is None:
        unavailable("no C compiler (cc) for the harness")
    [recipe] = load_recipes(ROOT / "build-recipes", ["c"])
    build = ensure_built(recipe, cache_root())
    if not build.ok:
        unavailable(f"the C floor is not built: {build.reason}")
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "launcher_check.py"),
                           "--runs", "5", "sh-exec-c"], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode in (0, 1), done.stderr
    ours, theirs, said = LINE.search(done.stdout).groups()
    # the shell execs into the floor: an overhead of a few ms on either clock; 50 ms apart is
    # the target, so a 2x error in it (100 ms) fails
    assert -100 < float(ours) < 100 and -100 < float(theirs) < 100, done.stdout
    assert abs(float(ours) - float(theirs)) <= 100, done.stdout
    assert said == "met" and done.returncode == 0, done.stdout
    assert f"direct: {build.command().argv[0]}" in done.stdout
