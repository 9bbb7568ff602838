"""A workload's per-tool figures (workload.py; docs/workloads.md), in the row's ``workload``
block ``{shape, tools: {NAME: {warm_ms, warmup, cold_first_call_ms}}, initialize_ms}``:

- ``warm_ms``: ``settings.round_trips`` counted calls of each tool, one in flight, after
  uncounted ones until their times stop falling (warmup.py; ``warmup``: ``{calls,
  settled}``, and a warning when a bound ended it unsettled), on a server started for them
  after the tool session: over stdio, and over HTTP with the shape "shared", on one session
  (warm.round_trips); over HTTP with the shape "per-call", each call in a full session of
  its own (initialize, notifications/initialized, the call, DELETE:
  session_cost.one_session), the call's own time, the sessions' initialize times making ``initialize_ms`` (the reference the shared
  floor rule, shared_floor.py, compares the tools with);
- ``cold_first_call_ms`` (stdio): per tool, cold starts whose first call is that tool
  (cold.cold_start with that call: spawn to its answer, by settings.PHASE_RULE), in the run
  loop's rounds as the series "workload";
- under load, the engine names each tool's calls ``tools/call NAME``
  (``http.load[].by_request``, locust_mcp.py).

A tool whose calls fail leaves its figure null with the cause in ``not_measured`` and fails
the row; the other tools are still measured.
"""

from __future__ import annotations

from dataclasses import replace

from .. import warnings as warn
from ..results import ServerResult
from ..stats import latency, summarize_runs
from ..transports.session import Exited, NoAnswer, SessionError
from ..wire import initialize_request
from . import spawn, warm_sessions, warmup
from .client import (HttpStatusError, SeriesErrors, Skips, chosen_call, initialize_result,
                     list_tools)
from .cold import cold_start
from .server import Server, guard
from .session_cost import one_session
from .settings import Settings
from .steps import Say
from .warm import round_trips


def block(row: ServerResult, settings: Settings) -> dict:
    """The row's ``workload`` block, made empty (every figure null) on first use."""
    if row.workload is None:
        row.workload = {"shape": settings.workload.shape, "initialize_ms": None,
                        "tools": {c.name: {"warm_ms": None, "warmup": None,
                                           "cold_first_call_ms": None}
                                  for c in settings.workload.calls}}
    return row.workload


def warm(server: Server, settings: Settings, say: Say) -> None:
    """Each tool's ``warm_ms`` (and over HTTP per-call ``initialize_ms``) on a fresh start of
    ``server`` (module doc); nothing without a workload or with ``--round-trips 0`` (then
    n/a)."""
    if settings.workload is None:
        return
    found = block(server.row, settings)
    if not settings.round_trips:
        for call in settings.workload.calls:
            server.row.skip_block(f"workload.tools.{call.name}.warm_ms", "--round-trips 0")
        return
    per_call = server.transport == "http" and settings.workload.shape == "per-call"
    say(f"{settings.round_trips} warm calls of each of {len(settings.workload.calls)} tools"
        + (", each in a session of its own" if per_call else ""))
    guard(server, lambda: _warm(server, server.spawning(settings), found, per_call))


def _warm(server: Server, settings: Settings, found: dict, per_call: bool) -> None:
    """The warm series of every tool on ``settings.warm_sessions`` fresh starts of the
    server (warm_sessions.shares of the counted calls each), each tool warmed up in each;
    the figures are updated after every start, so a start that fails keeps the ones before.
    A tool that failed is not called again."""
    calls, failed, inits = settings.workload.calls, set(), []
    series = {call.name: warm_sessions.Series() for call in calls}
    first = initialize_request(settings.requested_revision)
    for share in warm_sessions.shares(settings.round_trips, settings.warm_sessions):
        with spawn.started([(server.command, first)], settings, timed=False,
                           traffic=server.traffic) as (session,):
            initialize_result(session.wait(1, settings.timeout_s))
            session.notify("notifications/initialized")
            listing = list_tools(session, settings.timeout_s)
            for call in (c for c in calls if c.name not in failed):
                try:
                    chosen_call(call, listing)  # a tool it does not list, or arguments missing
                    warmed = warmup.warm_up(
                        (lambda: _warm_session(session, settings, call)) if per_call
                        else (lambda: _warm_call(session, call, settings.timeout_s)))
                    if per_call:
                        times = _sessions(session, settings, call, share,
                                          series[call.name].errors)
                        inits += [t["initialize"] for t in times]
                        samples = [t["tools/call"] for t in times]
                    else:
                        samples = round_trips(session, call, share, settings.timeout_s,
                                              series[call.name].errors)["samples"]
                except (Exited, NoAnswer):
                    raise
                except SessionError as err:
                    failed.add(call.name)
                    server.row.fail(str(err))
                    if not series[call.name].sessions:
                        server.row.skip_block(f"workload.tools.{call.name}.warm_ms", str(err))
                    continue
                series[call.name].add(samples, warmed)
        for call in calls:
            found["tools"][call.name].update(_figures(series[call.name]))
        found["initialize_ms"] = latency(inits) if inits else None
    for call in calls:
        server.row.warnings += series[call.name].warnings(
            f"workload.tools.{call.name}.warm_ms", settings.round_trips)


def _figures(series: warm_sessions.Series) -> dict:
    """A tool's ``warm_ms`` (stats.latency of all its sessions' calls, their ``sessions``,
    and ``errors`` when an HTTP error status failed some) and ``warmup``
    (Series.warmed); nothing before its first session measured it."""
    if not series.sessions:
        return {}
    figure = {**latency(series.samples), "sessions": series.record()}
    if series.errors.total:
        figure["errors"] = series.errors.record()
    return {"warm_ms": figure, "warmup": series.warmed()}


def _warm_call(session, call, timeout_s: float) -> float | None:
    """One uncounted call on the warm session: its ms, None when an HTTP error status failed
    it (warmup.warm_up's ``once``)."""
    try:
        return round_trips(session, call, 1, timeout_s)["samples"][0]
    except HttpStatusError:
        return None


def _warm_session(session, settings: Settings, call) -> float | None:
    """One uncounted full session calling ``call``: the session's ms (initialize to DELETE:
    what the warm-up's time bound bounds), None when an HTTP error status failed it
    (warmup.warm_up's ``once``)."""
    try:
        return one_session(session.transport, settings, call, session.traffic)[0]
    except HttpStatusError:
        session.transport.end_session(settings.timeout_s)
        return None


def _sessions(session, settings: Settings, call, count: int,
              errors: SeriesErrors) -> list[dict]:
    """``count`` counted full sessions calling ``call`` (session_cost.one_session): each
    one's ``{initialize, tools/call}`` ms; a session an HTTP error status failed is counted
    in ``errors`` and left out.

    Raises:
        SessionError: as one_session (an HTTP error status only when every one of these
            ``count`` sessions got one).
    """
    times, before = [], errors.total
    for _ in range(count):
        try:
            _, _, parts = one_session(session.transport, settings, call, session.traffic)
        except HttpStatusError as err:
            session.transport.end_session(settings.timeout_s)
            errors.count(err)
            if errors.total - before == count:
                raise
            continue
        times.append(parts)
    return times


def cold_run(server: Server, settings: Settings, warmup: bool, what: str) -> None:
    """One cold start per tool of the workload whose first call is that tool (the run loop's
    series "workload"); a start whose call fails leaves that run's figure out and notes the
    cause (``not_measured``), the other tools go on."""
    block(server.row, settings)
    for call in settings.workload.calls:
        skips = Skips()
        sample = cold_start(server.command, replace(settings, call=call), skips,
                            server.before_spawn)
        server.traffic.merge(sample["traffic"])
        server.row.orphans += sample["shutdown"].orphans
        server.tool_firsts.setdefault(call.name, []).append((sample["first_call"], warmup))
        for cause in skips.causes.values():
            server.row.skip_block(f"workload.tools.{call.name}.cold_first_call_ms",
                                  f"{what}: {cause}")


def summarize(server: Server) -> None:
    """The per-tool cold starts so far as each tool's ``cold_first_call_ms`` stats block."""
    if not server.tool_firsts:
        return
    tools = server.row.workload["tools"]
    for name, pairs in server.tool_firsts.items():
        tools[name]["cold_first_call_ms"] = summarize_runs(pairs)
