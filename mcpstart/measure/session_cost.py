"""What one full Streamable HTTP session costs, and whether sessions are freed: ``count``
sessions in a row on one server, each POST initialize, POST notifications/initialized (then
the standalone GET stream opened, as a client does: http_steps asks ``listen``), POST
tools/call, DELETE (2025-11-25, "Session Management"), on the kept-alive connection of
the transport, one request in flight; the server's RSS read before the first and after every
tenth of them, so memory a session never frees shows as a slope (bytes per session, least
squares over the readings).

WARMUP sessions run first, unrecorded, so that what a server allocates once (its first
session's code paths, pools) is not counted as a leak.
"""

from __future__ import annotations

import statistics

import psutil

from ..stats import summarize
from ..endpoint import Endpoint, is_loopback
from ..transports.http import HttpTransport
from ..transports.session import Session, Traffic
from ..wire import SMALL_TEXT, ToolCall, client_info
from .client import HttpStatusError, SeriesErrors, call_tool, initialize_result, tool_error
from .settings import Settings

WARMUP = 5
READINGS = 10


def listener_processes(endpoint: Endpoint) -> list[psutil.Process]:
    """The process listening on ``endpoint``'s port on this machine, with its descendants:
    [] for another host or when it cannot be found (another user's process)."""
    if not is_loopback(endpoint.host):
        return []
    try:
        found = [c.pid for c in psutil.net_connections("tcp")
                 if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == endpoint.port
                 and c.pid]
    except psutil.Error:
        return []
    procs = []
    for pid in dict.fromkeys(found):
        try:
            proc = psutil.Process(pid)
            procs += [proc, *proc.children(recursive=True)]
        except psutil.Error:
            continue
    return procs


def rss(processes: list[psutil.Process]) -> int | None:
    """Summed RSS in bytes of ``processes`` still running; None when none is."""
    total, seen = 0, False
    for proc in processes:
        try:
            total += proc.memory_info().rss
            seen = True
        except psutil.Error:
            continue
    return total if seen else None


def one_session(transport: HttpTransport, settings: Settings, call: ToolCall,
                traffic: Traffic | None = None) -> tuple[float, int | None, dict[str, float]]:
    """A full session on ``transport``: returns its ms (initialize sent to DELETE answered),
    the DELETE's HTTP status (405: the server keeps sessions until they expire) and
    ``{"initialize": ms, "tools/call": ms}``, each request from going out to its answer
    (Response.call_ms: the call after the notification's 202, as a client sends it). What
    the session saw that was irregular is added to ``traffic`` (the row's), also when it
    fails.

    Raises:
        SessionError: a request got no usable answer, or the tool reported an error.
    """
    transport.new_session()
    session = Session(transport, settings.waits)
    if traffic is not None:
        session.traffic = traffic
    start = transport.now_ns()
    init = session.request("initialize", {
        "protocolVersion": settings.requested_revision, "capabilities": {},
        "clientInfo": client_info()}, settings.timeout_s)
    initialize_result(init)
    session.notify("notifications/initialized")
    outcome = call_tool(session, call, SMALL_TEXT, settings.timeout_s)
    if outcome.is_error:
        raise tool_error(call, outcome)
    status = transport.end_session(settings.timeout_s)
    return (transport.now_ns() - start) / 1e6, status, {
        "initialize": init.call_ms, "tools/call": outcome.response.call_ms}


def session_costs(transport: HttpTransport, settings: Settings, call: ToolCall,
                  processes: list[psutil.Process], errors: SeriesErrors,
                  traffic: Traffic | None = None) -> tuple[dict, dict | None]:
    """``settings.http_sessions`` full sessions (module doc), each calling ``call``. Returns ``(session_ms,
    sessions_leak)``: a stats block in ms (with ``errors``, {total, by_class}, when an HTTP
    error status failed some counted sessions: each counted in ``errors``, the others
    timed); ``{sessions, delete_status, rss_before_bytes, rss_after_bytes,
    bytes_per_session, points: [[sessions, rss_bytes]]}``, None when the server's processes
    cannot be read.

    Raises:
        SessionError: as ``one_session`` (but a counted session's HTTP error status, unless
            every one got one); the sessions before it are lost with it.
    """
    count = settings.http_sessions
    for _ in range(WARMUP):
        try:
            one_session(transport, settings, call, traffic)
        except HttpStatusError:  # a warm-up's error, as its time, is not kept
            transport.end_session(settings.timeout_s)
    step = max(count // READINGS, 1)
    points = [[0, rss(processes)]] if processes else []
    times, statuses = [], set()
    for n in range(1, count + 1):
        try:
            ms, status, _ = one_session(transport, settings, call, traffic)
        except HttpStatusError as err:
            errors.count(err)
            if errors.total == count:
                raise
            transport.end_session(settings.timeout_s)  # the failed session's, if it began
            continue
        times.append(ms)
        statuses.add(status)
        if processes and (n % step == 0 or n == count):
            points.append([n, rss(processes)])
    leak = None
    points = [p for p in points if p[1] is not None]
    if len(points) >= 2:
        xs, ys = [p[0] for p in points], [p[1] for p in points]
        slope = statistics.linear_regression(xs, ys).slope if len(set(xs)) > 1 else None
        leak = {"sessions": count, "delete_status": sorted(s for s in statuses if s is not None),
                "rss_before_bytes": ys[0], "rss_after_bytes": ys[-1],
                "bytes_per_session": slope, "points": points}
    stats = summarize(times)
    if errors.total:
        stats["errors"] = errors.record()
    return stats, leak
