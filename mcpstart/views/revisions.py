"""The revision matrix as a table: one line per probe of each server (docs/results.md#protocol,
``protocol.matrix``), then what each server's answers tell."""

from __future__ import annotations

import json

from ..results import documents
from .table import MARKDOWN_FORMATS, fmt_ms, no_answer, one_line, probe_wait

HINT = ("A probe that got no answer leaves its revision unknown: --probe-timeout SECONDS "
        "gives each probe longer.")


def _clip(value, limit: int = 60) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _outcome(probe: dict) -> str:
    """The probe's outcome; a silence as "unknown (no answer in 5 s)"."""
    if probe.get("outcome") == "no_answer":
        return f"unknown ({no_answer(probe.get('wait_s'))})"
    return _clip(probe.get("outcome"))


def matrix_json(results) -> str:
    """``revisions --format json``: one object, ``servers``: ``[{name, status, reason,
    protocol}]``, ``protocol`` being the results file's block as it is (docs/results.md:
    era, supported and unknown revisions, the probe wait, ``matrix``: every probe)."""
    return json.dumps({"servers": [
        {"name": s.get("name"), "status": s.get("status"), "reason": s.get("reason"),
         "protocol": s.get("protocol")}
        for doc in documents(results) for s in doc.get("servers") or []]}, indent=2) + "\n"


def matrix_table(results, tablefmt: str = "github") -> str:
    """Every probe of every server: method, revision asked, outcome, what was answered, the
    error's code, message and data, and the time from spawn to the outcome; then one line
    per server with its era, supported and unknown revisions and the probes' wait (and why
    it failed, if it did); then, when a probe got no answer, where to give probes longer."""
    from tabulate import tabulate

    body, summary, silent = [], [], False
    for doc in documents(results):
        for server in doc.get("servers") or []:
            protocol = server.get("protocol") or {}
            for probe in protocol.get("matrix") or []:
                silent = silent or probe.get("outcome") == "no_answer"
                body.append([server.get("name"), probe.get("method"), probe.get("requested"),
                             _outcome(probe), _clip(probe.get("answered")),
                             _clip(probe.get("error_code")), _clip(probe.get("error_message")),
                             _clip(probe.get("error_data")),
                             fmt_ms(probe["ms"]) if isinstance(probe.get("ms"), (int, float))
                             else ""])
            line = [f"{server.get('status')}: {server.get('reason')}"] if server.get(
                "status") in ("failed", "skipped") else []
            if protocol.get("matrix"):
                wait = protocol.get("probe_wait")
                revisions = ", ".join(protocol.get("supported_revisions") or []) or "none"
                line += [f"era {protocol.get('era') or 'unknown'}",
                         f"supported revisions {revisions}"]
                if protocol.get("unknown_revisions"):
                    line.append(f"unknown ({no_answer((wait or {}).get('s'))}): "
                                f"{', '.join(protocol['unknown_revisions'])}")
                if isinstance(wait, dict):
                    line.append(f"probe wait {probe_wait(wait)}")
            if line:
                summary.append(f"- {server.get('name')}: {'; '.join(line)}")
    markdown = tablefmt in MARKDOWN_FORMATS  # an error is the server's text: lines, pipes
    body = [[one_line(text, markdown) for text in row] for row in body]
    text = tabulate(body, headers=["server", "method", "requested", "outcome", "answered",
                                   "error code", "error message", "error data", "ms"],
                    tablefmt=tablefmt, disable_numparse=True)
    return "\n\n".join([text, *(["\n".join(summary)] if summary else []),
                        *([HINT] if silent else [])])
