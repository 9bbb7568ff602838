"""Command line: option declarations, their validation and the exit status; the work is the
library's (engine.py, views/). Exit status: 0 all measured or skipped, 1 a server failed
(compare: a regression), 2 bad input, 128+N stopped by signal N."""

from __future__ import annotations

import math
import random
import sys
from importlib import import_module
from pathlib import Path

import click

from . import __version__, defaults
from .views.progress import Display, emit as _progress

CLIENTS = ("claude-desktop", "claude-code", "cursor", "vscode", "windsurf", "zed", "codex")
"""The editor configs --config reads (targets.configs.CLIENTS; kept here for a fast --help)."""
SHAPES = {"json": "hyperfine's JSON (s)", "csv": "hyperfine's CSV (s)",
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
    """click.option; ``check(value)`` validates it (a ValueError is a usage error naming the
    option); a default is shown."""
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
                  help="Folder of build recipes (default: ./build-recipes, else the packaged).")
cache_opt = opt("--cache-dir", type=click.Path(file_okay=False),
                help="Where builds go (default: $MCPSTART_CACHE_DIR, else ~/.cache/mcpstart).")
require_all_opt = opt("--require-all", is_flag=True,
                      help="A server skipped for a missing toolchain counts as failed (CI).")
quiet_opt = opt("--quiet", "-q", is_flag=True, help="No progress on stderr (errors show).")
tablefmt_opt = opt("--format", "tablefmt", default="github",
                   check=_lib(".views.table:check_format"),
                   help="Any tabulate format: github (Markdown), plain, simple, grid, ...")
fmt_opt = opt("--format", "fmt", default="github",
              check=_lib(".views.table:check_format", ("csv", "json")),
              help="A tabulate format, or csv / json: one {server, file, metric, value, unit} "
                   "record per value.")
output_check = _lib(".results:output_path")
targets_opts = apply(
    opt("--server", "server_specs", multiple=True, metavar="NAME=COMMAND",
        help="Measure this command (split like a shell, run without one); repeatable."),
    opt("--config", "configs", multiple=True, type=click.Path(dir_okay=False),
        help="Every stdio server of an editor's MCP config; repeatable."),
    opt("--client", type=click.Choice(CLIENTS), help="The config's client, if not told."),
    opt("--cwd", type=click.Path(file_okay=False), help="Working directory of -- and --server."),
    opt("--env", multiple=True, metavar="KEY=VALUE", check=_lib(".command:env_pairs"),
        help="Set a variable for every server (never shown or stored); repeatable."))
export_opts = apply(*(opt(f"--export-{name}", type=click.Path(dir_okay=False, allow_dash=True),
                          metavar="FILE", check=_lib(".views.exports:check_target"),
                          help=f"Also write the cold-start series as {shape} (-: stdout, in "
                               "place of the table).") for name, shape in SHAPES.items()))


def _exports(kw: dict):
    from .views.exports import ExportError, ExportManager

    try:
        return ExportManager({name: kw.pop(f"export_{name}") for name in SHAPES})
    except ExportError as err:
        raise click.UsageError(str(err)) from err


def _run(work: str, command, kw: dict, display, *plan, **settings):
    """``engine.<work>`` of the job the options name (Settings fields by name, and
    ``settings``); bad input exits 2."""
    from . import engine
    from .measure.settings import BASE, Settings
    from .redact import redact, redact_argv

    argv = redact_argv(click.get_current_context().meta["mcpstart.argv"])
    try:
        job = engine.job_for(command, kw, Settings.from_options(BASE, kw, **settings), argv,
                             _progress, *plan)
        display.mask = lambda text, secrets=job.secrets: redact(text, secrets)
        return getattr(engine, work)(job)
    except engine.JobError as err:
        raise InputError(str(err)) from err


def _written(outcome) -> None:
    try:
        said = outcome.written()
    except ValueError as err:
        raise InputError(str(err)) from err
    if said:
        _progress(said)


def _show(loaded: list, fmt: str, exports, labels=None, metrics=(), transpose=False) -> None:
    from .views.exports import present
    from .views.table import UnknownMetric

    try:
        click.echo(present(loaded, fmt, exports, labels, metrics, transpose), nl=False)
    except UnknownMetric as err:
        raise click.BadParameter(str(err), param_hint="'--metrics'") from err
    except OSError as err:
        raise InputError(f"cannot write {err.filename}: {err.strerror or err}") from err


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
  mcpstart report mcpstart-results.json    # the table again, from the results file""")
@click.version_option(__version__, prog_name="mcpstart")
def main() -> None:
    """Profile MCP servers over the stdio transport: the reference `reverse_text` server of
    each official SDK and a C floor, or any server you name (-- COMMAND, --server, an
    editor's --config). Cold start to the initialize answer and its phases, memory of the
    process tree idle and under a large tool call, warm round trips, footprint, protocol
    revisions and an editor's startup budget."""


@main.command(short_help="Build the reference servers (cached; only what changed).",
              epilog="\b\nExample:\n  mcpstart build --rebuild rust go")
@click.argument("names", nargs=-1)
@apply(opt("--rebuild", is_flag=True, help="Build even when an up-to-date build exists."),
       recipes_opt, cache_opt, require_all_opt, quiet_opt)
def build(names, rebuild, recipes_dir, cache_dir, require_all, quiet) -> None:
    """Build the reference servers NAMES (default: every recipe), cached under a hash of
    the recipe, its sources and toolchains. A missing toolchain skips a server; a failed
    build prints its log's tail. Exit status: 0 built, up to date or skipped; 1 a build
    failed (or, with --require-all, a server was skipped); 2 bad input."""
    from .engine import JobError, build as build_all
    from .targets.build import report_line

    failed = []

    def built(item) -> None:
        display.close()  # the line below goes to stdout: no live line in its way
        click.echo(report_line(item))
        failed.append(item.status == "failed" or (item.status == "skipped" and require_all))

    with Display(quiet=quiet) as display:
        try:
            build_all(list(names), recipes_dir, cache_dir, rebuild, _progress, built)
        except JobError as err:
            raise InputError(str(err)) from err
    sys.exit(1 if any(failed) else 0)


@main.command(short_help="Build what is stale, measure each server, print a table.",
              context_settings={"allow_interspersed_args": False},
              epilog="\b\nExamples:\n"
                     "  mcpstart measure --runs 6 > table.md       # the reference servers\n"
                     "  mcpstart measure -- npx -y @modelcontextprotocol/server-memory\n"
                     "  mcpstart measure --config ~/.cursor/mcp.json --budget 10,30,60")
@apply(
    opt("--runs", default=defaults.RUNS, type=click.IntRange(1, 10_000), help="Counted runs."),
    opt("--warmup", default=defaults.WARMUP, type=click.IntRange(0, 1_000), help="Warm-ups."),
    opt("--only", multiple=True, metavar="NAME", help="Measure only this server; repeatable."),
    opt("--output", "-o", default=defaults.OUTPUT, type=click.Path(dir_okay=False),
        check=output_check, help="Results file (JSON); its TOML copy is written beside it."),
    opt("--timeout", "timeout_s", default=defaults.TIMEOUT_S, type=SECONDS, check=FINITE_S),
    opt("--protocol-version", "requested_revision", default=defaults.REVISION,
        check=_lib(".wire:revision"),
        help="Revision asked for in initialize (the table shows what was negotiated)."),
    opt("--payload-bytes", default=defaults.PAYLOAD_BYTES, type=click.IntRange(1, 128 << 20)),
    opt("--call", "call_tool", metavar="TOOL", help="Tool to call (default: reverse_text)."),
    opt("--args", "call_args", metavar="JSON", help='Arguments of --call; "{payload}" in a '
                                                    'string value becomes the payload text.'),
    targets_opts, opt("--name", help="Name of the server given after --."),
    opt("--floor", is_flag=True, help="Also measure the C floor server (the least possible)."),
    opt("--pause-ms", default=defaults.PAUSE_MS, type=click.FloatRange(min=0), check=FINITE_S,
        help="Idle pause before every timed spawn."),
    opt("--order", type=click.Choice(["interleave", "sequential"]),
        help="Rounds of one run per server, shuffled (default for several), or one "
             "server's series after another."),
    opt("--seed", type=click.IntRange(min=0), help="Seed of the shuffle (default: random)."),
    opt("--cache-state", type=click.Choice(["warm", "cold"]), default="warm",
        help="cold: the server's files leave the page cache before every cold start."),
    opt("--round-trips", default=defaults.ROUND_TRIPS, type=click.IntRange(0, 1_000_000)),
    opt("--probe-timeout", "probe_timeout_s", default=defaults.PROBE_TIMEOUT_S, type=SECONDS,
        check=FINITE_S, help="Seconds each revision-matrix probe may take."),
    opt("--budget", check=_lib(".measure.startup:parse_limits"), metavar="SECONDS,...",
        help="Startup limits for an all-at-once start (default for several named: 10,30,60)."),
    opt("--rebuild", is_flag=True, help="Rebuild the servers first."), recipes_opt,
    cache_opt, require_all_opt, fmt_opt, export_opts, quiet_opt)
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def measure(command, quiet, fmt, **kw) -> None:
    """Measure the reference set (built first when stale), or the servers of -- COMMAND,
    --server and --config: WARMUP + RUNS cold starts each, in rounds, with their phases;
    the revision matrix; the 2026-07-28 cold starts; one session (tools, settled idle
    memory, warm round trips, a large call's round trip and peak memory, the spec's
    shutdown); servers named together also start at once (--budget). The table goes to
    stdout, progress to stderr, every raw sample to the results file.

    \b
    Exit status: 0 all measured or skipped; 1 a server failed (the table says why);
    2 bad input; 128+N stopped by signal N (what was measured stays in the results file).
    """
    from .results import Results
    from .wire import ToolCall

    kw["exports"] = exports = _exports(kw)
    try:
        call = ToolCall.parse(kw["call_tool"], kw["call_args"])
    except ValueError as err:
        raise click.UsageError(str(err)) from err
    seed = kw["seed"] if kw["seed"] is not None else random.randrange(2**32)
    with Display(quiet=quiet) as display:
        outcome = _run("measure", command, kw, display, kw["only"], kw["name"], kw["floor"],
                       call=call, seed=seed)
        shown = outcome.results.to_dict()  # secrets masked
        display.outcomes(shown["servers"])
        _show([Results.from_dict(shown)], fmt, exports)
        _written(outcome)
    sys.exit(1 if outcome.failed else 0)


@main.command(short_help="Which protocol revisions each server speaks (the revision matrix).",
              epilog="\b\nExamples:\n  mcpstart revisions --config .vscode/mcp.json -o m.json\n"
                     "  mcpstart revisions -- npx -y @modelcontextprotocol/server-memory")
@click.argument("names", nargs=-1)
@apply(targets_opts,
       opt("--probe-timeout", "probe_timeout_s", default=defaults.PROBE_TIMEOUT_S, type=SECONDS,
           check=FINITE_S, help="Seconds each probe may take before it counts as no answer."),
       opt("--timeout", "timeout_s", default=defaults.TIMEOUT_S, type=SECONDS, check=FINITE_S,
           help="Seconds the first, unprobed start may take (a first npx/uvx download)."),
       opt("--output", "-o", type=click.Path(dir_okay=False), check=output_check,
           help="Also write a results file (JSON, with its TOML copy)."),
       recipes_opt, cache_opt, tablefmt_opt, quiet_opt)
def revisions(names, tablefmt, quiet, **kw) -> None:
    """Probe each server NAMES (default: all), or the one after -- COMMAND, in a fresh
    process per probe: server/discover (2026-07-28), and initialize asking each revision and
    an unknown one. Prints each outcome, the answer or the error verbatim, and its time.
    Exit status: 0 all probed; 1 one could not be spawned or built; 2 bad input."""
    from .results import Results
    from .views.revisions import matrix_table

    command = ()
    if "--" in click.get_current_context().meta["mcpstart.argv"]:  # revisions -- COMMAND
        command, names = names, ()
    with Display(quiet=quiet) as display:
        outcome = _run("revisions", command, kw, display, names)
    click.echo(matrix_table(Results.from_dict(outcome.results.to_dict()), tablefmt))
    _written(outcome)
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
                     "  mcpstart compare main-results.json mcpstart-results.json > comment.md")
@click.argument("old", type=click.Path(dir_okay=False))
@click.argument("new", type=click.Path(dir_okay=False))
@apply(opt("--threshold", default=10.0, type=click.FloatRange(min=0), check=_finite(),
           help="Percent above OLD's median a significant slowdown must reach to count."),
       opt("--alpha", default=0.01, type=click.FloatRange(0, 1, min_open=True),
           help="Significance level of the exact one-sided Mann-Whitney U test."),
       tablefmt_opt)
def compare(old, new, threshold, alpha, tablefmt) -> None:
    """Compare NEW with OLD, server by server: each series' medians, their ratio and an
    exact one-sided Mann-Whitney U test that NEW is slower ("too few runs" where it cannot
    reach alpha); memory and footprint by ratio.

    \b
    Exit status: 1 a regression (p <= ALPHA and NEW's median THRESHOLD percent above OLD's,
    or a server ok in OLD failed in NEW); 0 none; 2 bad input.
    """
    from .views.compare import compare as compare_results, render

    before, after = (r.to_dict() for r in _load((old, new), "compare"))
    comparison = compare_results(before, after, threshold_pct=threshold, alpha=alpha)
    click.echo(render(comparison, tablefmt, old, new))
    sys.exit(1 if comparison.regressions else 0)


@main.command(short_help="Draw charts of a results file (PNG or SVG).",
              epilog="\b\nExample:\n  mcpstart plot mcpstart-results.json -o cold.svg "
                     "--kind cold-start")
@click.argument("results_file", default=defaults.OUTPUT, type=click.Path(dir_okay=False))
@apply(opt("--output", "-o", required=True, type=click.Path(dir_okay=False), metavar="OUT",
           check=_lib(".views.plot:image_path"), help="Image to write: .png or .svg."),
       opt("--kind", type=click.Choice(["cold-start", "memory", "footprint", "timeline"]),
           help="One chart. Default: a panel per chart the file can fill."))
def plot(results_file, output, kind) -> None:
    """Draw charts of a results file: cold start per server (median, min to max, the floor
    as a line), memory (idle per process, peak), footprint, an all-at-once start's
    timeline."""
    from .views.plot import figure, save

    loaded = _load([results_file], "plot")[0]
    try:
        save(figure(loaded, kind), Path(output))
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
    """Which toolchains the recipes find, whether clear_refs, PSS, the child subreaper and
    pidfds work (each probed on a child), the load, and what each gap means for the figures.
    Exit status: 0 a default run has what it needs; 1 something it needs is missing."""
    from .doctor import render, run_checks, verdict

    checks = run_checks(recipes_dir, require_all)
    click.echo(render(checks, tablefmt))
    sys.exit(verdict(checks)[1])


if __name__ == "__main__":
    main()
