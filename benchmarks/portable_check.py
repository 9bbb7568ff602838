"""Does the portable process layer (mcpstart/platforms.py) read what the Linux layer reads?
Measures the same built servers through both layers, interleaved: in each round every server
is measured once through each layer, the layer that goes first alternating round by round,
so the machine's load hits both alike.

- Cold start: ``--runs`` cold starts per layer per round, alternating run by run (the
  cold_start probe of ``mcpstart measure``); the median of the per-round medians per layer and their ratio,
  against the target: the portable layer within 10% of the Linux layer.
- Peak memory of the large call: one session per round through the portable layer, whose
  large call is watched two ways at once: the portable layer's sampler (psutil RSS of the
  tree every 5 ms, as ``peak_rss_bytes_sampled``) and the kernel's high-water marks, reset
  by this script just before the call (clear_refs) and read right after (VmHWM, summed over
  the tree), which no sampling can miss. Their medians and ratio, against the target: the
  sampled peak within 10% of VmHWM.

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
from mcpstart.measure import spawn
from mcpstart.measure.client import Skips, call_tool
from mcpstart.measure.cold import cold_start
from mcpstart.measure.memory import Sampler
from mcpstart.measure.settings import Settings
from mcpstart.targets.build import cache_root, ensure_built
from mcpstart.targets.recipes import load_recipes
from mcpstart.wire import ToolCall, initialize_request, payload_text

HERE = Path(__file__).parent
REVISION = "2025-11-25"
TARGET = 0.10
"""The portable cold start within 10% of the Linux layer's; the sampled peak within 10% of
VmHWM."""

def start(command, layer: str, settings: Settings) -> float:
    """One cold start (ms) through ``layer``."""
    with following(replace(settings, process_layer=layer), subreaper=True):
        return cold_start(command, settings, Skips())["handshake"]


def marks_reset(pids: list[int]) -> None:
    """Reset each process's VmHWM (clear_refs, written by this script: Linux >= 4.0)."""
    for pid in pids:
        with open(f"/proc/{pid}/clear_refs", "w") as handle:
            handle.write("5")


def marks(pids: list[int]) -> int:
    """The processes' VmHWM summed (/proc/PID/status, read by this script), bytes."""
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/status") as handle:
            total += next(int(line.split()[1]) * 1024 for line in handle
                          if line.startswith("VmHWM:"))
    return total


def peaks(command, settings: Settings) -> tuple[int, int]:
    """One session through the portable layer and one large call, during which the portable
    layer's Sampler (memory.Sampler: psutil RSS every 5 ms, summed over the tree) runs and
    the kernel keeps its high-water marks, reset by this script just before the call and
    read right after: ``(sampled peak, summed VmHWM)``, bytes. For a one-process server the
    mark is the call's true peak; for a tree the marks' sum bounds the peak of the sum."""
    call = ToolCall("reverse_text", {"text": "{payload}"})
    with following(replace(settings, process_layer="portable"), subreaper=False), \
            spawn.started([(command, initialize_request(REVISION))], settings,
                          timed=False) as (session,):
        session.wait(1, settings.timeout_s)
        session.notify("notifications/initialized")
        call_tool(session, call, "warm", settings.timeout_s)
        processes = session.processes
        pids = [p.pid for p in processes.scan()]
        marks_reset(pids)
        with Sampler(processes, settings.sampling) as sampler:
            call_tool(session, call, payload_text(settings.payload_bytes), settings.timeout_s)
            kernel = marks(pids)
    return sampler.peak_bytes, kernel


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
    warm = Settings(requested_revision=REVISION, timeout_s=60, payload_bytes=args.payload_bytes)
    print(f"{args.rounds} rounds; per round {args.runs} cold starts per layer, run by run, "
          f"the first layer alternating by round, and one {args.payload_bytes} B call; load "
          f"average at start {' '.join(f'{v:.2f}' for v in os.getloadavg())}, "
          f"{os.cpu_count()} cores")
    print(f"{'server':<12}{'figure':<22}{'linux':>12}{'portable':>12}{'ratio':>8}")
    for name, command in commands.items():
        cold_ms = {layer: [] for layer in platforms.LAYERS}
        peak_sampled, peak_kernel = [], []
        for r in range(args.rounds):
            order = platforms.LAYERS if r % 2 == 0 else platforms.LAYERS[::-1]
            times = {layer: [] for layer in order}
            for _ in range(args.runs):  # run by run, in the round's order
                for layer in order:
                    times[layer].append(start(command, layer, cold))
            for layer in order:
                cold_ms[layer].append(statistics.median(times[layer]))
            sampled, kernel = peaks(command, warm)
            peak_sampled.append(sampled)
            peak_kernel.append(kernel)
        print(line(name, "cold start median", statistics.median(cold_ms["linux"]),
                   statistics.median(cold_ms["portable"]), "ms"))
        print(line(name, "peak (VmHWM/sampled)", statistics.median(peak_kernel) / 2**20,
                   statistics.median(peak_sampled) / 2**20, "MiB"))
    print(f"load average at end {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
