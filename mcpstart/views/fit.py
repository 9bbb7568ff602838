"""How much text fits a figure, from the mean width of a character (matplotlib lays text
out only when drawing; the charts choose their wrapping and legend columns before)."""

from __future__ import annotations

CHAR = 4.8
"""Points: about the mean width of a character of DejaVu Sans (matplotlib's default font)
at 8 points; a text of n points takes ``CHAR * n / 8`` per character."""


def legend_columns(sf, labels: list[str], points: float = 7) -> int:
    """Columns of a legend of ``labels`` (``points`` large) that fit the width of the
    (sub)figure ``sf``: at most 5, each as wide as the longest label, its mark and the
    spacing (34 points)."""
    width = sf.bbox.width / sf.figure.dpi * 72
    return max(1, min(5, len(labels), int(width // (CHAR * points / 8 * max(map(len, labels)) + 34))))
