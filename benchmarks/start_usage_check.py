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

``--launchers`` (names of benchmarks/launcher_check.py: sh-exec-c, sh-python, npx-typescript)
checks the launcher chain's attribution instead: per round one cold start through mcpstart,
read to the initialize answer (tools/list and the call left out, so both windows end there),
its processes' CPU by command name (``start_usage.processes``), and one plain spawn of the
chain in a session of its own, answered once, its process group killed, every process of it
reaped by ``os.wait4`` (this script is the tree's subreaper) and their rusage summed: the
whole tree's CPU. Prints per chain the parts (medians by name), their sum and the plain
tree's median, and the ratio; target: within 5%.

``--faults`` (reference recipes, default c, rust, go: the native servers, whose start is
mostly the kernel's exec, the dynamic loader and page faults) checks ``minor_faults`` of the
start usage instead: per round one cold start through mcpstart read to the initialize answer
and one plain spawn of the tree answered once and killed, its rusage's ``ru_minflt`` summed
by wait4 (the kill adds no fault). Target: the medians within 5%.

Usage: python benchmarks/start_usage_check.py [--rounds 7]
       python benchmarks/start_usage_check.py --launchers [NAMES...] [--rounds 7]
       python benchmarks/start_usage_check.py --faults [NAMES...] [--rounds 7]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from mcpstart.command import Command
from mcpstart.measure.client import Skips
from mcpstart.measure.cold import cold_start
from mcpstart.measure.settings import Settings
from mcpstart.targets.build import cache_root
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


def plain_tree(command: Command) -> dict:
    """``{cpu_ms, minor_faults, major_faults}`` (CPU: user + system) of a plain spawn of
    ``command``'s whole tree, answered once: its session's process group killed at the
    answer, every process reaped by os.wait4 and its rusage summed."""
    proc = subprocess.Popen(command.argv, cwd=command.cwd, env=command.environment(),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    proc.stdin.write((json.dumps(initialize_request("2025-11-25")) + "\n").encode())
    proc.stdin.flush()
    proc.stdout.readline()
    os.killpg(proc.pid, signal.SIGKILL)
    total = {"cpu_ms": 0.0, "minor_faults": 0, "major_faults": 0}
    while True:  # the leader and every orphan this subreaper adopted
        try:
            _, _, usage = os.wait4(-1, 0)
        except ChildProcessError:
            break
        total["cpu_ms"] += (usage.ru_utime + usage.ru_stime) * 1000
        total["minor_faults"] += usage.ru_minflt
        total["major_faults"] += usage.ru_majflt
    proc.returncode = -signal.SIGKILL  # reaped above
    proc.stdin.close()
    proc.stdout.close()
    return total


def chains(names: list[str], rounds: int) -> None:
    """The --launchers mode (module doc)."""
    from launcher_check import launchers  # this folder's: the launched commands

    initialize_only = Skips({"tools/list": "left out: both windows end at the initialize answer"})
    print(f"{rounds} rounds, alternating; load average "
          f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}, {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as folder, child_subreaper():
        for name, command in launchers(names, cache_root(), Path(folder)).items():
            parts, whole = [], []
            for index in range(rounds + 1):  # the first round warms the page cache
                order = ("mcpstart", "plain") if index % 2 else ("plain", "mcpstart")
                for method in order:
                    if method == "plain":
                        whole.append(plain_tree(command)["cpu_ms"])
                        continue
                    usage = cold_start(command, Settings(timeout_s=60), initialize_only)["usage"]
                    per = {}
                    for process in usage["processes"]:
                        per[process["name"]] = per.get(process["name"], 0.0) + process["cpu_ms"]
                    parts.append(per)
            parts, whole = parts[1:], whole[1:]
            names_seen = list(dict.fromkeys(n for run in parts for n in run))
            medians = {n: statistics.median(run.get(n, 0.0) for run in parts) for n in names_seen}
            sums = [sum(run.values()) for run in parts]
            summed = statistics.median(sums)
            plain_ms = statistics.median(whole)
            ratio = summed / plain_ms
            print(f"{name}: parts " + " + ".join(f"{n} {ms:.1f}" for n, ms in medians.items())
                  + f" ms; their sum {summed:.1f} ms (median of the per-run sums; runs "
                  f"{min(sums):.1f}-{max(sums):.1f}); the start, whole tree by wait4 "
                  f"{plain_ms:.1f} ms (runs {min(whole):.1f}-{max(whole):.1f}); ratio "
                  f"{ratio:.3f}; target within 5%: {'met' if abs(ratio - 1) <= 0.05 else 'NOT met'}")
    print(f"load average at end {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


def faults(names: list[str], rounds: int) -> None:
    """The --faults mode (module doc)."""
    from checks import reference_builds  # this folder's

    initialize_only = Skips({"tools/list": "left out: both windows end at the initialize answer"})
    print(f"{rounds} rounds, alternating; load average "
          f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}, {os.cpu_count()} cores")
    with child_subreaper():
        for name, (_transport, command) in reference_builds(names).items():
            mine, theirs = [], []
            for index in range(rounds + 1):  # the first round warms the page cache
                for method in ("mcpstart", "plain") if index % 2 else ("plain", "mcpstart"):
                    if method == "plain":
                        theirs.append(plain_tree(command)["minor_faults"])
                    else:
                        mine.append(cold_start(command, Settings(timeout_s=60),
                                               initialize_only)["usage"]["minor_faults"])
            m, t = statistics.median(mine[1:]), statistics.median(theirs[1:])
            print(f"{name}: minor page faults to the answer: mcpstart {m:g} (runs "
                  f"{min(mine[1:])}-{max(mine[1:])}), wait4's rusage {t:g} (runs "
                  f"{min(theirs[1:])}-{max(theirs[1:])}); ratio {m / t:.3f}; target within "
                  f"5%: {'met' if abs(m - t) <= 0.05 * t else 'NOT met'}")
    print(f"load average at end {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--launchers", nargs="*", metavar="NAME",
                        help="check the launcher chains' attribution instead (module doc)")
    parser.add_argument("--faults", nargs="*", metavar="NAME",
                        help="check the page faults of native servers instead (module doc)")
    args = parser.parse_args()
    if args.faults is not None:
        faults(args.faults or ["c", "rust", "go"], args.rounds)
        return
    if args.launchers is not None:
        chains(args.launchers or ["sh-exec-c", "sh-python", "npx-typescript"], args.rounds)
        return
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
