"""Is mcpstart's warm round trip the server's? The small reverse_text call repeated on one warm
session, timed by mcpstart's probe (measure/warm.py ``round_trips``, over mcpstart's stdio or
HTTP transport) and by a plain client (benchmarks/raw_mcp.py: pipes and a buffered readline,
or a plain socket on a kept-alive connection; time.perf_counter_ns around each call), on fresh
sessions alternating session by session (each method goes first in every other round).

Prints per server the p50 and p95 of all calls of each method, their ratio, and met/MISSED
against the target: mcpstart's p50 at most 1.10x the plain client's + 0.1 ms (p95 is shown,
not judged); then each method's per-session medians, sorted (a mode that lasts a session
shows there: measure/warm_sessions.py). Asserts nothing. 8 sessions per method by default: a
JIT runtime's warm calls differ from session to session (with 4, TypeScript's p50 read 1.17
ms against 0.44 ms, with 8 0.74 against 0.59). ``--pin CPU`` runs this process, and so every
server it spawns, on that one CPU (client and server on one CPU).

Usage: python benchmarks/warm_check.py [--rounds 8] [--calls 100] [--pin CPU] [NAMES...]
NAMES: reference recipes (default: all, stdio and HTTP).
"""

from __future__ import annotations

import os
import statistics
from dataclasses import replace

import raw_mcp
from checks import arguments, header, load_average, reference_builds, verdict
from mcpstart.measure import spawn
from mcpstart.measure.client import initialize_result
from mcpstart.measure.settings import Settings
from mcpstart.measure.warm import round_trips
from mcpstart.transports.http import HttpTransport
from mcpstart.wire import SMALL_TEXT, ToolCall, initialize_request

RATIO, SLACK_MS = 1.10, 0.1


def mcpstart_session(command, transport: str, calls: int) -> list[float]:
    """``calls`` round trips in ms from mcpstart's probe on one fresh, initialized session."""
    settings = Settings()
    if transport == "http":
        settings = replace(settings, spawner=lambda c: HttpTransport(c))
    first = initialize_request(settings.requested_revision)
    with spawn.started([(command, first)], settings, timed=False) as (session,):
        initialize_result(session.wait(1, settings.timeout_s))
        session.notify("notifications/initialized")
        return round_trips(session, ToolCall(), calls, settings.timeout_s)["samples"]


def plain_session(command, transport: str, calls: int) -> list[float]:
    """The same calls from the plain client on one fresh, initialized session."""
    params = {"name": "reverse_text", "arguments": {"text": SMALL_TEXT}}
    with raw_mcp.client(command, transport) as plain:
        return [plain.request("tools/call", params).ms for _ in range(calls)]


def percentiles(samples: list[float]) -> tuple[float, float]:
    """(p50, p95) in ms, p95 by linear interpolation."""
    return statistics.median(samples), statistics.quantiles(samples, n=20,
                                                            method="inclusive")[18]


def sessions_of(command, transport: str, rounds: int, calls: int) -> dict[str, list[list[float]]]:
    """``rounds`` sessions of each method, alternating: {"mcpstart": [[ms] per session],
    "plain": [...]}."""
    sessions = {"mcpstart": [], "plain": []}
    methods = {"mcpstart": mcpstart_session, "plain": plain_session}
    for round_ in range(rounds):
        order = ("mcpstart", "plain") if round_ % 2 == 0 else ("plain", "mcpstart")
        for method in order:
            sessions[method].append(methods[method](command, transport, calls))
    return sessions


def compare(command, transport: str, rounds: int, calls: int) -> dict[str, tuple[float, float]]:
    """``sessions_of``'s figures: {"mcpstart": (p50, p95), "plain": (p50, p95)} over all the
    calls of each method."""
    return {method: percentiles([ms for s in sessions for ms in s]) for method, sessions
            in sessions_of(command, transport, rounds, calls).items()}


def spread(sessions: list[list[float]]) -> str:
    """The sessions' medians in ms, sorted."""
    return " ".join(f"{m:.3f}" for m in sorted(statistics.median(s) for s in sessions))


def met(mine: float, theirs: float) -> bool:
    return mine <= RATIO * theirs + SLACK_MS


def main() -> None:
    args = arguments(__doc__, rounds=8, calls=100, pin=-1)
    if args.pin >= 0:
        os.sched_setaffinity(0, {args.pin})
    builds = reference_builds(args.names)
    print(f"{args.rounds} sessions of {args.calls} calls per method and server, alternating, "
          f"{'on CPU ' + str(args.pin) if args.pin >= 0 else 'unpinned'}; "
          f"target p50 <= {RATIO:.2f}x + {SLACK_MS} ms; {load_average()} at start")
    print(header("plain client"))
    for name, (transport, command) in builds.items():
        sessions = sessions_of(command, transport, args.rounds, args.calls)
        (mine50, mine95), (theirs50, theirs95) = (
            percentiles([ms for s in sessions[method] for ms in s])
            for method in ("mcpstart", "plain"))
        print(verdict(name, "p50", mine50, theirs50, met(mine50, theirs50), "ms"))
        print(f"{name:16} {'p95':17} {mine95:14,.3f} ms  {theirs95:14,.3f} ms  "
              f"{mine95 / theirs95:7.4f}  (shown)")
        for method in ("mcpstart", "plain"):
            print(f"{name:16} session p50s, {method}: {spread(sessions[method])}")
    print(f"{load_average()} at the end")


if __name__ == "__main__":
    main()
