"""Exporters: one module per format, each with the same small interface (hyperfine's Exporter):
``render(results_list, labels=None, metrics=None) -> str`` over loaded results (Results or
their JSON dicts); ``metrics`` selects rows where a format has rows. The ExportManager owns the
targets (a file, or ``-`` for stdout) and writes the files whenever the results file is written.

Formats: the hyperfine shapes of the cold-start series (``--export-json``, ``--export-csv``,
``--export-markdown``) and the long-form records (``--format csv``, ``--format json``).
Modules are imported when used, so ``mcpstart --help`` stays fast.
"""

from __future__ import annotations

from importlib import import_module
from pathlib import Path

EXPORTS = {"json": "hyperfine_json", "csv": "hyperfine_csv", "markdown": "hyperfine_markdown"}
"""--export-NAME: the module that renders it."""
LONG_FORMATS = {"csv": "long_csv", "json": "long_json"}
"""--format values besides tabulate's: the module that renders them."""


def exporter(module: str):
    """The exporter module ``module`` of this package (it has ``render``)."""
    return import_module(f"{__name__}.{module}")


def check_target(value: str) -> str:
    """An --export-* FILE: ``-`` (stdout) or a file in a folder that can be written.

    Raises:
        ValueError: "cannot write into folder ..." (results.writable_folder).
    """
    from ...results import writable_folder

    if value != "-":
        writable_folder(Path(value))
    return value


class ExportError(ValueError):
    """Export targets that cannot all be served (two on stdout, a file not writable)."""


class ExportManager:
    """The --export-* targets of one command: export name -> a file path or ``-``.

    Raises (constructor):
        ExportError: more than one target is ``-``.
    """

    def __init__(self, targets: dict[str, str | None]):
        self.targets = {name: target for name, target in targets.items() if target}
        dashes = [f"--export-{name}" for name, target in self.targets.items() if target == "-"]
        if len(dashes) > 1:
            raise ExportError(f"{' and '.join(dashes)} both write to stdout (-): give one of "
                              "them a file")

    def write(self, results_list, labels=None) -> None:
        """Write every file target from ``results_list``.

        Raises:
            OSError: a file cannot be written (the message names it).
        """
        for name, target in self.targets.items():
            if target != "-":
                text = exporter(EXPORTS[name]).render(results_list, labels)
                Path(target).write_text(printable(text), encoding="utf-8")

    def stdout(self, results_list, labels=None) -> str | None:
        """The text of the ``-`` target, which replaces the table on stdout; None without one."""
        for name, target in self.targets.items():
            if target == "-":
                return exporter(EXPORTS[name]).render(results_list, labels)
        return None


def present(loaded: list, fmt: str, exports: ExportManager, labels=None, metrics=(),
            transpose: bool = False, aside=None, compact: bool = False,
            width: int | None = None) -> str:
    """What ``report`` and ``measure`` print: the --export-* files written, then the text for
    stdout: the export that goes to ``-``, else the table (any tabulate ``fmt``) or the
    long-form records (``fmt`` csv or json). ``aside(text)`` gets what does not fit the
    format (the notes under an HTML, LaTeX or TSV table: views.table.FORMAT_ONLY).
    ``compact``: the table's COMPACT_ROWS (a terminal's default); records are always whole.
    ``width``: the terminal's columns, which a wider table is cut to (views.table.table).

    Raises:
        views.table.UnknownMetric: a ``metrics`` path names no row.
        ExportError: an export file cannot be written (the message names it).
    """
    from ..table import table

    text = (exporter(LONG_FORMATS[fmt]).render(loaded, labels, metrics) if fmt in LONG_FORMATS
            else table(loaded, fmt, labels=labels, metrics=metrics, transpose=transpose,
                       aside=aside, compact=compact, width=width) + "\n")
    try:
        exports.write(loaded, labels)
    except OSError as err:
        raise ExportError(f"cannot write {err.filename}: {err.strerror or err}") from err
    return printable(exports.stdout(loaded, labels) or text)


def printable(text: str) -> str:
    """``text`` with lone surrogates (from a server's strings) backslash-escaped, so that any
    UTF-8 stream or file takes it."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
