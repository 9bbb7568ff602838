"""Where a process's memory is held: its mappings in /proc/PID/smaps (Linux,
Documentation/filesystems/proc.rst, "smaps"), each put in one class by its path, permissions
and inode, with the Size, Rss and Pss of each class summed. Every mapping falls in exactly one
class, so the classes' RSS sums to the process's RSS (up to the kernel's per-CPU counter lag
in VmRSS). The rule, and what it cannot tell apart, is in docs/process-tree.md ("Where the
idle memory goes")."""

from __future__ import annotations

import os

from .. import platforms

CLASSES = ("exe_code", "lib_code", "jit_code", "heap", "stack", "anon", "file_data", "other")
"""The classes, in the order they are shown:

- ``exe_code``: executable mappings of the process's own executable file (its text);
- ``lib_code``: executable mappings of any other file (shared libraries, extension modules);
- ``jit_code``: executable anonymous mappings (code a runtime generated: V8, the JVM);
- ``heap``: the brk heap (``[heap]``), the C allocator's main arena;
- ``stack``: the main thread's stack (``[stack]``);
- ``anon``: every other anonymous mapping (mmap'd allocator arenas, thread stacks, and the
  language heaps that live in them: V8's, the JVM's, Go's, CPython's object arenas);
- ``file_data``: non-executable mappings of files (read-only data, relocated and writable
  data of the executable and libraries, mapped data files, shared memory);
- ``other``: the kernel's own mappings (``[vdso]``, ``[vvar]``, ``[vsyscall]``)."""

FIELDS = {"Size:": "size_bytes", "Rss:": "rss_bytes", "Pss:": "pss_bytes"}


def classify(perms: str, inode: int, path: str, exe: str | None) -> str:
    """The class (one of CLASSES) of one mapping from its smaps header: ``perms`` ("r-xp"),
    ``inode`` (0 for anonymous memory), ``path`` (the header's last field, "" when none;
    " (deleted)" already stripped) and ``exe`` (the process's executable's path, or None)."""
    executable = "x" in perms
    if inode:
        if executable:
            return "exe_code" if path == exe else "lib_code"
        return "file_data"
    if path == "[heap]":
        return "heap"
    if path == "[stack]":
        return "stack"
    if path.startswith("[") and not path.startswith("[anon:"):
        return "other"
    return "jit_code" if executable else "anon"


def parse(text: str, exe: str | None) -> dict[str, dict[str, int]]:
    """The classes of one smaps text (``exe`` as in ``classify``): ``{class: {size_bytes,
    rss_bytes, pss_bytes}}`` for every class in CLASSES (zeros where no mapping fell), bytes
    (the kernel writes kB).

    Raises:
        ValueError: a header line that is not ``start-end perms offset dev inode [path]``.
    """
    classes = {name: dict.fromkeys(FIELDS.values(), 0) for name in CLASSES}
    current = None
    for line in text.splitlines():
        head = line.split(maxsplit=5)
        if head and "-" in head[0] and not head[0].endswith(":"):
            if len(head) < 5:
                raise ValueError(f"not a mapping header: {line!r}")
            path = head[5].strip() if len(head) == 6 else ""
            path = path.removesuffix(" (deleted)")
            current = classes[classify(head[1], int(head[4]), path, exe)]
        elif head and head[0] in FIELDS and current is not None:
            current[FIELDS[head[0]]] += int(head[1]) * 1024
    return classes


def split(pid: int) -> dict[str, dict[str, int]] | None:
    """``parse`` of /proc/PID/smaps, the executable read from /proc/PID/exe; None when the
    process is gone or its smaps cannot be read (another user's, not Linux), and under the
    portable process layer (platforms.NOT_MEASURED)."""
    if platforms.current() == "portable":
        return None
    try:
        exe = os.readlink(f"/proc/{pid}/exe").removesuffix(" (deleted)")
    except OSError:
        exe = None
    try:
        with open(f"/proc/{pid}/smaps") as handle:
            return parse(handle.read(), exe)
    except (OSError, ValueError):
        return None


def total(splits: list[dict | None]) -> dict[str, dict[str, int]] | None:
    """Several processes' splits summed class by class; None when one of them is None or
    there are none."""
    if not splits or None in splits:
        return None
    return {name: {key: sum(s[name][key] for s in splits) for key in FIELDS.values()}
            for name in CLASSES}


def rss(classes: dict[str, dict[str, int]]) -> int:
    """The RSS of a split, all classes summed (bytes)."""
    return sum(value["rss_bytes"] for value in classes.values())
