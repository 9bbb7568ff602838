"""Long-form records (views/records.py) as a JSON array: ``--format json``."""

from __future__ import annotations

import json

from ..records import records


def render(results_list, labels=None, metrics=None) -> str:
    """``records`` as a JSON array."""
    return json.dumps(records(results_list, labels, metrics), indent=2, ensure_ascii=False) + "\n"
