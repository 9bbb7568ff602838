"""The servers of a run: what to spawn and the row it fills (``Server``), made from a recipe's
build, a command or an editor config's entry (``servers_for``), and the rule that one server's
failing step fails its row, never the run (``guard``)."""

from __future__ import annotations

import glob
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from .. import Progress, warnings as warn
from ..command import Command
from ..endpoint import ENDPOINT
from ..results import ServerResult
from ..targets.variants import source_record, stale_lock
from ..transports.session import SessionError, Traffic
from ..wire import ToolCall
from . import launcher, limits
from .client import Skips
from .settings import Settings


@dataclass
class Server:
    """One server of a run: its row (already holding what is known before measuring, e.g. a
    build failure or the footprint) and what to spawn (None when it cannot be measured).
    ``done``: its last step ran (an exit signal after it leaves its status as it is).
    ``transport``: "stdio" or "http" (a recipe's, a command with ``{port}``, a URL);
    ``endpoint_path``: the MCP endpoint's path of a spawned HTTP server; ``url``
    and ``headers``: a Streamable HTTP server already running (no command);
    ``load_allowed``: it may be put under load; ``ceiling_only``: the HTTP floor built only
    for the load engine's ceiling (not a row)."""

    row: ServerResult
    command: Command | None
    limit_s: float | None = None
    artifacts: list[str] = field(default_factory=list)
    before_spawn: Callable[[], None] = lambda: None
    skips: Skips = field(default_factory=Skips)
    traffic: Traffic = field(default_factory=Traffic)
    runs: list[dict] = field(default_factory=list)
    modern: dict = field(default_factory=lambda: {"discover": [], "first_call": []})
    launch: launcher.Launch | None = None
    dual: list[tuple[dict, bool]] = field(default_factory=list)
    dual_error: str | None = None
    tool_firsts: dict = field(default_factory=dict)
    """A workload's per-tool cold starts: tool name -> [(first call ms or None, warmup)]."""
    stopped: bool = False
    done: bool = False
    transport: str = "stdio"
    endpoint_path: str = ENDPOINT
    url: str | None = None
    headers: dict = field(default_factory=dict)
    load_allowed: bool = True
    ceiling_only: bool = False
    memory_limit: limits.MemoryLimit | None = None

    @property
    def measurable(self) -> bool:
        return ((self.command is not None or self.url is not None) and self.row.status == "ok"
                and not self.stopped)

    @property
    def never_started(self) -> bool:
        """A spawned server none of whose cold starts got an initialize answer (a server
        already running, a URL, has no cold starts and is never "not started")."""
        return self.command is not None and not any(
            run.get("handshake") is not None for run in self.runs)

    def spawning(self, settings: Settings, cpus: frozenset[int] | None = None) -> Settings:
        """``settings`` whose spawner makes this server's transport: ``settings.spawner``
        (stdio) as it is, or for an HTTP server ``settings.http_spawner`` on the spawned
        command (its endpoint at ``endpoint_path``, the process pinned to ``cpus``) or on
        the URL, with the server's ``headers``; a spawned server enters its
        ``memory_limit``'s cgroup."""
        enter = self.memory_limit.wrap if self.memory_limit else (lambda command: command)
        if self.transport != "http":
            if self.memory_limit is None:
                return settings
            return replace(settings, spawner=lambda command, make=settings.spawner: make(
                enter(command)))
        make = settings.http_spawner
        if self.url is not None:
            return replace(settings, spawner=lambda _command: make(
                url=self.url, headers=self.headers))
        return replace(settings, spawner=lambda command: make(
            enter(command), headers=self.headers, cpus=cpus, path=self.endpoint_path))

    def small_call(self, settings: Settings) -> ToolCall | None:
        """The small call of the modern and dual-era series: ``settings.call`` or
        reverse_text, where the server lists it (None: no tool to call, or no listing yet)."""
        listing = next((r["tools"] for r in reversed(self.runs) if r.get("tools")), None)
        call = settings.call or ToolCall()
        return call if listing and listing.find(call.name) else None


def guard(server: Server, step: Callable[[], None], prefix: str = "") -> bool:
    """Run one step of a server; its failure fails the row (the cause after ``prefix``),
    never the run. Returns False when it failed."""
    try:
        step()
    except SessionError as err:
        server.row.fail(f"{prefix}{err}")
    except Exception as err:  # unexpected data from one server must not end the run
        server.row.fail(f"{prefix}mcpstart could not measure this server: "
                        f"{type(err).__name__}: {err}")
    else:
        return True
    return False


def from_build(build, settings: Settings, require_all: bool = False) -> Server:
    """A Server from a recipe's Build: skipped (missing toolchain; failed with
    ``require_all``), failed (build failed, with the log's tail; an unusable recipe, with
    its cause), or ready to measure with
    its footprint counted now, before anything is timed."""
    from .footprint import measure_footprint

    recipe = build.recipe
    row = ServerResult(recipe.name, recipe.transport, recipe.language, recipe.sdk,
                       recipe.sdk_version)
    row.sdk_source = source_record(recipe, None, None, None)  # completed once it is built
    if recipe.sdk is None:
        row.skip_block("sdk_version", "the recipe names no SDK")
    if build.status == "skipped":
        row.status, row.reason = "skipped", build.reason
        if require_all:
            row.fail(f"{build.reason} (--require-all)")
        return Server(row, None)
    if not build.ok and build.log is None:
        row.fail(build.reason)
        return Server(row, None)
    if not build.ok:
        row.fail(f"build failed: {build.reason} (log: {build.log})\n{build.log_tail}")
        return Server(row, None)
    lock = Path(build.path(recipe.dependencies["lock"])) if "lock" in recipe.dependencies else None
    stale = lock is not None and stale_lock(recipe, lock)
    if stale:  # the lock describes the default, not this variant: not counted
        lock = None
        build = replace(build, recipe=replace(recipe, dependencies={
            k: v for k, v in recipe.dependencies.items() if k != "lock"}))
    packages = resolved = None
    try:
        footprint, resolved, warnings = measure_footprint(build, build.status == "cached")
        for key, reason in footprint.pop("not_measured").items():
            row.skip_block(f"footprint.{key}", reason)
        packages = footprint.pop("packages", None)
        row.footprint = footprint
        row.sdk_version = resolved or recipe.sdk_version
        row.warnings += warnings
    except Exception as err:  # a footprint is a side figure: never lose the row for it
        row.warnings.append(warn.footprint_failed(err))
    if stale:
        row.skip_block("footprint.lock_count", "the variant's build writes no lock file of its "
                       "own (its resolved packages are in sdk_source)")
    row.sdk_source = source_record(recipe, lock, packages, resolved)
    return Server(row, build.command(settings.env),
                  artifacts=[p for pattern in recipe.artifact_include
                             for p in glob.glob(build.path(pattern))],
                  transport=recipe.transport, endpoint_path=recipe.endpoint)


def from_target(target, settings: Settings) -> Server:
    """A Server from a bare command or an editor config's entry (targets.command.Target):
    no recipe, so no footprint (``not_measured``), the target's notes as warnings."""
    row = ServerResult(target.name, target.transport)
    row.skip_block("footprint", "no recipe (a command line or an editor config): nothing "
                                "was built, so there is no artifact to count")
    row.warnings += [warn.target(note) for note in target.notes]
    command = None if target.url else Command(list(target.argv), target.cwd,
                                              {**target.env, **settings.env}, target.base_env)
    return Server(row, command, target.limit_s, transport=target.transport, url=target.url,
                  headers=dict(target.headers), load_allowed=target.load_allowed,
                  endpoint_path=target.endpoint_path)


def servers_for(plan, settings: Settings, cache, rebuild: bool = False,
                require_all: bool = False, progress: Progress = lambda _: None
                ) -> tuple[list[Server], dict[str, str]]:
    """The Servers of a targets.plan.Plan, in its order: recipes built (cached builds reused)
    and their footprints counted, targets as they are, skipped config entries as rows.
    Returns them and the toolchain versions the builds used."""
    from ..targets.build import ensure_built

    servers, toolchains = [], {}
    for recipe in plan.recipes:
        build = ensure_built(recipe, cache, rebuild, progress)
        toolchains.update(build.toolchains)
        servers.append(from_build(build, settings, require_all))
    if plan.ceiling is not None:
        build = ensure_built(plan.ceiling, cache, rebuild, progress)
        ceiling = from_build(build, settings)
        ceiling.ceiling_only = True
        servers.append(ceiling)
    servers += [from_target(target, settings) for target in plan.targets]
    for skipped in plan.skipped:
        row = ServerResult(skipped.name, status="failed" if skipped.malformed else "skipped",
                           reason=skipped.reason)
        servers.append(Server(row, None))
    return servers, toolchains
