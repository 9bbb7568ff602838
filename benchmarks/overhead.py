"""Is mcpstart's cold-start figure the server's, or partly mcpstart's own start-up work? Times
the same built servers with mcpstart (the cold_start probe that `mcpstart measure` uses) and
with an independent minimal C harness (benchmarks/harness.c: posix_spawn, two pipes,
CLOCK_MONOTONIC, the initialize line written right after the spawn, the clock stopped at the
first complete response line), interleaved run by run, both after the same idle pause.

Prints per server both medians (median of per-round medians), the ratio and the difference,
against the target: mcpstart at most 1.05x the harness + 0.05 ms, and not below 0.85x; and the
floor server's shutdown time as mcpstart measures it. Asserts nothing.

Usage: python benchmarks/overhead.py [--rounds 6] [--runs 20] [--warmup 2] [--pause-ms 50]
                                     [--cache-dir DIR] [NAMES...]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
from pathlib import Path

from mcpstart.measure.client import Skips
from mcpstart.measure.cold import cold_start
from mcpstart.measure.settings import Settings
from mcpstart.targets.build import cache_root, ensure_built
from mcpstart.targets.recipes import load_recipes

HERE = Path(__file__).parent
REVISION = "2025-11-25"


def harness_ms(binary: Path, command, pause_ms: float) -> float:
    """One cold start timed by the C harness (its own pause first)."""
    done = subprocess.run([str(binary), str(round(pause_ms)), "1", *command.argv], cwd=command.cwd,
                          env=command.environment(), capture_output=True, text=True, check=True)
    return float(done.stdout.split()[0])


def mcpstart_ms(command, pause_ms: float) -> tuple[float, float]:
    """One cold start timed by mcpstart: (handshake ms, shutdown ms)."""
    settings = Settings(requested_revision=REVISION, timeout_s=30, pause_ms=pause_ms)
    sample = cold_start(command, settings, Skips())
    return sample["handshake"], sample["shutdown"].ms


def compile_harness(folder: Path) -> Path:
    """benchmarks/harness.c built with ``cc -O2`` into ``folder``."""
    binary = folder / "harness"
    subprocess.run(["cc", "-O2", "-o", str(binary), str(HERE / "harness.c")], check=True)
    return binary


def one_round(binary: Path, command, runs: int, warmup: int,
              pause_ms: float) -> tuple[float, float, list[float]]:
    """``warmup + runs`` cold starts of each method, interleaved run by run (harness, then
    mcpstart): (the harness's median ms, mcpstart's median ms, mcpstart's shutdown ms), of
    the counted runs."""
    times_h, times_m, shutdowns = [], [], []
    for run in range(warmup + runs):
        h = harness_ms(binary, command, pause_ms)
        m, shutdown = mcpstart_ms(command, pause_ms)
        if run >= warmup:
            times_h.append(h)
            times_m.append(m)
            shutdowns.append(shutdown)
    return statistics.median(times_h), statistics.median(times_m), shutdowns


def met(harness: float, mine: float) -> bool:
    """The target: at most 1.05x the harness + 0.05 ms, and not below 0.85x."""
    return mine <= 1.05 * harness + 0.05 and mine / harness >= 0.85


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--pause-ms", type=float, default=50.0)
    parser.add_argument("--cache-dir")
    parser.add_argument("names", nargs="*")
    args = parser.parse_args()

    recipes = load_recipes(HERE.parent / "build-recipes", args.names or None)
    with tempfile.TemporaryDirectory() as folder:
        binary = compile_harness(Path(folder))
        commands = {}
        for recipe in recipes:
            build = ensure_built(recipe, cache_root(args.cache_dir))
            if build.ok:
                commands[recipe.name] = build.command()
            else:
                print(f"{recipe.name}: not built: {build.reason}")
        print(f"{args.rounds} rounds x {args.runs} runs after {args.warmup} warm-up runs per "
              f"server, interleaved run by run (harness, then mcpstart); pause "
              f"{args.pause_ms:g} ms; load average at start "
              f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}, {os.cpu_count()} cores")
        print(f"{'server':<12}{'harness ms':>12}{'mcpstart ms':>13}{'ratio':>8}{'diff ms':>9}"
              f"  target")
        for name, command in commands.items():
            rounds_h, rounds_m, shutdowns = [], [], []
            for _ in range(args.rounds):
                h, m, ended = one_round(binary, command, args.runs, args.warmup, args.pause_ms)
                rounds_h.append(h)
                rounds_m.append(m)
                shutdowns += ended
            h, m = statistics.median(rounds_h), statistics.median(rounds_m)
            print(f"{name:<12}{h:>12.3f}{m:>13.3f}{m / h:>8.3f}{m - h:>+9.3f}  "
                  f"{'met' if met(h, m) else 'NOT met'}")
            if name == "c":
                print(f"{'':<12}shutdown (stdin closed to exit, pidfd): median "
                      f"{statistics.median(shutdowns):.3f} ms, max {max(shutdowns):.3f} ms")


if __name__ == "__main__":
    main()
