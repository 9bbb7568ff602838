"""What mcpstart asks a server: cold-start handshakes, and one session that lists the tools,
reads idle memory and calls ``reverse_text`` with a large payload."""

from __future__ import annotations

import string

from .. import Progress, __version__
from . import memory
from ..stdio.session import Command, SessionError, StdioSession, Traffic
from .stats import summarize

TOOL_NAME = "reverse_text"
UNICODE_CHECK = "mcp e\u0301t\u00e9 \U0001F600 \u6f22\u5b57!"
"""A short input with a combining mark (e + U+0301), a non-BMP emoji and CJK; its expected
reversal is by code points: Python's ``s[::-1]``."""



class ProbeError(SessionError):
    """The server answered, but not as the MCP specification or the reference tool requires."""


def initialize_request(revision: str) -> dict:
    """The ``initialize`` request (id 1) mcpstart sends first, asking for ``revision``."""
    return {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": revision, "capabilities": {},
        "clientInfo": {"name": "mcpstart", "version": __version__}}}


def _result(response, what: str) -> dict:
    error = response.message.get("error")
    if isinstance(error, dict):
        raise ProbeError(f"{what} returned JSON-RPC error {error.get('code')}: "
                         f"{error.get('message')}")
    if error is not None:
        raise ProbeError(f"{what} returned a malformed JSON-RPC error: {str(error)[:200]!r}")
    result = response.message.get("result")
    if not isinstance(result, dict):
        raise ProbeError(f"{what} returned a result that is not an object")
    return result


def _initialize(session: StdioSession, timeout_s: float) -> tuple[dict, object]:
    response = session.wait_response(1, timeout_s)
    result = _result(response, "initialize")
    if not isinstance(result.get("protocolVersion"), str):
        raise ProbeError("initialize result has no protocolVersion string: "
                         f"{str(result.get('protocolVersion'))[:100]!r}")
    return result, response


def handshake(command: Command, revision: str, timeout_s: float) -> dict:
    """Time one cold start: spawn, write ``initialize``, read its response, shut down.

    Returns:
        ``{handshake_ms, first_byte_ms, negotiated_revision, server_info, shutdown, traffic}``;
        ``handshake_ms`` runs from just before the spawn to the complete response line with
        id 1, ``first_byte_ms`` to the first stdout byte (both wall-clock milliseconds).

    Raises:
        SessionError: no valid initialize response; the message is the cause.
    """
    session = StdioSession.spawn(command, first_request=initialize_request(revision))
    try:
        result, response = _initialize(session, timeout_s)
    finally:
        shutdown = session.shutdown()
    return {
        "handshake_ms": (response.at_ns - session.t0_ns) / 1e6,
        "first_byte_ms": (session.first_byte_ns - session.t0_ns) / 1e6,
        "negotiated_revision": result["protocolVersion"],
        "server_info": result.get("serverInfo"),
        "shutdown": shutdown,
        "traffic": session.traffic,
    }


def handshake_series(command: Command, runs: int, warmup: int, revision: str,
                     timeout_s: float, progress: Progress = lambda _: None) -> dict:
    """Run ``warmup`` + ``runs`` cold starts one after another.

    Returns:
        ``{handshake_ms: <stats>, first_byte_ms: <stats>, negotiated_revision, server_info,
        orphans, traffic, warnings}``: ``traffic`` summed over the runs; warm-up runs appear
        only in the stats' ``warmup_samples``.

    Raises:
        SessionError: a run failed; the message names the run and the cause.
    """
    done, orphans, warnings, traffic = [], [], [], Traffic()
    for index in range(warmup + runs):
        label = f"warm-up {index + 1}/{warmup}" if index < warmup else f"run {index - warmup + 1}/{runs}"
        progress(f"handshake {label}")
        try:
            sample = handshake(command, revision, timeout_s)
        except SessionError as err:
            raise type(err)(f"handshake {label}: {err}") from err
        done.append(sample)
        orphans += sample["shutdown"]["orphans"]
        traffic.merge(sample["traffic"])
    revisions = {s["negotiated_revision"] for s in done}
    if len(revisions) > 1:
        warnings.append(f"negotiated revision varied between runs: {sorted(revisions)}")
    return {
        "handshake_ms": summarize([s["handshake_ms"] for s in done[warmup:]],
                                  [s["handshake_ms"] for s in done[:warmup]]),
        "first_byte_ms": summarize([s["first_byte_ms"] for s in done[warmup:]],
                                   [s["first_byte_ms"] for s in done[:warmup]]),
        "negotiated_revision": done[-1]["negotiated_revision"],
        "server_info": done[-1]["server_info"],
        "orphans": orphans,
        "traffic": traffic,
        "warnings": warnings,
    }


def payload_text(size: int) -> str:
    """``size`` ASCII characters with no symmetry, so a wrong reversal cannot pass."""
    alphabet = string.ascii_letters + string.digits
    return (alphabet * (size // len(alphabet) + 1))[:size]


def _call_text(session: StdioSession, text: str, timeout_s: float):
    request_id, sent_ns = session.send_request(
        "tools/call", {"name": TOOL_NAME, "arguments": {"text": text}})
    response = session.wait_response(request_id, timeout_s)
    result = _result(response, "tools/call reverse_text")
    if result.get("isError"):
        raise ProbeError(f"tools/call reverse_text reported isError: {str(result)[:300]}")
    content = result.get("content")
    if not isinstance(content, list):
        raise ProbeError(f"tools/call result has no content list: {str(result)[:200]!r}")
    answer = "".join(str(item.get("text", "")) for item in content
                     if isinstance(item, dict) and item.get("type") == "text")
    return answer, result, response, sent_ns


def tool_session(command: Command, revision: str, timeout_s: float, payload_bytes: int,
                 progress: Progress = lambda _: None) -> dict:
    """One session: initialize, ``notifications/initialized``, ``tools/list``, idle memory of
    the settled process tree, then ``reverse_text`` on a ``payload_bytes`` ASCII string (peak
    tree memory, round trip, exact check) and on UNICODE_CHECK, then the spec's shutdown.

    Returns:
        ``{tools, memory, payload, shutdown, orphans, traffic, warnings}``, the blocks shaped
        as design.md's results file; ``payload`` is None when the server has no ``reverse_text`` tool.

    Raises:
        SessionError: a request got no valid answer (ProbeError: a wrong one).
    """
    session = StdioSession.spawn(command, first_request=initialize_request(revision))
    warnings: list[str] = []
    try:
        _initialize(session, timeout_s)
        session.notify("notifications/initialized")
        progress("tools/list")
        listing = session.request("tools/list", {}, timeout_s)
        tools = _result(listing, "tools/list").get("tools")
        if not isinstance(tools, list):
            raise ProbeError(f"tools/list result has no tools list: {str(tools)[:200]!r}")
        tool = next((t for t in tools if isinstance(t, dict) and t.get("name") == TOOL_NAME), None)
        progress("idle memory")
        settled, waited = memory.settle(session.tree)
        if not settled:
            warnings.append(f"idle memory did not settle within {waited:.1f} s")
        idle = [row for p in session.tree() if (row := memory.describe(p, full=True))]
        payload, peaks, structured = None, {}, None
        if tool is None:
            warnings.append(f"no {TOOL_NAME} tool: payload not measured")
        else:
            progress(f"tools/call with {payload_bytes} bytes")
            payload, peaks, structured = _payload_call(session, payload_bytes, timeout_s)
    finally:
        shutdown = session.shutdown()
    return {
        "tools": {"count": len(tools), "list_bytes": listing.size_bytes,
                  "output_schema": bool(tool and tool.get("outputSchema")),
                  "structured_content": structured},
        "memory": _memory_block(idle, peaks),
        "payload": payload,
        "shutdown": {"how": shutdown["how"], "ms": shutdown["ms"]},
        "orphans": shutdown["orphans"],
        "traffic": session.traffic,
        "warnings": warnings,
    }


def _payload_call(session: StdioSession, payload_bytes: int, timeout_s: float):
    text = payload_text(payload_bytes)
    procs = session.tree()
    exact = memory.reset_high_water_marks(procs)
    with memory.PeakSampler(session.tree) as sampler:
        answer, result, response, sent_ns = _call_text(session, text, timeout_s)
        marks = memory.high_water_marks(session.tree()) if exact else {}
    verified = answer == text[::-1]
    short, _, _, _ = _call_text(session, UNICODE_CHECK, timeout_s)
    unicode_verified = short == UNICODE_CHECK[::-1]
    payload = {
        "request_bytes": len(text), "response_bytes": response.size_bytes,
        "round_trip_ms": (response.at_ns - sent_ns) / 1e6,
        "verified": verified, "unicode_verified": unicode_verified,
    }
    peaks = {"vmhwm": marks, "sampled": sampler.peak_bytes, "sample_count": sampler.samples}
    return payload, peaks, "structuredContent" in result


def _memory_block(idle: list[dict], peaks: dict) -> dict:
    def total(key: str) -> int | None:
        values = [row[key] for row in idle]
        return sum(values) if values and None not in values else None

    marks = peaks.get("vmhwm") or {}
    processes = [{"pid": r["pid"], "ppid": r["ppid"], "name": r["name"], "cmdline": r["cmdline"],
                  "idle_rss_bytes": r["rss_bytes"], "idle_pss_bytes": r["pss_bytes"],
                  "idle_uss_bytes": r["uss_bytes"], "peak_rss_bytes_payload": marks.get(r["pid"])}
                 for r in idle]
    sampled = peaks.get("sampled")
    return {
        "idle_rss_bytes": total("rss_bytes"),
        "idle_pss_bytes": total("pss_bytes"),
        "idle_uss_bytes": total("uss_bytes"),
        "peak_rss_bytes_payload": sum(marks.values()) if marks else sampled,
        "peak_rss_bytes_sampled": sampled,
        "peak_method": ("vmhwm" if marks else "sampled") if peaks else None,
        "peak_samples": peaks.get("sample_count"),
        "processes": processes,
    }
