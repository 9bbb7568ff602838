"""Several sessions at once (``--sessions N``): N copies of every server started all at once,
as N editor windows or agent sessions each start their own, and in the same rounds a start
with one copy, for the marginal cost of one more session.

Each start is the editor-style all-at-once start (startup.together, on spawn.started): every
copy of every server spawned in one go, each followed to ready on its own (startup.ready_ms).
Once all are ready, memory is read as for one server (memory.py): the settle rule over every
process of every copy together, then RSS, PSS and USS of each process from smaps_rollup,
summed per copy, per server and over all. PSS splits a page shared by several processes among
them, so the sum over all copies counts each shared page once; USS counts private pages only.
Warm-up rounds are timed but their memory is not read.

Marginal cost of one more session: (total with N copies - total with 1) / (N - 1), from the
medians over the counted rounds.
"""

from __future__ import annotations

import random

from .. import Step
from ..stats import summarize
from ..transports.session import Exited, SessionError, serve_all
from . import memory
from .settings import Settings
from .startup import ready_ms, together

READY_RULE = ("tools/list answered to its last page (initialize where it was not), for every "
              "copy of every server")
KINDS = ("pss", "uss", "rss")


class _Together:
    """The process sets of servers started together, read as one (what memory.settle needs)."""

    def __init__(self, sets):
        self.sets = sets

    def scan(self):
        return [proc for found in self.sets for proc in found.scan()]

    def alive(self):
        return [proc for found in self.sets for proc in found.alive()]


def copies_memory(sessions: dict, settings: Settings) -> tuple[dict, bool, float]:
    """Memory of sessions started together (``{session: key}``, all running), read once it
    has settled by ``settings.settle`` over all their processes, the pipes served meanwhile.

    Returns:
        ``({key: memory.idle_rows}, settled, waited_s)``.

    Raises:
        Exited: a server exited while memory settled.
    """
    listed = list(sessions)
    settled, waited = memory.settle(_Together([s.processes for s in listed]),
                                    lambda seconds: serve_all(listed, seconds), settings.settle)
    return ({key: memory.idle_rows(session.processes) for session, key in sessions.items()},
            settled, waited)


def label(name: str, copy: int) -> str:
    """A copy's name in the timeline and the results: "memory #2"."""
    return f"{name} #{copy}"


def one_round(servers, copies: int, settings: Settings, read_memory: bool) -> dict:
    """One start of ``copies`` copies of every server of ``servers`` ([(name, Command)]), copy
    by copy in the order an editor opens its windows.

    Returns:
        ``{copies, times: {label: {first_byte, initialize, tools_list}}, memory: {label:
        {pss_bytes, uss_bytes, rss_bytes, processes}} | None, settled, settle_s, error}``.

    Raises:
        SessionError: a server cannot be started.
    """
    keyed = [((name, k), command) for k in range(1, copies + 1) for name, command in servers]
    out = {"copies": copies, "memory": None, "settled": None, "settle_s": None, "error": None}
    with together(keyed, settings) as (sessions, times):
        out["times"] = {label(*key): phases for key, phases in times.items()}
        if read_memory:
            try:
                rows, out["settled"], out["settle_s"] = copies_memory(sessions, settings)
            except Exited as err:
                out["error"] = f"memory not read: {err}"
            else:
                out["memory"] = {label(*key): sums(found) for key, found in rows.items()}
    return out


def sums(rows: list[dict]) -> dict:
    """``{pss_bytes, uss_bytes, rss_bytes, processes}`` summed over memory.idle_rows' rows (a
    sum is None when one process could not be read)."""
    out = {}
    for kind in KINDS:
        values = [row[f"idle_{kind}_bytes"] for row in rows]
        out[f"{kind}_bytes"] = sum(values) if values and None not in values else None
    return {**out, "processes": len(rows)}


def measure_sessions(servers, n: int, settings: Settings, progress=lambda _: None) -> dict:
    """The ``startup.sessions`` block: ``settings.warmup + settings.runs`` rounds, each a
    start with ``n`` copies and one with a single copy, in an order shuffled per round
    (``random.Random(settings.seed)``).

    Returns:
        ``{n, rounds: [...], ready_rule, settle_rule, ready_ms: <stats>, single_ready_ms:
        <stats>, pss_bytes, uss_bytes, rss_bytes, single_pss_bytes, single_uss_bytes,
        single_rss_bytes, marginal_pss_bytes, marginal_uss_bytes, marginal_rss_bytes,
        per_server: {name: {ready_ms, single_ready_ms, pss_bytes, ..., marginal_*,
        copies: [{copy, ready_ms, pss_bytes, uss_bytes, rss_bytes, processes}]}},
        runs, warmup_runs}``: ready times in ms from the first spawn to the last copy ready;
        memory the median over the counted rounds of each sum; ``runs`` the counted n-copy
        starts' phases per copy (the timeline).

    Raises:
        SessionError: a server cannot be started.
    """
    def describe(index: int, warmup: bool, copies: int) -> Step:
        return Step(f"{n} sessions at once: {'warm-up' if warmup else 'round'} "
                    f"{index + 1 if warmup else index - settings.warmup + 1}/"
                    f"{settings.warmup if warmup else settings.runs}, {copies} "
                    f"cop{'ies' if copies > 1 else 'y'}", "startup", None, index,
                    settings.warmup + settings.runs)
    rounds = alternating(n, settings, lambda copies, read: one_round(servers, copies, settings,
                                                                      read),
                         describe, progress)
    return summary(rounds, [name for name, _ in servers], n, settings)


def alternating(n: int, settings: Settings, start, describe, progress) -> list[dict]:
    """``settings.warmup + settings.runs`` rounds, each a start with ``n`` copies (or
    sessions) and one with a single one, in an order shuffled per round
    (``random.Random(settings.seed)``): ``start(copies, read_memory)`` per start (memory is
    not read in warm-ups), announced by ``progress(describe(index, warmup, copies))``.

    Returns:
        ``[{round, warmup, **start(...)}]`` in the order they ran.
    """
    rng = random.Random(settings.seed)
    rounds = []
    for index in range(settings.warmup + settings.runs):
        warmup = index < settings.warmup
        order = [n, 1]
        rng.shuffle(order)
        for copies in order:
            progress(describe(index, warmup, copies))
            rounds.append({"round": index, "warmup": warmup, **start(copies, not warmup)})
    return rounds


def _ready(times: dict, labels: list[str]) -> float | None:
    values = [ready_ms(times[k]["tools_list"], times[k]["initialize"]) for k in labels]
    return None if None in values or not values else max(values)


def median(values: list) -> int | None:
    """The median of the values that are not None, rounded; None when there are none."""
    values = [v for v in values if v is not None]
    return None if not values else round(summarize(values)["median"])


def marginal(many: int | None, one: int | None, n: int) -> int | None:
    """The cost of one more session: (total with ``n`` - total with 1) / (n - 1)."""
    return None if many is None or one is None else round((many - one) / (n - 1))


def summary(rounds: list[dict], names: list[str], n: int, settings: Settings) -> dict:
    """The block ``measure_sessions`` returns, from its ``rounds`` (each as one_round returns
    it, with ``round`` and ``warmup``)."""
    def series(copies: int, labels: list[str]) -> dict:
        picked = [r for r in rounds if r["copies"] == copies]
        return summarize([v for r in picked if not r["warmup"]
                          and (v := _ready(r["times"], labels)) is not None],
                         [v for r in picked if r["warmup"]
                          and (v := _ready(r["times"], labels)) is not None])

    def memory_of(copies: int, labels: list[str], kind: str) -> int | None:
        picked = [r["memory"] for r in rounds if r["copies"] == copies and r["memory"]]
        sums = [sum(m[k][f"{kind}_bytes"] for k in labels)
                if all(m[k][f"{kind}_bytes"] is not None for k in labels) else None
                for m in picked]
        return None if None in sums else median(sums)

    every = [label(name, k) for k in range(1, n + 1) for name in names]
    single = [label(name, 1) for name in names]
    block = {"n": n, "ready_rule": READY_RULE, "settle_rule": settings.settle.describe(),
             "ready_ms": series(n, every), "single_ready_ms": series(1, single)}
    for kind in KINDS:
        many, one = memory_of(n, every, kind), memory_of(1, single, kind)
        block.update({f"{kind}_bytes": many, f"single_{kind}_bytes": one,
                      f"marginal_{kind}_bytes": marginal(many, one, n)})
    block["per_server"] = {}
    for name in names:
        labels = [label(name, k) for k in range(1, n + 1)]
        entry = {"ready_ms": series(n, labels), "single_ready_ms": series(1, [label(name, 1)])}
        for kind in KINDS:
            many, one = memory_of(n, labels, kind), memory_of(1, [label(name, 1)], kind)
            entry.update({f"{kind}_bytes": many, f"single_{kind}_bytes": one,
                          f"marginal_{kind}_bytes": marginal(many, one, n)})
        entry["copies"] = [
            {"copy": k, "ready_ms": series(n, [label(name, k)]),
             **{f"{kind}_bytes": memory_of(n, [label(name, k)], kind) for kind in KINDS},
             "processes": median([r["memory"][label(name, k)]["processes"] for r in rounds
                                   if r["copies"] == n and r["memory"]])}
            for k in range(1, n + 1)]
        block["per_server"][name] = entry
    block["runs"] = [r["times"] for r in rounds if r["copies"] == n and not r["warmup"]]
    block["warmup_runs"] = [r["times"] for r in rounds if r["copies"] == n and r["warmup"]]
    block["rounds"] = [{k: v for k, v in r.items() if k != "times"} for r in rounds]
    return block


def guarded(measure, subject, n: int, settings: Settings, progress=lambda _: None) -> dict:
    """``measure(subject, n, settings, progress)`` (measure_sessions, shared_process.measure_shared),
    or ``{"n", "error": cause}`` when a server cannot be started or answered no usable way."""
    try:
        return measure(subject, n, settings, progress)
    except SessionError as err:
        return {"n": n, "error": str(err)}
