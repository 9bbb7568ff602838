"""One warm session per server: the tools, idle memory, a tool call with a large payload and
warm round trips, these spread over more sessions (warm_sessions.py)."""

from __future__ import annotations

from collections.abc import Callable

from .. import warnings as warn
from ..command import Command
from ..stats import summarize
from ..transports.session import Exited, NoAnswer, Session, SessionError, Traffic
from ..wire import (SMALL_TEXT, UNICODE_CHECK, ToolCall, initialize_request,
                    payload_text)
from ..results import ServerResult
from . import memory, spawn, warm_sessions
from .client import (NO_TOOL, HttpStatusError, ProbeError, SeriesErrors, Skips, TooLarge,
                     call_tool, chosen_call, initialize_result, list_tools, tool_error)
from .settings import Settings


def tool_session(command: Command, settings: Settings, row: ServerResult, skips: Skips, traffic: Traffic,
                 progress: Callable[..., None] = lambda *_: None) -> None:
    """One warm session, filling ``row`` (a results.ServerResult) step by step so that a
    failure keeps everything measured before it (docs/faults.md, family 15): initialize,
    ``notifications/initialized`` (over HTTP the standalone GET stream opened after it:
    Transport.listen), ``tools/list`` (all pages: the ``tools`` block), idle
    memory once settled (``memory``), the large call twice: once timed with nothing else of mcpstart
    running, its processes' high-water marks reset before and read after (``payload``; the
    exact peak of a one-process server), once again with the marks reset and the process set
    sampled (the peak of a tree, processes born and gone inside the call included), a
    Unicode check for reverse_text, and the spec's shutdown (``shutdown``, ``orphans``; also
    on failure). Then the warm round trips (``round_trip_ms``): ``settings.round_trips``
    small calls one at a time, spread over ``settings.warm_sessions`` sessions
    (warm_sessions.py): this one, after the large call, then fresh starts.

    Raises:
        SessionError: a step got no usable answer; the row keeps what came before.
    """
    first = initialize_request(settings.requested_revision)
    series, shares = warm_sessions.Series(), warm_sessions.shares(settings.round_trips,
                                                                  settings.warm_sessions)
    try:
        with spawn.started([(command, first)], settings, timed=False) as (session,):
            session.transport.listen()  # untimed: the server's own streams are open (HTTP)
            try:
                call = _steps(session, settings, row, skips, progress, series, shares[:1])
            finally:
                ended = session.shutdown()
                row.shutdown = {"how": ended.how, "ms": ended.ms}
                row.orphans += ended.orphans
                traffic.merge(session.traffic)
        if series.sessions and row.status == "ok":
            _more_sessions(command, settings, row, traffic, call, series, shares[1:], progress)
    finally:
        row.warnings += series.warnings("round_trip_ms", settings.round_trips)


def _more_sessions(command: Command, settings: Settings, row: ServerResult, traffic: Traffic,
                   call: ToolCall, series: warm_sessions.Series, shares: list[int],
                   progress: Callable[..., None]) -> None:
    """The warm round trips' later sessions (warm_sessions): per share, a fresh start
    (initialize, ``notifications/initialized``), the share's round trips;
    ``round_trip_ms`` is updated after each. A session that fails fails the row and keeps
    the figure of those before it."""
    first = initialize_request(settings.requested_revision)
    for index, share in enumerate(shares, 2):
        progress(f"warm round trips, session {index} of {len(shares) + 1}")
        with spawn.started([(command, first)], settings, timed=False,
                           traffic=traffic) as (session,):
            session.transport.listen()
            try:
                initialize_result(session.wait(1, settings.timeout_s))
                session.notify("notifications/initialized")
                _counted(session, settings, row, call, series, share)
            except SessionError as err:
                row.fail(f"warm round trips, session {index}: {err}")
                return
            finally:
                row.orphans += session.shutdown().orphans


def _steps(session: Session, settings: Settings, row: ServerResult, skips: Skips,
           progress: Callable[..., None], series: warm_sessions.Series,
           shares: list[int]) -> ToolCall | None:
    """The steps of ``tool_session`` on a started session, in order; ``progress(text)``
    names each, ``progress(text, "settle")`` the idle-memory wait, which times nothing and
    may last the settle rule's ``max_s`` (a progress display keeps it alive meanwhile).
    The warm round trips' first session (``shares``: its count, or none) goes in
    ``series``. Returns the small call (None: none was chosen)."""
    init = initialize_result(session.wait(1, settings.timeout_s))
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
        capabilities = init.get("capabilities")
        if not (isinstance(capabilities, dict) and "tools" in capabilities):
            row.warnings.append(warn.no_tools_capability())
    processes = session.processes
    if processes is None:
        row.skip_block("memory", "the transport has no process of the server to read")
    else:
        progress("idle memory", "settle")
        curve = memory.Curve()
        try:
            settled, waited = memory.settle(processes, session.serve, settings.settle, curve)
        except Exited as err:  # an idle watchdog: no idle figure of a process that is gone
            row.skip_block("memory", str(err))
            raise
        row.memory = memory.idle_block(memory.idle_rows(processes), waited, settings.settle,
                                       settings.sampling, memory.sharing(processes))
        row.memory["settle_curve"] = curve.record()
        if not settled:
            row.warnings.append(warn.unsettled(waited))
    if listing is None:
        return None
    if call_error:
        raise call_error
    unanswered = call is not None and f"tools/call {call.name}" in skips.unanswered
    if unanswered:  # it got no answer in a cold start: not waited for again
        cause = skips.causes[f"tools/call {call.name}"]
        row.skip_block("payload", cause)
        row.skip_block("round_trip_ms", cause)
        return call
    if call is None:
        row.skip_block("payload", NO_TOOL)
        row.skip_block("round_trip_ms", "no tool to call")
        return None
    try:  # first, from the idle state: the round trips' growth is not in its peak
        _large_call(session, settings, row, call, processes, progress)
    except (Exited, NoAnswer):
        raise
    except SessionError as err:  # the server still answers: the round trips are measured
        _round_trips(session, settings, row, call, progress, series, shares)
        raise err
    _round_trips(session, settings, row, call, progress, series, shares)
    return call


def _large_call(session: Session, settings: Settings, row: ServerResult, call: ToolCall,
                processes, progress: Callable[[str], None]) -> None:
    """The large call twice (its round trip and exact marks, then the sampled peak) and the
    Unicode check, from the idle session: ``memory.before_call_rss_bytes`` is the tree's RSS
    just before it. A payload refused as too large (HTTP 413) is halved and sent again, at
    most HALVINGS times (``_sized_call``); a call whose arguments place no payload is not
    made large (n/a)."""
    if not call.carries_payload:
        for block in ("payload", "memory.before_call_rss_bytes", "memory.peak_rss_bytes_payload"):
            row.skip_block(block, f"{call.origin} places no {{payload}}: no large call")
        return
    found = _sized_call(session, settings, row, call, processes, progress)
    if found is None:
        return
    text, outcome, refused, first_marks = found
    if processes is not None:
        row.memory["peak_state"] = "the idle session, before the warm round trips"
    row.payload = {"tool": call.name, "request_bytes": len(text),
                   "response_bytes": outcome.response.size_bytes,
                   "round_trip_ms": outcome.response.answer_ms,
                   "verified": (outcome.text == text[::-1]
                                if call.verifiable and not outcome.is_error else None),
                   "unicode_verified": None, "is_error": outcome.is_error, "refused": refused}
    row.tools["structured_content"] = "structuredContent" in outcome.result
    if outcome.is_error:
        raise tool_error(call, outcome)
    if processes is not None:
        progress(f"memory during tools/call {call.name}")
        row.memory.update(memory.peak_during(
            processes, lambda: call_tool(session, call, text, settings.timeout_s),
            row.memory["processes"], first_marks, settings.sampling))
        row.warnings += memory.peak_warnings(row.memory)
    if call.verifiable:
        check = call_tool(session, call, UNICODE_CHECK, settings.timeout_s)
        reversed_ = check.text == UNICODE_CHECK[::-1]
        if not reversed_ and check.response.invalid_utf8:  # an encoding finding
            raise ProbeError(f"tools/call {call.name}: the answer to the emoji / combining mark "
                             f"check {check.response.invalid_utf8}; no client reads the "
                             "reversed text from it")
        row.payload["unicode_verified"] = reversed_


HALVINGS = 10
"""How many times a payload refused as too large is halved before the large call is n/a
(5 MiB down to 5 KiB)."""


def _sized_call(session: Session, settings: Settings, row: ServerResult, call: ToolCall,
                 processes, progress: Callable[[str], None]):
    """The timed large call with ``settings.payload_bytes`` of text, halved after each
    refusal with HTTP 413 (client.TooLarge), at most HALVINGS times; before each try the
    processes' marks are reset and their RSS read into ``row.memory``
    (``before_call_rss_bytes``: the last try's).

    Returns:
        ``(text, outcome, refused, first_marks)``: the text the server took, its CallResult,
        ``[{request_bytes, cause}]`` for each refused try in order, the VmHWM marks after it
        (None when they could not be reset); or None when every size was refused: then
        ``payload`` is ``{tool, refused}``, and it and the peak are n/a (the sizes tried in
        the reason).

    Raises:
        SessionError: the call got no usable answer for another reason.
    """
    text, refused = payload_text(settings.payload_bytes), []
    while True:
        progress(f"tools/call {call.name} with {len(text)} bytes")
        if processes is not None:
            row.memory["before_call_rss_bytes"] = memory.tree_rss(processes)
        exact = processes is not None and memory.reset_high_water_marks(processes)
        try:
            outcome = call_tool(session, call, text, settings.timeout_s)
        except TooLarge as err:
            refused.append({"request_bytes": len(text), "cause": str(err)})
            if len(refused) > HALVINGS or len(text) < 2:
                why = (f"the server refused every payload from {refused[0]['request_bytes']} "
                       f"down to {len(text)} bytes ({len(refused)} tries): {err}")
                for block in ("payload", "memory.peak_rss_bytes_payload"):
                    row.skip_block(block, why)
                row.payload = {"tool": call.name, "refused": refused}
                return None
            text = text[:len(text) // 2]
            continue
        return text, outcome, refused, memory.high_water_marks(processes) if exact else None


def _round_trips(session: Session, settings: Settings, row: ServerResult, call: ToolCall,
                 progress: Callable[[str], None], series: warm_sessions.Series,
                 shares: list[int]) -> None:
    """The warm round trips' first session (``_counted``); an answer no client can use fails
    the row and leaves them not measured."""
    if not shares:
        row.skip_block("round_trip_ms", "--round-trips 0")
        return
    progress(f"{settings.round_trips} warm round trips")
    try:
        _counted(session, settings, row, call, series, shares[0])
    except (Exited, NoAnswer):
        raise
    except SessionError as err:
        row.fail(str(err))
        row.skip_block("round_trip_ms", str(err))


def _counted(session: Session, settings: Settings, row: ServerResult, call: ToolCall,
             series: warm_sessions.Series, count: int) -> None:
    """On one session: ``count`` counted calls added to ``series`` (no warm-up: the reference
    table's round trips are the first calls of each session after its start's own, as
    they were on one session); ``round_trip_ms`` becomes the series so far:
    ``{n, p50, p95, samples}`` over all its sessions' calls (``round_trips``), their
    ``sessions`` (warm_sessions.Series.record) and ``errors`` when an HTTP error status
    failed some.

    Raises:
        SessionError: as ``round_trips``.
    """
    series.add(round_trips(session, call, count, settings.timeout_s, series.errors)["samples"],
               None)
    stats = summarize(series.samples)
    row.round_trip_ms = {"n": stats["n"], "p50": stats["median"], "p95": stats["p95"],
                         "samples": series.samples, "sessions": series.record()}
    if series.errors.total:
        row.round_trip_ms["errors"] = series.errors.record()


def round_trips(session: Session, call: ToolCall, count: int, timeout_s: float,
                errors: SeriesErrors | None = None) -> dict:
    """``count`` small calls of ``call`` on a warm session, one in flight, nothing else of
    mcpstart running. Returns ``{n, p50, p95, samples}`` in ms (request written to answer
    read; p95 by linear interpolation, null under 20 calls), and ``errors`` ({total,
    by_class}) when an HTTP error status failed some calls (counted in ``errors``, which may
    hold a series' earlier ones; ``n`` counts the others).

    Raises:
        SessionError: a call got no usable answer or its tool reported an error; every
            call failed with an HTTP error status (the first one's).
    """
    samples, errors = [], errors if errors is not None else SeriesErrors()
    before = errors.total
    for _ in range(count):
        try:
            outcome = call_tool(session, call, SMALL_TEXT, timeout_s)
        except HttpStatusError as err:
            errors.count(err)
            if errors.total - before == count:
                raise
            continue
        if outcome.is_error:
            raise tool_error(call, outcome)
        samples.append(outcome.response.answer_ms)
    stats = summarize(samples)
    block = {"n": stats["n"], "p50": stats["median"], "p95": stats["p95"], "samples": samples}
    if errors.total:
        block["errors"] = errors.record()
    return block
