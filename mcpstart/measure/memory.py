"""Memory of a server's whole process tree: RSS, PSS and USS per process and summed, and a
phase's peak RSS, exact where Linux keeps a high-water mark and sampled otherwise."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import psutil

SETTLE_INTERVAL_S = 0.1
SETTLE_WINDOW = 5
"""Idle memory counts as settled when the tree's RSS moved by less than SETTLE_TOLERANCE over
the last SETTLE_WINDOW samples taken SETTLE_INTERVAL_S apart."""
SETTLE_TOLERANCE = 0.01
SETTLE_MAX_S = 5.0
SAMPLE_INTERVAL_S = 0.005


def describe(proc: psutil.Process, full: bool) -> dict | None:
    """One process's memory: ``{pid, ppid, name, cmdline, rss_bytes, pss_bytes, uss_bytes}``.

    PSS and USS come from /proc/PID/smaps_rollup (``full=True``; slower) and are None where
    the OS does not give them. Returns None when the process has gone.
    """
    try:
        with proc.oneshot():
            row = {"pid": proc.pid, "ppid": proc.ppid(), "name": proc.name(),
                   "cmdline": proc.cmdline(), "rss_bytes": proc.memory_info().rss,
                   "pss_bytes": None, "uss_bytes": None}
    except psutil.Error:
        return None
    if full:
        try:
            info = proc.memory_full_info()
        except psutil.AccessDenied:
            return row
        except psutil.Error:
            return None
        row["pss_bytes"] = getattr(info, "pss", None)
        row["uss_bytes"] = getattr(info, "uss", None)
    return row


def tree_rss(procs: list[psutil.Process]) -> int:
    """Sum of RSS in bytes over the live processes of ``procs``."""
    total = 0
    for proc in procs:
        try:
            total += proc.memory_info().rss
        except psutil.Error:
            continue
    return total


def settle(tree: Callable[[], list[psutil.Process]]) -> tuple[bool, float]:
    """Wait until the tree's RSS stops moving (see SETTLE_* constants), at most SETTLE_MAX_S.

    Args:
        tree: returns the current process tree (processes may come and go).

    Returns:
        ``(settled, waited_s)``.
    """
    start = time.monotonic()
    window: list[int] = []
    while (waited := time.monotonic() - start) < SETTLE_MAX_S:
        window = (window + [tree_rss(tree())])[-SETTLE_WINDOW:]
        if len(window) == SETTLE_WINDOW and max(window) - min(window) <= SETTLE_TOLERANCE * max(window):
            return True, waited
        time.sleep(SETTLE_INTERVAL_S)
    return False, SETTLE_MAX_S


def reset_high_water_marks(procs: list[psutil.Process]) -> bool:
    """Reset each process's peak RSS (VmHWM) by writing 5 to /proc/PID/clear_refs (Linux >= 4.0,
    Documentation/admin-guide/mm/soft-dirty.rst and proc.rst). Returns False when any reset failed."""
    ok = bool(procs)
    for proc in procs:
        try:
            with open(f"/proc/{proc.pid}/clear_refs", "w") as handle:
                handle.write("5")
        except OSError:
            ok = False
    return ok


def high_water_marks(procs: list[psutil.Process]) -> dict[int, int]:
    """VmHWM in bytes per PID from /proc/PID/status; processes that are gone are left out."""
    marks = {}
    for proc in procs:
        try:
            with open(f"/proc/{proc.pid}/status") as handle:
                for line in handle:
                    if line.startswith("VmHWM:"):
                        marks[proc.pid] = int(line.split()[1]) * 1024
                        break
        except (OSError, ValueError):
            continue
    return marks


class PeakSampler:
    """Samples the tree's summed RSS every SAMPLE_INTERVAL_S in a thread; use as a context
    manager. ``peak_bytes`` is the largest sum seen (a lower bound of the true peak)."""

    def __init__(self, tree: Callable[[], list[psutil.Process]]):
        self._tree = tree
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.peak_bytes = 0
        self.samples = 0

    def _run(self) -> None:
        procs = self._tree()
        while not self._stop.is_set():
            self.peak_bytes = max(self.peak_bytes, tree_rss(procs))
            self.samples += 1
            if self.samples % 20 == 0:
                procs = self._tree()
            self._stop.wait(SAMPLE_INTERVAL_S)

    def __enter__(self) -> "PeakSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
