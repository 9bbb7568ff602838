"""The Streamable HTTP transport's steps of the run loop (run.py, steps.Steps; the transport
is transports/http.py, made by ``Server.spawning``), filling ``row.http`` (docs/results.md,
``servers[].http``). The loop runs the same probes as for stdio over HTTP:

1. cold starts in rounds: ``http.start_ms.port`` (the port accepting: transports/http.py
   says how it is detected and at what resolution), ``initialize``, ``tools_list``,
   ``first_call``, each cumulative from the spawn (cold.cold_start; past initialize by
   settings.PHASE_RULE, as for stdio);
2. the revision matrix over HTTP (each probe a fresh server, the headers of its era, the
   wait derived from the HTTP cold starts), into ``row.protocol`` as for stdio;
3. the 2026-07-28 cold starts: ``start_ms.discover`` and ``start_ms.modern_first_call`` (a
   stateless tools/call as the very first request);
4. the tool session (warm.tool_session over HTTP: tools, idle memory, the large call,
   round trips on one kept-alive connection).

This module adds: the rows' ``http`` blocks (``prepare``); ``latency_ms``, the tool
session's round-trip series with p99 and mean, and ``session_ms`` and ``sessions_leak``
(session_cost.py) after the tool session (``after_session``); then, once every server's
session is done, load (load.py), the server pinned to its own core from its spawn, and the
ceiling: the same scenarios against the HTTP floor in this run (``ceiling_rps``,
``ceiling_ratio`` and ``engine_bound`` in every row's blocks, load.engine_bound;
``results.load_ceiling``), measured again with the floor answering in each other answer shape
the rows' blocks record (``answer_shape``; ``load_ceiling.by_answer``) (``load_all``).

``endpoint``: where the MCP endpoint is: the URL, or for a spawned server
``http://127.0.0.1:{port}PATH`` (PATH: its recipe's ``run.endpoint`` or ``--endpoint``,
default /mcp; each spawn gets its own port). A server that lists no tool to call (no
reverse_text and no --call) gets the steps that need a call as n/a with the reason, as on
stdio (``http.start_ms.first_call``, ``latency_ms``, ``session_ms``, ``sessions_leak``,
``load``); the rest is measured. A server already running (a URL) gets no start-up figures;
its memory is read where its listener is a process of this machine. A step's failure fails
the row (server.guard) and never loses what came before; errors under load are figures and a
warning, not a failure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from .. import Progress, Step, warnings as warn
from ..command import Command
from ..endpoint import Endpoint
from ..results import Results, ServerResult, dig
from ..stats import latency, summarize_runs
from ..transports.http import PORT
from ..transports.session import Session
from ..wire import ToolCall, initialize_request
from . import load, per_tool, spawn
from .client import NO_TOOL, SeriesErrors, chosen_call, initialize_result, list_tools
from .server import Server, guard
from .session_cost import listener_processes, session_costs
from .settings import Settings
from .steps import Say, Steps

START_PHASES = ("port", "initialize", "tools_list", "first_call")
MODERN = {"discover": "discover", "first_call": "modern_first_call"}
STDIO_BLOCKS = ("handshake_ms", "phases_ms", "modern_ms")
STDIO_SIZING = {"launcher": "a launcher is measured on stdio commands only",
                "dual_era": "the dual-era rule is the stdio transport's; a 2026 client's "
                            "first call over HTTP is http.start_ms",
                "caching": "caching hints are read over stdio only"}


def prepare(live: list[Server], settings: Settings, progress: Progress) -> None:
    """Each row's ``http`` block, its stdio blocks n/a, and a URL's row without start-up."""
    for server in live:
        row = server.row
        row.transport = "http"
        row.http = {"endpoint": server.url or f"http://127.0.0.1:{PORT}{server.endpoint_path}",
                    "start_ms": None, "latency_ms": None, "session_ms": None,
                    "sessions_leak": None, "load": []}
        for block in STDIO_BLOCKS:
            row.skip_block(block, "an HTTP server: its start-up is http.start_ms")
        for block, why in STDIO_SIZING.items():
            row.skip_block(block, why)
        if server.url is not None:
            row.command = {"url": server.url, "header_keys": sorted(server.headers)}
            row.skip_block("http.start_ms", "a server already running (--url): no start-up")


def summarize_series(server: Server) -> None:
    """The runs so far as ``http.start_ms`` stats blocks."""
    key = {"initialize": "handshake"}
    start = {phase: summarize_runs((r[key.get(phase, phase)], r["warmup"])
                                   for r in server.runs) for phase in START_PHASES}
    for series, name in MODERN.items():
        pairs = server.modern[series]
        start[name] = summarize_runs(pairs) if pairs else None
    server.row.http["start_ms"] = start


def after_session(server: Server, settings: Settings, say: Say) -> None:
    """``http.latency_ms`` from the tool session's round trips, a workload's warm per-tool
    figures (per_tool.warm), then the full sessions (none when ``settings.http_sessions``
    is 0: both blocks n/a)."""
    _latency(server.row)
    per_tool.warm(server, settings, say)
    if not settings.http_sessions:
        for block in ("http.session_ms", "http.sessions_leak"):
            server.row.skip_block(block, "no full sessions were asked for (http_sessions 0)")
        return
    say(f"{settings.http_sessions} full sessions")
    guard(server, lambda: _sessions(server, settings))


def _latency(row) -> None:
    """``http.latency_ms`` from the tool session's round trips (one kept-alive connection,
    one call in flight): ``{n, p50, p95, p99, mean, samples}``; n/a where they are."""
    if "round_trip_ms" in row.not_measured:
        row.skip_block("http.latency_ms", row.not_measured["round_trip_ms"])
    samples = (row.round_trip_ms or {}).get("samples")
    if not samples:
        return
    row.http["latency_ms"] = {**latency(samples),
                              **({"errors": row.round_trip_ms["errors"]}
                                 if "errors" in row.round_trip_ms else {})}


def _call(session: Session, settings: Settings, reference: bool = False) -> ToolCall | None:
    """The call of a step that needs one, chosen on ``session`` (initialize answered) as the
    tool session chooses it: ``--call`` (``reference``: reverse_text, for the ceiling's
    floor), else reverse_text where its tools/list lists it, else None (client.chosen_call).

    Raises:
        SessionError: tools/list got no usable answer, or the --call tool cannot be called.
    """
    initialize_result(session.wait(1, settings.timeout_s))
    session.notify("notifications/initialized")
    return chosen_call(None if reference else settings.call,
                       list_tools(session, settings.timeout_s))


def _sessions(server: Server, settings: Settings) -> None:
    """Full sessions on one server (a fresh spawn, or the URL's): their cost and the memory
    slope over them; n/a without a tool to call."""
    first = initialize_request(settings.requested_revision)
    with spawn.started([(server.command, first)], server.spawning(settings),
                       timed=False, traffic=server.traffic) as (session,):
        session.transport.listen()  # each session opens its standalone GET stream
        call = _call(session, settings)
        if call is None:
            for block in ("http.session_ms", "http.sessions_leak"):
                server.row.skip_block(block, NO_TOOL)
            return
        transport = session.transport
        processes = (transport.processes.scan() if transport.processes is not None
                     else listener_processes(transport.endpoint))
        errors = SeriesErrors()
        costs, leak = session_costs(transport, settings, call, processes, errors,
                                    session.traffic)
    server.row.http["session_ms"], server.row.http["sessions_leak"] = costs, leak
    if errors.total:
        server.row.warnings.append(errors.warning("http.session_ms", settings.http_sessions))
    if leak is None:
        server.row.skip_block("http.sessions_leak", "the server's listener is not a process "
                                                    "of this machine that mcpstart can read")


def load_all(servers: list[Server], ceiling: Server | None, settings: Settings,
              results: Results, progress: Progress,
              on_update: Callable[[Results], None]) -> None:
    """Each scenario on each server allowed load, and on the HTTP floor for the ceiling
    (the floor's own row when it is one, else ``ceiling``, loaded only when a row was: a
    ceiling beside no figure is time spent for nothing)."""
    if settings.load_s <= 0:
        return
    if load.engine_version() is None:
        for server in servers:
            server.row.skip_block("http.load", "Locust is not installed (pip install "
                                               "'mcpstart[http]')")
        return
    floor = next((s for s in servers if s.row.name == "c-http"), ceiling)
    order = [s for s in servers if s is not floor] + ([floor] if floor else [])
    for server in order:
        if not server.load_allowed and server is not floor:
            server.row.skip_block("http.load", "not a loopback address: load only with --url "
                                               "and --load-s, never from a config")
            continue
        if server.row.status != "ok" or (server.command is not None and not server.runs
                                         and server is not ceiling):
            continue
        if server is ceiling and not any((s.row.http or {}).get("load") for s in servers):
            continue  # the floor comes last: no row was loaded
        if server.row.http is None:  # the ceiling's floor, not a row
            server.row.http = {"load": []}
        progress(Step(f"{server.row.name}: load, {len(load.SCENARIOS)} scenarios of "
                      f"{settings.load_s:g} s", "load", server.row.name))
        guard(server, lambda s=server: _load(s, settings))
        on_update(results)
    floor_blocks = ((floor.row.http or {}).get("load") or []) if floor is not None else []
    shapes = {b["answer_shape"] for s in servers for b in (s.row.http or {}).get("load") or []}
    others = sorted(shapes - {b["answer_shape"] for b in floor_blocks} - {None})
    by_answer = {shape: _shaped_ceiling(floor, shape, settings, progress) for shape in others
                 if floor_blocks and floor.command is not None}
    if floor_blocks:
        results.load_ceiling = {"server": floor.row.name, "load": floor_blocks,
                                "by_answer": by_answer}
    ceilings = floor_blocks + [b for blocks in by_answer.values() for b in blocks]
    for server in servers + ([floor] if floor_blocks and floor not in servers else []):
        for block in (server.row.http or {}).get("load") or []:
            block.update(load.engine_bound(block, ceilings))
    for server in servers:
        blocks = (server.row.http or {}).get("load") or []
        errors = {b["scenario"]: b["errors"]["total"] for b in blocks if b["errors"]["total"]}
        if errors:
            server.row.warnings.append(warn.load_errors(errors))
        bound = {b["scenario"]: b["rps"] for b in blocks if b["engine_bound"]}
        if bound:
            server.row.warnings.append(warn.load_bound(bound, floor.row.name))


def _shaped_ceiling(floor: Server, shape: str, settings: Settings,
                    progress: Progress) -> list[dict]:
    """The scenarios against the HTTP floor started with ``--answer shape`` (c-http answers
    a request in that shape: servers/c-http/server.c), for the ceiling of the servers that
    answer so (load.engine_bound says why); its blocks, [] where it failed."""
    command = Command([*floor.command.argv, "--answer", shape], floor.command.cwd,
                      floor.command.env, floor.command.base_env)
    shadow = replace(floor, command=command, row=ServerResult(floor.row.name, "http"),
                     ceiling_only=True)
    shadow.row.http = {"load": []}
    progress(Step(f"{floor.row.name} --answer {shape}: load, {len(load.SCENARIOS)} scenarios "
                  f"of {settings.load_s:g} s", "load", floor.row.name))
    guard(shadow, lambda: _load(shadow, settings))
    return shadow.row.http.get("load") or []


def _load(server: Server, settings: Settings) -> None:
    """The scenarios against one server: spawned pinned to its own cores (settings.server_cpus)
    from its spawn (a URL's server as it runs), the engine on the others."""
    server_cpus, engine_cpus = load.cores(settings.server_cpus)
    if server.url is not None:
        server_cpus = None
    first = initialize_request(settings.requested_revision)
    blocks = []
    with spawn.started([(server.command, first)],
                       server.spawning(settings, server_cpus), timed=False) as (session,):
        call = _call(session, settings, reference=server.ceiling_only)
        if call is None:
            server.row.skip_block("http.load", NO_TOOL)
            return
        transport = session.transport
        processes = (transport.processes.scan() if transport.processes is not None
                     else listener_processes(transport.endpoint))
        endpoint: Endpoint = transport.endpoint
        own = replace(settings, workload=None) if server.ceiling_only else settings
        for scenario in load.SCENARIOS:
            try:
                block = load.run_scenario(endpoint, scenario, own, call, processes,
                                          engine_cpus, server_cpus)
                blocks.append({**block, "answer_shape": transport.answer_shape})
            except load.LoadError as err:  # the engine's failure, not the server's
                server.row.skip_block(f"http.load.{scenario}", str(err))
            server.row.http["load"] = blocks


STEPS = Steps("http", (),
              {"handshake": "HTTP cold start", "modern": "HTTP 2026-07-28 cold start",
               "matrix": "revision matrix over HTTP"},
              "http_", prepare, summarize_series, after_session, load_all,
              lambda row: dig(row.http, "start_ms.initialize"))

