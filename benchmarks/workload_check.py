"""Are mcpstart's per-tool warm figures the server's? Each tool of a workload called warm by
mcpstart's per-tool step (measure/per_tool.py ``warm``: uncounted calls until their times stop
falling, measure/warmup.py, then the counted ones, over mcpstart's stdio or HTTP transport) and by a plain client
(benchmarks/raw_mcp.py: pipes and a buffered readline, or a plain socket on a kept-alive
connection; no mcpstart code on the timed path), the same calls in the same shape: on one
session, or over HTTP with the shape "per-call" each in a full session of its own, timed from
the call's request to its answer. Both methods face the same mock API (the run's own, in this
process) and the same server state: the methods alternate round by round (each goes first in
every other round); over stdio each round is a fresh server, as mcpstart's step starts one;
over HTTP both methods reach one server process, started once per server, whose first
WARMUP_ROUNDS rounds are an uncounted common warm-up (a JIT runtime compiles during whichever
method runs first: counted, it would be that method's alone).

mcpstart's step runs with one warm session (``warm_sessions`` 1): each round is one session
of each method, so the rounds are the sessions.

Prints per server and tool the p50 and p95 of all counted calls of each method, their ratio,
and met/MISSED against the target: mcpstart's figure within 10% + 0.2 ms of the plain
client's, either way; under each, the same figure of the plain client's even rounds against
its odd rounds, held to the same target (the method's own noise: where it misses too, a miss
above says as much about the machine as about mcpstart); then each method's per-session
medians, sorted (a mode that lasts a session shows there: measure/warm_sessions.py). Asserts
nothing. ``--pin CPU`` runs this
process, and so every server it spawns, on that one CPU.

Usage:
  python benchmarks/workload_check.py [--rounds 8] [--calls 100] [--workload NAME] [--pin CPU]
      [NAMES...]
      the recipes NAMES of workload-recipes/ (default: all), the workload default benchmark;
  python benchmarks/workload_check.py [--rounds 8] [--calls 100] --workload FILE -- CMD...
      one server of your own (over HTTP when CMD holds {port}).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import raw_mcp
from checks import header, load_average, reference_builds, verdict
from mcpstart.command import Command
from mcpstart.endpoint import ENDPOINT
from mcpstart.measure import mock_api, per_tool, warmup
from mcpstart.measure.server import Server
from mcpstart.measure.settings import Settings
from mcpstart.results import ServerResult
from mcpstart.targets.recipes import PORT
from mcpstart.wire import SMALL_TEXT
from mcpstart.workload import load

RATIO, SLACK_MS = 0.10, 0.2
WARMUP_ROUNDS = 2
"""Over HTTP, the uncounted rounds that open the shared process's check (each method first
in one): the common warm-up."""
WORKLOAD_RECIPES = Path(__file__).parent.parent / "workload-recipes"


def mcpstart_round(name: str, transport: str, command, settings: Settings,
                   port: int | None) -> dict[str, list]:
    """One round's per-tool warm samples from mcpstart: tool -> [ms]; on a fresh server from
    ``command``, or with ``port`` on the HTTP server listening there."""
    url = None if port is None else f"http://127.0.0.1:{port}{ENDPOINT}"
    server = Server(ServerResult(name, transport), command if url is None else None,
                    transport=transport, url=url)
    per_tool.warm(server, settings, lambda _text: None)
    if server.row.status != "ok":
        raise RuntimeError(f"{name}: mcpstart: {server.row.reason}")
    return {tool: block["warm_ms"]["samples"] for tool, block in
            server.row.workload["tools"].items()}


def plain_round(transport: str, command, settings: Settings,
                port: int | None) -> dict[str, list]:
    """The same calls from the plain client, on a fresh server or the one at ``port``:
    tool -> [ms]."""
    workload, out = settings.workload, {}
    per_call = transport == "http" and workload.shape == "per-call"
    plain = raw_mcp.client(command, transport) if port is None else raw_mcp.Http(port=port)
    with plain:
        for call in workload.calls:
            params = call.params(SMALL_TEXT)

            def once() -> float:
                if per_call:
                    plain.end_session()
                    plain.open_session()
                answer = plain.request("tools/call", params)
                if "error" in answer.message or answer.message["result"].get("isError"):
                    raise RuntimeError(f"plain client: {call.name}: {answer.message}")
                return answer.ms
            warmup.warm_up(once)  # the rule mcpstart's step follows, on the plain client's times
            out[call.name] = [once() for _ in range(settings.round_trips)]
    return out


@contextmanager
def shared_process(transport: str, command) -> Iterator[int | None]:
    """Over HTTP, one server process from ``command`` for the block (spawned and held by a
    plain client whose own session stays idle): its port; over stdio None (a fresh server
    each round)."""
    if transport != "http":
        yield None
        return
    with raw_mcp.Http(command) as holder:
        yield holder.port


def percentiles(samples: list[float]) -> tuple[float, float]:
    """(p50, p95) in ms, p95 by linear interpolation."""
    return statistics.median(samples), statistics.quantiles(samples, n=20,
                                                            method="inclusive")[18]


def met(mine: float, theirs: float) -> bool:
    return abs(mine - theirs) <= RATIO * theirs + SLACK_MS


def check(name: str, transport: str, command, settings: Settings, rounds: int) -> None:
    sessions = {"mcpstart": {}, "plain": {}}  # method -> tool -> [[ms] per round]
    with shared_process(transport, command) as port:
        warmup = 0 if port is None else WARMUP_ROUNDS
        for round_ in range(warmup + rounds):
            order = ("mcpstart", "plain") if round_ % 2 == 0 else ("plain", "mcpstart")
            for method in order:
                got = (mcpstart_round(name, transport, command, settings, port)
                       if method == "mcpstart"
                       else plain_round(transport, command, settings, port))
                if round_ < warmup:
                    continue
                for tool, times in got.items():
                    sessions[method].setdefault(tool, []).append(times)
    def pooled(rounds_: list[list[float]]) -> tuple[float, float]:
        return percentiles([ms for times in rounds_ for ms in times])

    for tool in sessions["plain"]:
        mine, theirs = (pooled(sessions[method][tool]) for method in ("mcpstart", "plain"))
        plain = sessions["plain"][tool]
        halves = (pooled(plain[0::2]), pooled(plain[1::2])) if rounds > 1 else None
        for k, figure in enumerate(("p50", "p95")):
            a, b = mine[k], theirs[k]
            print(verdict(f"{name} {tool}", f"warm {figure}", a, b, met(a, b), "ms"))
            if halves is not None:
                even, odd = halves[0][k], halves[1][k]
                print(f"{'':16} {figure} of the plain client's even and odd rounds: {even:.3f} / "
                      f"{odd:.3f} ms, {'within' if met(even, odd) else 'NOT within'} the "
                      f"target of each other (its own noise)")
        for method in ("mcpstart", "plain"):
            medians = sorted(statistics.median(s) for s in sessions[method][tool])
            print(f"{name} {tool}: session p50s, {method}: "
                  + " ".join(f"{m:.3f}" for m in medians))


def main() -> None:
    argv = sys.argv[1:]
    command = argv[argv.index("--") + 1:] if "--" in argv else None
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--workload", default="benchmark")
    parser.add_argument("--pin", type=int, default=None)
    parser.add_argument("names", nargs="*")
    args = parser.parse_args(argv[:argv.index("--")] if command else argv)
    if args.pin is not None:
        os.sched_setaffinity(0, {args.pin})
    settings = replace(Settings(), workload=load(args.workload), round_trips=args.calls,
                       warm_sessions=1)
    if command:
        servers = {Path(command[0]).name: ("http" if any(PORT in a for a in command)
                                           else "stdio", Command(command))}
    elif WORKLOAD_RECIPES.is_dir():
        servers = reference_builds(args.names, WORKLOAD_RECIPES)
    else:
        sys.exit("no workload-recipes/ folder: give --workload FILE -- CMD")
    print(f"workload {settings.workload.name} (shape {settings.workload.shape}); "
          f"{args.rounds} rounds of {args.calls} calls per tool and method, alternating (over "
          f"HTTP on one server process after {WARMUP_ROUNDS} common warm-up rounds); "
          f"target within {RATIO:.0%} + {SLACK_MS} ms; "
          f"{'unpinned' if args.pin is None else f'on CPU {args.pin}'}; {load_average()} at start")
    print(header("plain client"))
    with mock_api.for_workload(settings) as settings:  # {mock_api}: the run's own mock API
        for name, (transport, cmd) in servers.items():
            check(name, transport, cmd, settings, args.rounds)
    print(f"{load_average()} at the end")


if __name__ == "__main__":
    main()
