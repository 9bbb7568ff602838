"""Load throughput checked by an independent load tool: on each HTTP reference server, started
once, mcpstart's load block (measure/load.py: Locust in a process of its own) and autocannon
(npm, driven by benchmarks/load_check.js through its programmatic API) on the same scenario
with the same connections, alternating round by round (which goes first alternates too), with
the engine's ceiling measured in every round as a run measures it (the same scenario against
the C floor, c-http, started again with --answer in each server's own answer shape as
mcpstart's transport reads it; on c-http its own block is its ceiling) and mcpstart's verdict taken
from the rule a run applies (load.engine_bound).

Target (issue 23): mcpstart's rate at least 0.8x autocannon's, or the block marked
engine-bound; no block under 0.5x unmarked, no block at 0.8x or more marked.

    python benchmarks/load_check.py [NAMES...] [--rounds 3] [--seconds 5] [--users 10]
        [--scenario calls --scenario session]

NAMES: HTTP recipes (default: the five reference servers). Builds what is stale (mcpstart's
build cache); autocannon is installed with npm into the cache's tools/ folder on first use.
The server runs on the first CPU, both load tools on the others (load.cores), as in a run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from mcpstart.command import Command
from mcpstart.endpoint import Endpoint
from mcpstart.measure import load, spawn
from mcpstart.measure.settings import Settings
from mcpstart.targets.build import cache_root, ensure_built
from mcpstart.targets.recipes import load_recipes
from mcpstart.transports.http import HttpTransport, affinity, free_port, with_port
from mcpstart.wire import ToolCall, initialize_request

HERE = Path(__file__).parent
RECIPES = HERE.parent / "build-recipes"
NAMES = ("c-http", "go-http", "python-http", "rust-http", "typescript-http")
FLOOR = "c-http"
AUTOCANNON = "9.0.0"
AGREE, UNDER = 0.8, 0.5
"""mcpstart at AGREE x autocannon or more agrees (must not be marked); under UNDER it must
be marked engine-bound."""
START_S = 60.0
CALL = ToolCall()
"""reverse_text, the reference servers' tool."""


@dataclass
class Round:
    """One round of one scenario on one server: requests/s by each tool, and the verdict."""

    server: str
    scenario: str
    mcpstart_rps: float
    autocannon_rps: float
    ceiling_rps: float
    marked: bool | None
    errors: int

    @property
    def ratio(self) -> float:
        return self.mcpstart_rps / self.autocannon_rps if self.autocannon_rps else float("nan")

    @property
    def met(self) -> bool:
        """The target: agreeing and unmarked, or marked and not agreeing; between UNDER and
        AGREE unmarked is allowed."""
        if self.marked:
            return self.ratio < AGREE
        return self.ratio >= UNDER


def install_autocannon() -> Path:
    """The folder autocannon AUTOCANNON is installed in (npm, into mcpstart's cache).

    Raises:
        SystemExit: npm or node is not on PATH, or the install failed.
    """
    folder = cache_root() / "tools" / f"autocannon-{AUTOCANNON}"
    if (folder / "node_modules" / "autocannon" / "package.json").exists():
        return folder
    if not (shutil.which("npm") and shutil.which("node")):
        sys.exit("load_check: npm and node are needed (they build the TypeScript servers)")
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", str(folder),
                           f"autocannon@{AUTOCANNON}"], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"load_check: npm install autocannon@{AUTOCANNON} failed: {done.stderr[-800:]}")
    return folder


class Server:
    """A built reference server on a free loopback port, pinned to ``cpus``, in a session of
    its own (killed as a group on close); ``extra``: arguments after its recipe's."""

    def __init__(self, name: str, cpus: frozenset[int] | None, extra: tuple[str, ...] = ()):
        [recipe] = load_recipes(RECIPES, [name])
        build = ensure_built(recipe, cache_root())
        if not build.ok:
            raise RuntimeError(f"{name}: not built: {build.reason}")
        self.name, port = name, free_port()
        built = with_port(build.command(), port)
        command = Command([*built.argv, *extra], built.cwd, built.env, built.base_env)
        with affinity(cpus):
            self.proc = subprocess.Popen(command.argv, cwd=command.cwd, env=command.environment(),
                                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL, start_new_session=True)
        self.endpoint = Endpoint("127.0.0.1", port)
        deadline = time.monotonic() + START_S
        while True:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError(f"{name}: did not listen on port {port}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.02)
        self.processes = [psutil.Process(self.proc.pid)]

    def answer_shape(self, settings: Settings) -> str | None:
        """How it answers initialize, as mcpstart's transport reads it (answer_shape)."""
        over = Settings(spawner=lambda _command: HttpTransport(url=self.endpoint.url))
        first = initialize_request(settings.requested_revision)
        with spawn.started([(None, first)], over, timed=False) as (session,):
            session.wait(1, settings.timeout_s)
            return session.transport.answer_shape

    def close(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()


def autocannon(folder: Path, endpoint: Endpoint, scenario: str, users: int, seconds: float,
               cpus: frozenset[int] | None) -> dict:
    """One autocannon run (load_check.js): ``{requests, rps, non_2xx, errors, timeouts, ...}``.

    Raises:
        RuntimeError: it failed (its stderr quoted).
    """
    config = {"url": endpoint.url, "scenario": scenario, "connections": users,
              "duration_s": seconds}
    with affinity(cpus):
        done = subprocess.run(["node", str(HERE / "load_check.js"), str(folder),
                               json.dumps(config)], capture_output=True, text=True,
                              timeout=seconds + START_S)
    if done.returncode != 0:
        raise RuntimeError(f"autocannon on {endpoint.url}: {done.stderr.strip()[-800:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def compare(names: list[str], scenarios: list[str], rounds: int, seconds: float, users: int,
            report=print) -> list[Round]:
    """Every round of every scenario on every server in ``names`` (the floor is started for
    the ceiling whatever ``names`` holds); each round line is passed to ``report``."""
    folder = install_autocannon()
    server_cpus, engine_cpus = load.cores()
    settings = Settings(load_s=seconds, load_users=users)
    servers: dict[str, Server] = {}
    out: list[Round] = []
    try:
        for name in dict.fromkeys([FLOOR, *names]):
            servers[name] = Server(name, server_cpus)
        shapes = {name: servers[name].answer_shape(settings) for name in names}
        floors = {"json": servers[FLOOR]}
        for shape in set(shapes.values()) - {"json", None}:  # the floor answering in that shape
            floors[shape] = servers[f"{FLOOR} --answer {shape}"] = Server(
                FLOOR, server_cpus, ("--answer", shape))
        for round_ in range(rounds):
            for scenario in scenarios:
                ceilings = {shape: {**load.run_scenario(floor.endpoint, scenario, settings, CALL,
                                                        floor.processes, engine_cpus,
                                                        server_cpus), "answer_shape": shape}
                            for shape, floor in floors.items()}
                for name in names:
                    server = servers[name]

                    ceiling = ceilings.get(shapes[name])  # None: no shape read, unknown

                    def mine():
                        if name == FLOOR:
                            return ceiling
                        return {**load.run_scenario(server.endpoint, scenario, settings, CALL,
                                                    server.processes, engine_cpus, server_cpus),
                                "answer_shape": shapes[name]}

                    def theirs():
                        return autocannon(folder, server.endpoint, scenario, users, seconds,
                                          engine_cpus)
                    if (round_ + names.index(name)) % 2:  # who goes first alternates
                        other = theirs()
                        block = mine()
                    else:
                        block = mine()
                        other = theirs()
                    marked = load.engine_bound(block, [ceiling] if ceiling else [])["engine_bound"]
                    row = Round(name, scenario, block["rps"] or 0.0, other["rps"],
                                (ceiling or {}).get("rps") or 0.0, marked,
                                block["errors"]["total"] + other["non_2xx"] + other["errors"])
                    out.append(row)
                    report(line(row, f"round {round_ + 1}"))
    finally:
        for server in servers.values():
            server.close()
    return out


def line(row: Round, label: str) -> str:
    return (f"{row.server:16} {row.scenario:8} {label:9} {row.mcpstart_rps:9,.0f} "
            f"{row.autocannon_rps:11,.0f} {row.ratio:6.2f} {row.ceiling_rps:9,.0f} "
            f"{'engine-bound' if row.marked else 'unknown' if row.marked is None else 'no':12} "
            f"{row.errors:6} {'met' if row.met else 'MISSED'}")


def summary(rows: list[Round]) -> list[Round]:
    """Per server and scenario: the medians of the rounds, marked when most rounds were."""
    out = []
    for key in dict.fromkeys((r.server, r.scenario) for r in rows):
        these = [r for r in rows if (r.server, r.scenario) == key]
        marks = [r.marked for r in these]
        out.append(Round(*key, statistics.median(r.mcpstart_rps for r in these),
                         statistics.median(r.autocannon_rps for r in these),
                         statistics.median(r.ceiling_rps for r in these),
                         None if None in marks else 2 * sum(marks) > len(marks),
                         sum(r.errors for r in these)))
    return out


HEADER = (f"{'server':16} {'scenario':8} {'':9} {'mcpstart':>9} {'autocannon':>11} "
          f"{'ratio':>6} {'ceiling':>9} {'mcpstart says':12} {'errors':>6} target")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", default=list(NAMES))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--users", type=int, default=10)
    parser.add_argument("--scenario", action="append", choices=("calls", "session"))
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # the servers are closed on the way out
    scenarios = args.scenario or ["calls", "session"]
    print(f"load check: {args.rounds} rounds x {args.seconds:g} s, {args.users} connections; "
          f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}, "
          f"{os.cpu_count()} cores; target: ratio >= {AGREE} or marked engine-bound, "
          f"under {UNDER} marked, {AGREE} or more unmarked")
    print(HEADER)
    rows = compare(args.names, scenarios, args.rounds, args.seconds, args.users)
    print(f"medians (load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}):")
    print(HEADER)
    medians = summary(rows)
    for row in medians:
        print(line(row, "median"))
    slow = [r.scenario for r in medians if r.server == FLOOR and r.ratio >= UNDER]
    if slow:
        print(f"note: autocannon read {FLOOR} at less than twice Locust's rate in "
              f"{', '.join(slow)}: on this machine now the independent tool is not much faster "
              "than the engine (a busy machine starves both), so the comparison cannot tell "
              "the engine's limit from the server's there")


if __name__ == "__main__":
    main()
