"""``compare``'s account of what changed in a server's build: the packages the build shipped
that were added, are gone or changed version (``sdk_source.resolved``: Go modules from the
binary's build information, Rust crates from ``cargo tree``, npm packages, Python
distributions, Maven artifacts), and the binary's growth by ELF section
(``footprint.sections``). Shown beside the table, never gated: the artifact's size is gated
as ``footprint.artifact_bytes`` already (docs/compare.md, "What changed in the build")."""

from __future__ import annotations

from ..results import dig
from .table import fmt_mib

SECTION_FLOOR_BYTES = 4096
"""A section's change under one page (4 KiB) is not listed: alignment moves sections by that
much without any code changing."""


def packages_change(old: list[dict], new: list[dict]) -> dict:
    """``{added: [{name, version}], gone: [{name, version}], changed: [{name, old, new}]}``
    between two ``resolved`` lists, each sorted by name."""
    before = {p["name"]: p["version"] for p in old}
    after = {p["name"]: p["version"] for p in new}
    return {"added": [{"name": n, "version": after[n]} for n in sorted(after.keys() - before)],
            "gone": [{"name": n, "version": before[n]} for n in sorted(before.keys() - after)],
            "changed": [{"name": n, "old": before[n], "new": after[n]}
                        for n in sorted(before.keys() & after) if before[n] != after[n]]}


def sections_change(old: dict[str, int], new: dict[str, int]) -> list[dict]:
    """``[{name, old_bytes, new_bytes, change_bytes}]``: each section whose size changed by
    SECTION_FLOOR_BYTES or more (a section on one side only counts 0 on the other), the
    largest change first."""
    rows = [{"name": n, "old_bytes": old.get(n, 0), "new_bytes": new.get(n, 0),
             "change_bytes": new.get(n, 0) - old.get(n, 0)} for n in {**old, **new}]
    return sorted((r for r in rows if abs(r["change_bytes"]) >= SECTION_FLOOR_BYTES),
                  key=lambda r: -abs(r["change_bytes"]))


def build_change(server: str, old_row: dict, new_row: dict) -> dict | None:
    """``{server, packages, sections}`` for two rows of one server (a part None when a side
    lacks its data, or nothing changed in it); None when both parts are."""
    old_pkgs, new_pkgs = dig(old_row, "sdk_source.resolved"), dig(new_row, "sdk_source.resolved")
    packages = (packages_change(old_pkgs, new_pkgs)
                if isinstance(old_pkgs, list) and isinstance(new_pkgs, list) else None)
    if packages is not None and not any(packages.values()):
        packages = None
    old_sec, new_sec = dig(old_row, "footprint.sections"), dig(new_row, "footprint.sections")
    sections = (sections_change(old_sec, new_sec)
                if isinstance(old_sec, dict) and isinstance(new_sec, dict) else None) or None
    return {"server": server, "packages": packages, "sections": sections} \
        if packages or sections else None


def render(change: dict) -> list[str]:
    """One server's change as text lines."""
    lines = [f"{change['server']}: what changed in the build"]
    if packages := change["packages"]:
        for word in ("added", "gone"):
            if packages[word]:
                lines.append(f"  {word}: " + ", ".join(f"{p['name']} {p['version']}"
                                                       for p in packages[word]))
        if packages["changed"]:
            lines.append("  changed: " + ", ".join(f"{p['name']} {p['old']} -> {p['new']}"
                                                   for p in packages["changed"]))
    if sections := change["sections"]:
        lines.append("  binary by section (MiB): " + ", ".join(
            f"{s['name']} {fmt_mib(s['old_bytes'])} -> {fmt_mib(s['new_bytes'])} "
            f"({'+' if s['change_bytes'] > 0 else '-'}{fmt_mib(abs(s['change_bytes']))})"
            for s in sections))
    return lines
