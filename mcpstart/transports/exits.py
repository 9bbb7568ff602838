"""A process's exit as a file descriptor that becomes readable when it exits, for every wait
that polls (tree.ProcessSet, the stdio and HTTP transports), through the process layer in use
(platforms.py).

- "linux": a pidfd (pidfd_open(2), Linux >= 5.3): readable the moment the process exits.
- "portable": the read end of a pipe whose write end a waiter thread closes when the process
  has exited (EOF: readable). For mcpstart's own child the thread blocks in
  ``os.waitid(P_PID, pid, WEXITED | WNOWAIT)``, which returns at the exit and leaves the
  child unreaped (its status stays for ProcessSet's ``wait4``, and its pid cannot be reused
  before that); for any other process, or where ``os.waitid`` is missing (macOS before
  Python 3.13), psutil is asked every POLL_S, the process known by pid and start time
  (psutil's ``is_running``), so a reused pid is never taken for it. A child's exit is seen at
  once, another's within POLL_S.
"""

from __future__ import annotations

import os
import threading
import time

import psutil

from .. import platforms

POLL_S = 0.002
"""How often the portable waiter asks whether a process that is not mcpstart's child (or
any process, without ``os.waitid``) still runs."""
_LOCK = threading.Lock()
_WATCHED: dict[tuple[int, float], int] = {}
"""(pid, start time) -> the read end of its waiter's pipe, while the waiter runs."""


def exit_fd(pid: int) -> int | None:
    """A descriptor of ``pid`` that polls readable once it exited (module doc), or None when
    the process is already gone (reaped) or cannot be watched. The caller closes it."""
    if platforms.current() == "portable":
        return watch(pid)
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def watch(pid: int) -> int | None:
    """The portable layer's descriptor of ``pid`` (module doc), or None when it is gone.
    Every descriptor of one process is a copy of the same pipe end, so all of them become
    readable at the same moment (as pidfds do): the transport that saw the exit and the
    process set that collects it never disagree."""
    try:
        proc = psutil.Process(pid)
        key = (pid, proc.create_time())
        exited = proc.status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return None
    if exited:  # readable at once, as a pidfd of a zombie is
        read_end, write_end = os.pipe()
        os.close(write_end)
        return read_end
    with _LOCK:
        if key not in _WATCHED:
            read_end, write_end = os.pipe()  # not inherited by spawned servers (PEP 446)
            _WATCHED[key] = read_end
            threading.Thread(target=_wait, args=(proc, key, write_end), daemon=True,
                             name=f"exit-{pid}").start()
        return os.dup(_WATCHED[key])


def _wait(proc: psutil.Process, key: tuple[int, float], write_end: int) -> None:
    try:
        if not _wait_child(proc.pid):
            while proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                time.sleep(POLL_S)
    except psutil.Error:  # gone between two looks
        pass
    finally:
        with _LOCK:
            os.close(write_end)
            os.close(_WATCHED.pop(key))


def _wait_child(pid: int) -> bool:
    """Block until mcpstart's child ``pid`` exits, leaving it unreaped; False when ``pid`` is
    not a child (or the system has no ``os.waitid``)."""
    if not hasattr(os, "waitid"):
        return False
    try:
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
    except ChildProcessError:
        return False
    return True
