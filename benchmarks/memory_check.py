"""Is mcpstart's idle memory the server's? One warm session per server and round, run by
mcpstart's own step (measure/warm.py ``tool_session``: memory settled by the default rule, then
RSS, PSS and USS read per process with psutil and summed over the tree mcpstart tracks); right
after mcpstart's reading, while the server waits idle for the next request, a separate reader
reads the same figures: the tree is found from /proc/*/stat's parent pids (every descendant of
this process: mcpstart runs in it, so the server's processes are its only children), and for
each process one run of a statically linked reader (``scat``, compiled by this script: it maps
no shared library, so it changes no server's PSS; ``cat``, which maps the C library, when no
static C library is installed) of /proc/PID/status (VmRSS) and /proc/PID/smaps_rollup (Pss;
Private_Clean + Private_Dirty + Private_Hugetlb, the USS). The reader reads the tree a second
time 0.2 s later: a PSS moves by itself whenever another process on the machine maps or
unmaps a page the server shares (the C floor's ~40 KiB of C library pages, a share of which
is its PSS), and two readings by the same reader show by how much.

Prints per server the RSS, PSS and USS of each reading, their ratio and met/MISSED against
the target: within 2%, or (PSS) within the reader's own two readings' difference, printed.
Asserts nothing.

Usage: python benchmarks/memory_check.py [--rounds 1] [NAMES...]
NAMES: reference recipes (default: all, stdio and HTTP). Each session settles for at least
10 s (the settle rule's floor).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from checks import arguments, header, load_average, reference_builds, verdict
from mcpstart.measure.client import Skips
from mcpstart.measure.settings import Settings
from mcpstart.measure.warm import tool_session
from mcpstart.results import ServerResult
from mcpstart.transports.http import HttpTransport
from mcpstart.transports.session import Traffic

TOLERANCE = 0.02
FIGURES = ("rss", "pss", "uss")
SCAT = r"""#include <stdio.h>
int main(int argc, char **argv) {
    char buffer[65536];
    for (int i = 1; i < argc; i++) {
        FILE *file = fopen(argv[i], "r");
        if (!file) return 1;
        size_t n;
        while ((n = fread(buffer, 1, sizeof buffer, file)) > 0) fwrite(buffer, 1, n, stdout);
        fclose(file);
    }
    return 0;
}
"""


def static_reader(folder: Path) -> list[str]:
    """SCAT compiled with ``-static`` in ``folder`` (argv), else ``cat``'s."""
    compiler = shutil.which("gcc") or shutil.which("cc")
    source, binary = folder / "scat.c", folder / "scat"
    source.write_text(SCAT)
    if compiler and subprocess.run([compiler, "-O2", "-static", "-o", str(binary), str(source)],
                                   capture_output=True).returncode == 0:
        return [str(binary)]
    return ["cat"]


def descendants(root: int) -> list[int]:
    """Every live descendant of ``root``, from the parent pid field of /proc/*/stat."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                stat = handle.read()
        except OSError:
            continue
        children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry))
    tree, todo = [], list(children.get(root, []))
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo += children.get(pid, [])
    return tree


def read_tree(root: int, reader: list[str]) -> dict[int, dict[str, int]]:
    """pid -> {rss, pss, uss} in bytes of every descendant of ``root``, each read by
    ``reader`` (argv: a process of its own); a process gone meanwhile is left out."""
    readings = {}
    for pid in descendants(root):
        done = subprocess.run([*reader, f"/proc/{pid}/status", f"/proc/{pid}/smaps_rollup"],
                              capture_output=True, text=True)
        if done.returncode != 0:
            continue
        fields = {}
        for line in done.stdout.splitlines():
            key, _, value = line.partition(":")
            if value.strip().endswith("kB"):
                fields[key] = int(value.split()[0]) * 1024
        readings[pid] = {"rss": fields["VmRSS"], "pss": fields["Pss"],
                         "uss": fields["Private_Clean"] + fields["Private_Dirty"]
                         + fields.get("Private_Hugetlb", 0)}
    return readings


def compare(command, transport: str, reader: list[str] = ("cat",)) -> dict:
    """One session: {"mcpstart": {rss, pss, uss}, "reader": {rss, pss, uss}, "again": {...}}
    (tree sums in bytes; "again" the reader's second reading), "pids": (mcpstart's pids, the
    reader's pids), "settle_s"}; ``reader``: the /proc reader's argv (read_tree)."""
    settings = replace(Settings(), round_trips=0, payload_bytes=1024)
    if transport == "http":
        settings = replace(settings, spawner=lambda c: HttpTransport(c))
    row = ServerResult("check", transport)
    first, again = {}, {}

    def progress(_step: str, *_phase: str) -> None:  # the first step after the idle reading
        if row.memory is not None and not first:
            first.update(read_tree(os.getpid(), reader))
            time.sleep(0.2)
            again.update(read_tree(os.getpid(), reader))

    tool_session(command, settings, row, Skips(), Traffic(), progress)
    if not first:
        raise RuntimeError(f"no idle reading: {row.not_measured or row.reason}")
    return {"mcpstart": {f: row.memory[f"idle_{f}_bytes"] for f in FIGURES},
            "reader": {f: sum(r[f] for r in first.values()) for f in FIGURES},
            "again": {f: sum(r[f] for r in again.values()) for f in FIGURES},
            "pids": (sorted(p["pid"] for p in row.memory["processes"]), sorted(first)),
            "settle_s": row.memory["settle_s"]}


def met(mine: int, theirs: int, own_spread: int = 0) -> bool:
    return abs(mine - theirs) <= max(TOLERANCE * theirs, own_spread)


def main() -> None:
    args = arguments(__doc__, rounds=1)
    builds = reference_builds(args.names)
    folder = tempfile.TemporaryDirectory()
    reader = static_reader(Path(folder.name))
    print(f"{args.rounds} session(s) per server, servers in turn; target within "
          f"{TOLERANCE:.0%} (PSS: or the reader's own spread); reader "
          f"{'scat (static)' if reader != ['cat'] else 'cat'}; {load_average()} at start")
    print(header("/proc reader"))
    for _ in range(args.rounds):
        for name, (transport, command) in builds.items():
            found = compare(command, transport, reader)
            for figure in FIGURES:
                mine, theirs = found["mcpstart"][figure], found["reader"][figure]
                spread = abs(found["again"][figure] - theirs) if figure == "pss" else 0
                print(verdict(name, figure, mine // 1024, theirs // 1024,
                              met(mine, theirs, spread), "KiB")
                      + (f"  (reader's own spread {spread // 1024} KiB)" if spread else ""))
            if found["pids"][0] != found["pids"][1]:
                print(f"{name:16} processes differ: mcpstart {found['pids'][0]}, "
                      f"reader {found['pids'][1]}")
    print(f"{load_average()} at the end")


if __name__ == "__main__":
    main()
