"""Which process layer measures (docs/platforms.md): decided here, once, for the whole program.

- "linux": pidfds (Linux >= 5.3) for every exit, the child subreaper, /proc for RSS, the
  exact high-water mark (VmHWM, clear_refs), PSS and the mappings (smaps), the start's CPU
  and waits (/proc/PID/stat, schedstat), the cold page cache per file (posix_fadvise) and
  CPU pinning of an HTTP server under load (sched_setaffinity).
- "portable": what psutil and POSIX give on any Unix (macOS, the BSDs; Linux too, chosen
  with ``--process-layer portable``): each exit seen by a waiter thread per process
  (transports/exits.py), the tree by session, process group and descendants (psutil), RSS
  and USS from psutil, the peak by sampling; each figure it cannot give is named in
  ``NOT_MEASURED`` and recorded in every row's ``not_measured``.

A system without ``os.posix_spawn`` or ``select.poll`` (Windows) has neither: ``measure``
refuses there before any build (``refusal``); reading results needs none of it.

A leaf: only the standard library, so that ``--help``, ``report``, ``plot``, ``compare`` and
``doctor`` import nothing a platform lacks.
"""

from __future__ import annotations

import os
import select
import sys
from collections.abc import Iterator
from contextlib import contextmanager

LAYERS = ("linux", "portable")

PORTABLE = "the portable process layer"
NOT_MEASURED = {
    "memory.idle_pss_bytes": f"PSS needs /proc/PID/smaps_rollup (Linux); not read by {PORTABLE}",
    "memory.idle_split": f"the split by mapping needs /proc/PID/smaps (Linux); not read by "
                         f"{PORTABLE}",
    "memory.peak_split": f"the split by mapping needs /proc/PID/smaps (Linux); not read by "
                         f"{PORTABLE}",
    "memory.peak_rss_bytes_hwm_sum": f"the exact high-water mark needs VmHWM and clear_refs "
                                     f"(Linux); {PORTABLE} samples the peak",
    "start_usage": f"the start's CPU and waits need /proc/PID/stat and schedstat (Linux); not "
                   f"read by {PORTABLE}",
    "http.load.pinned_cpus": f"pinning the server to a CPU needs sched_setaffinity (Linux); "
                             f"{PORTABLE} leaves it unpinned",
}
"""Key path (a row's ``not_measured``, docs/results.md) -> why the portable layer leaves it
out. The cold page cache per file (posix_fadvise, /proc/PID/maps) is refused up front
instead (``figure_refusal``)."""

_current = {"layer": None}


def refusal() -> str | None:
    """Why ``measure`` cannot run on this system, in one sentence (the doctor's "platform"
    row says the same), or None. It needs ``os.posix_spawn`` (a server's start, one call)
    and ``select.poll`` on pipes (every wait): Windows has neither."""
    lacking = [name for name, there in (("os.posix_spawn", hasattr(os, "posix_spawn")),
                                        ("select.poll", hasattr(select, "poll"))) if not there]
    if not lacking:
        return None
    return (f"mcpstart cannot start servers on {sys.platform}: it has no "
            f"{' or '.join(lacking)}; report, plot, compare and doctor work here on results "
            "measured elsewhere")


def default_layer() -> str:
    """"linux" where ``os.pidfd_open`` exists (Linux >= 5.3 with Python >= 3.9), else
    "portable"."""
    return "linux" if hasattr(os, "pidfd_open") else "portable"


def figure_refusal(layer: str, cache_state: str) -> str | None:
    """Why a figure asked for cannot be measured by ``layer``, or None: the cold page cache
    needs posix_fadvise and /proc/PID/maps (measure/page_cache.py)."""
    if layer == "portable" and cache_state == "cold":
        return (f"--cache-state cold needs posix_fadvise and /proc/PID/maps (Linux); not "
                f"available through {PORTABLE}")
    return None


def current() -> str:
    """The layer in use: the one ``using`` set, else ``default_layer()``."""
    return _current["layer"] or default_layer()


@contextmanager
def using(layer: str) -> Iterator[None]:
    """Within the block every server is followed through ``layer`` (one of LAYERS); the
    layer before comes back afterwards.

    Raises:
        ValueError: an unknown layer, or "linux" where there are no pidfds.
    """
    if layer not in LAYERS:
        raise ValueError(f"unknown process layer {layer!r} (one of {', '.join(LAYERS)})")
    if layer == "linux" and not hasattr(os, "pidfd_open"):
        raise ValueError("the linux process layer needs os.pidfd_open (Linux >= 5.3); "
                         "use --process-layer portable")
    before, _current["layer"] = _current["layer"], layer
    try:
        yield
    finally:
        _current["layer"] = before
