"""Tables: views of a results file, metrics as rows and servers as columns."""

from __future__ import annotations

from collections.abc import Callable

from ..results import Results, ServerResult

MIB = 1024 * 1024


def _get(row: ServerResult, path: str):
    value = row
    for key in path.split("."):
        value = getattr(value, key, None) if isinstance(value, ServerResult) else (value or {}).get(key)
        if value is None:
            return None
    return value


def _ms(v) -> str:
    return f"{v:.1f}"


def _mib(v) -> str:
    return f"{v / MIB:.1f}"


def _yes(v) -> str:
    return "yes" if v else "no"


def _shutdown(v) -> str:
    return f"{v['how']} ({v['ms']:.0f} ms)"


ROWS: list[tuple[str, str, Callable]] = [
    ("SDK version", "sdk_version", str),
    ("cold start median (ms)", "handshake_ms.median", _ms),
    ("cold start mean ± stdev (ms)", "handshake_ms", lambda s: f"{s['mean']:.1f} ± {s['stdev']:.1f}"
     if s.get("stdev") is not None else _ms(s["mean"])),
    ("cold start min / max (ms)", "handshake_ms", lambda s: f"{s['min']:.1f} / {s['max']:.1f}"),
    ("cold start runs (+ warm-up)", "handshake_ms", lambda s: f"{s['n']} (+{len(s['warmup_samples'])})"),
    ("idle RSS (MiB)", "memory.idle_rss_bytes", _mib),
    ("idle PSS (MiB)", "memory.idle_pss_bytes", _mib),
    ("idle USS (MiB)", "memory.idle_uss_bytes", _mib),
    ("peak RSS, {payload} call (MiB)", "memory.peak_rss_bytes_payload", _mib),
    ("peak method", "memory.peak_method", str),
    ("processes in tree", "memory.processes", len),
    ("{payload} call round trip (ms)", "payload.round_trip_ms", _ms),
    ("result verified ({payload}, Unicode)", "payload", lambda p: f"{_yes(p['verified'])}, "
                                                            f"{_yes(p['unicode_verified'])}"),
    ("artifact (MiB)", "footprint.artifact_bytes", _mib),
    ("dev tree (MiB)", "footprint.dev_tree_bytes", _mib),
    ("dependencies shipped", "footprint.dependency_count", str),
    ("lock file entries", "footprint.lock_count", str),
    ("tool source lines", "footprint.tool_lines", str),
    ("build time (s)", "footprint.build_s", lambda v: f"{v:.1f}"),
    ("negotiated revision", "protocol.negotiated_revision", str),
    ("outputSchema", "tools.output_schema", _yes),
    ("structuredContent", "tools.structured_content", _yes),
    ("shutdown", "shutdown", _shutdown),
]


def _cell(server: ServerResult, path: str, render: Callable) -> str:
    """One rendered value; "-" when absent, "?" when the file holds something unexpected."""
    try:
        value = _get(server, path)
        return "-" if value is None else render(value)
    except (AttributeError, KeyError, TypeError, ValueError):
        return "?"


def _size(n: int | None) -> str:
    if not isinstance(n, int):
        return "payload"
    return f"{n // MIB} MiB" if n % MIB == 0 else f"{n} B"


def table(results: Results, tablefmt: str = "github") -> str:
    """Render ``results`` as one table (tabulate ``tablefmt``): a status row, then one row per
    metric with units in the row name; a missing value is "-". Failed or skipped servers
    show their status, with the reasons listed under the table."""
    from tabulate import tabulate

    servers = results.servers
    payload = _size(results.settings.get("payload_bytes"))
    body = [["status", *[s.status for s in servers]]]
    for label, path, render in ROWS:
        body.append([label.format(payload=payload), *[_cell(s, path, render) for s in servers]])
    text = tabulate(body, headers=["metric", *[s.name for s in servers]], tablefmt=tablefmt,
                    disable_numparse=True, colalign=("left", *["right"] * len(servers)))
    env, settings = results.environment, results.settings
    machine = (f"{env.get('cpu_model')}, {env.get('cpu_count')} cores, {env.get('os')} "
               f"{env.get('kernel')}; per server: runs {settings.get('runs')} after "
               f"{settings.get('warmup')} warm-up; {results.created}")
    notes = [f"- {s.name} {s.status}: {s.reason}" for s in servers if s.reason]
    notes += [f"- {s.name} warning: {w}" for s in servers for w in s.warnings]
    if not servers:
        notes.append("- this results file holds no servers")
    notes = [note.replace("\n", "\n  ") for note in notes]  # Markdown list continuation
    text = "\n\n".join([text, machine, *(["\n".join(notes)] if notes else [])])
    return text.encode("utf-8", "backslashreplace").decode("utf-8")  # lone surrogates
