"""The cold-start series (handshake_ms; an HTTP server's http.start_ms.initialize) in
hyperfine's shapes, so scripts written for hyperfine's
``--export-json/--export-csv/--export-markdown`` read mcpstart's.

hyperfine's shapes (github.com/sharkdp/hyperfine, src/export/ and
src/benchmark/benchmark_result.rs, 1.x): JSON ``{"results": [{command, mean, stddev,
median, user, system, min, max, times, ...}]}`` in seconds, stddev null for one run; CSV
columns ``command,mean,stddev,median,user,system,min,max``; Markdown
``| Command | Mean [ms] | Min [ms] | Max [ms] | Relative |``. ``user`` and ``system`` are the
mean user and system CPU time of the server's whole tree from the spawn to the cold start's
last answer (``start_usage``, docs/startup.md), null (JSON) or empty (CSV) where it was not read
(``--no-attribution``, an older file); there are no ``exit_codes`` (a server is
shut down, not run to completion).
"""

from __future__ import annotations

from ...results import dig, documents, number
from ..table import columns


def series(results_list, labels=None) -> list[dict]:
    """One hyperfine result (seconds) per server with a cold-start median: command is the
    server's column header ("name", or "name (label)" for several files)."""
    out = []
    for header, _doc, _label, server in columns(documents(results_list), labels):
        block = server.get("handshake_ms") or dig(server, "http.start_ms.initialize")
        try:
            seconds = {k: number(block[k]) / 1000 for k in ("mean", "median", "min", "max")}
            stdev = block.get("stdev")
            seconds["stddev"] = None if stdev is None else number(stdev) / 1000
            seconds["times"] = [number(t) / 1000 for t in block.get("samples") or []]
        except (AttributeError, KeyError, TypeError):
            continue  # no cold-start series, or not one of numbers
        cpu = {key: None if (mean := dig(server, f"start_usage.{key}_ms.mean")) is None
               else number(mean) / 1000 for key in ("user", "system")}
        out.append({"command": header, "mean": seconds["mean"], "stddev": seconds["stddev"],
                    "median": seconds["median"], "user": cpu["user"], "system": cpu["system"],
                    "min": seconds["min"], "max": seconds["max"], "times": seconds["times"]})
    return out
