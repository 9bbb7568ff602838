"""The cold-start series as hyperfine's Markdown table (``--export-markdown``)."""

from __future__ import annotations

import math

from .hyperfine import series


def render(results_list, labels=None, metrics=None) -> str:
    """The cold-start series as hyperfine's Markdown table: ``| Command | Mean [ms] | Min [ms]
    | Max [ms] | Relative |``. As hyperfine: the unit is the first result's (ms under 1 s,
    else s; 1 and 3 decimals); Relative is the mean over the fastest mean, with the error
    propagated from both standard deviations (independent), and "1.00" for the fastest."""
    rows = series(results_list, labels)
    unit, scale, places = ("s", 1, 3) if rows and rows[0]["mean"] >= 1 else ("ms", 1000, 1)
    lines = [f"| Command | Mean [{unit}] | Min [{unit}] | Max [{unit}] | Relative |",
             "|:---|---:|---:|---:|---:|"]
    fastest = min(rows, key=lambda r: r["mean"], default=None)
    for r in rows:
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
