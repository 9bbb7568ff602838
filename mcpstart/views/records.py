"""Long-form records of results files: one ``{server, file, metric, value, unit}`` per server,
file and metric, the data behind ``--format csv`` and ``--format json``."""

from __future__ import annotations

import math

from ..results import dig, documents, is_number
from .table import cell, columns, file_labels, visible_rows

FIELDS = ("server", "file", "metric", "value", "unit")
_STAT_KEYS = {"median", "mean", "stdev", "min", "max", "mad", "p50", "p95", "ci_low", "ci_high"}


def unit_of(path: str) -> str:
    """The unit of the value at a key path, from the key names (docs/results.md#conventions:
    units in key names): "ms", "B" (bytes), "s", or "" (a count, text or flag)."""
    keys = path.split(".")
    for suffix, unit in (("_ms", "ms"), ("_bytes", "B"), ("_s", "s")):
        if keys[-1].endswith(suffix):
            return unit
    if keys[-1] in _STAT_KEYS and any(k.endswith("_ms") for k in keys[:-1]):
        return "ms"
    return ""


def _scalar(value) -> bool:
    return value is None or isinstance(value, (str, bool, int, float))


def _json_safe(value):
    return None if isinstance(value, float) and not math.isfinite(value) else value


def records(results_list, labels=None, metrics=None) -> list[dict]:
    """Long-form records ``{server, file, metric, value, unit}``: for each server of each
    file (``file`` is its label, as in the table's headers) and each table row with a value
    somewhere (or each row of ``metrics``), one record per key path the row reads. ``value``
    is the raw value in the unit of its key (``ms``, ``B``, ``s``; null when absent); a row
    whose value is a list or object (e.g. supported revisions) gives its table cell's text.
    Without ``metrics``, then each file's startup budget (``startup_records``).

    Raises:
        UnknownMetric, ValueError: as ``table.table``.
    """
    docs = documents(results_list)
    rows = visible_rows(docs, metrics)
    out = []
    for _header, _doc, label, server in columns(docs, labels):
        for row in rows:
            parts = [p for p in row.also if p.startswith(row.path + ".")]
            for path in parts or row.paths:  # an object's parts, one by one
                value = dig(server, path)
                if not _scalar(value):
                    if path != row.path:
                        continue
                    value = cell(server, row)
                out.append({"server": server.get("name"), "file": label, "metric": path,
                            "value": _json_safe(value), "unit": unit_of(path)})
    if not metrics:
        for doc, label in zip(docs, file_labels(docs, labels)):
            out += startup_records(doc.get("startup"), label)
    return out


_BUDGET = ("sequential_sum_ms", "concurrent_ms.median", "concurrent_ms.p95", "idle_rss_bytes",
           "idle_pss_bytes")


def startup_records(startup, label: str) -> list[dict]:
    """The startup budget of one file (docs/results.md#startup) as records: the whole set's
    figures with ``server`` null (``startup.sequential_sum_ms``, ``startup.concurrent_ms.median``
    ...), then per server and client limit ``startup.fits.<limit>s`` (``startup.fits.30s``:
    true, false, or null
    when it never got ready; false with ``startup.not_started`` naming why a server did not
    start)."""
    if not isinstance(startup, dict):
        return []

    def record(server, metric, value):
        return {"server": server, "file": label, "metric": f"startup.{metric}",
                "value": _json_safe(value) if _scalar(value) else str(value),
                "unit": unit_of(f"startup.{metric}")}

    out = [record(None, path, dig(startup, path)) for path in _BUDGET
           if dig(startup, path) is not None]
    for limit in startup.get("limits") if isinstance(startup.get("limits"), list) else []:
        fits = limit.get("fits") if isinstance(limit, dict) else None
        seconds = limit.get("limit_s") if isinstance(limit, dict) else None
        for name, ok in fits.items() if isinstance(fits, dict) and is_number(seconds) else ():
            out.append(record(name, f"fits.{seconds:g}s", ok))
    not_started = startup.get("not_started")
    for name, cause in not_started.items() if isinstance(not_started, dict) else ():
        out.append(record(name, "not_started", cause))
    return out
