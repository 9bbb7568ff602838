"""Which protocol revisions a server speaks: the revision matrix (one probe per process) and
what it tells: era, supported revisions, the modern-era discover answer.

Sources: MCP specification 2026-07-28, basic/versioning ("Backward Compatibility with
Initialization-Based Versions"), basic/transports/stdio ("Backward Compatibility") and
server/discover. A modern server answers ``server/discover`` with ``supportedVersions`` and
``resultType``; a modern rejection of a revision carries ``error.data.supported`` (code
-32022; drafts used -32602 and -32004), so it is recognised by that member, never by one
code. Anything else (another error, an exit, silence) marks a legacy server.

Verdicts come only from answers: a probe that got an answer (an echo, another revision, an
error) or ended (an exit) says what the server does with that revision; a probe that got
nothing within its wait, or never reached a server (``never_reached``), says nothing, so its
revision is "unknown", never "unsupported", and
the matrix goes on past it. The wait is derived from the server's own measured start
(``probe_wait``).
"""

from __future__ import annotations

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
WAIT_FACTOR = 3
"""A probe waits this many times the server's slowest measured start (``probe_wait``)."""


def probe_wait(settings: Settings, starts_ms: list[float], source: str) -> dict:
    """The wait of each probe of one server's matrix.

    ``settings.probe_timeout_s`` (``--probe-timeout``) when given; else WAIT_FACTOR times
    the slowest of ``starts_ms`` (the server's starts measured in this run: the counted cold
    starts, never a warm-up, which may hold a first npx/uvx download; or the first start of
    ``mcpstart revisions``, named by ``source``), and at least ``settings.probe_floor_s``; the
    floor alone when no start was measured. Why 3x: a probe is a cold start like those
    measured, in a fresh process, yet the machine's load moves between the series and the
    probes (a start can take three times as long a minute later on a busy machine: docs/figures.md,
    "Revision probes"), and a wait too short costs a verdict ("unknown") while a wait too long
    costs time only where a probe gets no answer at all.

    Returns:
        ``{s, rule, slowest_start_ms, source}``: the wait in seconds; ``rule`` "given"
        (--probe-timeout), "derived" (WAIT_FACTOR x the slowest start) or "floor" (no start
        measured, or the derived wait is shorter); the slowest start in ms (None when none
        was measured) and what it was (``source``).
    """
    slowest = max(starts_ms, default=None)
    if settings.probe_timeout_s is not None:
        wait, rule = settings.probe_timeout_s, "given"
    elif slowest is not None and WAIT_FACTOR * slowest / 1000 > settings.probe_floor_s:
        wait, rule = WAIT_FACTOR * slowest / 1000, "derived"
    else:
        wait, rule = settings.probe_floor_s, "floor"
    return {"s": round(wait, 3), "rule": rule, "slowest_start_ms": slowest, "source": source}


def probe(command: Command, request: dict, settings: Settings, wait_s: float) -> dict:
    """Send ``request`` (id 1) as the first message of a fresh process and see what comes.

    Ends at once on an answer, an error, an exit or EOF; else after ``wait_s`` seconds;
    the process is then shut down within ``settings.probe_grace_s`` per step.

    Returns:
        ``{method, requested, outcome ("answered" | "error" | "exited" | "no_answer"),
        answered, error_code, error_message, error_data, ms, wait_s, result}``:
        ``answered`` is the protocolVersion an initialize answer names, or discover's
        supportedVersions joined with ", "; the error members are stored verbatim; ``ms``
        runs from just before the spawn to the outcome; ``wait_s`` is the wait the probe was
        given; ``result`` (not stored in the matrix) is the result object.
    """
    method = request["method"]
    meta = request["params"].get("_meta") or {}
    row = {"method": method,
           "requested": request["params"].get("protocolVersion")
           or meta.get("io.modelcontextprotocol/protocolVersion"),
           "outcome": None, "answered": None, "error_code": None, "error_message": None,
           "error_data": None, "ms": None, "wait_s": wait_s, "result": None}
    try:
        with spawn.started([(command, request)], settings, timed=False) as (session,):
            try:
                _outcome(session, row, wait_s)
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
        row.update(outcome="no_answer", ms=(session.transport.now_ns() - session.t0_ns) / 1e6)
    except Exited as err:
        row.update(outcome="exited", error_message=str(err),
                   ms=(session.transport.now_ns() - session.t0_ns) / 1e6)
    except SessionError as err:  # answered in a form no client can use
        row.update(outcome="error", error_message=str(err),
                   ms=(session.transport.now_ns() - session.t0_ns) / 1e6)


def matrix(command: Command, settings: Settings, wait_s: float) -> list[dict]:
    """The revision matrix: ``server/discover`` with the modern envelope, then
    ``initialize`` asking each handshake revision, the modern revision (MODERN_REVISION,
    2026-07-28: what a client that still opens with initialize meets; its answer's result
    is kept verbatim in the row as ``result``) and one unknown future revision, each in its
    own process (some servers exit on any first request but initialize), each waiting
    ``wait_s`` (``probe_wait``). A probe that got no answer leaves its revision unknown and
    the next is asked all the same: each is a fresh process, so one start slower than the
    wait says nothing of the next."""
    rows = [probe(command, modern_request("server/discover"), settings, wait_s)]
    for revision in (*HANDSHAKE_REVISIONS, MODERN_REVISION, FUTURE_REVISION):
        rows.append(probe(command, initialize_request(revision), settings, wait_s))
    return rows


def _kept(row: dict) -> dict:
    """A matrix row as stored: ``result`` only for initialize asking MODERN_REVISION."""
    keep = row["method"] == "initialize" and row["requested"] == MODERN_REVISION
    return {k: v for k, v in row.items() if k != "result" or keep}


def _modern(revision: str) -> bool:
    return revision >= MODERN_REVISION


def never_reached(row: dict) -> bool:
    """The probe never reached a server: the program could not be started (an "exited"
    outcome with no time), or nothing accepted the HTTP connection (the transport's own error,
    with no HTTP status and no JSON-RPC code). That says nothing of the revision."""
    return (row["outcome"] == "exited" and row["ms"] is None) or (
        row["outcome"] == "error" and row["error_code"] is None
        and row.get("error_data") == {"http_status": None})


def verdict(row: dict) -> str:
    """What one probe tells of the revision it asked: "supported" (initialize echoed it;
    discover answered as a modern server answers and listed it), "unknown" (no answer
    within the probe's wait, or the probe never reached a server) or "unsupported" (any
    other answer, an error, an exit)."""
    if row["outcome"] == "no_answer" or never_reached(row):
        return "unknown"
    if row["outcome"] != "answered":
        return "unsupported"
    if row["method"] == "initialize":
        return "supported" if row["answered"] == row["requested"] else "unsupported"
    result = row.get("result") or {}
    listed = result.get("supportedVersions")
    return ("supported" if "resultType" in result and isinstance(listed, list)
            and row["requested"] in map(str, listed) else "unsupported")


def derive(rows: list[dict], wait: dict) -> tuple[dict, list[str]]:
    """What the matrix tells (``wait``: the probes' ``probe_wait``). Returns ``(protocol,
    warnings)`` (stored warnings), ``protocol`` holding
    ``discover_versions`` (None unless discover was answered as a modern server answers),
    ``discover`` ({server_info, capabilities} or None), ``supported_revisions`` (discover's
    list plus every revision an initialize echoed back, sorted), ``unknown_revisions`` (the
    revisions asked by a probe that got no answer and not found supported by another;
    FUTURE_REVISION is never listed), ``probe_wait`` (``wait`` as given),
    ``initialize_modern`` (what initialize asking MODERN_REVISION got: {outcome, answered,
    error_code, error_message, wait_s}, None when not asked), ``era`` ("dual", "legacy",
    "modern" or None) and ``matrix`` (the rows, each with its ``verdict``, ``result`` kept
    only where ``_kept`` says)."""
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
    supported = sorted(set(versions or []) | echoed)
    verdicts = [(r["requested"], verdict(r)) for r in rows]
    unknown = sorted({rev for rev, v in verdicts if v == "unknown"} - set(supported)
                     - {FUTURE_REVISION})
    return {"discover_versions": versions, "discover": info,
            "supported_revisions": supported, "unknown_revisions": unknown,
            "probe_wait": wait, "era": era,
            "initialize_modern": None if asked is None else {
                k: asked[k] for k in ("outcome", "answered", "error_code", "error_message",
                                      "wait_s")},
            "matrix": [{**_kept(r), "verdict": v} for r, (_, v) in zip(rows, verdicts)]}, warnings


def contradicted(protocol: dict) -> list[dict]:
    """A warning when the revision a session's initialize negotiated
    (``protocol["negotiated_revision"]``) is not among the matrix's supported revisions: its
    probe got no answer (unknown) or answered otherwise (the server answers the same
    question differently from one process to the next). Empty without a matrix or a
    negotiated revision."""
    negotiated = protocol.get("negotiated_revision")
    rows = protocol.get("matrix")
    if not rows or not negotiated or negotiated in protocol.get("supported_revisions", []):
        return []
    probe = next((r for r in rows if r["method"] == "initialize"
                  and r["requested"] == negotiated), None)
    if probe is None:
        got = "no probe asked for it"
    elif probe["verdict"] == "unknown":
        got = f"its probe got no answer in {probe['wait_s']:g} s (unknown)"
    else:
        got = f"its probe got {probe['answered'] or probe['error_message'] or probe['outcome']}"
    return [warn.revision_contradicted(negotiated, got)]


def speaks_modern(protocol: dict) -> bool:
    """True when discover listed a revision of the modern era (the modern series applies)."""
    return any(_modern(v) for v in protocol.get("discover_versions") or [])
