"""The cold-start series as hyperfine's CSV (``--export-csv``)."""

from __future__ import annotations

import csv
import io

from .hyperfine import series


def render(results_list, labels=None, metrics=None) -> str:
    """The cold-start series as hyperfine's CSV (seconds): ``command,mean,stddev,median,user,
    system,min,max``; stddev 0 for a single run (as hyperfine writes it), user and system
    empty (not measured)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["command", "mean", "stddev", "median", "user", "system", "min", "max"])
    for r in series(results_list, labels):
        writer.writerow([r["command"], r["mean"], r["stddev"] or 0, r["median"], "", "",
                         r["min"], r["max"]])
    return buffer.getvalue()
