"""Command line: option declarations, their validation and the exit status; the work is the
library's (engine.py, views/). Exit status: 0 every server measured or skipped, 1 a server
failed (compare: a regression; doctor: something a default run needs is missing), 2 usage or
input error, 128+N stopped by signal N."""

from __future__ import annotations

import math
import random
import sys
from contextlib import contextmanager
from dataclasses import replace
from importlib import import_module
from pathlib import Path

import click

from . import __version__, defaults

CLIENTS = ("claude-desktop", "claude-code", "cursor", "vscode", "windsurf", "zed", "codex")
"""The editor configs --config reads (targets.configs.CLIENTS; kept here for a fast --help)."""
SHAPES = {"json": "hyperfine's JSON shape (seconds)", "csv": "hyperfine's CSV (seconds)",
          "markdown": "hyperfine's Markdown table"}


class InputError(click.ClickException):
    """Bad input (a recipe, a results file, a folder): exit status 2, like a usage error."""

    exit_code = 2


class _Main(click.Group):
    """Keeps mcpstart's own command line for the results file; an exit signal ends it in
    order, every server shut down first (engine.orderly_exit)."""

    def parse_args(self, ctx, args):
        ctx.meta["mcpstart.argv"] = ["mcpstart", *args]
        return super().parse_args(ctx, args)

    def invoke(self, ctx):
        from .engine import orderly_exit

        with orderly_exit(lambda text: click.echo(f"mcpstart: {text}", err=True)):
            return super().invoke(ctx)


def _progress(step) -> None:
    """A Step or message through the command's display (stderr)."""
    ctx = click.get_current_context(silent=True)
    display = ctx.meta.get("mcpstart.display") if ctx else None
    if display is None:
        click.echo(f"mcpstart: {getattr(step, 'text', step)}", err=True)
    else:
        display(step)


@contextmanager
def _display(quiet: bool):
    from .views.progress import Display

    with Display(quiet=quiet) as display:
        click.get_current_context().meta["mcpstart.display"] = display
        yield display


def _lib(where: str, *args):
    """A validator: the library's ``module:function`` (imported when used) on the value."""
    module, function = where.split(":")
    return lambda value: getattr(import_module(module, __package__), function)(value, *args)


def _finite(unit: str = ""):
    def check(value: float) -> float:
        if not math.isfinite(value):
            raise ValueError(f"{value} is not a finite number{unit}")
        return value
    return check


def _nonblank(value: str) -> str:
    if not value.strip():
        raise ValueError("is empty")
    return value


def opt(*names, check=None, **kw):
    """click.option; ``check(value)`` validates (its ValueError is a usage error naming the
    option; None passes); a default is shown."""
    def callback(ctx, param, value):
        try:
            return value if value is None or check is None else check(value)
        except ValueError as err:
            raise click.BadParameter(str(err), ctx, param) from err
    kw.setdefault("show_default", "default" in kw and not kw.get("is_flag"))
    return click.option(*names, callback=callback, **kw)


def apply(*decorators):
    def wrap(command):
        for decorator in reversed(decorators):
            command = decorator(command)
        return command
    return wrap


SECONDS, FINITE_S = click.FloatRange(min=0, min_open=True), _finite(" of seconds")
recipes_opt = opt("--recipes", "recipes_dir", type=click.Path(file_okay=False),
                  help="Folder of build recipes (<name>.toml). Default: ./build-recipes, "
                       "else the packaged copy.")
cache_opt = opt("--cache-dir", type=click.Path(file_okay=False),
                help="Where builds go. Default: $MCPSTART_CACHE_DIR, else ~/.cache/mcpstart.")
require_all_opt = opt("--require-all", is_flag=True,
                      help="A server skipped for a missing toolchain counts as failed (CI).")
quiet_opt = opt("--quiet", "-q", is_flag=True,
                help="No progress on stderr (errors still show); NO_COLOR turns colours off.")
tablefmt_opt = opt("--format", "tablefmt", default="github", check=_lib(".views.table:check_format"),
                   help="Any tabulate format: github (Markdown), plain, simple, grid, ...")
fmt_opt = opt("--format", "fmt", default="github",
              check=_lib(".views.table:check_format", ("csv", "json")),
              help="A tabulate format, or csv / json: long form, one {server, file, metric, "
                   "value, unit} record per value.")
env_opt = opt("--env", multiple=True, metavar="KEY=VALUE", check=_lib(".command:env_pairs"),
              help="Set a variable for every server (never shown or stored); repeatable.")
output_check = _lib(".results:output_path")
targets_opts = apply(
    opt("--server", "server_specs", multiple=True, metavar="NAME=COMMAND",
        help="Measure this command (split like a shell, run without one); repeatable."),
    opt("--config", "configs", multiple=True, type=click.Path(dir_okay=False),
        help="Every stdio server of an editor's MCP config; repeatable."),
    opt("--client", type=click.Choice(CLIENTS), help="The config's client, if its file "
                                                     "name and content do not tell."),
    opt("--cwd", type=click.Path(file_okay=False),
        help="Working directory of the servers given by -- and --server."), env_opt)
export_opts = apply(*(opt(f"--export-{name}", type=click.Path(dir_okay=False, allow_dash=True),
                          metavar="FILE", check=_lib(".views.exports:check_target"),
                          help=f"Also write the cold-start series as {shape} (- : to stdout, "
                               "in place of the table).") for name, shape in SHAPES.items()))


def _exports(kw: dict):
    from .views.exports import ExportError, ExportManager

    try:
        return ExportManager({name: kw.pop(f"export_{name}") for name in SHAPES})
    except ExportError as err:
        raise click.UsageError(str(err)) from err


def _plan(command, kw: dict, only, name=None, floor=False):
    from .targets.plan import PlanError, make_plan
    from .targets.recipes import find_recipe_folder

    def recipe_folder():
        folder, which = find_recipe_folder(kw["recipes_dir"])
        _progress(which)
        return folder

    try:
        return make_plan(command, kw["server_specs"], kw["configs"], kw["client"], name,
                         kw["cwd"], only, floor, recipe_folder)
    except PlanError as err:
        raise InputError(str(err)) from err


def _run(work: str, plan, settings, display, **kw):
    """``engine.<work>`` of a Job; its JobError is bad input, its write error one too."""
    from . import engine
    from .redact import redact, redact_argv

    job = engine.Job(plan, settings, redact_argv(click.get_current_context().meta["mcpstart.argv"]),
                     subreaper=True, progress=_progress, **kw)
    display.mask = lambda text, secrets=job.secrets: redact(text, secrets)
    try:
        outcome = getattr(engine, work)(job)
    except engine.JobError as err:
        raise InputError(str(err)) from err
    return outcome, job.output


def _written(outcome, output) -> None:
    if outcome.write_error:
        err = outcome.write_error
        raise InputError(f"cannot write the results file {err.filename or output}: "
                         f"{err.strerror or err}")
    if output is not None:
        _progress(f"results written to {output} and {output.with_suffix('.toml')}")


def _show(loaded: list, fmt: str, exports, labels=None, metrics=(), transpose=False) -> None:
    """Write the --export-* files, then print the table (or long-form records), unless an
    export goes to stdout in its place."""
    from .views.exports import LONG_FORMATS, exporter
    from .views.table import UnknownMetric, table

    try:
        text = (exporter(LONG_FORMATS[fmt]).render(loaded, labels, metrics) if fmt in LONG_FORMATS
                else table(loaded, fmt, labels=labels, metrics=metrics, transpose=transpose) + "\n")
        exports.write(loaded, labels)
    except UnknownMetric as err:
        raise click.BadParameter(str(err), param_hint="'--metrics'") from err
    except OSError as err:
        raise InputError(f"cannot write {err.filename}: {err.strerror or err}") from err
    click.echo(exports.stdout(loaded, labels) or text, nl=False)


def _load(paths, reader: str) -> list:
    from .results import ResultsError, load

    try:
        return [load(Path(p), reader) for p in paths]
    except ResultsError as err:
        raise InputError(str(err)) from err


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

    mcpstart builds the reference `reverse_text` server with each official SDK and in C
    (the floor), or takes any server you name (-- COMMAND, --server, an editor's --config),
    spawns each over stdio and measures cold start (spawn to initialize answer, and its
    phases), memory of the whole process tree idle and under a large tool call, warm round
    trips, footprint, the protocol revisions it speaks and an editor's startup budget.
    """


@main.command(short_help="Build the reference servers (cached; only what changed).",
              epilog="\b\nExample:\n  mcpstart build --rebuild rust go")
@click.argument("names", nargs=-1)
@apply(opt("--rebuild", is_flag=True, help="Build even when an up-to-date build exists."),
       recipes_opt, cache_opt, require_all_opt, quiet_opt)
def build(names, rebuild, recipes_dir, cache_dir, require_all, quiet) -> None:
    """Build the reference servers NAMES (default: every recipe), cached under a hash of
    the recipe, its sources and its toolchain versions (nothing changed: no work). A missing
    toolchain skips a server; a failed build prints its log's tail; the others go on.

    \b
    Exit status: 0 every server built, up to date or skipped; 1 a build failed (or, with
    --require-all, a server was skipped); 2 bad input.
    """
    from .engine import JobError, cache_folder
    from .targets.build import ensure_built, report_line
    from .targets.recipes import RecipeError, find_recipe_folder, load_recipes

    failed = False
    with _display(quiet) as display:
        try:
            folder, which = find_recipe_folder(recipes_dir)
            _progress(which)
            recipes, cache = load_recipes(folder, list(names) or None), cache_folder(cache_dir)
        except (RecipeError, JobError) as err:
            raise InputError(str(err)) from err
        for recipe in recipes:
            item = ensure_built(recipe, cache, rebuild, _progress)
            display.close()  # the line below goes to stdout: no live line in its way
            click.echo(report_line(item))
            failed |= item.status == "failed" or (item.status == "skipped" and require_all)
    sys.exit(1 if failed else 0)


@main.command(short_help="Build what is stale, measure each server, print a table.",
              context_settings={"allow_interspersed_args": False},
              epilog="\b\nExamples:\n"
                     "  mcpstart measure --runs 6 > table.md       # the reference servers\n"
                     "  mcpstart measure -- npx -y @modelcontextprotocol/server-memory\n"
                     "  mcpstart measure --server time='uvx mcp-server-time' --floor\n"
                     "  mcpstart measure --config ~/.cursor/mcp.json --budget 10,30,60")
@apply(
    opt("--runs", default=defaults.RUNS, type=click.IntRange(1, 10_000),
        help="Counted cold starts per server."),
    opt("--warmup", default=defaults.WARMUP, type=click.IntRange(0, 1_000),
        help="Warm-up cold starts per server (recorded, left out of the statistics)."),
    opt("--only", multiple=True, metavar="NAME", help="Measure only this server; repeatable."),
    opt("--output", "-o", default=defaults.OUTPUT, type=click.Path(dir_okay=False),
        check=output_check, help="Results file (JSON); its TOML copy is written beside it."),
    opt("--timeout", default=defaults.TIMEOUT_S, type=SECONDS, check=FINITE_S,
        help="Seconds each wait for a server may take."),
    opt("--protocol-version", default=defaults.REVISION, check=_nonblank,
        help="Revision asked for in initialize (the table shows what was negotiated)."),
    opt("--payload-bytes", default=defaults.PAYLOAD_BYTES, type=click.IntRange(1, 128 << 20),
        help="Size of the large tool call's payload text (at most 128 MiB)."),
    opt("--call", "call_tool", metavar="TOOL",
        help="Tool to call under load (default: reverse_text where the server has it)."),
    opt("--args", "call_args", metavar="JSON", help='Arguments of --call; "{payload}" in a '
                                                    'string value becomes the payload text.'),
    targets_opts, opt("--name", help="Name of the server given after --."),
    opt("--floor", is_flag=True, help="Also measure the C floor server (the least any "
                                      "server can score)."),
    opt("--pause-ms", default=defaults.PAUSE_MS, type=click.FloatRange(min=0), check=FINITE_S,
        help="Idle pause before every timed spawn, after the previous run is reaped."),
    opt("--order", type=click.Choice(["interleave", "sequential"]),
        help="Rounds of one run per server, shuffled (default for several), or one "
             "server's series after another."),
    opt("--seed", type=click.IntRange(min=0), help="Seed of the shuffle (default: random)."),
    opt("--cache-state", type=click.Choice(["warm", "cold"]), default="warm",
        help="cold: the server's files leave the page cache before every cold start."),
    opt("--round-trips", default=defaults.ROUND_TRIPS, type=click.IntRange(0, 1_000_000),
        help="Small calls on one warm session (0: none)."),
    opt("--probe-timeout", default=defaults.PROBE_TIMEOUT_S, type=SECONDS, check=FINITE_S,
        help="Seconds each revision-matrix probe may take."),
    opt("--budget", check=_lib(".measure.startup:parse_limits"), metavar="SECONDS,...",
        help="Startup limits for an all-at-once start (default for several named: 10,30,60)."),
    opt("--rebuild", is_flag=True, help="Rebuild the servers before measuring."),
    recipes_opt, cache_opt, require_all_opt, fmt_opt, export_opts, quiet_opt)
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def measure(command, quiet, fmt, **kw) -> None:
    """Measure the reference set (every recipe, built first when stale), or the servers
    named by -- COMMAND, --server and --config: per server, WARMUP + RUNS cold starts in
    rounds (with the phases first byte, tools/list, first tool call), the revision matrix,
    the 2026-07-28 cold starts where spoken, then one session: tools, idle memory once it
    settles, warm round trips, a large tool call (round trip, peak memory), the spec's
    shutdown. Servers named together also start all at once, judged against --budget.
    The table goes to stdout, progress to stderr, every raw sample to the results file
    (rewritten after every round and server).

    \b
    Exit status: 0 all measured or skipped; 1 a server failed (the table says why);
    2 bad input; 128+N stopped by signal N (what was measured stays in the results file).
    """
    from .measure import settings as base
    from .results import Results
    from .wire import ToolCall

    exports = _exports(kw)
    try:
        call = ToolCall.parse(kw["call_tool"], kw["call_args"])
    except ValueError as err:
        raise click.UsageError(str(err)) from err
    settings = replace(
        base.BASE, runs=kw["runs"], warmup=kw["warmup"], timeout_s=kw["timeout"], env=kw["env"],
        seed=kw["seed"] if kw["seed"] is not None else random.randrange(2**32),
        payload_bytes=kw["payload_bytes"], requested_revision=kw["protocol_version"],
        pause_ms=kw["pause_ms"], order=kw["order"], call=call, cache_state=kw["cache_state"],
        round_trips=kw["round_trips"], probe_timeout_s=kw["probe_timeout"])
    with _display(quiet) as display:
        plan = _plan(command, kw, kw["only"], kw["name"], kw["floor"])
        outcome, output = _run("measure", plan, settings, display, output=kw["output"],
                               exports=exports, budget=kw["budget"], rebuild=kw["rebuild"],
                               require_all=kw["require_all"], cache_dir=kw["cache_dir"])
        shown = outcome.results.to_dict()  # secrets masked
        display.outcomes(shown["servers"])
        _show([Results.from_dict(shown)], fmt, exports)
    _written(outcome, output)
    sys.exit(1 if outcome.failed else 0)


@main.command(short_help="Which protocol revisions each server speaks (the revision matrix).",
              epilog="\b\nExamples:\n"
                     "  mcpstart revisions                      # the reference servers\n"
                     "  mcpstart revisions --server mem='npx -y @modelcontextprotocol/"
                     "server-memory'\n"
                     "  mcpstart revisions --config .vscode/mcp.json -o matrix.json")
@click.argument("names", nargs=-1)
@apply(targets_opts,
       opt("--probe-timeout", default=defaults.PROBE_TIMEOUT_S, type=SECONDS, check=FINITE_S,
           help="Seconds each probe may take before it counts as no answer."),
       opt("--timeout", default=defaults.TIMEOUT_S, type=SECONDS, check=FINITE_S,
           help="Seconds the first, unprobed start may take (a first npx/uvx download)."),
       opt("--output", "-o", type=click.Path(dir_okay=False), check=output_check,
           help="Also write a results file (JSON, with its TOML copy)."),
       recipes_opt, cache_opt, tablefmt_opt, quiet_opt)
def revisions(names, probe_timeout, timeout, output, tablefmt, quiet, **kw) -> None:
    """Probe each server NAMES (recipes, --server or --config entries; default: all), or
    the one after -- COMMAND, each probe in a fresh process: server/discover in the
    2026-07-28 envelope, and initialize asking each handshake-era revision and an unknown
    future one. Prints the matrix: outcome (answered, error, exited, no_answer), what was
    answered, the error's code, message and data verbatim, the time to the outcome.

    \b
    Exit status: 0 every server was probed (whatever it answered); 1 a server could not
    be spawned or built; 2 bad input.
    """
    from .measure import settings as base
    from .results import Results
    from .views.revisions import matrix_table

    command = ()
    if "--" in click.get_current_context().meta["mcpstart.argv"]:  # revisions -- COMMAND
        command, names = names, ()
    settings = replace(base.BASE, env=kw["env"], probe_timeout_s=probe_timeout,
                       timeout_s=timeout)
    with _display(quiet) as display:
        outcome, _ = _run("revisions", _plan(command, kw, names), settings, display,
                          output=output, cache_dir=kw["cache_dir"])
    click.echo(matrix_table(Results.from_dict(outcome.results.to_dict()), tablefmt))
    _written(outcome, output)
    sys.exit(1 if outcome.failed else 0)


@main.command(short_help="Print the table of results files again, or export them.",
              epilog="""\b
Example: two machines' cold start and idle memory, servers as rows:
  mcpstart report laptop.json ci.json --label laptop --label ci \\
      --metrics handshake_ms.median --metrics memory.idle_rss_bytes --transpose""")
@click.argument("results_files", nargs=-1, type=click.Path(dir_okay=False))
@apply(fmt_opt,
       opt("--metrics", multiple=True, metavar="PATH",
           help="Only this row, by its key path (handshake_ms.median); repeatable, in order."),
       opt("--transpose", is_flag=True, help="Servers as rows, metrics as columns."),
       opt("--label", "labels", multiple=True, metavar="LABEL",
           help="Column label of each file, once per file (default: its hostname)."),
       export_opts)
def report(results_files, fmt, metrics, transpose, labels, **kw) -> None:
    """Print the table of results files without measuring again (default:
    mcpstart-results.json here): a column per server, per server and file for several.
    Exit status 2 for a file that cannot be read or is no results file."""
    exports = _exports(kw)
    paths = results_files or [defaults.OUTPUT]
    if labels and len(labels) != len(paths):
        raise click.UsageError(f"{len(labels)} --label for {len(paths)} file(s): give one per file")
    _show(_load(paths, "report"), fmt, exports, list(labels) or None, metrics, transpose)


@main.command(short_help="Compare two results files; exit 1 on a regression (a CI gate).",
              epilog="\b\nExample, in CI (the table is Markdown for a pull-request comment):\n"
                     "  mcpstart compare main-results.json mcpstart-results.json "
                     "--threshold 10 > comment.md")
@click.argument("old", type=click.Path(dir_okay=False))
@click.argument("new", type=click.Path(dir_okay=False))
@apply(opt("--threshold", default=10.0, type=click.FloatRange(min=0), check=_finite(),
           help="Percent above OLD's median a significant slowdown must reach to count."),
       opt("--alpha", default=0.01, type=click.FloatRange(0, 1, min_open=True),
           help="Significance level of the exact one-sided Mann-Whitney U test."),
       tablefmt_opt)
def compare(old, new, threshold, alpha, tablefmt) -> None:
    """Compare results file NEW with OLD, server by server: each series with raw samples
    (cold start, phases, modern-era, round trips) gets both medians, their ratio and an
    exact one-sided Mann-Whitney U test that NEW is slower ("too few runs" where it cannot
    reach alpha: 3 vs 3 runs gives p >= 0.05); memory and footprint compare by ratio only.

    \b
    Exit status: 1 a regression (p <= ALPHA and NEW's median more than THRESHOLD percent
    above OLD's, or a server ok in OLD failed in NEW); 0 none; 2 bad input.
    """
    from .views.compare import compare as compare_results, render

    before, after = (r.to_dict() for r in _load((old, new), "compare"))
    comparison = compare_results(before, after, threshold_pct=threshold, alpha=alpha)
    click.echo(render(comparison, tablefmt, old, new))
    sys.exit(1 if comparison.regressions else 0)


@main.command(short_help="Draw charts of a results file (PNG or SVG).",
              epilog="""\b
Example: the cold start of every server as an SVG for a README:
  mcpstart plot mcpstart-results.json -o cold-start.svg --kind cold-start""")
@click.argument("results_file", default=defaults.OUTPUT, type=click.Path(dir_okay=False))
@apply(opt("--output", "-o", required=True, type=click.Path(dir_okay=False), metavar="OUT",
           help="Image to write; .png or .svg chooses the type."),
       opt("--kind", type=click.Choice(["cold-start", "memory", "footprint", "timeline"]),
           help="One chart. Default: a panel per chart the file can fill."))
def plot(results_file, output, kind) -> None:
    """Draw charts of a results file: cold start per server (median, min to max, the floor
    as a line), memory (idle per process, peak under the large call), footprint, and the
    timeline of an all-at-once start."""
    from .views.plot import SUFFIXES, figure, save

    if Path(output).suffix.lower() not in SUFFIXES:
        raise click.BadParameter(f"{output!r} must end in {' or '.join(SUFFIXES)}",
                                 param_hint="'--output'")
    try:
        save(figure(_load([results_file], "plot")[0], kind), Path(output))
    except ValueError as err:
        raise InputError(str(err)) from err
    except OSError as err:
        raise InputError(f"cannot write {output}: {err.strerror or err}") from err
    _progress(f"wrote {output}")


@main.command(short_help="Check the toolchains and what this machine gives mcpstart.",
              epilog="\b\nExample, before a CI job that needs every server:\n"
                     "  mcpstart doctor --require-all && mcpstart measure --require-all")
@apply(recipes_opt, opt("--require-all", is_flag=True, help="Count every toolchain as needed."),
       tablefmt_opt)
def doctor(recipes_dir, require_all, tablefmt) -> None:
    """Which toolchains and versions the recipes find, whether clear_refs, PSS, the child
    subreaper and pidfds work (each probed on a real child), the load against the cores,
    and what each missing piece means for the figures.

    \b
    Exit status: 0 a default run has what it needs (some figures may be degraded); 1
    something it needs is missing (pidfds, /proc memory files, or every toolchain of some
    server; with --require-all: any toolchain).
    """
    from .doctor import render, run_checks, verdict

    checks = run_checks(recipes_dir, require_all)
    click.echo(render(checks, tablefmt))
    sys.exit(verdict(checks)[1])


if __name__ == "__main__":
    main()
