"""Outputs that fit their format: HTML, LaTeX and TSV hold the table alone (the notes go to
stderr), a newer schema is named as such, -V, report --list-metrics, plot without matplotlib."""

import csv
import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner
from pylatexenc.latexwalker import LatexEnvironmentNode, LatexWalker

from mcpstart.cli import main
from mcpstart.views.table import ROWS

from conftest import require_modules, unavailable

FRESH = str(Path(__file__).parent / "fixtures" / "results" / "both.json")
NOTE = "- c (floor) warning: handshake_ms: stdev"
"""A note the fixture's table carries under it."""


def report(*args):
    return CliRunner().invoke(main, ["report", FRESH, *args])


def test_html_is_html_alone_and_passes_a_strict_parser():
    require_modules("html5lib")
    import html5lib

    result = report("--format", "html")
    assert result.exit_code == 0
    assert NOTE not in result.stdout and NOTE in result.stderr
    html5lib.HTMLParser(strict=True).parseFragment(result.stdout)  # raises on any error
    html5lib.HTMLParser(strict=True).parse(f"<!DOCTYPE html><title>r</title>{result.stdout}")
    assert result.stdout.strip().startswith("<table>") and result.stdout.strip().endswith(
        "</table>")


def test_tsv_is_one_header_row_and_fields_as_they_are():
    result = report("--format", "tsv")
    assert result.exit_code == 0 and NOTE in result.stderr
    rows = list(csv.reader(io.StringIO(result.stdout), delimiter="\t"))
    assert rows[0] == ["metric", "c (floor)", "python", "c-http (floor)"]
    assert {len(row) for row in rows} == {4}
    assert all(field == field.strip() for row in rows for field in row)
    assert ["status", "ok", "failed", "ok"] in rows


def test_latex_is_the_table_alone(tmp_path):
    result = report("--format", "latex")
    assert result.exit_code == 0 and NOTE in result.stderr
    body = result.stdout.strip()
    assert body.startswith("\\begin{tabular}") and body.endswith("\\end{tabular}")
    # parsed strictly by pylatexenc: one tabular environment, every row as wide as its spec
    nodes, _, _ = LatexWalker(body, tolerant_parsing=False).get_latex_nodes()
    assert [n.environmentname for n in nodes if isinstance(n, LatexEnvironmentNode)] == \
        ["tabular"] and len(nodes) == 1
    spec = nodes[0].nodeargd.argnlist[-1].latex_verbatim().strip("{}")
    inner = body[body.index("}", len("\\begin{tabular}")) + 1:body.rindex("\\end{tabular}")]
    rows = [r for r in inner.replace("\\hline", "").split("\\\\") if r.strip()]
    assert len(rows) > 10 and {len(re.split(r"(?<!\\)&", r)) for r in rows} == {len(spec)}
    latex = shutil.which("pdflatex")
    if latex is None:
        unavailable("pdflatex is not installed: the table was parsed, not compiled",
                    beyond_ci=True)
    (tmp_path / "t.tex").write_text("\\documentclass{article}\\usepackage[T1]{fontenc}"
                                    "\\usepackage{textcomp}\\begin{document}\\tiny "
                                    f"{body}\\end{{document}}\n")
    done = subprocess.run([latex, "-interaction=nonstopmode", "-halt-on-error", "t.tex"],
                          cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-2000:]


def test_a_newer_schema_is_named_as_such(tmp_path):
    data = json.loads(Path(FRESH).read_text()) | {"schema": "mcpstart/2"}
    (tmp_path / "new.json").write_text(json.dumps(data))
    result = CliRunner().invoke(main, ["report", str(tmp_path / "new.json")])
    assert result.exit_code == 2
    assert "an mcpstart results file of schema 'mcpstart/2', which this mcpstart " \
           "('mcpstart/1') does not read" in result.output
    assert "not an mcpstart results file" not in result.output


def test_version_and_the_metric_list():
    from mcpstart import __version__

    assert CliRunner().invoke(main, ["-V"]).output == f"mcpstart, version {__version__}\n"
    listed = CliRunner().invoke(main, ["report", "--list-metrics"]).output.splitlines()
    assert [line.split("\t")[0] for line in listed] == [row.path for row in ROWS]
    assert "memory.idle_pss_bytes\tidle PSS (MiB)" in listed
    assert "{" not in "".join(listed)
    picked = report("--metrics", "memory.idle_pss_bytes", "--format", "tsv")
    assert picked.exit_code == 0 and picked.stdout.splitlines()[1].startswith("idle PSS")


def test_plot_without_matplotlib_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib: ImportError
    result = CliRunner().invoke(main, ["plot", FRESH, "-o", str(tmp_path / "p.png")])
    assert result.exit_code == 2
    assert "pip install 'mcpstart[plot]'" in result.output
    assert not (tmp_path / "p.png").exists()
