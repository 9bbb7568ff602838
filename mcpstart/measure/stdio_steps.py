"""The stdio transport's steps of the run loop (run.py, steps.Steps): the cold page cache
and the launchers before the cold starts, the dual-era series, a workload's per-tool cold
starts (per_tool.py), and after the tool session the
launcher block, the dual-era block and the caching hints. The row's stdio blocks
(``handshake_ms``, ``phases_ms``, ``modern_ms``) are the loop's series summarized here."""

from __future__ import annotations

import os

from .. import Progress, Step, warnings as warn
from ..stats import summarize_runs
from ..transports.session import SessionError
from ..wire import initialize_request
from . import caching_hints, dual_era, launcher, per_tool, revisions, spawn
from .server import Server, guard
from .settings import Settings
from .steps import Say, Steps

PHASES = ("first_byte", "tools_list", "first_call")


def prepare(live: list[Server], settings: Settings, progress: Progress) -> None:
    """Before the first cold start: with ``--cache-state cold`` each server's files out of
    the page cache before every spawn (a server whose files cannot be learned fails: its
    runs must not pass as cold), then what each launcher starts."""
    if settings.cache_state == "cold":
        for server in live:
            guard(server, lambda s=server: _cold_cache(s, settings))
    _resolve_launchers([s for s in live if s.measurable], settings, progress)


def summarize_series(server: Server) -> None:
    """The runs so far as ``handshake_ms``, ``phases_ms`` and ``modern_ms``."""
    row, runs = server.row, server.runs
    row.handshake_ms = summarize_runs((r["handshake"], r["warmup"]) for r in runs)
    row.phases_ms = {phase: summarize_runs((r[phase], r["warmup"]) for r in runs)
                     for phase in PHASES}
    if any(server.modern.values()):
        row.modern_ms = {series: summarize_runs(pairs) if pairs else None
                         for series, pairs in server.modern.items()}
    per_tool.summarize(server)


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


def dual_run(server: Server, settings: Settings, warmup: bool, what: str) -> None:
    """One dual-era cold start (dual_era.py); a failure ends the series (its cause, after
    ``what``, in the row's ``dual_era`` block) and fails the row at its end, as the modern
    series does."""
    if server.dual_error is not None:
        return
    try:
        server.dual.append((dual_era.dual_start(server.command, settings,
                                                server.small_call(settings),
                                                server.before_spawn, server.traffic), warmup))
    except SessionError as err:
        server.dual_error = f"{'warm-up' if warmup else 'run'} {len(server.dual) + 1}: {err}"
        server.skips.note("dual-era", f"{what} {server.dual_error}")


def after_session(server: Server, settings: Settings, say: Say) -> None:
    """What sizes a stdio server in an editor's setup, once its series and tool session are
    done: a workload's warm per-tool figures (per_tool.warm), the launcher block, the
    dual-era block and the caching hints (one untimed start, for a modern server)."""
    per_tool.warm(server, settings, say)
    say("caching hints")
    row = server.row
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
                                      server.small_call(settings))
    modern = revisions.speaks_modern(row.protocol or {})
    found = error = None
    if modern:
        try:
            found = caching_hints.hints(server.command, settings,
                                        row.protocol["probe_wait"]["s"], server.traffic)
        except SessionError as err:
            error = str(err)
            server.skips.note("caching", f"caching hints: {err}")
    row.caching = caching_hints.block(found, error, modern,
                                      (row.modern_ms or {}).get("first_call"),
                                      (row.phases_ms or {}).get("first_call"))


STEPS = Steps("stdio", ("dual", "workload"),
              {"handshake": "cold start", "modern": "modern-era cold start",
               "direct": "direct cold start", "offline": "offline cold start",
               "dual": "dual-era cold start", "workload": "per-tool cold start",
               "matrix": "revision matrix"},
              "", prepare, summarize_series, after_session, None, lambda row: row.handshake_ms)
