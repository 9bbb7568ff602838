"""A whole measurement as one library call: what ``mcpstart measure`` and ``mcpstart revisions``
do, for any program that uses mcpstart (the CLI only parses options, shows progress and maps
the outcome to an exit status).

``measure(job)`` builds what is stale, measures every server (measure/run.py), rewrites the
results file atomically after every round and every server (a write error is kept and
reported, measuring goes on), writes the --export-* files with it, masks every secret in
everything it writes, and applies the default startup budget when the user named several
servers. Becoming a child subreaper is ``job.subreaper``: the CLI asks for it; a library host
leaves it off unless it wants it, so its own children stay its own (docs/process-tree.md).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import Progress, platforms
from .measure import mock_api, run, server
from .measure.settings import Settings
from .measure.startup import LIMITS_S
from .redact import secrets_of
from .results import Results
from .workload import PACKAGED as PACKAGED_WORKLOADS
from .transports.tree import child_subreaper
from .targets.build import cache_root, ensure_built
from .targets.plan import Plan, PlanError, make_plan
from .targets.recipes import (WORKLOAD_RECIPE_FOLDER, RecipeError, find_recipe_folder,
                               load_recipes)
from .targets.variants import VariantError, with_variants
from .views.exports import ExportManager


class JobError(ValueError):
    """Input a job cannot run with (a cache folder that cannot be used): a usage error."""


@dataclass
class Job:
    """One run of ``measure`` or ``revisions``.

    Attributes:
        plan: which servers (targets.plan.make_plan).
        settings: how they are measured.
        argv: the command line to record (secrets are masked when written).
        output: the results file (its TOML copy beside it); None: none is written
            (``revisions`` without -o).
        exports: the --export-* targets, written whenever the results file is.
        budget: startup limits in seconds for an all-at-once start; None: the default limits
            (startup.LIMITS_S) when the plan names several servers together, else none.
        sessions: N copies of every server started all at once as well (copies.py), or
            None.
        rebuild, require_all, cache_dir: as ``mcpstart build`` takes them.
        subreaper: make this process a child subreaper for the job (transports.tree.
            child_subreaper), so a server's process that leaves its parent is still found and
            shut down.
        progress: receives every Step (the CLI's display).
    """

    plan: Plan
    settings: Settings
    argv: list[str]
    output: Path | None = None
    exports: ExportManager = field(default_factory=lambda: ExportManager({}))
    budget: list[float] | None = None
    sessions: int | None = None
    rebuild: bool = False
    require_all: bool = False
    cache_dir: str | None = None
    subreaper: bool = False
    progress: Progress = lambda _: None

    @property
    def secrets(self) -> tuple[str, ...]:
        """Every value never to show or store: the targets' env values and substitutions and
        every ``settings.env`` value (redact.py)."""
        return secrets_of([*self.plan.secrets, *self.settings.env.values()])


@dataclass
class Outcome:
    """What a job left: the Results (secrets masked when written) and the last write error of
    the results file or an export, if the last rewrite failed."""

    results: Results
    write_error: OSError | None = None

    output: Path | None = None

    def written(self) -> str | None:
        """What to say of the results file once the job is done (None: no file was asked).

        Raises:
            JobError: the last rewrite of the results file (or an export) failed.
        """
        err = self.write_error
        if err is not None:
            raise JobError(f"cannot write the results file {err.filename or self.output}: "
                           f"{err.strerror or err}")
        return None if self.output is None else f"results written to {self.output} and {self.output.with_suffix('.toml')}"

    def shown(self) -> Results:
        """The Results as printed: read back from their JSON form, secrets masked."""
        return Results.from_dict(self.results.to_dict())

    @property
    def failed(self) -> bool:
        """True when a server failed (exit status 1)."""
        return any(s.status == "failed" for s in self.results.servers)


JOB_OPTIONS = ("output", "exports", "budget", "sessions", "rebuild", "require_all", "cache_dir")
"""The Job fields a command's options may set by name."""


def job_for(command: tuple[str, ...], options: dict, settings: Settings, argv: list[str],
            progress: Progress, only=(), name: str | None = None, floor: bool = False) -> Job:
    """The Job a command's parsed ``options`` describe: the plan of ``-- COMMAND`` and the
    ``server_specs``, ``configs``, ``client``, ``cwd``, ``recipes_dir``, ``url``,
    ``remote`` and ``endpoint`` options (the recipe folder said through ``progress``; ``settings.transport``
    picks the reference recipes), ``load_seconds`` (--load-s: None keeps the default and
    puts no non-loopback URL under load; a command without the key, ``revisions``, has no
    load), ``http_options`` (the HTTP-only flags given: a note when no server of the plan
    is measured over HTTP), every JOB_OPTIONS field ``options`` names, and the
    child subreaper on, as the CLI runs.

    Raises:
        JobError: the options name no measurable set of servers (targets.plan.PlanError).
    """
    served = _workload_servers(options, settings, command)

    def recipe_folder() -> Path:
        folder, which = served[:2] if served else find_recipe_folder(options["recipes_dir"])
        progress(which)
        return folder

    _check_layer(settings, progress)
    load_s = options.get("load_seconds")
    if load_s is not None:
        settings = replace(settings, load_s=load_s)
    if served is not None and not only:
        only = tuple(served[2])
    try:
        plan = make_plan(command, options["server_specs"], options["configs"],
                         options["client"], name, options["cwd"], only, floor, recipe_folder,
                         options.get("inputs"), sdk=options.get("sdk", ()),
                         pre=options.get("pre", False), transport=settings.transport,
                         url=options.get("url"), remote=options.get("remote", False),
                         load=settings.load_s > 0 and "load_seconds" in options,
                         load_named=load_s is not None, endpoint=options.get("endpoint"),
                         headers=options.get("headers", ()))
    except PlanError as err:
        raise JobError(str(err)) from err
    http = [x for x in (*plan.recipes, *plan.targets) if x.transport == "http"]
    if options.get("http_options") and not http:
        plan.notes.append(f"{', '.join(options['http_options'])}: for a server measured over "
                          "HTTP, and none is here (--transport http, --url, or {port} in a "
                          "command): ignored")
    return Job(plan, settings, argv, subreaper=True, progress=progress,
               **{k: options[k] for k in JOB_OPTIONS if k in options})


def _check_layer(settings: Settings, progress: Progress) -> None:
    """Before any build: the process layer can run here and give the figures asked for
    (platforms.py); a layer chosen for want of pidfds is said once.

    Raises:
        JobError: "linux" asked where there are no pidfds, or a figure the layer cannot give
            (--cache-state cold through the portable layer).
    """
    why = platforms.figure_refusal(settings.layer, settings.cache_state)
    if settings.process_layer == "linux" and platforms.default_layer() != "linux":
        why = "the linux process layer needs os.pidfd_open (Linux >= 5.3): omit --process-layer"
    if why:
        raise JobError(why)
    if settings.process_layer is None and settings.layer == "portable":
        progress("no pidfds here (os.pidfd_open): measuring through the portable process "
                 "layer; PSS, the exact peak, the start's CPU and waits and CPU pinning are "
                 "not measured (docs/platforms.md)")


@contextmanager
def following(settings: Settings, subreaper: bool) -> Iterator[None]:
    """The block a job measures in: its process layer in use and, under the linux layer
    when the job asks, the child subreaper (the portable layer has none to ask for)."""
    linux = subreaper and settings.layer == "linux"
    with platforms.using(settings.layer), child_subreaper() if linux else nullcontext():
        yield


def _workload_servers(options: dict, settings: Settings, command
                      ) -> tuple[Path, str, list[str]] | None:
    """For ``--workload NAME`` (a packaged workload) with no server named and no
    ``--recipes``: the WORKLOAD_RECIPE_FOLDER beside the recipe folder, the sentence saying so
    and the names of its recipes whose ``workload`` is NAME; None otherwise (or without that
    folder: the reference recipes, as without a workload).

    Raises:
        JobError: the folder holds no recipe for NAME, or a recipe that cannot be read.
    """
    workload = settings.workload
    if workload is None or Path(workload.path).parent.resolve() != PACKAGED_WORKLOADS.resolve() \
            or command \
            or options["recipes_dir"] or any(options.get(k) for k in (
                "server_specs", "configs", "url")):
        return None
    try:
        folder = find_recipe_folder(None)[0].parent / WORKLOAD_RECIPE_FOLDER
        if not folder.is_dir():
            return None
        names = [r.name for r in load_recipes(folder, transport=None)
                 if r.workload == workload.name and settings.transport in ("both", r.transport)]
    except RecipeError as err:
        raise JobError(str(err)) from err
    if not names:
        raise JobError(f"no {settings.transport} recipe in {folder} serves the workload "
                       f"{workload.name} (workload = \"{workload.name}\")")
    return folder, (f"recipes from {folder} (the servers of the packaged workload "
                    f"{workload.name})"), names


def cache_folder(option: str | None) -> Path:
    """The build cache (``--cache-dir``, else $MCPSTART_CACHE_DIR, else the user cache),
    created if needed.

    Raises:
        JobError: it cannot be created or written into.
    """
    root = cache_root(option)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise JobError(f"cannot use cache folder {root}: {err.strerror or err}") from err
    if not os.access(root, os.W_OK | os.X_OK):
        raise JobError(f"cannot write into cache folder {root}")
    return root


def _servers(job: Job) -> tuple[list[run.Server], dict[str, str]]:
    """Before the first spawn: the builds."""
    cache = cache_folder(job.cache_dir) if job.plan.recipes or job.plan.ceiling else None
    return server.servers_for(job.plan, job.settings, cache, job.rebuild, job.require_all,
                           job.progress)


def _writer(job: Job, secrets: tuple[str, ...]) -> tuple[Callable[..., None], list, list]:
    """The rewrite called after every round and server (``rewrite(results)``: marked
    incomplete) and once at the end (``rewrite(results, done=True)``), the list holding its
    last error, and the list holding the Results it last wrote."""
    error: list[OSError] = []
    last: list[Results] = []

    def rewrite(results: Results, done: bool = False) -> None:
        last[:] = [results]
        results.secrets, results.incomplete = secrets, not done
        error.clear()
        try:
            if job.output is not None:
                results.save(job.output)
            job.exports.write([results])
        except OSError as err:
            error.append(err)
            job.progress(f"cannot write {err.filename or job.output}: {err.strerror or err} "
                         "(measuring goes on)")
    return rewrite, error, last


def measure(job: Job) -> Outcome:
    """Build, measure and write the results of ``job`` (module doc). The results file is
    written first, before any build (a folder that cannot be written fails at once), and
    marked incomplete until the last write.

    Raises:
        JobError: the cache folder cannot be used; the results file cannot be written.
        SystemExit: an exit signal (interrupts.py); the results file was rewritten first
            with what was measured, and ``job.progress`` told whether anything was.
    """
    secrets = job.secrets
    for note in job.plan.notes:
        job.progress(note)
    budget = job.budget
    if budget is None and job.plan.together:
        budget = list(LIMITS_S)
    rewrite, error, last = _writer(job, secrets)
    results = run.new_results(job.argv, job.settings, job.settings.order or "interleave", {})
    results.secrets, results.incomplete = secrets, True
    try:
        if job.output is not None:  # the location, tried before anything is measured
            results.save(job.output)
    except OSError as err:
        raise JobError(f"cannot write the results file {job.output}: "
                       f"{err.strerror or err}") from err
    try:
        with following(job.settings, job.subreaper), \
                mock_api.for_workload(job.settings) as settings:
            servers, toolchains = _servers(job)
            results = run.measure(servers, settings, job.argv, toolchains, job.progress,
                                  rewrite, budget, job.sessions)
    except SystemExit as stop:
        if isinstance(stop.code, int) and stop.code > 128:
            stopped = (last or [results])[0]
            _stopped(job, stopped, rewrite, signal.Signals(stop.code - 128).name)
            stopped.secrets = secrets
            stop.outcome = Outcome(stopped, output=job.output)  # for the table of what was measured
        raise
    rewrite(results, done=True)
    results.secrets = secrets
    return Outcome(results, error[0] if error else None, job.output)


def _stopped(job: Job, results: Results, rewrite: Callable[..., None], name: str) -> None:
    """After an exit signal: the results file's last write (``results``: the last written,
    the placeholder when the signal came during the builds and footprints, before the
    first start), and a true sentence of what it holds."""
    started = [row.name for row in results.servers if row.handshake_ms or row.http]
    results.interrupted = results.interrupted or (f"stopped by {name} during the builds and "
                                                  "footprints, before the first start")
    if job.output is None:
        return
    rewrite(results, done=True)
    if started:
        said = f"what was measured before {name} ({', '.join(started)}) is in {job.output}"
    elif results.servers and results.run_sequence:  # one started, none answered
        said = f"{results.interrupted} ({job.output})"
    else:
        said = f"no server was started before {name}: {job.output} records only the interruption"
    job.progress(said)


def revisions(job: Job) -> Outcome:
    """The revision matrix of every server of ``job`` (``mcpstart revisions``), written to
    ``job.output`` when it is set.

    Raises:
        JobError: the cache folder cannot be used.
    """
    secrets = job.secrets
    with following(job.settings, job.subreaper):
        servers, toolchains = _servers(job)
        results = run.revisions_only(servers, job.settings, job.argv, toolchains,
                                     job.progress)
    rewrite, error, _ = _writer(job, secrets)
    if job.output is not None:
        rewrite(results, done=True)
    results.secrets = secrets
    return Outcome(results, error[0] if error else None, job.output)


def build(names: list[str], recipes_dir: str | None, cache_dir: str | None, rebuild: bool,
          progress: Progress, on_built: Callable, sdk: tuple[str, ...] = (),
          pre: bool = False) -> list:
    """Build the recipes ``names`` (all of them when empty) from ``recipes_dir`` (or the
    default folder, said through ``progress``), and the ``sdk`` variants of them
    (targets/variants.py), calling ``on_built(build)`` after each. Returns the builds
    (targets.build.Build), in recipe order.

    Raises:
        JobError: the recipe folder, a recipe, an --sdk value or the cache folder cannot be
            used.
    """
    try:
        folder, which = find_recipe_folder(recipes_dir)
        progress(which)
        recipes, notes = with_variants(load_recipes(folder, names or None, keep_broken=True),
                                       sdk, pre)
    except (RecipeError, VariantError) as err:
        raise JobError(str(err)) from err
    for note in notes:
        progress(note)
    cache = cache_folder(cache_dir)
    builds = []
    for recipe in recipes:
        builds.append(ensure_built(recipe, cache, rebuild, progress))
        on_built(builds[-1])
    return builds
