"""What a JVM server loads before it answers: a few extra cold starts with the JVM's unified
logging of class loading on (``-Xlog:class+load`` with the ``uptime`` decoration, given
through ``JAVA_TOOL_OPTIONS``, which every HotSpot JVM of the tree reads at its start; JDK
documentation, "java: Enable Logging with the JVM Unified Logging Framework" and "JDK Tool
Specifications: JAVA_TOOL_OPTIONS"), after the counted cold starts and never among them,
each shown against the unlogged median. The log file is read at the initialize answer: the
classes loaded before it, per source (each application jar, the JDK's classes from its
class-data-sharing archive or its modules, classes defined at run time), the JVM's uptime at
its first class (the JVM's own start) and at the last one before the answer. The same starts
run with native memory tracking on, and once the server has answered ``jcmd`` reads the JVM's
own heap figures (runtime_heap.py; the tracking is part of what ``instrumented_ms`` holds).

A server (stdio or HTTP) qualifies when a process of its tree was a JVM (command name ``java``) in its
cold starts' usage (usage.py).
"""

from __future__ import annotations

import os
import re
import statistics
import tempfile
from collections.abc import Iterator

import psutil

from ..transports.session import SessionError
from ..transports.tree import ProcessSet
from . import runtime_heap
from .profiled import profiled_start
from .server import Server
from .settings import Settings

BLOCK = "classes"
"""The results block this profile fills."""
LINE = re.compile(r"^\[([0-9.]+)s\]\s+(\S+) source: (.+)$")
"""One line of ``-Xlog:class+load`` with the uptime decoration: uptime in seconds, the
class's name, its source (HotSpot, classfile/klassFactory and classLoader logging)."""
JDK, GENERATED = "(JDK)", "(defined at run time)"
JAVA = re.compile(r"java")


def source_of(source: str) -> str:
    """A class's source as a row: a jar by its file name, JDK for the class-data-sharing
    archive ("shared objects file") and the run-time image (``jrt:/module``), GENERATED for
    the rest (lambda forms, proxies: a source that is a class or a JVM marker)."""
    if source.startswith("shared objects file") or source.startswith("jrt:/"):
        return JDK
    if source.startswith("file:"):
        path = source[len("file:"):]
        return os.path.basename(path.rstrip("/")) or path
    return GENERATED


def parse(text: str) -> dict:
    """One start's log read to the answer: ``{classes, first_ms, last_ms, sources: {name:
    count}}`` (uptimes in ms; a line still being written when the file was read, without
    its newline, is not counted)."""
    times, sources = [], {}
    for line in text.split("\n")[:-1]:  # the last is empty, or a line still being written
        found = LINE.match(line)
        if not found:
            continue
        times.append(float(found[1]) * 1000)
        name = source_of(found[3])
        sources[name] = sources.get(name, 0) + 1
    return {"classes": len(times), "first_ms": min(times, default=None),
            "last_ms": max(times, default=None), "sources": sources}


def block(starts: list[tuple[float, dict]], uninstrumented_ms: float | None) -> dict:
    """The row's ``classes`` block (docs/results.md#classes): ``{runs, instrumented_ms,
    uninstrumented_ms, classes, first_class_ms, last_class_ms, sources: [{name, classes,
    jdk}]}``, medians over the starts (a source absent from a start counts 0 there), the
    sources by class count, largest first."""
    med = statistics.median
    names = list(dict.fromkeys(n for _, found in starts for n in found["sources"]))
    sources = [{"name": name, "classes": med(f["sources"].get(name, 0) for _, f in starts),
                "jdk": name == JDK} for name in names]
    return {"runs": len(starts), "instrumented_ms": med(ms for ms, _ in starts),
            "uninstrumented_ms": uninstrumented_ms,
            "classes": med(f["classes"] for _, f in starts),
            "first_class_ms": med(f["first_ms"] for _, f in starts),
            "last_class_ms": med(f["last_ms"] for _, f in starts),
            "sources": sorted(sources, key=lambda s: -s["classes"])}


def applies(server: Server) -> bool:
    """A server a process of whose tree was a JVM in its cold starts."""
    return any(JAVA.fullmatch(p["name"])
               for p in (server.row.start_usage or {}).get("processes", []))


def measure(server: Server, settings: Settings) -> Iterator[None]:
    """The ``classes`` block of a server that ``applies``: ``settings.profiled_starts``
    logged starts, yielding after each (attribution.interleaved), and its
    ``runtime_heap`` (``jcmd`` on the JVM of each, at the answer: read_at_answer). A start
    without an answer or without a logged class leaves the block out with the cause
    (``not_measured["classes"]``); the row is not failed. ``runtime_heap`` holds the
    readings that succeeded; with none it is left out with the last failure's cause."""
    starts, heaps, heap_error = [], [], None
    with tempfile.TemporaryDirectory(prefix="mcpstart-classes-") as folder:
        try:
            for index in range(settings.profiled_starts):
                log = os.path.join(folder, f"{index}.log")
                env = {"JAVA_TOOL_OPTIONS": " ".join(filter(None, [
                    server.command.environment().get("JAVA_TOOL_OPTIONS"),
                    f"-Xlog:class+load:file={log}:uptime", runtime_heap.JVM_OPTION]))}
                ms, _, (text, heap) = profiled_start(
                    server.command, server.spawning(settings), env,
                    lambda p, log=log: (_read(log), read_at_answer(p, settings.timeout_s)),
                    server.before_spawn)
                if isinstance(heap, dict):
                    heaps.append(heap)
                else:
                    heap_error = heap
                found = parse(text)
                if not found["classes"]:
                    raise RuntimeError("no class+load line before the initialize answer "
                                       "(not a HotSpot JVM, or JAVA_TOOL_OPTIONS ignored)")
                starts.append((ms, found))
                yield
        except (SessionError, RuntimeError) as err:
            runtime_heap.lost(server.row, "classes", f"class loading log: {err}")
            return
    server.row.classes = block(starts, server.row.cold_start_median())
    runtime_heap.record(server.row, "jvm", heaps, f"jcmd: {heap_error}")  # runs: starts read


def read_at_answer(processes: ProcessSet, timeout_s: float) -> dict | str:
    """runtime_heap.read_jvm of the JVM of ``processes`` that started last (a launcher's
    starts first), or why not (a string)."""
    jvms = [p for p in processes.alive() if JAVA.fullmatch(processes.info(p.pid)["name"])]
    if not jvms:
        return "no JVM alive at the answer"
    try:
        return runtime_heap.read_jvm(max(jvms, key=lambda p: p.create_time()).pid, timeout_s)
    except (ValueError, psutil.Error) as err:
        return str(err)


def _read(path: str) -> str:
    """The log as written so far ("" before the JVM created it)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as file:
            return file.read()
    except FileNotFoundError:
        return ""
