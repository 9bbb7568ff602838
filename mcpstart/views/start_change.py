"""What changed in a server's start between two results rows (``compare``'s "what changed in
the start", docs/compare.md): the distributions whose import time changed beyond noise, the
ones added and the ones gone (``imports`` blocks), and the change of the CPU/wait split
(``start_usage`` blocks). Shown beside the gate, never part of it."""

from __future__ import annotations

from ..results import dig
from ..stats import holm, is_number, mann_whitney_greater, smallest_p, summarize

NOISE_ALPHA = 0.1
"""Two-sided p at or under which a change counts; a distribution's p is adjusted over all
the distributions tested (stats.holm), so that one unchanged distribution in ten does not
pass by chance. The least p of n against n starts is 2 / C(2n, n) (3: 0.1, 7: 0.00058)."""
RELEVANT_SHARE = 0.01
"""A distribution's change is named only when it moves at least this share of OLD's
profiled start (smaller ones explain no start-up difference)."""

RULE = ("(What changed in the start: a change counts when an exact two-sided Mann-Whitney "
        f"test of the per-start samples gives p <= {NOISE_ALPHA:g} and the median moved more "
        "than the time threshold; a distribution's figure is its own modules' (self) time, "
        "its p adjusted over the distributions tested (Holm), named when it moved at least "
        f"{RELEVANT_SHARE:.0%} of OLD's profiled start. Shown, not gated.)")


def two_sided_p(old: list[float], new: list[float]) -> float:
    """The exact two-sided Mann-Whitney p of ``old`` against ``new``: twice the smaller
    one-sided p (``mann_whitney_greater`` each way), at most 1; 1.0 when either is empty."""
    return min(1.0, 2 * min(mann_whitney_greater(old, new)[1],
                            mann_whitney_greater(new, old)[1]))


def _tested(old: list[float], new: list[float], threshold_pct: float,
            p: float | None = None) -> dict:
    """``{old_ms, new_ms, change_ms, p, n_old, n_new, changed}``: medians and the noise
    rule's verdict (``p``, else two_sided_p's, <= NOISE_ALPHA and the median moved more
    than ``threshold_pct`` of OLD's)."""
    before, after = summarize(old)["median"], summarize(new)["median"]
    p = two_sided_p(old, new) if p is None else p
    return {"old_ms": before, "new_ms": after, "change_ms": after - before, "p": p,
            "n_old": len(old), "n_new": len(new),
            "changed": p <= NOISE_ALPHA and abs(after - before) > abs(before) * threshold_pct / 100}


def family(pairs: dict[str, tuple[list[float], list[float]]], threshold_pct: float,
           floor_ms: float = 0.0) -> list[dict]:
    """The distributions of one compare, each ``(OLD's samples, NEW's samples)``, tested as
    one family: each ``{name, ..._tested, p_raw}`` with ``p`` Holm-adjusted over ``pairs``
    (stats.holm) and ``changed`` also needing a change of at least ``floor_ms``; largest
    change first. The rule of ``imports_change``, and of the hand check
    (benchmarks/import_time_check.py)."""
    names = list(pairs)
    raw = [two_sided_p(*pairs[n]) for n in names]
    out = []
    for name, p_raw, p in zip(names, raw, holm(raw)):
        found = _tested(*pairs[name], threshold_pct, p)
        found["changed"] = found["changed"] and abs(found["change_ms"]) >= floor_ms
        out.append({"name": name, **found, "p_raw": p_raw})
    return sorted(out, key=lambda d: -abs(d["change_ms"]))


def _samples(entry: dict, key: str) -> list[float]:
    values = entry.get(key)
    return [v for v in values if is_number(v)] if isinstance(values, list) else []


def imports_change(old: dict, new: dict, threshold_pct: float) -> dict:
    """Two ``imports`` blocks (docs/results.md#imports) compared.

    Returns:
        ``{old_ms, new_ms, change_ms, p, n_old, n_new, changed, tested, distributions,
        largest, family, added, gone}``: the imports' total (``import_samples``; ``tested``
        False when a side has no per-start samples, older files: then only the medians,
        ``p`` None); ``distributions`` those changed beyond noise by the rule of ``family``
        (``p`` Holm-adjusted over the ``family`` distributions of both sides, ``p_raw``
        beside) and moving at least RELEVANT_SHARE of OLD's profiled start, largest change
        first, each ``{name, ...}`` as ``_tested`` on its self time (its own modules' time,
        ``samples``: the self times of all distributions add up to the imports' total, so
        each change is its own, not that of what it imports); ``largest`` the tested
        distribution that moved most, named or not (None when none was tested), so a first
        difference within noise is said inconclusive with its p; ``added``/``gone``
        ``[{name, self_ms, cumulative_ms}]`` imported in NEW only / OLD only, largest self
        time first.
    """
    total = (_tested(_samples(old, "import_samples"), _samples(new, "import_samples"),
                     threshold_pct)
             if _samples(old, "import_samples") and _samples(new, "import_samples") else
             {"old_ms": old.get("import_ms"), "new_ms": new.get("import_ms"),
              "change_ms": None, "p": None, "n_old": old.get("runs"), "n_new": new.get("runs"),
              "changed": False})
    tested = total["p"] is not None
    by_old = {d["name"]: d for d in old.get("distributions") or []}
    by_new = {d["name"]: d for d in new.get("distributions") or []}
    pairs = {n: (_samples(by_old[n], "samples"), _samples(by_new[n], "samples"))
             for n in by_old if n in by_new and tested}
    found = family({n: pair for n, pair in pairs.items() if all(pair)}, threshold_pct,
                   RELEVANT_SHARE * (old.get("instrumented_ms") or 0))
    one_side = lambda mine, other: sorted(  # noqa: E731
        ({"name": n, "self_ms": d["self_ms"], "cumulative_ms": d["cumulative_ms"]}
         for n, d in mine.items() if n not in other), key=lambda d: -d["self_ms"])
    return {**total, "tested": tested, "distributions": [d for d in found if d["changed"]],
            "largest": found[0] if found else None, "family": len(found),
            "added": one_side(by_new, by_old), "gone": one_side(by_old, by_new)}


def cpu_change(old: dict, new: dict, threshold_pct: float) -> dict:
    """Two ``start_usage`` blocks compared: the CPU time of the counted starts (its
    ``samples``) by the rule of ``_tested``, and ``cpu_share``/``waiting_share`` of each
    side (``old_cpu_share``, ``new_cpu_share``, ``old_waiting_share``,
    ``new_waiting_share``)."""
    found = _tested(_samples(old.get("cpu_ms") or {}, "samples"),
                    _samples(new.get("cpu_ms") or {}, "samples"), threshold_pct)
    return {**found, **{f"{side}_{key}": block.get(key) for side, block in
                        (("old", old), ("new", new)) for key in ("cpu_share", "waiting_share")}}


def start_change(server: str, old_row: dict, new_row: dict, threshold_pct: float
                 ) -> dict | None:
    """``{server, imports, cpu}`` for two rows of one server (each part None when a side
    lacks its block; None when both are)."""
    imports = (imports_change(old_row["imports"], new_row["imports"], threshold_pct)
               if isinstance(old_row.get("imports"), dict)
               and isinstance(new_row.get("imports"), dict) else None)
    cpu = (cpu_change(old_row["start_usage"], new_row["start_usage"], threshold_pct)
           if dig(old_row, "start_usage.cpu_ms.samples") and
           dig(new_row, "start_usage.cpu_ms.samples") else None)
    return {"server": server, "imports": imports, "cpu": cpu} if imports or cpu else None


def _ms(value) -> str:
    return "-" if value is None else f"{value:.1f} ms"


def _share(value) -> str:
    return "-" if value is None else f"{value:.0%}"


def _verdict(found: dict) -> str:
    if found["p"] is None:
        return "not tested (no per-start samples)"
    word = "changed" if found["changed"] else "within noise"
    return f"{word}, p = {found['p']:.2g}, {found['n_old']} vs {found['n_new']} starts"


def inconclusive(largest: dict, tested: int) -> str:
    """The verdict line when no distribution changed beyond noise: the largest change, its
    p (raw and adjusted over the ``tested`` distributions) and the least p the starts allow."""
    if largest["p"] <= NOISE_ALPHA:
        return (f"no distribution moved beyond the threshold (the largest, {largest['name']} "
                f"{largest['change_ms']:+.1f} ms, p = {largest['p']:.2g} over {tested})")
    least = min(1.0, 2 * smallest_p(largest["n_old"], largest["n_new"]))
    return (f"first difference inconclusive (p = {largest['p']:.2g} over {tested} "
            f"distributions, {largest['p_raw']:.2g} alone): the largest, {largest['name']} "
            f"{largest['change_ms']:+.1f} ms, is within noise; {largest['n_old']} vs "
            f"{largest['n_new']} starts reach p = {least:.2g} at least "
            "(measure --profiled-starts)")


def render(change: dict) -> list[str]:
    """One server's change as text lines."""
    lines = [f"{change['server']}: what changed in the start"]
    if cpu := change["cpu"]:
        lines.append(f"  CPU {_ms(cpu['old_ms'])} -> {_ms(cpu['new_ms'])} ({_verdict(cpu)}); "
                     f"CPU against waiting {_share(cpu['old_cpu_share'])}/"
                     f"{_share(cpu['old_waiting_share'])} -> {_share(cpu['new_cpu_share'])}/"
                     f"{_share(cpu['new_waiting_share'])}")
    if imports := change["imports"]:
        lines.append(f"  imports {_ms(imports['old_ms'])} -> {_ms(imports['new_ms'])} "
                     f"({_verdict(imports)}); per distribution, its own modules' time:")
        lines += [f"    {d['name']}: {_ms(d['old_ms'])} -> {_ms(d['new_ms'])} "
                  f"({d['change_ms']:+.1f} ms, p = {d['p']:.2g} over {imports['family']})"
                  for d in imports["distributions"]]
        if imports["tested"] and not imports["distributions"] and imports["largest"]:
            lines.append("    " + inconclusive(imports["largest"], imports["family"]))
        for word, key in (("added", "added"), ("gone", "gone")):
            if imports[key]:
                lines.append(f"    {word} (self, cumulative): " + ", ".join(
                    f"{d['name']} {_ms(d['self_ms'])}, {_ms(d['cumulative_ms'])}"
                    for d in imports[key]))
    return lines
