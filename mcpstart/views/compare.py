"""Compare two results files, OLD and NEW: medians, ratios and an exact one-sided
Mann-Whitney U test per measured series; the regressions a CI gate fails on."""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import warnings as warn
from ..defaults import ALPHA, THRESHOLD_PCT
from ..results import dig, is_floor
from ..stats import is_number, slower, smallest_p, summarize

SERIES = ("handshake_ms", "phases_ms.first_byte", "phases_ms.tools_list",
          "phases_ms.first_call", "modern_ms.discover", "modern_ms.first_call", "round_trip_ms",
          *(f"http.start_ms.{p}" for p in ("port", "initialize", "tools_list", "first_call",
                                            "discover", "modern_first_call")),
          "http.latency_ms", "http.session_ms",
          *(f"http.load.{s}.latency_ms" for s in ("session", "calls", "rate")))
"""Series with raw samples (milliseconds), tested with Mann-Whitney U on their ``samples``
(a load scenario's: a seeded draw of its request times)."""

SINGLES = ("memory.idle_rss_bytes", "memory.idle_pss_bytes", "memory.peak_rss_bytes_payload",
           "footprint.artifact_bytes", "footprint.dev_tree_bytes",
           "footprint.dependency_count", "http.sessions_leak.bytes_per_session",
           *(f"http.load.{s}.rps" for s in ("session", "calls", "rate")))
"""Single values per server: compared by ratio only ("no test")."""

MIB = 1024 * 1024


@dataclass
class Row:
    """One compared metric of one server. ``old``/``new`` are medians (series) or values
    (singles), or status strings for the "status" metric; ``ratio`` is new / old; ``u``,
    ``p`` and ``n_old``/``n_new`` are set for tested series."""

    server: str
    metric: str
    old: float | str | None
    new: float | str | None
    verdict: str
    regression: bool = False
    ratio: float | None = None
    u: int | None = None
    p: float | None = None
    n_old: int = 0
    n_new: int = 0


@dataclass
class Comparison:
    """Everything ``compare`` found: rows in server order, servers present in one file only,
    and the rules used (``alpha``, ``threshold_pct``)."""

    alpha: float
    threshold_pct: float
    rows: list[Row] = field(default_factory=list)
    only_old: list[str] = field(default_factory=list)
    only_new: list[str] = field(default_factory=list)
    notes: list[dict] = field(default_factory=list)
    """Stored warnings (warnings.py) about the comparison itself: drift, no floor, load."""

    @property
    def regressions(self) -> list[Row]:
        """The rows that make ``mcpstart compare`` exit 1."""
        return [row for row in self.rows if row.regression]


def _samples(row: dict, path: str) -> list[float]:
    block = dig(row, path)
    samples = block.get("samples") if isinstance(block, dict) else None
    return [v for v in samples if is_number(v)] if isinstance(samples, list) else []


def _servers(results: dict) -> dict[str, dict]:
    """Server rows by name (first row of a name wins); rows without a name are ignored."""
    servers = {}
    for row in results.get("servers") or []:
        if isinstance(row, dict) and isinstance(row.get("name"), str):
            servers.setdefault(row["name"], row)
    return servers


def _ratio(old: float, new: float) -> float | None:
    return new / old if old else None


def _series_row(name: str, metric: str, old: list[float], new: list[float], alpha: float,
                threshold_pct: float) -> Row:
    test = slower(old, new, alpha, threshold_pct)
    return Row(name, metric, test.old_median, test.new_median, test.verdict, test.regression,
               test.ratio, test.u, test.p, len(old), len(new))


def _status_row(name: str, old: dict, new: dict) -> Row | None:
    before, after = old.get("status"), new.get("status")
    if before == after:
        return None
    if before == "ok" and after == "failed":
        return Row(name, "status", before, after, f"regression: {new.get('reason') or 'failed'}",
                   regression=True)
    return Row(name, "status", before, after, f"{after} in NEW")


def _values(row: dict, metric: str) -> list[float]:
    """A series' samples, or a single value as a one-item list; [] when absent or null."""
    if metric in SERIES:
        return _samples(row, metric)
    value = dig(row, metric)
    return [value] if is_number(value) else []


def _metric_row(name: str, metric: str, old_row: dict, new_row: dict, alpha: float,
                threshold_pct: float) -> Row | None:
    before, after = _values(old_row, metric), _values(new_row, metric)
    if metric == "phases_ms.first_byte" and before == _values(old_row, "handshake_ms") \
            and after == _values(new_row, "handshake_ms"):
        return None  # the first byte is the handshake's own line: no row of its own
    if before and after:
        if metric in SERIES:
            return _series_row(name, metric, before, after, alpha, threshold_pct)
        return Row(name, metric, before[0], after[0], "no test", ratio=_ratio(before[0], after[0]))
    # one side only: worth a row unless the other side's server did not finish (its status
    # row says so already)
    if before and new_row.get("status") == "ok":
        return Row(name, metric, summarize(before)["median"], None, "only in OLD")
    if after and old_row.get("status") == "ok":
        return Row(name, metric, None, summarize(after)["median"], "only in NEW")
    return None


def variant_pair(results: dict, old_name: str, new_name: str) -> tuple[dict, dict]:
    """Two servers of one results file (two SDK variants, or any two rows) as an OLD and a
    NEW file of one server each, named "OLD_NAME -> NEW_NAME", for ``compare(..., same_run=
    True)``: measured in the same interleaved rounds, the machine's drift hits both alike.

    Raises:
        ValueError: the file holds no server of one of the names (the message lists them).
    """
    servers = _servers(results)
    missing = [n for n in (old_name, new_name) if n not in servers]
    if missing:
        raise ValueError(f"no server named {', '.join(missing)} in the file; it holds "
                         f"{', '.join(servers) or 'none'}")
    pair = f"{old_name} -> {new_name}"
    return tuple({**results, "servers": [{**servers[n], "name": pair}]}
                 for n in (old_name, new_name))


def sides(read, paths: tuple, variants: tuple) -> tuple[dict, dict, tuple]:
    """What ``compare`` is given from the command line: ``paths`` (OLD, NEW or None), or
    with ``variants`` (OLD_NAME, NEW_NAME) the two servers of one file (``variant_pair``);
    ``read(path)`` gives a file's JSON form, asked only once the arguments hold. Returns
    ``(old, new, (old_label, new_label))``.

    Raises:
        ValueError: not OLD and NEW files nor one file with both variants; as
            ``variant_pair``.
    """
    if bool(variants[0]) != bool(variants[1]) or bool(variants[0]) == bool(paths[1]):
        raise ValueError("give OLD and NEW files, or one file with --old-variant and "
                         "--new-variant")
    if variants[0]:
        return (*variant_pair(read(paths[0]), *variants), variants)
    return read(paths[0]), read(paths[1]), paths


def compare(old: dict, new: dict, threshold_pct: float = THRESHOLD_PCT, alpha: float = ALPHA,
            same_run: bool = False) -> Comparison:
    """Compare two results files, each given as its JSON form (``Results.to_dict()``);
    ``same_run``: both come from one run (``variant_pair``), so neither the floor's drift
    nor the machines are checked.

    For each server in both files: a "status" row when the status changed; each series of
    ``SERIES`` with samples on both sides gets old and new medians, the ratio, and
    ``mann_whitney_greater(old, new)``; each of ``SINGLES`` present on both sides gets its
    ratio ("no test"). A metric present on one side only is listed as "only in OLD/NEW"
    unless the other side's server did not finish ("failed" or "skipped"), which its status
    row already says. Missing blocks and null or non-numeric values are skipped, never an
    error.

    Regression rules: a series whose p <= ``alpha`` and whose NEW median is more than
    ``threshold_pct`` percent above OLD's; a server "ok" in OLD and "failed" in NEW. A series
    whose ``smallest_p`` is above ``alpha`` is "too few runs": it can never be significant.
    A series whose median is above the threshold but whose p is above ``alpha`` is
    "inconclusive (p = P)", never "ok": the test could not tell a slowdown from noise.

    Args:
        old, new: results dicts ("servers": [{name, status, handshake_ms, ...}]).
        threshold_pct: percent; 10 means NEW must be more than 1.1 x OLD.
        alpha: significance level of the one-sided test, in (0, 1].
    """
    comparison = Comparison(alpha=alpha, threshold_pct=threshold_pct)
    old_servers, new_servers = _servers(old), _servers(new)
    drift = {} if same_run else _drift(old_servers, new_servers, alpha, threshold_pct,
                                       comparison.notes)
    comparison.notes += [] if same_run else _machines(old, new)
    rules = [dig(doc, "settings.phase_rule") for doc in (old, new)]
    if rules[0] != rules[1]:
        comparison.notes.append(warn.phase_rule(*rules))
    comparison.only_old = [n for n in old_servers if n not in new_servers]
    comparison.only_new = [n for n in new_servers if n not in old_servers]
    for name, old_row in old_servers.items():
        new_row = new_servers.get(name)
        if new_row is None:
            continue
        status = _status_row(name, old_row, new_row)
        if status:
            comparison.rows.append(status)
        for metric in SERIES + SINGLES:
            row = _metric_row(name, metric, old_row, new_row, alpha, threshold_pct)
            if row and row.regression and metric in drift and \
                    row.ratio <= drift[metric] * (1 + threshold_pct / 100):
                row.verdict, row.regression = (f"slower as the floor is (x{drift[metric]:.3f}): "
                                               "the machine drifted"), False
            if row:
                comparison.rows.append(row)
    return comparison


def _drift(old_servers: dict, new_servers: dict, alpha: float, threshold_pct: float,
           notes: list) -> dict[str, float]:
    """metric -> the floor server's NEW/OLD median ratio, for each series in which the floor
    (in both files) is significantly slower: what the machine's drift alone explains."""
    floors = [n for n, row in old_servers.items() if is_floor(row) and n in new_servers]
    if not floors:
        notes.append(warn.no_floor())
        return {}
    drift = {}
    for metric in SERIES:  # each series on the floor that has it (stdio's, or HTTP's)
        floor = next((n for n in floors if _values(old_servers[n], metric)), floors[0])
        before, after = _values(old_servers[floor], metric), _values(new_servers[floor], metric)
        if before and after:
            row = _series_row(floor, metric, before, after, alpha, threshold_pct)
            if row.p is not None and row.p <= alpha and row.ratio and row.ratio > 1:
                drift[metric] = row.ratio
                notes.append(warn.drift(metric, row.ratio, row.p))
    return drift


def _machines(old: dict, new: dict) -> list[dict]:
    """Warnings about where the two files were measured: other machines, a loaded one."""
    notes = []
    describe = [" ".join(str(dig(doc, f"environment.{k}") or "?") for k in ("hostname",
                "cpu_model", "kernel")) for doc in (old, new)]
    if describe[0] != describe[1]:
        notes.append(warn.other_machine(*describe))
    for side, doc in (("OLD", old), ("NEW", new)):
        load, cores = dig(doc, "environment.load_average"), dig(doc, "environment.cpu_count")
        load = load[0] if isinstance(load, list) and load else load
        if is_number(load) and is_number(cores) and load > cores:
            notes.append(warn.load(side, load, cores))
    return notes


def _value(metric: str, value) -> str:
    if value is None:
        return "-"
    if not is_number(value):
        return str(value)
    if metric.endswith(".rps"):
        return f"{value:.0f}/s"
    if "_bytes" in metric or metric.endswith("bytes_per_session"):
        return f"{value / MIB:.2f} MiB"
    if metric.endswith("_ms") or metric.startswith(("phases_ms", "modern_ms", "http.start_ms")):
        return f"{value:.2f} ms"
    return f"{value:g}"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def render(comparison: Comparison, tablefmt: str = "github", old_name: str = "OLD",
           new_name: str = "NEW") -> str:
    """The comparison as text for a terminal or a pull-request comment: the rules (alpha,
    threshold, smallest attainable p per pair of sample sizes), one table row per ``Row``
    (``tablefmt``: any tabulate format; "github" is Markdown), servers found in one file
    only, and the regressions."""
    from tabulate import tabulate

    markdown = tablefmt in ("github", "pipe")
    alpha, threshold = comparison.alpha, comparison.threshold_pct
    sizes = sorted({(r.n_old, r.n_new) for r in comparison.rows if r.p is not None})
    reach = "; ".join(
        f"{smallest_p(a, b):.3g} with {a} vs {b} runs"
        + ("" if smallest_p(a, b) <= alpha else " (too few runs: cannot reach alpha)")
        for a, b in sizes) or "no series with samples on both sides"
    lines = [
        (f"**mcpstart compare**: OLD `{old_name}`, NEW `{new_name}`" if markdown
         else f"mcpstart compare: OLD {old_name}, NEW {new_name}"),
        "",
        f"Exact one-sided Mann-Whitney U test that NEW is slower, alpha {alpha:g}; a "
        f"regression is p <= alpha with a median more than {threshold:g}% above OLD's, or a "
        f"server ok in OLD that failed in NEW; such a median with p above alpha is "
        f"inconclusive. Smallest attainable p: {reach}.",
        "",
    ]
    table = [[r.server, r.metric, _value(r.metric, r.old), _value(r.metric, r.new),
              "-" if r.ratio is None else f"{r.ratio:.3f}",
              "-" if r.u is None else r.u,
              "-" if r.p is None else f"{r.p:.3g}",
              f"**{r.verdict}**" if r.regression and markdown else r.verdict]
             for r in comparison.rows]
    headers = ["server", "metric", "old", "new", "new/old", "U", "p", "verdict"]
    lines.append(tabulate(table, headers, tablefmt=tablefmt, disable_numparse=True)
                 if table else "No server appears in both files.")
    for side, names in (("OLD", comparison.only_old), ("NEW", comparison.only_new)):
        if names:
            lines += ["", f"Only in {side}: {', '.join(names)}."]
    if comparison.notes:
        lines += [""] + [f"- {note['metric'] + ': ' if note['metric'] else ''}{note['detail']}"
                         for note in comparison.notes]
        lines.append("- a gate that a drifting machine cannot fool measures both builds in one "
                     "interleaved run and compares them within it (--old-variant, "
                     "--new-variant)")
    regressions = comparison.regressions
    lines.append("")
    if regressions:
        lines.append(f"{_plural(len(regressions), 'regression')}: " + "; ".join(
            f"{r.server} {r.metric}" for r in regressions) + ".")
    else:
        lines.append("No regression.")
    return "\n".join(lines)
