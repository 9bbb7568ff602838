"""Is mcpstart's start usage (``start_usage``: the tree's CPU from spawn to the initialize
answer) what the kernel says the server spent? A fake server burns about 300 ms of user and
100 ms of system CPU before it answers (tests/fakes/fake_server.py --burn-user/--burn-system);
each round starts it once through mcpstart's cold start and once as a plain spawn (a pipe,
the initialize line, its answer read, SIGKILL, then ``os.wait4``'s rusage of the whole
process, which adds only what it spent between the answer and the kill), alternating which
goes first. A second fake sleeps 300 ms before answering: it must read as waiting (CPU share
under one half), not as CPU.

Prints the medians of both methods, their ratio and the target: user and system each within
10% + 5 ms of getrusage's; and the sleeping fake's CPU share. Asserts nothing.

Usage: python benchmarks/start_usage_check.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from mcpstart.command import Command
from mcpstart.measure.client import Skips
from mcpstart.measure.cold import cold_start
from mcpstart.measure.settings import Settings
from mcpstart.transports.tree import child_subreaper
from mcpstart.wire import initialize_request

FAKE = Path(__file__).parent.parent / "tests" / "fakes" / "fake_server.py"
BURN = [sys.executable, str(FAKE), "--burn-user", "0.3", "--burn-system", "0.1"]
SLEEP = [sys.executable, str(FAKE), "--slow-start", "0.3"]


def plain(argv: list[str]) -> tuple[float, float]:
    """(user ms, system ms) of one plain spawn answered once, by os.wait4."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    proc.stdin.write((json.dumps(initialize_request("2025-11-25")) + "\n").encode())
    proc.stdin.flush()
    proc.stdout.readline()
    proc.kill()  # no interpreter teardown after the answer: its CPU is not the start's
    _, _, usage = os.wait4(proc.pid, 0)
    proc.stdin.close()
    proc.returncode = 0  # reaped here
    proc.stdout.close()
    return usage.ru_utime * 1000, usage.ru_stime * 1000


def measured(argv: list[str]) -> dict:
    """mcpstart's start usage of one cold start, and its handshake ms."""
    sample = cold_start(Command(argv), Settings(timeout_s=30), Skips())
    return {**sample["usage"], "handshake": sample["handshake"]}


def within(mine: float, theirs: float) -> bool:
    return abs(mine - theirs) <= 0.10 * theirs + 5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    mine, theirs, sleeping = [], [], []
    with child_subreaper():
        for index in range(args.rounds):
            if index % 2:
                mine.append(measured(BURN))
                theirs.append(plain(BURN))
            else:
                theirs.append(plain(BURN))
                mine.append(measured(BURN))
            run = measured(SLEEP)
            sleeping.append(run["cpu_ms"] / run["handshake"])
    print(f"{args.rounds} rounds, alternating; load average "
          f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}, {os.cpu_count()} cores")
    for index, key in enumerate(("user_ms", "system_ms")):
        m = statistics.median(r[key] for r in mine)
        t = statistics.median(r[index] for r in theirs)
        print(f"{key:<10} mcpstart {m:8.1f}  getrusage {t:8.1f}  ratio {m / t:6.3f}  "
              f"target within 10% + 5 ms: {'met' if within(m, t) else 'NOT met'}")
    share = statistics.median(sleeping)
    print(f"sleeping fake: CPU share {share:.2f} of its start: "
          f"{'waiting' if share < 0.5 else 'NOT waiting'} (target: under 0.5)")


if __name__ == "__main__":
    main()
