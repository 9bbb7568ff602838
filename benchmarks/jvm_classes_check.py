"""Is mcpstart's JVM class count (the ``classes`` block, measure/jvm_classes.py) what
``-Xlog:class+load`` says when run by hand? Each round, alternating which goes first: one
logged start through mcpstart (profiled.profiled_start with JAVA_TOOL_OPTIONS, read and parsed
as ``measure`` does), and one by hand: the server's ``java`` command run by subprocess with
``-Xlog:class+load:file=...`` on its own command line, an initialize request written, the log
file read when the answer arrives and its lines counted by this script (a class line: a
``source:`` field; jars by file name). Target: the median class count, and each jar's,
within 5% of the hand-read median.

    python benchmarks/jvm_classes_check.py [NAMES...] [--rounds 5]

NAMES: recipes whose command starts with ``java`` (default: java).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import tempfile
from pathlib import Path

from checks import arguments, load_average, reference_builds
from mcpstart.measure import jvm_classes
from mcpstart.measure.profiled import profiled_start
from mcpstart.measure.settings import Settings
from mcpstart.transports.tree import child_subreaper

INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "jvm_classes_check", "version": "1"}}}) + "\n"
TARGET = 0.05


def by_hand(argv: list[str], cwd: str | None, log: str) -> dict[str, int]:
    """One logged start read by hand: ``{"(all)": count, jar file name: count, ...}``."""
    proc = subprocess.Popen([argv[0], f"-Xlog:class+load:file={log}:uptime", *argv[1:]],
                            cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    proc.stdin.write(INITIALIZE)
    proc.stdin.flush()
    proc.stdout.readline()
    with open(log, encoding="utf-8") as file:
        text = file.read()
    proc.kill()
    proc.wait()
    counts = {"(all)": 0}
    for line in text.split("\n")[:-1]:
        if " source: " not in line:
            continue
        counts["(all)"] += 1
        source = line.split(" source: ", 1)[1]
        if source.startswith("file:") and source.endswith(".jar"):
            name = source.rsplit("/", 1)[1]
            counts[name] = counts.get(name, 0) + 1
    return counts


def main() -> None:
    args = arguments(__doc__, rounds=5)
    settings = Settings(timeout_s=120)
    for name, (_transport, command) in reference_builds(args.names or ["java"]).items():
        ours, theirs = [], []
        with tempfile.TemporaryDirectory() as folder, child_subreaper():
            for index in range(args.rounds):
                for side in ("mcpstart", "hand") if index % 2 == 0 else ("hand", "mcpstart"):
                    log = os.path.join(folder, f"{side}-{index}.log")
                    if side == "hand":
                        theirs.append(by_hand(command.argv, command.cwd, log))
                        continue
                    env = {"JAVA_TOOL_OPTIONS": f"-Xlog:class+load:file={log}:uptime"}
                    _, _, text = profiled_start(command, settings, env,
                                                lambda _p, log=log: Path(log).read_text())
                    found = jvm_classes.parse(text)
                    ours.append({"(all)": found["classes"], **found["sources"]})
        print(f"{name}: {args.rounds} rounds, alternating; {load_average()}")
        print(f"  {'classes from':36} {'mcpstart':>9} {'by hand':>8} {'ratio':>6}  target")
        for name in sorted(theirs[0], key=lambda n: -theirs[0][n]):
            mine = statistics.median(r.get(name, 0) for r in ours)
            hand = statistics.median(r.get(name, 0) for r in theirs)
            met = abs(mine - hand) <= TARGET * hand
            print(f"  {name:36} {mine:9.0f} {hand:8.0f} {mine / hand:6.3f}  "
                  f"{'met' if met else 'MISSED'}")


if __name__ == "__main__":
    main()
