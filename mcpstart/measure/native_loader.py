"""What a native server's dynamic loader does before the server runs: the shared objects it
maps and the relocations it processes, from glibc's own loader statistics (``LD_DEBUG=
statistics``, ld.so(8): "display relocation and other statistics", written to
``LD_DEBUG_OUTPUT``.PID), in a few extra cold starts after the counted ones, each read to its
initialize answer.

A server qualifies when its program (argv[0], looked up in its PATH) is a dynamically linked
ELF executable (one with a ``PT_INTERP`` program header naming its loader), the one process of
its tree, and no runtime's start-up profile took it (attribution.py: a Python, Node.js or JVM
tree is its runtime's story). A static executable (Go's default) has no loader to read.

The counts are exact and checked against the ELF files' own relocation tables
(benchmarks/loader_check.py). glibc's loader timer is not reported: it disagrees with every
outside clock tried (docs/checks.md, "The dynamic loader").
"""

from __future__ import annotations

import os
import statistics
import tempfile
from collections.abc import Iterator
from pathlib import Path

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from ..transports.session import SessionError
from ..transports.tree import ProcessSet
from . import go_init
from .profiled import profiled_start
from .server import Server
from .settings import Settings

BLOCK = "loader"
"""The results block this profile fills."""
COUNTS = {"relocations": "number of relocations",
          "relocations_from_cache": "number of relocations from cache",
          "relative_relocations": "number of relative relocations"}
"""Each count of the block and the label of glibc's line that gives it (elf/rtld.c,
print_statistics): the loader's symbol lookups before the program ran (one per symbol
relocation its one-entry lookup cache did not answer, and a few of its own: 13-16 in every
program tried, docs/checks.md), the symbol relocations that cache answered, and relative
relocations (load-address fix-ups, no symbol; ``DT_RELR`` entries not counted)."""
START = "total startup time in dynamic loader"
"""The first line of the statistics glibc writes when its loader finishes; the lines after it
belong to that start (another block follows at exit, with "final" counts)."""
COMM = 15
"""The length the kernel keeps of a process's command name (proc(5), ``comm``)."""
NOT_NATIVE = ("read for native servers only: a program that is a dynamically linked ELF "
              "executable, not a Python, Node.js or JVM runtime")


def interpreter(path: str) -> str | None | bool:
    """The loader an ELF executable names (its ``PT_INTERP``), False for a static ELF
    executable, None for a file that is not ELF (a script) or cannot be read."""
    try:
        with open(path, "rb") as file:
            for segment in ELFFile(file).iter_segments():
                if segment["p_type"] == "PT_INTERP":
                    return segment.get_interp_name()
            return False
    except (OSError, ELFError):
        return None


def applies(server: Server, runtime) -> bool:
    """Whether ``server`` gets this profile: no other runtime's profile (``runtime`` is
    attribution.chosen's, None or the Go one: a Go program is native too, its init trace
    another block), a dynamically linked program, and that program the one process its cold
    starts saw (``start_usage``): a launcher (a shell starting the server as its child)
    would have its own loader read. Otherwise the block is marked not measured with the
    reason."""
    if server.command is None:
        return False
    if runtime not in (None, go_init):
        server.row.skip_block(BLOCK, NOT_NATIVE)
        return False
    program = server.command.program()
    loader = interpreter(program) if program else None
    if not loader:
        server.row.skip_block(BLOCK, NOT_NATIVE if loader is None else
                              "a static executable: no dynamic loader runs before it")
        return False
    names = [p["name"] for p in (server.row.start_usage or {}).get("processes", [])]
    if names != [os.path.basename(program)[:COMM]]:
        server.row.skip_block(BLOCK, "read when the program is the tree's one process (its "
                              f"cold starts saw {', '.join(names) or 'none'})")
        return False
    return True


def parse(text: str) -> dict | None:
    """The counts (COUNTS' keys, integers) of the last start in one process's statistics
    file (an ``exec`` chain appends a start per program), None when it holds none."""
    found = None
    for line in text.splitlines():
        label, _, value = line.split(":", 1)[-1].strip().partition(":")
        if label == START:
            found = {}
        elif found is not None and label in COUNTS.values():
            key = next(k for k, v in COUNTS.items() if v == label)
            found.setdefault(key, int(value.split()[0]))
    return found if found and len(found) == len(COUNTS) else None


def objects(maps: str) -> list[str]:
    """The files mapped executable in one process (``/proc/PID/maps`` text, proc(5)): the
    program, its loader and each shared object, by file name, in address order."""
    names = []
    for line in maps.splitlines():
        fields = line.split(None, 5)
        if len(fields) == 6 and "x" in fields[1] and fields[5].startswith("/"):
            name = os.path.basename(fields[5].removesuffix(" (deleted)"))
            if name not in names:
                names.append(name)
    return names


def measure(server: Server, settings: Settings) -> Iterator[None]:
    """The ``loader`` block of a server that ``applies``: ``settings.profiled_starts`` starts
    with glibc's statistics on, yielding after each (attribution.interleaved):
    ``{runs, objects: [name], relocations, relocations_from_cache, relative_relocations}``
    (counts: medians over the starts; objects: the last start's, the server's own process
    at its answer). A start without an answer or without statistics (a loader other than
    glibc's, musl's say) leaves the block out with the cause; the row is not failed."""
    readings, names = [], []
    with tempfile.TemporaryDirectory(prefix="mcpstart-ld-") as folder:
        prefix = str(Path(folder) / "ld")

        def at_answer(processes: ProcessSet) -> tuple[int, str]:
            return processes.leader, Path(f"/proc/{processes.leader}/maps").read_text()

        try:
            for _ in range(settings.profiled_starts):
                _, _, (pid, maps) = profiled_start(
                    server.command, server.spawning(settings),
                    {"LD_DEBUG": "statistics", "LD_DEBUG_OUTPUT": prefix}, at_answer,
                    server.before_spawn)
                stats_file = Path(f"{prefix}.{pid}")
                counts = parse(stats_file.read_text()) if stats_file.exists() else None
                if counts is None:
                    raise RuntimeError("no glibc loader statistics before the answer (a "
                                       "loader other than glibc's, or LD_DEBUG overridden)")
                readings.append(counts)
                names = objects(maps)
                yield
        except (SessionError, RuntimeError, OSError) as err:
            server.row.skip_block(BLOCK, f"loader statistics: {err}")
            return
    server.row.loader = {"runs": len(readings), "objects": names,
                         **{key: round(statistics.median(r[key] for r in readings))
                            for key in COUNTS}}
