"""The startup budget of an editor that starts its servers all at once: every server spawned
in one go, each one's phases timed from the first spawn, the time until the last is ready,
and per server whether it fits each client's startup limit.

"Ready" is what a client waits for before it has a server's tools: ``tools/list`` answered
(to its last page), or ``initialize`` where tools/list gets no answer.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

from .. import Step
from ..transports.base import elapsed_ms
from ..transports.session import Session, SessionError, wait_any
from ..wire import initialize_request, paging_stop
from . import spawn
from .settings import Settings
from ..stats import summarize

LIMITS_S = (3.0, 10.0, 30.0, 60.0)
CLIENTS_BY_LIMIT = {
    3.0: "Cline CLI",
    10.0: "Codex before March 2026",
    20.0: "Continue",
    30.0: "Codex, Claude Code",
    60.0: "Claude Desktop, Zed, Cline (VS Code)",
    600.0: "Gemini CLI",
}
"""Which clients wait how long for a stdio server to start, by default (sources: Codex
codex-rs/codex-mcp/src/rmcp_client.rs DEFAULT_STARTUP_TIMEOUT 30 s, 10 s before
openai/codex#16080; Claude Code's 30000 ms connection timeout, anthropics/claude-code#1611;
Claude Desktop's 60 s initialize timeout, anthropics/claude-code#84136; Zed
crates/context_server/src/client.rs DEFAULT_REQUEST_TIMEOUT 60 s; Continue
core/context/mcp/MCPConnection.ts DEFAULT_MCP_TIMEOUT 20 s; Gemini CLI
packages/core/src/tools/mcp-client.ts MCP_DEFAULT_TIMEOUT_MSEC 600 s; Cline's CLI and SDK core
sdk/packages/core/src/extensions/mcp/client.ts DEFAULT_MCP_CONNECT_TIMEOUT_MS 3000 ms for
initialize when a server sets no ``timeout``; Cline's VS Code extension
apps/vscode/src/services/mcp/McpHub.ts connects within the server's ``timeout``, default
sdk/packages/shared/src/mcp.ts DEFAULT_MCP_TIMEOUT_SECONDS 60 s; cline/cline, Aug 2026)."""


def parse_limits(text: str) -> list[float]:
    """``--budget 10,30,60`` as sorted distinct seconds.

    Raises:
        ValueError: not a list of positive finite seconds (the message quotes the text).
    """
    try:
        limits = sorted({float(v) for v in text.split(",") if v.strip()})
    except ValueError:
        raise ValueError(f"{text!r} is not a list of seconds, e.g. 10,30,60") from None
    if not limits or not all(math.isfinite(v) and v > 0 for v in limits):
        raise ValueError(f"{text!r}: give positive seconds, e.g. 10,30,60")
    return limits


def one_start(servers, settings: Settings) -> dict:
    """Spawn every server of ``servers`` ([(name, Command)]) in one go and follow each to
    ready on its own, as an editor does: ``notifications/initialized`` and ``tools/list``
    (every page) as soon as that server's initialize is answered. Returns ``{name:
    {first_byte, initialize, tools_list}}`` in ms from just before the first spawn (None
    for a phase not reached within ``settings.timeout_s`` of its request).

    Raises:
        SessionError: a server cannot be started (the others are shut down).
    """
    with together(servers, settings) as (_, times):
        return times


@contextmanager
def together(servers, settings: Settings) -> Iterator[tuple[dict[Session, object], dict]]:
    """``one_start`` that keeps the sessions running for the block: yields ``({session:
    key}, times)`` (``servers`` are [(key, Command)], any hashable key; ``times`` as
    one_start returns them) once every server is ready or out of time, and shuts them all
    down when the block ends.

    Raises:
        SessionError: a server cannot be started (the others are shut down).
    """
    first = initialize_request(settings.requested_revision)
    with spawn.started([(command, first) for _, command in servers], settings,
                       timed=True) as started:
        sessions = {session: key for session, (key, _) in zip(started, servers)}
        yield sessions, _follow(sessions, settings)


def _follow(sessions: dict[Session, str], settings: Settings) -> dict:
    start = min(s.t0_ns for s in sessions)
    times = {name: {"first_byte": None, "initialize": None, "tools_list": None}
             for name in sessions.values()}
    waits = {s: (1, s.transport.clock() + settings.timeout_s) for s in sessions}
    paging = {s: (set(), 0, 0) for s in sessions}  # cursors followed, pages, tools
    while waits:
        for session, answer in wait_any(waits).items():
            del waits[session]
            phases = times[sessions[session]]
            if isinstance(answer, SessionError):
                continue
            if phases["initialize"] is None:
                phases["initialize"] = elapsed_ms(start, answer.at_ns)
                session.notify("notifications/initialized")
                cursor = None
            else:
                result = answer.message.get("result")
                result = result if isinstance(result, dict) else {}
                page = result.get("tools")
                seen, pages, tools = paging[session]
                pages, tools = pages + 1, tools + (len(page) if isinstance(page, list) else 0)
                cursor = result.get("nextCursor")
                if cursor is None or paging_stop(cursor, seen, pages, tools):
                    phases["tools_list"] = elapsed_ms(start, answer.at_ns)  # the last page taken
                    continue
                seen.add(cursor)
                paging[session] = (seen, pages, tools)
            request = session.send_request("tools/list",
                                           {"cursor": cursor} if cursor is not None else {})
            waits[session] = (request, session.transport.clock() + settings.timeout_s)
    for session, name in sessions.items():
        times[name]["first_byte"] = elapsed_ms(start, session.transport.first_byte_ns)
    return times


def ready_ms(tools_list: float | None, initialize: float | None) -> float | None:
    """The ready rule (the ``ready_rule`` of the startup block): ms to the last tools/list
    page, else to the initialize answer; None when neither came."""
    return tools_list if tools_list is not None else initialize


def _ready(phases: dict) -> float | None:
    return ready_ms(phases["tools_list"], phases["initialize"])


def measure_startup(servers, settings: Settings, limits: list[float], own_limits: dict[str, float],
                    single_starts: dict[str, list[float]], sequential: dict[str, float],
                    idle: dict[str, tuple[int | None, int | None]],
                    not_started: dict[str, str] | None = None, progress=lambda _: None) -> dict:
    """The ``startup`` block of the results file (docs/results.md#startup).

    Args:
        servers: [(name, Command)] of the servers an editor would start together.
        limits: startup limits in seconds to judge against (``--budget``).
        own_limits: name -> a limit the config sets for that server (Codex
            ``startup_timeout_sec``); it replaces every other limit for that server.
        single_starts: name -> every single cold start's ready time in ms (warm-up
            included), from the per-server series.
        sequential: name -> the median ready time of its own cold starts.
        idle: name -> (idle RSS, idle PSS) in bytes.
        not_started: name -> why a server the editor would start too could not start at all
            (it fits no limit: ``limits[].fits`` False, and ``not_started`` says why).

    Returns:
        ``{sequential_sum_ms, concurrent_ms: <stats>, runs: [{name: {first_byte,
        initialize, tools_list}}], warmup_runs, idle_rss_bytes, idle_pss_bytes,
        ready_rule, limits: [{client, limit_s, fits: {name: bool | None}}], not_started:
        {name: cause}}``. A server fits
        a limit when both its slowest all-at-once start and its slowest single start are
        within it; None when it never got ready.
    """
    runs = []
    for index in range(settings.warmup + settings.runs):
        warm = index < settings.warmup
        progress(Step(f"all servers at once: {'warm-up' if warm else 'run'} "
                      f"{index + 1 if warm else index - settings.warmup + 1}/"
                      f"{settings.warmup if warm else settings.runs}", "startup", None, index,
                      settings.warmup + settings.runs))
        if servers:
            runs.append(one_start(servers, settings))
    counted, warmups = runs[settings.warmup:], runs[:settings.warmup]

    def last_ready(run: dict) -> float | None:
        ready = [_ready(p) for p in run.values()]
        return None if None in ready else max(ready)

    not_started = not_started or {}

    def fits(name: str, limit: float) -> bool | None:
        if name in not_started:
            return False
        slowest = [_ready(run[name]) for run in runs] + list(single_starts.get(name, []))
        return None if None in slowest or not slowest else max(slowest) <= limit * 1000

    started = [name for name, _ in servers]
    names = started + list(not_started)
    table = [{"client": CLIENTS_BY_LIMIT.get(limit, "--budget"), "limit_s": limit,
              "fits": {n: fits(n, limit) for n in names if n not in own_limits}}
             for limit in limits]
    table += [{"client": "set in the config", "limit_s": limit,
               "fits": {n: fits(n, limit) for n in names if own_limits.get(n) == limit}}
              for limit in sorted(set(own_limits.values()))]
    rss = [v[0] for v in idle.values()]
    pss = [v[1] for v in idle.values()]
    return {
        "sequential_sum_ms": (sum(sequential.values()) if started
                              and len(sequential) == len(started) else None),
        "concurrent_ms": summarize([v for r in counted if (v := last_ready(r)) is not None],
                                   [v for r in warmups if (v := last_ready(r)) is not None]),
        "runs": counted, "warmup_runs": warmups,
        "idle_rss_bytes": sum(rss) if rss and None not in rss else None,
        "idle_pss_bytes": sum(pss) if pss and None not in pss else None,
        "ready_rule": "tools/list answered to its last page (initialize where it was not)",
        "limits": table,
        "not_started": {name: short_cause(cause) for name, cause in not_started.items()},
    }


def short_cause(reason: str) -> str:
    """The gist of a failed row's reason for the budget ("exited with code 2 after 92 ms
    before answering"): its first clause, without the run and the request it names."""
    first = reason.split(";", 1)[0].split("\n", 1)[0].split("the server ", 1)[-1]
    return first.rsplit(": ", 1)[-1]
