"""Compare two results files, OLD and NEW: medians, ratios and an exact one-sided
Mann-Whitney U test per measured series, each single value (memory, sizes, counts, tokens,
throughput) against its family's threshold; the regressions a CI gate fails on
(docs/compare.md)."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field

from .. import warnings as warn
from ..defaults import ALPHA, CALLS_NOISE_MS, MEMORY_NOISE_PCT, THRESHOLDS_PCT
from ..results import dig, is_floor
from ..stats import is_number, slower, smallest_p, summarize
from . import build_change, start_change
from .table import fmt_mib, one_line

FAMILIES = tuple(THRESHOLDS_PCT)
"""The metric families a threshold is set for (``--threshold FAMILY=PCT``; defaults.
THRESHOLDS_PCT)."""

LOAD = ("session", "calls", "rate", "open")
"""The load scenarios (measure/load.py's SCENARIOS)."""

SERIES = {**{m: "time" for m in (
              "handshake_ms", "phases_ms.first_byte", "phases_ms.tools_list",
              "phases_ms.first_call", "modern_ms.discover", "modern_ms.first_call",
              *(f"http.start_ms.{p}" for p in ("port", "initialize", "tools_list", "first_call",
                                                "discover", "modern_first_call")),
              "http.session_ms")},
          "round_trip_ms": "calls", "http.latency_ms": "calls",
          **{f"http.load.{s}.latency_ms": "load" for s in LOAD}}
"""Series with raw samples (milliseconds) -> family, tested with Mann-Whitney U on their
``samples`` (a load scenario's: a seeded draw of its request times). The "calls" family's
samples are the calls of one session per run: the test says the two sessions differ, not that
the server did, so its change must also pass CALLS_NOISE_MS and the family's wider threshold
(defaults.py)."""

SINGLES = {**{f"memory.{m}": "memory" for m in ("idle_pss_bytes", "idle_uss_bytes",
                                                 "idle_rss_bytes", "peak_rss_bytes_payload")},
           **{f"footprint.{m}": "footprint" for m in ("artifact_bytes", "dependency_count")},
           "footprint.dev_tree_bytes": None,
           **{m: "tools" for m in ("tools.list_bytes", "tools.tokens.count",
                                   "instructions.bytes", "instructions.tokens")},
           "http.sessions_leak.bytes_per_session": None,
           **{f"http.load.{s}.rps": "load" for s in LOAD}}
"""Single values per server -> family, compared by their change against the family's
threshold ("no test"; memory within MEMORY_NOISE_PCT is noise); None: shown, not gated (the
sessions' memory slope: a fit over one run, with no noise rule yet; the build tree: what a
build wrote beside what ships, lock files and caches, which the artifact and the dependency
count already gate)."""

UNGATED = {"footprint.dev_tree_bytes": "the build tree",
           "http.sessions_leak.bytes_per_session": "the sessions' memory slope"}
"""The single values SINGLES shows without gating -> their name in the rules (``rules``)."""

TOOL_SERIES = {"warm_ms": "calls", "cold_first_call_ms": "time"}
"""A workload's per-tool series (``workload.tools.NAME.FIGURE``, docs/workloads.md) ->
family: each tool's warm calls as the "calls" family, its cold first call as "time"."""

LOWER_IS_WORSE = {f"http.load.{s}.rps" for s in LOAD}
"""Metrics that regress by falling (throughput); every other one regresses by rising."""

PAIRINGS = ("name", "command")
"""How ``compare`` pairs a server of OLD with one of NEW: by its name, or by what runs it
(its transport and argv, or the URL of a server already running), so the same command named
by a config in one file and after ``--`` in the other is one server."""

MIB = 1024 * 1024


@dataclass
class Row:
    """One compared metric of one server. ``old``/``new`` are medians (series) or values
    (singles), or status strings for the "status" metric; ``ratio`` is new / old; ``u``,
    ``p`` and ``n_old``/``n_new`` are set for tested series; ``family`` is the metric's
    (FAMILIES; None: not gated) and ``threshold_pct`` the threshold it was judged by."""

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
    family: str | None = None
    threshold_pct: float | None = None


@dataclass
class Comparison:
    """Everything ``compare`` found: rows in server order, servers present in one file only,
    and the rules used (``alpha``, ``thresholds`` percent per family, ``pair``)."""

    alpha: float
    thresholds: dict[str, float]
    pair: str = "name"
    rows: list[Row] = field(default_factory=list)
    only_old: list[str] = field(default_factory=list)
    only_new: list[str] = field(default_factory=list)
    common: int = 0
    """How many servers both files hold (paired by ``pair``)."""
    notes: list[dict] = field(default_factory=list)
    """Stored warnings (warnings.py) about the comparison itself: drift, no floor, load."""
    start_changes: list[dict] = field(default_factory=list)
    """Per server with start blocks on both sides, what changed in its start
    (``start_change.start_change``): shown, never gated."""
    build_changes: list[dict] = field(default_factory=list)
    """Per server, the packages and binary sections that changed (``build_change.
    build_change``): shown, never gated."""

    @property
    def regressions(self) -> list[Row]:
        """The rows that make ``mcpstart compare`` exit 1."""
        return [row for row in self.rows if row.regression]

    @property
    def untested(self) -> list[Row]:
        """Timing rows whose NEW median is above their threshold but whose runs are too few
        for the test to reach alpha: a slowdown the gate cannot judge, neither a regression
        nor a pass (exit status 3: ``exit_status``)."""
        return [r for r in self.rows if r.verdict == "too few runs" and r.ratio is not None
                and r.threshold_pct is not None and r.ratio > 1 + r.threshold_pct / 100]

    @property
    def exit_status(self) -> int:
        """2: no server in both files (the wrong file, most likely); 1: a regression, or a
        server of OLD missing from NEW; 3: neither, but a median above its threshold whose
        runs are too few for the test (``untested``: a 10x slowdown measured 3 times must not
        pass a gate that reads the exit status); 0: none of these."""
        if not self.common:
            return 2
        if self.regressions or self.only_old:
            return 1
        return 3 if self.untested else 0

    @property
    def verdict(self) -> str:
        """"no server in common", "regression", "server missing", "untested slowdown" (exit
        status 3) or "ok"."""
        return {2: "no server in common", 3: "untested slowdown", 0: "ok"}.get(
            self.exit_status, "regression" if self.regressions else "server missing")


def thresholds_from(values: tuple[str, ...] | list[str] = ()) -> dict[str, float]:
    """Per-family thresholds (percent): defaults.THRESHOLDS_PCT with each ``FAMILY=PCT``
    (``memory=5``) of ``values`` applied in order; a bare ``PCT`` sets every family.

    Raises:
        ValueError: an unknown family, or a percent that is not a finite number >= 0.
    """
    thresholds = dict(THRESHOLDS_PCT)
    for value in values:
        family, equals, pct = value.rpartition("=")
        if equals and family not in FAMILIES:
            raise ValueError(f"unknown metric family {family!r}: one of {', '.join(FAMILIES)}")
        try:
            percent = float(pct)
        except ValueError:
            raise ValueError(f"{value!r} is not PCT or FAMILY=PCT (e.g. memory=5)") from None
        if not math.isfinite(percent) or percent < 0:
            raise ValueError(f"{pct} is not a finite percent >= 0")
        thresholds.update({family: percent} if family else dict.fromkeys(FAMILIES, percent))
    return thresholds


def series_family(metric: str) -> str | None:
    """A series' family (SERIES, or a workload's per-tool TOOL_SERIES); None for a single
    value."""
    if metric.startswith("workload.tools."):
        return TOOL_SERIES.get(metric.rsplit(".", 1)[1])
    return SERIES.get(metric)


def tool_metrics(old_row: dict, new_row: dict) -> list[str]:
    """The per-tool series of the tools either row's workload measured, by tool name."""
    names = set()
    for row in (old_row, new_row):
        tools = dig(row, "workload.tools")
        names |= set(tools) if isinstance(tools, dict) else set()
    return [f"workload.tools.{name}.{figure}" for name in sorted(names) for figure in TOOL_SERIES]


def _samples(row: dict, path: str) -> list[float]:
    if path.startswith("workload.tools."):  # a tool's name may hold dots: no dotted path
        name, figure = path[len("workload.tools."):].rsplit(".", 1)
        tools = dig(row, "workload.tools")
        tool = tools.get(name) if isinstance(tools, dict) else None
        block = tool.get(figure) if isinstance(tool, dict) else None
    else:
        block = dig(row, path)
    samples = block.get("samples") if isinstance(block, dict) else None
    return [v for v in samples if is_number(v)] if isinstance(samples, list) else []


def _key(row: dict, pair: str) -> str | None:
    """The server's pairing key: its name, or (``pair`` "command") its transport and argv,
    else the URL it was measured at; None when the row has none."""
    if pair == "name":
        return row.get("name") if isinstance(row.get("name"), str) else None
    argv = dig(row, "command.argv")
    if isinstance(argv, list) and argv:
        return json.dumps([row.get("transport") or "stdio", argv])
    endpoint = dig(row, "http.endpoint")
    return json.dumps(["url", endpoint]) if isinstance(endpoint, str) else None


def _servers(results: dict, pair: str = "name") -> dict[str, dict]:
    """Server rows by pairing key (``_key``; the first row of a key wins); rows without a
    name or key are ignored."""
    servers = {}
    for row in results.get("servers") or []:
        if isinstance(row, dict) and isinstance(row.get("name"), str) and _key(row, pair):
            servers.setdefault(_key(row, pair), row)
    return servers


def _ratio(old: float, new: float) -> float | None:
    return new / old if old else None


def _series_row(name: str, metric: str, old: list[float], new: list[float], alpha: float,
                threshold_pct: float) -> Row:
    test = slower(old, new, alpha, threshold_pct)
    row = Row(name, metric, test.old_median, test.new_median, test.verdict, test.regression,
              test.ratio, test.u, test.p, len(old), len(new))
    if series_family(metric) == "calls" and row.regression \
            and test.new_median - test.old_median <= CALLS_NOISE_MS:
        row.regression = False
        row.verdict = f"within noise ({CALLS_NOISE_MS:g} ms)"
    return row


def _status_row(name: str, old: dict, new: dict) -> Row | None:
    """The server's status row where it is not "ok" in both files: a regression where an
    "ok" of OLD failed or was interrupted in NEW; else said, with NEW's reason (a server
    that failed in both files is no regression, but never passes unsaid)."""
    before, after = old.get("status"), new.get("status")
    if before == after:
        if before in (None, "ok"):
            return None
        return Row(name, "status", before, after,
                   f"{after} in OLD and NEW: {new.get('reason') or after}")
    if before == "ok" and after == "failed":
        return Row(name, "status", before, after, f"regression: {new.get('reason') or 'failed'}",
                   regression=True)
    if before == "ok" and after == "interrupted":  # a cancelled job must not pass the gate
        return Row(name, "status", before, after, "interrupted in NEW: what it did not measure "
                   f"cannot be judged ({new.get('reason') or 'interrupted'})", regression=True)
    return Row(name, "status", before, after, f"{after} in NEW")


def _values(row: dict, metric: str) -> list[float]:
    """A series' samples, or a single value as a one-item list; [] when absent or null."""
    if series_family(metric) is not None:
        return _samples(row, metric)
    value = dig(row, metric)
    return [value] if is_number(value) else []


def _engine_bound(old_row: dict, new_row: dict, metric: str) -> str | None:
    """For a load scenario's figure: which file(s) mark the block engine-bound (its rate set
    by the load engine's ceiling: measure/load.py), else None."""
    if not metric.startswith("http.load."):
        return None
    scenario = metric.split(".")[2]
    sides = [side for side, row in (("OLD", old_row), ("NEW", new_row))
             if dig(row, f"http.load.{scenario}.engine_bound") is True]
    return " and ".join(sides) or None


def _single_row(name: str, metric: str, old: float, new: float, family: str | None,
                threshold_pct: float | None) -> Row:
    """A single value's decision (docs/compare.md): the change for the worse (up, or down
    for LOWER_IS_WORSE) in percent of OLD against ``threshold_pct``; memory within
    MEMORY_NOISE_PCT is noise."""
    row = Row(name, metric, old, new, "not gated", ratio=_ratio(old, new), family=family,
              threshold_pct=threshold_pct)
    if family is None:
        return row
    worse = (old - new if metric in LOWER_IS_WORSE else new - old)
    change = worse / old * 100 if old else (math.inf if worse > 0 else 0.0)
    if new == old:
        row.verdict = "same"
    elif family == "memory" and abs(new - old) <= abs(old) * MEMORY_NOISE_PCT / 100:
        row.verdict = f"within noise ({MEMORY_NOISE_PCT:g}%)"
    elif change > threshold_pct:
        row.verdict, row.regression = "regression", True
    elif change > 0:
        row.verdict = f"worse, within {threshold_pct:g}%"
    else:
        row.verdict = "better"
    return row


def _metric_row(name: str, metric: str, old_row: dict, new_row: dict, alpha: float,
                thresholds: dict[str, float]) -> Row | None:
    before, after = _values(old_row, metric), _values(new_row, metric)
    if metric == "phases_ms.first_byte" and before == _values(old_row, "handshake_ms") \
            and after == _values(new_row, "handshake_ms"):
        return None  # the first byte is the handshake's own line: no row of its own
    family = series_family(metric) or SINGLES.get(metric)
    threshold = thresholds.get(family)
    if before and after:
        if series_family(metric) is not None:
            row = _series_row(name, metric, before, after, alpha, threshold)
            row.family, row.threshold_pct = family, threshold
        else:
            row = _single_row(name, metric, before[0], after[0], family, threshold)
        bound = _engine_bound(old_row, new_row, metric)
        if bound:
            row.regression = False
            row.verdict = f"engine-bound in {bound}: no verdict"
        return row
    # one side only: worth a row unless the other side's server did not finish (its status
    # row says so already)
    if before and new_row.get("status") == "ok":
        return Row(name, metric, summarize(before)["median"], None, "only in OLD",
                   family=family)
    if after and old_row.get("status") == "ok":
        return Row(name, metric, None, summarize(after)["median"], "only in NEW",
                   family=family)
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


def compare(old: dict, new: dict, thresholds: dict[str, float] | None = None,
            alpha: float = ALPHA, same_run: bool = False, pair: str = "name") -> Comparison:
    """Compare two results files, each given as its JSON form (``Results.to_dict()``);
    ``same_run``: both come from one run (``variant_pair``), so neither the floor's drift
    nor the machines are checked. Servers are paired by ``pair`` (PAIRINGS: "name" or
    "command"); a pair whose names differ is shown as "OLD_NAME -> NEW_NAME".

    For each server in both files: a "status" row when the status changed; each series of
    ``SERIES`` with samples on both sides gets old and new medians, the ratio, and
    ``mann_whitney_greater(old, new)``; each of ``SINGLES`` present on both sides gets its
    ratio and the decision of its family's threshold (docs/compare.md). A metric present on
    one side only is listed as "only in OLD/NEW" unless the other side's server did not
    finish ("failed" or "skipped"), which its status row already says. Missing blocks and
    null or non-numeric values are skipped, never an error.

    Regression rules (docs/compare.md): a series whose p <= ``alpha`` and whose NEW median
    is more than its family's threshold percent above OLD's; a single value worse than OLD's
    by more than its family's threshold (memory: and by more than MEMORY_NOISE_PCT); a
    server "ok" in OLD and "failed" in NEW. A load figure marked engine-bound in either file
    is never a regression. A series whose ``smallest_p`` is above ``alpha`` is "too few
    runs"; one whose median is above the threshold but whose p is above ``alpha`` is
    "inconclusive (p = P)", never "ok". ``Comparison.exit_status`` adds a server of OLD
    missing from NEW (1) and no server in common (2).

    Args:
        old, new: results dicts ("servers": [{name, status, handshake_ms, ...}]).
        thresholds: percent per family (``thresholds_from``); None: the defaults.
        alpha: significance level of the one-sided test, in (0, 1].
    """
    thresholds = dict(THRESHOLDS_PCT if thresholds is None else thresholds)
    comparison = Comparison(alpha=alpha, thresholds=thresholds, pair=pair)
    old_servers, new_servers = _servers(old, pair), _servers(new, pair)
    drift = {} if same_run else _drift(old_servers, new_servers, alpha, thresholds["time"],
                                       comparison.notes)
    comparison.notes += [] if same_run else _machines(old, new) + _settings(old, new)
    rules = [dig(doc, "settings.phase_rule") for doc in (old, new)]
    if rules[0] != rules[1]:
        comparison.notes.append(warn.phase_rule(*rules))
    comparison.only_old = [r["name"] for k, r in old_servers.items() if k not in new_servers]
    comparison.only_new = [r["name"] for k, r in new_servers.items() if k not in old_servers]
    for key, old_row in old_servers.items():
        new_row = new_servers.get(key)
        if new_row is None:
            continue
        comparison.common += 1
        name = old_row["name"] if old_row["name"] == new_row["name"] else \
            f"{old_row['name']} -> {new_row['name']}"
        status = _status_row(name, old_row, new_row)
        if status:
            comparison.rows.append(status)
        for metric in [*SERIES, *SINGLES, *tool_metrics(old_row, new_row)]:
            row = _metric_row(name, metric, old_row, new_row, alpha, thresholds)
            if row and row.regression and metric in drift and \
                    row.ratio <= drift[metric] * (1 + thresholds[SERIES[metric]] / 100):
                row.verdict, row.regression = (f"slower as the floor is (x{drift[metric]:.3f}): "
                                               "the machine drifted"), False
            if row:
                comparison.rows.append(row)
        change = start_change.start_change(name, old_row, new_row, thresholds["time"])
        if change:
            comparison.start_changes.append(change)
        if built := build_change.build_change(name, old_row, new_row):
            comparison.build_changes.append(built)
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


SHAPING = ("payload_bytes", "requested_revision", "pause_ms", "cache_state", "call_tool",
           "call_arguments", "workload", "process_layer", "memory_limit_bytes", "server_cpus",
           "load_s", "load_users", "load_rate")
"""The settings (docs/results.md, "settings") whose difference between two files changes
figures, or which figures there are: compare names each that differs."""


def _settings(old: dict, new: dict) -> list[dict]:
    """A warning naming the SHAPING settings that differ between the files (a key absent
    from an older file is not a difference)."""
    sides = [doc.get("settings") if isinstance(doc.get("settings"), dict) else {}
             for doc in (old, new)]
    changes = [(key, _short(sides[0][key]), _short(sides[1][key])) for key in SHAPING
               if key in sides[0] and key in sides[1] and sides[0][key] != sides[1][key]]
    return [warn.settings_differ(changes)] if changes else []


def _short(value):
    """A setting as said in a note: a workload by its name."""
    return value.get("name", value) if isinstance(value, dict) else value


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
    if "_bytes" in metric or metric.endswith(("bytes_per_session", ".bytes")):
        return fmt_mib(value) if abs(value) < 0.1 * MIB else f"{value / MIB:.2f} MiB"
    if metric.endswith("_ms") or metric.startswith(("phases_ms", "modern_ms", "http.start_ms")):
        return f"{value:.2f} ms"
    return f"{value:g}"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def rules(comparison: Comparison) -> list[str]:
    """The rules a comparison applied, one sentence each: the test of the timings, the
    thresholds per family and the noise rule, and the smallest p the run counts can
    reach (or that no series was tested)."""
    alpha, t = comparison.alpha, comparison.thresholds
    sizes = sorted({(r.n_old, r.n_new) for r in comparison.rows if r.p is not None})
    reach = "; ".join(
        f"{smallest_p(a, b):.3g} with {a} vs {b} runs"
        + ("" if smallest_p(a, b) <= alpha else " (too few runs: cannot reach alpha)")
        for a, b in sizes)
    return [
        f"Timings: an exact one-sided Mann-Whitney U test that NEW is slower, alpha "
        f"{alpha:g}; a regression is p <= alpha with a median more than {t['time']:g}% above "
        f"OLD's (warm calls, one session per run: {t['calls']:g}% and more than "
        f"{CALLS_NOISE_MS:g} ms; load latency: {t['load']:g}%); such a median with p above "
        "alpha is inconclusive.",
        f"Single values: a regression is idle memory or the large call's peak more than "
        f"{t['memory']:g}% above OLD's (and more than {MEMORY_NOISE_PCT:g}%, the noise of two "
        f"readings), the artifact or the dependency count more than {t['footprint']:g}%, the "
        f"tool list's or the instructions' bytes or tokens more than {t['tools']:g}%, load "
        f"throughput more than {t['load']:g}% below; {' and '.join(UNGATED.values())} are "
        "shown, not gated; a load figure marked engine-bound is no verdict either way (its "
        "rate is the load engine's ceiling, not the server's). A server ok in OLD that failed "
        "or was interrupted in NEW, or missing from NEW, fails the gate.",
        f"Smallest attainable p: {reach}." if reach
        else "No timing series has samples in both files: no test ran.",
    ]


def render(comparison: Comparison, tablefmt: str = "github", old_name: str = "OLD",
           new_name: str = "NEW") -> str:
    """The comparison as text for a terminal or a pull-request comment: the rules
    (``rules``), one table row per ``Row`` (``tablefmt``: any tabulate format; "github" is
    Markdown), servers found in one file only, the notes and the verdict."""
    from tabulate import tabulate

    markdown = tablefmt in ("github", "pipe")
    lines = [
        (f"**mcpstart compare**: OLD `{old_name}`, NEW `{new_name}`" if markdown
         else f"mcpstart compare: OLD {old_name}, NEW {new_name}"),
        "", " ".join(rules(comparison)), "",
    ]
    table = [[one_line(text, markdown) for text in (  # a reason may hold lines and pipes
                 r.server, r.metric, _value(r.metric, r.old), _value(r.metric, r.new),
                 "-" if r.ratio is None else f"{r.ratio:.3f}",
                 "-" if r.u is None else r.u,
                 "-" if r.p is None else f"{r.p:.3g}",
                 f"**{r.verdict}**" if r.regression and markdown else r.verdict)]
             for r in comparison.rows]
    headers = ["server", "metric", "old", "new", "new/old", "U", "p", "verdict"]
    lines.append(tabulate(table, headers, tablefmt=tablefmt, disable_numparse=True)
                 if table else f"No server appears in both files (paired by "
                               f"{comparison.pair}): nothing was compared.")
    for change in comparison.build_changes:
        lines += [""] + build_change.render(change)
    for change in comparison.start_changes:
        lines += [""] + start_change.render(change)
    if comparison.start_changes:
        lines.append(start_change.RULE)
    if comparison.only_old:
        lines += ["", f"Missing from NEW: {', '.join(comparison.only_old)}."]
    if comparison.only_new:
        lines += ["", f"Only in NEW: {', '.join(comparison.only_new)}."]
    if comparison.notes:
        lines += [""] + [f"- {note['metric'] + ': ' if note['metric'] else ''}{note['detail']}"
                         for note in comparison.notes]
        lines.append("- a gate that a drifting machine cannot fool measures both builds in one "
                     "interleaved run and compares them within it (--old-variant, "
                     "--new-variant)")
    regressions = comparison.regressions
    lines.append("")
    if not comparison.common:
        lines.append("No server in common: is NEW the right file? (--pair command pairs "
                     "servers by what runs them.)")
    elif regressions:
        lines.append(f"{_plural(len(regressions), 'regression')}: " + "; ".join(
            f"{r.server} {r.metric}" for r in regressions) + ".")
    elif untested := comparison.untested:
        runs = next((n for n in range(1, 100) if smallest_p(n, n) <= comparison.alpha), None)
        lines.append(
            f"No regression found, but {_plural(len(untested), 'median')} above the threshold "
            "could not be tested (too few runs" + (f"; {runs} runs of each reach alpha "
            f"{comparison.alpha:g}" if runs else "") + "): " + "; ".join(
                f"{r.server} {r.metric} new/old {r.ratio:.3f}" for r in untested) + ".")
    else:
        lines.append("No regression.")
    if comparison.common and comparison.only_old:
        lines.append(f"{_plural(len(comparison.only_old), 'server')} of OLD missing from NEW.")
    return "\n".join(lines)


def to_json(comparison: Comparison, old_name: str = "OLD", new_name: str = "NEW") -> str:
    """The comparison as one JSON object (docs/compare.md#json): ``verdict`` ("ok",
    "regression", "server missing", "no server in common"), ``exit_status``, ``old``,
    ``new``, ``rules`` {``alpha``, ``thresholds_pct``, ``memory_noise_pct``, ``pair``},
    ``rows`` (each Row's fields, ``verdict`` being the metric's decision), ``regressions``
    (``[{server, metric}]``), ``untested`` (``[{server, metric, ratio}]``: Comparison.
    untested), ``only_old``, ``only_new``, ``notes``, ``start_changes``
    (``start_change.start_change`` per server) and ``build_changes`` (``build_change.
    build_change`` per server)."""
    return json.dumps({
        "verdict": comparison.verdict, "exit_status": comparison.exit_status,
        "old": old_name, "new": new_name,
        "rules": {"alpha": comparison.alpha, "thresholds_pct": comparison.thresholds,
                  "memory_noise_pct": MEMORY_NOISE_PCT, "pair": comparison.pair},
        "rows": [asdict(row) for row in comparison.rows],
        "regressions": [{"server": r.server, "metric": r.metric}
                        for r in comparison.regressions],
        "untested": [{"server": r.server, "metric": r.metric, "ratio": r.ratio}
                     for r in comparison.untested],
        "only_old": comparison.only_old, "only_new": comparison.only_new,
        "notes": comparison.notes, "start_changes": comparison.start_changes,
        "build_changes": comparison.build_changes,
    }, indent=2, allow_nan=False) + "\n"
