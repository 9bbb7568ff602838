"""``plot --kind history``: each metric against the SDK version, per language, from a results
file holding SDK variants (``--sdk``): one column of panels per language, one row per metric
(cold start median with its confidence interval as whiskers, idle RSS, peak RSS under the
large call, dependencies shipped, artifact size). The x axis is the language's versions in
version order (targets.releases.version_key), a local checkout last; a point is absent
where its server did not measure the metric (a failed build, a failed row)."""

from __future__ import annotations

from ..results import dig, name_of, number_or_none, servers
from ..targets.releases import version_key
from .table import MIB

METRICS = (("handshake_ms.median", "cold start, median (ms)", 1.0),
           ("memory.idle_rss_bytes", "idle RSS (MiB)", MIB),
           ("memory.peak_rss_bytes_payload", "peak RSS, large call (MiB)", MIB),
           ("footprint.dependency_count", "dependencies shipped", 1.0),
           ("footprint.artifact_bytes", "artifact (MiB)", MIB))
"""(key path, axis label, divisor) of each row of panels."""


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


def draw(fig, doc: dict) -> None:
    """The panels on ``fig`` (module doc).

    Raises:
        ValueError: no language has two versions in the file.
    """
    data = history_data(doc)
    if not data:
        raise ValueError("nothing to plot: --kind history needs a language measured at two "
                         "SDK versions or more (measure --sdk LANG=A..B)")
    axes = fig.subplots(len(METRICS), len(data), squeeze=False, sharex="col")
    for column, (language, rows) in enumerate(data.items()):
        labels = [label for label, _row in rows]
        for line, (path, ylabel, divisor) in enumerate(METRICS):
            ax = axes[line][column]
            points = [(x, v / divisor, row) for x, (_l, row) in enumerate(rows)
                      if (v := number_or_none(dig(row, path))) is not None]
            if path == "handshake_ms.median":
                for x, median, row in points:
                    low = number_or_none(dig(row, "handshake_ms.ci_low"))
                    high = number_or_none(dig(row, "handshake_ms.ci_high"))
                    if low is not None and high is not None:
                        ax.errorbar([x], [median], yerr=[[median - low], [high - median]],
                                    fmt="none", ecolor="gray", capsize=3)
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o")
            ax.margins(y=0.12)
            ax.set_ylim(bottom=0)
            if column == 0:
                ax.set_ylabel(ylabel, fontsize=8)
            if line == 0:
                ax.set_title(language)
            ax.set_xticks(range(len(labels)), labels, rotation=45, ha="right", fontsize=8)
            ax.grid(axis="y", alpha=0.3)
    fig.suptitle("Against the SDK version (cold start: median, whiskers its confidence interval)")
