"""Where a cold start's time goes, for every server: the resource usage of the server's whole
tree (transports/tree.py's set) from the spawn to the cold start's last answer (initialize,
then tools/list and the first call where they run: read after them, so that no timed phase
follows the read), so a start that computes is told apart from one that waits (I/O, a network
lookup, a sleep).

Read once per cold start, right after the answer's timestamp is taken (never inside a timed
wait): each live member from /proc (proc(5): ``stat`` for its CPU time and page faults plus
those of the children it reaped, ``task/*/status`` for the context switches of its threads,
``io`` for the bytes read from storage, which the kernel adds up for reaped children too);
each member mcpstart reaped before the answer (it is a child subreaper) from ``os.wait4``
(tree.rusage_of), which covers that process and the descendants it reaped. Not counted: the
context switches of processes reaped by another member and of threads that ended (/proc
keeps no such sums), and a process that was born and gone before it could be seen and was
reaped by no member.
"""

from __future__ import annotations

import os
import statistics

from .. import platforms
from ..stats import summarize
from ..transports.tree import ProcessSet

FIGURES = ("cpu_ms", "user_ms", "system_ms", "minor_faults", "major_faults", "voluntary_switches",
           "involuntary_switches", "read_bytes")
"""The figures of one start (resource usage terms of getrusage(2)); ``cpu_ms`` is user plus
system at the scheduler's nanosecond resolution where /proc gives it (``task/*/schedstat``,
the live threads' run time), since /proc/pid/stat counts in clock ticks (TICK_MS)."""
TICK_MS = 1000 / os.sysconf("SC_CLK_TCK")
"""One clock tick, the unit of /proc/pid/stat's CPU times (proc(5): ``sysconf(_SC_CLK_TCK)``)."""
CPU = ("cpu_ms", "user_ms", "system_ms")
WINDOW = "spawn to the cold start's last answer (initialize, tools/list, first call), whole tree"


def _stat(pid: int) -> dict:
    """/proc/pid/stat's page faults and CPU ticks, the process's own and its reaped
    children's apart (proc(5): fields 10 to 17, counted after the command name's closing
    parenthesis)."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    minflt, cminflt, majflt, cmajflt, utime, stime, cutime, cstime = map(int, fields[7:15])
    return {"user": utime * TICK_MS, "system": stime * TICK_MS,
            "children_user": cutime * TICK_MS, "children_system": cstime * TICK_MS,
            "minor_faults": minflt + cminflt, "major_faults": majflt + cmajflt}


def _threads(pid: int) -> tuple[float, int, int]:
    """The live threads' run time (ms, ``schedstat``'s first field, ns) and their voluntary
    and involuntary context switches, summed."""
    run_ns = voluntary = involuntary = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                run_ns += int(f.read().split()[0])
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches:"):
                        voluntary += int(line.split()[1])
                    elif line.startswith("nonvoluntary_ctxt_switches:"):
                        involuntary += int(line.split()[1])
        except OSError:  # the thread ended meanwhile
            continue
    return run_ns / 1e6, voluntary, involuntary


def _read_bytes(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/io") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("read_bytes:"))
    except (OSError, StopIteration):  # no I/O accounting in this kernel
        return None


def live_usage(pid: int) -> dict | None:
    """The figures (FIGURES) of a live process from /proc; None once it has gone. Its own
    CPU time is its live threads' run time where that says more than the ticks (which
    also hold the threads that ended), split between user and system as the ticks are
    (the kernel derives both from the run time the same way: cputime_adjust), so user and
    system are None when the process ran for less than one tick of them; its reaped
    children's is in ticks."""
    try:
        run_ms, voluntary, involuntary = _threads(pid)
        stat = _stat(pid)
    except (OSError, ValueError, IndexError):
        return None
    user, system = stat["user"], stat["system"]
    own = max(run_ms, user + system)
    if user + system > 0:
        user, system = (own * user / (user + system) + stat["children_user"],
                        own * system / (user + system) + stat["children_system"])
    elif own > 0:  # under one tick: how it splits is unknown
        user = system = None
    return {"cpu_ms": own + stat["children_user"] + stat["children_system"],
            "user_ms": user, "system_ms": system, "minor_faults": stat["minor_faults"],
            "major_faults": stat["major_faults"], "voluntary_switches": voluntary,
            "involuntary_switches": involuntary, "read_bytes": _read_bytes(pid)}


def at_answer(processes: ProcessSet | None) -> dict | None:
    """The tree's usage so far, called right after the cold start's last answer.

    Returns:
        ``{FIGURES..., processes: [{pid, name, ppid, started_ms, exited, FIGURES...}]}`` (ms,
        counts, bytes): the sums over the processes, each process by its command name
        (``comm``) in the order found, with its parent when found and its start after the
        spawned process's (ms, to one clock tick: proc(5) ``starttime``); a sum is None when
        a process's figure is unknown (read_bytes without I/O accounting), except user and
        system, summed over the processes where they are known (so they may fall short of
        cpu_ms by less than a tick per process). None where the transport spawned nothing
        (an endpoint), and under the portable process layer (platforms.NOT_MEASURED).
    """
    if processes is None or platforms.current() == "portable":
        return None

    def found(record: dict, exited: bool) -> dict:
        origin = processes.origin(record["pid"])
        started = (None if processes.spawned_at is None else
                   (origin["started"] - processes.spawned_at) * 1000)
        return {"pid": record["pid"], "name": record["name"], "ppid": origin["ppid"],
                "started_ms": started, "exited": exited}

    rows = []
    for proc in processes.scan():  # collects the exits first, reaping mcpstart's own children
        figures = live_usage(proc.pid)
        if figures is not None:
            rows.append({**found(processes.info(proc.pid), False), **figures})
    for record in processes.exited.values():
        if record.get("usage") is not None:
            rows.append({**found(record, True), **record["usage"]})
    totals = {key: (None if any(r[key] is None for r in rows) else sum(r[key] for r in rows))
              for key in FIGURES}
    for key in ("user_ms", "system_ms"):  # known where a process ran for a tick at least
        known = [r[key] for r in rows if r[key] is not None]
        totals[key] = sum(known) if known else None
    return {**totals, "processes": rows}


def line_parts(procs: list[dict], handshake: float) -> dict[int, float]:
    """The launcher line's wall parts of one start (ms by pid, summing to ``handshake``).

    The line is the server, the youngest process alive at the answer (of two started in the
    same clock tick, the one deeper in the tree), and its ancestors among ``procs`` (at_answer's
    rows), oldest first. Each part runs from its process's start to the next one's, the last
    to the answer, the first from the spawn: "npm exec 300 ms, sh 10 ms, node 450 ms". A
    process's start is read to one clock tick (proc(5) ``starttime``), so a part is within a
    tick of its wall span. Empty when no process was alive at the answer."""
    by_pid = {p["pid"]: p for p in procs}

    def ancestors(proc: dict) -> list[dict]:
        line = [proc]
        while line[-1]["ppid"] in by_pid and by_pid[line[-1]["ppid"]] not in line:
            line.append(by_pid[line[-1]["ppid"]])
        return line

    live = [p for p in procs if not p["exited"] and p["started_ms"] is not None
            and p["started_ms"] <= handshake]
    if not live:
        return {}
    line = ancestors(max(live, key=lambda p: (p["started_ms"], len(ancestors(p)))))[::-1]
    bounds = [0.0] + [p["started_ms"] for p in line[1:]] + [handshake]
    return {p["pid"]: bounds[i + 1] - bounds[i] for i, p in enumerate(line)}


def _compact(values: list[float], warmups: list[float]) -> dict:
    block = summarize(values, warmups)
    return {key: block[key] for key in ("n", "median", "mean", "min", "max", "samples",
                                        "warmup_samples")}


def last_answer(run: dict) -> float:
    """The time of a cold start's last answer from its spawn (ms): the end of the window its
    usage was read over (WINDOW): the first call's, else tools/list's, else initialize's."""
    return next(run[k] for k in ("first_call", "tools_list", "handshake")
                if run.get(k) is not None)


def block(runs: list[dict]) -> dict | None:
    """The row's ``start_usage`` (docs/results.md#start_usage) from the cold starts' samples
    (each with ``usage`` from ``at_answer``, ``handshake`` ms and ``warmup``).

    Returns:
        ``{window, FIGURES: {n, median, mean, min, max, samples, warmup_samples},
        cpu_share, waiting_share, processes: [{name, runs, cpu_ms, user_ms, system_ms,
        wall_ms}]}``:
        each figure over the counted runs (warm-ups stored apart); ``cpu_share`` the median
        over counted runs of cpu_ms / the same window's time (``last_answer``) and
        ``waiting_share`` 1 minus it (0
        when threads computed in parallel for longer than the wall time); per command name,
        the medians of its CPU times over the runs it ran in (user and system over the runs
        where they are known: None for a start shorter than one clock tick) and of its wall
        part of the launcher line (``line_parts``, over the runs it was in the line; None
        when it never was, such as a helper that exited). None when no run was read.
    """
    read = [r for r in runs if r.get("usage") is not None and r.get("handshake") is not None]
    if not read:
        return None
    counted = [r for r in read if not r["warmup"]]
    out = {"window": WINDOW}
    for key in FIGURES:
        out[key] = _compact([r["usage"][key] for r in counted if r["usage"][key] is not None],
                            [r["usage"][key] for r in read if r["warmup"]
                             and r["usage"][key] is not None])
    shares = [r["usage"]["cpu_ms"] / last_answer(r) for r in counted if last_answer(r) > 0]
    cpu = statistics.median(shares) if shares else None
    out["cpu_share"] = cpu
    out["waiting_share"] = None if cpu is None else max(0.0, 1 - cpu)
    names: dict[str, list[dict]] = {}
    for run in counted:
        per_run: dict[str, dict] = {}
        parts = line_parts(run["usage"]["processes"], run["handshake"])
        for proc in run["usage"]["processes"]:
            sums = per_run.setdefault(proc["name"],
                                      {**dict.fromkeys(CPU, 0.0), "wall_ms": None})
            for key in CPU:
                sums[key] = None if None in (sums[key], proc[key]) else sums[key] + proc[key]
            if proc["pid"] in parts:
                sums["wall_ms"] = (sums["wall_ms"] or 0.0) + parts[proc["pid"]]
        for name, sums in per_run.items():
            names.setdefault(name, []).append(sums)
    out["processes"] = [{"name": name, "runs": len(seen),
                         **{key: _median([s[key] for s in seen]) for key in (*CPU, "wall_ms")}}
                        for name, seen in names.items()]
    return out


def _median(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None
