"""Cold page cache without root: before a cold-cache run (``--cache-state cold``), drop the
files a server reads from the page cache and measure, with mincore(2), how much went and how
much stayed.

Use: ``files = server_files(exe, artifacts, mapped_files(pid_of_a_warm_run))`` once per server,
then ``evict(files)`` before each timed spawn. Linux only (/proc, posix_fadvise, mincore).

How (no root needed, only read access to the files): for each file, fdatasync (only if it may
still hold dirty pages, see ``DIRTY_WINDOW_S``), then ``posix_fadvise(POSIX_FADV_DONTNEED)``,
which drops the file's clean, unmapped pages (mm/fadvise.c, mm/truncate.c
``invalidate_mapping_pages``). Pages stay when a running process maps them (shared libraries
such as libc are mapped by every process, mcpstart's own included), when they are dirty or under
writeback, and on tmpfs/ramfs, where the page cache is the file's only storage.
"""

from __future__ import annotations

import ctypes
import errno
import mmap
import os
import re
import shutil
import stat
import time
from functools import cache

PSEUDO_ROOTS = ("/proc/", "/sys/", "/dev/")
"""Never walked into nor evicted: their files are not page-cached disk files."""

NOTE_EXAMPLES = 3
"""How many of the files with the most pages left the note names."""


def _dirty_window_s() -> float:
    """Seconds after its last write a file may still hold dirty pages: the kernel writes back
    pages dirty for longer than vm.dirty_expire_centisecs at the flusher's next wake-up, every
    vm.dirty_writeback_centisecs (Documentation/admin-guide/sysctl/vm.rst; defaults 30 s and
    5 s). Doubled as a margin for a slow flusher."""
    total = 0
    for name, default in (("dirty_expire_centisecs", 3000), ("dirty_writeback_centisecs", 500)):
        try:
            with open(f"/proc/sys/vm/{name}") as file:
                total += int(file.read())
        except (OSError, ValueError):
            total += default
    return 2 * total / 100


DIRTY_WINDOW_S = _dirty_window_s()
"""Files whose inode changed (st_ctime) within this many seconds get fdatasync before
DONTNEED; older files are clean. Measured here (ext4 on virtio): fdatasync on a clean file
still costs ~0.1 ms, 6 s over a 50,000-file Python tree, so it is not run on every file."""

_LOW_BIT = bytes(b & 1 for b in range(256))
"""mincore(2): only the least significant bit of each vector byte says "resident"."""


@cache
def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    return libc


def _resident(fd: int, size: int) -> int:
    """Bytes of the open file ``fd`` (``size`` bytes long) in the page cache. Maps the file
    without touching it (no page is read in) and asks mincore for its pages."""
    if size == 0:
        return 0
    libc = _libc()
    page = os.sysconf("SC_PAGE_SIZE")
    pages = -(-size // page)
    addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
    if addr is None or addr == ctypes.c_void_p(-1).value:
        code = ctypes.get_errno()
        raise OSError(code, f"mmap: {os.strerror(code)}")
    try:
        vector = ctypes.create_string_buffer(pages)
        if libc.mincore(addr, size, vector) != 0:
            code = ctypes.get_errno()
            raise OSError(code, f"mincore: {os.strerror(code)}")
    finally:
        libc.munmap(addr, size)
    return min(vector.raw.translate(_LOW_BIT).count(1) * page, size)


def resident_bytes(path: str) -> int:
    """Bytes of the file at ``path`` now in the page cache: resident pages (mincore(2) over a
    read-only shared mapping of the whole file, page size from os.sysconf) times the page size,
    capped at the file's size. Does not read the file in. Raises OSError when the file cannot
    be opened or mapped."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        return _resident(fd, os.fstat(fd).st_size)
    finally:
        os.close(fd)


def _datasync(fd: int) -> None:
    """Write the file's dirty pages back so DONTNEED can drop them. Linux syncs through a
    read-only descriptor; POSIX allows EBADF there (fdatasync wants one "open for writing"),
    and EINVAL (a file that does not support syncing) or EROFS (a read-only filesystem) mean
    there is nothing to write back: all three are ignored."""
    try:
        os.fdatasync(fd)
    except OSError as err:
        if err.errno not in (errno.EBADF, errno.EINVAL, errno.EROFS):
            raise


def evict(paths: list[str]) -> dict:
    """Drop ``paths`` from the page cache: for each file, fdatasync when it changed within
    ``DIRTY_WINDOW_S``, then posix_fadvise(POSIX_FADV_DONTNEED) over the whole file, with
    residency measured by mincore before and after.

    Returns ``{"files": evicted files, "skipped": files that vanished, could not be opened or
    advised, were not regular files or lie under /proc, /sys or /dev, "evicted_bytes": sum of
    before - after, "resident_bytes": sum of after, "resident_note": str | None}``; the note
    (None when nothing stayed) says why pages stay and names the files with the most left.
    Bytes are page-granular, capped at each file's size.
    """
    files = skipped = evicted = resident = 0
    kept: list[tuple[int, str]] = []
    recent = time.time() - DIRTY_WINDOW_S
    for path in paths:
        if path.startswith(PSEUDO_ROOTS):
            skipped += 1
            continue
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
        except OSError:
            skipped += 1
            continue
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                skipped += 1
                continue
            before = _resident(fd, info.st_size)
            if info.st_ctime >= recent:
                _datasync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            after = _resident(fd, info.st_size)
        except OSError:
            skipped += 1
            continue
        finally:
            os.close(fd)
        files += 1
        evicted += before - after
        resident += after
        if after:
            kept.append((after, path))
    return {"files": files, "skipped": skipped, "evicted_bytes": evicted,
            "resident_bytes": resident, "resident_note": _note(kept, files)}


def _note(kept: list[tuple[int, str]], files: int) -> str | None:
    if not kept:
        return None
    kept.sort(reverse=True)
    examples = ", ".join(f"{path} ({size / 1024:.0f} KiB)" for size, path in kept[:NOTE_EXAMPLES])
    return (f"{len(kept)} of {files} files kept pages in the page cache (most: {examples}): "
            "the kernel does not drop pages mapped by a running process (shared libraries such "
            "as libc are mapped by every process, mcpstart's own included), nor dirty pages or "
            "pages under writeback, and on tmpfs or ramfs the page cache is the file itself")


def mapped_files(pid: int) -> list[str]:
    """Regular files process ``pid`` maps, from /proc/PID/maps, in first-mapped order without
    duplicates: the executable, shared libraries, mapped data files. Anonymous and special
    mappings ([heap], [vdso], memfd:, files under /proc, /sys, /dev) and deleted files are left
    out. Raises ProcessLookupError when the process has gone, PermissionError when its maps
    are not readable (another user's process)."""
    try:
        with open(f"/proc/{pid}/maps") as file:
            lines = file.read().splitlines()
    except FileNotFoundError:
        raise ProcessLookupError(f"no process {pid}") from None
    found: dict[str, None] = {}
    for line in lines:
        fields = line.split(maxsplit=5)
        if len(fields) < 6 or fields[4] == "0":
            continue
        path = fields[5]
        if path.startswith("/") and not path.startswith(PSEUDO_ROOTS) and os.path.isfile(path):
            found[path] = None
    return list(found)


PYTHON = re.compile(r"python(\d+(\.\d+)?)?")
OTHER_TREES = {re.compile(r"ruby[\d.]*"): ("lib/ruby",), re.compile(r"java"): ("lib",)}
"""Library trees of interpreters other than Python, as folders under the prefix (the folder
above the interpreter's bin/): Ruby's lib/ruby (standard library and gems), a JDK's lib (the
modules image, libjvm.so). Node.js has none: its standard library is compiled into the node
executable."""
PYTHON_SKIP = frozenset({"test", "site-packages", "dist-packages"})
"""Folders of the Python standard library folder not evicted: the regression suite (no server
imports it) and third-party packages (a server's packages come from its venv or artifacts)."""


def server_files(argv0_resolved: str, artifact_paths: list[str], mapped: list[str]) -> list[str]:
    """The files to evict before a cold-cache start, as real paths, deduplicated, in order:

    1. the executable ``argv0_resolved`` (an absolute path, e.g. from shutil.which; symlinks
       are followed) and, when it is a script, the interpreter its ``#!`` line names (also
       through ``/usr/bin/env [-S] NAME``, looked up on PATH; one level);
    2. the ``artifact_paths`` (files, or folders walked without following symlinked folders);
    3. ``mapped``: the files a warm run mapped (``mapped_files``);
    4. library trees, for each interpreter recognised by name among the executable, its ``#!``
       interpreter and the mapped files (so pyenv shims and launchers still count):
       - python, pythonX, pythonX.Y: ``<prefix>/lib/pythonX.Y`` (the standard library with
         lib-dynload and __pycache__; not ``PYTHON_SKIP``), prefix from the interpreter's
         real path; for a venv interpreter (pyvenv.cfg above its unresolved bin/), also the
         venv's ``lib/python*/site-packages``;
       - ruby, java: ``OTHER_TREES``; node: none (built into the executable);
       - any of these inside ``node_modules`` (npx, npm and other globally installed Node.js
         tools): its package folder (``node_modules/NAME`` or ``node_modules/@SCOPE/NAME``).

    Regular files only; nothing under /proc, /sys or /dev; paths that do not exist are left
    out. Not covered: packages a launcher fetches at start (npx, uvx caches) and a base
    interpreter's own site-packages (pass them in ``artifact_paths``).
    """
    found: dict[str, None] = {}

    def add_file(path: str) -> None:
        real = os.path.realpath(path)
        if not real.startswith(PSEUDO_ROOTS) and os.path.isfile(real):
            found[real] = None

    def add_tree(top: str, skip: frozenset[str] = frozenset()) -> None:
        if not os.path.isdir(top) or os.path.realpath(top).startswith(PSEUDO_ROOTS):
            add_file(top)
            return
        for folder, dirs, names in os.walk(top):
            if folder == top:
                dirs[:] = [name for name in dirs if name not in skip]
            for name in names:
                add_file(os.path.join(folder, name))

    interpreter = _shebang(argv0_resolved)
    add_file(argv0_resolved)
    if interpreter:
        add_file(interpreter)
    for path in artifact_paths:
        add_tree(path)
    for path in mapped:
        add_file(path)
    programs = [argv0_resolved, *([interpreter] if interpreter else []), *mapped]
    for top, skip in dict.fromkeys(tree for program in programs
                                   for tree in _library_trees(program)):
        add_tree(top, skip)
    return list(found)


def _shebang(path: str) -> str | None:
    """The interpreter a script's ``#!`` line names, as a path, or None."""
    try:
        with open(path, "rb") as file:
            head = file.read(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].decode(errors="replace").split()
    if words and os.path.basename(words[0]) == "env":
        words = [word for word in words[1:] if not word.startswith("-") and "=" not in word]
        return shutil.which(words[0]) if words else None
    return words[0] if words else None


def _library_trees(program: str) -> list[tuple[str, frozenset[str]]]:
    """(folder, names of its subfolders to leave out) for the interpreter ``program``."""
    real = os.path.realpath(program)
    trees: list[tuple[str, frozenset[str]]] = []
    parts = real.split(os.sep)
    if "node_modules" in parts:
        at = len(parts) - 1 - parts[::-1].index("node_modules")
        end = at + 3 if at + 2 < len(parts) and parts[at + 1].startswith("@") else at + 2
        if end < len(parts):
            trees.append((os.sep.join(parts[:end]), frozenset()))
    names = {os.path.basename(program), os.path.basename(real)}
    prefix = os.path.dirname(os.path.dirname(real))
    for name in names:
        if match := PYTHON.fullmatch(name):
            version = match.group(1) or ""
            for lib in _glob_dirs(os.path.join(prefix, "lib"), f"python{version}"):
                if os.path.isfile(os.path.join(lib, "os.py")):
                    trees.append((lib, PYTHON_SKIP))
            venv = os.path.dirname(os.path.dirname(os.path.abspath(program)))
            if os.path.isfile(os.path.join(venv, "pyvenv.cfg")):
                for lib in _glob_dirs(os.path.join(venv, "lib"), "python"):
                    trees.append((os.path.join(lib, "site-packages"), frozenset()))
        for pattern, folders in OTHER_TREES.items():
            if pattern.fullmatch(name):
                trees += [(os.path.join(prefix, folder), frozenset()) for folder in folders]
    return trees


def _glob_dirs(folder: str, start: str) -> list[str]:
    """Subfolders of ``folder`` whose name starts with ``start`` (sorted; [] if none)."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    return [os.path.join(folder, name) for name in names
            if name.startswith(start) and os.path.isdir(os.path.join(folder, name))]
