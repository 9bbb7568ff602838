"""Container-like memory limits (``--memory-limit MIB``): each spawned server runs in a memory
cgroup of its own whose limit is MIB, as a container's would be (the published HTTP benchmark
gave each server 1 GB), so that a server allocating past it is ended by the kernel's OOM
killer, and its row says so, naming the limit.

The cgroup is made under the one mcpstart runs in: cgroup v2 (``memory.max``; the memory
controller must be enabled below mcpstart's cgroup, which mcpstart tries, and which a cgroup
holding processes other than the root's refuses: the "no internal processes" rule, kernel
Documentation/admin-guide/cgroup-v2.rst) or the v1 memory hierarchy
(``memory.limit_in_bytes``; Documentation/admin-guide/cgroup-v1/memory.rst). A server enters it
through ``/bin/sh``, which writes its own pid to the cgroup and then ``exec``s the server: the
same pid, no process added to the tree, about a millisecond more from spawn (every start of the
run, so its runs compare with each other, not with a run without the limit).
Where no limit can be set (no writable memory cgroup, another platform), the row says why.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from .. import warnings as warn
from ..command import Command

ENTER = 'echo $$ > "$0" && exec "$@"'
"""The shell's script: its pid into the cgroup (``$0``: cgroup.procs), then the server in its
place."""


class LimitError(RuntimeError):
    """No memory limit can be set here; the message says why."""


@dataclass
class MemoryLimit:
    """One server's memory cgroup: ``path`` (its folder), ``version`` (1 or 2), ``bytes``."""

    path: Path
    version: int
    bytes: int

    def wrap(self, command: Command) -> Command:
        """``command`` started inside the cgroup (ENTER)."""
        return replace(command, argv=["/bin/sh", "-c", ENTER, str(self.path / "cgroup.procs"),
                                      *command.argv])

    def oom_kills(self) -> int:
        """How many processes the OOM killer ended in the cgroup (v2 ``memory.events``, v1
        ``memory.oom_control``: ``oom_kill``, Linux 4.13 and later); 0 when unreadable."""
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        try:
            for line in (self.path / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0

    def peak_bytes(self) -> int | None:
        """The cgroup's memory high-water mark (v2 ``memory.peak``, Linux 5.19 and later; v1
        ``memory.max_usage_in_bytes``): page cache included, so above the processes' RSS."""
        name = "memory.peak" if self.version == 2 else "memory.max_usage_in_bytes"
        try:
            return int((self.path / name).read_text())
        except (OSError, ValueError):
            return None

    def record(self) -> dict:
        """The row's ``memory_limit`` block (docs/results.md#memory_limit)."""
        return {"bytes": self.bytes, "cgroup": str(self.path), "cgroup_version": self.version,
                "oom_kills": self.oom_kills(), "peak_bytes": self.peak_bytes()}

    def remove(self) -> None:
        """Remove the cgroup (it is empty once every server process ended); a cgroup that
        cannot be removed is left, as the kernel keeps it until then."""
        try:
            self.path.rmdir()
        except OSError:
            pass


def own_cgroups(proc: Path = Path("/proc/self")) -> tuple[Path | None, Path | None]:
    """(mcpstart's cgroup v2 folder, its v1 memory folder), each None where there is none,
    from /proc/self/cgroup and the cgroup mounts of /proc/self/mountinfo."""
    unified, memory = None, None
    mounts = {}
    for line in (proc / "mountinfo").read_text().splitlines():
        fields = line.split()
        dash = fields.index("-")
        kind, options = fields[dash + 1], fields[dash + 3].split(",")
        if kind == "cgroup2":
            mounts["v2"] = (fields[3], fields[4])
        elif kind == "cgroup" and "memory" in options:
            mounts["memory"] = (fields[3], fields[4])
    for line in (proc / "cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        key = "v2" if controllers == "" else "memory" if "memory" in controllers.split(",") \
            else None
        if key in mounts:
            root, point = mounts[key]
            relative = os.path.relpath(path, root)
            found = Path(point) if relative == "." else Path(point) / relative
            if key == "v2":
                unified = found
            else:
                memory = found
    return unified, memory


def make(name: str, limit_bytes: int) -> MemoryLimit:
    """A new memory cgroup ``name`` below mcpstart's, limited to ``limit_bytes``: the v1
    memory hierarchy where mcpstart is in one, else cgroup v2.

    Raises:
        LimitError: neither can be made here (the message says what was tried).
    """
    try:
        unified, memory = own_cgroups()
    except (OSError, ValueError) as err:
        raise LimitError(f"no cgroup information ({err})") from err
    tried = []
    for parent, version in ((memory, 1), (unified, 2)):
        if parent is None:
            continue
        path = parent / name
        try:
            if version == 2:
                enabled = (parent / "cgroup.subtree_control").read_text().split()
                if "memory" not in enabled:
                    (parent / "cgroup.subtree_control").write_text("+memory")
            path.mkdir(exist_ok=True)
            limit = "memory.max" if version == 2 else "memory.limit_in_bytes"
            (path / limit).write_text(str(limit_bytes))
            return MemoryLimit(path, version, limit_bytes)
        except OSError as err:
            tried.append(f"cgroup v{version} at {parent}: {err.strerror or err}")
            try:
                path.rmdir()
            except OSError:
                pass
    raise LimitError("no memory cgroup could be made (" + ("; ".join(tried) or
                     "mcpstart is in no memory cgroup") + ")")


def attach(servers, limit_bytes: int | None, run_id: str) -> None:
    """A memory cgroup for each spawned server of ``servers`` (``Server.memory_limit``), named
    ``mcpstart-RUN_ID-N``; where none can be made the row says why
    (``not_measured["memory_limit"]``) and the server runs without one."""
    if limit_bytes is None:
        return
    for index, server in enumerate(servers):
        if server.command is None:
            continue
        try:
            server.memory_limit = make(f"mcpstart-{run_id}-{index}", limit_bytes)
        except LimitError as err:
            server.row.skip_block("memory_limit", f"no memory limit set: {err}")


def judge(server) -> None:
    """The row's ``memory_limit`` block, and a row failed while the OOM killer ended a process
    of its cgroup names the limit in its cause (a warning when the row stands)."""
    limit = server.memory_limit
    if limit is None:
        return
    server.row.memory_limit = record = limit.record()
    if not record["oom_kills"]:
        return
    said = (f"the kernel's OOM killer ended {record['oom_kills']} process(es) of the server at "
            f"its memory limit of {limit.bytes / 2**20:g} MiB (--memory-limit; cgroup "
            f"{limit.path})")
    if server.row.status == "failed":
        server.row.reason = f"{said}: {server.row.reason}"
    else:
        server.row.warnings.append(warn.memory_limit_hit(said))


def detach(servers) -> None:
    """Remove every server's memory cgroup (Server.memory_limit)."""
    for server in servers:
        if server.memory_limit is not None:
            server.memory_limit.remove()
