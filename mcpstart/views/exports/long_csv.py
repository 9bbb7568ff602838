"""Long-form records (views/records.py) as CSV: ``--format csv``."""

from __future__ import annotations

import csv
import io
import json

from ..records import FIELDS, records


def render(results_list, labels=None, metrics=None) -> str:
    """``records`` as CSV with the header ``server,file,metric,value,unit``; an absent value
    is an empty field, a flag ``true``/``false``."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, FIELDS, lineterminator="\n")
    writer.writeheader()
    for record in records(results_list, labels, metrics):
        value = record["value"]
        writer.writerow(dict(record, value=json.dumps(value) if isinstance(value, bool) else value))
    return buffer.getvalue()
