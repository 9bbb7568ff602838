"""The sessions of a warm series (warm.py's round trips, per_tool.py's per-tool warm calls):
the counted calls are spread over ``settings.warm_sessions`` fresh sessions of the server
(each a new process of a spawned server; over a URL, a new session), each tool of a
workload warmed up in each by the warm-up rule (warmup.py; the round trips have none), and
the figure is taken over all of them, with each session's median kept.

Why more than one: a warm round trip can sit in a mode that holds for a whole session and
not the next. Measured on a 2-vCPU VM with the C reference server (the floor: no runtime, no
JIT), by mcpstart and by a plain client alike (benchmarks/warm_check.py's sessions, 50 calls
each): the sessions' medians were either ~0.03 ms or ~0.35 ms, the slow one in 3 or 4 of 10
sessions; with client and server on one CPU (os.sched_setaffinity) every session read
0.01-0.05 ms. One session's figure is then a draw of the machine's mode, not the server's
time; several sessions show the spread, and ``disagreement`` says when it is there.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import warnings as warn
from ..stats import NOISE, latency, median_ci
from . import warmup
from .client import SeriesErrors


def shares(count: int, sessions: int) -> list[int]:
    """``count`` counted calls spread over ``sessions`` sessions as evenly as may be (the
    first ones one more), never a session without a call: ``shares(100, 3)`` is [34, 33,
    33], ``shares(2, 3)`` is [1, 1]; [] for no calls."""
    k = max(1, min(sessions, count))
    return [count // k + (i < count % k) for i in range(k)] if count > 0 else []


@dataclass
class Series:
    """One warm series over its sessions: each session's ``{samples, warmup}`` (ms; the
    warm-up's ``{calls, settled}``, None without one) in order, and the calls an HTTP error
    status failed in any of them."""

    sessions: list[dict] = field(default_factory=list)
    errors: SeriesErrors = field(default_factory=SeriesErrors)

    def add(self, samples: list[float], warmed: dict | None) -> None:
        self.sessions.append({"samples": samples, "warmup": warmed})

    @property
    def samples(self) -> list[float]:
        """Every counted call's ms, in session order."""
        return [ms for s in self.sessions for ms in s["samples"]]

    def record(self) -> list[dict]:
        """The figure's ``sessions``: per session ``{n, p50, warmup}``."""
        return [{"n": len(s["samples"]), "p50": latency(s["samples"])["p50"],
                 "warmup": s["warmup"]} for s in self.sessions]

    def warmed(self) -> dict:
        """The uncounted calls of all sessions and whether every session's settled."""
        return {"calls": sum(s["warmup"]["calls"] for s in self.sessions),
                "settled": all(s["warmup"]["settled"] for s in self.sessions)}

    def warnings(self, metric: str, count: int) -> list[dict]:
        """The first session whose warm-up ended unsettled, the calls an HTTP error status
        failed (of ``count``), and sessions whose medians disagree (``disagreement``)."""
        found = []
        unsettled = next((s["warmup"] for s in self.sessions
                          if s["warmup"] and not s["warmup"]["settled"]), None)
        if unsettled:
            found.append(warn.warmup_unsettled(metric, unsettled, warmup.MAX_CALLS,
                                               warmup.MAX_MS))
        if self.errors.total:
            found.append(self.errors.warning(metric, count))
        if apart := disagreement(self.sessions):
            fast, slow = (latency(s["samples"])["p50"] for s in apart)
            found.append(warn.warm_sessions_disagree(metric, fast, slow, len(self.sessions)))
        return found


def disagreement(sessions: list[dict]) -> tuple[dict, dict] | None:
    """Two sessions (``{samples}`` each, ms) whose medians differ beyond the sessions' own
    noise: their medians' 95% intervals (stats.median_ci, distribution-free) do not overlap
    AND the larger median is more than stats.NOISE above the smaller (a shift the same binary
    shows between batches on a quiet machine is no finding). Returns the fastest and the
    slowest sessions (``{samples}`` as given) when theirs are apart, else None (and None
    when a session has fewer than 2 calls: no interval)."""
    ranked = [(median_ci(s["samples"]), latency(s["samples"])["p50"], s) for s in sessions]
    if len(ranked) < 2 or any(ci is None for ci, _, _ in ranked):
        return None
    ranked.sort(key=lambda r: r[1])
    (low_ci, low, fast), (high_ci, high, slow) = ranked[0], ranked[-1]
    if low_ci[1] < high_ci[0] and high > low * (1 + NOISE):
        return fast, slow
    return None
