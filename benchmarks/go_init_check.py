"""Is mcpstart's Go start-up attribution (the ``imports`` block with ``runtime`` "go": package
init time per module, measure/go_init.py) what the runtime's trace says when read by hand?
Each round, alternating which goes first: one profiled start through mcpstart
(profiled.profiled_start, go_init.parse and go_init.attribute, as ``measure`` runs them), and
one run by hand: the Go server spawned with ``GODEBUG=inittrace=1`` by subprocess, an initialize
request written, its answer read, the process ended, its stderr read with a regular
expression of this script, each package assigned to a module by ``go version -m`` (the Go
toolchain's reading of the binary's build information, not mcpstart's). Two targets:
per module (over 0.05 ms), mcpstart's median init time within 20% of the hand-read median
(or 0.05 ms), and the sum of the inits not above the profiled start (each mcpstart run).

    python benchmarks/go_init_check.py [NAMES...] [--rounds 7]

NAMES: Go recipes (default: go). Builds what is stale (mcpstart's build cache).
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess

from checks import arguments, load_average, reference_builds
from mcpstart.measure import go_init
from mcpstart.measure.profiled import profiled_start
from mcpstart.measure.settings import Settings
from mcpstart.transports.tree import child_subreaper

TRACE = re.compile(r"^init (\S+) @\S+ ms, ([0-9.]+) ms clock")
INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "go_init_check", "version": "1"}}}) + "\n"
RATIO, SLACK_MS = 0.20, 0.05


def modules_by_go(binary: str) -> list[str]:
    """The main and dependency module paths ``go version -m`` prints."""
    out = subprocess.run(["go", "version", "-m", binary], capture_output=True, text=True,
                         check=True).stdout
    return [line.split("\t")[2] for line in out.splitlines()
            if line.startswith("\t") and line.split("\t")[1] in ("mod", "dep")]


def by_hand(argv: list[str], cwd: str | None, modules: list[str]) -> dict[str, float]:
    """One traced start read by hand: module -> init ms summed over its packages."""
    env = {**os.environ, "GODEBUG": "inittrace=1"}
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdin.write(INITIALIZE)
    proc.stdin.flush()
    proc.stdout.readline()
    proc.kill()
    _, err = proc.communicate()
    sums: dict[str, float] = {}
    for line in err.splitlines():
        if found := TRACE.match(line):
            package = found[1]
            owners = [m for m in modules if package == m or package.startswith(m + "/")]
            module = ("(standard library)" if "." not in package.split("/")[0]
                      else max(owners, key=len) if owners else package)
            sums[module] = sums.get(module, 0.0) + float(found[2])
    return sums


def main() -> None:
    args = arguments(__doc__, rounds=7)
    settings = Settings(timeout_s=60)
    for name, (_transport, command) in reference_builds(args.names or ["go"]).items():
        binary, info = go_init.go_program(command)
        modules = modules_by_go(binary)
        ours, theirs, over = [], [], 0
        with child_subreaper():
            for index in range(args.rounds):
                for side in ("mcpstart", "hand") if index % 2 == 0 else ("hand", "mcpstart"):
                    if side == "hand":
                        theirs.append(by_hand(command.argv, command.cwd, modules))
                        continue
                    ms, text, _ = profiled_start(command, settings, go_init.traced_env(command),
                                                 lambda _p: None)
                    found = go_init.attribute(go_init.parse(text), info)
                    over += found["import_ms"] > ms
                    ours.append({name: d["self_ms"] for name, d in found["distributions"].items()})
        print(f"{name}: {args.rounds} rounds, alternating; {load_average()}")
        print(f"  sum of inits above the profiled start: {over} of {args.rounds} runs "
              f"({'met' if over == 0 else 'MISSED'})")
        print(f"  {'module':44} {'mcpstart ms':>11} {'by hand ms':>10} {'ratio':>6}  target")
        names = sorted({n for run in ours + theirs for n in run},
                       key=lambda n: -statistics.median(r.get(n, 0.0) for r in theirs))
        for name in names:
            mine = statistics.median(r.get(name, 0.0) for r in ours)
            hand = statistics.median(r.get(name, 0.0) for r in theirs)
            if max(mine, hand) <= SLACK_MS:
                continue
            met = abs(mine - hand) <= max(RATIO * hand, SLACK_MS)
            ratio = f"{mine / hand:6.3f}" if hand else "     -"
            print(f"  {name:44} {mine:11.3f} {hand:10.3f} {ratio}  {'met' if met else 'MISSED'}")


if __name__ == "__main__":
    main()
