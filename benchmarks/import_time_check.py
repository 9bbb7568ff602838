"""Is mcpstart's attributed import time (``imports.import_ms``: the import tree of a profiled
start, past the interpreter's own imports) what importing the server costs without the
profiler? For each built Python reference server (a script run by its virtual environment's
interpreter), each round makes one profiled start through mcpstart (imports.instrumented_start
and imports.attribute) and times ``python -c 'import <the server's module>'`` and ``python -c
pass`` in the server's environment and folder (wall time of the process, spawn to exit),
alternating their order round by round; the independent figure is the difference of the two
medians.

Prints both figures, their ratio and the target: within 20%. Also prints the top three
distributions of the last profiled start. Asserts nothing.

Usage: python benchmarks/import_time_check.py [--rounds 7] [--cache-dir DIR] [NAMES...]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time
from pathlib import Path

from mcpstart.measure import imports
from mcpstart.measure.settings import Settings
from mcpstart.targets.build import cache_root, ensure_built
from mcpstart.targets.recipes import load_recipes
from mcpstart.transports.tree import child_subreaper

HERE = Path(__file__).parent


def wall_ms(argv: list[str], cwd: str, env: dict) -> float:
    start = time.perf_counter_ns()
    subprocess.run(argv, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL)
    return (time.perf_counter_ns() - start) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--cache-dir")
    parser.add_argument("names", nargs="*", default=["python"])
    args = parser.parse_args()
    print(f"{args.rounds} rounds, alternating; load average at start "
          f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}, {os.cpu_count()} cores")
    for recipe in load_recipes(HERE.parent / "build-recipes", args.names):
        build = ensure_built(recipe, cache_root(args.cache_dir))
        if not build.ok:
            print(f"{recipe.name}: not built: {build.reason}")
            continue
        command = build.command()
        python, script = command.argv[0], Path(command.argv[1])
        folder, env = str(script.parent), command.environment()
        importing = [python, "-c", f"import {script.stem}"]
        nothing = [python, "-c", "pass"]
        attributed, with_import, bare, env_info = [], [], [], None
        with child_subreaper():
            for index in range(args.rounds):
                checks = [(importing, with_import), (nothing, bare)]
                for argv, into in checks if index % 2 else checks[::-1]:
                    into.append(wall_ms(argv, folder, env))
                _ms, text, interpreter = imports.instrumented_start(command,
                                                                    Settings(timeout_s=60))
                env_info = env_info or imports.environment_of(interpreter, 60)
                found = imports.attribute(imports.parse(text), env_info)
                attributed.append(found)
        mine = statistics.median(a["import_ms"] for a in attributed)
        theirs = statistics.median(with_import) - statistics.median(bare)
        ratio = mine / theirs
        print(f"{recipe.name}: attributed {mine:.1f} ms; import {script.stem} minus pass "
              f"{theirs:.1f} ms (medians {statistics.median(with_import):.1f} - "
              f"{statistics.median(bare):.1f}); ratio {ratio:.3f}; target within 20%: "
              f"{'met' if abs(ratio - 1) <= 0.2 else 'NOT met'}")
        top = sorted(((name, d) for name, d in attributed[-1]["distributions"].items()
                      if name not in (imports.STDLIB, imports.NOT_INSTALLED)),
                     key=lambda kv: -kv[1]["cumulative_ms"])[:3]
        print("  top three distributions (cumulative ms, last profiled start): "
              + ", ".join(f"{name} {d['cumulative_ms']:.0f}" for name, d in top))


if __name__ == "__main__":
    main()
