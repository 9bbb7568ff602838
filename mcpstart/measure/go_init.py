"""Where a Go server's start goes: a few extra cold starts with the runtime's package
initialization trace on (``GODEBUG=inittrace=1``: "a single line to standard error for each
package with init work, summarizing the execution time and memory allocation", Go runtime
package documentation, "Environment Variables"), after the counted cold starts and never
among them, each read to its initialize answer and shown against the untraced median. Each
package's init clock time, bytes and allocations, summed per Go module (the unit a server's
author adds, upgrades or drops, as a Python distribution is): the modules named by the
binary's own build information, the standard library by Go's rule that its import paths'
first element has no dot, the main module by its path.

A server (stdio or HTTP) qualifies when its command's program (argv[0], looked up in
its PATH) is a Go executable: an ELF file with a ``.go.buildinfo`` section. A Go program
started through a launcher (``go run``, a shell) is not traced: the launcher's own Go
runtime would trace too.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterator

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from ..command import Command
from ..transports.session import SessionError
from . import imports, runtime_heap
from .profiled import profiled_start
from .server import Server
from .settings import Settings

BLOCK = "imports"
"""The results block this profile fills."""
TRACE = "inittrace=1"


def traced_env(command: Command) -> dict[str, str]:
    """GODEBUG with TRACE and the collector's trace (runtime_heap.GO_TRACE) added to what the
    server's environment already sets (a comma-separated list of settings: runtime package
    documentation)."""
    before = command.environment().get("GODEBUG", "")
    traces = f"{TRACE},{runtime_heap.GO_TRACE}"
    return {"GODEBUG": f"{before},{traces}" if before else traces}

LINE = re.compile(r"init (\S+) @([0-9.]+) ms, ([0-9.]+) ms clock, (\d+) bytes, (\d+) allocs")
"""One line of the trace (runtime/proc.go, doInit1 under inittrace): package, start since the
runtime's start (ms), init clock time (ms), bytes and allocations."""
MAGIC = b"\xff Go buildinf:"
"""The first bytes of ``.go.buildinfo`` (debug/buildinfo, buildInfoMagic)."""
STDLIB = imports.STDLIB


def go_program(command: Command) -> tuple[str, dict] | None:
    """``(path, build_info)`` of ``command``'s program when it is a Go executable, else
    None."""
    path = command.program()
    info = build_info(path) if path else None
    return None if info is None else (path, info)


def build_info(path: str) -> dict | None:
    """The module lines of a Go executable's build information (``go version -m`` prints the
    same): ``{main, modules: [path, ...]}``, or None for a file that is not a Go ELF
    executable with inline build information (Go 1.18 and later)."""
    try:
        with open(path, "rb") as file:
            section = ELFFile(file).get_section_by_name(".go.buildinfo")
            return None if section is None else parse_build_info(section.data())
    except (OSError, ELFError):
        return None


def parse_build_info(data: bytes) -> dict | None:
    """``.go.buildinfo``'s content as build_info returns it (None when not inline).

    The section: 14 magic bytes, the pointer size, a flags byte (bit 2: the strings are
    inline), padding to 32 bytes, then two strings each preceded by its length as an unsigned
    varint: the Go version and the module information, the latter framed by 16 bytes at each
    end (debug/buildinfo, readRawBuildInfo; runtime/debug, ParseBuildInfo for its lines).
    """
    if not data.startswith(MAGIC) or len(data) < 32 or not data[15] & 2:
        return None
    offset, strings = 32, []
    for _ in range(2):
        length, shift = 0, 0
        while offset < len(data):
            byte = data[offset]
            offset += 1
            length |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        strings.append(data[offset:offset + length].decode("utf-8", errors="replace"))
        offset += length
    mod = strings[1][16:-16] if len(strings[1]) >= 33 else ""
    main, modules = None, []
    for line in mod.splitlines():
        parts = line.split("\t")
        if parts[0] == "mod" and len(parts) > 1:
            main = parts[1]
        elif parts[0] == "dep" and len(parts) > 1:
            modules.append(parts[1])
    return {"main": main, "modules": modules}


def parse(text: str) -> list[dict]:
    """The trace lines of the last Go process that started before the answer (a new process's
    times start again from 0): ``[{name, start_ms, clock_ms, bytes, allocs}]`` in order."""
    runs: list[list[dict]] = []
    for line in text.splitlines():
        found = LINE.search(line)
        if not found:
            continue
        entry = {"name": found[1], "start_ms": float(found[2]), "clock_ms": float(found[3]),
                 "bytes": int(found[4]), "allocs": int(found[5])}
        if not runs or entry["start_ms"] < runs[-1][-1]["start_ms"]:
            runs.append([])
        runs[-1].append(entry)
    return runs[-1] if runs else []


def module_of(package: str, info: dict) -> str:
    """The module that holds ``package``: STDLIB when its first path element has no dot (Go's
    rule for standard library paths), else the longest of the build's modules (the main one
    included) that is ``package`` or a parent of it, else the package itself."""
    first = package.split("/")[0]
    if "." not in first:
        return STDLIB
    candidates = [m for m in [info.get("main"), *info["modules"]]
                  if m and (package == m or package.startswith(m + "/"))]
    return max(candidates, key=len) if candidates else package


def attribute(packages: list[dict], info: dict) -> dict:
    """One start's trace per module, in imports.attribute's shape (``{import_ms,
    interpreter_ms: None, http_ms: 0, distributions: {module: {self_ms, cumulative_ms,
    modules}}}``, ``modules`` counting packages; package inits do not nest, so a module's
    cumulative time is its self time)."""
    dists: dict[str, dict] = {}
    for package in packages:
        entry = dists.setdefault(module_of(package["name"], info),
                                 {"self_ms": 0.0, "cumulative_ms": 0.0, "modules": 0})
        entry["self_ms"] += package["clock_ms"]
        entry["cumulative_ms"] += package["clock_ms"]
        entry["modules"] += 1
    return {"import_ms": sum(p["clock_ms"] for p in packages), "interpreter_ms": None,
            "http_ms": 0.0, "distributions": dists}


def package_rows(traces: list[list[dict]], info: dict) -> list[dict]:
    """Per package over the starts: ``[{name, module, clock_ms, bytes, allocs}]``, medians
    (a package absent from a start counts 0 there), largest clock time first."""
    names = list(dict.fromkeys(p["name"] for trace in traces for p in trace))
    rows = []
    for name in names:
        per = [next((p for p in trace if p["name"] == name), None) for trace in traces]
        rows.append({"name": name, "module": module_of(name, info),
                     **{key: statistics.median(p[key] if p else 0 for p in per)
                        for key in ("clock_ms", "bytes", "allocs")}})
    return sorted(rows, key=lambda r: -r["clock_ms"])


def applies(server: Server) -> bool:
    """A server whose program is a Go executable (module doc)."""
    return server.command is not None and go_program(server.command) is not None


def measure(server: Server, settings: Settings) -> Iterator[None]:
    """The ``imports`` block (``runtime`` "go", with ``packages``) of a server that
    ``applies``: ``settings.profiled_starts`` traced starts, yielding after each
    (attribution.interleaved); and its ``runtime_heap`` from the collector's trace of
    the same starts (runtime_heap.go_figures; n/a when no collection ran before any
    answer). A start without an answer or without a trace leaves the block out with the
    cause (``not_measured["imports"]``); the row is not failed."""
    _, info = go_program(server.command)
    traces, starts, heaps = [], [], []
    try:
        for _ in range(settings.profiled_starts):
            ms, text, _ = profiled_start(server.command, server.spawning(settings),
                                         traced_env(server.command),
                                         lambda _p: None, server.before_spawn)
            trace = parse(text)
            if not trace:
                raise RuntimeError("no inittrace line before the initialize answer "
                                   "(GODEBUG overridden, or a Go older than 1.16)")
            traces.append(trace)
            starts.append((ms, attribute(trace, info)))
            if (heap := runtime_heap.go_figures(text)) is not None:
                heaps.append(heap)
            yield
    except (SessionError, RuntimeError) as err:
        runtime_heap.lost(server.row, "imports", f"package init trace: {err}")
        return
    runtime_heap.record(server.row, "go", heaps, runtime_heap.NO_COLLECTION)
    env = {"classifiers": {}, "main": info["main"]}
    block = imports.block(starts, env, server.row.cold_start_median(),
                          server.transport, runtime="go")
    server.row.imports = {**block, "packages": package_rows(traces, info)}
    server.row.skip_block("imports.other_transport", "the transport finding reads Python "
                          "distributions' classifiers only")
