"""The revision matrix as a table: one line per probe of each server (design.md,
``protocol.matrix``), then what each server's answers tell."""

from __future__ import annotations

import json

from ..results import documents
from .table import fmt_ms


def _clip(value, limit: int = 60) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def matrix_table(results, tablefmt: str = "github") -> str:
    """Every probe of every server: method, revision asked, outcome, what was answered, the
    error's code, message and data, and the time from spawn to the outcome; then one line
    per server with its era and supported revisions."""
    from tabulate import tabulate

    body, summary = [], []
    for doc in documents(results):
        for server in doc.get("servers") or []:
            protocol = server.get("protocol") or {}
            for probe in protocol.get("matrix") or []:
                body.append([server.get("name"), probe.get("method"), probe.get("requested"),
                             probe.get("outcome"), _clip(probe.get("answered")),
                             _clip(probe.get("error_code")), _clip(probe.get("error_message")),
                             _clip(probe.get("error_data")),
                             fmt_ms(probe["ms"]) if isinstance(probe.get("ms"), (int, float))
                             else ""])
            if server.get("status") in ("failed", "skipped"):
                summary.append(f"- {server.get('name')}: {server.get('status')}: "
                               f"{server.get('reason')}")
            elif protocol.get("matrix"):
                revisions = ", ".join(protocol.get("supported_revisions") or []) or "none"
                summary.append(f"- {server.get('name')}: era {protocol.get('era') or 'unknown'};"
                               f" supported revisions {revisions}")
    text = tabulate(body, headers=["server", "method", "requested", "outcome", "answered",
                                   "error code", "error message", "error data", "ms"],
                    tablefmt=tablefmt, disable_numparse=True)
    return "\n\n".join([text, "\n".join(summary)] if summary else [text])
