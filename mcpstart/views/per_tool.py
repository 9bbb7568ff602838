"""A workload's per-tool figures in words, a section under the table per results file
(docs/workloads.md): per server, ``initialize`` and each tool warm (p50 / p95 / p99, after
how many warm-up calls, whether they settled), each tool's cold first call, and under load the per-request breakdown of each scenario with the
server's CPU and peak RSS."""

from __future__ import annotations

from ..results import dig, name_of, number_or_none, servers

MIB = 1024 * 1024


def workload_section(doc: dict, label: str | None) -> list[str]:
    """The section's lines for one results file; [] when it was measured without a
    workload."""
    workload = dig(doc, "settings.workload")
    if not isinstance(workload, dict):
        return []
    lines = [f"Per tool{f' ({label})' if label else ''}: workload {workload.get('name')} "
             f"({workload.get('path')}), shape {workload.get('shape')} over HTTP (stdio: one "
             f"session), think time {_ms(workload.get('think_ms'), 0)} ms under load"]
    for row in servers(doc):
        block = row.get("workload")
        if not isinstance(block, dict):
            continue
        lines.append(f"- {name_of(row)}:")
        if isinstance(block.get("initialize_ms"), dict):
            lines.append(f"  - initialize, warm: {_latency(block['initialize_ms'])}")
        for name, tool in (block.get("tools") or {}).items():
            cold, warmup = dig(tool, "cold_first_call_ms.median"), tool.get("warmup")
            lines.append(f"  - {name}, warm: {_latency(tool.get('warm_ms'))}"
                         + ("" if not isinstance(warmup, dict) else
                            f" after {warmup.get('calls')} warm-up calls"
                            + ("" if warmup.get("settled") else " (unsettled)"))
                         + ("" if cold is None else
                            f"; cold first call {_ms(cold)} ms (median of "
                            f"{dig(tool, 'cold_first_call_ms.n')})"))
        for load in dig(row, "http.load") or []:
            by = load.get("by_request") or {}
            parts = "; ".join(f"{name} {_ms(v.get('p50'))} / {_ms(v.get('p95'))}"
                              + (f" ({v['errors']} errors)" if v.get("errors") else "")
                              for name, v in by.items())
            lines.append(f"  - load, {load.get('scenario')} ({_ms(load.get('rps'), 0)} "
                         f"requests/s), p50 / p95 ms: {parts}; server CPU "
                         f"{_ms(load.get('cpu_percent'), 0)}%, peak RSS "
                         f"{_ms(_scaled(load.get('rss_bytes'), MIB), 1)} MiB")
    return lines


def _latency(block) -> str:
    """``{n, p50, p95, p99}`` as "0.11 / 0.13 / - ms (n=30)"; "-" without one."""
    if not isinstance(block, dict):
        return "-"
    return (" / ".join(_ms(block.get(k)) for k in ("p50", "p95", "p99"))
            + f" ms (n={block.get('n')})")


def _ms(value, places: int = 2) -> str:
    """A number with ``places`` decimals; "-" for none (views/table.py imports this module,
    so its formatters are not used here)."""
    number = number_or_none(value)
    return "-" if number is None else f"{number:.{places}f}"


def _scaled(value, unit: int):
    number = number_or_none(value)
    return None if number is None else number / unit
