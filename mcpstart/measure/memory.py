"""Memory of a server's processes (transports/tree.py's set): idle RSS, PSS and USS per process and
summed once memory has settled; the peak of a phase, exact where Linux keeps a high-water mark
(one process) and sampled otherwise (trees); and which other processes share the server's
executable, on which PSS and USS depend."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import psutil

from .. import platforms, warnings as warn
from ..transports.tree import ProcessSet
from ..targets.cmdline import process_label
from . import mappings

PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


@dataclass(frozen=True)
class Sampling:
    """How the peak sampler reads a tree during a phase: the RSS of the known processes every
    ``interval_s``, a rescan for new processes every ``rescan_s``."""

    interval_s: float = 0.005
    rescan_s: float = 0.05


@dataclass(frozen=True)
class SettleRule:
    """When idle memory counts as settled, one rule for every server whatever its runtime:
    the RSS of each process of the tree (and their sum) sampled every ``interval_s``; settled
    once, for each of them, the least-squares slope over the last ``slope_window_s`` is under
    ``max_slope`` (fraction per second) and the last ``drop_window_s`` held no drop of more
    than ``max_drop`` (fraction of that window's maximum), and at least ``min_s`` have passed;
    at most ``max_s``.

    The floor: memory that is given back late must be waited out whatever the runtime. V8's
    memory reducer collects about 8 s after a Node.js isolate goes idle (v8
    src/heap/memory-reducer.h, kLongDelayMs = 8000), and a uv launcher gives back about half
    of its memory some 9 s after the handshake. 10 s covers both.

    The drop window is as long as the floor, so a drop starts the floor's wait again: a uv
    launcher can give memory back in two steps 9 s apart, the second past the floor. Memory
    that never drops still settles at the floor; ``max_s`` leaves room for two such steps
    (the observations behind these numbers: docs/figures.md, "Idle memory: late drops")."""

    interval_s: float = 0.1
    slope_window_s: float = 2.0
    max_slope: float = 0.005
    drop_window_s: float = 10.0
    max_drop: float = 0.01
    min_s: float = 10.0
    max_s: float = 30.0

    def describe(self) -> str:
        """The rule in one line, as stored in the results (``settle_rule``)."""
        return (f"RSS of every process every {self.interval_s:g} s; each process and the tree: "
                f"slope over {self.slope_window_s:g} s under {self.max_slope * 100:g}%/s and no "
                f"drop over {self.max_drop * 100:g}% in the last {self.drop_window_s:g} s; at "
                f"least {self.min_s:g} s, at most {self.max_s:g} s")

    def flat(self, t_s: list[float], values: list[int]) -> bool:
        """Whether one series (seconds since start, RSS bytes) is flat by the rule's slope
        and drop windows at its end."""
        now = t_s[-1]
        recent = [(t, v) for t, v in zip(t_s, values) if t >= now - self.slope_window_s]
        window = [v for t, v in zip(t_s, values) if t >= now - self.drop_window_s]
        if len(recent) < 3 or not max(window) or not any(v for _, v in recent):
            return False
        mean_t = sum(t for t, _ in recent) / len(recent)
        mean_v = sum(v for _, v in recent) / len(recent)
        slope = (sum((t - mean_t) * (v - mean_v) for t, v in recent)
                 / sum((t - mean_t) ** 2 for t, _ in recent))
        peak = max(window)
        return abs(slope) / mean_v < self.max_slope and peak - window[-1] <= self.max_drop * peak

    def settled(self, curve: "Curve") -> bool:
        """Whether ``curve`` shows settled memory: the floor passed, the tree and every
        process still alive flat."""
        if not curve.t_s or curve.t_s[-1] < max(self.min_s, self.drop_window_s):
            return False
        series = [curve.total] + [values for values in curve.per_process.values()
                                  if values and values[-1] is not None]
        return all(self.flat(curve.t_s, [v or 0 for v in values]) for values in series)


@dataclass
class Curve:
    """The idle-memory curve the settle rule read: ``t_s`` seconds since the wait began;
    ``total`` the tree's RSS in bytes at each; ``per_process`` pid -> RSS (None before the
    process was seen or after it exited)."""

    t_s: list[float] = field(default_factory=list)
    total: list[int] = field(default_factory=list)
    per_process: dict[int, list[int | None]] = field(default_factory=dict)

    def add(self, t: float, readings: dict[int, int]) -> None:
        for pid in readings.keys() - self.per_process.keys():
            self.per_process[pid] = [None] * len(self.t_s)
        for pid, values in self.per_process.items():
            values.append(readings.get(pid))
        self.t_s.append(t)
        self.total.append(sum(readings.values()))

    def record(self) -> dict:
        """The results file's ``memory.settle_curve``: the same, times rounded to ms."""
        return {"t_s": [round(t, 3) for t in self.t_s], "rss_bytes": list(self.total),
                "per_process": {str(pid): values for pid, values in self.per_process.items()}}


def rss(pid: int) -> int | None:
    """Resident set size in bytes from /proc/PID/statm (cheaper than psutil; psutil's under
    the portable process layer, platforms.py), or None."""
    if platforms.current() == "portable":
        try:
            return psutil.Process(pid).memory_info().rss
        except psutil.Error:
            return None
    try:
        with open(f"/proc/{pid}/statm", "rb") as handle:
            return int(handle.read().split()[1]) * PAGE
    except (OSError, ValueError, IndexError):
        return None


def tree_rss(processes: ProcessSet) -> int:
    """Summed RSS in bytes of the live processes."""
    return sum(v for p in processes.alive() if (v := rss(p.pid)) is not None)


def settle(processes: ProcessSet, wait: Callable[[float], None], rule: SettleRule,
           curve: Curve | None = None) -> tuple[bool, float]:
    """Wait until the tree's memory settles by ``rule``, calling ``wait(seconds)`` between
    samples (the session keeps its pipes served there) and rescanning for processes; the
    samples go into ``curve``.

    Returns:
        ``(settled, waited_s)``.
    """
    start = time.monotonic()
    curve = Curve() if curve is None else curve
    while (elapsed := time.monotonic() - start) < rule.max_s:
        processes.scan()
        curve.add(elapsed, {p.pid: v for p in processes.alive() if (v := rss(p.pid)) is not None})
        if rule.settled(curve):
            return True, elapsed
        wait(rule.interval_s)
    return False, time.monotonic() - start


def idle_rows(processes: ProcessSet) -> list[dict]:
    """One row per live process, in the order found: ``{pid, ppid, name, label, cmdline,
    idle_rss_bytes, idle_pss_bytes, idle_uss_bytes, idle_split}``; ``label`` is the table's
    short name (targets.cmdline.process_label); PSS and USS from smaps_rollup (None where the
    OS does not give them; PSS None under the portable process layer, platforms.py);
    ``idle_split`` the RSS, PSS and size by class of mapping
    (mappings.split: one read of /proc/PID/smaps; None where it cannot be read)."""
    rows = []
    for proc in processes.alive():
        try:
            with proc.oneshot():
                row = {**_labelled(processes.info(proc.pid)), "ppid": proc.ppid(),
                       "idle_rss_bytes": proc.memory_info().rss,
                       "idle_pss_bytes": None, "idle_uss_bytes": None}
        except psutil.Error:
            continue
        try:
            full = proc.memory_full_info()
            if platforms.current() == "linux":
                row["idle_pss_bytes"] = getattr(full, "pss", None)
            row["idle_uss_bytes"] = getattr(full, "uss", None)
        except psutil.Error:
            pass
        row["idle_split"] = mappings.split(proc.pid)
        rows.append(row)
    return rows


def _labelled(info: dict) -> dict:
    return {**info, "label": process_label(info.get("cmdline") or [], info.get("name", ""))}


def sharing(processes: ProcessSet) -> list[dict]:
    """Processes of this user, outside the server, whose executable is the same file as one
    of the server's (same device and inode, now): their pages are shared with the server, so
    the server's PSS and USS depend on them. Other users' processes cannot be read.

    Returns:
        ``[{pid, mcpstart}]``; ``mcpstart`` marks mcpstart's own process (a Python server
        shares the interpreter with it, which a client would not). No command line: a
        results file is shared (a CI artifact, a release note), and another program's
        arguments may hold its secrets (files of 0.2.0 hold ``cmdline`` too).
    """
    members = {p.pid for p in processes.alive()}
    exes = {key for pid in members if (key := _executable(pid)) is not None}
    return [{"pid": proc.pid, "mcpstart": proc.pid == os.getpid()}
            for proc in psutil.process_iter() if proc.pid not in members
            and _executable(proc.pid) in exes]


def _executable(pid: int) -> tuple[int, int] | None:
    """(device, inode) of the executable ``pid`` runs (/proc/PID/exe; psutil's path under the
    portable process layer), or None for another user's process or one gone."""
    try:
        if platforms.current() == "portable":
            st = os.stat(psutil.Process(pid).exe())
        else:
            st = os.stat(f"/proc/{pid}/exe")
    except (OSError, psutil.Error):
        return None
    return st.st_dev, st.st_ino


def reset_high_water_marks(processes: ProcessSet) -> bool:
    """Reset each live process's peak RSS (VmHWM) by writing 5 to /proc/PID/clear_refs
    (Linux >= 4.0, Documentation/admin-guide/mm/soft-dirty.rst and proc.rst). Returns False
    when any reset failed, and under the portable process layer (no high-water mark)."""
    if platforms.current() == "portable":
        return False
    alive = processes.alive()
    ok = bool(alive)
    for proc in alive:
        try:
            with open(f"/proc/{proc.pid}/clear_refs", "w") as handle:
                handle.write("5")
        except OSError:
            ok = False
    return ok


def high_water_mark(pid: int) -> int | None:
    """VmHWM in bytes from /proc/PID/status, or None when the process is gone (always
    under the portable process layer: platforms.NOT_MEASURED)."""
    if platforms.current() == "portable":
        return None
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        return None
    return None


class Sampler:
    """Samples the server's processes in a thread while a phase runs (a context manager):
    the RSS of the known processes every ``interval_s``, a rescan for new ones every
    ``rescan_s``, so a process born and gone inside the phase is seen.

    A second thread reads every member's mappings (mappings.split) every ``rescan_s`` and
    keeps the tree's split with the largest summed RSS: the split near the peak, which can
    miss a peak shorter than ``rescan_s``. It is a thread of its own because a read of smaps
    walks the process's page tables and can take milliseconds: the RSS samples keep their
    interval.

    Attributes:
        peak_bytes: the largest summed RSS seen (a lower bound of the true peak).
        largest: pid -> largest RSS seen of that process.
        seen: pid -> ``{pid, name, cmdline}`` of every process seen.
        samples: how many samples were taken.
        peak_split: the tree's split (mappings.total) with the largest summed RSS of those
            read (the first at once), or None when none could be read.
    """

    def __init__(self, processes: ProcessSet, sampling: Sampling):
        self._processes = processes
        self._interval_s, self._rescan_s = sampling.interval_s, sampling.rescan_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._splits = threading.Thread(target=self._run_splits, daemon=True)
        self._pids = list(processes.members)  # the members the RSS thread last read
        self.peak_bytes = 0
        self.largest: dict[int, int] = {}
        self.seen: dict[int, dict] = {}
        self.samples = 0
        self.peak_split: dict | None = None

    def _run(self) -> None:
        next_scan = 0.0
        while not self._stop.is_set():
            now = time.monotonic()
            if now >= next_scan:
                self._processes.scan()
                next_scan = now + self._rescan_s
            total = 0
            self._pids = list(self._processes.members)
            for pid in self._pids:
                value = rss(pid)
                if value is None:
                    continue
                total += value
                self.largest[pid] = max(self.largest.get(pid, 0), value)
                self.seen.setdefault(pid, self._processes.info(pid))
            self.peak_bytes = max(self.peak_bytes, total)
            self.samples += 1
            self._stop.wait(self._interval_s)

    def _run_splits(self) -> None:
        while True:  # a read at once, then every rescan_s until stopped
            split = mappings.total([mappings.split(pid) for pid in self._pids])
            if split is not None and (self.peak_split is None
                                      or mappings.rss(split) > mappings.rss(self.peak_split)):
                self.peak_split = split
            if self._stop.wait(self._rescan_s):
                return

    def __enter__(self) -> "Sampler":
        self._thread.start()
        self._splits.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._splits.join()


def idle_block(rows: list[dict], settle_s: float, rule: SettleRule, sampling: Sampling,
               shared_with: list[dict]) -> dict:
    """The results file's ``memory`` block before any peak is known: sums over ``rows``
    (``idle_rows``; ``idle_split`` summed class by class), the settle time and rule, the
    sampler's intervals, and ``sharing``."""
    def total(key: str) -> int | None:
        values = [row[key] for row in rows]
        return sum(values) if values and None not in values else None

    return {"idle_rss_bytes": total("idle_rss_bytes"), "idle_pss_bytes": total("idle_pss_bytes"),
            "idle_uss_bytes": total("idle_uss_bytes"),
            "idle_split": mappings.total([row["idle_split"] for row in rows]), "settle_s": settle_s,
            "settle_rule": rule.describe(), "sharing": shared_with,
            "peak_rss_bytes_payload": None, "peak_rss_bytes_sampled": None,
            "peak_rss_bytes_hwm_sum": None, "peak_method": None,
            "sample_interval_ms": sampling.interval_s * 1000,
            "rescan_interval_ms": sampling.rescan_s * 1000,
            "processes": [{**row, "peak_rss_bytes_hwm": None, "peak_rss_bytes_sampled": None,
                           "ru_maxrss_bytes": None, "exited": False} for row in rows]}


def high_water_marks(processes: ProcessSet) -> dict[int, int]:
    """VmHWM in bytes of each live process (pid -> bytes)."""
    return {p.pid: mark for p in processes.alive() if (mark := high_water_mark(p.pid)) is not None}


def peak_during(processes: ProcessSet, action: Callable[[], object],
                idle_processes: list[dict], first_marks: dict[int, int] | None,
                sampling: Sampling) -> dict:
    """The peak keys of the ``memory`` block, from two calls of the same tool: the first, timed
    call ran with nothing of mcpstart beside it and left ``first_marks`` (VmHWM per process
    after a reset, None when the reset failed); ``action`` repeats the call with every mark
    reset again and the Sampler running (``sampling``), so processes born and gone
    inside it are seen.

    ``peak_rss_bytes_payload``: for a one-process tree (one process idle, one seen by the
    sampler) the exact VmHWM of the first call (``peak_method`` "vmhwm"); else the sampled
    peak of the summed tree RSS during the second call ("sampled").
    ``peak_rss_bytes_hwm_sum``: the marks of the processes alive at the end, summed (the
    first call's for a one-process tree, else the second's). ``processes`` lists the idle
    rows plus every process seen, each with its mark, its largest sampled RSS, whether it
    exited, and ``os.wait4``'s ru_maxrss where mcpstart reaped it. ``peak_split``: the
    Sampler's split of the tree nearest the peak of the second call.
    """
    exact = reset_high_water_marks(processes)
    with Sampler(processes, sampling) as sampler:
        action()
        current = high_water_marks(processes)  # read once: the marks and who is alive
    alive = set(current)
    one = (first_marks is not None and len(first_marks) == 1 and len(idle_processes) == 1
           and set(sampler.seen) <= set(first_marks))
    marks = first_marks if one else current if exact else {}
    rows = {row["pid"]: dict(row) for row in idle_processes}
    for pid, info in sampler.seen.items():
        rows.setdefault(pid, {**_labelled(info), "ppid": None, "idle_rss_bytes": None,
                              "idle_pss_bytes": None, "idle_uss_bytes": None,
                              "idle_split": None})
    for pid, row in rows.items():
        reaped = processes.exited.get(pid, {})
        row.update(peak_rss_bytes_hwm=marks.get(pid),
                   peak_rss_bytes_sampled=sampler.largest.get(pid),
                   ru_maxrss_bytes=reaped.get("ru_maxrss_bytes"), exited=pid not in alive)
    return {"peak_rss_bytes_payload": next(iter(marks.values())) if one else sampler.peak_bytes,
            "peak_rss_bytes_sampled": sampler.peak_bytes,
            "peak_rss_bytes_hwm_sum": sum(marks.values()) if marks else None,
            "peak_method": "vmhwm" if one else "sampled", "peak_samples": sampler.samples,
            "peak_split": sampler.peak_split,
            "processes": list(rows.values())}


def peak_warnings(block: dict) -> list[dict]:
    """A peak below the idle figure of the same session, with the processes that exited."""
    idle, peak = block.get("idle_rss_bytes"), block.get("peak_rss_bytes_payload")
    if idle is None or peak is None or peak >= idle:
        return []
    gone = [f"{p.get('label') or p['name']} (pid {p['pid']})" for p in block["processes"]
            if p["exited"] and p.get("idle_rss_bytes")]
    return [warn.peak_below_idle(peak, idle, gone)]
