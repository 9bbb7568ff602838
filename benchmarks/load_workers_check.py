"""The cost of Locust's master and workers (measure/load_workers.py), and their gain where the
cores allow: the "calls" scenario against the C floor (c-http, pinned to the first CPU as in a
run, the engine on the others), one engine process and N workers alternating run by run (which
goes first alternates too). Every run's request count is checked against Locust's own: the
master's statistics, which the workers report through Locust's stats messages, independently
of the records they send mcpstart.

Targets (issue 29): with 2 workers on a 2-core machine (the engine's processes sharing one
core) the rate within 10% of one process's (the cost of distribution); the scale-out gain
(as many workers as the engine's cores, at least 3 of them) measured only where at least 4
cores exist, else said as not measured. mcpstart's count equals Locust's (ratio 1.00).
Also printed: requests per CPU-second of the engine's processes together (master and
workers), the cost of distribution where other work on the machine gives more processes more
CPU time (the scheduler shares a busy core per process, so on a loaded machine two workers
get more of it than one process).

    python benchmarks/load_workers_check.py [--rounds 5] [--seconds 5] [--users 10]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys

from load_check import CALL, FLOOR, Server

from mcpstart.measure import load
from mcpstart.measure.settings import Settings

COST = 0.10
"""The 2-worker rate may fall short of one process's by at most this share."""
GAIN_CORES = 4


def run(server: Server, workers: int, seconds: float, users: int,
        engine_cpus: frozenset[int] | None) -> tuple[float, float, int, int]:
    """One "calls" run: ``(rps, requests per engine CPU-second, mcpstart's request count,
    Locust's)``."""
    settings = Settings(load_s=seconds, load_users=users, load_workers=workers)
    data, samples, _version = load.run_engine(server.endpoint, "calls", settings, CALL,
                                              server.processes, engine_cpus)
    block = load.summarize(data, samples)
    if block["errors"]["total"]:
        sys.exit(f"load_workers_check: {workers} worker(s): {block['errors']}")
    rps, cpu = block["rps"] or 0.0, block["engine_cpu_percent"]
    return rps, 100 * rps / cpu if cpu else float("nan"), block["requests"], \
        data["locust_requests"]


def load_average() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--users", type=int, default=10)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # the server is closed on the way out
    server_cpus, engine_cpus = load.cores()
    engine_cores = len(engine_cpus) if engine_cpus else 0
    counts = [1, 2] + ([engine_cores] if os.cpu_count() >= GAIN_CORES and engine_cores > 2
                       else [])
    print(f"load workers check: {args.rounds} rounds x {args.seconds:g} s of 'calls', "
          f"{args.users} users, against {FLOOR} on CPUs {sorted(server_cpus or [])}, the engine "
          f"on {sorted(engine_cpus or [])}; load average {load_average()}, {os.cpu_count()} "
          f"cores")
    print(f"{'round':>5} {'workers':>7} {'rps':>9} {'per CPU-s':>9} {'mcpstart n':>10} "
          f"{'Locust n':>9} {'n ratio':>7}")
    rates: dict[int, list[float]] = {n: [] for n in counts}
    thrift: dict[int, list[float]] = {n: [] for n in counts}
    exact = True
    server = Server(FLOOR, server_cpus)
    try:
        for round_ in range(args.rounds):
            order = counts if round_ % 2 == 0 else counts[::-1]
            for workers in order:
                rps, per_cpu, mine, theirs = run(server, workers, args.seconds, args.users,
                                                 engine_cpus)
                rates[workers].append(rps)
                thrift[workers].append(per_cpu)
                exact &= mine == theirs
                print(f"{round_ + 1:5} {workers:7} {rps:9,.0f} {per_cpu:9,.0f} {mine:10} "
                      f"{theirs:9} "
                      f"{mine / theirs if theirs else float('nan'):7.4f}")
    finally:
        server.close()
    one, two = statistics.median(rates[1]), statistics.median(rates[2])
    cost = two / one if one else float("nan")
    print(f"medians (load average {load_average()}): 1 worker {one:,.0f}/s, 2 workers "
          f"{two:,.0f}/s: ratio {cost:.3f} (target {1 - COST:.2f} to {1 + COST:.2f}): "
          f"{'met' if abs(cost - 1) <= COST else 'MISSED'}; request counts equal to Locust's "
          f"in every run: {'met' if exact else 'MISSED'}")
    one_cpu, two_cpu = statistics.median(thrift[1]), statistics.median(thrift[2])
    print(f"requests per engine CPU-second: 1 worker {one_cpu:,.0f}, 2 workers {two_cpu:,.0f}: "
          f"ratio {two_cpu / one_cpu:.3f}")
    if len(counts) > 2:
        many = statistics.median(rates[counts[2]])
        print(f"scale-out gain: {counts[2]} workers {many:,.0f}/s against 1 worker's "
              f"{one:,.0f}/s: {many / one:.2f}x")
    else:
        print(f"scale-out gain: not measured: needs at least {GAIN_CORES} cores (this machine "
              f"has {os.cpu_count()})")


if __name__ == "__main__":
    main()
