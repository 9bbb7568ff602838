"""Are mcpstart's per-tool warm figures the server's? Each tool of a workload called warm by
mcpstart and by a plain client (benchmarks/raw_mcp.py: os.read on the server's pipes, or a
plain socket on a kept-alive connection; no mcpstart code on the timed path), the same calls in
the same shape, timed from the call's request to its answer. Both methods face the same mock
API (the run's own, in this process) and the same server state:

- over stdio, each round is one fresh server shared by both methods on the same pipes:
  mcpstart's session, its series function (measure/warm.py ``round_trips``, which its per-tool
  step runs after warming each tool up by measure/warmup.py's rule), and the plain client,
  taking turns in blocks of BLOCK calls. A server's state that lasts a session (a JIT's
  choices, which CPUs client and server share: measure/warm_sessions.py) then holds for both
  methods alike; with a fresh server per method, it was one method's draw;
- over HTTP, mcpstart's whole per-tool step (measure/per_tool.py ``warm``) and the plain
  client take turns round by round (each goes first in every other round) on one server
  process, started once per server, whose first WARMUP_ROUNDS rounds are an uncounted common
  warm-up (a JIT runtime compiles during whichever method runs first: counted, it would be
  that method's alone); with the shape "per-call" each call is a full session of its own.

Each round is one session of each method (over HTTP mcpstart's step runs with one warm
session, ``warm_sessions`` 1), so the rounds are the sessions.

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
from mcpstart.measure import mock_api, per_tool, spawn, warmup
from mcpstart.measure.client import initialize_result
from mcpstart.measure.server import Server
from mcpstart.measure.settings import Settings
from mcpstart.results import ServerResult
from mcpstart.targets.recipes import PORT
from mcpstart.measure.warm import round_trips
from mcpstart.wire import SMALL_TEXT, initialize_request
from mcpstart.workload import load

RATIO, SLACK_MS = 0.10, 0.2
BLOCK = 10
"""Over stdio, the calls of one method's turn on the shared session."""
WARMUP_ROUNDS = 2
"""Over HTTP, the uncounted rounds that open the shared process's check (each method first
in one): the common warm-up."""
WORKLOAD_RECIPES = Path(__file__).parent.parent / "workload-recipes"


def mcpstart_round(name: str, settings: Settings, port: int) -> dict[str, list]:
    """One round's per-tool warm samples from mcpstart's per-tool step on the HTTP server
    listening at ``port``: tool -> [ms]."""
    server = Server(ServerResult(name, "http"), None, transport="http",
                    url=f"http://127.0.0.1:{port}{ENDPOINT}")
    per_tool.warm(server, settings, lambda _text: None)
    if server.row.status != "ok":
        raise RuntimeError(f"{name}: mcpstart: {server.row.reason}")
    return {tool: block["warm_ms"]["samples"] for tool, block in
            server.row.workload["tools"].items()}


def plain_round(settings: Settings, port: int) -> dict[str, list]:
    """The same calls from the plain client on the HTTP server at ``port``: tool -> [ms]."""
    workload, out = settings.workload, {}
    per_call = workload.shape == "per-call"
    with raw_mcp.Http(port=port) as plain:
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


def shared_session_round(command, settings: Settings) -> dict[str, dict[str, list]]:
    """Over stdio, one round on one fresh server shared by both methods: mcpstart's session
    (spawn.started, initialize) and the plain client on the same pipes (raw_mcp.Borrowed),
    per tool warmed up by mcpstart's rule (warmup.warm_up on mcpstart's calls), then blocks of
    BLOCK calls taking turns, which method first alternating block by block; mcpstart's
    blocks are warm.round_trips, the series function of its per-tool step over stdio.
    Returns method -> tool -> [ms]: both methods' calls meet the server in the same state,
    so a mode that lasts a session (measure/warm_sessions.py) is in both."""
    out: dict[str, dict[str, list]] = {"mcpstart": {}, "plain": {}}
    first = initialize_request(settings.requested_revision)
    with spawn.started([(command, first)], settings, timed=False) as (session,):
        initialize_result(session.wait(1, settings.timeout_s))
        session.notify("notifications/initialized")
        stdin_fd, stdout_fd, _ = session.transport.prepared.parent_fds
        plain = raw_mcp.Borrowed(stdin_fd, stdout_fd)
        for call in settings.workload.calls:
            params = call.params(SMALL_TEXT)
            warmup.warm_up(lambda: round_trips(session, call, 1, settings.timeout_s)["samples"][0])
            mine, theirs = out["mcpstart"].setdefault(call.name, []), out["plain"].setdefault(
                call.name, [])
            for block in range(max(settings.round_trips // BLOCK, 1)):
                for method in ("mcpstart", "plain") if block % 2 == 0 else ("plain", "mcpstart"):
                    if method == "mcpstart":
                        mine += round_trips(session, call, BLOCK, settings.timeout_s)["samples"]
                        continue
                    with plain.turn():
                        for _ in range(BLOCK):
                            answer = plain.request("tools/call", params)
                            if "error" in answer.message or answer.message["result"].get(
                                    "isError"):
                                raise RuntimeError(f"plain client: {call.name}: "
                                                   f"{answer.message}")
                            theirs.append(answer.ms)
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
            if port is None:
                for method, got in shared_session_round(command, settings).items():
                    for tool, times in got.items():
                        sessions[method].setdefault(tool, []).append(times)
                continue
            order = ("mcpstart", "plain") if round_ % 2 == 0 else ("plain", "mcpstart")
            for method in order:
                got = (mcpstart_round(name, settings, port) if method == "mcpstart"
                       else plain_round(settings, port))
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
          f"{args.rounds} rounds of {args.calls} calls per tool and method (over stdio on one "
          f"fresh server per round, in turns of {BLOCK}; over HTTP alternating rounds on one "
          f"server process after {WARMUP_ROUNDS} common warm-up rounds); "
          f"target within {RATIO:.0%} + {SLACK_MS} ms; "
          f"{'unpinned' if args.pin is None else f'on CPU {args.pin}'}; {load_average()} at start")
    print(header("plain client"))
    with mock_api.for_workload(settings) as settings:  # {mock_api}: the run's own mock API
        for name, (transport, cmd) in servers.items():
            check(name, transport, cmd, settings, args.rounds)
    print(f"{load_average()} at the end")


if __name__ == "__main__":
    main()
