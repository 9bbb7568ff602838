"""Do the wall parts of a launcher line (``start_usage.processes[].wall_ms``, usage.line_parts)
sum to the start an independent clock reads? For each launcher in front of a built reference
server, each round makes one cold start through mcpstart (cold_start, with its start usage
read at the answer) and times the launched command with the C harness (benchmarks/harness.c,
compiled as overhead.py does) right before or after it, alternating which goes first round by
round, then the direct command. A Python start is noisy (under load its spread is wider than
the 5% target, so two medians of separate series miss it by chance): each round's ratio of
the sum of parts to the harness's start of the same round is taken, so that the machine's
drift cancels in each ratio, and their median is held to the target: met within it; MISSED
when the median's confidence interval (stats.median_ci) lies wholly outside it; else
inconclusive, the starts too noisy to tell (the interval printed).

Per launcher it prints the parts of the last start (process, wall ms), the per-round ratios
sum of parts / harness and their median against the target: within 5% (issue 26), and both
medians.
For reference, the launcher's share (every part but the server's, median) beside the
harness's launched minus direct (median of the per-round differences): the server's part
under a launcher is not a direct start (a bin that imports the server, an exec'd shell's
parse), so that pair has no target.

The launchers, none reaching past loopback: ``sh -c 'exec python3 server.py'`` (the shell
execs into the server: one process, so one part), ``sh -c 'python3 server.py'`` (the shell
stays the server's parent) and ``npx -y FOLDER`` of a local package whose bin imports the
built TypeScript reference server (npm exec, then sh, then node; npm_config_cache a
temporary folder, npx copies the folder, no registry asked: launcher_check.py's
npx-typescript).

Usage: python benchmarks/launcher_parts_check.py [--runs 9] [--pause-ms 50]
           [--cache-dir DIR] [LAUNCHERS...]
       LAUNCHERS: any of sh-exec-python, sh-python, npx-typescript (default: all)
"""

from __future__ import annotations

import os
import shlex
import statistics
import sys
import tempfile
from pathlib import Path

from mcpstart.command import Command
from mcpstart.measure import usage
from mcpstart.measure.client import Skips
from mcpstart.measure.cold import cold_start
from mcpstart.measure.settings import Settings
from mcpstart.stats import median_ci, summarize
from mcpstart.targets.build import cache_root
from mcpstart.transports.tree import child_subreaper
from launcher_check import REVISION, arguments, built, npx_package  # this folder's
from overhead import compile_harness, harness_ms  # this folder's

TARGET = 0.05
"""The parts' sum within 5% of the independent start (issue 26)."""


def launchers(names: list[str], cache: Path, folder: Path) -> dict[str, tuple[Command, Command]]:
    """Per launcher name, (launched, direct) commands of the reference servers they need."""
    out = {}
    for name, word in (("sh-exec-python", "exec "), ("sh-python", "")):
        if name in names:
            python = built("python", cache)
            out[name] = (Command(["sh", "-c", word + shlex.join(python.argv)], python.cwd,
                                 python.env), python)
    if "npx-typescript" in names:
        direct = built("typescript", cache)
        package = npx_package(folder, Path(direct.argv[-1]))
        env = {"npm_config_cache": str(folder / "npm-cache"),
               "npm_config_update_notifier": "false"}
        out["npx-typescript"] = (Command(["npx", "-y", str(package)], str(folder), env), direct)
    return out


def check(name: str, launched: Command, direct: Command, binary: Path, args) -> bool:
    settings = Settings(requested_revision=REVISION, timeout_s=60, pause_ms=args.pause_ms)
    starts, ratios, launcher_shares, last = [], [], [], None
    theirs: dict[str, list[float]] = {"launched": [], "direct": []}
    for round_ in range(args.warmup + args.runs):
        pair = ["mcpstart", "launched"] if round_ % 2 == 0 else ["launched", "mcpstart"]
        timed = {}
        for job in pair + ["direct"]:
            if job != "mcpstart":
                timed[job] = harness_ms(binary, launched if job == "launched" else direct,
                                        args.pause_ms)
                continue
            with child_subreaper():
                sample = cold_start(launched, settings, Skips())
            rows = sample["usage"]["processes"]
            parts = usage.line_parts(rows, sample["handshake"])
            names = {r["pid"]: r["name"] for r in rows}
            timed[job] = sum(parts.values())
            last = [(names[pid], ms) for pid, ms in parts.items()]
        if round_ < args.warmup:
            continue
        for job in theirs:
            theirs[job].append(timed[job])
        starts.append(timed["mcpstart"])
        ratios.append(timed["mcpstart"] / timed["launched"])
        launcher_shares.append(sum(ms for _, ms in last[:-1]))
    ratio = statistics.median(ratios)
    low, high, level = median_ci(ratios)
    met = abs(ratio - 1) <= TARGET
    verdict = "met" if met else (
        "MISSED" if low > 1 + TARGET or high < 1 - TARGET else
        f"inconclusive (the interval reaches within {TARGET:.0%})")
    overhead = summarize([a - b for a, b in zip(theirs["launched"], theirs["direct"])])
    print(f"{name}: parts of the last start: "
          + ", ".join(f"{n} {ms:.1f}" for n, ms in last) + " ms")
    print("  sum of parts / harness, per round: " + " ".join(f"{r:.3f}" for r in ratios)
          + f"; median {ratio:.3f} [{low:.3f}, {high:.3f}] ({level:.0%} interval); target "
          f"within {TARGET:.0%}: {verdict}")
    print(f"  medians: sum of parts {statistics.median(starts):.1f} ms, harness "
          f"{statistics.median(theirs['launched']):.1f} ms")
    print(f"  for reference: launcher parts (median) {statistics.median(launcher_shares):.1f} ms;"
          f" harness launched minus direct {overhead['median']:.1f} ms "
          f"(direct {statistics.median(theirs['direct']):.1f} ms)")
    return met


def main() -> None:
    args = arguments(__doc__, 9)
    names = args.names or ["sh-exec-python", "sh-python", "npx-typescript"]
    with tempfile.TemporaryDirectory() as folder:
        binary = compile_harness(Path(folder))
        commands = launchers(names, cache_root(args.cache_dir), Path(folder))
        print(f"{args.runs} rounds after {args.warmup} warm-up, mcpstart and the harness's "
              f"launched start side by side, alternating, then the direct; pause "
              f"{args.pause_ms:g} ms; load "
              f"average at start {' '.join(f'{v:.2f}' for v in os.getloadavg())}, "
              f"{os.cpu_count()} cores")
        results = [check(name, *pair, binary, args) for name, pair in commands.items()]
        print(f"load average at end {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
