"""The warm-up rule of the per-tool warm series (per_tool.py; docs/workloads.md#warm-up):
uncounted calls of a tool until their times stop falling. At every doubling of the calls
made from FIRST on (n = 2 FIRST, 4 FIRST, ...) the median of the later half, calls
[n/2, n), is compared with that of the quarter before it, [n/4, n/2); the times have stopped
falling when it is not more than FALL below it at SETTLED doublings in a row. A bound ends
the warm-up unsettled (``settled`` false, a warning on the row: warnings.unsettled): MAX_CALLS
calls, or MAX_MS of the calls' own times (as ``once`` gives them); so does a call that
failed (an HTTP error status), at once.

A server that is warm at once (C, Go, Rust) stops at the minimum, 2^SETTLED * FIRST calls; a
JIT runtime (HotSpot compiles a method in tiers after hundreds to thousands of invocations,
V8 likewise) goes on while its times fall. Windows that double, not windows of a fixed size,
because JIT steps come late and a fixed window's median is noisy: measured here with a plain
client (benchmarks/raw_mcp.py) over stdio on the Java workload server, the medians of
20-call windows of ``calculate_fibonacci`` fall from ~4 ms to ~0.4 ms over the first ~400
calls, rising and falling by 2x window to window, then step down again to ~0.22 ms near call
1200 (C2); a 20-call window "settles" at ~1.5 ms after 200 calls. MAX_CALLS leaves room
for HotSpot's default tier-4 threshold (5000 invocations) twice over; MAX_MS bounds slow
tools (``simulate_database_query`` sleeps). The rule replayed with that plain client on a
loaded machine (load average above the core count): the C server settled at the minimum on
three tools; the Java server's ``calculate_fibonacci`` settled after 320 calls, still ~4x
its warm time (its compilation was late on a busy machine), and ``process_json_data`` ran to
MAX_CALLS unsettled; a second replay ran both to MAX_CALLS unsettled, and after it they read
~0.14 ms and ~0.10 ms. The rule cannot see a compilation that has not yet changed the times.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable

FIRST = 20
"""The calls of the first half compared (a median of 20 calls, robust to a few outliers)."""
FALL = 0.05
"""A median more than this share below the one before it is still falling."""
SETTLED = 2
"""Doublings in a row at which the median must not fall."""
MAX_CALLS = 10_240
"""The bound on uncounted calls per tool."""
MAX_MS = 10_000.0
"""The bound on the uncounted calls' summed answer times per tool, in ms."""


def warm_up(once: Callable[[], float | None]) -> dict:
    """Calls ``once`` (one uncounted call: its answer time in ms, or None for a call that
    failed without ending the series) until the rule (module doc) says the times stopped
    falling, a bound ends it or a call failed. Returns ``{calls, settled}``: the uncounted
    calls made and whether the times settled. Errors ``once`` raises pass through."""
    times, calls, spent, steady = [], 0, 0.0, 0
    while calls < MAX_CALLS and spent < MAX_MS:
        ms = once()
        calls += 1
        if ms is None:
            break
        times.append(ms)
        spent += ms
        n, doublings = len(times), len(times) // FIRST
        if n % FIRST or doublings < 2 or doublings & (doublings - 1):
            continue  # not 2 FIRST, 4 FIRST, ...
        later, before = statistics.median(times[n // 2:]), statistics.median(times[n // 4:n // 2])
        steady = steady + 1 if later >= before * (1 - FALL) else 0
        if steady == SETTLED:
            return {"calls": calls, "settled": True}
    return {"calls": calls, "settled": False}
