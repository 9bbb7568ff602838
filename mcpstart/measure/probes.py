"""What mcpstart asks a server: timed cold starts (with their phases), the modern-era cold
starts, and one tool session that lists the tools, reads idle memory, times warm round trips
and calls a tool with a large payload.

Every timed spawn starts the same way (design.md, measurement rules): the previous run fully
reaped, a fixed idle pause, the spawn prepared (as the C harness of benchmarks/ does after
its pause), then the clock.
"""

from __future__ import annotations

import gc
import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from ..command import Command
from ..wire import (REFERENCE_TOOL, SMALL_TEXT, UNICODE_CHECK, ToolCall, initialize_request,
                    paging_stop, payload_text)
from ..stdio.session import Response, Session, SessionError, Traffic
from . import memory
from ..stats import summarize

class ProbeError(SessionError):
    """The server answered, but not as the MCP specification or the called tool requires."""


def chosen_call(call: ToolCall | None, listing: "ToolList") -> ToolCall | None:
    """The call to make: ``call`` (``--call``) when given, else reverse_text where the server
    lists it, else None.

    Raises:
        ProbeError: the named tool is not listed, or its ``inputSchema`` requires arguments
            the call does not give (the cause says to pass them with ``--args``).
    """
    if call is None:
        return ToolCall() if listing.find(REFERENCE_TOOL) else None
    tool = listing.find(call.name)
    if tool is None:
        names = ", ".join(str(t.get("name")) for t in listing.tools[:20] if isinstance(t, dict))
        raise ProbeError(f"tools/call {call.name}: the server lists no such tool (it lists: "
                         f"{names or 'none'})")
    schema = tool.get("inputSchema")
    required = schema.get("required") if isinstance(schema, dict) else None
    missing = [k for k in required or [] if isinstance(k, str) and k not in call.arguments]
    if missing:
        raise ProbeError(f"tools/call {call.name}: the tool requires {', '.join(missing)}, "
                         "which the call does not give; pass them with --args '{...}'")
    return call


def result_of(response: Response, what: str) -> dict:
    """The ``result`` object of an answer.

    Raises:
        ProbeError: a JSON-RPC error answer (code and message quoted) or a result that is
            not an object.
    """
    error = response.message.get("error")
    if error is not None:
        raise ProbeError(f"{what} returned JSON-RPC error {error.get('code')}: "
                         f"{error.get('message')}")
    result = response.message.get("result")
    if not isinstance(result, dict):
        raise ProbeError(f"{what} returned a result that is not an object: "
                         f"{json.dumps(result)[:100]}")
    return result


def initialize_result(response: Response) -> dict:
    """The result of an ``initialize`` answer.

    Raises:
        ProbeError: an error answer, or a result without a protocolVersion string.
    """
    result = result_of(response, "initialize")
    if not isinstance(result.get("protocolVersion"), str):
        raise ProbeError("initialize result has no protocolVersion string: "
                         f"{json.dumps(result.get('protocolVersion'))[:100]}")
    return result


@dataclass
class ToolList:
    """The merged answer of ``tools/list`` followed through ``nextCursor``.

    ``list_bytes``: the answers' lines as written; ``definitions_bytes``: the merged tool
    definitions as compact JSON (what a client puts into a prompt); ``at_ns``: arrival of
    the last page."""

    tools: list
    pages: int
    list_bytes: int
    at_ns: int
    warnings: list[dict]

    @property
    def definitions_bytes(self) -> int:
        return len(json.dumps(self.tools, ensure_ascii=False, separators=(",", ":")).encode())

    def find(self, name: str) -> dict | None:
        """The listed tool called ``name``, or None."""
        return next((t for t in self.tools if isinstance(t, dict) and t.get("name") == name),
                    None)


def list_tools(session: Session, timeout_s: float, meta: dict | None = None) -> ToolList:
    """``tools/list``, following ``nextCursor`` until it is absent (MCP pagination), stopped
    with a warning by a cursor seen before or past MAX_PAGES pages / MAX_TOOLS tools.

    Raises:
        SessionError: a page got no usable answer (ProbeError: a wrong one).
    """
    tools, seen, warnings = [], set(), []
    pages = size = 0
    cursor = None
    while True:
        params = {"cursor": cursor} if cursor is not None else {}
        if meta:
            params["_meta"] = meta
        response = session.request("tools/list", params, timeout_s)
        result = result_of(response, "tools/list")
        page = result.get("tools")
        if not isinstance(page, list):
            raise ProbeError(f"tools/list result has no tools list: {str(page)[:200]!r}")
        tools += page
        pages, size = pages + 1, size + response.size_bytes
        cursor = result.get("nextCursor")
        if cursor is None:
            break
        stop = paging_stop(cursor, seen, pages, len(tools))
        if stop:
            warnings.append({"kind": "paging", "metric": "tools",
                             "detail": f"tools/list paging stopped: {stop}"})
            break
        seen.add(cursor)
    return ToolList(tools, pages, size, response.at_ns, warnings)


@dataclass
class CallResult:
    """One ``tools/call``: the joined text content, the result object and the answer."""

    text: str
    result: dict
    response: Response

    @property
    def is_error(self) -> bool:
        return self.result.get("isError") is True


def call_tool(session: Session, call: ToolCall, text: str, timeout_s: float,
              meta: dict | None = None) -> CallResult:
    """Call ``call``'s tool with ``text`` as its payload; a tool-level error (``isError``)
    is returned, not raised.

    Raises:
        SessionError: no usable answer (ProbeError: a JSON-RPC error or no content list).
    """
    params = call.params(text)
    if meta:
        params["_meta"] = meta
    what = f"tools/call {call.name}"
    response = session.request("tools/call", params, timeout_s)
    result = result_of(response, what)
    content = result.get("content")
    if not isinstance(content, list):
        raise ProbeError(f"{what}: the result has no content list: {str(result)[:200]!r}")
    answer = "".join(str(item.get("text", "")) for item in content
                     if isinstance(item, dict) and item.get("type") == "text")
    return CallResult(answer, result, response)


def tool_error(call: ToolCall, outcome: CallResult) -> ProbeError:
    """The failure for a call whose tool said ``isError``, in the server's own words."""
    return ProbeError(f"tools/call {call.name}: the tool reported an error: "
                      f"{outcome.text[:300]!r}")


@dataclass
class Skips:
    """Methods of one server that failed once and are not asked again in later runs
    (fault-cases.md, case 16): method -> the cause."""

    causes: dict[str, str] = field(default_factory=dict)

    def note(self, method: str, cause: str) -> None:
        self.causes.setdefault(method, cause)

    def __contains__(self, method: str) -> bool:
        return method in self.causes


@contextmanager
def timed_window(pause_ms: float) -> Iterator[None]:
    """The state every timed spawn starts from (design.md): garbage collected now, the
    collector paused until the block ends (a collection would otherwise land inside a
    timed wait at random), then the fixed idle pause, during which nothing of mcpstart
    runs; the block prepares the spawn, spawns and waits. Preparing after the pause, as the
    C harness does, leaves the spawn's data in the CPU's caches when the clock starts
    (measured here on the C floor server: about 0.03 ms less than preparing before it)."""
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        if pause_ms > 0:
            time.sleep(pause_ms / 1000)
        yield
    finally:
        if enabled:
            gc.enable()


def _ms(session: Session, at_ns: int | None) -> float | None:
    return None if at_ns is None else (at_ns - session.t0_ns) / 1e6


def cold_start(command: Command, revision: str, timeout_s: float, pause_ms: float,
               call: ToolCall | None, skips: Skips,
               before_spawn: Callable[[], None] = lambda: None) -> dict:
    """One timed cold start with its phases, on a fresh spawn: ``initialize`` (the
    handshake), then ``notifications/initialized`` and ``tools/list`` to its last page, then
    one small ``tools/call`` of ``call`` (None: reverse_text where listed; ``chosen_call``),
    then the spec's shutdown.

    ``before_spawn`` runs before the pause (e.g. evicting the page cache). Phases whose
    method is in ``skips`` are left out; a phase that fails is noted there and left null.

    Returns:
        ``{handshake, first_byte, tools_list, first_call, negotiated_revision, server_info,
        capabilities, tools, shutdown, traffic}``: the phases in ms from just before the
        spawn (None when not reached), ``tools`` the ToolList or None.

    Raises:
        SessionError: no valid initialize answer (the run failed; the process is gone).
    """
    before_spawn()
    sample = {"handshake": None, "first_byte": None, "tools_list": None, "first_call": None,
              "tools": None}
    with timed_window(pause_ms):
        session = Session.start(command, initialize_request(revision), wait_s=timeout_s)
        try:
            _phases(session, sample, timeout_s, call, skips)
        finally:
            sample["first_byte"] = _ms(session, session.transport.first_byte_ns)
            sample["shutdown"] = session.shutdown()
            sample["traffic"] = session.traffic
    return sample


def _phases(session: Session, sample: dict, timeout_s: float, call: ToolCall | None,
            skips: Skips) -> None:
    """The timed part of a cold start, written into ``sample`` as each phase ends."""
    response = session.wait(1, timeout_s)
    init = initialize_result(response)
    sample["handshake"] = _ms(session, response.at_ns)
    sample.update(negotiated_revision=init["protocolVersion"],
                  server_info=init.get("serverInfo"), capabilities=init.get("capabilities"))
    session.notify("notifications/initialized")
    if "tools/list" not in skips:
        try:
            listing = list_tools(session, timeout_s)
            sample["tools_list"], sample["tools"] = _ms(session, listing.at_ns), listing
        except SessionError as err:
            skips.note("tools/list", str(err))
    if sample["tools"] is None or (call and f"tools/call {call.name}" in skips):
        return
    try:
        call = chosen_call(call, sample["tools"])
    except ProbeError as err:
        skips.note(f"tools/call {call.name}", str(err))
        return
    if call and f"tools/call {call.name}" not in skips:
        try:
            outcome = call_tool(session, call, SMALL_TEXT, timeout_s)
            if outcome.is_error:
                raise tool_error(call, outcome)
            sample["first_call"] = _ms(session, outcome.response.at_ns)
        except SessionError as err:
            skips.note(f"tools/call {call.name}", str(err))


def tool_session(command: Command, settings, row, skips: Skips, traffic: Traffic,
                 progress: Callable[[str], None] = lambda _: None) -> None:
    """One warm session, filling ``row`` (a results.ServerResult) step by step so that a
    failure keeps everything measured before it (fault-cases.md, case 15): initialize,
    ``notifications/initialized``, ``tools/list`` (all pages: the ``tools`` block), idle
    memory once settled (``memory``), ``settings.round_trips`` small calls one at a time
    (``round_trip_ms``), the large call twice: once timed with nothing else of mcpstart
    running, its processes' high-water marks reset before and read after (``payload``; the
    exact peak of a one-process server), once again with the marks reset and the process set
    sampled (the peak of a tree, processes born and gone inside the call included), a
    Unicode check for reverse_text, and the spec's shutdown (``shutdown``, ``orphans``; also
    on failure).

    Raises:
        SessionError: a step got no usable answer; the row keeps what came before.
    """
    session = Session.start(command, initialize_request(settings.requested_revision))
    try:
        initialize_result(session.wait(1, settings.timeout_s))
        session.notify("notifications/initialized")
        listing = call_error = None
        if "tools/list" not in skips:  # a method that got no answer is not asked again
            progress("tools/list")
            listing = list_tools(session, settings.timeout_s)
            try:
                call = chosen_call(settings.call, listing)
            except ProbeError as err:  # raised once idle memory is read
                call, call_error = None, err
            tool = listing.find(call.name) if call else None
            row.tools = {"count": len(listing.tools), "pages": listing.pages,
                         "list_bytes": listing.list_bytes,
                         "definitions_bytes": listing.definitions_bytes,
                         "with_output_schema": sum(1 for t in listing.tools if isinstance(t, dict)
                                                   and t.get("outputSchema")),
                         "output_schema": bool(tool.get("outputSchema")) if tool else None,
                         "structured_content": None}
            row.warnings += listing.warnings
        progress("idle memory")
        settled, waited = memory.settle(session.processes, session.serve, settings.settle)
        idle = memory.idle_rows(session.processes)
        row.memory = memory.idle_block(idle, waited, settings.settle,
                                       memory.sharing(session.processes))
        if not settled:
            row.warn("memory", f"idle memory did not settle within {waited:.1f} s",
                     "memory.idle_rss_bytes")
        if listing is None:
            return
        if call_error:
            raise call_error
        if call is None:
            row.skip_block("payload", f"the server lists no {REFERENCE_TOOL} tool; name one "
                                      "with --call TOOL")
            row.skip_block("round_trip_ms", "no tool to call")
            return
        if settings.round_trips:
            progress(f"{settings.round_trips} warm round trips")
            row.round_trip_ms = round_trips(session, call, settings.round_trips,
                                            settings.timeout_s)
        else:
            row.skip_block("round_trip_ms", "--round-trips 0")
        progress(f"tools/call {call.name} with {settings.payload_bytes} bytes")
        text = payload_text(settings.payload_bytes)
        exact = memory.reset_high_water_marks(session.processes)  # before the clock
        outcome = call_tool(session, call, text, settings.timeout_s)
        first_marks = memory.high_water_marks(session.processes) if exact else None
        row.payload = {"tool": call.name, "request_bytes": len(text),
                       "response_bytes": outcome.response.size_bytes,
                       "round_trip_ms": (outcome.response.at_ns - outcome.response.sent_ns) / 1e6,
                       "verified": (outcome.text == text[::-1]
                                    if call.verifiable and not outcome.is_error else None),
                       "unicode_verified": None, "is_error": outcome.is_error}
        row.tools["structured_content"] = "structuredContent" in outcome.result
        if outcome.is_error:
            raise tool_error(call, outcome)
        progress(f"memory during tools/call {call.name}")
        row.memory.update(memory.peak_during(
            session.processes, lambda: call_tool(session, call, text, settings.timeout_s),
            row.memory["processes"], first_marks))
        for warning in memory.peak_warnings(row.memory):
            row.warn("memory", warning, "memory.peak_rss_bytes_payload")
        if call.verifiable:
            check = call_tool(session, call, UNICODE_CHECK, settings.timeout_s)
            row.payload["unicode_verified"] = check.text == UNICODE_CHECK[::-1]
    finally:
        shutdown = session.shutdown()
        row.shutdown = {"how": shutdown["how"], "ms": shutdown["ms"]}
        row.orphans += shutdown["orphans"]
        traffic.merge(session.traffic)


def round_trips(session: Session, call: ToolCall, count: int, timeout_s: float) -> dict:
    """``count`` small calls of ``call`` on a warm session, one in flight, nothing else of
    mcpstart running. Returns ``{n, p50, p95, samples}`` in ms (request written to answer
    read; p95 by linear interpolation, null under 20 calls).

    Raises:
        SessionError: a call got no usable answer or its tool reported an error.
    """
    samples = []
    for _ in range(count):
        outcome = call_tool(session, call, SMALL_TEXT, timeout_s)
        if outcome.is_error:
            raise tool_error(call, outcome)
        samples.append((outcome.response.at_ns - outcome.response.sent_ns) / 1e6)
    stats = summarize(samples)
    return {"n": stats["n"], "p50": stats["median"], "p95": stats["p95"], "samples": samples}
