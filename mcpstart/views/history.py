"""``plot --kind history``: each metric over time, one row of panels per metric (cold start
median with the median's confidence interval as whiskers, its level stated; idle PSS; peak
RSS under the large call; dependencies shipped; artifact size), every axis linear from zero.

- One results file holding SDK variants (``--sdk``): a column of panels per language (at
  most COLUMNS side by side, the rest on further rows), the x axis its versions in version
  order (targets.releases.version_key), a local checkout last; the SDK variants (registry,
  checkout) joined by a line, the recipe's locked default build a separate marker.
- Several results files (the stored runs: runs.py): one column, the x axis the files in the
  order they were made (``created``), a line per server.

A point a server did not measure (a failed build or row, a file without the figure) is an
"x" at the panel's foot, in the legend as "not measured"; a panel without any point says
"not measured"."""

from __future__ import annotations

from ..results import dig, name_of, number_or_none, servers
from ..targets.releases import version_key
from .fit import legend_columns
from .table import MIB, level_text

METRICS = (("handshake_ms.median", "cold start (ms)", 1.0),
           ("memory.idle_pss_bytes", "idle PSS (MiB)", MIB),
           ("memory.peak_rss_bytes_payload", "peak RSS,\nlarge call (MiB)", MIB),
           ("footprint.dependency_count", "dependencies\nshipped", 1.0),
           ("footprint.artifact_bytes", "artifact (MiB)", MIB))
"""(key path, axis label, divisor) of each row of panels."""
COLUMNS = 3
"""Languages side by side at most: more take further rows of panels, so the figure keeps the
page's width (a wider one is scaled down past reading)."""
VARIANT, DEFAULT, MISSING = "#4C72B0", "#DD8452", "#8C8C8C"
COLORS = ("#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860", "#DA8BC3",
          "#CCB974", "#64B5CD")


def _version(row: dict) -> tuple[tuple, str] | None:
    """(sort key, axis label) of a row's SDK: its version, "local" for a checkout; None for a
    row that records no SDK source."""
    source = row.get("sdk_source")
    if not isinstance(source, dict):
        return None
    if source.get("kind") == "path":
        return (1, version_key("0")), name_of(row).split("@", 1)[-1]
    version = row.get("sdk_version") or source.get("version")
    return ((0, version_key(version)), version) if isinstance(version, str) else None


def history_data(doc: dict) -> dict[str, list[tuple[str, dict]]]:
    """language -> [(version label, server row)] in version order, for each language with
    at least two versions."""
    found: dict[str, list[tuple[tuple, str, dict]]] = {}
    for row in servers(doc):
        version, language = _version(row), row.get("language")
        if version is not None and isinstance(language, str):
            found.setdefault(language, []).append((*version, row))
    return {language: [(label, row) for _key, label, row in sorted(rows, key=lambda r: r[0])]
            for language, rows in found.items() if len(rows) > 1}


def runs_data(docs: list[dict]) -> dict[str, list[dict | None]]:
    """server -> its row in each file (None where the file lacks it), in first-seen order."""
    names = list(dict.fromkeys(name_of(s) for doc in docs for s in servers(doc)))
    return {name: [next((s for s in servers(doc) if name_of(s) == name), None) for doc in docs]
            for name in names}


def _level(rows) -> str:
    return level_text([b for r in rows if r is not None
                       and isinstance(b := dig(r, "handshake_ms"), dict)])


def _points(ax, xs_rows, path: str, divisor: float, **style) -> list:
    """The points of ``(x, row or None)`` with a value at ``path`` (the cold start's with its
    interval as whiskers); a "not measured" x at the panel's foot for the others. Returns
    the x of the missing ones."""
    from matplotlib.transforms import blended_transform_factory

    points, missing = [], []
    for x, row in xs_rows:
        value = number_or_none(dig(row, path)) if row is not None else None
        (missing if value is None else points).append((x, value, row))
    if path == "handshake_ms.median":
        for x, median, row in points:
            low, high = (number_or_none(dig(row, f"handshake_ms.ci_{k}")) for k in ("low", "high"))
            if low is not None and high is not None:
                ax.errorbar([x], [median], yerr=[[median - low], [high - median]], fmt="none",
                            ecolor=style.get("color", "gray"), alpha=0.6, capsize=3, clip_on=False)
    if points:  # an empty line unclipped would still claim room at the figure's origin
        ax.plot([p[0] for p in points], [p[1] / divisor for p in points], clip_on=False, **style)
    if missing:
        ax.plot([m[0] for m in missing], [0.04] * len(missing), "x", color=style.get("color", MISSING),
                transform=blended_transform_factory(ax.transData, ax.transAxes), clip_on=False)
    return [m[0] for m in missing]


def _frame(ax, labels: list[str], ylabel: str | None, empty: bool) -> None:
    """Ticks, labels and limits of a panel: from zero to 15% above its highest point or
    whisker, so no marker sits on the frame."""
    top = ax.dataLim.y1 if not empty and ax.dataLim.y1 > 0 else 1.0
    ax.set_ylim(0, top * 1.15)
    ax.set_xlim(-0.5, len(labels) - 0.5)
    ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right", fontsize=7)
    ax.tick_params(axis="y", labelsize=7)
    ax.grid(axis="y", alpha=0.3)
    if ylabel:
        ax.set_ylabel(ylabel, fontsize=8)
    if empty:
        ax.text(0.5, 0.5, "not measured", transform=ax.transAxes, ha="center", va="center",
                color=MISSING, fontsize=8)


def _ylabel(path: str, label: str, level: str) -> str:
    return label + (f"\nmedian, {level} CI" if path == "handshake_ms.median" and level else "")


def _legend(fig, entries) -> None:
    from matplotlib.lines import Line2D

    fig.legend(handles=[Line2D([], [], linestyle=ls, marker=m, color=c, label=t)
                        for t, m, ls, c in entries], loc="outside lower center",
               ncols=legend_columns(fig, [t for t, *_ in entries]), fontsize=7, frameon=False)


def _by_version(fig, data: dict, level: str) -> bool:
    """A column of panels per language of ``data`` on ``fig``; whether some point was not
    measured."""
    axes = fig.subplots(len(METRICS), len(data), squeeze=False, sharex="col")
    missed = False
    for column, (language, rows) in enumerate(data.items()):
        labels = [label for label, _row in rows]
        for line, (path, ylabel, divisor) in enumerate(METRICS):
            ax = axes[line][column]
            default = [(x, row) for x, (_l, row) in enumerate(rows)
                       if dig(row, "sdk_source.kind") == "default"]
            variants = [(x, row) for x, (_l, row) in enumerate(rows)
                        if dig(row, "sdk_source.kind") != "default"]
            gone = _points(ax, variants, path, divisor, marker="o", color=VARIANT)
            gone += _points(ax, default, path, divisor, marker="*", ms=11, linestyle="",
                            color=DEFAULT)
            missed = missed or bool(gone)
            _frame(ax, labels, _ylabel(path, ylabel, level) if column == 0 else None,
                   len(gone) == len(rows))
            if line == 0:
                ax.set_title(language, fontsize=10)
        axes[-1][column].set_xlabel("SDK version", fontsize=8)
    return missed


def _by_run(fig, docs: list[dict], labels: list[str]) -> None:
    data = runs_data(docs)
    axes = fig.subplots(len(METRICS), 1, squeeze=False, sharex="col")[:, 0]
    level = _level([row for rows in data.values() for row in rows])
    colors = {name: COLORS[i % len(COLORS)] for i, name in enumerate(data)}
    missed = False
    for ax, (path, ylabel, divisor) in zip(axes, METRICS):
        gone = 0
        for name, rows in data.items():
            gone += len(_points(ax, list(enumerate(rows)), path, divisor, marker="o",
                                color=colors[name]))
        missed = missed or bool(gone)
        _frame(ax, labels, _ylabel(path, ylabel, level), gone == len(data) * len(docs))
    axes[0].set_title("Across runs", fontsize=10)
    axes[-1].set_xlabel("run, in the order made", fontsize=8)
    _legend(fig, [(name, "o", "-", color) for name, color in colors.items()]
            + ([("not measured", "x", "", MISSING)] if missed else []))


def draw(fig, docs: list[dict], labels=None, width: float = 8.0) -> None:
    """The panels on ``fig`` (module doc): against the SDK version for one file, against the
    run for several (``labels``: one per file, default "1", "2" ...). Sets the figure's size:
    ``width`` inches wide, as tall as its rows of panels.

    Raises:
        ValueError: one file and no language has two versions in it; labels not one per file.
    """
    if len(docs) > 1:
        labels = [str(i + 1) for i in range(len(docs))] if labels is None else list(labels)
        if len(labels) != len(docs):
            raise ValueError(f"{len(labels)} label(s) for {len(docs)} file(s): give one per file")
        order = sorted(range(len(docs)), key=lambda i: str(docs[i].get("created")))
        docs, labels = [docs[i] for i in order], [labels[i] for i in order]
        fig.figure.set_size_inches(width, 1.6 * len(METRICS) + 1.2 + 0.15 * len(runs_data(docs)))
        _by_run(fig, docs, labels)
        return
    data = history_data(docs[0])
    if not data:
        raise ValueError("nothing to plot: --kind history needs a language measured at two "
                         "SDK versions or more (measure --sdk LANG=A..B), or several results "
                         "files (the stored runs)")
    languages = list(data)
    rows = -(-len(languages) // COLUMNS)
    per_row = -(-len(languages) // rows)
    fig.figure.set_size_inches(width, (1.6 * len(METRICS) + 1.2) * rows + 0.3)
    subs = fig.subfigures(rows, 1, squeeze=False)[:, 0] if rows > 1 else [fig]
    level = _level([row for versions in data.values() for _l, row in versions])
    missed = False
    for sub, start in zip(subs, range(0, len(languages), per_row)):
        block = {language: data[language] for language in languages[start:start + per_row]}
        missed = _by_version(sub, block, level) or missed
    entries = [("SDK variants (registry, checkout)", "o", "-", VARIANT),
               ("the recipe's locked default build", "*", "", DEFAULT)]
    _legend(fig, entries + ([("not measured", "x", "", MISSING)] if missed else []))
