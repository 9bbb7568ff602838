"""How exact mcpstart's HTTP clock is, and the client's share of a stateless call: the same
HTTP cold start phases timed by mcpstart (cold.cold_start and cold.modern_start over the
Streamable HTTP transport, as ``measure --transport http`` runs them) and by an independent
C client (benchmarks/http_clock.c: posix_spawnp, blocking connect() retried on mcpstart's
sampling plan, raw sockets, CLOCK_MONOTONIC), the two clients' starts of each kind back to
back, the same 50 ms pause before each spawn (``one_round`` gives the order).
The target: mcpstart's median within 1.05x the C client's + 0.2 ms, per phase.

Then the client's share (issue 18, point 7): N stateless 2026-07-28 tools/call on one
kept-alive connection from each client; the difference of the medians is what mcpstart's
Python client adds to every call it times.

    python benchmarks/http_clock.py [NAMES...] [--rounds 30] [--calls 200]

NAMES: HTTP recipes (default: every one). Builds what is stale (mcpstart's build cache).
Run it on a quiet machine: the figures are the machine's as much as the clients'. 30 rounds,
as a server that takes 0.25 to 0.8 s to start (Node.js, Python) varies by 5 to 10% from
spawn to spawn: medians of 10 differed between the two clients by up to 6% on this machine.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from mcpstart.measure.client import Skips, call_tool
from mcpstart.measure.cold import cold_start, modern_start
from mcpstart.measure.settings import Settings
from mcpstart.targets.build import cache_root, ensure_built
from mcpstart.targets.recipes import load_recipes
from mcpstart.transports.http import HttpTransport, free_port, with_port
from mcpstart.transports.session import Session
from mcpstart.wire import SMALL_TEXT, ToolCall, modern_request

HERE = Path(__file__).parent
RECIPES = HERE.parent / "build-recipes"
PHASES = ("port", "initialize", "tools_list", "first_call", "modern_port", "modern_first_call")
RATIO, SLACK_MS = 1.05, 0.2


def compile_client(folder: Path) -> Path:
    """benchmarks/http_clock.c built with the system C compiler (gcc or cc)."""
    compiler = shutil.which("gcc") or shutil.which("cc")
    if compiler is None:
        sys.exit("http_clock: no C compiler (gcc, cc) on PATH")
    binary = folder / "http_clock"
    subprocess.run([compiler, "-O2", "-o", str(binary), str(HERE / "http_clock.c")], check=True)
    return binary


def c_run(binary: Path, mode: str, command, pause_ms: float) -> list[float]:
    """One run of the C client on a fresh port: its phases in ms."""
    port = free_port()
    argv = with_port(command, port).argv
    out = subprocess.run([str(binary), mode, str(port), str(pause_ms), "--", *argv],
                         capture_output=True, text=True, cwd=command.cwd,
                         env=command.environment(), timeout=120)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip())
    return [float(v) for v in out.stdout.split()]


def mcpstart_run(mode: str, command, settings: Settings) -> list[float]:
    """The same phases from mcpstart's probes: "cold" (port, initialize, tools/list, first
    call) or "modern" (the stateless first call; no port figure)."""
    if mode == "cold":
        sample = cold_start(command, settings, Skips())
        return [sample["port"], sample["handshake"], sample["tools_list"], sample["first_call"]]
    request = modern_request("tools/call", ToolCall().params(SMALL_TEXT))
    ms, _, _, error = modern_start(command, settings, request, "tools/call reverse_text")
    if error is not None:
        raise RuntimeError(str(error))
    return [None, ms]


def mcpstart_warm(command, settings: Settings, calls: int) -> list[float]:
    """``calls`` stateless calls on one kept-alive connection, timed by mcpstart's client."""
    request = modern_request("tools/call", ToolCall().params(SMALL_TEXT))
    session = Session.start(HttpTransport(command), request, wait_s=60, waits=settings.waits)
    try:
        session.wait(1, 60)
        params = request["params"]
        times = []
        for _ in range(calls):
            answer = call_tool(session, ToolCall(), SMALL_TEXT, 10, meta=params["_meta"])
            times.append(answer.response.answer_ms)
        return times
    finally:
        session.shutdown()


def one_round(binary: Path, command, settings: Settings,
              round_: int) -> tuple[list[float], list[float]]:
    """One run of each client and kind of start: (the C client's phases, mcpstart's), in
    PHASES' order (mcpstart has no modern_port: None). The two clients' starts of one kind
    run back to back, which client first turning every round and which kind first every
    second round, so that no client's start of one kind always follows the same kind of
    start (with each client's two starts together, mcpstart's stateless start followed a
    cold start in every other round and the C client's never did)."""
    kinds = ("cold", "modern") if round_ // 2 % 2 == 0 else ("modern", "cold")
    theirs, mine = {}, {}
    clients = [(theirs, lambda mode: c_run(binary, mode, command, settings.pause_ms)),
               (mine, lambda mode: mcpstart_run(mode, command, settings))]
    if round_ % 2:
        clients.reverse()
    for mode in kinds:
        for into, run in clients:
            into[mode] = run(mode)
    return theirs["cold"] + theirs["modern"], mine["cold"] + mine["modern"]


def per_phase(c_runs: list[list[float]], our_runs: list[list[float]],
              pick=statistics.median) -> dict:
    """phase -> (``pick`` of the C client's ms, of mcpstart's), for the phases mcpstart times.
    ``pick``: the median (this script), or the minimum, which a busy machine's interference
    (it only ever adds) moves least while a clock's own error is in every run (the e2e test)."""
    found = {}
    for index, phase in enumerate(PHASES):
        mine = [run[index] for run in our_runs if run[index] is not None]
        if mine:
            found[phase] = (pick([run[index] for run in c_runs]), pick(mine))
    return found


def met(theirs: float, mine: float) -> bool:
    return mine <= RATIO * theirs + SLACK_MS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    recipes = (load_recipes(RECIPES, args.names) if args.names
               else load_recipes(RECIPES, transport="http"))
    settings = replace(Settings(), spawner=lambda command: HttpTransport(command))
    builds = {}
    for recipe in recipes:
        build = ensure_built(recipe, cache_root())
        if not build.ok:
            print(f"{recipe.name}: {build.status}: {build.reason}")
            continue
        builds[recipe.name] = build.command()
    with tempfile.TemporaryDirectory() as folder:
        binary = compile_client(Path(folder))
        c_times = {name: [] for name in builds}
        ours = {name: [] for name in builds}
        for round_ in range(args.rounds):
            for name, command in builds.items():  # each start follows each kind as often
                theirs, mine = one_round(binary, command, settings, round_)
                c_times[name].append(theirs)
                ours[name].append(mine)
        print(f"{args.rounds} rounds per server, the two clients back to back per kind of "
              f"start, the first turning; pause "
              f"{settings.pause_ms:g} ms; load average at the end "
              f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}, {os.cpu_count()} cores")
        print(f"{'server':16} {'phase':18} {'C ms':>9} {'mcpstart ms':>12} {'ratio':>7} "
              f"{'diff ms':>8}  target")
        for name in builds:
            for phase, (theirs, mine) in per_phase(c_times[name], ours[name]).items():
                print(f"{name:16} {phase:18} {theirs:9.3f} {mine:12.3f} {mine / theirs:7.3f} "
                      f"{mine - theirs:+8.3f}  {'met' if met(theirs, mine) else 'MISSED'}")
        print(f"\nthe client's share: {args.calls} stateless tools/call on one kept-alive "
              "connection, median ms")
        print(f"{'server':16} {'C client':>9} {'mcpstart':>9} {'share':>8}")
        for name, command in builds.items():
            port = free_port()
            out = subprocess.run([str(binary), "warm", str(port), str(args.calls), "--",
                                  *with_port(command, port).argv], capture_output=True,
                                 text=True, cwd=command.cwd, env=command.environment(),
                                 timeout=300, check=True)
            theirs = statistics.median(float(v) for v in out.stdout.split())
            mine = statistics.median(mcpstart_warm(command, settings, args.calls))
            print(f"{name:16} {theirs:9.3f} {mine:9.3f} {mine - theirs:+8.3f}")


if __name__ == "__main__":
    main()
