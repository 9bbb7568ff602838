"""Exports of results files: long-form records (one per server, file and metric) as CSV or
JSON, and hyperfine-compatible exports of the cold-start series (handshake_ms) so scripts
written for hyperfine's ``--export-json/--export-csv/--export-markdown`` read them.

hyperfine's shapes (github.com/sharkdp/hyperfine, src/export/ and
src/benchmark/benchmark_result.rs, 1.x): JSON ``{"results": [{command, mean, stddev,
median, user, system, min, max, times, ...}]}`` in seconds, stddev null for one run; CSV
columns ``command,mean,stddev,median,user,system,min,max``; Markdown
``| Command | Mean [ms] | Min [ms] | Max [ms] | Relative |``. mcpstart does not measure the
server's user and system CPU time: those are null (JSON) or empty (CSV); there are no
``exit_codes`` (a server is shut down, not run to completion).
"""

from __future__ import annotations

import csv
import io
import json
import math

from .table import cell, columns, dig, documents, number, visible_rows

FIELDS = ("server", "file", "metric", "value", "unit")
_STAT_KEYS = {"median", "mean", "stdev", "min", "max", "mad", "p50", "p95", "ci_low", "ci_high"}


def unit_of(path: str) -> str:
    """The unit of the value at a key path, from the key names (design.md: units in key
    names): "ms", "B" (bytes), "s", or "" (a count, text or flag)."""
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
    return out


def records_json(results_list, labels=None, metrics=None) -> str:
    """``records`` as a JSON array."""
    return json.dumps(records(results_list, labels, metrics), indent=2, ensure_ascii=False) + "\n"


def records_csv(results_list, labels=None, metrics=None) -> str:
    """``records`` as CSV with the header ``server,file,metric,value,unit``; an absent value
    is an empty field, a flag ``true``/``false``."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, FIELDS, lineterminator="\n")
    writer.writeheader()
    for record in records(results_list, labels, metrics):
        value = record["value"]
        writer.writerow(dict(record, value=json.dumps(value) if isinstance(value, bool) else value))
    return buffer.getvalue()


# ---- hyperfine-compatible ------------------------------------------------------------------

def _series(results_list, labels=None) -> list[dict]:
    """One hyperfine result (seconds) per server with a cold-start median: command is the
    server's column header ("name", or "name (label)" for several files)."""
    out = []
    for header, _doc, _label, server in columns(documents(results_list), labels):
        block = server.get("handshake_ms")
        try:
            seconds = {k: number(block[k]) / 1000 for k in ("mean", "median", "min", "max")}
            stdev = block.get("stdev")
            seconds["stddev"] = None if stdev is None else number(stdev) / 1000
            seconds["times"] = [number(t) / 1000 for t in block.get("samples") or []]
        except (AttributeError, KeyError, TypeError):
            continue  # no cold-start series, or not one of numbers
        out.append({"command": header, "mean": seconds["mean"], "stddev": seconds["stddev"],
                    "median": seconds["median"], "user": None, "system": None,
                    "min": seconds["min"], "max": seconds["max"], "times": seconds["times"]})
    return out


def export_json(results_list, labels=None) -> str:
    """The cold-start series in hyperfine's JSON shape: ``{"results": [{"command": name,
    "mean", "stddev", "median", "user": null, "system": null, "min", "max", "times": [...]}]}``,
    seconds; ``times`` are the counted runs (warm-up runs left out, as hyperfine does)."""
    return json.dumps({"results": _series(results_list, labels)}, indent=2, ensure_ascii=False) + "\n"


def export_csv(results_list, labels=None) -> str:
    """The cold-start series as hyperfine's CSV (seconds): ``command,mean,stddev,median,user,
    system,min,max``; stddev 0 for a single run (as hyperfine writes it), user and system
    empty (not measured)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["command", "mean", "stddev", "median", "user", "system", "min", "max"])
    for r in _series(results_list, labels):
        writer.writerow([r["command"], r["mean"], r["stddev"] or 0, r["median"], "", "",
                         r["min"], r["max"]])
    return buffer.getvalue()


def export_markdown(results_list, labels=None) -> str:
    """The cold-start series as hyperfine's Markdown table: ``| Command | Mean [ms] | Min [ms]
    | Max [ms] | Relative |``. As hyperfine: the unit is the first result's (ms under 1 s,
    else s; 1 and 3 decimals); Relative is the mean over the fastest mean, with the error
    propagated from both standard deviations (independent), and "1.00" for the fastest."""
    series = _series(results_list, labels)
    unit, scale, places = ("s", 1, 3) if series and series[0]["mean"] >= 1 else ("ms", 1000, 1)
    lines = [f"| Command | Mean [{unit}] | Min [{unit}] | Max [{unit}] | Relative |",
             "|:---|---:|---:|---:|---:|"]
    fastest = min(series, key=lambda r: r["mean"], default=None)
    for r in series:
        mean = f"{r['mean'] * scale:.{places}f}"
        if r["stddev"] is not None:
            mean += f" ± {r['stddev'] * scale:.{places}f}"
        if fastest["mean"] <= 0:
            relative = "N/A"
        else:
            ratio = r["mean"] / fastest["mean"]
            relative = f"{ratio:.2f}"
            if r is not fastest and r["stddev"] is not None and fastest["stddev"] is not None \
                    and r["mean"] > 0:
                error = ratio * math.hypot(r["stddev"] / r["mean"], fastest["stddev"] / fastest["mean"])
                relative += f" ± {error:.2f}"
        command = r["command"].replace("|", "\\|")
        lines.append(f"| `{command}` | {mean} | {r['min'] * scale:.{places}f} | "
                     f"{r['max'] * scale:.{places}f} | {relative} |")
    return "\n".join(lines) + "\n"
