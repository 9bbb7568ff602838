"""A measurement run over several servers, one loop for every transport: for each transport's
servers (stdio, then Streamable HTTP; steps.Steps says what a transport adds), the cold-start
series in rounds (interleaved or one server after another, warm-ups first), the revision
matrix, the modern-era series, then one tool session per server and its transport's steps,
each row finished by the same rules; then the starts all at once (``--budget``,
``--sessions``). The results file is rewritten after every round and every server.

Per-server figures are measured one server at a time, never two at once
(docs/measurement.md).
"""

from __future__ import annotations

import os
import random
import signal
from collections.abc import Callable
from datetime import datetime, timezone

from .. import Progress, Step, __version__, platforms, warnings as warn
from ..results import Results, ServerResult, is_floor
from ..stats import series_warnings, summarize
from ..transports.session import SessionError, unanswered
from ..wire import SMALL_TEXT, modern_request
from . import (attribution, http_steps, launcher, limits, machine, per_tool, revisions,
               shared_floor, stdio_steps, tokens, usage)
from .cold import cold_start, modern_start
from .matrix import first_start, matrix, none_supported
from .server import Server, guard
from .settings import Settings
from .steps import Steps
from .warm import tool_session

STEPS = (stdio_steps.STEPS, http_steps.STEPS)
"""The transports, in the order their servers are measured."""


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
    (startup limits in seconds) the stdio servers that started are also started all at once,
    as an editor does, and judged against the limits (``results.startup``); with ``sessions``
    (N), N copies of each are started all at once too (``results.startup["sessions"]``,
    copies.py), and each spawned HTTP server serves N sessions from one process
    (shared_process.py).

    A server whose step fails keeps everything measured before (status "failed", the cause
    in ``reason``); the other servers go on. Never raises for a server's misbehaviour.
    """
    ceiling = next((s for s in servers if s.ceiling_only), None)
    servers = [s for s in servers if not s.ceiling_only]
    order = settings.order or ("interleave" if len(servers) > 1 else "sequential")
    results = new_results(argv, settings, order, toolchains)
    results.servers = [s.row for s in servers]
    limits.attach(servers, settings.memory_limit_bytes, f"{os.getpid()}")
    try:
        for server in servers:
            server.row.protocol = {"requested_revision": settings.requested_revision,
                                   "negotiated_revision": None}
            if server.command is not None:
                server.row.command = server.command.record()
            if settings.layer == "portable" and server.command is not None:
                for key, why in platforms.NOT_MEASURED.items():
                    if server.transport == "http" or not key.startswith("http."):
                        server.row.skip_block(key, why)
        if any(s.measurable and s.transport == "http" for s in servers):
            for server in servers:
                if server.transport == "stdio":
                    server.row.skip_block("http", "a stdio server (its figures are the stdio "
                                                  "rows)")
        live = {steps.transport: _loop([s for s in servers if s.measurable
                                        and s.transport == steps.transport], steps, ceiling,
                                       settings, order, results, progress, on_update)
                for steps in STEPS}
        _all_at_once(live["stdio"], settings, results, progress, on_update, budget, sessions)
        if sessions is not None:
            _shared(servers, sessions, settings, results, progress, on_update)
        on_update(results)  # also a run where nothing could be measured
    except SystemExit as stop:  # an exit signal (interrupts.py): keep what was measured
        if isinstance(stop.code, int) and stop.code > 128:
            name = signal.Signals(stop.code - 128).name
            results.interrupted = (f"stopped by {name}{_during(servers, results)}; the rows "
                                   "hold what was measured before it")
            for server in servers:
                if server.row.status == "ok" and server.command is not None and not server.done:
                    server.row.status, server.row.reason = "interrupted", cut_short(
                        server, settings.runs, name)
            on_update(results)
        raise
    finally:
        limits.detach(servers)
    return results


def _loop(live: list[Server], steps: Steps, ceiling: Server | None, settings: Settings,
          order: str, results: Results, progress: Progress,
          on_update: Callable[[Results], None]) -> list[Server]:
    """Every step of one transport's servers (``live``: measurable, that transport), in
    order: ``steps.prepare``; the cold starts ("handshake"; a warm-up run, with the whole
    --timeout, absorbs a first npx/uvx download, which a short protocol probe would cut
    off); the revision matrix, its probes waiting what the cold starts say; the modern-era
    series of the servers that speak it and the transport's other series; per server the
    tool session, its tokens and ``steps.after_session``; ``steps.row_wide``; each row
    finished (``_finish``) after its last step. Returns the servers it measured."""
    if not live:
        return []
    steps.prepare(live, settings, progress)
    live = [s for s in live if s.measurable]  # unevicted runs must not pass as cold
    on_update(results)
    spawned = [s for s in live if s.command is not None]
    _cold_starts(spawned, steps, settings, order, results, progress, on_update, "handshake")
    profiles = []
    for server in [s for s in spawned if not s.never_started]:
        if not settings.attribution:
            for block in ("imports", "classes", "runtime_heap", "start_usage", "loader"):
                server.row.skip_block(block, "--no-attribution")
            continue
        # after the counted starts: profiling slows what it profiles
        profiles += [(server, p) for p in attribution.profiles(server, settings)]
    attribution.interleaved(profiles, lambda server: progress(
        Step(f"{server.row.name}: start-up profile", "cold start", server.row.name)))
    on_update(results)
    for index, server in enumerate(live, 1):
        if not server.never_started:
            progress(Step(f"[{index}/{len(live)}] {server.row.name}: {steps.labels['matrix']}",
                          "matrix", server.row.name))
            guard(server, lambda s=server: matrix(s, settings, steps.labels["handshake"],
                                                  s.spawning(settings)))
    modern = [s for s in spawned if revisions.speaks_modern(s.row.protocol or {})]
    _cold_starts(modern, steps, settings, order, results, progress, on_update, "modern")
    for series in steps.series:
        if series == "workload" and settings.workload is None:
            continue
        _cold_starts([s for s in spawned if not s.never_started], steps, settings, order,
                     results, progress, on_update, series)
    floor = floor_of(live, steps.floor)
    for index, server in enumerate(live, 1):
        if not server.never_started:
            say = lambda text, phase="session", n=server.row.name, i=index: progress(
                Step(f"[{i}/{len(live)}] {n}: {text}", phase, n))
            guard(server, lambda s=server: tool_session(s.command, s.spawning(settings), s.row,
                                                        s.skips, s.traffic, say))
            tokens.fill(server.row, server.runs)
            steps.after_session(server, settings, say)
        if steps.row_wide is None:
            _finish(server, settings, results.environment, floor)
        on_update(results)
    if steps.row_wide is not None:
        steps.row_wide(live, ceiling, settings, results, progress, on_update)
        for server in live:
            _finish(server, settings, results.environment, floor)
        on_update(results)
    return live


def _cold_starts(servers: list[Server], steps: Steps, settings: Settings, order: str,
                 results: Results, progress: Progress, on_update: Callable[[Results], None],
                 kind: str) -> None:
    """Warm-up and counted runs of one kind of series for each server, in ``order``:
    "handshake" (``_one_run``; a launched server's "direct" and "offline" series, launcher.py,
    share its rounds in either order: ``run_order``), "modern" (``modern_run``), "dual"
    (stdio_steps.dual_run) or "workload" (per_tool.cold_run: a cold start per tool of
    ``settings.workload``, run only with one), each on the server's own transport (``Server.spawning``). Each
    run is recorded in ``results.run_sequence`` (the series' name after ``steps.tag``). A
    server whose run fails keeps its samples and leaves the later rounds (a direct or
    offline run that fails stops only its own series); a method that failed in a run is
    said through ``progress`` at once (Skips: not asked again; the row fails with it at
    the end). The results are rewritten after each round (interleaved) or server
    (sequential)."""
    runs = {"handshake": _one_run, "modern": modern_run, "dual": stdio_steps.dual_run,
            "workload": per_tool.cold_run}
    entries = {}
    for server in servers:
        entries[server.row.name] = (server, kind)
        if kind == "handshake" and server.launch is not None:
            entries.update({f"{server.row.name} ({extra})": (server, extra)
                            for extra in server.launch.series()})

    def server_of(name: str) -> str:
        return entries[name][0].row.name

    def group(run: tuple[int, str]):
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
        what = steps.labels[series]
        progress(Step(f"{name}: {what} {label}", "cold start", server.row.name, position,
                      len(sequence)))
        results.run_sequence.append({"series": steps.tag + series, "round": round_,
                                     "server": server.row.name, "warmup": warmup})
        known = set(server.skips.causes)
        if series in ("direct", "offline"):
            launcher.run(server.launch, series, server.command, settings, round_,
                         server.before_spawn, server.traffic)
        elif not guard(server, lambda: runs[series](server, server.spawning(settings), warmup,
                                                    what), f"{what} {label}: "):
            server.stopped = True
        for method in server.skips.causes.keys() - known:  # said at once, not at the end
            progress(f"{server.row.name}: {server.skips.causes[method]} (not asked again; "
                     "the row fails with it once its figures are measured)")
        _summarize(server, steps)
        if position + 1 == len(sequence) or \
                group(sequence[position + 1]) != group(sequence[position]):
            on_update(results)


def _one_run(server: Server, settings: Settings, warmup: bool, _what: str) -> None:
    """One cold start of the initialize era with its phases, on a fresh spawn of
    ``settings.spawner``."""
    sample = cold_start(server.command, settings, server.skips, server.before_spawn)
    sample["warmup"] = warmup
    server.runs.append(sample)
    server.traffic.merge(sample["traffic"])
    server.row.orphans += sample["shutdown"].orphans


def modern_run(server: Server, settings: Settings, warmup: bool, what: str) -> None:
    """The two modern-era cold starts (2026-07-28), each on a fresh spawn of
    ``settings.spawner``: to the ``server/discover`` answer, and to the answer of a
    ``tools/call`` sent first; a failure stops that series with its cause after ``what``
    (the series' label)."""
    call = server.small_call(settings)
    firsts = {"discover": modern_request("server/discover")}
    if call is not None:
        firsts["first_call"] = modern_request("tools/call", call.params(SMALL_TEXT))
    for series, request in firsts.items():
        if series in server.skips:
            continue
        method = "server/discover" if series == "discover" else f"tools/call {call.name}"
        ms, ended, traffic, error = modern_start(server.command, settings, request, method,
                                                 server.before_spawn)
        if ended is not None:
            server.row.orphans += ended.orphans
            server.traffic.merge(traffic)
        if error is not None:
            server.skips.note(series, f"{what} ({series}): {error}")
            continue
        server.modern[series].append((ms, warmup))


def _summarize(server: Server, steps: Steps) -> None:
    """The runs so far into the row (rewritten after every run): the transport's series
    blocks, and the last answer's revision, server info and capabilities."""
    row, runs = server.row, server.runs
    if not runs:
        return
    steps.summarize(server)
    row.start_usage = usage.block(runs)
    last = runs[-1]
    row.protocol["negotiated_revision"] = last.get("negotiated_revision")
    row.server_info, row.server_capabilities = last.get("server_info"), last.get("capabilities")


def _all_at_once(live: list[Server], settings: Settings, results: Results, progress: Progress,
                 on_update: Callable[[Results], None], budget: list[float] | None,
                 sessions: int | None) -> None:
    """The stdio servers started all at once: as an editor does (``budget``: its limits),
    and ``sessions`` copies of each (copies.py); those that never started are listed."""
    started = [s for s in live if not s.never_started]
    if budget is not None and live:
        progress(Step(f"{len(started)} server(s) started all at once, as an editor does",
                      "startup"))
        _editor_start(started, [s for s in live if s not in started], settings, budget,
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


def _during(servers: list[Server], results: Results) -> str:
    """Where an exit signal came when it was in a server's first cold start (nothing of that
    server measured yet): " during the first cold start of NAME", plus ", before its
    initialize answer" while its session has had no answer; else ""."""
    if not results.run_sequence:
        return ""
    name = results.run_sequence[-1]["server"]
    if any(s.runs or s.stopped for s in servers if s.row.name == name):
        return ""  # measured, or its start failed and a later step was under way
    return (f" during the first cold start of {name}"
            + (", before its initialize answer" if unanswered() else ""))


def cut_short(server: Server, runs: int, signal_name: str) -> str:
    """The reason of a row an exit signal stopped before its last step: "cut short by SIGINT
    after 1 of 6 cold starts; not measured: revision matrix, tool session", or "...; stopped
    in the tool session" when its idle memory was already read. A cold start counts once it
    got its initialize answer, as the row's statistics count it (stats.summarize_runs): one
    the signal cut short before it is not."""
    counted = sum(1 for run in server.runs
                  if not run.get("warmup") and run.get("handshake") is not None)
    missing = ["revision matrix"] if "matrix" not in (server.row.protocol or {}) else []
    missing += ["tool session"] if server.row.memory is None else []
    return (f"cut short by {signal_name} after {counted} of {runs} cold starts"
            + (f"; not measured: {', '.join(missing)}" if missing
               else "; stopped in the tool session"))


def _editor_start(started: list[Server], failed: list[Server], settings: Settings,
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


def _shared(servers: list[Server], n: int, settings: Settings, results: Results,
            progress: Progress, on_update: Callable[[Results], None]) -> None:
    """One HTTP process for ``n`` sessions (shared_process.py), for each spawned HTTP server that
    started, set beside the ``n`` stdio copies of the same language's server
    (``startup.sessions.shared[NAME].stdio_peer``)."""
    from . import shared_process
    from .copies import guarded

    http = [s for s in servers if s.transport == "http" and s.command is not None
            and s.measurable]
    peers = {s.row.language: s.row.name for s in servers
             if s.transport == "stdio" and s.row.language}
    block = {"n": n, **(results.startup or {}).get("sessions", {}), "shared": {}}
    for server in http:
        progress(Step(f"{server.row.name}: one process serving {n} sessions at once", "startup"))
        found = guarded(shared_process.measure_shared, server, n, settings, progress)
        block["shared"][server.row.name] = {**found, "stdio_peer": peers.get(server.row.language)}
        results.startup = {**(results.startup or {}), "sessions": block}
        on_update(results)


def floor_of(servers: list[Server], series: Callable[[ServerResult], dict | None]
             ) -> tuple[str, dict | None] | None:
    """The floor server among ``servers`` (results.is_floor) and its ``series`` in this run,
    which sizes a busy machine's error (stats.busy_error); None when the run holds none."""
    floor = next((s.row for s in servers if is_floor(vars(s.row))), None)
    return None if floor is None else (floor.name, series(floor))


def _headline(row) -> tuple[str, dict | None]:
    """The row's headline series, which its statistics warnings name: the cold start
    (``handshake_ms``; over HTTP ``http.start_ms.initialize``), or for a server already
    running (``--url``: no start) its warm calls (``http.latency_ms``)."""
    if row.transport != "http":
        return "handshake_ms", row.handshake_ms
    http = row.http or {}
    start = (http.get("start_ms") or {}).get("initialize")
    return ("http.start_ms.initialize", start) if start else ("http.latency_ms",
                                                              http.get("latency_ms"))


def _finish(server: Server, settings: Settings, env: dict,
            floor: tuple[str, dict | None] | None = None) -> None:
    """Warnings and reasons that need the whole row: the series' statistics (``env``: the
    machine's metadata, for the load; ``floor``: the floor's cold starts in this run,
    ``floor_of``), the traffic, the negotiated revision, the methods that failed, what was
    not measured."""
    row = server.row
    limits.judge(server)
    row.warnings += series_warnings(*_headline(row), env.get("load_average"),
                                    env.get("cpu_count"), floor)
    revisions_seen = {r.get("negotiated_revision") for r in server.runs} - {None}
    if len(revisions_seen) > 1:
        row.warnings.append(warn.revisions_varied(revisions_seen))
    negotiated = row.protocol.get("negotiated_revision")
    if negotiated and negotiated != settings.requested_revision:
        row.warnings.append(warn.negotiated_other(settings.requested_revision, negotiated))
    for cause in server.skips.causes.values():
        row.fail(cause)
    row.warnings += shared_floor.warnings(row)
    row.warnings += server.traffic.warnings()
    row.traffic = server.traffic.record()
    total = sum(server.traffic.notifications.values())
    if total >= warn.NOTIFICATION_FLOOD:
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
    for index, server in enumerate(live, 1):
        server.row.protocol = {"requested_revision": settings.requested_revision}
        server.row.command = server.command.record()
        progress(Step(f"[{index}/{len(live)}] {server.row.name}: revision matrix", "matrix",
                      server.row.name))
        probes = server.spawning(settings)
        if first_start(server, probes):  # an HTTP recipe's over HTTP
            guard(server, lambda s=server, p=probes: matrix(s, settings, "first start", p))
            none_supported(server.row)
    return results
