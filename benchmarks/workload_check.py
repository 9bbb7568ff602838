"""Are mcpstart's per-tool warm figures the server's? Each tool of a workload called warm by
mcpstart and by a plain client (benchmarks/raw_mcp.py: os.read on the server's pipes, or a
plain socket on a kept-alive connection; no mcpstart code on the timed path), the same calls in
the same shape, timed from the call's request to its answer. Both methods face the same mock
API (the run's own, in this process) and the same server state.

Each round, on one server, the two methods take turns (``alternate``) in blocks of BLOCK calls
of a tool, which method first alternating block by block, after each tool is warmed up by
mcpstart's rule (measure/warmup.py: over stdio on mcpstart's calls, the server being shared;
over HTTP on each method's, each on a connection of its own); a server's state that lasts a session
or a process (a JIT's choices, which CPUs client and server share: measure/warm_sessions.py)
then holds for both methods alike, where with a server or a round per method it was one
method's draw:

- over stdio, each round is one fresh server shared on the same pipes: mcpstart's session
  and its series function (measure/warm.py ``round_trips``, what its per-tool step times)
  and the plain client (raw_mcp.Borrowed);
- over HTTP, one server process per server, started once, whose first WARMUP_ROUNDS rounds
  are uncounted (a JIT compiles during the first calls); each round mcpstart's transport on
  the server's URL and the plain client's connection of its own (raw_mcp.Http). With the
  shape "per-call" each call is a full session of its own, on mcpstart's side
  measure/session_cost.py ``one_session`` (what the per-tool step's per-call series times),
  on the plain client's its own initialize, notification, call and DELETE.

Prints per server and tool the p50 and p95 of all counted calls of each method, their ratio,
and met/MISSED against the target: mcpstart's figure within 10% + 0.2 ms of the plain
client's, either way; under each, the same figure of the plain client's even rounds against
its odd rounds, held to the same target (the method's own noise: where it misses too, a miss
above says as much about the machine as about mcpstart); then each method's per-session
medians, sorted (a mode that lasts a session shows there: measure/warm_sessions.py). Asserts
nothing. ``--pin CPU`` runs this process, and so every server it spawns, on that one CPU.

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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from functools import partial
from pathlib import Path

import raw_mcp
from checks import header, load_average, reference_builds, verdict
from mcpstart.command import Command
from mcpstart.endpoint import ENDPOINT
from mcpstart.measure import mock_api, spawn, warmup
from mcpstart.measure.client import initialize_result
from mcpstart.measure.server import Server
from mcpstart.measure.session_cost import one_session
from mcpstart.measure.settings import Settings
from mcpstart.results import ServerResult
from mcpstart.targets.recipes import PORT
from mcpstart.measure.warm import round_trips
from mcpstart.wire import SMALL_TEXT, initialize_request
from mcpstart.workload import load

RATIO, SLACK_MS = 0.10, 0.2
BLOCK = 10
"""The calls of one method's turn."""
WARMUP_ROUNDS = 2
"""Over HTTP, the uncounted rounds that open the shared process's check: the common
warm-up."""
WORKLOAD_RECIPES = Path(__file__).parent.parent / "workload-recipes"


def alternate(methods: dict[str, Callable[[int], list[float]]], count: int) -> dict[str, list]:
    """``count`` calls of each method (rounded down to whole blocks, at least one), in
    blocks of BLOCK taking turns, which method goes first alternating block by block:
    method -> [ms]. ``methods``: name -> a function making that many calls, their times."""
    out = {name: [] for name in methods}
    names = list(methods)
    for block in range(max(count // BLOCK, 1)):
        for name in names if block % 2 == 0 else reversed(names):
            out[name] += methods[name](BLOCK)
    return out


def plain_calls(plain, call, params: dict, per_call: bool, count: int) -> list[float]:
    """``count`` calls of the tool from the plain client (each in a session of its own when
    ``per_call``, over HTTP): their ms, request to answer.

    Raises:
        RuntimeError: an error answer or a tool error.
    """
    times = []
    with plain.turn():
        for _ in range(count):
            if per_call:
                plain.end_session()
                plain.open_session()
            answer = plain.request("tools/call", params)
            if "error" in answer.message or answer.message["result"].get("isError"):
                raise RuntimeError(f"plain client: {call.name}: {answer.message}")
            times.append(answer.ms)
    return times


def mcpstart_calls(session, settings: Settings, call, per_call: bool, count: int) -> list[float]:
    """``count`` calls of the tool through mcpstart's series functions: over stdio and on a
    shared HTTP session warm.round_trips, over HTTP per call session_cost.one_session (what
    per_tool.py's per-call series times: the call's own ms in a full session)."""
    if per_call:
        return [one_session(session.transport, settings, call)[2]["tools/call"]
                for _ in range(count)]
    return round_trips(session, call, count, settings.timeout_s)["samples"]


def shared_round(session, plain, settings: Settings, per_call: bool, plain_warms: bool
                 ) -> dict[str, dict[str, list]]:
    """One round of every tool on one server, mcpstart's ``session`` and the ``plain``
    client taking turns (``alternate``) after each tool is warmed up by mcpstart's rule
    (warmup.warm_up) with mcpstart's calls, and with ``plain_warms`` with the plain
    client's too: method -> tool -> [ms]. Both methods' calls meet the server in the same
    state, so a mode that lasts a session or a process (measure/warm_sessions.py) is in
    both."""
    out: dict[str, dict[str, list]] = {"mcpstart": {}, "plain": {}}
    for call in settings.workload.calls:
        methods = {"mcpstart": partial(mcpstart_calls, session, settings, call, per_call),
                   "plain": partial(plain_calls, plain, call, call.params(SMALL_TEXT), per_call)}
        for calls in methods.values() if plain_warms else [methods["mcpstart"]]:
            warmup.warm_up(lambda calls=calls: calls(1)[0])
        for method, times in alternate(methods, settings.round_trips).items():
            out[method][call.name] = times
    return out


def shared_session_round(command, settings: Settings) -> dict[str, dict[str, list]]:
    """Over stdio, one round on one fresh server shared by both methods: mcpstart's session
    (spawn.started, initialize) and the plain client on the same pipes (raw_mcp.Borrowed):
    ``shared_round``, each tool warmed up by mcpstart's calls alone, since the server they
    warm is the same (a warm-up by the plain client too hung the Python workload server in
    one run, the server blocked writing a pipe and this process reading one; not
    explained). Returns method -> tool -> [ms]."""
    first = initialize_request(settings.requested_revision)
    with spawn.started([(command, first)], settings, timed=False) as (session,):
        initialize_result(session.wait(1, settings.timeout_s))
        session.notify("notifications/initialized")
        stdin_fd, stdout_fd, _ = session.transport.prepared.parent_fds
        return shared_round(session, raw_mcp.Borrowed(stdin_fd, stdout_fd), settings, False,
                            False)


def http_round(name: str, settings: Settings, port: int) -> dict[str, dict[str, list]]:
    """Over HTTP, one round on the server listening at ``port``: mcpstart's transport on
    its URL (an initialized session; with the shape "per-call" a full session per call) and
    the plain client on a connection of its own (raw_mcp.Http), ``shared_round``. Returns
    method -> tool -> [ms]."""
    server = Server(ServerResult(name, "http"), None, transport="http",
                    url=f"http://127.0.0.1:{port}{ENDPOINT}")
    first = initialize_request(settings.requested_revision)
    per_call = settings.workload.shape == "per-call"
    with spawn.started([(None, first)], server.spawning(settings), timed=False) as (session,), \
            raw_mcp.Http(port=port) as plain:
        initialize_result(session.wait(1, settings.timeout_s))
        session.notify("notifications/initialized")
        if per_call:
            session.transport.end_session(settings.timeout_s)
        return shared_round(session, plain, settings, per_call, True)


def one_round(name: str, command, settings: Settings, port: int | None
              ) -> dict[str, dict[str, list]]:
    """One round of the server: over stdio (``port`` None, as ``shared_process`` yields it)
    ``shared_session_round`` on a fresh server, over HTTP ``http_round`` on the server at
    ``port``. Returns method -> tool -> [ms]."""
    if port is None:
        return shared_session_round(command, settings)
    return http_round(name, settings, port)


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
        warmup_rounds = 0 if port is None else WARMUP_ROUNDS
        for round_ in range(warmup_rounds + rounds):
            got = one_round(name, command, settings, port)
            if round_ < warmup_rounds:
                continue
            for method, tools in got.items():
                for tool, times in tools.items():
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
          f"fresh server per round, over HTTP on one server process after {WARMUP_ROUNDS} "
          f"uncounted rounds; in turns of {BLOCK} calls); "
          f"target within {RATIO:.0%} + {SLACK_MS} ms; "
          f"{'unpinned' if args.pin is None else f'on CPU {args.pin}'}; {load_average()} at start")
    print(header("plain client"))
    with mock_api.for_workload(settings) as settings:  # {mock_api}: the run's own mock API
        for name, (transport, cmd) in servers.items():
            check(name, transport, cmd, settings, args.rounds)
    print(f"{load_average()} at the end")


if __name__ == "__main__":
    main()
