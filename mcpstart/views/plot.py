"""Plots of a results file with matplotlib (Agg backend, imported inside the functions so
``mcpstart --help`` stays fast). Each builder returns a ``matplotlib.figure.Figure`` without
touching pyplot's global state; ``save`` writes it as PNG or SVG.

Charts, servers as rows (their names never collide), every axis linear from zero: where the
values of one chart span more than SPLIT times, the servers are split into panels of their
own axis, fastest first (a log axis would make bar lengths meaningless).

- cold start: each run as a dot, the median as a bar across, the median's confidence
  interval as a line (the interval and level the table shows: stats.median_ci), the floor
  server as a dashed line, the name of a server whose runs vary (the "high_variation"
  warning) in red;
- memory: idle PSS (RSS where a file has no PSS) stacked per process, a legend naming each
  process (npm, sh, node ...); the peak RSS under the large call beside it;
- footprint: the artifact and the dev tree, each on its own axis;
- timeline: every server spawned at once, a marker at each phase's end, the clients'
  startup limits;
- why: each profiled start stacked by part (runtime and standard library, SDK, server code,
  other packages, the rest: table.start_split) beside the idle RSS stacked by class of
  mapping;
- http: the HTTP cold start (initialize answered, as cold start), requests/s and p95 latency
  per scenario, each on its own axis, the engine's ceiling and the floor's p95 as lines;
- per-tool: a workload's warm p50 per tool (and initialize's, where per-call sessions timed
  it) side by side per server (docs/workloads.md);
- history: views/history.py.

A run whose servers carry the "load" warning (docs/warnings.md) is marked "noisy run" in a
red box above its figure.
"""

from __future__ import annotations

import re
import textwrap
import warnings
from pathlib import Path

from ..results import dig, documents, is_floor, name_of, number_or_none, servers
from ..stats import summarize
from .fit import CHAR, legend_columns
from .table import MIB, START_PARTS, fmt_ms, level_text, payload_size, start_split

SPLIT = 20
"""A panel holds servers whose values lie within this ratio; a larger span splits the chart."""
BESIDE = 18
"""Characters: two charts of a kind stand side by side only when no row label is longer (a
longer name squeezes the chart beside it off the figure); else one stands above the other."""
SUFFIXES = (".png", ".svg")
DPI = 120
"""Pixels per inch of a PNG: the figures are 8 inches wide, under 1000 px."""
WIDTH = 8.0
"""Inches: a figure drawn for a page, readable when a page shows it at its width."""
ROW = 0.3
"""Inches per server row."""
PHASES = (("first_byte", "first byte", "|"), ("initialize", "initialize answered", "o"),
          ("tools_list", "tools/list answered", "D"))
IDLE, PEAK, SAMPLE, NOISY = "#4C72B0", "#DD8452", "#8C8C8C", "crimson"
PROCESS_COLORS = ("#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860",
                  "#DA8BC3", "#8C8C8C", "#CCB974", "#64B5CD")
CLASS_COLORS = ("#2E4057", "#048A81", "#54C6EB", "#8EE3EF", "#F4A261", "#E76F51", "#9C6644",
                "#B5838D")
"""The classes of mapping (measure/mappings.py CLASSES has eight), apart from PROCESS_COLORS."""
SCENARIOS = (("calls", "calls on a session"), ("session", "a session per call"))


# ---- what the file holds ------------------------------------------------------------------

def noisy(doc: dict) -> str | None:
    """The mark of a run measured on a loaded machine: some server carries the "load" warning
    (stats.series_warnings: the 1-minute load average exceeded the cores when the run
    started), e.g. "noisy run: load 2.19 on 2 cores"; None for a quiet run."""
    if not any(isinstance(w, dict) and w.get("kind") == "load"
               for s in servers(doc) for w in (s.get("warnings") or [])):
        return None
    load, cores = dig(doc, "environment.load_average"), dig(doc, "environment.cpu_count")
    figure_ = (f"load {load[0]:.2f}" if isinstance(load, list) and load
               and number_or_none(load[0]) is not None else "load above the cores")
    return f"noisy run: {figure_}{f' on {cores} cores' if cores else ''} when it started"


def _series(doc: dict, path: str) -> list[tuple[str, dict]]:
    """(name, stats block) of each server with a median at ``path`` (a stats.summarize block)."""
    return [(name_of(s), block) for s in servers(doc)
            if isinstance(block := dig(s, path), dict) and number_or_none(block.get("median")) is not None]


def _memory_data(doc: dict) -> tuple[str, list[tuple[str, list[tuple[str, float]]]],
                                     list[tuple[str, list[tuple[str, float]]]]]:
    """("PSS" or "RSS", idle rows [(server, [(process, MiB)])], peak rows [(server,
    [("", MiB)])]): PSS when every server with idle memory has it (PSS splits pages shared
    between a launcher and its child, so a tree's sum is not counted twice; docs/process-tree.md),
    else RSS for all."""
    rows = [s for s in servers(doc) if isinstance(dig(s, "memory"), dict)]
    with_idle = [s for s in rows if number_or_none(dig(s, "memory.idle_rss_bytes")) is not None]
    kind = "pss" if with_idle and all(number_or_none(dig(s, "memory.idle_pss_bytes")) is not None
                                      for s in with_idle) else "rss"
    idle = []
    for s in with_idle:
        procs = [p for p in dig(s, "memory.processes") or [] if isinstance(p, dict)]
        parts = [(str(p.get("name") or p.get("pid")), v / MIB) for p in procs
                 if (v := number_or_none(p.get(f"idle_{kind}_bytes"))) is not None]
        idle.append((name_of(s), parts or [("", dig(s, f"memory.idle_{kind}_bytes") / MIB)]))
    peak = [(name_of(s), [("", v / MIB)]) for s in rows
            if (v := number_or_none(dig(s, "memory.peak_rss_bytes_payload"))) is not None]
    return kind.upper(), idle, peak


def _footprint_data(doc: dict, key: str) -> list[tuple[str, list[tuple[str, float]]]]:
    return [(name_of(s), [("", v / MIB)]) for s in servers(doc)
            if (v := number_or_none(dig(s, f"footprint.{key}"))) is not None]


def _timeline_data(doc: dict) -> tuple[dict[str, list[float]], int]:
    """{server: [median first_byte, initialize, tools_list] in ms from spawn} over
    ``startup.sessions.runs`` (a row per copy: "name #2") where N sessions were started,
    else ``startup.runs``, and the number of runs."""
    runs = dig(doc, "startup.sessions.runs") or dig(doc, "startup.runs")
    runs = [r for r in runs if isinstance(r, dict)] if isinstance(runs, list) else []
    phases: dict[str, list[list[float]]] = {}
    for run in runs:
        for name, times in run.items():
            if isinstance(times, dict):
                values = [number_or_none(times.get(key)) for key, _, _ in PHASES]
                if all(v is not None for v in values):
                    phases.setdefault(name, []).append(values)
    return ({name: [summarize(list(col))["median"] for col in zip(*rows)]
             for name, rows in phases.items()}, len(runs))


def _http_data(doc: dict, figure_: str, divisor: float = 1.0
               ) -> list[tuple[str, list[tuple[str, float | None]]]]:
    """(server, [(scenario title, value)]) of ``http.load.SCENARIO.<figure_>`` for each
    server with a value in some scenario."""
    out = []
    for s in servers(doc):
        values = [(title, None if (v := number_or_none(dig(s, f"http.load.{key}.{figure_}"))) is None
                   else v / divisor) for key, title in SCENARIOS]
        if any(v is not None for _, v in values):
            out.append((name_of(s), values))
    return out


def _tool_data(doc: dict) -> list[tuple[str, list[tuple[str, float | None]]]]:
    """(server, [(request, warm p50 ms)]) of each server with a ``workload`` block:
    ``initialize`` first where it was timed, then the tools in the workload's order."""
    out = []
    for s in servers(doc):
        block = s.get("workload")
        if not isinstance(block, dict):
            continue
        values = ([("initialize", number_or_none(dig(block, "initialize_ms.p50")))]
                  if isinstance(block.get("initialize_ms"), dict) else [])
        values += [(name, number_or_none(dig(tool, "warm_ms.p50")))
                   for name, tool in (block.get("tools") or {}).items()]
        if any(v is not None for _, v in values):
            out.append((name_of(s), values))
    return out


# ---- drawing blocks -----------------------------------------------------------------------

def groups(items: list, value) -> list[list]:
    """``items`` sorted by ``value(item)``, cut where an item exceeds SPLIT times the smallest
    of its group: each group fits one linear axis."""
    out: list[list] = []
    for item in sorted(items, key=value):
        if out and (value(out[-1][0]) <= 0 or value(item) <= SPLIT * value(out[-1][0])):
            out[-1].append(item)
        else:
            out.append([item])
    return out


def _panels(sf, sizes: list[int]) -> list:
    """A column of Axes on ``sf``, one per group, each as tall as its rows."""
    return list(sf.subplots(len(sizes), 1, squeeze=False,
                            gridspec_kw={"height_ratios": [n + 1.2 for n in sizes]})[:, 0])


def _charts(sf, charts: list[list], width_ratios=None) -> list:
    """A subfigure of ``sf`` for each chart's rows in ``charts`` [[(label, ...)]]: side by
    side (``width_ratios``) when no label is longer than BESIDE, else one above the other,
    each as tall as its rows."""
    if len(charts) == 1:
        return [sf]
    if _beside(charts):
        return list(sf.subfigures(1, len(charts), width_ratios=width_ratios))
    return list(sf.subfigures(len(charts), 1, height_ratios=[_height_rows(len(c)) for c in charts]))


def _beside(charts: list[list]) -> bool:
    return all(len(str(row[0])) <= BESIDE for rows in charts for row in rows)


def _charts_rows(charts: list[list]) -> int:
    """The rows ``_charts`` needs for ``charts`` (empty ones dropped): the longest chart's
    side by side, else every chart's and room for the titles and axes between them."""
    charts = [c for c in charts if c]
    if len(charts) < 2 or _beside(charts):
        return max(map(len, charts), default=0)
    return sum(map(len, charts)) + 5 * (len(charts) - 1)


def _finish(axes: list, title: str, xlabel: str) -> None:
    """Title on the first panel, the x label on the last (saying, on a line of its own, when
    the chart is split into panels of their own scale), a light grid on each."""
    axes[0].set_title(title, fontsize=10)
    axes[-1].set_xlabel(xlabel + (f"\neach panel its own scale (values over {SPLIT}x apart)"
                                  if len(axes) > 1 else ""), fontsize=8)
    for ax in axes:
        ax.grid(axis="x", alpha=0.3)
        ax.tick_params(labelsize=8)
        ax.set_xlim(left=0)


def _varied(doc: dict, path: str) -> set[str]:
    """The servers whose series at ``path`` carries the "high_variation" warning (its stdev
    over 10% of its mean: stats.series_warnings)."""
    return {name_of(s) for s in servers(doc) for w in s.get("warnings") or []
            if isinstance(w, dict) and w.get("kind") == "high_variation" and w.get("metric") == path}


def _strip(sf, rows: list[tuple[str, dict]], title: str, xlabel: str, floors=(),
           varied=()) -> None:
    """Each row's runs as dots, its median as a bar across, its confidence interval as a
    line; rows = [(server, stats block)]; the names in ``varied`` (_varied) in NOISY."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    parts = groups(rows, lambda r: r[1]["median"])
    axes = _panels(sf, [len(g) for g in parts])
    level = level_text([b for _, b in rows])
    for ax, part in zip(axes, parts):
        for y, (name, block) in enumerate(part):
            samples = [v for v in block.get("samples") or [] if number_or_none(v) is not None]
            offsets = [0.25 * ((i % 5) - 2) / 2 for i in range(len(samples))]
            ax.plot(samples, [y + o for o in offsets], "o", ms=3.5, color=SAMPLE, alpha=0.8,
                    clip_on=False)
            low, high = number_or_none(block.get("ci_low")), number_or_none(block.get("ci_high"))
            if low is not None and high is not None:
                ax.plot([low, high], [y, y], color=IDLE, linewidth=3, solid_capstyle="butt")
            ax.plot([block["median"]], [y], "|", color="black", ms=16, mew=2.5)
            if name in floors:
                ax.axvline(block["median"], color="gray", linestyle="--", linewidth=1)
        top = max(max([b.get("max") or b["median"] for _, b in part]),
                  max((v for _, b in part for v in b.get("samples") or [] if number_or_none(v) is not None),
                      default=0))
        ax.set_xlim(0, top * 1.08)
        ax.set_ylim(len(part) - 0.5, -0.5)
        ax.set_yticks(range(len(part)), [f"{name}  {fmt_ms(b['median'])} ms" for name, b in part])
        for label, (name, _block) in zip(ax.get_yticklabels(), part):
            label.set_color(NOISY if name in varied else "black")
    _finish(axes, title, xlabel)
    handles = [Line2D([], [], marker="o", linestyle="", color=SAMPLE, ms=4, label="one run"),
               Line2D([], [], marker="|", linestyle="", color="black", ms=10, mew=2, label="median")]
    if level:
        handles.append(Line2D([], [], color=IDLE, linewidth=3,
                              label=f"the median's {level} confidence interval"))
    if any(name in floors for name, _ in rows):
        handles.append(Line2D([], [], color="gray", linestyle="--", label="the floor server"))
    if any(name in varied for name, _ in rows):
        handles.append(Patch(color=NOISY, label="name in red: stdev over 10% of the mean"))
    sf.legend(handles=handles, fontsize=7, ncols=len(handles), loc="outside lower center",
              frameon=False)


def _bars(sf, rows: list[tuple[str, list[tuple[str, float | None]]]], title: str, xlabel: str,
          stacked: bool, colors: dict[str, str], fmt=lambda v: f"{v:.1f}",
          line: tuple[float, str] | None = None) -> None:
    """Horizontal bars, a row per server: its parts stacked (``stacked``) or side by side;
    ``colors`` gives each part's colour (a part "" is drawn in IDLE), and a legend names every
    part where there is more than one, in ``colors``' order. The value at each bar's (or
    stack's) end; ``line`` (value, legend text) a dashed reference line on each panel whose
    scale holds it."""
    from matplotlib.lines import Line2D

    def size(row):
        values = [v for _, v in row[1] if v is not None]
        return sum(values) if stacked else max(values)

    parts = groups(rows, size)
    axes = _panels(sf, [len(g) for g in parts])
    drawn: dict[str, object] = {}
    for ax, part in zip(axes, parts):
        for y, (_name, pieces) in enumerate(part):
            left, width = 0.0, 0.8 if stacked else 0.8 / len(pieces)
            for k, (piece, value) in enumerate(pieces):
                if value is None:
                    continue
                center = y if stacked else y - 0.4 + width * (k + 0.5)
                bar = ax.barh(center, value, width, left=left, color=colors.get(piece, IDLE),
                              edgecolor="white", linewidth=0.5)
                drawn.setdefault(piece, bar)
                if stacked:
                    left += value
                else:
                    ax.annotate(fmt(value), (value, center), xytext=(2, 0), textcoords="offset points",
                                va="center", fontsize=6.5)
            if stacked:
                ax.annotate(fmt(left), (left, y), xytext=(2, 0), textcoords="offset points",
                            va="center", fontsize=7)
        top = size(part[-1])
        if line is not None and line[0] <= top * 1.5:
            ax.axvline(line[0], color="gray", linestyle="--", linewidth=1)
            top = max(top, line[0])
        ax.set_xlim(0, top * 1.18)
        ax.set_ylim(len(part) - 0.5, -0.5)
        ax.set_yticks(range(len(part)), [name for name, _ in part])
    _finish(axes, title, xlabel)
    named = sorted(((piece, bar) for piece, bar in drawn.items() if piece),
                   key=lambda named_: list(colors).index(named_[0]) if named_[0] in colors else len(colors))
    if line is not None:
        named.append((line[1], Line2D([], [], color="gray", linestyle="--")))
    if len(drawn) > 1 or named:
        sf.legend([bar for _, bar in named], [p for p, _ in named], fontsize=7,
                  ncols=legend_columns(sf, [p for p, _ in named]), loc="outside lower center",
                  frameon=False)


def _cold_start(sf, doc: dict) -> None:
    rows = _series(doc, "handshake_ms")
    _strip(sf, rows, "Cold start: spawn to initialize answered", "milliseconds",
           floors=[name_of(s) for s in servers(doc) if is_floor(s)],
           varied=_varied(doc, "handshake_ms"))


def _memory(sf, doc: dict) -> None:
    kind, idle, peak = _memory_data(doc)
    names = list(dict.fromkeys(p for _, parts in idle for p, _ in parts if p))  # a tree's order
    several = any(len(parts) > 1 for _, parts in idle)
    palette = [c for c in PROCESS_COLORS if c != PEAK]  # no process reads as the peak's bar
    colors = {p: palette[i % len(palette)] for i, p in enumerate(names)}
    subs = _charts(sf, [rows for rows in (idle, peak) if rows], width_ratios=[3, 2])
    if idle:
        _bars(subs[0], idle if several else [(n, [("", sum(v for _, v in p))]) for n, p in idle],
              f"Idle memory: {kind}" + (", stacked per process" if several else ""),
              f"MiB ({kind} of the process tree)", True, colors)
    if peak:
        size = payload_size(dig(doc, "settings.payload_bytes"))
        _bars(subs[-1], peak, f"Peak RSS, {size} call", "MiB", True, {"": PEAK})


def _footprint(sf, doc: dict) -> None:
    shown = [(key, title, rows) for key, title in (("artifact_bytes", "Artifact"),
                                                   ("dev_tree_bytes", "Dev tree (the build's)"))
             if (rows := _footprint_data(doc, key))]
    for sub, (_key, title, rows) in zip(_charts(sf, [rows for _k, _t, rows in shown]), shown):
        _bars(sub, rows, title, "MiB", True, {}, fmt=lambda v: f"{v:.2g}" if v < 1 else f"{v:.1f}")


def _timeline(sf, doc: dict) -> None:
    from matplotlib.lines import Line2D

    medians, runs = _timeline_data(doc)
    names = list(medians)
    ax = sf.subplots()
    colors = ("#8172B3", IDLE, "#55A868")
    sizes = (9, 6, 14)  # largest first, so phases that end together all stay visible
    for y, name in enumerate(names):
        ax.barh(y, medians[name][-1], 0.5, color="#DDE3EE")
        for k in (2, 1, 0):
            ax.plot([medians[name][k]], [y], PHASES[k][2], color=colors[k], ms=sizes[k], mew=2,
                    clip_on=False)
    end = max((m[-1] for m in medians.values()), default=0.0)
    handles = [Line2D([], [], marker=marker, linestyle="", color=color, mew=2, label=text)
               for (_key, text, marker), color in zip(PHASES, colors)]
    off_scale, right = [], end
    for limit in dig(doc, "startup.limits") or []:
        limit_s = number_or_none(limit.get("limit_s")) if isinstance(limit, dict) else None
        if limit_s is None:
            continue
        client = str(limit.get("client", "a client"))
        if limit_s * 1000 <= 3 * end or end == 0:
            style = ("--", ":", "-.")[(len(handles) - len(PHASES)) % 3]
            ax.axvline(limit_s * 1000, color=NOISY, linestyle=style, linewidth=1.2)
            right = max(right, limit_s * 1000)
            handles.append(Line2D([], [], color=NOISY, linestyle=style,
                                  label=f"{client}: startup limit {limit_s:g} s"))
        else:
            off_scale.append(f"{client}: startup limit {limit_s:g} s, off scale "
                             f"(the slowest server uses {end / (limit_s * 1000):.1%} of it)")
    labels = [f"{n}  {fmt_ms(medians[n][-1])} ms" for n in names]
    ax.set_yticks(range(len(names)), labels)
    ax.set_ylim(len(names) - 0.5, -0.5)
    n = dig(doc, "startup.sessions.n") if dig(doc, "startup.sessions.runs") else None
    _finish([ax], f"Startup timeline: {n} copies of every server spawned at once" if n
            else "Startup timeline: every server spawned at once",
            "\n".join([f"milliseconds from spawn (median of {runs} run{'s' * (runs != 1)})",
                       *(line for note in off_scale for line in textwrap.wrap(note, width=max(
                           40, round(WIDTH * 72 / CHAR) - max(map(len, labels), default=0))))]))
    ax.set_xlim(0, right * 1.05 or 1)
    sf.legend(handles=handles, fontsize=7, ncols=min(3, len(handles)), loc="outside lower center",
              frameon=False)


def _http(sf, doc: dict) -> None:
    """HTTP cold start (as cold start), requests/s, p95 latency: each on its own axis."""
    start = _series(doc, "http.start_ms.initialize")
    rps, p95 = _http_data(doc, "rps"), _http_data(doc, "latency_ms.p95")
    shown = [chart for chart in (start and "start", rps and "rps", p95 and "p95") if chart]
    subs = sf.subfigures(len(shown), 1, squeeze=False, height_ratios=[
        _height_rows(2 * len(start) if c == "start" else 2 * len(rps)) for c in shown])[:, 0]
    colors = {title: color for (_k, title), color in zip(SCENARIOS, (IDLE, PEAK))}
    for sub, chart in zip(subs, shown):
        if chart == "start":
            _strip(sub, start, "HTTP cold start: spawn to initialize answered", "milliseconds",
                   floors=[name_of(s) for s in servers(doc) if is_floor(s)],
                   varied=_varied(doc, "http.start_ms.initialize"))
        elif chart == "rps":
            ceiling = number_or_none(dig(doc, "load_ceiling.load.calls.rps"))
            _bars(sub, rps, "Under load: requests per second", "requests per second", False,
                  colors, fmt=lambda v: f"{v:.0f}", line=None if ceiling is None else (
                      ceiling, f"the engine's ceiling (on {dig(doc, 'load_ceiling.server')}, "
                               f"calls): {ceiling:.0f}/s"))
        else:
            floor = number_or_none(dig(doc, "load_ceiling.load.calls.latency_ms.p95"))
            _bars(sub, p95, "Under load: p95 latency", "milliseconds", False, colors, fmt=fmt_ms,
                  line=None if floor is None else (floor, f"the floor's p95: {fmt_ms(floor)} ms"))


def _start_data(doc: dict) -> list[tuple[str, list[tuple[str, float]]]]:
    """[(server, [(START_PARTS part, ms)])] of every server with a profiled start."""
    return [(name_of(s), split) for s in servers(doc) if (split := start_split(s))]


def _split_data(doc: dict) -> list[tuple[str, list[tuple[str, float]]]]:
    """[(server, [(class, MiB)])]: idle RSS by class of mapping (``memory.idle_split``)."""
    rows = []
    for s in servers(doc):
        split = dig(s, "memory.idle_split")
        if isinstance(split, dict):
            parts = [(name, v / MIB) for name, block in split.items()
                     if isinstance(block, dict)
                     and (v := number_or_none(block.get("rss_bytes"))) is not None and v > 0]
            if parts:
                rows.append((name_of(s), parts))
    return rows


def _why(sf, doc: dict) -> None:
    start, split = _start_data(doc), _split_data(doc)
    top, bottom = sf.subfigures(2, 1, height_ratios=[_height_rows(len(start)),
                                                     _height_rows(len(split))]) \
        if start and split else (sf, sf)
    if start:
        _bars(top, start, "Where the profiled start goes", "milliseconds (self times)", True,
              dict(zip(START_PARTS, PROCESS_COLORS)))
    if split:
        names = list(dict.fromkeys(name for _, parts in split for name, _ in parts))
        _bars(bottom, split, "Idle RSS by class of mapping", "MiB", True,
              dict(zip(names, CLASS_COLORS)))


def _per_tool(sf, doc: dict) -> None:
    """A workload's warm p50 per tool, side by side per server (a tool floor shows as bars of
    one length far past initialize's)."""
    rows = _tool_data(doc)
    names = list(dict.fromkeys(name for _, values in rows for name, _ in values))
    colors = {name: PROCESS_COLORS[i % len(PROCESS_COLORS)] for i, name in enumerate(names)}
    _bars(sf, rows, "Warm latency per tool: p50", "milliseconds", False, colors, fmt=fmt_ms)


def _height_rows(rows: int) -> float:
    return 1.4 + ROW * rows


CHARTS = {
    "cold-start": (_cold_start, lambda doc: len(_series(doc, "handshake_ms"))),
    "memory": (_memory, lambda doc: _charts_rows(list(_memory_data(doc)[1:]))),
    "footprint": (_footprint, lambda doc: _charts_rows([_footprint_data(doc, "artifact_bytes"),
                                                        _footprint_data(doc, "dev_tree_bytes")])),
    "timeline": (_timeline, lambda doc: len(_timeline_data(doc)[0])
                 + len(dig(doc, "startup.limits") or []) * bool(_timeline_data(doc)[0])),
    "why": (_why, lambda doc: len(_start_data(doc)) + len(_split_data(doc))
            + 3 * bool(_start_data(doc) and _split_data(doc))),
    "http": (_http, lambda doc: (2 * len(_series(doc, "http.start_ms.initialize"))
                                 + 2 * len(_http_data(doc, "rps")) + 2 * len(_http_data(doc, "latency_ms.p95")))),
    "per-tool": (_per_tool, lambda doc: sum(len(values) for _, values in _tool_data(doc))),
}
"""Kind -> (draw on a (sub)figure, its number of rows: 0 when the results cannot fill it)."""


def available(results) -> list[str]:
    """The chart kinds this results file can fill, in CHARTS order."""
    doc = documents(results)[0]
    return [kind for kind, (_draw, rows) in CHARTS.items() if rows(doc)]


def caption(doc: dict) -> str:
    """The machine and the run: "AMD EPYC; 2 cores; Linux 6.1; 6 runs after 1 warm-up; 2026-12-01"."""
    env = doc.get("environment") if isinstance(doc.get("environment"), dict) else {}
    parts = [str(env[k]) for k in ("cpu_model",) if env.get(k) is not None]
    if env.get("cpu_count") is not None:
        parts.append(f"{env['cpu_count']} cores")
    if env.get("os") is not None:
        parts.append(" ".join(str(env[k]) for k in ("os", "kernel") if env.get(k) is not None))
    runs, warmup = dig(doc, "settings.runs"), dig(doc, "settings.warmup")
    if runs is not None:
        parts.append(f"{runs} runs after {warmup} warm-up")
    parts.append(str(doc.get("created", "date not recorded"))[:10])
    return "; ".join(parts)


def mark(fig, text: str | None) -> None:
    """The noisy-run mark: ``text`` in white on a red box above the figure; nothing for None."""
    if text:
        fig.suptitle(f"⚠ {text}: the figures may read high", color="white", fontsize=9,
                     fontweight="bold", wrap=True,  # several runs' marks: lines, not off the edge
                     bbox={"boxstyle": "round", "facecolor": NOISY, "edgecolor": NOISY})


def figure(results, kind: str | None = None, labels=None):
    """A Figure of a results file (a ``Results`` or its JSON dict): the chart ``kind`` (one of
    CHARTS, or "history": views/history.py), or without it one chart under another for each
    the results can fill. For "history", ``results`` may be a list of results files (the
    stored runs, oldest first; ``labels`` one per file), drawn against the run. The machine
    and the date are the caption; a noisy run is marked (``noisy``).

    Raises:
        ValueError: unknown ``kind``, or the results hold nothing that chart needs.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    docs = documents(results)
    doc = docs[-1]
    if kind == "history":
        from . import history

        fig = Figure(figsize=(WIDTH, 1), layout="constrained")
        FigureCanvasAgg(fig)
        history.draw(fig.subfigures(1, 1), docs, labels, WIDTH)
        names = labels or [str(i + 1) for i in range(len(docs))]
        mark(fig, "; ".join(f"{name}: {text}" if len(docs) > 1 else text
                            for name, d in zip(names, docs) if (text := noisy(d))) or None)
        fig.supxlabel(caption(doc), fontsize=7, color="dimgray")
        return fig
    if kind is not None and kind not in CHARTS:
        raise ValueError(f"unknown plot kind {kind!r}; known: {', '.join(CHARTS)}, history")
    kinds = available(doc)
    if kind is not None:
        if kind not in kinds:
            raise ValueError(f"nothing to plot: the results file has no {kind} data")
        kinds = [kind]
    if not kinds:
        raise ValueError("nothing to plot: the results file has no server with measurements")
    heights = [_height_rows(CHARTS[k][1](doc)) for k in kinds]
    fig = Figure(figsize=(WIDTH, sum(heights) + 0.5 * bool(noisy(doc))), layout="constrained")
    FigureCanvasAgg(fig)
    subs = fig.subfigures(len(kinds), 1, squeeze=False, height_ratios=heights)[:, 0]
    for sub, name in zip(subs, kinds):
        CHARTS[name][0](sub, doc)
    mark(fig, noisy(doc))
    fig.supxlabel(caption(doc), fontsize=7, color="dimgray")
    return fig


def image_path(value: str) -> str:
    """``value`` when it ends in .png or .svg (any case).

    Raises:
        ValueError: another suffix.
    """
    if Path(value).suffix.lower() not in SUFFIXES:
        raise ValueError(f"{value!r} must end in {' or '.join(SUFFIXES)}")
    return value


def require() -> None:
    """Raises ValueError naming the extra when matplotlib is not installed."""
    try:
        import matplotlib  # noqa: F401  (an optional dependency: pyproject.toml, "plot")
    except ImportError:
        raise ValueError("plot draws with matplotlib, which is not installed: "
                         "pip install 'mcpstart[plot]'") from None


def write(results, kind: str | None, path: Path, labels=None) -> set[str]:
    """``figure(results, kind, labels)`` saved to ``path``; returns the characters of its
    texts the font has no glyph for (drawn as boxes; ``save``).

    Raises:
        ValueError: matplotlib is not installed (the message names the extra), the figure
            cannot be drawn (no data for ``kind``) or the file cannot be written (the
            message names it).
    """
    require()
    fig = figure(results, kind, labels)
    try:
        return save(fig, path)
    except OSError as err:
        raise ValueError(f"cannot write {path}: {err.strerror or err}") from err


def save(fig, path, dpi: int = DPI) -> set[str]:
    """Write ``fig`` to ``path`` as PNG (``dpi`` pixels per inch) or SVG, chosen by the suffix.
    Returns the characters the font has no glyph for (render's).

    Raises:
        ValueError: another suffix. OSError: the file cannot be written.
    """
    suffix = Path(path).suffix.lower()
    if suffix not in SUFFIXES:
        raise ValueError(f"{path}: the image type comes from the suffix: {' or '.join(SUFFIXES)}")
    return render(fig, path, suffix[1:], dpi)


_GLYPH = re.compile(r"Glyph (\d+) .*missing from font")


def render(fig, target, fmt: str, dpi: int) -> set[str]:
    """``fig.savefig(target, format=fmt, dpi=dpi)``, keeping matplotlib's "Glyph N (...)
    missing from font(s)" warnings (a server name in a script the font lacks: drawn as
    boxes) off stderr. Returns those characters (N is the code point), for one note by the
    caller; other warnings pass on."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig.savefig(target, format=fmt, dpi=dpi)
    missing = set()
    for warning in caught:
        found = _GLYPH.search(str(warning.message))
        if found:
            missing.add(chr(int(found[1])))
        else:
            warnings.warn_explicit(warning.message, warning.category, warning.filename,
                                   warning.lineno)
    return missing
