"""Command line: option declarations, their validation and the exit status; the work is the
library's (engine.py, views/). Exit status: 0 all measured or skipped, 1 a server failed
(compare: a regression; 3 an untested slowdown), 2 bad input, 128+N stopped by signal N."""

from __future__ import annotations

import math
import os
import sys
from functools import reduce
from importlib import import_module

import click

from . import __version__, defaults

CLIENTS = ("claude-desktop", "claude-code", "cursor", "vscode", "windsurf", "zed", "codex")
"""The editor configs --config reads (targets.configs.CLIENTS; kept here for a fast --help)."""
SHAPES = ("json", "csv", "markdown")
PLOT_KINDS = ("cold-start", "memory", "footprint", "timeline", "why", "http", "per-tool",
              "history")


def _progress(step) -> None:
    """Show a Step or a message (views.progress.emit; imported when first used, so that
    ``--help`` loads no view)."""
    from .views.progress import emit

    emit(step)


def _seed() -> int:
    """A random ``--seed``."""
    import random

    return random.randrange(2**32)


class InputError(click.ClickException):
    """Bad input (a recipe, a results file, a folder): exit status 2, like a usage error."""

    exit_code = 2


def _help_width() -> int:
    """The width, in columns, of click's help text: what its HelpFormatter takes when given
    none (``formatting.FORCED_WIDTH``, else the terminal's columns as
    ``shutil.get_terminal_size`` reads them, at most 80, less 2, at least 50), read without
    importing shutil, which (with bz2 and lzma) is a sixth of the time ``mcpstart --help``
    adds to ``import click`` (benchmarks/cli_startup.py)."""
    if click.formatting.FORCED_WIDTH is not None:
        return click.formatting.FORCED_WIDTH
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return max(min(columns or 80, 80) - 2, 50)


ELSEWHERE = {
    "history": "the runs kept in mcpstart-runs/ are drawn over time by `mcpstart plot "
               "--kind history` and compared with `mcpstart compare @-1 NEW`",
    "run": "`mcpstart measure` runs the measurements",
    "export": "`mcpstart report FILE --export-csv OUT` (and --export-*) writes the exports"}
"""Commands a user may look for that are options of another: where each is."""


class _Main(click.Group):
    """Keeps the command line for the results file; exits in order (interrupts.orderly_exit);
    gives every command's help its width (_help_width)."""

    def make_context(self, info_name, args, parent=None, **extra):
        extra.setdefault("terminal_width", _help_width())
        return super().make_context(info_name, args, parent, **extra)

    def parse_args(self, ctx, args):
        ctx.meta["mcpstart.argv"] = ["mcpstart", *args]
        return super().parse_args(ctx, args)

    def resolve_command(self, ctx, args):
        if args and args[0] in ELSEWHERE and args[0] not in self.commands:
            raise click.UsageError(f"no command {args[0]!r}: {ELSEWHERE[args[0]]}", ctx)
        return super().resolve_command(ctx, args)

    def invoke(self, ctx):
        from .interrupts import orderly_exit

        with orderly_exit(lambda text: click.echo(f"mcpstart: {text}", err=True)):
            return super().invoke(ctx)


def _lib(where: str, *args):
    """The library's ``module:function`` (imported when used), called on a value."""
    module, function = where.split(":")
    return lambda value: getattr(import_module(module, __package__), function)(value, *args)


def _finite(unit: str = ""):
    def check(value: float) -> float:
        if not math.isfinite(value):
            raise ValueError(f"{value} is not a finite number{unit}")
        return value
    return check


def opt(*names, check=None, **kw):
    """click.option; ``check(value)`` validates (a ValueError: a usage error); defaults shown."""
    def callback(ctx, param, value):
        try:
            return value if value is None or check is None else check(value)
        except ValueError as err:
            raise click.BadParameter(str(err), ctx, param) from err
    kw.setdefault("show_default", "default" in kw and not kw.get("is_flag"))
    return click.option(*names, callback=callback, **kw)


def apply(*decorators):
    return lambda command: reduce(lambda f, decorate: decorate(f), reversed(decorators), command)


SECONDS, FINITE_S = click.FloatRange(min=0, min_open=True), _finite(" of seconds")
recipes_opt = opt("--recipes", "recipes_dir", type=click.Path(file_okay=False),
                  help="Recipe folder (default: ./build-recipes, else the packaged one).")
cache_opt = opt("--cache-dir", type=click.Path(file_okay=False),
                help="Where builds go (default: $MCPSTART_CACHE_DIR, else ~/.cache/mcpstart).")
require_all_opt = opt("--require-all", is_flag=True, help="A skipped server fails the run.")
force_opt = opt("--force", is_flag=True, help="Replace an existing output file (-o, --export-*; "
                "never an input or the run's results file).")
quiet_opt = opt("--quiet", "-q", is_flag=True, help="No progress on stderr (errors show).")
tablefmt_opt = opt("--format", "tablefmt", default="github", check=_lib(
    ".views.table:check_format", ("json",)),
    help="Any tabulate format (md: github), or json: one object.")
fmt_opt = opt("--format", "fmt", default="github", check=_lib(".views.table:check_format",
              ("csv", "json")),
              help="A tabulate format (md: github), or csv / json: a record per value.")
full_opt = opt("--full", is_flag=True, help="Every row on a terminal too (there the default "
               "is a compact table; stdout to a file always gets every row).")
timeout_opt = opt("--timeout", "timeout_s", default=defaults.TIMEOUT_S, type=SECONDS,
                  check=FINITE_S, help="Seconds a start may take (the first: an npx download).")
probe_opt = opt("--probe-timeout", "probe_timeout_s", type=SECONDS, check=FINITE_S,
                help="Seconds each revision-matrix probe waits for an answer (default: 3x the "
                     f"server's slowest measured start, at least {defaults.PROBE_FLOOR_S:g} s).")
layer_opt = opt("--process-layer", "process_layer", type=click.Choice(["linux", "portable"]),
                help="How server processes are followed: linux (pidfds, /proc: every figure) "
                     "or portable (psutil; default where there are no pidfds: "
                     "docs/platforms.md).")
targets_opts = apply(
    opt("--server", "server_specs", multiple=True, metavar="NAME=COMMAND",
        help="Measure this command (split like a shell, run without one); repeatable."),
    opt("--config", "configs", multiple=True, type=click.Path(dir_okay=False),
        help="Every stdio server of an editor's MCP config; repeatable."),
    opt("--client", type=click.Choice(CLIENTS), help="The config's client, if not told."),
    opt("--cwd", type=click.Path(file_okay=False), help="Working directory of -- and --server."),
    opt("--endpoint", metavar="PATH", check=_lib(".endpoint:endpoint_path"),
        help="MCP endpoint path of -- and --server commands with {port} [default: /mcp]."),
    opt("--env", multiple=True, metavar="KEY=VALUE", check=_lib(".command:env_pairs"),
        help="Set a variable for every server (never shown or stored); repeatable."),
    opt("--input", "inputs", multiple=True, metavar="ID=VALUE", check=_lib(".command:env_pairs"),
        help="A VS Code ${input:ID} value (never shown or stored); repeatable."))
sdk_opts = apply(
    opt("--sdk", multiple=True, metavar="LANG=SPEC", help="Also the server LANG at SDK SPEC: a "
        "version, a,b, A..B (every release between), latest or a checkout path; repeatable."),
    opt("--pre", is_flag=True, help="--sdk ranges and latest include pre-releases."))
export_opts = apply(*(opt(f"--export-{name}", type=click.Path(dir_okay=False, allow_dash=True),
                          metavar="FILE", check=_lib(".views.exports:check_target"),
                          help=f"Also write the cold-start series in hyperfine's {name} shape "
                               "(-: to stdout, in place of the table).") for name in SHAPES))


def _input(work, *args, **kw):
    """Call the library: its ValueError is bad input (a recipe, a results file, an option
    that names no server, a file that cannot be written), exit status 2, said as it is."""
    try:
        return work(*args, **kw)
    except ValueError as err:
        raise InputError(str(err)) from err


def _exports(kw: dict):
    from .views.exports import ExportManager

    return _input(ExportManager, {name: kw.pop(f"export_{name}") for name in SHAPES})


def _refuse(outputs, force: bool, results_files) -> None:
    """Refuse ``outputs`` that are one of ``results_files`` (stored runs as their files) or
    exist without ``force`` (runs.refuse_overwrite), before anything is read or drawn."""
    from .runs import refuse_overwrite, resolve

    _input(lambda: refuse_overwrite(outputs, force, [resolve(p) for p in results_files]))


def _run(work: str, command, kw: dict, quiet: bool, show, *plan, **settings):
    """``engine.<work>`` of the job the options name (Settings fields by name, ``settings``)
    under a progress display; ``show(outcome, display)`` prints it; then says where the
    results went and exits (1: a server failed). A system that cannot measure
    (platforms.refusal) is said first, before anything of the engine is imported."""
    from contextlib import ExitStack

    from .platforms import refusal

    if why := refusal():
        raise InputError(why)
    from . import engine
    from .measure.settings import BASE, Settings
    from .redact import redact, redact_argv
    from .runs import claimed, keep, output_for, refuse_overwrite

    argv = redact_argv(click.get_current_context().meta["mcpstart.argv"])
    given, force, configs = kw["output"], kw.pop("force"), kw["configs"]
    kw["output"] = path = _input(output_for, given, force,
                                 defaults.OUTPUT if work == "measure" else None, configs)
    if "exports" in kw:
        own = [path, path.with_suffix(".toml")] if path else []
        _input(refuse_overwrite, kw["exports"].targets.values(), force, [*configs, *own])
    from .views.progress import Display

    with ExitStack() as stack:
        if path:  # before the earlier run moves into the store: a concurrent run is refused
            _input(stack.enter_context, claimed(path))
        display = stack.enter_context(Display(quiet=quiet))
        job = _input(engine.job_for, command, kw, Settings.from_options(BASE, kw, **settings),
                     argv, _progress, *plan)
        if given is None and path and (kept := _input(keep, path)):  # the input is valid
            _progress(f"the previous run is kept as {kept} (mcpstart compare @-1 NEW)")
        display.mask = lambda text, secrets=job.secrets: redact(text, secrets)
        try:
            outcome = _input(getattr(engine, work), job)
        except SystemExit as stop:  # an exit signal: the table of what was measured before it
            if getattr(stop, "outcome", None) is not None and stop.outcome.results.servers:
                show(stop.outcome, display)
            raise
        show(outcome, display)
        if said := _input(outcome.written):
            _progress(said)
    sys.exit(1 if outcome.failed else 0)


def _memory_bytes() -> int:
    """This machine's physical memory in bytes."""
    import psutil

    return psutil.virtual_memory().total


HTTP_OPTIONS = ("load_seconds", "load_users", "load_rate", "server_cpus", "headers")
"""measure's options that only a server measured over HTTP uses."""


def _given(names: tuple[str, ...]) -> list[str]:
    """The flag (e.g. "--load-s") of each option of ``names`` given on the command line, in
    the command's order of options."""
    from click.core import ParameterSource

    ctx = click.get_current_context()
    return [p.opts[0] for p in ctx.command.params if p.name in names
            and ctx.get_parameter_source(p.name) is ParameterSource.COMMANDLINE]


def _show(loaded: list, fmt: str, full: bool, exports, *args) -> None:
    """Print the table or records on stdout (compact on a terminal, without ``full``, and
    cut into blocks of columns that fit its width); what does not fit the format on
    stderr."""
    from shutil import get_terminal_size

    from .views.exports import present

    compact = not full and click.get_text_stream("stdout").isatty()
    click.echo(_input(present, loaded, fmt, exports, *args, compact=compact,
                      width=get_terminal_size().columns if compact else None,
                      aside=lambda text: click.echo(text, err=True)), nl=False)


def _load(paths, reader: str) -> list:
    """Read results files (a stored run named as ``@-1``, ``@N``: runs.resolve); a file a
    run is still writing, or that a killed run left unfinished, is read with a warning."""
    from .results import load
    from .runs import resolve

    loaded = [_input(lambda p=p: load(resolve(p), reader)) for p in paths]
    for path, results in zip(paths, loaded):
        if results.incomplete:
            _progress(f"{path} is incomplete: a run is still writing it, or was killed before "
                      "it finished; it holds what was measured so far")
    return loaded


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]},
             epilog="""\b
Typical use, in any folder (the reference recipes ship with mcpstart):
  mcpstart doctor                          # what this machine gives mcpstart
  mcpstart measure --runs 6 > table.md     # build what is stale, measure, print a table
  mcpstart report mcpstart-results.json    # the table again, from the results file""")
@click.version_option(__version__, "-V", "--version", prog_name="mcpstart")
def main() -> None:
    """Profile MCP servers (each official SDK's reference server, a C floor, or any you name):
    cold start and phases, memory, round trips, footprint, revisions, sessions, HTTP load."""


@main.command(short_help="Build the reference servers (cached; only what changed).",
              epilog="\b\nExample:\n  mcpstart build --rebuild rust go")
@click.argument("names", nargs=-1)
@apply(opt("--rebuild", is_flag=True, help="Build even when an up-to-date build exists."),
       sdk_opts, recipes_opt, cache_opt, require_all_opt, quiet_opt)
def build(names, rebuild, sdk, pre, recipes_dir, cache_dir, require_all, quiet) -> None:
    """Build the servers NAMES (default: every recipe), cached by a hash of recipe, sources and
    toolchains. Exit status: 0 built, up to date or skipped (a missing toolchain); 1 a build
    failed (its log's tail is shown; with --require-all: or skipped); 2 bad input."""
    from .engine import build as build_all
    from .targets.build import report_line

    from .views.progress import Display

    with Display(quiet=quiet) as display:  # a build's line goes to stdout, the live line away
        builds = _input(build_all, list(names), recipes_dir, cache_dir, rebuild, _progress,
                        lambda item: (display.close(), click.echo(report_line(item))), sdk, pre)
    sys.exit(int(any(b.status == "failed" or (b.status == "skipped" and require_all)
                     for b in builds)))


@main.command(short_help="Build what is stale, measure each server, print a table.",
              context_settings={"allow_interspersed_args": False},
              epilog="\b\nExamples:\n  mcpstart measure --runs 6 > table.md\n"
                     "  mcpstart measure --config ~/.cursor/mcp.json --budget 10,30,60\n"
                     "  mcpstart measure --transport http   # over Streamable HTTP, with load\n"
                     "  mcpstart measure --call count --args '{\"n\": 30}' -- ./server")
@apply(
    opt("--runs", default=defaults.RUNS, type=click.IntRange(1, 10_000), help="Counted runs."),
    opt("--warmup", default=defaults.WARMUP, type=click.IntRange(0, 1_000), help="Warm-ups."),
    opt("--only", multiple=True, metavar="NAME", help="Measure only this server; repeatable."),
    opt("--output", "-o", type=click.Path(dir_okay=False), help="Results file (JSON; a TOML "
        f"copy beside) [default: {defaults.OUTPUT}, the run before kept in mcpstart-runs/]."),
    force_opt,
    timeout_opt, opt("--protocol-version", "requested_revision", default=defaults.REVISION,
                     check=_lib(".wire:revision"), help="Revision asked for in initialize."),
    opt("--payload-bytes", default=defaults.PAYLOAD_BYTES, type=click.IntRange(1, 128 << 20)),
    opt("--call", "call_tool", metavar="TOOL", help="Tool to call (default: reverse_text)."),
    opt("--args", "call_args", metavar="JSON", help='Arguments of --call, any JSON object: '
        "'{}' (none), '{\"n\": 30}'; \"{payload}\" in a string value becomes the large "
        'call\'s text (none: no large call) [default: {"text": "{payload}"}].'),
    opt("--workload", metavar="FILE|NAME", check=_lib(".workload:load"),
        help="Tools to call, per tool, their weights and the session shape (a workload "
             "file, or a packaged one by name: docs/workloads.md); replaces --call/--args."),
    opt("--mock-latency-ms", "mock_api_latency_ms", default=0.0,
        type=click.FloatRange(min=0), check=_finite(),
        help="Wait of the mock API a workload's {mock_api} arguments call, per answer."),
    targets_opts, opt("--name", help="Name of the server given after --."),
    opt("--floor", is_flag=True, help="Also measure the C floor server (the least possible)."),
    opt("--pause-ms", default=defaults.PAUSE_MS, type=click.FloatRange(min=0), check=FINITE_S),
    opt("--order", type=click.Choice(["interleave", "sequential"]),
        help="Shuffled rounds of one run per server (default for several), or per server."),
    opt("--seed", type=click.IntRange(min=0), default=_seed,
        show_default=False, help="Seed of the shuffle (default: random)."),
    opt("--cache-state", type=click.Choice(["warm", "cold"]), default="warm",
        help="cold: evict the server's files from the page cache before every run."),
    opt("--round-trips", default=defaults.ROUND_TRIPS, type=click.IntRange(0, 1_000_000)),
    opt("--attribution/--no-attribution", default=True,
        help="Where each start goes: CPU and waits; Python imports, Go package inits, JVM "
             "classes, Node.js module evaluation, a native program's dynamic loading."),
    opt("--profiled-starts", type=click.IntRange(1, 1000), metavar="N",
        help="Start-up profiles per server, after the counted starts [default: "
             f"{defaults.PROFILED_STARTS}; {defaults.PROFILED_STARTS_COMPARE} with --sdk, "
             "so that compare can name what changed]."),
    opt("--memory-limit", "memory_limit_mib", type=click.IntRange(min=1), metavar="MIB",
        help="Each spawned server in a memory cgroup of its own limited to MIB, as in a "
             "container (Linux; the row says when none can be set)."),
    probe_opt, opt("--budget", check=_lib(".measure.startup:parse_limits"), metavar="S,...",
                   help="Startup limits of an all-at-once start (several named: 3,10,30,60)."),
    opt("--sessions", type=click.IntRange(2, 64), metavar="N", help="Also N of each at once."),
    opt("--fallback-timeout", "fallback_timeout_s", type=SECONDS, check=FINITE_S,
        help="Seconds a dual-era client waits for server/discover (default 10, as the SDKs)."),
    opt("--transport", type=click.Choice(["stdio", "http", "both"]), default="stdio",
        help="Reference servers over stdio, Streamable HTTP ({port} in argv), or both."),
    opt("--url", help="A Streamable HTTP server already running (no start-up figures)."),
    opt("--header", "headers", multiple=True, metavar="'NAME: VALUE'",
        help="A header sent with every request to each HTTP server (value masked)."),
    opt("--remote", is_flag=True, help="Also measure a config's HTTP entries (--config)."),
    opt("--load-s", "load_seconds", type=click.FloatRange(min=0), check=FINITE_S,
        help=f"Seconds per HTTP load scenario (0: none) [default: {defaults.LOAD_S:g}]."),
    opt("--load-users", default=defaults.LOAD_USERS, type=click.IntRange(1, 1000)),
    opt("--server-cpus", default=1, type=click.IntRange(1, 1024), metavar="N",
        help="CPUs an HTTP server is pinned to under load, as a container's (the engine gets "
             "the rest; none pinned when that leaves it none)."),
    opt("--load-rate", default=defaults.LOAD_RATE, type=click.FloatRange(min=0, min_open=True),
        check=_finite(),
        help="Requests/s of the fixed-rate load scenarios (closed and open loop), in all."),
    opt("--load-workers", default=1, type=click.IntRange(1, 1024), metavar="N",
        help="Run the load engine as a Locust master and N local workers, on the CPUs not "
             "given to the server (1: one process)."),
    opt("--load-remote-workers", default=0, type=click.IntRange(0, 1024), metavar="M",
        help="Also wait for M workers started elsewhere by 'mcpstart load-worker HOST:PORT'."),
    opt("--load-master", metavar="HOST:PORT", check=_lib(".measure.load_workers:checked"),
        help="Where the load master listens for workers (default: a free loopback port)."),
    opt("--rebuild", is_flag=True, help="Rebuild the servers first."), sdk_opts, recipes_opt,
    cache_opt, require_all_opt, layer_opt, fmt_opt, full_opt, export_opts, quiet_opt)
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def measure(command, quiet, fmt, full, **kw) -> None:
    """Measure the reference set (built when stale), or -- COMMAND, --server, --config:
    WARMUP + RUNS cold starts each in rounds, with phases; the revision matrix; 2026-07-28
    cold starts; one session (tools, idle memory, round trips, a large call's peak); an
    all-at-once start (--budget). Table to stdout, progress to stderr, samples to -o.
    Exit status: 0 all measured or skipped; 1 a server failed (the table says why); 2 bad
    input; 128+N stopped by signal N (what was measured stays in the results file)."""
    from .wire import ToolCall

    kw["exports"] = exports = _exports(kw)
    kw["http_options"] = _given(HTTP_OPTIONS)
    call = _input(ToolCall.parse, kw["call_tool"], kw["call_args"])
    if kw["workload"] is not None:
        if call is not None:
            raise InputError("--workload names the tools to call: give it without --call "
                             "and --args")
        call = kw["workload"].calls[0]
    if kw["load_remote_workers"] and kw["load_master"] is None:
        raise InputError("--load-remote-workers needs --load-master HOST:PORT, the address "
                         "the remote workers connect to")
    if kw["load_users"] < kw["load_workers"] + kw["load_remote_workers"]:
        raise InputError("--load-users must be at least the load workers (local and remote): "
                         "a worker without users sends nothing")

    def show(outcome, display) -> None:
        shown = outcome.shown()
        display.outcomes(shown.to_dict()["servers"])
        _show([shown], fmt, full, exports)
    mib = kw.pop("memory_limit_mib")
    if mib and mib * 2**20 > (total := _memory_bytes()):
        _progress(f"--memory-limit {mib} MiB is above this machine's memory "
                  f"({total / 2**20:.0f} MiB): the limit cannot bind")
    kw["profiled_starts"] = kw["profiled_starts"] or (
        defaults.PROFILED_STARTS_COMPARE if kw["sdk"] else defaults.PROFILED_STARTS)
    _run("measure", command, kw, quiet, show, kw["only"], kw["name"], kw["floor"], call=call,
         memory_limit_bytes=mib * 2**20 if mib else None)


@main.command(short_help="Which protocol revisions each server speaks (the revision matrix).",
              epilog="\b\nExamples:\n  mcpstart revisions --config .vscode/mcp.json -o m.json\n"
                     "  mcpstart revisions -- npx -y @modelcontextprotocol/server-memory")
@click.argument("names", nargs=-1)
@apply(targets_opts, probe_opt, timeout_opt,
       opt("--output", "-o", type=click.Path(dir_okay=False),
           help="Also write a results file (JSON, with its TOML copy)."), force_opt,
       sdk_opts, recipes_opt, cache_opt, layer_opt, tablefmt_opt, quiet_opt)
def revisions(names, tablefmt, quiet, **kw) -> None:
    """Probe each server NAMES (default: all), or the one after -- COMMAND, in a fresh
    process per probe: server/discover (2026-07-28), and initialize asking each revision and
    an unknown one. Prints each outcome, the answer or the error verbatim, and its time. A
    probe that gets no answer within its wait (--probe-timeout, else 3x the first start's
    handshake, at least 5 s) leaves its revision unknown, not unsupported.
    Exit status: 0 all probed; 1 one could not be spawned or built, or no revision of it is
    known to be supported; 2 bad input."""
    from .views.revisions import matrix_json, matrix_table

    argv = click.get_current_context().meta["mcpstart.argv"]
    command, names = (names, ()) if "--" in argv else ((), names)  # revisions -- COMMAND
    def show(outcome, display) -> None:
        shown = outcome.shown()
        display.outcomes(shown.to_dict()["servers"])  # status and warnings, on stderr
        click.echo(matrix_json(shown) if tablefmt == "json" else matrix_table(shown, tablefmt))
    _run("revisions", command, kw, quiet, show, names)


@main.command(short_help="Print the table of results files again, or export them.",
              epilog="""\b
Example: two machines' cold start and idle memory, servers as rows:
  mcpstart report laptop.json ci.json --label laptop --label ci \\
      --metrics handshake_ms.median --metrics memory.idle_rss_bytes --transpose""")
@click.argument("results_files", nargs=-1, type=click.Path(dir_okay=False))
@apply(fmt_opt, full_opt,
       opt("--metrics", multiple=True, metavar="PATH", help="Only this row; repeatable, in order."),
       opt("--transpose", is_flag=True, help="Servers as rows, metrics as columns."),
       opt("--label", "labels", multiple=True, help="Each file's label (default: its hostname)."),
       opt("--list-metrics", is_flag=True, help="List the metric paths --metrics takes; exit."),
       export_opts, force_opt)
def report(results_files, fmt, full, metrics, transpose, labels, list_metrics, force,
           **kw) -> None:
    """Print the table of results files without measuring again (default:
    mcpstart-results.json here; @-1, @N: a stored run): a column per server, per server and
    file for several. Exit status 2 for a file that cannot be read or is no results file."""
    if list_metrics:
        from .views.table import metric_list

        click.echo(metric_list(), nl=False)
        return
    exports = _exports(kw)  # refused before any file is read
    results_files = results_files or [defaults.OUTPUT]
    _refuse(exports.targets.values(), force, results_files)
    _show(_load(results_files, "report"), fmt, full, exports,
          list(labels) or None, metrics, transpose)


@main.command(short_help="Compare two results files, or two variants; exit 1 on a regression.",
              epilog="\b\nExamples, in CI (Markdown for a pull-request comment):\n"
                     "  mcpstart compare main-results.json mcpstart-results.json > comment.md\n"
                     "  mcpstart compare            # the previous run (@-1) against the last\n"
                     "  mcpstart compare base.json pr.json --threshold memory=5 --format json\n"
                     "  mcpstart compare r.json --old-variant python@2.2.0 --new-variant python")
@click.argument("old", default="@-1", type=click.Path(dir_okay=False))
@click.argument("new", required=False, type=click.Path(dir_okay=False))
@apply(opt("--threshold", "thresholds", multiple=True, metavar="[FAMILY=]PCT",
           check=_lib(".views.compare:thresholds_from"),
           help="Percent a change for the worse must reach to count, per family: time, "
                "calls, memory, footprint, tools, load (a bare PCT: all); repeatable "
                f"[default: {defaults.THRESHOLD_PCT:g} each, calls "
                f"{defaults.THRESHOLDS_PCT['calls']:g}]."),
       opt("--alpha", default=defaults.ALPHA, type=click.FloatRange(0, 1, min_open=True)),
       opt("--pair", type=click.Choice(["name", "command"]), default="name",
           help="Pair the servers of OLD and NEW by name or by the command that runs them."),
       opt("--old-variant", metavar="NAME", help="With one file: its server NAME is OLD."),
       opt("--new-variant", metavar="NAME", help="With one file: its server NAME is NEW."),
       opt("--format", "tablefmt", default="github", check=_lib(".views.table:check_format",
           ("json",)), help="A tabulate format, or json: the verdict and each metric's."))
def compare(old, new, thresholds, alpha, pair, old_variant, new_variant, tablefmt) -> None:
    """Compare NEW with OLD, server by server, or two servers of one file (--old-variant,
    --new-variant: two SDK variants measured in the same interleaved rounds, the gate a
    drifting machine cannot fool). Without NEW, NEW is mcpstart-results.json; without OLD
    too, OLD is the run before it (@-1: the store of past runs). Each series' medians, ratio and an exact one-sided
    Mann-Whitney U test that NEW is slower; memory, footprint, tool list and load
    throughput by their change against their family's threshold (docs/compare.md).
    Exit status: 1 a regression (p <= ALPHA and NEW's median THRESHOLD percent above
    OLD's; a single value THRESHOLD percent worse; a server ok in OLD failed in NEW) or a
    server of OLD missing from NEW; 3 none of these, but a median above its threshold with
    too few runs to test it (an untested slowdown; more --runs decide it); 0 none; 2 bad
    input, or no server in both files."""
    from .views.compare import compare as compare_results, render, sides, to_json

    if not (new or old_variant or new_variant):
        new = defaults.OUTPUT  # `mcpstart compare`: the previous run against the last one
    before, after, names = _input(sides, lambda path: _load([path], "compare")[0].to_dict(),
                                  (old, new), (old_variant, new_variant))
    if not old_variant:  # a stored run named with the file it is, for the record
        from .runs import resolve

        names = tuple(n if str(resolve(n)) == n else f"{n} ({resolve(n)})" for n in names)
    comparison = compare_results(before, after, thresholds, alpha,
                                 same_run=bool(old_variant), pair=pair)
    click.echo(to_json(comparison, *names) if tablefmt == "json"
               else render(comparison, tablefmt, *names), nl=tablefmt != "json")
    sys.exit(comparison.exit_status)


@main.command(short_help="Why a server starts slowly: CPU, waits, launcher, imports.",
              epilog="\b\nExample:\n  mcpstart why mcpstart-results.json --server python")
@click.argument("results_file", default=defaults.OUTPUT, type=click.Path(dir_okay=False))
@apply(opt("--server", "name", metavar="NAME", help="The server (default: the first measured)."))
def why(results_file, name) -> None:
    """Print where one server's cold start went (docs/startup.md): CPU against waiting, page
    faults, context switches, bytes read, each process of a launcher chain, a Python
    server's imports per distribution with the transport finding, Go, Node.js and JVM start-up
    profiles, a native program's dynamic loading, and the idle memory by class of mapping.
    Exit status 2 for a file
    that cannot be read or a server without the breakdown."""
    from .views.why import why as breakdown

    click.echo(_input(breakdown, _load([results_file], "why")[0].to_dict(), name), nl=False)


@main.command(short_help="Draw charts of a results file (PNG or SVG).",
              epilog="\b\nExample:\n  mcpstart plot r.json -o cold.svg --kind cold-start")
@click.argument("results_files", nargs=-1, type=click.Path(dir_okay=False))
@apply(opt("--output", "-o", required=True, type=click.Path(dir_okay=False), metavar="OUT",
           check=_lib(".views.plot:image_path"), help="Image to write: .png or .svg."),
       opt("--kind", type=click.Choice(PLOT_KINDS), help="One chart (default: all it can)."),
       force_opt)
def plot(results_files, output, kind, force) -> None:
    """Draw charts of a results file (default: mcpstart-results.json here; @-1, @N: a
    stored run): cold start per server (each run, the median and its confidence interval),
    memory (idle PSS per process, peak), footprint, an all-at-once start's timeline, HTTP
    (cold start, load); history: each metric against the SDK version of --sdk variants in
    one file, or across several files (default: every stored run, then the last)."""
    from pathlib import Path

    from .runs import stored
    from .views.plot import write

    if len(results_files) > 1 and kind != "history":
        raise click.UsageError("several results files are drawn by --kind history only")
    labels = list(results_files) or None
    if not results_files and kind == "history":
        runs = [str(p) for p in stored()]
        last = [defaults.OUTPUT] if Path(defaults.OUTPUT).exists() else []
        results_files = runs + last
        labels = [f"@{Path(p).stem.lstrip('0')}" for p in runs] + ["last"] * len(last)
    results_files = results_files or [defaults.OUTPUT]
    _refuse([output], force, results_files)
    results = _load(results_files, "plot")
    missing = _input(write, results if len(results) > 1 else results[0], kind, output,
                     labels if len(results) > 1 else None)
    if missing:
        _progress(f"the plot's font has no glyph for {' '.join(sorted(missing))}: "
                  "drawn as boxes")
    _progress(f"wrote {output}")


@main.command(short_help="Write one self-contained HTML report of results files.",
              epilog="\b\nExample, two runs in one page for release notes:\n"
                     "  mcpstart html @-1 mcpstart-results.json -o report.html")
@click.argument("results_files", nargs=-1, type=click.Path(dir_okay=False))
@apply(opt("--output", "-o", required=True, type=click.Path(dir_okay=False), metavar="OUT",
           help="The HTML file to write."),
       opt("--label", "labels", multiple=True, help="Each file's label (default: its hostname)."),
       force_opt)
def html(results_files, output, labels, force) -> None:
    """Write one HTML file that opens offline (default: mcpstart-results.json here; @-1,
    @N: a stored run): the table, each file's plots (the "plot" extra), the warnings, the
    raw samples and the machine, all inside the file. `report --format html` is the table
    alone. Exit status 2 for a file that cannot be read or written."""
    from .views.page import write

    results_files = results_files or [defaults.OUTPUT]
    _refuse([output], force, results_files)
    _input(write, _load(results_files, "html"), output, list(labels) or None)
    _progress(f"wrote {output}")


@main.command(short_help="Run a load worker for a master elsewhere (measure --load-master).",
              epilog="\b\nExample, on a second machine (the first runs measure --load-master "
                     "0.0.0.0:5557 --load-remote-workers 1):\n  mcpstart load-worker "
                     "10.0.0.1:5557")
@click.argument("master", metavar="HOST:PORT", callback=lambda _c, _p, value: _input(
    _lib(".measure.load_workers:checked"), value))
@apply(opt("--once", is_flag=True, help="Serve one run, then exit (default: one run after "
                                      "another, until interrupted)."))
def load_worker(master, once) -> None:
    """Serve the load engine of a measure run elsewhere as one of its Locust workers, with
    mcpstart's locustfile; the run's configuration (server address, scenario, calls) comes
    from its master. Each scenario is a run of its own: without --once the worker joins the
    next one until interrupted. Exit status: 0 served; 1 the worker failed; 2 bad input."""
    from .measure.load import LOCUSTFILE, engine_version
    from .measure.load_workers import serve

    sys.exit(serve(master, once, LOCUSTFILE, engine_version()))


@main.command(short_help="Check the toolchains and what this machine gives mcpstart.",
              epilog="\b\nExample, before a CI job that needs every server:\n"
                     "  mcpstart doctor --require-all && mcpstart measure --require-all")
@apply(recipes_opt, opt("--require-all", is_flag=True, help="Count every toolchain as needed."),
       opt("--config", "configs", multiple=True, type=click.Path(dir_okay=False),
           help="Also check every program this editor config starts; repeatable."), tablefmt_opt)
def doctor(recipes_dir, require_all, configs, tablefmt) -> None:
    """Which toolchains the recipes and launchers (npx, uvx, docker ...) find, whether
    clear_refs, PSS, the child subreaper and pidfds work (each probed on a child), the load,
    and what each gap means for the figures. Exit status: 0 a default run has what it needs;
    1 something it needs (or a --config server's program) is missing."""
    from .doctor import render, run_checks, to_json, verdict

    checks = run_checks(recipes_dir, require_all, configs)
    click.echo(to_json(checks) if tablefmt == "json" else render(checks, tablefmt), nl=False)
    sys.exit(verdict(checks)[1])
