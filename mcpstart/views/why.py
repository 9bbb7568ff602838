"""``mcpstart why``: the whole breakdown of one server's start from a results file (its
``start_usage``, ``imports``, ``classes`` and ``loader`` blocks, docs/startup.md) and of its idle memory by class of
mapping (``memory.idle_split``, docs/process-tree.md), as text, and the short forms the
table's rows show."""

from __future__ import annotations

from ..results import cold_start_median, dig, name_of, servers
from .table import cpu_split, fmt_mib, fmt_ms, other_transport, start_shares, user_system

def why(doc: dict, name: str | None = None) -> str:
    """The breakdown of the server ``name`` of ``doc`` (the first with a ``start_usage``,
    ``imports``, ``classes`` or ``loader`` block or an idle memory split when None): what it has, each
    block it lacks with the reason the row gives.

    Raises:
        ValueError: no such server, or it has none of those (the message says which).
    """
    rows = [s for s in servers(doc) if name is None or name_of(s) == name]
    row = next((s for s in rows if s.get("start_usage") or s.get("imports")
                or s.get("classes") or s.get("loader") or dig(s, "memory.idle_split")), None)
    if row is None:
        names = ", ".join(name_of(s) for s in servers(doc))
        if not rows:
            raise ValueError(f"no server {name!r} in the file (it holds {names})")
        said = (rows[0].get("not_measured") or {}).get("start_usage") \
            if isinstance(rows[0].get("not_measured"), dict) else None
        status = rows[0].get("status")
        raise ValueError(f"{name_of(rows[0])} has no start breakdown: " + (
            said if isinstance(said, str) else
            f"it {status}: {rows[0].get('reason')}" if status in ("failed", "skipped") else
            "it never started, or the file was written before start breakdowns"))
    median = cold_start_median(row)
    lines = [f"{name_of(row)}: cold start median "
             f"{'-' if median is None else fmt_ms(median)} ms"]
    usage = row.get("start_usage")
    if not usage and (reason := (row.get("not_measured") or {}).get("start_usage")):
        lines.append(f"  start usage: not measured: {reason}")
    if usage:
        lines.append(f"  {cpu_split(None, row) or 'CPU unknown'}")
        lines.append(f"  page faults minor {dig(usage, 'minor_faults.median'):g}, major "
                     f"{dig(usage, 'major_faults.median'):g}; context switches voluntary "
                     f"{dig(usage, 'voluntary_switches.median'):g}, involuntary "
                     f"{dig(usage, 'involuntary_switches.median'):g}; read from storage "
                     f"{_bytes(dig(usage, 'read_bytes.median'))}")
        lines.append("  processes (CPU ms, median, by command name; wall: its part of the "
                     "launcher line):")
        lines += [_process(p) for p in usage["processes"]]
    imports = row.get("imports")
    if imports:
        go = imports.get("runtime") == "go"
        lines.append(f"  {'package init' if go else 'imports'}: "
                     f"{fmt_ms(imports['import_ms'])} ms of a "
                     f"{fmt_ms(imports['instrumented_ms'])} ms profiled start "
                     f"({imports['runs']} runs; unprofiled median "
                     f"{fmt_ms(imports['uninstrumented_ms'])} ms)"
                     + ("" if imports["interpreter_ms"] is None else
                        f"; the interpreter's own {fmt_ms(imports['interpreter_ms'])} ms apart")
                     + ("" if imports.get("linking_ms") is None else
                        f"; linking the module graph {fmt_ms(imports['linking_ms'])} ms")
                     + ("" if imports.get("loader_wait_ms") is None else
                        "; waiting for the loader thread "
                        f"{fmt_ms(imports['loader_wait_ms'])} ms"))
        lines.append("  per module (ms: init, packages):" if go else
                     "  per distribution (ms: cumulative, self, modules):")
        lines += [f"    {d['name']}: {fmt_ms(d['cumulative_ms'])}, "
                  + ("" if go else f"{fmt_ms(d['self_ms'])}, ") + f"{d['modules']}"
                  + ("  [HTTP]" if d["http"] else "") for d in imports["distributions"]]
        if go:
            lines.append("  slowest package inits (ms, bytes, allocations):")
            lines += [f"    {p['name']}: {fmt_ms(p['clock_ms'])}, {p['bytes']:g}, "
                      f"{p['allocs']:g}" for p in imports["packages"][:5]]
        if (found := other_transport(None, row)) is not None:
            lines.append(f"  imported for another transport: {found}")
        lines.append(f"  the profiled start by part: {start_shares(None, row)}")
    elif reason := (row.get("not_measured") or {}).get("imports"):
        lines.append(f"  imports: not measured: {reason}")
    if classes := row.get("classes"):
        lines.append(f"  JVM classes: {classes['classes']:,.0f} loaded before the answer of a "
                     f"{fmt_ms(classes['instrumented_ms'])} ms logged start ({classes['runs']} "
                     f"runs; unlogged median {fmt_ms(classes['uninstrumented_ms'])} ms); the "
                     f"first at {fmt_ms(classes['first_class_ms'])} ms of the JVM's uptime, the "
                     f"last at {fmt_ms(classes['last_class_ms'])} ms")
        lines.append("  per source (classes):")
        lines += [f"    {s['name']}: {s['classes']:,.0f}" for s in classes["sources"]]
    if loader := row.get("loader"):
        lines.append(f"  dynamic loader (glibc's statistics, {loader['runs']} extra starts): "
                     f"{len(loader['objects'])} objects mapped ({', '.join(loader['objects'])}); "
                     f"{loader['relocations']:,} symbol lookups and "
                     f"{loader['relocations_from_cache']:,} answered by the lookup cache, "
                     f"{loader['relative_relocations']:,} relative relocations")
    elif reason := (row.get("not_measured") or {}).get("loader"):
        lines.append(f"  dynamic loader: not measured: {reason}")
    if split := dig(row, "memory.idle_split"):
        lines.append("  idle memory by class of mapping (MiB: RSS, PSS):")
        lines += [f"    {name}: {fmt_mib(value['rss_bytes'])}, {fmt_mib(value['pss_bytes'])}"
                  for name, value in sorted(split.items(), key=lambda kv: -kv[1]["rss_bytes"])
                  if value["rss_bytes"]]
    if heap := row.get("runtime_heap"):
        figures = ", ".join(f"{key.removesuffix('_bytes').replace('_', ' ')} {fmt_mib(value)}"
                            for key, value in heap.items() if key.endswith("_bytes"))
        lines.append(f"  the runtime's own heap at its answer ({heap['runtime']}, median of "
                     f"{heap['runs']} extra starts, MiB): {figures}")
    return "\n".join(lines) + "\n"


def _bytes(value) -> str:
    return "-" if value is None else f"{value / 1024:.0f} KiB"


def _process(p: dict) -> str:
    """One process line of the start's usage: "    node: 1235 (user 1100 + system 135; wall
    880; 6 runs)" (the split as ``table.user_system`` shows it)."""
    parts = [user_system(p["cpu_ms"], p["user_ms"], p["system_ms"]).lstrip(":; ")]
    parts += [] if p.get("wall_ms") is None else [f"wall {fmt_ms(p['wall_ms'])}"]
    return f"    {p['name']}: {fmt_ms(p['cpu_ms'])} (" + "; ".join(
        [x for x in parts if x] + [f"{p['runs']} runs"]) + ")"
