"""The cold-start series in hyperfine's JSON shape (``--export-json``)."""

from __future__ import annotations

import json

from .hyperfine import series


def render(results_list, labels=None, metrics=None) -> str:
    """The cold-start series in hyperfine's JSON shape: ``{"results": [{"command": name,
    "mean", "stddev", "median", "user": null, "system": null, "min", "max", "times": [...]}]}``,
    seconds; ``times`` are the counted runs (warm-up runs left out, as hyperfine does)."""
    return json.dumps({"results": series(results_list, labels)}, indent=2, ensure_ascii=False) + "\n"
