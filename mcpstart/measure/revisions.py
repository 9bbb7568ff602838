"""Which protocol revisions a server speaks: the revision matrix (one probe per process) and
what it tells: era, supported revisions, the modern-era discover answer.

Sources: MCP specification 2026-07-28, basic/versioning ("Backward Compatibility with
Initialization-Based Versions"), basic/transports/stdio ("Backward Compatibility") and
server/discover. A modern server answers ``server/discover`` with ``supportedVersions`` and
``resultType``; a modern rejection of a revision carries ``error.data.supported`` (code
-32022; drafts used -32602 and -32004), so it is recognised by that member, never by one
code. Anything else (another error, an exit, silence) marks a legacy server.
"""

from __future__ import annotations

import time

from .. import warnings as warn
from ..command import Command
from ..transports.jsonrpc import clip
from ..transports.session import Exited, NoAnswer, Session, SessionError
from ..wire import MODERN_REVISION, initialize_request, modern_request
from . import spawn
from .settings import Settings

HANDSHAKE_REVISIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""The revisions of the initialize-handshake era."""
FUTURE_REVISION = "2099-12-31"
"""A revision no server knows: a server should answer initialize with one it supports."""


def probe(command: Command, request: dict, settings: Settings) -> dict:
    """Send ``request`` (id 1) as the first message of a fresh process and see what comes.

    Ends at once on an answer, an error, an exit or EOF; else after
    ``settings.probe_timeout_s``; the process is then shut down within
    ``settings.probe_grace_s`` per step.

    Returns:
        ``{method, requested, outcome ("answered" | "error" | "exited" | "no_answer"),
        answered, error_code, error_message, error_data, ms, result}``: ``answered`` is the
        protocolVersion an initialize answer names, or discover's supportedVersions joined
        with ", "; the error members are stored verbatim; ``ms`` runs from just before the
        spawn to the outcome; ``result`` (not stored in the matrix) is the result object.
    """
    method = request["method"]
    meta = request["params"].get("_meta") or {}
    row = {"method": method,
           "requested": request["params"].get("protocolVersion")
           or meta.get("io.modelcontextprotocol/protocolVersion"),
           "outcome": None, "answered": None, "error_code": None, "error_message": None,
           "error_data": None, "ms": None, "result": None}
    try:
        with spawn.started([(command, request)], settings, timed=False) as (session,):
            try:
                _outcome(session, row, settings.probe_timeout_s)
            finally:
                session.shutdown(settings.probe_grace_s)
    except SessionError as err:  # it could not be started
        return {**row, "outcome": "exited", "error_message": str(err)}
    return row


def _outcome(session: Session, row: dict, timeout_s: float) -> None:
    """Wait for the probe's answer and write what came into ``row``."""
    try:
        response = session.wait(1, timeout_s, diagnose=False)
        row["ms"] = (response.at_ns - session.t0_ns) / 1e6
        error, result = response.message.get("error"), response.message.get("result")
        if error is not None:
            row.update(outcome="error", error_code=error.get("code"),
                       error_message=error.get("message"), error_data=error.get("data"))
        elif not isinstance(result, dict):
            row.update(outcome="error", error_message=f"{row['method']} returned a result that "
                                                      f"is not an object: {clip(result, 100)}")
        else:
            row.update(outcome="answered", result=result)
            answer = result
            versions = answer.get("supportedVersions")
            row["answered"] = (", ".join(map(str, versions)) if isinstance(versions, list)
                               else answer.get("protocolVersion"))
    except NoAnswer:
        row.update(outcome="no_answer", ms=(time.perf_counter_ns() - session.t0_ns) / 1e6)
    except Exited as err:
        row.update(outcome="exited", error_message=str(err),
                   ms=(time.perf_counter_ns() - session.t0_ns) / 1e6)
    except SessionError as err:  # answered in a form no client can use
        row.update(outcome="error", error_message=str(err),
                   ms=(time.perf_counter_ns() - session.t0_ns) / 1e6)


def matrix(command: Command, settings: Settings) -> list[dict]:
    """The revision matrix: ``server/discover`` with the modern envelope, then
    ``initialize`` asking each handshake revision, the modern revision (MODERN_REVISION,
    2026-07-28: what a client that still opens with initialize meets; its answer's result
    is kept verbatim in the row as ``result``) and one unknown future revision, each in its
    own process (some servers exit on any first request but initialize). Once an initialize
    probe got no answer at all, the others are not asked (fault-cases.md, case 16: a method
    that got no answer is not waited for again); the matrix then ends there."""
    rows = [probe(command, modern_request("server/discover"), settings)]
    for revision in (*HANDSHAKE_REVISIONS, MODERN_REVISION, FUTURE_REVISION):
        rows.append(probe(command, initialize_request(revision), settings))
        if rows[-1]["outcome"] == "no_answer":
            break
    return rows


def _kept(row: dict) -> dict:
    """A matrix row as stored: ``result`` only for initialize asking MODERN_REVISION."""
    keep = row["method"] == "initialize" and row["requested"] == MODERN_REVISION
    return {k: v for k, v in row.items() if k != "result" or keep}


def _modern(revision: str) -> bool:
    return revision >= MODERN_REVISION


def derive(rows: list[dict]) -> tuple[dict, list[str]]:
    """What the matrix tells. Returns ``(protocol, warnings)`` (stored warnings),
    ``protocol`` holding
    ``discover_versions`` (None unless discover was answered as a modern server answers),
    ``discover`` ({server_info, capabilities} or None), ``supported_revisions`` (discover's
    list plus every revision an initialize echoed back, sorted), ``initialize_modern``
    (what initialize asking MODERN_REVISION got: {outcome, answered, error_code,
    error_message}, None when not asked), ``era`` ("dual", "legacy",
    "modern" or None) and ``matrix`` (the rows, ``result`` kept only where ``matrix``
    says)."""
    warnings = []
    discover = next((r for r in rows if r["method"] == "server/discover"), None)
    versions, info = None, None
    modern = False
    for row in rows:
        data = row["error_data"]
        if row["outcome"] == "error" and isinstance(data, dict) and isinstance(
                data.get("supported"), list):
            modern = True  # a modern rejection: the server names what it supports
    if discover and discover["outcome"] == "answered":
        result = discover["result"] or {}
        listed = result.get("supportedVersions")
        if "resultType" not in result:
            warnings.append(warn.discover_not_modern())
        elif isinstance(listed, list):
            versions = [str(v) for v in listed]
            modern = modern or any(_modern(v) for v in versions)
            meta = result.get("_meta") if isinstance(result.get("_meta"), dict) else {}
            info = {"server_info": meta.get("io.modelcontextprotocol/serverInfo"),
                    "capabilities": result.get("capabilities")}
    echoed = {r["answered"] for r in rows
              if r["method"] == "initialize" and r["outcome"] == "answered"
              and isinstance(r["answered"], str)}
    legacy = bool(echoed)
    era = "dual" if modern and legacy else "modern" if modern else "legacy" if legacy else None
    asked = next((r for r in rows if r["method"] == "initialize"
                  and r["requested"] == MODERN_REVISION), None)
    return {"discover_versions": versions, "discover": info,
            "supported_revisions": sorted(set(versions or []) | echoed), "era": era,
            "initialize_modern": None if asked is None else {
                k: asked[k] for k in ("outcome", "answered", "error_code", "error_message")},
            "matrix": [_kept(r) for r in rows]}, warnings


def speaks_modern(protocol: dict) -> bool:
    """True when discover listed a revision of the modern era (the modern series applies)."""
    return any(_modern(v) for v in protocol.get("discover_versions") or [])
