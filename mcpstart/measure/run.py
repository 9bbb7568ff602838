"""A measurement run: build what is stale, then measure each server one at a time and
rewrite the results file after every server."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from .. import Progress, __version__, defaults
from . import machine
from ..targets.build import Build, ensure_built
from .footprint import measure_footprint
from .probes import handshake_series, tool_session
from ..targets.recipes import Recipe
from ..results import Results, ServerResult
from ..stdio.session import Command, SessionError



@dataclass(frozen=True)
class Settings:
    """How a run measures. ``runs`` counted cold starts after ``warmup`` warm-up runs per
    server; ``timeout_s`` bounds every wait on a server; ``env`` is set for every server on
    top of mcpstart's environment (only its keys are stored)."""

    runs: int = defaults.RUNS
    warmup: int = defaults.WARMUP
    timeout_s: float = defaults.TIMEOUT_S
    payload_bytes: int = defaults.PAYLOAD_BYTES
    requested_revision: str = defaults.REVISION
    env: dict[str, str] = field(default_factory=dict)

    def record(self) -> dict:
        """The results file's ``settings`` block."""
        data = asdict(self)
        data["env_keys"] = sorted(data.pop("env"))
        data["order"] = "sequential: one server at a time, warm-up runs first"
        return data


def measure_server(row: ServerResult, command: Command, settings: Settings,
                   progress: Progress = lambda _: None) -> ServerResult:
    """Fill ``row`` with the cold-start series and the tool session of ``command``.

    A server that fails gets status "failed" and the cause in ``reason``; whatever was
    measured before the failure stays in the row. Never raises for a server's misbehaviour.
    """
    row.command = command.record()
    row.protocol = {"requested_revision": settings.requested_revision, "negotiated_revision": None}
    try:
        series = handshake_series(command, settings.runs, settings.warmup,
                                  settings.requested_revision, settings.timeout_s, progress)
        row.handshake_ms = series["handshake_ms"]
        row.phases_ms = {"first_byte": series["first_byte_ms"]}
        row.protocol["negotiated_revision"] = series["negotiated_revision"]
        if series["negotiated_revision"] != settings.requested_revision:
            row.warnings.append(f"requested protocol revision {settings.requested_revision!r}, "
                                f"server negotiated {series['negotiated_revision']!r}")
        row.orphans += series["orphans"]
        row.warnings += series["warnings"]
        traffic = series["traffic"]
        session = tool_session(command, settings.requested_revision, settings.timeout_s,
                               settings.payload_bytes, progress)
    except SessionError as err:
        row.fail(str(err))
        return row
    row.tools, row.memory, row.payload = session["tools"], session["memory"], session["payload"]
    row.shutdown = session["shutdown"]
    row.orphans += session["orphans"]
    traffic.merge(session["traffic"])
    row.warnings += session["warnings"] + traffic.warnings()
    if row.orphans:
        row.warnings.append(f"{len(row.orphans)} process(es) left the process group and were killed")
    payload = row.payload or {}
    if payload and not payload["verified"]:
        row.fail(f"reverse_text returned a wrong result for the {payload['request_bytes']}-byte payload")
    if payload and not payload["unicode_verified"]:
        row.fail("reverse_text did not reverse by code points (emoji / combining mark check)")
    return row


def new_results(argv: list[str], settings: Settings, toolchains: dict[str, str]) -> Results:
    """An empty Results for this run, with the machine's metadata."""
    return Results(created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                   mcpstart_version=__version__, argv=argv,
                   environment=machine.describe(toolchains), settings=settings.record())


def build_all(recipes: list[Recipe], cache: Path, rebuild: bool = False,
              progress: Progress = lambda _: None) -> list[Build]:
    """Build every recipe (one at a time; each failure or skip is kept, the others go on)."""
    return [ensure_built(recipe, cache, rebuild, progress) for recipe in recipes]


def measure_builds(builds: list[Build], settings: Settings, argv: list[str],
                   require_all: bool = False, progress: Progress = lambda _: None,
                   on_row: Callable[[Results], None] = lambda _: None) -> Results:
    """Measure each built server in turn; ``on_row`` gets the results after each row (the CLI
    rewrites the results file there).

    A skipped build is a "skipped" row ("failed" with ``require_all``), a failed build a
    "failed" row with the log's tail; the other servers go on either way.
    """
    toolchains = {k: v for b in builds for k, v in b.toolchains.items()}
    results = new_results(argv, settings, toolchains)
    for index, build in enumerate(builds, 1):
        recipe = build.recipe
        step = lambda text, n=recipe.name: progress(f"[{index}/{len(builds)}] {n}: {text}")
        row = ServerResult(recipe.name, recipe.language, recipe.sdk, recipe.sdk_version)
        if build.status == "skipped":
            row.status, row.reason = "skipped", build.reason
            if require_all:
                row.fail(f"{build.reason} (--require-all)")
        elif not build.ok:
            row.fail(f"build failed: {build.reason} (log: {build.log})\n{build.log_tail}")
        else:
            step("footprint")
            try:
                row.footprint, resolved, warnings = measure_footprint(build, build.status == "cached")
                row.sdk_version = resolved or recipe.sdk_version
                row.warnings += warnings
            except Exception as err:  # a footprint is a side figure: never lose the row for it
                row.warnings.append(f"footprint not measured: {type(err).__name__}: {err}")
            try:
                measure_server(row, build.command(settings.env), settings, step)
            except Exception as err:  # unexpected data from one server must not end the run
                row.fail(f"mcpstart could not measure this server: {type(err).__name__}: {err}")
        outcome = row.status if row.status == "ok" else f"{row.status}: {row.reason.splitlines()[0]}"
        step(outcome + "".join(f"\n  warning: {w}" for w in row.warnings))
        results.servers.append(row)
        on_row(results)
    return results
