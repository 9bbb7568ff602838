"""Plots of a results file with matplotlib (Agg backend, imported inside the functions so
``mcpstart --help`` stays fast). Each builder returns a ``matplotlib.figure.Figure`` without
touching pyplot's global state; ``save`` writes it as PNG or SVG.

Charts: cold start per server (median bar, min-max whiskers, the floor server ``c`` as a
horizontal line, log scale when the servers span more than 100x), memory per server (idle
RSS stacked per process, and the peak RSS under the large call), footprint (artifact and
dev tree), the startup timeline (every server spawned at once, split into phases, with
the clients' startup limits), and HTTP load (requests/s and p95 per server, the engine's
ceiling and the floor's p95 as lines).
"""

from __future__ import annotations

from pathlib import Path

from ..results import dig, documents, number_or_none, servers
from ..stats import summarize
from .table import MIB, fmt_ms, payload_size

FLOOR = "c"
"""The floor server's name: the tiny C server, the least any server can score."""
LOG_SPAN = 100
"""Above this ratio of the largest to the smallest value, a chart uses a log scale."""
SUFFIXES = (".png", ".svg")
PHASES = (("first_byte", "spawn to first byte"), ("initialize", "to initialize answer"),
          ("tools_list", "to tools/list answer"))
IDLE, PEAK = "#4C72B0", "#DD8452"


def _cold_start_data(doc: dict) -> list[tuple[str, float, float, float]]:
    """(name, median, min, max) in ms for each server with a cold-start median."""
    out = []
    for s in servers(doc):
        median = number_or_none(dig(s, "handshake_ms.median"))
        if median is not None:
            low = number_or_none(dig(s, "handshake_ms.min"))
            high = number_or_none(dig(s, "handshake_ms.max"))
            out.append((str(s.get("name")), median, median if low is None else low,
                        median if high is None else high))
    return out


def _memory_data(doc: dict) -> list[tuple[str, list[tuple[str, float]], float | None, str | None]]:
    """(name, idle parts [(process, MiB)], peak MiB, peak method) per server with idle or
    peak memory; the idle bar has one part per process where the tree has several."""
    out = []
    for s in servers(doc):
        idle, peak = number_or_none(dig(s, "memory.idle_rss_bytes")), number_or_none(dig(s, "memory.peak_rss_bytes_payload"))
        procs = dig(s, "memory.processes")
        parts = []
        if isinstance(procs, list) and len(procs) > 1:
            for p in procs:
                rss = number_or_none(p.get("idle_rss_bytes")) if isinstance(p, dict) else None
                if rss is not None:
                    parts.append((str(p.get("label") or p.get("name") or p.get("pid")),
                                  rss / MIB))
        if not parts and idle is not None:
            parts = [("", idle / MIB)]
        if parts or peak is not None:
            method = dig(s, "memory.peak_method")
            out.append((str(s.get("name")), parts, None if peak is None else peak / MIB,
                        method if isinstance(method, str) else None))
    return out


def _footprint_data(doc: dict) -> list[tuple[str, float | None, float | None]]:
    """(name, artifact MiB, dev tree MiB) per server with either."""
    out = []
    for s in servers(doc):
        artifact = number_or_none(dig(s, "footprint.artifact_bytes"))
        tree = number_or_none(dig(s, "footprint.dev_tree_bytes"))
        if artifact is not None or tree is not None:
            out.append((str(s.get("name")), None if artifact is None else artifact / MIB,
                        None if tree is None else tree / MIB))
    return out


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
                values = [number_or_none(times.get(key)) for key, _ in PHASES]
                if all(v is not None for v in values):
                    phases.setdefault(name, []).append(values)
    return ({name: [summarize(list(col))["median"] for col in zip(*rows)] for name, rows in phases.items()},
            len(runs))


def _log_if_wide(ax, values, axis: str = "y") -> bool:
    """A log scale on ``axis`` when the positive values span more than LOG_SPAN."""
    positive = [v for v in values if v is not None and v > 0]
    wide = bool(positive) and max(positive) / min(positive) > LOG_SPAN
    if wide:
        from matplotlib.ticker import FuncFormatter

        (ax.set_yscale if axis == "y" else ax.set_xscale)("log")
        getattr(ax, f"{axis}axis").set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    return wide


def _cold_start(ax, doc: dict) -> None:
    data = _cold_start_data(doc)
    names = [d[0] for d in data]
    medians = [d[1] for d in data]
    whiskers = [[d[1] - d[2] for d in data], [d[3] - d[1] for d in data]]
    ax.bar(names, medians, yerr=whiskers, capsize=4, color=IDLE, ecolor="black",
           label="median (whiskers: min to max)")
    for i, (_, median, _low, high) in enumerate(data):
        ax.annotate(f"{fmt_ms(median)} ms", (i, high), textcoords="offset points", xytext=(0, 3),
                    ha="center", va="bottom", fontsize=8)
    log = _log_if_wide(ax, [d[2] for d in data] + [d[3] for d in data])
    floor = next((d[1] for d in data if d[0] == FLOOR), None)
    if floor is not None:
        ax.axhline(floor, color="gray", linestyle="--", linewidth=1,
                   label=f"floor ({FLOOR}): {fmt_ms(floor)} ms")
    _per_server_axes(ax, "Cold start: spawn to initialize response",
                     "milliseconds" + (" (log scale)" if log else ""))


def _per_server_axes(ax, title: str, ylabel: str) -> None:
    """Title, axis labels with units, room above the bars, legend: one bar group per server."""
    ax.set_title(title)
    ax.set_xlabel("server")
    ax.set_ylabel(ylabel)
    ax.margins(y=0.3)
    ax.legend(fontsize=8, loc="upper left")


def _memory(ax, doc: dict) -> None:
    data = _memory_data(doc)
    width = 0.38
    size = payload_size(dig(doc, "settings.payload_bytes"))
    tallest = max([sum(m for _, m in d[1]) for d in data] + [d[2] or 0 for d in data])
    methods = sorted({d[3] for d in data if d[3]})
    for i, (_name, parts, peak, _method) in enumerate(data):
        bottom = 0.0
        for j, (process, mib) in enumerate(parts):
            ax.bar(i - width / 2, mib, width, bottom=bottom, color=IDLE, edgecolor="white",
                   alpha=1 - 0.25 * (j % 3), label="idle RSS" if i == 0 and j == 0 else None)
            if process and mib >= 0.08 * tallest:  # room for the name inside the segment
                ax.annotate(f"{process}\n{mib:.1f}", (i - width / 2, bottom + mib / 2),
                            ha="center", va="center", fontsize=7, color="white")
            bottom += mib
        if parts:
            ax.annotate(f"{bottom:.1f}", (i - width / 2, bottom), textcoords="offset points",
                        xytext=(0, 2), ha="center", va="bottom", fontsize=8)
        if peak is not None:
            ax.bar(i + width / 2, peak, width, color=PEAK,
                   label=f"peak RSS, {size} call ({', '.join(methods) or 'method not recorded'})"
                   if not any(d[2] is not None for d in data[:i]) else None)
            ax.annotate(f"{peak:.1f}", (i + width / 2, peak), textcoords="offset points",
                        xytext=(0, 2), ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(data)), [d[0] for d in data])
    _per_server_axes(ax, "Memory of the process tree (idle stacked per process)", "MiB")


def _footprint(ax, doc: dict) -> None:
    data = _footprint_data(doc)
    width = 0.38
    for offset, index, color, label in ((-width / 2, 1, IDLE, "artifact (what a user installs)"),
                                        (width / 2, 2, PEAK, "dev tree (what the build leaves)")):
        xs = [i + offset for i, d in enumerate(data) if d[index] is not None]
        values = [d[index] for d in data if d[index] is not None]
        bars = ax.bar(xs, values, width, color=color, label=label)
        ax.bar_label(bars, labels=[f"{v:.2g}" if v < 1 else f"{v:.1f}" for v in values],
                     fontsize=8, padding=2)
    log = _log_if_wide(ax, [v for d in data for v in d[1:]])
    ax.set_xticks(range(len(data)), [d[0] for d in data])
    _per_server_axes(ax, "Footprint", "MiB" + (" (log scale)" if log else ""))


def _timeline(ax, doc: dict) -> None:
    medians, runs = _timeline_data(doc)
    names = list(medians)
    colors = ("#8172B3", IDLE, "#55A868")
    for (key, text), color, k in zip(PHASES, colors, range(3)):
        starts = [0.0 if k == 0 else medians[n][k - 1] for n in names]
        lengths = [medians[n][k] - start for n, start in zip(names, starts)]
        ax.barh(names, lengths, left=starts, color=color, label=text, height=0.6)
    end = max((m[-1] for m in medians.values()), default=0.0)
    for n in names:
        ax.annotate(f"{fmt_ms(medians[n][-1])} ms", (medians[n][-1], n), textcoords="offset points",
                    xytext=(3, 0), va="center", fontsize=8)
    limits = dig(doc, "startup.limits")
    off_scale = []
    for limit in limits if isinstance(limits, list) else []:
        limit_s = number_or_none(limit.get("limit_s")) if isinstance(limit, dict) else None
        if limit_s is None:
            continue
        client = str(limit.get("client", "a client"))
        if limit_s * 1000 <= 3 * end or end == 0:
            ax.axvline(limit_s * 1000, color="crimson", linestyle="--", linewidth=1,
                       label=f"{client}: startup limit {limit_s:g} s")
        else:
            off_scale.append(f"{client}: startup limit {limit_s:g} s, off scale "
                             f"(the slowest server uses {end / (limit_s * 1000):.1%} of it)")
    ax.invert_yaxis()
    n = dig(doc, "startup.sessions.n") if dig(doc, "startup.sessions.runs") else None
    ax.set_title(f"Startup timeline: {n} copies of every server spawned at once" if n
                 else "Startup timeline: every server spawned at once")
    ax.set_xlabel("\n".join([f"milliseconds from spawn (median of {runs} run{'s' * (runs != 1)})",
                              *off_scale]))
    ax.set_ylabel("server")
    ax.margins(x=0.15)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)


HTTP_SCENARIOS = (("calls", "calls on a session"), ("session", "a session per call"))


def _http_data(doc: dict) -> list[tuple[str, dict[str, tuple[float | None, float | None]]]]:
    """(name, {scenario: (requests/s, p95 ms)}) per server with load figures."""
    out = []
    for s in servers(doc):
        figures = {scenario: (number_or_none(dig(s, f"http.load.{scenario}.rps")),
                              number_or_none(dig(s, f"http.load.{scenario}.latency_ms.p95")))
                   for scenario, _ in HTTP_SCENARIOS}
        if any(rps is not None for rps, _ in figures.values()):
            out.append((str(s.get("name")), figures))
    return out


def _http(ax, doc: dict) -> None:
    """Requests/s per server and scenario (bars), p95 latency (markers, right axis), the
    engine's ceiling (its requests/s against the HTTP floor) and the floor's p95 as lines."""
    data = _http_data(doc)
    names = [d[0] for d in data]
    width = 0.38
    p95_ax = ax.twinx()
    colors = (IDLE, PEAK)
    for k, ((scenario, title), color, marker) in enumerate(zip(HTTP_SCENARIOS, colors, "Ds")):
        xs = [i + (k - 0.5) * width for i in range(len(names))]
        ax.bar(xs, [d[1][scenario][0] or 0 for d in data], width, color=color,
               label=f"requests/s, {title}")
        p95_ax.plot(xs, [d[1][scenario][1] for d in data], marker, color="black",
                    markeredgecolor="white", label=f"p95 (ms), {title}")
    ceiling = dig(doc, "load_ceiling.load.calls.rps")
    if number_or_none(ceiling) is not None:
        ax.axhline(ceiling, color="gray", linestyle="--", linewidth=1,
                   label=f"ceiling: the engine on {dig(doc, 'load_ceiling.server')}, "
                         f"{ceiling:.0f}/s")
    floor = dig(doc, "load_ceiling.load.calls.latency_ms.p95")
    if number_or_none(floor) is not None:
        p95_ax.axhline(floor, color="gray", linestyle=":", linewidth=1,
                       label=f"floor p95: {fmt_ms(floor)} ms")
    ax.set_xticks(range(len(names)), names)
    p95_ax.set_ylabel("p95 latency (ms)")
    p95_ax.set_ylim(bottom=0)
    p95_ax.legend(fontsize=8, loc="upper right")
    _per_server_axes(ax, "Under load: requests/s and p95 latency", "requests per second")


CHARTS = {
    "cold-start": (_cold_start, lambda doc: bool(_cold_start_data(doc))),
    "memory": (_memory, lambda doc: bool(_memory_data(doc))),
    "footprint": (_footprint, lambda doc: bool(_footprint_data(doc))),
    "timeline": (_timeline, lambda doc: bool(_timeline_data(doc)[0])),
    "http": (_http, lambda doc: bool(_http_data(doc))),
}
"""Kind -> (draw on an Axes, whether the results can fill it)."""


def available(results) -> list[str]:
    """The chart kinds this results file can fill, in CHARTS order."""
    doc = documents(results)[0]
    return [kind for kind, (_draw, can) in CHARTS.items() if can(doc)]


def _caption(doc: dict) -> str:
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


def figure(results, kind: str | None = None):
    """A Figure of one results file (a ``Results`` or its JSON dict): the chart ``kind``
    (one of CHARTS, or "history": views/history.py, a figure of its own), or without it one
    panel per chart the results can fill. The machine (cpu model, cores, OS) and the date
    are the caption.

    Raises:
        ValueError: unknown ``kind``, or the results hold nothing that chart needs.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    doc = documents(results)[0]
    if kind == "history":
        from . import history

        fig = Figure(figsize=(4.5 * max(1, len(history.history_data(doc))) + 1, 13),
                     layout="constrained")
        FigureCanvasAgg(fig)
        history.draw(fig, doc)
        fig.supxlabel(_caption(doc), fontsize=8, color="dimgray")
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
    rows, cols = (2, 2) if len(kinds) == 4 else (2, 3) if len(kinds) > 4 else (1, len(kinds))
    fig = Figure(figsize=(7.5 * cols if cols < 3 else 6.5 * cols, 4.8 * rows), layout="constrained")
    FigureCanvasAgg(fig)
    for ax, name in zip(fig.subplots(rows, cols, squeeze=False).ravel(), kinds):
        CHARTS[name][0](ax, doc)
    fig.supxlabel(_caption(doc), fontsize=8, color="dimgray")
    return fig


def image_path(value: str) -> str:
    """``value`` when it ends in .png or .svg (any case).

    Raises:
        ValueError: another suffix.
    """
    if Path(value).suffix.lower() not in SUFFIXES:
        raise ValueError(f"{value!r} must end in {' or '.join(SUFFIXES)}")
    return value


def write(results, kind: str | None, path: Path) -> None:
    """``figure(results, kind)`` saved to ``path``.

    Raises:
        ValueError: matplotlib is not installed (the message names the extra), the figure
            cannot be drawn (no data for ``kind``) or the file cannot be written (the
            message names it).
    """
    try:
        import matplotlib  # noqa: F401  (an optional dependency: pyproject.toml, "plot")
    except ImportError:
        raise ValueError("plot draws with matplotlib, which is not installed: "
                         "pip install 'mcpstart[plot]'") from None
    fig = figure(results, kind)
    try:
        save(fig, path)
    except OSError as err:
        raise ValueError(f"cannot write {path}: {err.strerror or err}") from err


def save(fig, path: Path) -> None:
    """Write ``fig`` to ``path`` as PNG or SVG, chosen by the suffix.

    Raises:
        ValueError: another suffix. OSError: the file cannot be written.
    """
    suffix = Path(path).suffix.lower()
    if suffix not in SUFFIXES:
        raise ValueError(f"{path}: the image type comes from the suffix: {' or '.join(SUFFIXES)}")
    fig.savefig(path, format=suffix[1:], dpi=150)
