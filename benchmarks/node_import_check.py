"""Is mcpstart's Node.js start-up attribution (the ``imports`` block with ``runtime`` "node",
measure/node_packages.py) what importing the SDK alone costs? Each round, alternating which
goes first: one profiled start through mcpstart (profiled.profiled_start with the preload,
node_packages.server_trace and node_packages.attribute, as ``measure`` runs them), whose
figure is the SDK package's cumulative time (its modules and all they import: compile and
evaluation); and one run by hand: ``node --input-type=module -e`` in the built server's
folder with ``performance.now()`` read around ``await import(SDK)``, no preload, no hooks.
Target: mcpstart's median within 20% of the hand median (the issue's rule). A first round of
each, not counted, reads the files into the page cache for both. Also printed: the hand
import's main-thread CPU and the share of its wall time it waited for a CPU (schedstat), so
that a reading on a loaded machine shows itself; and per profiled start, whether the parts
(runtime start, per-package self times, linking, the waits for the loader thread) stay
within the profiled start (what the rest makes up).

    python benchmarks/node_import_check.py [NAMES...] [--rounds 5]

NAMES: Node.js recipes (default: typescript). Builds what is stale (mcpstart's build cache).
"""

from __future__ import annotations

import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from checks import RECIPES, arguments, header, load_average, reference_builds, verdict
from mcpstart.measure import node_packages
from mcpstart.measure.profiled import profiled_start
from mcpstart.measure.settings import Settings
from mcpstart.targets.recipes import load_recipes
from mcpstart.transports.tree import child_subreaper

RATIO = 0.20
BY_HAND = ("import { readFileSync } from 'node:fs'; "
           "const sched = () => readFileSync(`/proc/self/task/${process.pid}/schedstat`, "
           "'utf8').split(' ').map(Number); const s0 = sched(); "
           "const t0 = performance.now(); await import(process.argv[1]); "
           "const ms = performance.now() - t0; const s1 = sched(); "
           "console.log(ms, (s1[0] - s0[0]) / 1e6, (s1[1] - s0[1]) / 1e6);")
"""The import timed by performance.now(), and the main thread's CPU and run-queue ms over it
(/proc/PID/task/TID/schedstat: time on a CPU, time runnable but waiting; Linux docs,
"scheduler statistics")."""


def package_folder(script: str, sdk: str) -> Path:
    """The folder above the server's script whose node_modules holds the SDK."""
    for folder in Path(script).resolve().parents:
        if (folder / "node_modules" / sdk / "package.json").is_file():
            return folder
    raise SystemExit(f"no node_modules/{sdk} above {script}")


def by_hand(folder: Path, sdk: str) -> tuple[float, float, float]:
    """One import of ``sdk`` alone in ``folder``: (ms by performance.now(), the main
    thread's CPU ms and run-queue ms over it)."""
    out = subprocess.run(["node", "--input-type=module", "-e", BY_HAND, sdk], cwd=folder,
                         capture_output=True, text=True, check=True).stdout
    wall, cpu, queued = map(float, out.strip().splitlines()[-1].split())
    return wall, cpu, queued


def profiled(command, sdk: str, settings: Settings) -> tuple[float, float]:
    """One profiled start: (the SDK's cumulative ms, the parts' sum over the start)."""
    with tempfile.TemporaryDirectory(prefix="node-import-check-") as folder:
        ms, _, (texts, until) = profiled_start(
            command, settings, node_packages.traced_env(command, folder),
            lambda _p, folder=folder: node_packages.read_traces(folder))
    found = node_packages.attribute(node_packages.server_trace(texts, until), {})
    parts = (found["interpreter_ms"] + found["import_ms"] + found["linking_ms"]
             + found["loader_wait_ms"])
    return found["distributions"][sdk]["cumulative_ms"], parts / ms


def main() -> None:
    args = arguments(__doc__, rounds=5)
    names = args.names or ["typescript"]
    sdks = {r.name: r.sdk for r in load_recipes(RECIPES, names, transport=None)}
    settings = Settings(timeout_s=60)
    print(f"{args.rounds} rounds, alternating; {load_average()} at the start")
    print(header("import by hand"))
    for name, (_transport, command) in reference_builds(names).items():
        sdk = sdks[name]
        folder = package_folder(command.argv[1], sdk)
        ours, theirs, shares, queues, cpus = [], [], [], [], []
        with child_subreaper():
            by_hand(folder, sdk)
            profiled(command, sdk, settings)
            for index in range(args.rounds):
                for side in ("mcpstart", "hand") if index % 2 == 0 else ("hand", "mcpstart"):
                    if side == "hand":
                        wall, cpu, queued = by_hand(folder, sdk)
                        theirs.append(wall)
                        queues.append(queued / wall)
                        cpus.append(cpu)
                    else:
                        mine, share = profiled(command, sdk, settings)
                        ours.append(mine)
                        shares.append(share)
                    time.sleep(0.05)
        mine, hand = statistics.median(ours), statistics.median(theirs)
        print(verdict(name, f"{sdk.split('/')[-1]} import", mine, hand,
                      abs(mine - hand) <= RATIO * hand, "ms"))
        print(f"  mcpstart {', '.join(f'{v:.1f}' for v in ours)}; by hand "
              f"{', '.join(f'{v:.1f}' for v in theirs)}")
        print(f"  by hand, the main thread's CPU {', '.join(f'{v:.1f}' for v in cpus)} ms; "
              f"waiting for a CPU {', '.join(f'{v:.0%}' for v in queues)} of the import (a "
              "busy machine: both sides' wall times spread)")
        print(f"  parts over the profiled start: {', '.join(f'{v:.2f}' for v in shares)} "
              f"({'met' if max(shares) <= 1 else 'MISSED'}: at most 1, the rest is the "
              "remainder)")
    print(load_average() + " at the end")


if __name__ == "__main__":
    main()
