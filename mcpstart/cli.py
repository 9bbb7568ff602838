"""Command line: parses options and calls the library. Exit status: 0 every server measured
or skipped, 1 a server failed (doctor: something a default run needs is missing), 2 usage or
input error, 128+N stopped by signal N."""

from __future__ import annotations

import math
import os
import random
import signal
import sys
from contextlib import contextmanager
from pathlib import Path

import click

from . import __version__, defaults
from .redact import redact

CLIENT_CHOICES = ("claude-desktop", "claude-code", "cursor", "vscode", "windsurf", "zed", "codex")
"""The editor configs --config reads (targets.configs.CLIENTS; kept here for a fast --help)."""
LONG_FORMATS = ("csv", "json")
"""--format values besides tabulate's: long-form records (views/exports/long_csv.py, long_json.py)."""
EXPORTS = (("json", "hyperfine's JSON shape (seconds)"), ("csv", "hyperfine's CSV (seconds)"),
           ("markdown", "hyperfine's Markdown table"))
"""--export-NAME options, each written by views/exports/hyperfine_NAME.py."""



class InputError(click.ClickException):
    """Bad input (a recipe, a results file): exit status 2, like a usage error."""

    exit_code = 2


def _progress(step) -> None:
    """Show a progress Step (or a plain message) through the command's display (stderr)."""
    ctx = click.get_current_context(silent=True)
    display = ctx.meta.get("mcpstart.display") if ctx else None
    if display is None:
        click.echo(f"mcpstart: {getattr(step, 'text', step)}", err=True)
    else:
        display(step)


@contextmanager
def _display(quiet: bool):
    """The live progress display (views.progress.Display) on stderr for this command; what
    ``_progress`` shows goes through it. Cleared and stopped on the way out, whatever
    happens."""
    from .views.progress import Display

    with Display(quiet=quiet) as display:
        click.get_current_context().meta["mcpstart.display"] = display
        yield display


def _env_pairs(ctx, param, values) -> dict[str, str]:
    pairs = {}
    for value in values:
        key, sep, val = value.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{value!r} is not KEY=VALUE", ctx, param)
        pairs[key] = val
    return pairs


class _Main(click.Group):
    """The top-level group: keeps mcpstart's own command line for the results file, and
    turns exit signals into an orderly exit that shuts down every server first."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["mcpstart.argv"] = ["mcpstart", *args]
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context):
        from .interrupts import exit_on_signals
        from .stdio.session import shutdown_all

        with exit_on_signals():
            try:
                return super().invoke(ctx)
            except SystemExit as stop:
                if isinstance(stop.code, int) and stop.code > 128:  # shown even with --quiet
                    click.echo(f"mcpstart: stopped by {signal.Signals(stop.code - 128).name}; "
                               "servers finished before it are in the results file", err=True)
                raise
            finally:
                shutdown_all()  # sessions an error or signal cut short


def _redacted_argv() -> list[str]:
    """mcpstart's own command line with the values of --env replaced by ***."""
    argv, redact_next = [], False
    for arg in click.get_current_context().meta["mcpstart.argv"]:
        if redact_next:
            arg, redact_next = arg.split("=", 1)[0] + "=***", False
        elif arg == "--env":
            redact_next = True
        elif arg.startswith("--env="):
            arg = arg.split("=", 2)[0] + "=" + arg.split("=", 2)[1] + "=***"
        argv.append(arg)
    return argv


def _finite(ctx, param, value: float) -> float:
    if not math.isfinite(value):
        raise click.BadParameter(f"{value} is not a finite number of seconds", ctx, param)
    return value


def _format_check(long_formats: tuple[str, ...] = ()):
    """A --format callback: any tabulate format, or one of ``long_formats``."""
    def check(ctx, param, value: str) -> str:
        from tabulate import tabulate_formats

        if value not in (*tabulate_formats, *long_formats):
            either = f"{', '.join(long_formats)} or one of " if long_formats else "one of "
            raise click.BadParameter(f"{value!r} is not {either}{', '.join(tabulate_formats)}",
                                     ctx, param)
        return value
    return check


def _check_folder(path: Path, ctx, param) -> None:
    """Refuse a file path whose folder cannot be written into."""
    if not path.parent.is_dir() or not os.access(path.parent, os.W_OK | os.X_OK):
        raise click.BadParameter(f"cannot write into folder {str(path.parent)!r}", ctx, param)


def _export_target(ctx, param, value: str | None) -> str | None:
    """An --export-* FILE: ``-`` (stdout), or a file in a folder that can be written."""
    if value is not None and value != "-":
        _check_folder(Path(value), ctx, param)  # a folder: refused by click.Path(dir_okay=False)
    return value


def _writable_output(ctx, param, value: str | None) -> Path | None:
    from .results import is_results_file

    if value is None:  # optional (revisions): no results file
        return None
    if not value.strip():
        raise click.BadParameter("is empty", ctx, param)
    path = Path(value)
    if path.with_suffix(".toml") == path:
        raise click.BadParameter("names the JSON results file; its TOML copy is written "
                                 "beside it (use a .json name)", ctx, param)
    _check_folder(path, ctx, param)
    for target in (path, path.with_suffix(".toml")):
        if target.is_dir() or (target.exists() and not is_results_file(target)):
            raise click.BadParameter(f"{str(target)!r} exists and is not an mcpstart results "
                                     "file; not overwriting it", ctx, param)
    return path


def _revision(ctx, param, value: str) -> str:
    if not value.strip():
        raise click.BadParameter("is empty", ctx, param)
    return value


def _cache(option: str | None) -> Path:
    from .targets.build import cache_root

    root = cache_root(option)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InputError(f"cannot use cache folder {root}: {err.strerror or err}") from err
    if not os.access(root, os.W_OK | os.X_OK):
        raise InputError(f"cannot write into cache folder {root}")
    return root


def _recipe_folder(option: str | None) -> Path:
    """The recipe folder (--recipes, ./build-recipes, else the packaged copy); says which."""
    from .targets.recipes import RecipeError, find_recipe_folder

    try:
        folder, which = find_recipe_folder(option)
    except RecipeError as err:
        raise InputError(str(err)) from err
    _progress(which)
    return folder


def _recipes(folder: str | None, names: tuple[str, ...]):
    from .targets.recipes import RecipeError, load_recipes

    try:
        return load_recipes(_recipe_folder(folder), list(names) or None)
    except RecipeError as err:
        raise InputError(str(err)) from err


recipes_option = click.option(
    "--recipes", "recipes_dir", type=click.Path(file_okay=False),
    help="Folder of build recipes (<name>.toml); a recipe's `source` is relative to this "
         "folder's parent (the checkout).")
cache_option = click.option(
    "--cache-dir", type=click.Path(file_okay=False),
    help="Where builds go. Default: $MCPSTART_CACHE_DIR, else the user cache dir "
         "(~/.cache/mcpstart on Linux).")
require_all_option = click.option(
    "--require-all", is_flag=True,
    help="Treat a server skipped for a missing toolchain as failed (exit 1). CI uses this.")
format_option = click.option(
    "--format", "tablefmt", default="github", show_default=True, callback=_format_check(),
    help="Table format: any tabulate format, e.g. github (Markdown), plain, simple, grid.")
report_format_option = click.option(
    "--format", "fmt", default="github", show_default=True, callback=_format_check(LONG_FORMATS),
    help="Any tabulate format (github is Markdown; plain, simple, grid, ...), or csv / json: "
         "long form, one record {server, file, metric, value, unit} per server, file and "
         "metric, values in the units of their keys.")
quiet_option = click.option(
    "--quiet", "-q", is_flag=True,
    help="No progress on stderr (errors still show). Without it: one updating line on a "
         "terminal, plain lines otherwise; NO_COLOR turns colours off.")


def export_options(command):
    """--export-json, --export-csv and --export-markdown (hyperfine's names and shapes)."""
    for name, shape in reversed(EXPORTS):
        command = click.option(
            f"--export-{name}", type=click.Path(dir_okay=False, allow_dash=True),
            metavar="FILE", callback=_export_target,
            help=f"Also write the cold-start series as {shape}; - writes it to stdout in "
                 "place of the table.")(command)
    return command


def _exports(export_json, export_csv, export_markdown) -> dict[str, str | None]:
    """The --export-* options as {name: FILE or "-" or None}; a usage error when more than
    one of them goes to stdout."""
    targets = {"json": export_json, "csv": export_csv, "markdown": export_markdown}
    dashes = [f"--export-{name}" for name, target in targets.items() if target == "-"]
    if len(dashes) > 1:
        raise click.UsageError(f"{' and '.join(dashes)} both write to stdout (-): give one "
                               "of them a file")
    return targets


def _show(loaded: list, fmt: str, targets: dict[str, str | None], labels=None, metrics=(),
          transpose: bool = False) -> None:
    """Write the --export-* files, then print the table (or long-form csv / json records)
    of ``loaded`` results, unless an export went to stdout (``-``) in its place."""
    from importlib import import_module

    from .views.table import UnknownMetric, table

    long_form = {"csv": "long_csv.records_csv", "json": "long_json.records_json"}.get(fmt)
    if long_form:
        module, function = long_form.split(".")
        long_form = getattr(import_module(f".views.exports.{module}", __package__), function)
    try:
        text = (long_form(loaded, labels, metrics) if long_form else
                table(loaded, fmt, labels=labels, metrics=metrics, transpose=transpose) + "\n")
    except UnknownMetric as err:
        raise click.BadParameter(str(err), param_hint="'--metrics'") from err
    for name, target in targets.items():
        if not target:
            continue
        export = getattr(import_module(f".views.exports.hyperfine_{name}", __package__),
                         f"export_{name}")(loaded, labels)
        if target == "-":
            text = export
            continue
        try:
            Path(target).write_text(export, encoding="utf-8")
        except OSError as err:
            raise InputError(f"cannot write {target}: {err.strerror or err}") from err
    click.echo(text, nl=False)


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]},
             epilog="""\b
Typical use, in any folder (the reference recipes ship with mcpstart):
  mcpstart doctor                          # what this machine gives mcpstart
  mcpstart measure --runs 6 > table.md     # build what is stale, measure, print a table
  mcpstart report mcpstart-results.json    # the table again, from the results file
  mcpstart build --rebuild python          # rebuild one server""")
@click.version_option(__version__, prog_name="mcpstart")
def main() -> None:
    """Profile MCP servers over the stdio transport.

    mcpstart builds the reference `reverse_text` server with each official SDK
    (TypeScript, Python, Go, Rust) and in C (the floor), or takes any server you name
    (-- COMMAND, --server, an editor's --config), spawns each over stdio, and measures
    cold start (spawn to initialize response, and its phases), memory of the whole
    process tree idle and under a large tool call, warm round trips, artifact size,
    dependency count, the protocol revisions it speaks and an editor's startup budget.
    """


def _tool_call(name: str | None, args: str | None):
    """--call and --args as a wire.ToolCall (None: the default, reverse_text)."""
    import json

    from .wire import PAYLOAD_MARK, ToolCall

    if args is not None and name is None:
        raise click.UsageError("--args needs --call TOOL")
    if name is None:
        return None
    if args is None:
        return ToolCall(name)
    try:
        arguments = json.loads(args)
    except ValueError as err:
        raise click.BadParameter(f"not JSON: {err}", param_hint="--args") from err
    if not isinstance(arguments, dict):
        raise click.BadParameter("must be a JSON object", param_hint="--args")
    if PAYLOAD_MARK not in json.dumps(arguments):
        raise click.BadParameter(f'no "{PAYLOAD_MARK}" in any string value: nothing would '
                                 "carry the payload", param_hint="--args")
    return ToolCall(name, arguments)


def _budget(ctx, param, value: str | None) -> list[float] | None:
    if value is None:
        return None
    try:
        limits = sorted({float(v) for v in value.split(",") if v.strip()})
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a list of seconds, e.g. 10,30,60", ctx, param)
    if not limits or not all(math.isfinite(v) and v > 0 for v in limits):
        raise click.BadParameter(f"{value!r}: give positive seconds, e.g. 10,30,60", ctx, param)
    return limits


def _plan(command, server_specs, configs, client, name, cwd, only, floor, recipes_dir):
    from .targets.plan import PlanError, make_plan

    try:
        return make_plan(command, server_specs, configs, client, name, cwd, only, floor,
                         lambda: _recipe_folder(recipes_dir))
    except PlanError as err:
        raise InputError(str(err)) from err


def _servers(plan, settings, rebuild, cache_dir, require_all, display):
    """What measure and revisions do before their first spawn: secrets masked in the
    display, this process a child subreaper (a server's escaped processes are still found
    and shut down), the servers built. Returns ``(servers, toolchains, secrets)``."""
    from .measure.run import servers_for
    from .redact import secrets_of
    from .stdio.tree import become_subreaper

    secrets = secrets_of([*plan.secrets, *settings.env.values()])
    display.mask = lambda text: redact(text, secrets)
    become_subreaper()
    cache = _cache(cache_dir) if plan.recipes else None
    return (*servers_for(plan, settings, cache, rebuild, require_all, _progress), secrets)


def _run_and_report(servers, settings, toolchains, output, fmt, exports, plan, budget,
                    secrets, display) -> None:
    from .measure.run import measure as measure_all
    from .measure.startup import LIMITS_S
    from .results import Results

    write_error: list[OSError] = []  # the last rewrite's failure, if it failed

    def rewrite(results) -> None:
        results.secrets = secrets
        write_error.clear()
        try:
            results.save(output)
        except OSError as err:
            write_error.append(err)
            _progress(f"cannot write {output}: {err.strerror or err} (measuring goes on)")

    for note in plan.notes:
        _progress(note)
    if budget is None and plan.together:
        budget = list(LIMITS_S)
    results = measure_all(servers, settings, _redacted_argv(), toolchains, display, rewrite,
                          budget)
    results.secrets = secrets
    shown = results.to_dict()  # secrets masked
    display.outcomes(shown["servers"])
    _show([Results.from_dict(shown)], fmt, exports)
    if write_error:
        raise InputError(f"cannot write the results file {output}: "
                         f"{write_error[0].strerror or write_error[0]}")
    _progress(f"results written to {output} and {output.with_suffix('.toml')}")
    sys.exit(1 if any(s.status == "failed" for s in results.servers) else 0)


@main.command(short_help="Build the reference servers (cached; only what changed).",
              epilog="\b\nExample:\n  mcpstart build --rebuild rust go")
@click.argument("names", nargs=-1)
@click.option("--rebuild", is_flag=True, help="Build even when an up-to-date build exists.")
@recipes_option
@cache_option
@require_all_option
@quiet_option
def build(names, rebuild, recipes_dir, cache_dir, require_all, quiet) -> None:
    """Build the reference servers NAMES (default: every recipe).

    A build is cached under a hash of its recipe, its source files and its toolchain
    versions: a second build with nothing changed does no work. A missing toolchain
    skips that server; a failed build prints its log's tail; the others go on. While a
    build runs, a terminal shows the last line of its log.

    \b
    Exit status: 0 every server built, up to date or skipped; 1 a build failed (or, with
    --require-all, a server was skipped); 2 bad input.
    """
    from .targets.build import ensure_built

    failed = False
    with _display(quiet) as display:
        cache = _cache(cache_dir)
        for recipe in _recipes(recipes_dir, names):
            item = ensure_built(recipe, cache, rebuild, _progress)
            display.close()  # the line below goes to stdout: no live line in its way
            if item.status == "skipped":
                click.echo(f"{item.recipe.name}: skipped: {item.reason}")
                failed |= require_all
            elif item.status == "failed":
                click.echo(f"{item.recipe.name}: failed: {item.reason} (log: {item.log})\n"
                           f"{item.log_tail}")
                failed = True
            elif item.status == "no-build":
                click.echo(f"{item.recipe.name}: nothing to build (the recipe has no [build])")
            else:
                click.echo(f"{item.recipe.name}: {item.status} ({item.build_s:.1f} s) "
                           f"{item.folder}")
    sys.exit(1 if failed else 0)


@main.command(short_help="Build what is stale, measure each server, print a table.",
              context_settings={"allow_interspersed_args": False},
              epilog="\b\nExamples:\n"
                     "  mcpstart measure --runs 6 > table.md       # the reference servers\n"
                     "  mcpstart measure -- npx -y @modelcontextprotocol/server-memory\n"
                     "  mcpstart measure --server time='uvx mcp-server-time' --floor\n"
                     "  mcpstart measure --config ~/.cursor/mcp.json --budget 10,30,60")
@click.option("--runs", default=defaults.RUNS, show_default=True,
              type=click.IntRange(min=1, max=10_000), help="Counted cold starts per server.")
@click.option("--warmup", default=defaults.WARMUP, show_default=True,
              type=click.IntRange(min=0, max=1_000),
              help="Warm-up cold starts per server, recorded but left out of the statistics.")
@click.option("--only", multiple=True, metavar="NAME",
              help="Measure only this server (a recipe, --server, --name or config name); "
                   "repeatable.")
@click.option("--output", "-o", default=defaults.OUTPUT, show_default=True,
              type=click.Path(dir_okay=False), callback=_writable_output,
              help="Results file (JSON); a TOML copy with the same stem is written beside it.")
@click.option("--timeout", default=defaults.TIMEOUT_S, show_default=True, callback=_finite,
              type=click.FloatRange(min=0, min_open=True),
              help="Seconds each wait for a server may take.")
@click.option("--protocol-version", default=defaults.REVISION, show_default=True,
              callback=_revision,
              help="Protocol revision requested in initialize; a server may answer with "
                   "another it supports (the table shows what was negotiated).")
@click.option("--payload-bytes", default=defaults.PAYLOAD_BYTES, show_default=True,
              type=click.IntRange(min=1, max=128 << 20),
              help="Size of the large tool call's payload text (at most 128 MiB).")
@click.option("--call", "call_tool", metavar="TOOL",
              help="Tool to call under load (default: reverse_text where the server has it).")
@click.option("--args", "call_args", metavar="JSON",
              help='Arguments of --call as a JSON object; the string "{payload}" inside any '
                   'string value becomes the payload text. Default: {"text": "{payload}"}.')
@click.option("--env", "env", multiple=True, callback=_env_pairs, metavar="KEY=VALUE",
              help="Set a variable for every server (value is never shown or stored); "
                   "repeatable.")
@click.option("--server", "server_specs", multiple=True, metavar="NAME=COMMAND",
              help="Measure this command (split like a shell, run without one); repeatable.")
@click.option("--config", "configs", multiple=True, type=click.Path(dir_okay=False),
              help="Measure every stdio server of an editor's MCP config (Claude Desktop, "
                   "Claude Code, Cursor, VS Code, Windsurf, Zed, Codex); repeatable.")
@click.option("--client", type=click.Choice(CLIENT_CHOICES),
              help="The config's client, when its file name and content do not tell.")
@click.option("--name", help="Name of the server given after --.")
@click.option("--cwd", type=click.Path(file_okay=False),
              help="Working directory of the servers given by -- and --server.")
@click.option("--floor", is_flag=True,
              help="Also measure the C floor server (the least any server can score).")
@click.option("--pause-ms", default=defaults.PAUSE_MS, show_default=True, callback=_finite,
              type=click.FloatRange(min=0),
              help="Idle pause before every timed spawn, after the previous run is reaped.")
@click.option("--order", type=click.Choice(["interleave", "sequential"]),
              help="Cold starts in rounds, one run of each server per round, shuffled per "
                   "round (interleave; default for several servers), or one server after "
                   "another (sequential).")
@click.option("--seed", type=click.IntRange(min=0),
              help="Seed of the per-round shuffle (default: random, recorded).")
@click.option("--cache-state", type=click.Choice(["warm", "cold"]), default="warm",
              show_default=True,
              help="warm: the server's files stay in the page cache; cold: they are evicted "
                   "before every cold start (no root needed).")
@click.option("--round-trips", default=defaults.ROUND_TRIPS, show_default=True,
              type=click.IntRange(min=0, max=1_000_000),
              help="Small calls on one warm session (0: none).")
@click.option("--probe-timeout", default=defaults.PROBE_TIMEOUT_S, show_default=True,
              callback=_finite, type=click.FloatRange(min=0, min_open=True),
              help="Seconds each revision-matrix probe may take.")
@click.option("--budget", callback=_budget, metavar="SECONDS,...",
              help="Startup limits to judge an all-at-once start against (default when "
                   "several servers come from --config or --server: 10,30,60).")
@click.option("--rebuild", is_flag=True, help="Rebuild the servers before measuring.")
@recipes_option
@cache_option
@require_all_option
@report_format_option
@export_options
@quiet_option
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def measure(runs, warmup, only, output, timeout, protocol_version, payload_bytes, call_tool,
            call_args, env, server_specs, configs, client, name, cwd, floor, pause_ms, order,
            seed, cache_state, round_trips, probe_timeout, budget, rebuild, recipes_dir,
            cache_dir, require_all, fmt, export_json, export_csv, export_markdown, quiet,
            command) -> None:
    """Measure MCP servers: the reference set (every recipe, built first when stale), or
    the servers named by -- COMMAND, --server and --config.

    For each server: WARMUP + RUNS cold starts (spawn to the initialize answer, with the
    phases first byte, tools/list and first tool call), in rounds; the revision matrix
    (server/discover and initialize per revision, each in its own process); the
    modern-era cold starts where the server speaks 2026-07-28; then one session that
    lists the tools, reads idle memory once it settles, times warm round trips, calls a
    tool with a large payload (round trip, then peak memory) and shuts down as the spec
    says. Several servers named together are also started all at once, as an editor
    does, and judged against startup limits (--budget).

    The table goes to stdout (or, with --export-* -, that export), progress to stderr:
    one updating line on a terminal (a bar for the cold-start series, a build's last log
    line), plain lines otherwise; each server's outcome and warnings end as plain lines.
    Every raw sample and the machine's metadata go to the results file, rewritten after
    every round and every server.

    \b
    Exit status: 0 all measured or skipped; 1 a server failed (the table says why);
    2 bad input; 128+N stopped by signal N (the server being measured is shut down
    first; what was measured stays in the results file).
    """
    from .measure.settings import Settings

    exports = _exports(export_json, export_csv, export_markdown)
    call = _tool_call(call_tool, call_args)
    settings = Settings(runs=runs, warmup=warmup, timeout_s=timeout, payload_bytes=payload_bytes,
                        requested_revision=protocol_version, env=env, pause_ms=pause_ms,
                        order=order, seed=seed if seed is not None else random.randrange(2**32),
                        cache_state=cache_state, round_trips=round_trips,
                        probe_timeout_s=probe_timeout, call=call)
    with _display(quiet) as display:
        plan = _plan(command, server_specs, configs, client, name, cwd, only, floor,
                     recipes_dir)
        servers, toolchains, secrets = _servers(plan, settings, rebuild, cache_dir,
                                                require_all, display)
        _run_and_report(servers, settings, toolchains, output, fmt, exports, plan, budget,
                        secrets, display)


@main.command(short_help="Print the table of results files again, or export them.",
              epilog="""\b
Example: compare two machines' cold start and idle memory, servers as rows:
  mcpstart report laptop.json ci.json --label laptop --label ci \\
      --metrics handshake_ms.median --metrics memory.idle_rss_bytes --transpose""")
@click.argument("results_files", nargs=-1, type=click.Path(dir_okay=False))
@report_format_option
@click.option("--metrics", multiple=True, metavar="PATH",
              help="Show only this row, named by its results key path (e.g. handshake_ms.median, "
                   "memory.idle_rss_bytes); repeatable, in the order given.")
@click.option("--transpose", is_flag=True, help="Servers as rows, metrics as columns.")
@click.option("--label", "labels", multiple=True, metavar="LABEL",
              help="Column label of each file, once per file, in order (default: the file's "
                   "hostname, plus its date where two match).")
@export_options
def report(results_files, fmt, metrics, transpose, labels, export_json, export_csv,
           export_markdown) -> None:
    """Print the table of one or more results files without measuring again (default:
    the file mcpstart-results.json here): one column per server, per server and file when
    several files are given. Exit status 2 for a file that cannot be read or is no
    results file.
    """
    from .results import ResultsError, load

    exports = _exports(export_json, export_csv, export_markdown)
    paths = [Path(f) for f in results_files or [defaults.OUTPUT]]
    if labels and len(labels) != len(paths):
        raise click.UsageError(f"{len(labels)} --label for {len(paths)} file(s): give one per file")
    loaded = []
    for path in paths:
        if path.suffix == ".toml":
            raise InputError(f"{path} is the TOML copy; report reads the JSON results file "
                             f"({path.with_suffix('.json')})")
        try:
            loaded.append(load(path))
        except ResultsError as err:
            raise InputError(str(err)) from err
    _show(loaded, fmt, exports, list(labels) or None, metrics, transpose)


@main.command(short_help="Compare two results files; exit 1 on a regression (a CI gate).",
              epilog="\b\nExample, in CI (the table is Markdown for a pull-request comment):\n"
                     "  mcpstart compare main-results.json mcpstart-results.json "
                     "--threshold 10 > comment.md")
@click.argument("old", type=click.Path(dir_okay=False))
@click.argument("new", type=click.Path(dir_okay=False))
@click.option("--threshold", default=10.0, show_default=True, type=click.FloatRange(min=0),
              help="Percent: a significant slowdown counts as a regression only when NEW's "
                   "median is more than this much above OLD's.")
@click.option("--alpha", default=0.01, show_default=True,
              type=click.FloatRange(0, 1, min_open=True),
              help="Significance level of the exact one-sided Mann-Whitney U test.")
@format_option
def compare(old, new, threshold, alpha, tablefmt) -> None:
    """Compare results file NEW with OLD, server by server.

    Each series with raw samples (cold start, phases, modern discover, round trip) gets
    OLD and NEW medians, their ratio, and an exact one-sided Mann-Whitney U test that NEW
    is slower; memory and footprint figures are single values, compared by ratio only
    ("no test"). With few runs the test cannot reach alpha (3 vs 3 runs: p >= 0.05); such
    series say "too few runs".

    \b
    Exit status: 1 a regression: a series with p <= ALPHA whose NEW median is more
    than THRESHOLD percent above OLD's, or a server ok in OLD that failed in NEW;
    0 no regression; 2 bad input (a missing or invalid results file).
    """
    from .results import ResultsError, load
    from .views.compare import compare as compare_results, render

    for name, value in (("--threshold", threshold), ("--alpha", alpha)):
        if not math.isfinite(value):
            raise click.BadParameter(f"{value} is not a finite number", param_hint=name)
    loaded = []
    for path in (old, new):
        if Path(path).suffix == ".toml":
            raise InputError(f"{path} is the TOML copy; compare reads the JSON results file "
                             f"({Path(path).with_suffix('.json')})")
        try:
            loaded.append(load(Path(path)).to_dict())
        except ResultsError as err:
            raise InputError(str(err)) from err
    comparison = compare_results(*loaded, threshold_pct=threshold, alpha=alpha)
    click.echo(render(comparison, tablefmt, old, new))
    sys.exit(1 if comparison.regressions else 0)


@main.command(short_help="Draw charts of a results file (PNG or SVG).",
              epilog="""\b
Example: the cold start of every server as an SVG for a README:
  mcpstart plot mcpstart-results.json -o cold-start.svg --kind cold-start""")
@click.argument("results_file", default=defaults.OUTPUT, type=click.Path(dir_okay=False))
@click.option("--output", "-o", required=True, type=click.Path(dir_okay=False), metavar="OUT",
              help="Image to write; .png or .svg chooses the type.")
@click.option("--kind", type=click.Choice(["cold-start", "memory", "footprint", "timeline"]),
              help="One chart. Default: one figure with a panel per chart the file can fill "
                   "(timeline needs an all-at-once startup measurement).")
def plot(results_file, output, kind) -> None:
    """Draw charts of a results file: cold start per server (median, min to max, the C floor
    server as a line), memory (idle per process and peak under the large call), footprint,
    and the startup timeline of every server spawned at once."""
    from .results import ResultsError, load
    from .views.plot import SUFFIXES, figure, save

    if Path(output).suffix.lower() not in SUFFIXES:
        raise click.BadParameter(f"{output!r} must end in {' or '.join(SUFFIXES)}",
                                 param_hint="'--output'")
    try:
        fig = figure(load(Path(results_file)), kind)
        save(fig, Path(output))
    except (ResultsError, ValueError) as err:
        raise InputError(str(err)) from err
    except OSError as err:
        raise InputError(f"cannot write {output}: {err.strerror or err}") from err
    _progress(f"wrote {output}")


@main.command(short_help="Check the toolchains and what this machine gives mcpstart.",
              epilog="\b\nExample, before a CI job that needs every server:\n"
                     "  mcpstart doctor --require-all && mcpstart measure --require-all")
@recipes_option
@click.option("--require-all", is_flag=True,
              help="Count every toolchain as needed, as measure --require-all fails a run "
                   "that skips a server.")
@format_option
def doctor(recipes_dir, require_all, tablefmt) -> None:
    """Say which toolchains and versions are found (from the recipes), whether clear_refs,
    PSS (smaps_rollup), the child subreaper and pidfds work (each probed on a real child
    process), the load average against the core count, and what each missing piece means
    for the figures.

    \b
    Exit status: 0 a default run has what it needs (some figures may be degraded, the
    table says which); 1 something it needs is missing: pidfds, /proc/PID/status, or any
    server whose toolchains are all found (with --require-all: any toolchain).
    """
    from .doctor import render, run_checks, verdict

    checks = run_checks(recipes_dir, require_all)
    click.echo(render(checks, tablefmt))
    sys.exit(verdict(checks)[1])


@main.command(short_help="Which protocol revisions each server speaks (the revision matrix).",
              epilog="\b\nExamples:\n"
                     "  mcpstart revisions                      # the reference servers\n"
                     "  mcpstart revisions --server mem='npx -y @modelcontextprotocol/"
                     "server-memory'\n"
                     "  mcpstart revisions --config .vscode/mcp.json -o matrix.json")
@click.argument("names", nargs=-1)
@click.option("--server", "server_specs", multiple=True, metavar="NAME=COMMAND",
              help="Probe this command (split like a shell, run without one); repeatable.")
@click.option("--config", "configs", multiple=True, type=click.Path(dir_okay=False),
              help="Probe every stdio server of an editor's MCP config; repeatable.")
@click.option("--client", type=click.Choice(CLIENT_CHOICES),
              help="The config's client, when its file name and content do not tell.")
@click.option("--cwd", type=click.Path(file_okay=False),
              help="Working directory of the servers given by --server.")
@click.option("--env", "env", multiple=True, callback=_env_pairs, metavar="KEY=VALUE",
              help="Set a variable for every server (never shown or stored); repeatable.")
@click.option("--probe-timeout", default=defaults.PROBE_TIMEOUT_S, show_default=True,
              callback=_finite, type=click.FloatRange(min=0, min_open=True),
              help="Seconds each probe may take before it counts as no answer.")
@click.option("--timeout", default=defaults.TIMEOUT_S, show_default=True, callback=_finite,
              type=click.FloatRange(min=0, min_open=True),
              help="Seconds the first, unprobed start may take (a first npx/uvx download).")
@click.option("--output", "-o", type=click.Path(dir_okay=False), callback=_writable_output,
              help="Also write a results file (JSON, with its TOML copy); none without -o.")
@recipes_option
@cache_option
@format_option
@quiet_option
def revisions(names, server_specs, configs, client, cwd, env, probe_timeout, timeout,
              output, recipes_dir, cache_dir, tablefmt, quiet) -> None:
    """Probe each server NAMES (recipes, --server or --config entries; default: all of
    them), or the one given after -- COMMAND, with server/discover in the 2026-07-28
    envelope and with initialize asking each handshake-era revision and one unknown future
    revision, each probe in a fresh process, and print the whole matrix: outcome
    (answered, error, exited, no_answer), what was answered, the error's code, message and
    data verbatim, and the time to the outcome. Builds what is stale first; one unprobed
    start first lets a first npx/uvx download finish (--timeout) before any probe is timed.

    \b
    Exit status: 0 every server was probed (whatever it answered); 1 a server could not
    be spawned or built; 2 bad input.
    """
    from .measure.run import revisions_only
    from .measure.settings import Settings
    from .results import Results
    from .views.revisions import matrix_table

    context = click.get_current_context()
    command = ()
    if "--" in context.meta["mcpstart.argv"]:  # revisions -- COMMAND [ARGS...]
        command, names = names, ()
    settings = Settings(env=env, probe_timeout_s=probe_timeout, timeout_s=timeout)
    with _display(quiet) as display:
        plan = _plan(command, server_specs, configs, client, None, cwd, names, False,
                     recipes_dir)
        servers, toolchains, secrets = _servers(plan, settings, False, cache_dir, False,
                                                display)
        results = revisions_only(servers, settings, _redacted_argv(), toolchains, display)
    results.secrets = secrets
    click.echo(matrix_table(Results.from_dict(results.to_dict()), tablefmt))
    if output is not None:
        results.save(output)
        _progress(f"results written to {output} and {output.with_suffix('.toml')}")
    sys.exit(1 if any(s.status == "failed" for s in results.servers) else 0)


if __name__ == "__main__":
    main()
