"""The runtime's own heap figures, where the runtime gives them cheaply: read in the start-up
attribution's extra starts (attribution.py), once the server has answered its initialize,
and never in a counted start or the counted warm session (what reads them, a preload, changes
the memory it reads). The kernel's split (``memory.idle_split``, mappings.py) cannot tell a
language heap from the other anonymous memory; these are the runtime's word on it.

- Node.js: V8's figures (``process.memoryUsage()``, ``v8.getHeapStatistics()``; Node.js docs,
  "process.memoryUsage()"), written by node_trace.mjs on SIGUSR2 (node_packages.py).
- Other runtimes: not read (WHY_NOT).
"""

from __future__ import annotations

import statistics

BLOCK = "runtime_heap"
"""The results block (docs/results.md#runtime_heap)."""
WHY_NOT = ("read for Node.js servers only (V8's own figures, in the start-up attribution's "
           "traced starts)")
NODE = ("heap_used_bytes", "heap_committed_bytes", "heap_physical_bytes", "external_bytes",
        "array_buffers_bytes", "rss_bytes")
"""V8's figures in the order node_trace.mjs writes them (H line): ``heapUsed``, ``heapTotal``
(committed), ``total_physical_size`` (committed and touched), ``external`` (C++ objects tied
to JavaScript ones, Buffers' memory among them), ``arrayBuffers`` (ArrayBuffers and Buffers,
part of external) and ``rss``; bytes."""


def block(runtime: str, readings: list[dict]) -> dict:
    """The ``runtime_heap`` block: ``{runtime, runs, KEY: median over readings}`` for each
    key of the readings (bytes, rounded down); ``runs`` how many readings.

    Raises:
        ValueError: no readings.
    """
    if not readings:
        raise ValueError("no heap reading")
    return {"runtime": runtime, "runs": len(readings),
            **{key: int(statistics.median(r[key] for r in readings)) for key in readings[0]}}
