"""Is mcpstart's idle memory split (``memory.idle_split``, mcpstart/measure/mappings.py) right?
One warm session per server and round, run by mcpstart's own step (measure/warm.py
``tool_session``: memory settled by the default rule, then the idle figures and the split read
per process). Right after mcpstart's reading, while the server waits idle, a separate reader
checks three things by other means, for the processes of the tree mcpstart read:

1. sum: the split's RSS over all classes against VmRSS from ``cat /proc/PID/status``: within 2%;
2. code: the split's mapped code (``size_bytes`` of ``exe_code`` + ``lib_code``) against the
   executable text of every file the process maps executable (the files named by
   ``cat /proc/PID/maps``), computed from the ELF section headers with pyelftools: the span of
   the sections flagged SHF_EXECINSTR, rounded out to whole pages, as the kernel maps the
   segment holding them. Mapped sizes are compared, not resident ones: a page of code never
   executed is never read in, so resident text is at most the mapped text and says nothing
   about the sections. Target within 5%;
   A file mapped executable twice (node: V8 remaps its embedded builtins) counts its doubly
   mapped bytes, read from the maps' file offsets, on the ELF side too;
3. heap (Node.js servers only, where cheap): a preload (``NODE_OPTIONS=--require``) makes
   node write ``process.memoryUsage()`` and ``v8.getHeapStatistics()`` on SIGUSR2; V8's
   ``total_physical_size`` (committed and touched) against the split's ``anon`` RSS, the
   class V8's heap lives in (it is not told apart from malloc's arenas and thread stacks:
   docs/process-tree.md). Target within 15%, printed whether met or not, with V8's
   ``heapTotal`` (committed: printed, no verdict), the split's ``heap`` and V8's
   ``external`` beside it. The same right
   after the large call (5 MiB; read at the step after it), and, beside it, the growth of
   each class from ``memory.idle_split`` to ``memory.peak_split`` (the split at the call's
   sampled peak) and V8's growth (heap, external, arrayBuffers) from idle to after the call:
   which class grew, and how much of it V8 says is its heap.
4. runtime heap (Node.js and JVM servers): mcpstart's ``runtime_heap`` (read in its start-up
   attribution's extra starts, once the server answered: measure/runtime_heap.py) against the
   same runtime's figures read by hand at the same point of a start of this script's own
   (raw_mcp's client, median of --starts starts), by another route: node's inspector
   (``Runtime.getHeapUsage`` through ``inspector.Session``, from a ``--require`` preload of
   this script's on SIGUSR2) for V8's used and committed heap; for the JVM two ``jcmd`` runs
   of the script's own (``VM.native_memory summary``: the committed Java Heap;
   ``GC.heap_info``: used), parsed here. Target within 15%. Both read at the same moment,
   the answer of initialize; there V8's committed heap is bimodal start by start (its new
   space already grown to 16 MiB or still 8 MiB: 4 of 19 starts read on the TypeScript
   server, with or without mcpstart's loader hooks), hence medians of 5 and the per-start
   figures printed. For the JVM, the split's class that holds the Java heap: the resident
   bytes of the heap's address range (``GC.heap_info``'s ``[low, high)``, in
   /proc/PID/smaps read here) against those of them in the ``anon`` class, within 15%.
   The split's resident classes are not set against a committed figure (V8's heapTotal,
   NMT's Java Heap: committed pages are not all touched); they are printed beside them.

Prints per server each figure, the independent one, their ratio and met/MISSED. Asserts
nothing.

Usage: python benchmarks/memory_split_check.py [--rounds 1] [--starts 5] [NAMES...]
NAMES: reference recipes (default: all, stdio and HTTP). Each session settles for at least
10 s (the settle rule's floor).
"""

from __future__ import annotations

import json
import os
import re
import signal
import statistics
import subprocess
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from elftools.common.exceptions import ELFError
from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile

import psutil
from checks import arguments, header, load_average, reference_builds, verdict
from raw_mcp import client

from mcpstart.measure import jvm_classes, mappings, node_packages
from mcpstart.measure.client import Skips
from mcpstart.measure.server import Server
from mcpstart.measure.settings import Settings
from mcpstart.measure.warm import tool_session
from mcpstart.results import ServerResult
from mcpstart.transports.http import HttpTransport
from mcpstart.transports.session import Traffic
from mcpstart.transports.tree import child_subreaper

TARGETS = {"sum": 0.02, "code": 0.05, "heap": 0.15}
PAGE = os.sysconf("SC_PAGE_SIZE")
PRELOAD = """
process.on("SIGUSR2", () => {
  const v8 = require("v8");
  const spaces = Object.fromEntries(v8.getHeapSpaceStatistics().map(
    (s) => [s.space_name, s.space_used_size]));
  require("fs").writeFileSync(process.env.SPLIT_CHECK_OUT + "/" + process.pid + ".json",
                              JSON.stringify({...process.memoryUsage(),
                                              ...v8.getHeapStatistics(), ...spaces}));
});
"""

INSPECTOR = """
process.on("SIGUSR2", () => {
  const session = new (require("inspector").Session)();
  session.connect();
  session.post("Runtime.getHeapUsage", (err, usage) => {
    require("fs").writeFileSync(process.env.SPLIT_CHECK_OUT + "/" + process.pid + ".heap",
                                JSON.stringify(err ? {error: String(err)} : usage));
    session.disconnect();
  });
});
"""
KB = 1024


def elf_text(path: str) -> int | None:
    """Bytes the kernel maps for ``path``'s code: the span from the lowest to the highest
    address of its SHF_EXECINSTR sections, rounded out to pages; None for a file that is not
    ELF or has no such section."""
    try:
        with open(path, "rb") as handle:
            spans = [(s["sh_addr"], s["sh_addr"] + s["sh_size"])
                     for s in ELFFile(handle).iter_sections()
                     if s["sh_flags"] & SH_FLAGS.SHF_EXECINSTR and s["sh_size"]]
    except (OSError, ELFError):
        return None
    if not spans:
        return None
    low, high = min(a for a, _ in spans), max(b for _, b in spans)
    return -(-high // PAGE) * PAGE - low // PAGE * PAGE


def read_process(pid: int) -> dict | None:
    """One ``cat`` of /proc/PID/status and /proc/PID/maps: ``{vm_rss, files}``, files: path
    -> the file offset ranges ``[(start, end)]`` it is mapped executable at; None when the
    process is gone."""
    done = subprocess.run(["cat", f"/proc/{pid}/status", f"/proc/{pid}/maps"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        return None
    vm_rss, files = None, {}
    for line in done.stdout.splitlines():
        if line.startswith("VmRSS:"):
            vm_rss = int(line.split()[1]) * 1024
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and "-" in fields[0] and "x" in fields[1] and fields[4] != "0":
            low, high = (int(v, 16) for v in fields[0].split("-"))
            offset = int(fields[2], 16)
            path = fields[5].removesuffix(" (deleted)")
            files.setdefault(path, []).append((offset, offset + high - low))
    return {"vm_rss": vm_rss, "files": files}


def twice(ranges: list[tuple[int, int]]) -> int:
    """Bytes of a file mapped executable more than once: the ranges' summed length less the
    length of their union (V8 maps its embedded builtins a second time, from node's own file,
    next to its code range: src/heap/code-range.cc, RemapEmbeddedBuiltins)."""
    union, end = 0, -1
    for start, stop in sorted(ranges):
        union += max(0, stop - max(start, end))
        end = max(end, stop)
    return sum(stop - start for start, stop in ranges) - union


def node_heaps(pids: list[int], folder: str) -> dict[int, dict]:
    """pid -> process.memoryUsage() of each node process of ``pids`` (SIGUSR2 to each; the
    preload writes a file); waits up to 2 s."""
    names = {}
    for pid in pids:
        try:
            names[pid] = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            continue
    nodes = [pid for pid, name in names.items() if name.startswith("node")]
    for pid in nodes:
        Path(folder, f"{pid}.json").unlink(missing_ok=True)  # an earlier reading's
        os.kill(pid, signal.SIGUSR2)
    found, deadline = {}, time.monotonic() + 2
    while len(found) < len(nodes) and time.monotonic() < deadline:
        for pid in nodes:
            path = Path(folder, f"{pid}.json")
            if pid not in found and path.exists() and path.stat().st_size:
                found[pid] = json.loads(path.read_text())
        time.sleep(0.02)
    return found


def session(command, transport: str, folder: str) -> dict:
    """One session: mcpstart's memory block and the reader's ``{pid: read_process}`` and
    ``{pid: memoryUsage}``, read right after mcpstart's idle reading, and ``after_call``:
    ``{pid: memoryUsage}`` again right after the large call's sampled repeat (and the
    Unicode check), at the one warm round trip's step, with ``after_split``: mappings.split
    of those processes then."""
    settings = replace(Settings(), round_trips=1)
    if transport == "http":
        settings = replace(settings, spawner=lambda c: HttpTransport(c))
    row = ServerResult("check", transport)
    reader: dict = {}

    def progress(step: str, *_phase: str) -> None:
        if row.memory is None:
            return
        pids = [p["pid"] for p in row.memory["processes"]]
        if not reader:  # the first step after the idle reading
            reader["procs"] = {pid: found for pid in pids if (found := read_process(pid))}
            reader["heaps"] = node_heaps(pids, folder)
        elif step.endswith("warm round trips"):
            reader["after_call"] = node_heaps(pids, folder)
            reader["after_split"] = {pid: mappings.split(pid) for pid in reader["after_call"]}

    tool_session(command, settings, row, Skips(), Traffic(), progress)
    if not reader:
        raise RuntimeError(f"no idle reading: {row.not_measured or row.reason}")
    return {"memory": row.memory, **reader}


def with_preload(command, folder: str):
    """``command`` with the preload required by every node it starts."""
    preload = Path(folder, "preload.js")
    preload.write_text(PRELOAD)
    options = " ".join(filter(None, [command.environment().get("NODE_OPTIONS"),
                                     f"--require={preload}"]))
    return replace(command, env={**command.env, "NODE_OPTIONS": options,
                                 "SPLIT_CHECK_OUT": folder})


def report(name: str, found: dict) -> None:
    rows = {p["pid"]: p for p in found["memory"]["processes"]}
    procs = {pid: got for pid, got in found["procs"].items() if rows[pid]["idle_split"]}
    splits = {pid: rows[pid]["idle_split"] for pid in procs}
    mine = sum(v["rss_bytes"] for s in splits.values() for v in s.values())
    theirs = sum(p["vm_rss"] for p in procs.values())
    print(verdict(name, "sum of classes", mine // 1024, theirs // 1024,
                  abs(mine - theirs) <= TARGETS["sum"] * theirs, "KiB"))
    code = sum(s[c]["size_bytes"] for s in splits.values() for c in ("exe_code", "lib_code"))
    text, again, left_out = 0, 0, []
    for got in procs.values():
        for path, ranges in got["files"].items():
            size = elf_text(path)
            if size is None:
                mapped = sum(stop - start for start, stop in ranges)
                code -= mapped  # compared on neither side
                left_out.append(f"{Path(path).name} {mapped // 1024} KiB")
            else:
                text += size + twice(ranges)
                again += twice(ranges)
    print(verdict(name, "mapped code", code // 1024, text // 1024,
                  abs(code - text) <= TARGETS["code"] * text, "KiB"))
    resident = sum(s[c]["rss_bytes"] for s in splits.values() for c in ("exe_code", "lib_code"))
    print(f"{name:16} resident code {resident // 1024:,} KiB of {code // 1024:,} KiB mapped"
          + f"; mapped a second time (in the ELF figure) {again // 1024:,} KiB"
          + (f"; not ELF, left out: {', '.join(left_out)}" if left_out else ""))
    for pid, usage in found["heaps"].items():
        anon, heap = splits[pid]["anon"]["rss_bytes"], splits[pid]["heap"]["rss_bytes"]
        print(f"{name:16} anon {anon // KB:,} KiB beside V8's heapTotal "
              f"{usage['heapTotal'] // KB:,} KiB: no verdict (heapTotal is committed, not all "
              "touched; the like-for-like heapTotal check is the runtime heap's)")
        physical = usage["total_physical_size"]
        print(verdict(name, "anon vs V8 phys.", anon // 1024, physical // 1024,
                      abs(anon - physical) <= TARGETS["heap"] * physical, "KiB"))
        after = found.get("after_call", {}).get(pid)
        peak = found["memory"].get("peak_split")
        if after and peak and found["after_split"].get(pid):
            anon_after = found["after_split"][pid]["anon"]["rss_bytes"]
            physical = after["total_physical_size"]
            print(verdict(name, "after call: anon", anon_after // KB, physical // KB,
                          abs(anon_after - physical) <= TARGETS["heap"] * physical, "KiB"))
            grown = {c: (peak[c]["rss_bytes"] - s["rss_bytes"]) // KB
                     for c, s in found["memory"]["idle_split"].items()}
            v8 = {k: (after[k] - usage[k]) // KB
                  for k in ("total_physical_size", "heapUsed", "external", "arrayBuffers")}
            print(f"{name:16} at the large call's peak (peak_split less idle_split, KiB): "
                  + ", ".join(f"{c} {v:+,}" for c, v in grown.items() if v)
                  + f"; V8 after the call less idle (KiB): physical "
                  f"{v8['total_physical_size']:+,}, heapUsed {v8['heapUsed']:+,}, external "
                  f"{v8['external']:+,}, arrayBuffers {v8['arrayBuffers']:+,}; large object "
                  f"space {after['large_object_space'] // KB:,} KiB")
        print(f"{name:16} node {pid}: V8 heapUsed {usage['heapUsed'] // 1024:,} KiB, external "
              f"{usage['external'] // 1024:,} KiB, rss {usage['rss'] // 1024:,} KiB; split "
              f"heap {heap // 1024:,} KiB, jit_code "
              f"{splits[pid]['jit_code']['rss_bytes'] // 1024:,} KiB")


def runtime_of(command) -> str | None:
    """"node" or "java" by the command's program, else None (not checked)."""
    program = Path(command.argv[0]).name
    return program if program in ("node", "java") else None


def by_mcpstart(command, transport: str, runtime: str) -> dict:
    """mcpstart's ``runtime_heap`` of one attribution (node_packages or jvm_classes)."""
    row = ServerResult("check", transport)
    row.start_usage = {"processes": [{"name": runtime}]}
    module = node_packages if runtime == "node" else jvm_classes
    with child_subreaper():
        for _start in module.measure(Server(row, command, transport=transport),
                                     Settings(timeout_s=60)):  # one yield per start
            pass
    if row.runtime_heap is None:
        raise RuntimeError(f"no runtime_heap: {row.not_measured.get('runtime_heap')}")
    return row.runtime_heap


def by_hand(command, transport: str, runtime: str, folder: str) -> dict:
    """One start of this script's own, initialized by raw_mcp's client; then the runtime's
    ``{heap_used_bytes, heap_committed_bytes}`` read by the other route, and the resident
    ``anon`` class of mappings.split, of the last-started process running ``runtime``."""
    if runtime == "node":
        Path(folder, "inspector.js").write_text(INSPECTOR)
        env = {"NODE_OPTIONS": f"--require={folder}/inspector.js", "SPLIT_CHECK_OUT": folder}
    else:
        env = {"JAVA_TOOL_OPTIONS": "-XX:NativeMemoryTracking=summary"}
    command = replace(command, env={**command.env, **env})
    with client(command, transport) as server:
        root = psutil.Process(server.proc.pid)
        pid = max((p for p in [root, *root.children(recursive=True)] if p.name() == runtime),
                  key=lambda p: p.create_time()).pid
        found = node_heap(pid, folder) if runtime == "node" else jvm_heap(pid)
        found["anon_rss_bytes"] = mappings.split(pid)["anon"]["rss_bytes"]
    return found


def node_heap(pid: int, folder: str) -> dict:
    """V8's used and committed heap by the inspector (Runtime.getHeapUsage: usedSize,
    totalSize), asked by SIGUSR2; waits up to 5 s."""
    os.kill(pid, signal.SIGUSR2)
    path, deadline = Path(folder, f"{pid}.heap"), time.monotonic() + 5
    while not (path.exists() and path.stat().st_size) and time.monotonic() < deadline:
        time.sleep(0.01)
    usage = json.loads(path.read_text())
    return {"heap_used_bytes": int(usage["usedSize"]),
            "heap_committed_bytes": int(usage["totalSize"])}


def jvm_heap(pid: int) -> dict:
    """The JVM's used heap (GC.heap_info: the "used" of each space with a "total"), its
    committed Java Heap (VM.native_memory summary), one jcmd each, and the resident bytes of
    the heap's address range (GC.heap_info's ``[low, high)``) by class: heap_range of
    /proc/PID/smaps."""
    def jcmd(*what: str) -> str:
        return subprocess.run(["jcmd", str(pid), *what], capture_output=True, text=True,
                              check=True, timeout=60).stdout
    committed = re.search(r"Java Heap \(reserved=\d+KB, committed=(\d+)KB\)",
                          jcmd("VM.native_memory", "summary"))
    info = jcmd("GC.heap_info")
    used = re.findall(r"total \d+K, used (\d+)K", info)
    if (bounds := re.search(HEAP_RANGE, info)) is None:
        raise RuntimeError(f"GC.heap_info gave no G1 heap range: {info.strip()[:200]!r}")
    low, high = (int(a, 16) for a in bounds.groups())
    exe = os.readlink(f"/proc/{pid}/exe")
    return {"heap_used_bytes": sum(int(u) for u in used) * KB,
            "heap_committed_bytes": int(committed[1]) * KB,
            **heap_range(Path(f"/proc/{pid}/smaps").read_text(), low, high, exe)}


HEAP_RANGE = r"total \d+K, used \d+K \[(0x[0-9a-f]+), (0x[0-9a-f]+)\)"
"""G1's heap line in GC.heap_info, with its reserved address range (HotSpot's
G1CollectedHeap::print_on: "garbage-first heap   total 397312K, used 17925K [0x..., 0x...)").
G1 is the collector the JVM picks on this machine (2 CPUs, 2 GB or more); Serial's and
Parallel's generation lines carry three addresses and do not match."""


def heap_range(smaps: str, low: int, high: int, exe: str) -> dict:
    """The resident bytes of the mappings of ``smaps`` (a /proc/PID/smaps text) that overlap
    ``[low, high)``: ``{range_rss_bytes, range_anon_rss_bytes}``, the second those of them
    mappings.classify puts in ``anon``, and ``range_outside_bytes``: the size of those mappings
    lying outside the range (the kernel merges neighbouring anonymous mappings of equal
    permissions, so a mapping may carry more than the heap; 0 when none does)."""
    found = {"range_rss_bytes": 0, "range_anon_rss_bytes": 0, "range_outside_bytes": 0}
    anon = None
    for line in smaps.splitlines():
        head = line.split(maxsplit=5)
        if head and "-" in head[0] and not head[0].endswith(":"):
            start, stop = (int(v, 16) for v in head[0].split("-"))
            anon = None
            if start < high and stop > low:
                path = head[5].strip().removesuffix(" (deleted)") if len(head) == 6 else ""
                anon = mappings.classify(head[1], int(head[4]), path, exe) == "anon"
                found["range_outside_bytes"] += max(0, low - start) + max(0, stop - high)
        elif head and head[0] == "Rss:" and anon is not None:
            found["range_rss_bytes"] += int(head[1]) * KB
            found["range_anon_rss_bytes"] += int(head[1]) * KB if anon else 0
    return found


def runtime_heaps(builds: dict, rounds: int, starts: int) -> None:
    """Check 4 for each node or java server of ``builds``: mcpstart's attribution and the
    by-hand starts alternated, ``rounds`` times."""
    for _ in range(rounds):
        for name, (transport, command) in builds.items():
            if (runtime := runtime_of(command)) is None:
                continue
            mine = by_mcpstart(command, transport, runtime)
            with tempfile.TemporaryDirectory() as folder:
                hands = [by_hand(command, transport, runtime, folder) for _ in range(starts)]
            hand = {key: statistics.median(h[key] for h in hands) for key in hands[0]}
            for key, label in (("heap_committed_bytes", "heap committed"),
                               ("heap_used_bytes", "heap used")):
                print(verdict(name, label, mine[key] // KB, int(hand[key]) // KB,
                              abs(mine[key] - hand[key]) <= TARGETS["heap"] * hand[key],
                              "KiB"))
            print(f"{name:16} by hand, per start: committed "
                  + ", ".join(f"{h['heap_committed_bytes'] // KB:,}" for h in hands)
                  + " KiB; used " + ", ".join(f"{h['heap_used_bytes'] // KB:,}" for h in hands)
                  + " KiB")
            if runtime == "java":
                java_split(name, hand)
            else:
                print(f"{name:16} split anon (resident) {int(hand['anon_rss_bytes']) // KB:,} "
                      "KiB beside V8's committed and used heap: no verdict (V8 sits in anon "
                      "with malloc's arenas and the thread stacks)")


def java_split(name: str, hand: dict) -> None:
    """The Java heap's resident bytes (its address range's, from smaps) against those of it
    the split's ``anon`` class holds, within the heap target: the rest of the range is
    file-backed (the class data sharing archive's heap objects, mapped from classes.jsa into
    the top of the heap: ``file_data``). Then, beside them with no verdict, NMT's committed
    and the collector's used heap. NMT reports reserved and committed memory only (Java SE
    Troubleshooting Guide, "Native Memory Tracking": with -Xms100m -Xmx1000m the JVM reserves
    1000 MB and commits 100 MB); the committed Java Heap is the initial heap made accessible,
    and the kernel backs a page only at its first touch (Linux proc.rst, smaps "Rss"), so no
    NMT figure is a resident one: the heap's resident bytes are read from smaps over the range
    NMT detail and GC.heap_info both give."""
    resident, anon = int(hand["range_rss_bytes"]), int(hand["range_anon_rss_bytes"])
    print(verdict(name, "java heap: split anon", anon // KB, resident // KB,
                  abs(anon - resident) <= TARGETS["heap"] * resident, "KiB"))
    print(f"{name:16} java heap range resident {resident // KB:,} KiB, of it file-backed "
          f"{(resident - anon) // KB:,} KiB (mappings reaching "
          f"{int(hand['range_outside_bytes']) // KB:,} KiB past the range); NMT committed "
          f"{int(hand['heap_committed_bytes']) // KB:,} KiB, GC used "
          f"{int(hand['heap_used_bytes']) // KB:,} KiB, split anon (whole) "
          f"{int(hand['anon_rss_bytes']) // KB:,} KiB: no verdict (committed is not resident)")


def main() -> None:
    args = arguments(__doc__, rounds=1, starts=5)
    builds = reference_builds(args.names)
    print(f"{args.rounds} session(s) per server, servers in turn; targets: sum within "
          f"{TARGETS['sum']:.0%}, code {TARGETS['code']:.0%}, Node heap "
          f"{TARGETS['heap']:.0%}; {load_average()} at start")
    print(header("independent"))
    for _ in range(args.rounds):
        for name, (transport, command) in builds.items():
            with tempfile.TemporaryDirectory() as folder:
                report(name, session(with_preload(command, folder), transport, folder))
    runtime_heaps(builds, args.rounds, args.starts)
    print(f"{load_average()} at the end")


if __name__ == "__main__":
    main()
