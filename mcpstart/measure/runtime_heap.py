"""The runtime's own heap figures, where the runtime gives them cheaply: read in the start-up
attribution's extra starts (attribution.py), once the server has answered its initialize,
and never in a counted start or the counted warm session (what reads them, a preload, changes
the memory it reads). The kernel's split (``memory.idle_split``, mappings.py) cannot tell a
language heap from the other anonymous memory; these are the runtime's word on it.

- Node.js: V8's figures (``process.memoryUsage()``, ``v8.getHeapStatistics()``; Node.js docs,
  "process.memoryUsage()"), written by node_trace.mjs on SIGUSR2 (node_packages.py).
- the JVM: its native memory tracking (``-XX:NativeMemoryTracking=summary``, switched on in
  jvm_classes.py's logged starts) and the collector's heap, read by one ``jcmd PID -f FILE``
  running ``VM.native_memory summary`` and ``GC.heap_info`` (JDK documentation, "JDK Tool
  Specifications: jcmd" and "Native Memory Tracking").
- Go: the collector's trace (``GODEBUG=gctrace=1``, added to go_init.py's traced starts):
  the heap at the last collection before the answer; a start in which no collection ran
  says so (n/a), as the trace has a line per collection only.
- Other runtimes: not read (WHY_NOT).
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import tempfile

BLOCK = "runtime_heap"
"""The results block (docs/results.md#runtime_heap)."""
WHY_NOT = ("read for Node.js, JVM and Go servers only (V8's figures, the JVM's native memory "
           "tracking, Go's collector trace, in the start-up attribution's extra starts)")
GO_TRACE = "gctrace=1"
GC_LINE = re.compile(r"^gc (\d+) @[0-9.]+s .*?(\d+)->(\d+)->(\d+) MB, (\d+) MB goal")
"""One line of Go's collector trace (runtime package documentation, "Environment
Variables", gctrace): the collection's number, the heap at its start, at its end and the live
heap (whole MB), and the next goal (MB)."""
NO_COLLECTION = "no collection ran before the answer (Go's trace has a line per collection only)"
NODE = ("heap_used_bytes", "heap_committed_bytes", "heap_physical_bytes", "external_bytes",
        "array_buffers_bytes", "rss_bytes")
"""V8's figures in the order node_trace.mjs writes them (H line): ``heapUsed``, ``heapTotal``
(committed), ``total_physical_size`` (committed and touched), ``external`` (C++ objects tied
to JavaScript ones, Buffers' memory among them), ``arrayBuffers`` (ArrayBuffers and Buffers,
part of external) and ``rss``; bytes."""
JVM_OPTION = "-XX:NativeMemoryTracking=summary"
JCMD = "VM.native_memory summary\nGC.heap_info\n"
"""The jcmd commands, one a line (``jcmd PID -f FILE``)."""
NMT = re.compile(r"^-\s+(.+?) \(reserved=(\d+)KB, committed=(\d+)KB\)")
"""A category of NMT's summary: name, reserved and committed KB (HotSpot memTracker's
report)."""
NMT_TOTAL = re.compile(r"^Total: reserved=(\d+)KB, committed=(\d+)KB")
SPACE = re.compile(r"\btotal (\d+)K, used (\d+)K")
"""A space of GC.heap_info: its capacity and used KB (G1's one heap line, the generations of
Serial and Parallel); Metaspace's line has another form and does not match."""


def jvm_figures(text: str) -> dict:
    """``jcmd``'s output for JCMD as ``{heap_used_bytes, heap_committed_bytes,
    code_committed_bytes, nmt_committed_bytes}``: the collector's used bytes summed over its
    spaces, NMT's committed "Java Heap", "Code" and total; bytes (the JVM writes KB).

    Raises:
        ValueError: no NMT summary (tracking off) or no heap line in ``text``.
    """
    kb = 1024
    categories = {m[1]: int(m[3]) * kb for line in text.splitlines() if (m := NMT.match(line))}
    total = next((int(m[2]) * kb for line in text.splitlines()
                  if (m := NMT_TOTAL.match(line))), None)
    used = [int(m[2]) * kb for m in SPACE.finditer(text)]
    if total is None or "Java Heap" not in categories or not used:
        raise ValueError(f"no native memory summary and heap: {text.strip()[-200:]!r}")
    return {"heap_used_bytes": sum(used), "heap_committed_bytes": categories["Java Heap"],
            "code_committed_bytes": categories.get("Code", 0), "nmt_committed_bytes": total}


def read_jvm(pid: int, timeout_s: float) -> dict:
    """jvm_figures of a running JVM: one ``jcmd`` (the one beside the JVM's own executable,
    else the PATH's) run on ``pid``.

    Raises:
        ValueError: jcmd missing, failed, timed out, or said no figures.
    """
    try:
        home = os.path.dirname(os.readlink(f"/proc/{pid}/exe"))
    except OSError:
        home = ""
    jcmd = next((p for p in (os.path.join(home, "jcmd"), shutil.which("jcmd"))
                 if p and os.access(p, os.X_OK)), None)
    if jcmd is None:
        raise ValueError("no jcmd beside the JVM or on PATH")
    with tempfile.NamedTemporaryFile("w", suffix=".jcmd") as commands:
        commands.write(JCMD)
        commands.flush()
        try:
            done = subprocess.run([jcmd, str(pid), "-f", commands.name], capture_output=True,
                                  text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired as err:
            raise ValueError(f"jcmd did not answer in {timeout_s:g} s") from err
    if done.returncode != 0:
        raise ValueError(f"jcmd exited {done.returncode}: {done.stdout.strip()[-200:]!r}")
    return jvm_figures(done.stdout)


def go_figures(text: str) -> dict | None:
    """The last GC_LINE of ``text`` (a Go program's standard error) as ``{heap_used_bytes:
    the live heap, heap_goal_bytes, collections}``; bytes from whole MB (2**20); None when
    no collection ran."""
    found = [m for line in text.splitlines() if (m := GC_LINE.match(line))]
    if not found:
        return None
    last = found[-1]
    return {"heap_used_bytes": int(last[4]) << 20, "heap_goal_bytes": int(last[5]) << 20,
            "collections": int(last[1])}


def block(runtime: str, readings: list[dict]) -> dict:
    """The ``runtime_heap`` block: ``{runtime, runs, KEY: median over readings}`` for each
    key of the readings (bytes, rounded down); ``runs`` how many readings.

    Raises:
        ValueError: no readings.
    """
    if not readings:
        raise ValueError("no heap reading")
    return {"runtime": runtime, "runs": len(readings),
            **{key: int(statistics.median(r[key] for r in readings)) for key in readings[0]}}


def record(row, runtime: str, readings: list[dict], why_none: str) -> None:
    """The row's ``runtime_heap`` from ``readings`` (``block``), else the block skipped with
    ``why_none``: how each runtime's profile ends."""
    if readings:
        row.runtime_heap = block(runtime, readings)
    else:
        row.skip_block(BLOCK, why_none)


def lost(row, profile_block: str, cause: str) -> None:
    """A runtime's profiled starts failed: its profile block and the heap read in the same
    starts both skipped with ``cause``."""
    row.skip_block(profile_block, cause)
    row.skip_block(BLOCK, cause)
