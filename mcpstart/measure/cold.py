"""Timed cold starts: the initialize era with its phases, and the modern era's first answer
(2026-07-28), each on a fresh spawn through the one timed-start primitive (spawn.py)."""

from __future__ import annotations

from collections.abc import Callable

from ..command import Command
from ..transports.base import Ended, elapsed_ms
from ..transports.session import Session, SessionError, Traffic
from ..wire import SMALL_TEXT, ToolCall, initialize_request
from . import spawn, usage
from .client import (ProbeError, Skips, call_tool, chosen_call, initialize_result, list_tools,
                     result_of, tool_error)
from .settings import Settings


def cold_start(command: Command, settings: Settings, skips: Skips,
               before_spawn: Callable[[], None] = lambda: None) -> dict:
    """One timed cold start with its phases, on a fresh spawn: ``initialize`` (asking
    ``settings.requested_revision``: the handshake), then ``notifications/initialized`` and
    ``tools/list`` to its last page, then one small ``tools/call`` of ``settings.call``
    (None: reverse_text where listed; ``chosen_call``), then the spec's shutdown. Every wait
    is bounded by ``settings.timeout_s``.

    ``before_spawn`` runs before the pause (e.g. evicting the page cache). Phases whose
    method is in ``skips`` are left out; a phase that fails is noted there and left null.

    Returns:
        ``{handshake, first_byte, port, tools_list, first_call, negotiated_revision,
        server_info, capabilities, instructions, tools, usage, shutdown (an Ended), traffic}``:
        the phases in ms
        from just before the spawn (None when not reached; ``port``: the endpoint accepting,
        for a network transport; ``tools_list`` and ``first_call`` by settings.PHASE_RULE),
        ``tools`` the ToolList or None, ``usage`` the tree's resource usage from the spawn to the
        cold start's last answer (usage.at_answer; None with ``settings.attribution`` off).

    Raises:
        SessionError: no valid initialize answer (the run failed; the process is gone).
    """
    sample = {"handshake": None, "first_byte": None, "tools_list": None, "first_call": None,
              "tools": None, "usage": None}
    first = initialize_request(settings.requested_revision)
    with spawn.started([(command, first)], settings, timed=True,
                       before_spawn=before_spawn) as (session,):
        try:
            _phases(session, sample, settings.timeout_s, settings.call, skips,
                    settings.attribution)
        finally:
            sample["first_byte"] = elapsed_ms(session.t0_ns, session.transport.first_byte_ns)
            sample["port"] = elapsed_ms(session.t0_ns, session.transport.accepting_ns)
    sample["shutdown"], sample["traffic"] = session.ended, session.traffic
    return sample


def modern_start(command: Command, settings: Settings, request: dict, what: str,
                 before_spawn: Callable[[], None] = lambda: None
                 ) -> tuple[float | None, Ended | None, Traffic | None, SessionError | None]:
    """One timed modern-era cold start: ``request`` (a ``server/discover`` or a
    ``tools/call`` with the 2026-07-28 envelope) as the very first message of a fresh spawn,
    timed to its answer; ``what`` names it in causes.

    Returns:
        ``(ms, shutdown, traffic, error)``: ms from just before the spawn to the answer
        (None with ``error`` when no usable answer came, the tool reported an error or the
        program could not be started: then shutdown and traffic are None too).
    """
    try:
        with spawn.started([(command, request)], settings, timed=True,
                           before_spawn=before_spawn) as (session,):
            try:
                response = session.wait(1, settings.timeout_s)
                result = result_of(response, what)
                if request["method"] == "tools/call" and result.get("isError") is True:
                    raise ProbeError(f"{what}: the tool reported an error")
                ms, error = elapsed_ms(session.t0_ns, response.at_ns), None
            except SessionError as err:
                ms, error = None, err
    except SessionError as err:  # it could not be started
        return None, None, None, err
    return ms, session.ended, session.traffic, error


def _phases(session: Session, sample: dict, timeout_s: float, call: ToolCall | None,
            skips: Skips, attribution: bool) -> None:
    """The timed part of a cold start (``_timed``); with ``attribution`` the tree's usage is
    read once its last phase is answered, so that no timed phase follows the read (read
    between the initialize answer and tools/list, it slowed the next phases by about half a
    millisecond on the C floor over HTTP: benchmarks/http_clock.py)."""
    try:
        _timed(session, sample, timeout_s, call, skips)
    finally:
        if attribution and sample["handshake"] is not None:
            sample["usage"] = usage.at_answer(session.processes)


def _timed(session: Session, sample: dict, timeout_s: float, call: ToolCall | None,
           skips: Skips) -> None:
    """The phases of a cold start, written into ``sample`` as each ends."""
    response = session.wait(1, timeout_s)
    init = initialize_result(response)
    sample["handshake"] = elapsed_ms(session.t0_ns, response.at_ns)
    sample.update(negotiated_revision=init["protocolVersion"],
                  server_info=init.get("serverInfo"), capabilities=init.get("capabilities"),
                  instructions=init.get("instructions"))
    session.notify("notifications/initialized")
    if "tools/list" not in skips:
        try:
            listing = list_tools(session, timeout_s)
            sample["tools_list"] = sample["handshake"] + listing.answer_ms
            sample["tools"] = listing
        except SessionError as err:
            skips.note("tools/list", err)
    if sample["tools"] is None or (call and f"tools/call {call.name}" in skips):
        return
    try:
        call = chosen_call(call, sample["tools"])
    except ProbeError as err:
        skips.note(f"tools/call {call.name}", err)
        return
    if call and f"tools/call {call.name}" not in skips:
        try:
            outcome = call_tool(session, call, SMALL_TEXT, timeout_s)
            if outcome.is_error:
                raise tool_error(call, outcome)
            sample["first_call"] = sample["tools_list"] + outcome.response.answer_ms
        except SessionError as err:
            skips.note(f"tools/call {call.name}", err)
