"""Does the portable process layer (mcpstart/platforms.py) read what the Linux layer reads?
Measures the same built servers through both layers, interleaved: in each round every server
is measured once through each layer, the layer that goes first alternating round by round,
so the machine's load hits both alike.

- Cold start: ``--runs`` cold starts per layer per round, alternating run by run (the
  cold_start probe of ``mcpstart measure``); the median of the per-round medians per layer and their ratio,
  against the target: the portable layer within 10% of the Linux layer.
- Peak memory of the large call: one tool session per layer per round. The Linux layer reads
  the kernel's high-water marks (VmHWM after a clear_refs reset, summed over the processes
  alive at the end: ``peak_rss_bytes_hwm_sum``), which no sampling can miss; the portable
  layer samples the summed RSS through psutil (``peak_rss_bytes_sampled``). Their medians
  and ratio, against the target: the sampled peak within 10% of VmHWM.

Prints a line per server and figure with the load average. Asserts nothing.

Usage: python benchmarks/portable_check.py [--rounds 3] [--runs 5] [--payload-bytes N]
                                           [--cache-dir DIR] [NAMES...]
"""

from __future__ import annotations

import argparse
import os
import statistics
from dataclasses import replace
from pathlib import Path

from mcpstart import platforms
from mcpstart.engine import following
from mcpstart.measure.client import Skips
from mcpstart.measure.cold import cold_start
from mcpstart.measure.memory import SettleRule
from mcpstart.measure.settings import Settings
from mcpstart.measure.warm import tool_session
from mcpstart.results import ServerResult
from mcpstart.targets.build import cache_root, ensure_built
from mcpstart.targets.recipes import load_recipes
from mcpstart.transports.session import Traffic

HERE = Path(__file__).parent
REVISION = "2025-11-25"
TARGET = 0.10
"""Either figure of the portable layer within 10% of the Linux layer's."""
SHORT_SETTLE = SettleRule(interval_s=0.05, slope_window_s=0.2, drop_window_s=0.3, min_s=0.5,
                          max_s=3)
"""The peak is read after idle memory; how long idle memory settles does not change it."""


def start(command, layer: str, settings: Settings) -> float:
    """One cold start (ms) through ``layer``."""
    with following(replace(settings, process_layer=layer), subreaper=True):
        return cold_start(command, settings, Skips())["handshake"]


def peak(command, layer: str, settings: Settings) -> int | None:
    """One tool session through ``layer``: the sum of the VmHWM marks (linux) or the sampled
    peak of the summed RSS (portable) of the large call, bytes."""
    row = ServerResult("check")
    with following(replace(settings, process_layer=layer), subreaper=True):
        tool_session(command, settings, row, Skips(), Traffic())
    key = "peak_rss_bytes_hwm_sum" if layer == "linux" else "peak_rss_bytes_sampled"
    return (row.memory or {}).get(key)


def line(name: str, figure: str, linux: float, portable: float, unit: str) -> str:
    ratio = portable / linux
    verdict = "met" if abs(ratio - 1) <= TARGET else "NOT met"
    return (f"{name:<12}{figure:<22}{linux:>12.3f}{portable:>12.3f}{ratio:>8.3f}  {unit}  "
            f"{verdict} (within {TARGET:.0%})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--payload-bytes", type=int, default=5 << 20)
    parser.add_argument("--cache-dir")
    parser.add_argument("names", nargs="*")
    args = parser.parse_args()

    wanted = args.names or ["c", "go", "java", "python", "rust", "typescript"]
    commands = {}
    for recipe in load_recipes(HERE.parent / "build-recipes", wanted):
        build = ensure_built(recipe, cache_root(args.cache_dir))
        if build.ok:
            commands[recipe.name] = build.command()
        else:
            print(f"{recipe.name}: not built: {build.reason}")
    cold = Settings(requested_revision=REVISION, timeout_s=60, pause_ms=50)
    warm = Settings(requested_revision=REVISION, timeout_s=60, round_trips=0,
                    payload_bytes=args.payload_bytes, settle=SHORT_SETTLE)
    print(f"{args.rounds} rounds; per round and layer {args.runs} cold starts and one tool "
          f"session ({args.payload_bytes} B call); the first layer alternates by round; load "
          f"average at start {' '.join(f'{v:.2f}' for v in os.getloadavg())}, "
          f"{os.cpu_count()} cores")
    print(f"{'server':<12}{'figure':<22}{'linux':>12}{'portable':>12}{'ratio':>8}")
    for name, command in commands.items():
        cold_ms = {layer: [] for layer in platforms.LAYERS}
        peaks = {layer: [] for layer in platforms.LAYERS}
        for r in range(args.rounds):
            order = platforms.LAYERS if r % 2 == 0 else platforms.LAYERS[::-1]
            times = {layer: [] for layer in order}
            for _ in range(args.runs):  # run by run, in the round's order
                for layer in order:
                    times[layer].append(start(command, layer, cold))
            for layer in order:
                cold_ms[layer].append(statistics.median(times[layer]))
            for layer in order:
                peaks[layer].append(peak(command, layer, warm))
        print(line(name, "cold start median", statistics.median(cold_ms["linux"]),
                   statistics.median(cold_ms["portable"]), "ms"))
        if None in peaks["linux"] or None in peaks["portable"]:
            print(f"{name:<12}peak: not read ({peaks})")
            continue
        print(line(name, "peak (VmHWM/sampled)", statistics.median(peaks["linux"]) / 2**20,
                   statistics.median(peaks["portable"]) / 2**20, "MiB"))
    print(f"load average at end {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
