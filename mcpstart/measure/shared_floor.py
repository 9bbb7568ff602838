"""The shared floor rule (docs/workloads.md#the-shared-floor-rule): tools that do different
work yet answer in one common time, far above ``initialize`` on the same server, pay a cost
common to every call rather than their own work; near 40 ms that cost has the signature of
Nagle's algorithm meeting delayed ACKs. The case it was written for: the Rust server of a
fork of the Streamable HTTP benchmark answered every tool (a recursive Fibonacci, a sleep,
an HTTP GET) in about 42 ms at p95 while ``initialize`` stayed fast.

Read from each series that times ``initialize`` beside the tools on one server: the warm
per-call sessions (``workload.initialize_ms`` and each tool's ``warm_ms``, per_tool.py) and
each load block's ``by_request`` (``initialize`` and ``tools/call NAME``), by their p50.
"""

from __future__ import annotations

from .. import warnings as warn
from ..results import ServerResult

FLOOR_RATIO = 3.0
FLOOR_GAP_MS = 5.0
"""The floor is "far above initialize": the fastest tool's p50 at least FLOOR_RATIO times
initialize's and at least FLOOR_GAP_MS above it (the fork's case: about 42 ms against a few
ms; a ratio alone would flag a 0.3 ms call beside a 0.1 ms initialize)."""
SPREAD = 0.25
"""Tools "at the floor": p50 within this fraction above the fastest tool's. At least two tools
must be there for the floor to be shared (one tool's time is its own)."""
NAGLE_MS = (35.0, 50.0)
"""A floor in this range is named as the likely signature of Nagle's algorithm (RFC 896)
holding a small write until the peer's ACK, which a delayed ACK (RFC 1122 4.2.3.2) holds
back: Linux's shortest delayed-ACK timeout is TCP_DELACK_MIN, HZ/25 = 40 ms
(include/net/tcp.h); the fork measured about 42 ms."""


def floor(initialize_ms: float | None, tools: dict[str, float | None]) -> dict | None:
    """The rule on one series: ``initialize_ms`` (p50) and each tool's p50 by name. Returns
    ``{floor_ms, initialize_ms, tools, nagle}`` (the fastest tool's p50, the tools at the
    floor, sorted, and whether the floor is in NAGLE_MS) when it holds, else None (also
    without initialize or with fewer than two timed tools)."""
    timed = {name: ms for name, ms in tools.items() if ms is not None}
    if initialize_ms is None or len(timed) < 2:
        return None
    low = min(timed.values())
    if low < FLOOR_RATIO * initialize_ms or low < initialize_ms + FLOOR_GAP_MS:
        return None
    at_floor = sorted(name for name, ms in timed.items() if ms <= low * (1 + SPREAD))
    if len(at_floor) < 2:
        return None
    return {"floor_ms": low, "initialize_ms": initialize_ms, "tools": at_floor,
            "nagle": NAGLE_MS[0] <= low <= NAGLE_MS[1]}


def warnings(row: ServerResult) -> list[dict]:
    """The rule's warnings for ``row``: one per series where it holds (module doc)."""
    found = []
    work = row.workload or {}
    tools = {name: (t.get("warm_ms") or {}).get("p50")
             for name, t in (work.get("tools") or {}).items()}
    if (hit := floor((work.get("initialize_ms") or {}).get("p50"), tools)) is not None:
        found.append(warn.shared_floor("workload.tools.*.warm_ms", hit))
    for block in (row.http or {}).get("load") or []:
        by = block.get("by_request") or {}
        calls = {name.removeprefix("tools/call "): v.get("p50") for name, v in by.items()
                 if name.startswith("tools/call ")}
        if (hit := floor((by.get("initialize") or {}).get("p50"), calls)) is not None:
            found.append(warn.shared_floor(f"http.load.{block['scenario']}.by_request", hit))
    return found
