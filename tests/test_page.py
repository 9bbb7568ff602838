"""``mcpstart html``: one self-contained HTML report, parsed strictly by html5lib, with
nothing in it that makes a request; and opened in headless Chromium where it is installed
(the e2e tier)."""

import base64
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import require_modules, unavailable
from mcpstart.cli import main
from mcpstart.views import page as page_module
from test_views import results

FIXTURES = Path(__file__).parent / "fixtures" / "plots"
REQUEST = re.compile(r"""(?:src|href|action|srcset)\s*=\s*["']?\s*(?:https?:)?//|url\(|@import|<link|<script""",
                     re.IGNORECASE)
"""Anything in a page that would fetch: an http(s) or protocol-relative src/href, a CSS url(),
an @import, a link or script element."""


def write_report(tmp_path, *names: str) -> str:
    out = tmp_path / "report.html"
    files = [str(FIXTURES / f"{name}.json") for name in names]
    ran = CliRunner().invoke(main, ["html", *files, "-o", str(out)])
    assert ran.exit_code == 0, ran.output
    return out.read_text(encoding="utf-8")


def images(text: str) -> list[bytes]:
    return [base64.b64decode(m) for m in re.findall(r"src='data:image/png;base64,([A-Za-z0-9+/=]+)'", text)]


def test_the_report_is_one_strict_html5_file_holding_table_plots_warnings_samples_machine(tmp_path):
    require_modules("html5lib", "matplotlib")
    import html5lib

    text = write_report(tmp_path, "launchers")
    html5lib.HTMLParser(strict=True).parse(text)  # raises on any parse error
    assert not REQUEST.search(text)
    doc = json.loads((FIXTURES / "launchers.json").read_text())
    assert "<table>" in text and "cold start, warm page cache: median [96.9% CI] (ms)" in text
    shots = images(text)
    assert len(shots) == 1 and shots[0][:8] == b"\x89PNG\r\n\x1a\n"
    assert "noisy run: load 2.19 on 2 cores" in text
    load = next(w for w in doc["servers"][0]["warnings"] if w["kind"] == "load")
    assert load["detail"] in text
    first = doc["servers"][0]
    assert " ".join(f"{v:.4g}" for v in first["handshake_ms"]["samples"]) in text
    assert doc["environment"]["cpu_model"] in text and doc["argv"][1] in text


def test_several_files_and_no_matplotlib(tmp_path, monkeypatch):
    require_modules("html5lib")
    import html5lib

    def missing():
        raise ValueError("plot draws with matplotlib, which is not installed: "
                         "pip install 'mcpstart[plot]'")

    monkeypatch.setattr("mcpstart.views.plot.require", missing)
    older, newer = results(), results()
    newer["created"] = "2026-12-01T00:00:00+00:00"
    text = page_module.page([older, newer], ["main", "pr"])
    html5lib.HTMLParser(strict=True).parse(text)
    assert "c (floor) (main)" in text and "c (floor) (pr)" in text and "<h2>pr</h2>" in text
    assert "pip install &#x27;mcpstart[plot]&#x27;" in text and not images(text)
    assert text.count("FOO_API_KEY not set") >= 2  # each file's failed row: its warning


def test_a_report_that_cannot_be_written(tmp_path):
    ran = CliRunner().invoke(main, ["html", str(FIXTURES / "reference.json"), "-o",
                                    str(tmp_path / "none" / "r.html")])
    assert ran.exit_code == 2 and "cannot write into folder" in ran.output


@pytest.mark.e2e
@pytest.mark.untimed  # what a browser shows
def test_headless_chromium_shows_the_table_and_the_plots_with_no_console_message(tmp_path):
    """The screenshot (report.png) stays in tmp_path: it shows the table's grid (#ccc) and
    the plots' bars (plot.IDLE, #4C72B0), which only appear when the embedded PNGs load."""
    require_modules("matplotlib")
    browser = next((p for p in ("chromium", "chromium-browser") if shutil.which(p)), None)
    if browser is None:
        unavailable("not found: chromium (apt-get update && apt-get install -y chromium)",
                    beyond_ci=True)
    from matplotlib.image import imread

    write_report(tmp_path, "reference")
    shot = tmp_path / "report.png"
    ran = subprocess.run([browser, "--headless=new", "--no-sandbox", "--disable-gpu",
                          f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr",
                          "--v=0", "--window-size=1200,4200", f"--screenshot={shot}",
                          (tmp_path / "report.html").as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr[-2000:]
    print(f"screenshot: {shot}")  # shown with -s, kept with pytest's temporary folders
    assert not [line for line in ran.stderr.splitlines() if ":CONSOLE" in line]
    pixels = (imread(shot)[..., :3] * 255).round()

    def count(rgb) -> int:
        """Pixels within 2 of ``rgb`` in every channel."""
        return int((abs(pixels - rgb).max(axis=-1) <= 2).sum())

    assert count((0xCC, 0xCC, 0xCC)) > 2000  # the table's cell borders
    assert count((0x4C, 0x72, 0xB0)) > 5000  # the plots' bars
