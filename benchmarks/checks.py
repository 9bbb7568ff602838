"""What the independent checks (benchmarks/*_check.py) share: the reference servers built from
mcpstart's build cache, and the line each check prints per server and figure."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from mcpstart.targets.build import cache_root, ensure_built
from mcpstart.targets.recipes import load_recipes

RECIPES = Path(__file__).parent.parent / "build-recipes"


def arguments(doc: str, **counts: int) -> argparse.Namespace:
    """The command line of a check: ``--rounds`` and its other counts (``name=default``, each
    an integer option), then the recipe NAMES."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    for name, default in counts.items():
        parser.add_argument(f"--{name}", type=int, default=default)
    parser.add_argument("names", nargs="*")
    return parser.parse_args()


def reference_builds(names: list[str], folder: Path = RECIPES) -> dict[str, tuple[str, object]]:
    """``names`` (default: every recipe of ``folder``, the reference servers, stdio and HTTP)
    built or taken from the build cache: name -> (transport, Command); a server that cannot
    be built is printed and left out."""
    builds = {}
    for recipe in load_recipes(folder, names or None, transport=None):
        build = ensure_built(recipe, cache_root())
        if build.ok:
            builds[recipe.name] = (recipe.transport, build.command())
        else:
            print(f"{recipe.name}: not built: {build.reason}")
    return builds


def load_average() -> str:
    """The 1, 5 and 15 minute load averages and the core count, for a check's header."""
    return (f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}, "
            f"{os.cpu_count()} cores")


def verdict(name: str, figure: str, mine: float, theirs: float, met: bool,
            unit: str = "") -> str:
    """One output line: server, figure, mcpstart's value, the independent one, their ratio
    and met/MISSED against the check's target."""
    ratio = mine / theirs if theirs else float("nan")
    return (f"{name:16} {figure:17} {_number(mine)} {unit:3} {_number(theirs)} {unit:3} "
            f"{ratio:7.4f}  {'met' if met else 'MISSED'}")


def _number(value: float) -> str:
    return f"{value:14,}" if isinstance(value, int) else f"{value:14,.3f}"


def header(what: str) -> str:
    """The column heads of ``verdict``'s lines; ``what`` names the independent method."""
    return (f"{'server':16} {'figure':17} {'mcpstart':>14}{'':4} {what:>14}{'':4} "
            f"{'ratio':>7}  target")
