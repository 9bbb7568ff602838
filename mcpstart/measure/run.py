"""A measurement run over several servers: the revision matrix, the cold-start series (in
interleaved rounds or one server after another), then one tool session per server, with the
results file rewritten after every round and every server.

Per-server figures are measured one server at a time, never two at once (design.md).
"""

from __future__ import annotations

import os
import random
import signal
from collections.abc import Callable
from datetime import datetime, timezone

from .. import Progress, Step, __version__, warnings as warn
from ..results import Results, ServerResult, dig, is_floor
from ..stats import series_warnings, summarize
from ..transports.session import SessionError
from ..wire import SMALL_TEXT, initialize_request, modern_request
from . import caching_hints, dual_era, launcher, machine, revisions, spawn
from .matrix import first_start, matrix, none_supported
from .server import Server, _call_of, _could_not_start, _guard
from .cold import cold_start, modern_start
from .settings import Settings
from .warm import tool_session

PHASES = ("first_byte", "tools_list", "first_call")
NOTIFICATION_FLOOD = 1000
"""Notifications over a row's sessions from which they are called a flood (a client shows
a handful of log lines; thousands are work it must do before it can serve the user)."""


def new_results(argv: list[str], settings: Settings, order: str,
                toolchains: dict[str, str]) -> Results:
    """An empty Results for this run, with the machine's metadata."""
    return Results(created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                   mcpstart_version=__version__, argv=argv,
                   environment=machine.describe(toolchains), settings=settings.record(order))


def run_order(names: list[str], rounds: int, order: str, seed: int,
              server_of: Callable[[str], str] = str) -> list[tuple[int, str]]:
    """The cold-start runs as (round, name) in the order they run; ``server_of(name)`` is the
    server a series belongs to (a launched server's direct and offline series are its own).
    "interleave": every round runs each name once, in an order shuffled per round by
    ``random.Random(seed)``; "sequential": all rounds of one server, then the next, its own
    series sharing each round as "interleave" orders them. A series never runs apart from
    the one it is compared with: the machine's drift between series would read as their
    difference. The shuffle, not a fixed order, because a fixed order puts one series after
    the other in every round, so a steady drift adds one start's worth of it to every
    paired difference, always with the same sign."""
    if order == "sequential":
        groups: dict[str, list[str]] = {}
        for name in names:
            groups.setdefault(server_of(name), []).append(name)
        return [run for group in groups.values()
                for run in run_order(group, rounds, "interleave", seed)]
    rng = random.Random(seed)
    sequence = []
    for r in range(rounds):
        shuffled = list(names)
        rng.shuffle(shuffled)
        sequence += [(r, name) for name in shuffled]
    return sequence


def measure(servers: list[Server], settings: Settings, argv: list[str],
            toolchains: dict[str, str], progress: Progress = lambda _: None,
            on_update: Callable[[Results], None] = lambda _: None,
            budget: list[float] | None = None, sessions: int | None = None) -> Results:
    """Measure ``servers`` and return the Results; ``on_update`` gets them after every round
    and every tool session (the CLI rewrites the results file there). With ``budget``
    (startup limits in seconds) the servers that started are also started all at once, as
    an editor does, and judged against the limits (``results.startup``); with ``sessions``
    (N), N copies of each are started all at once too (``results.startup["sessions"]``,
    sessions.py).

    A server whose step fails keeps everything measured before (status "failed", the cause
    in ``reason``); the other servers go on. Never raises for a server's misbehaviour.
    """
    ceiling = next((s for s in servers if s.ceiling_only), None)
    servers = [s for s in servers if not s.ceiling_only]
    order = settings.order or ("interleave" if len(servers) > 1 else "sequential")
    results = new_results(argv, settings, order, toolchains)
    results.servers = [s.row for s in servers]
    try:
        _measure(servers, settings, order, results, progress, on_update, budget, sessions)
        _measure_http(servers, ceiling, settings, order, results, progress, on_update)
        if sessions is not None:
            _shared(servers, sessions, settings, results, progress, on_update)
    except SystemExit as stop:  # an exit signal (interrupts.py): keep what was measured
        if isinstance(stop.code, int) and stop.code > 128:
            name = signal.Signals(stop.code - 128).name
            results.interrupted = f"stopped by {name}; the rows hold what was measured before it"
            for server in servers:
                if server.row.status == "ok" and server.command is not None and not server.done:
                    server.row.status, server.row.reason = "interrupted", cut_short(
                        server, settings.runs, name)
            on_update(results)
        raise
    return results


def cut_short(server: Server, runs: int, signal_name: str) -> str:
    """The reason of a row an exit signal stopped before its last step: "cut short by SIGINT
    after 1 of 6 cold starts; not measured: revision matrix, tool session", or "...; stopped
    in the tool session" when its idle memory was already read."""
    counted = sum(1 for run in server.runs if not run.get("warmup"))
    missing = ["revision matrix"] if "matrix" not in (server.row.protocol or {}) else []
    missing += ["tool session"] if server.row.memory is None else []
    return (f"cut short by {signal_name} after {counted} of {runs} cold starts"
            + (f"; not measured: {', '.join(missing)}" if missing
               else "; stopped in the tool session"))


def _measure(servers: list[Server], settings: Settings, order: str, results: Results,
             progress: Progress, on_update: Callable[[Results], None],
             budget: list[float] | None, sessions: int | None) -> None:
    """The steps of ``measure``, in order, filling ``results``."""
    for server in servers:
        server.row.protocol = {"requested_revision": settings.requested_revision,
                               "negotiated_revision": None}
        if server.command is not None:
            server.row.command = server.command.record()
    live = [s for s in servers if s.measurable and s.transport == "stdio"]
    if settings.cache_state == "cold":
        for server in live:
            _guard(server, lambda s=server: _cold_cache(s, settings))
        live = [s for s in live if s.measurable]  # unevicted runs must not pass as cold
    on_update(results)
    _resolve_launchers(live, settings, progress)
    # the cold starts come first: a warm-up run, with the whole --timeout, absorbs a first
    # npx/uvx download, which a short protocol probe would cut off (and npx's cache with it)
    _cold_starts(live, settings, order, results, progress, on_update, "handshake")
    for index, server in enumerate(live, 1):
        if not _could_not_start(server):
            progress(Step(f"[{index}/{len(live)}] {server.row.name}: revision matrix",
                          "matrix", server.row.name))
            _guard(server, lambda s=server: matrix(s, settings, "cold start"))
    modern = [s for s in live if revisions.speaks_modern(s.row.protocol)]
    _cold_starts(modern, settings, order, results, progress, on_update, "modern")
    _cold_starts([s for s in live if not _could_not_start(s)], settings, order, results,
                 progress, on_update, "dual")
    for index, server in enumerate(live, 1):
        if not _could_not_start(server):
            step = lambda text, n=server.row.name: progress(
                Step(f"[{index}/{len(live)}] {n}: {text}", "session", n))
            _guard(server, lambda s=server: tool_session(s.command, settings, s.row, s.skips,
                                                         s.traffic, step))
            step("caching hints")
            _sizing(server, settings)
        _finish(server, settings, results.environment,
                floor_of(live, lambda row: row.handshake_ms))
        server.done = True
        on_update(results)
    started = [s for s in live if not _could_not_start(s)]
    if budget is not None and live:
        progress(Step(f"{len(started)} server(s) started all at once, as an editor does",
                      "startup"))
        _guard_startup(started, [s for s in live if s not in started], settings, budget,
                       results, progress)
        on_update(results)
    if sessions is not None and started:
        from .copies import guarded, measure_sessions

        progress(Step(f"{sessions} copies of {len(started)} server(s) started all at once, "
                      "as that many sessions do", "startup"))
        copies = [(s.row.name, s.command) for s in started]
        results.startup = {**(results.startup or {}), "sessions": guarded(
            measure_sessions, copies, sessions, settings, progress)}
        on_update(results)


def _measure_http(servers: list[Server], ceiling: Server | None, settings: Settings,
                  order: str, results: Results, progress: Progress,
                  on_update: Callable[[Results], None]) -> None:
    """The Streamable HTTP servers' steps (http_steps.py), then each one's row finished."""
    from .http_steps import measure_http

    live = [s for s in servers if s.measurable and s.transport == "http"]
    if not live:
        return
    for server in servers:
        if server.transport == "stdio":
            server.row.skip_block("http", "a stdio server (its figures are the stdio rows)")
    measure_http(live, ceiling, settings, order, results, progress, on_update)
    floor = floor_of(live, lambda row: dig(row.http, "start_ms.initialize"))
    for server in live:
        _finish(server, settings, results.environment, floor)
        server.done = True
    on_update(results)


def _shared(servers: list[Server], n: int, settings: Settings, results: Results,
            progress: Progress, on_update: Callable[[Results], None]) -> None:
    """One HTTP process for ``n`` sessions (shared_process.py), for each spawned HTTP server that
    started, set beside the ``n`` stdio copies of the same language's server
    (``startup.sessions.shared[NAME].stdio_peer``)."""
    from . import shared_process
    from .copies import guarded

    http = [s for s in servers if s.transport == "http" and s.command is not None
            and s.measurable]
    if not http:
        return
    peers = {s.row.language: s.row.name for s in servers
             if s.transport == "stdio" and s.row.language}
    block = {"n": n, **(results.startup or {}).get("sessions", {}), "shared": {}}
    for server in http:
        progress(Step(f"{server.row.name}: one process serving {n} sessions at once", "startup"))
        found = guarded(shared_process.measure_shared, server, n, settings, progress)
        block["shared"][server.row.name] = {**found, "stdio_peer": peers.get(server.row.language)}
        results.startup = {**(results.startup or {}), "sessions": block}
        on_update(results)


def _guard_startup(started: list[Server], failed: list[Server], settings: Settings,
                   budget: list[float], results: Results, progress: Progress) -> None:
    """The all-at-once startup of the servers that started (``failed``: those that could not,
    listed under every limit); a failure there is a warning of the run, never a lost row."""
    from .startup import measure_startup, ready_ms

    ready = {s.row.name: [(v, r["warmup"]) for r in s.runs
                          if (v := ready_ms(r.get("tools_list"), r.get("handshake"))) is not None]
             for s in started}
    counted = {name: [v for v, warmup in pairs if not warmup] for name, pairs in ready.items()}
    try:
        results.startup = measure_startup(
            [(s.row.name, s.command) for s in started], settings, budget,
            {s.row.name: s.limit_s for s in started + failed if s.limit_s},
            {name: [v for v, _ in pairs] for name, pairs in ready.items()},
            {name: summarize(values)["median"] for name, values in counted.items() if values},
            {s.row.name: ((s.row.memory or {}).get("idle_rss_bytes"),
                          (s.row.memory or {}).get("idle_pss_bytes")) for s in started},
            {s.row.name: s.row.reason or "no answer" for s in failed}, progress)
    except SessionError as err:
        results.startup = {"error": str(err)}


def _cold_cache(server: Server, settings: Settings) -> None:
    """Make every cold start of ``server`` start with its files out of the page cache: learn
    the files a warm run maps (one spawn), then evict them all before each spawn and record
    what was evicted and what stayed (``page_cache``)."""
    from .page_cache import evict, mapped_files, server_files

    first = initialize_request(settings.requested_revision)
    with spawn.started([(server.command, first)], settings, timed=False) as (session,):
        session.wait(1, settings.timeout_s)
        mapped = []
        for proc in session.processes.scan():
            try:
                mapped += mapped_files(proc.pid)
            except OSError:
                continue
    files = server_files(os.fsdecode(session.transport.prepared.path), server.artifacts, mapped)
    record = {"files": len(files), "evicted_bytes": [], "resident_bytes": [],
              "resident_note": None}
    server.row.page_cache = record

    def evict_now() -> None:
        done = evict(files)
        record["evicted_bytes"].append(done["evicted_bytes"])
        record["resident_bytes"].append(done["resident_bytes"])
        record["resident_note"] = record["resident_note"] or done["resident_note"]

    server.before_spawn = evict_now


SERIES = {"handshake": "cold start", "modern": "modern-era cold start",
          "direct": "direct cold start", "offline": "offline cold start",
          "dual": "dual-era cold start"}
"""The series of the rounds, as progress and causes name them."""


def _cold_starts(servers: list[Server], settings: Settings, order: str, results: Results,
                 progress: Progress, on_update: Callable[[Results], None],
                 kind: str) -> None:
    """Warm-up and counted runs of one kind of series for each server, in ``order``:
    "handshake" (``_one_run``; a launched server's "direct" and "offline" series, launcher.py,
    share its rounds in either order: ``run_order``), "modern" (``modern_run``) or "dual"
    (``_dual_run``). Each run is recorded in ``results.run_sequence``. A server whose run
    fails keeps its samples and leaves the later rounds (a direct or offline run that fails
    stops only its own series)."""
    runs = {"handshake": _one_run, "modern": modern_run, "dual": _dual_run}
    entries = {}
    for server in servers:
        entries[server.row.name] = (server, kind)
        if kind == "handshake" and server.launch is not None:
            entries.update({f"{server.row.name} ({extra})": (server, extra)
                            for extra in server.launch.series()})

    def server_of(name: str) -> str:
        return entries[name][0].row.name

    def group(run: tuple[int, str]):  # the results are rewritten after each: a round, a server
        return run[0] if order == "interleave" else server_of(run[1])

    sequence = run_order(list(entries), settings.warmup + settings.runs, order, settings.seed,
                         server_of)
    for position, (round_, name) in enumerate(sequence):
        server, series = entries[name]
        if server.stopped:
            continue
        warmup = round_ < settings.warmup
        label = (f"warm-up {round_ + 1}/{settings.warmup}" if warmup
                 else f"run {round_ - settings.warmup + 1}/{settings.runs}")
        what = SERIES[series]
        progress(Step(f"{name}: {what} {label}", "cold start", server.row.name, position,
                      len(sequence)))
        results.run_sequence.append({"series": series, "round": round_,
                                     "server": server.row.name, "warmup": warmup})
        if series in ("direct", "offline"):
            launcher.run(server.launch, series, server.command, settings, round_,
                         server.before_spawn, server.traffic)
        elif not _guard(server, lambda: runs[series](server, settings, warmup),
                        f"{what} {label}: "):
            server.stopped = True
        _summarize(server)
        if position + 1 == len(sequence) or \
                group(sequence[position + 1]) != group(sequence[position]):
            on_update(results)


def _resolve_launchers(servers: list[Server], settings: Settings, progress: Progress) -> None:
    """For each server started through a launcher (launcher.plan), one untimed start that
    reads the command the launcher resolves to (launcher.resolve_started)."""
    for server in servers:
        server.launch = launcher.plan(server.command)
    launched = [s for s in servers if s.launch is not None]
    for index, server in enumerate(launched, 1):
        progress(Step(f"[{index}/{len(launched)}] {server.row.name}: what "
                      f"{server.launch.kind} starts", "cold start", server.row.name))
        launcher.resolve_started(server.launch, server.command, settings)


def _dual_run(server: Server, settings: Settings, warmup: bool) -> None:
    """One dual-era cold start (dual_era.py); a failure ends the series (its cause in the
    row's ``dual_era`` block) and fails the row at its end, as the modern series does."""
    if server.dual_error is not None:
        return
    try:
        server.dual.append((dual_era.dual_start(server.command, settings,
                                                _call_of(server, settings),
                                                server.before_spawn, server.traffic), warmup))
    except SessionError as err:
        server.dual_error = f"{'warm-up' if warmup else 'run'} {len(server.dual) + 1}: {err}"
        server.skips.note("dual-era", f"dual-era cold start {server.dual_error}")


def _sizing(server: Server, settings: Settings) -> None:
    """What sizes the server in an editor's setup, once its series and tool session are done:
    the tool list's tokens (tokens.py), the launcher block, the dual-era block and the
    caching hints (one untimed start, for a modern server)."""
    from . import tokens

    row = server.row
    tokens.fill(row, server.runs)
    if server.launch is not None:
        launched = {r: run["handshake"] for r, run in enumerate(server.runs)
                    if run.get("handshake") is not None}
        row.launcher = launcher.block(server.launch, launched, settings.warmup, row.memory)
        if server.launch.direct is None:
            row.skip_block("launcher.overhead_ms", f"the direct command cannot be resolved: "
                                                   f"{server.launch.reason}")
        elif row.launcher["network_each_start"]:
            row.warnings.append(warn.launcher_network(
                server.launch.kind, row.launcher["network_ms"]["median"],
                row.launcher["network_p"]))
    if server.dual or server.dual_error:
        row.dual_era = dual_era.block(server.dual, settings, server.dual_error,
                                      _call_of(server, settings))
    modern = revisions.speaks_modern(row.protocol or {})
    found = error = None
    if modern:
        try:
            found = caching_hints.hints(server.command, settings, row.protocol["probe_wait"]["s"],
                                  server.traffic)
        except SessionError as err:
            error = str(err)
            server.skips.note("caching", f"caching hints: {err}")
    row.caching = caching_hints.block(found, error, modern, (row.modern_ms or {}).get("first_call"),
                                (row.phases_ms or {}).get("first_call"))


def _one_run(server: Server, settings: Settings, warmup: bool) -> None:
    """One cold start of the initialize era with its phases, on a fresh spawn."""
    sample = cold_start(server.command, settings, server.skips, server.before_spawn)
    sample["warmup"] = warmup
    server.runs.append(sample)
    server.traffic.merge(sample["traffic"])
    server.row.orphans += sample["shutdown"].orphans


def modern_run(server: Server, settings: Settings, warmup: bool,
               label: str = "modern-era cold start") -> None:
    """The two modern-era cold starts (2026-07-28), each on a fresh spawn of
    ``settings.spawner`` (stdio, or http_steps's HTTP transport): to the ``server/discover``
    answer, and to the answer of a ``tools/call`` sent first; a failure stops that series
    with its cause after ``label``."""
    call = _call_of(server, settings)
    firsts = {"discover": modern_request("server/discover")}
    if call is not None:
        firsts["first_call"] = modern_request("tools/call", call.params(SMALL_TEXT))
    for series, request in firsts.items():
        if series in server.skips:
            continue
        what = "server/discover" if series == "discover" else f"tools/call {call.name}"
        ms, ended, traffic, error = modern_start(server.command, settings, request, what,
                                                 server.before_spawn)
        if ended is not None:
            server.row.orphans += ended.orphans
            server.traffic.merge(traffic)
        if error is not None:
            server.skips.note(series, f"{label} ({series}): {error}")
            continue
        server.modern[series].append((ms, warmup))


def _stats(pairs: list[tuple[float | None, bool]]) -> dict:
    return summarize([v for v, w in pairs if v is not None and not w],
                     [v for v, w in pairs if v is not None and w])


def _summarize(server: Server) -> None:
    """Turn the runs so far into the row's stats blocks (rewritten after every run)."""
    row, runs = server.row, server.runs
    if not runs:
        return
    row.handshake_ms = _stats([(r["handshake"], r["warmup"]) for r in runs])
    row.phases_ms = {phase: _stats([(r[phase], r["warmup"]) for r in runs]) for phase in PHASES}
    last = runs[-1]
    row.protocol["negotiated_revision"] = last.get("negotiated_revision")
    row.server_info, row.server_capabilities = last.get("server_info"), last.get("capabilities")
    if any(server.modern.values()):
        row.modern_ms = {series: _stats(pairs) if pairs else None
                         for series, pairs in server.modern.items()}


def floor_of(servers: list[Server], series: Callable[[ServerResult], dict | None]
             ) -> tuple[str, dict | None] | None:
    """The floor server among ``servers`` (results.is_floor) and its ``series`` in this run,
    which sizes a busy machine's error (stats.busy_error); None when the run holds none."""
    floor = next((s.row for s in servers if is_floor(vars(s.row))), None)
    return None if floor is None else (floor.name, series(floor))


def _finish(server: Server, settings: Settings, env: dict,
            floor: tuple[str, dict | None] | None = None) -> None:
    """Warnings and reasons that need the whole row: the series' statistics (``env``: the
    machine's metadata, for the load; ``floor``: the floor's cold starts in this run,
    ``floor_of``), the traffic, the negotiated revision, the methods that failed, what was
    not measured."""
    row = server.row
    row.warnings += series_warnings("handshake_ms", row.handshake_ms, env.get("load_average"),
                                    env.get("cpu_count"), floor)
    revisions_seen = {r.get("negotiated_revision") for r in server.runs} - {None}
    if len(revisions_seen) > 1:
        row.warnings.append(warn.revisions_varied(revisions_seen))
    negotiated = row.protocol.get("negotiated_revision")
    if negotiated and negotiated != settings.requested_revision:
        row.warnings.append(warn.negotiated_other(settings.requested_revision, negotiated))
    for cause in server.skips.causes.values():
        row.fail(cause)
    row.warnings += server.traffic.warnings()
    row.traffic = server.traffic.record()
    total = sum(server.traffic.notifications.values())
    if total >= NOTIFICATION_FLOOD:
        row.warnings.append(warn.notification_flood(row.traffic["notifications"], total))
    if row.orphans:
        row.warnings.append(warn.orphans(len(row.orphans)))
    payload = row.payload or {}
    if payload.get("verified") is False:
        row.fail(f"{payload['tool']} returned a wrong result for the "
                 f"{payload['request_bytes']}-byte payload")
    if payload.get("unicode_verified") is False:
        row.fail(f"{payload['tool']} did not reverse by code points (emoji / combining mark "
                 "check)")
    if row.modern_ms is None and row.protocol.get("era") is not None and \
            row.transport == "stdio":  # an HTTP row's modern series is http.start_ms's
        row.skip_block("modern_ms", "server/discover did not list 2026-07-28")
    start = (row.http or {}).get("start_ms") or {}
    uncalled = [block for block, series in (
        ("phases_ms.first_call", (row.phases_ms or {}).get("first_call")),
        ("http.start_ms.first_call", start.get("first_call"))) if series and series["n"] == 0]
    if start.get("discover") and start.get("modern_first_call") is None:
        uncalled.append("http.start_ms.modern_first_call")
    for block in uncalled if not server.skips.causes else []:
        row.skip_block(block, "no tool to call (--call TOOL names one)")


def revisions_only(servers: list[Server], settings: Settings, argv: list[str],
                   toolchains: dict[str, str], progress: Progress = lambda _: None) -> Results:
    """The revision matrix of each server and nothing else (``mcpstart revisions``), the
    probes' wait derived from a first start (``matrix.first_start``). A server that cannot be
    spawned (not found, no such working directory) fails its row, and so does one no
    revision of which is known to be supported (the cause says how many probes got no
    answer); any other answer, error, exit or silence of a probe is a finding."""
    results = new_results(argv, settings, "sequential", toolchains)
    results.servers = [s.row for s in servers]
    live = [s for s in servers if s.measurable]
    from .http_steps import http_settings

    for index, server in enumerate(live, 1):
        server.row.protocol = {"requested_revision": settings.requested_revision}
        server.row.command = server.command.record()
        progress(Step(f"[{index}/{len(live)}] {server.row.name}: revision matrix", "matrix",
                      server.row.name))
        probes = http_settings(server, settings) if server.transport == "http" else settings
        if first_start(server, probes):  # an HTTP recipe's over HTTP
            _guard(server, lambda s=server, p=probes: matrix(s, settings, "first start", p))
            none_supported(server.row)
    return results
