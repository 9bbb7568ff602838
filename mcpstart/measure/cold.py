"""Timed cold starts of the initialize era, with their phases.

Every timed spawn starts the same way (design.md, measurement rules): the previous run fully
reaped, a fixed idle pause, the spawn prepared (as the C harness of benchmarks/ does after
its pause), then the clock."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from ..command import Command
from ..stdio.session import Session, SessionError
from ..wire import SMALL_TEXT, ToolCall, initialize_request
from .client import (ProbeError, Skips, call_tool, chosen_call, initialize_result, list_tools,
                     tool_error)


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
