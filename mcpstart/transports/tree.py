"""The server's processes, as docs/process-tree.md defines them: the
spawned process; every process in the session or process group mcpstart made for it; every
process ever seen as its descendant (identified by pid and start time, so a reused pid is
not confused); and, when mcpstart is a child subreaper, every process adopted by mcpstart
that started after the spawn and is not a plain fork of mcpstart itself. Nothing else is
ever signalled, reaped or counted, so mcpstart used as a library inside a program with
children of its own leaves them alone.

Each member is watched through a descriptor that becomes readable when it exits (exits.py): a
pidfd under the linux process layer (Linux >= 5.3), exits timed to the wake-up of one ``poll``
(microseconds); a waiter thread's pipe under the portable one (platforms.py).
"""

from __future__ import annotations

import ctypes
import os
import select
import signal
import socket
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import psutil

from .base import Ended
from .exits import exit_fd

MAXRSS_UNIT = 1 if sys.platform == "darwin" else 1024
"""Bytes per unit of ``ru_maxrss``: kilobytes on Linux and the BSDs (getrusage(2)), bytes on
macOS (its getrusage(2) man page)."""
PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h
PR_GET_CHILD_SUBREAPER = 37
RESCAN_S = 0.05
"""How often a wait for the processes to exit looks for new ones (forked meanwhile)."""

_SPAWNED: set[int] = set()
"""Pids of the processes mcpstart spawned as servers: none is ever "adopted" by another."""


def spawned(pid: int) -> None:
    """Note ``pid`` as a server mcpstart spawned, at the spawn (before its ProcessSet exists):
    another server's set, scanning as a subreaper, must never take it for an orphan of its
    own (several servers started at once)."""
    _SPAWNED.add(pid)


def _prctl(option: int, arg) -> bool:
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(option, arg, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


@contextmanager
def child_subreaper() -> Iterator[bool]:
    """Within the block this process adopts orphaned descendants (Linux
    ``PR_SET_CHILD_SUBREAPER``), so a server's process that leaves its parent is still found;
    afterwards it is as it was. The CLI's jobs run in one; a program using mcpstart as a
    library opts in (engine.Job.subreaper). Yields False where the OS has no such thing."""
    before = is_subreaper()
    try:
        yield _prctl(PR_SET_CHILD_SUBREAPER, 1)
    finally:
        if not before:
            _prctl(PR_SET_CHILD_SUBREAPER, 0)


def is_subreaper() -> bool:
    """True when this process is a child subreaper (Linux ``PR_GET_CHILD_SUBREAPER``)."""
    flag = ctypes.c_int(0)
    return _prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(flag)) and bool(flag.value)


def _quietly(read, default):
    """``read()``, or ``default`` for a process that has exited meanwhile (a zombie has no
    command line)."""
    try:
        return read()
    except psutil.Error:
        return default


def parents() -> dict[int, int | None]:
    """pid -> parent pid of every process on the machine: read from /proc/PID/stat where
    there is a /proc (proc(5): the second field after the command name's closing
    parenthesis), else psutil's. A scan reads every process, often: /proc directly spares
    the psutil.Process psutil's process_iter makes and checks for each."""
    if not os.path.isdir("/proc"):
        return {proc.pid: proc.info["ppid"] for proc in psutil.process_iter(["ppid"])}
    found = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as stat:
                    found[int(name)] = int(stat.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue  # exited meanwhile
    return found


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


def rusage_of(usage) -> dict:
    """An ``os.wait4`` resource usage (the process and the descendants it reaped, getrusage(2))
    as ``{cpu_ms, user_ms, system_ms, minor_faults, major_faults, voluntary_switches,
    involuntary_switches, read_bytes}``; read_bytes from ``ru_inblock``, counted in 512-byte
    blocks (proc(5), /proc/pid/io, and the kernel's task_io_accounting)."""
    return {"cpu_ms": (usage.ru_utime + usage.ru_stime) * 1000, "user_ms": usage.ru_utime * 1000, "system_ms": usage.ru_stime * 1000,
            "minor_faults": usage.ru_minflt, "major_faults": usage.ru_majflt,
            "voluntary_switches": usage.ru_nvcsw, "involuntary_switches": usage.ru_nivcsw,
            "read_bytes": usage.ru_inblock * 512}


class ProcessSet:
    """The processes of one server, with an exit descriptor (exits.exit_fd) on each.

    Attributes:
        leader: pid of the spawned process (also its session id and process group id).
        members: pid -> psutil.Process of the members not known to have exited, in the
            order found (the spawned process first).
        exited: pid -> ``{"pid", "name", "cmdline", "exit_code", "ru_maxrss_bytes",
            "usage"}`` of members seen exiting; exit_code, ru_maxrss and usage (``os.wait4``:
            ``rusage_of``) only for those mcpstart reaped itself (its children), else None.
        left_group: pids of members seen outside the server's process group.
    """

    def __init__(self, leader: int):
        self.leader = leader
        self.spawned_at = None  # the leader's start time, in psutil's clock (adoption cut-off)
        self.members: dict[int, psutil.Process] = {}
        self.exited: dict[int, dict] = {}
        self.left_group: set[int] = set()
        self._pidfds: dict[int, int] = {}
        self._info: dict[int, dict] = {}
        self._origins: dict[int, dict] = {}
        self._gone: set[tuple[int, float]] = set()
        self._subreaper = is_subreaper()
        _SPAWNED.add(leader)
        try:
            proc = psutil.Process(leader)
            self.spawned_at = proc.create_time()
            self._add(proc, leader=True)
        except psutil.NoSuchProcess:
            pass

    # ----- membership ----------------------------------------------------------------
    def scan(self) -> list[psutil.Process]:
        """Look at every process on the machine once and add the server's new ones.
        Returns the live members (``alive()``)."""
        me, my_sid = os.getpid(), os.getsid(0)
        others = {}
        for pid, ppid in parents().items():
            if pid in self.members or pid == me:
                continue
            try:
                sid, pgid = os.getsid(pid), os.getpgid(pid)
            except OSError:
                continue
            if sid == self.leader or pgid == self.leader:
                self._add_pid(pid)
            elif (self._subreaper and ppid == me and pid not in _SPAWNED and sid != my_sid
                  and self._started_after_spawn(pid)):
                self._add_pid(pid)
            else:
                others[pid] = ppid
        grew = True
        while grew:  # descendants of members, however deep, in whatever order listed
            grew = False
            for pid, ppid in list(others.items()):
                if ppid in self.members:
                    self._add_pid(pid)
                    del others[pid]
                    grew = True
        return self.alive()

    def _started_after_spawn(self, pid: int) -> bool:
        try:  # both start times in the same clock (boot time plus jiffies)
            return (self.spawned_at is not None
                    and psutil.Process(pid).create_time() >= self.spawned_at)
        except psutil.Error:
            return False

    def _add_pid(self, pid: int) -> None:
        try:
            proc = psutil.Process(pid)
        except psutil.Error:
            return
        self._add(proc)

    def _add(self, proc: psutil.Process, leader: bool = False) -> None:
        """Watch ``proc``; a zombie is left out, except the leader, which mcpstart must reap."""
        try:
            key = (proc.pid, proc.create_time())
            if key in self._gone or (not leader and proc.status() == psutil.STATUS_ZOMBIE):
                return
        except psutil.Error:
            return
        fd = exit_fd(proc.pid)
        if fd is None:
            return
        if not proc.is_running():  # the pid was reused between the two looks
            os.close(fd)
            return
        self._info[proc.pid] = {"pid": proc.pid, "name": _quietly(proc.name, ""),
                                "cmdline": _quietly(proc.cmdline, [])}
        self._origins[proc.pid] = {"started": key[1], "ppid": _quietly(proc.ppid, None)}
        self.members[proc.pid] = proc
        self._pidfds[proc.pid] = fd

    def listening(self) -> list[str]:
        """Where the tree listens, sorted: "127.0.0.1:8000", "[::1]:8000" (TCP sockets in
        LISTEN) and "unix:PATH" (named Unix sockets), read from each live member's sockets
        after a scan (psutil ``net_connections``)."""
        found = set()
        for proc in self.scan():
            try:
                sockets = proc.net_connections(kind="inet") + proc.net_connections(kind="unix")
            except psutil.Error:
                continue
            for sock in sockets:
                if sock.family == socket.AF_UNIX:
                    if sock.laddr and not sock.laddr.startswith(("@", "\0")):
                        found.add(f"unix:{sock.laddr}")
                elif sock.status == psutil.CONN_LISTEN and sock.laddr:
                    host, port = sock.laddr[:2]
                    found.add(f"[{host}]:{port}" if ":" in host else f"{host}:{port}")
        return sorted(found)

    def alive(self) -> list[psutil.Process]:
        """Members still running, in the order found; exits are collected first."""
        self._collect_exits(0)
        for pid in self.members:
            if pid != self.leader and _pgid(pid) != self.leader:
                self.left_group.add(pid)
        return list(self.members.values())

    def info(self, pid: int) -> dict:
        """``{pid, name, cmdline}`` of a member as it was when found."""
        return self._info[pid]

    def origin(self, pid: int) -> dict:
        """``{started, ppid}`` of a member, live or exited: its start time in psutil's clock
        (seconds, to one clock tick) and its parent when found."""
        return self._origins[pid]

    # ----- exits -----------------------------------------------------------------------
    def _collect_exits(self, timeout_s: float, pipes=None) -> int | None:
        """Poll the pidfds for up to ``timeout_s``; retire members that exited (reaping
        mcpstart's own children with ``os.wait4``). ``pipes`` (a Transport) is drained
        meanwhile, so a server that writes while it exits never blocks. Returns the wake-up
        time when a member exited, else None."""
        deadline = time.monotonic() + timeout_s
        while self._pidfds:
            poller = select.poll()
            for fd in self._pidfds.values():
                poller.register(fd, select.POLLIN)
            read_fds = pipes.read_fds() if pipes is not None else []
            for fd in read_fds:
                poller.register(fd, select.POLLIN)
            events = poller.poll(max(deadline - time.monotonic(), 0) * 1000)
            now = time.perf_counter_ns()
            ready = {fd for fd, _ in events}
            if ready & set(read_fds):
                pipes.drain()
            exited = [pid for pid, fd in self._pidfds.items() if fd in ready]
            for pid in exited:
                self._retire(pid)
            if exited:
                return now
            if time.monotonic() >= deadline:
                return None
        return None

    def _retire(self, pid: int) -> None:
        proc = self.members.pop(pid)
        os.close(self._pidfds.pop(pid))
        record = {**self._info[pid], "exit_code": None, "ru_maxrss_bytes": None, "usage": None}
        try:
            self._gone.add((pid, proc.create_time()))
        except psutil.Error:
            pass
        try:
            done, status, usage = os.wait4(pid, os.WNOHANG)
            if done:
                record["exit_code"] = os.waitstatus_to_exitcode(status)
                record["ru_maxrss_bytes"] = usage.ru_maxrss * MAXRSS_UNIT
                record["usage"] = rusage_of(usage)
        except ChildProcessError:  # not mcpstart's child: its parent reaps it
            pass
        self.exited[pid] = record

    def wait_gone(self, timeout_s: float, pipes=None) -> int | None:
        """Wait until no member is left, looking for new members every RESCAN_S; ``pipes``
        as for ``_collect_exits``.

        Returns:
            ``time.perf_counter_ns()`` at the wake-up that saw the last member exit (or
            now, when none was left to begin with), or None when some were still running
            after ``timeout_s``.
        """
        deadline = time.monotonic() + timeout_s
        last = time.perf_counter_ns()
        while True:
            if not self.members and not self.scan():
                return last
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            woke = self._collect_exits(min(remaining, RESCAN_S), pipes)
            if woke is not None:
                last = woke
            elif self.members:
                self.scan()

    # ----- signals ---------------------------------------------------------------------
    def signal(self, sig: int) -> None:
        """Send ``sig`` to the process group mcpstart made (while a member belongs to it)
        and to each live member outside it; nothing else is signalled."""
        alive = self.alive()
        outside = [p for p in alive if _pgid(p.pid) != self.leader]
        if len(outside) < len(alive):
            try:
                os.killpg(self.leader, sig)
            except (ProcessLookupError, PermissionError):
                pass
        for proc in outside:
            try:
                proc.send_signal(sig)  # psutil checks the pid still names the same process
            except psutil.Error:
                pass

    def close(self) -> None:
        """Close the pidfds of members still listed (after a final kill) and forget them."""
        for pid in list(self.members):
            self._retire(pid)
        _SPAWNED.discard(self.leader)


def escalate(processes: ProcessSet, pid: int, alive: list[int], start_ns: int, how: str,
             last_ns: int | None, grace_s: float, kill_wait_s: float | None = None,
             pipes=None, now_ns=time.perf_counter_ns) -> Ended:
    """The end of every transport's shutdown (docs/process-tree.md): while some member is
    left (``last_ns`` None after the step ``how`` names: "eof" for stdio, "already_exited"
    when none was alive), SIGTERM to every member and wait ``grace_s``, then SIGKILL and wait
    ``kill_wait_s`` (default ``grace_s``); then the orphans (pids of ``alive`` seen outside
    the process group: ``[{pid, cmdline}]``), every exit seen, and the set closed.
    ``Ended.ms`` runs from ``start_ns`` to the last exit (``now_ns()`` if some never went);
    ``pipes`` as for ``ProcessSet.wait_gone``; ``exit_code`` is ``pid``'s."""
    for step, sig, wait in (("sigterm", signal.SIGTERM, grace_s),
                            ("sigkill", signal.SIGKILL,
                             grace_s if kill_wait_s is None else kill_wait_s)):
        if last_ns is not None:
            break
        how = step
        processes.signal(sig)
        last_ns = processes.wait_gone(wait, pipes)
    end = last_ns or now_ns()
    orphans = [{"pid": member, "cmdline": processes.info(member)["cmdline"]}
               for member in alive if member in processes.left_group]
    exited = list(processes.exited.values())
    processes.close()
    return Ended(how, (end - start_ns) / 1e6, processes.exited.get(pid, {}).get("exit_code"),
                 orphans, exited)
