"""Plots of synthetic results files: what each chart draws, its scales and labels, the files."""

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner
from matplotlib.colors import to_hex
from matplotlib.container import BarContainer

from mcpstart.cli import main
from mcpstart.views.plot import PEAK, figure, save
from test_views import results


def bars(ax) -> list:
    """The bar rectangles of an Axes (every BarContainer's patches), in drawing order."""
    return [p for c in ax.containers if isinstance(c, BarContainer) for p in c.patches]


def only(doc: dict, *names: str) -> dict:
    doc["servers"] = [s for s in doc["servers"] if s["name"] in names]
    return doc


def test_cold_start_bars_whiskers_floor_and_log_scale():
    fig = figure(results(), "cold-start")
    [ax] = fig.axes
    assert [t.get_text() for t in ax.get_xticklabels()] == ["c", "rust", "typescript", "python"]
    assert [b.get_height() for b in bars(ax)] == [1.23, 3.05, 362.24, 1441.26]
    # whiskers from min to max
    [container] = [c for c in ax.containers if isinstance(c, BarContainer)]
    segments = container.errorbar.lines[2][0].get_segments()
    assert [(s[0][1], s[1][1]) for s in segments][2] == pytest.approx((317.3, 411.9))
    assert ax.get_yscale() == "log"  # 1573.9 / 1.19 > 100
    assert ax.get_ylabel() == "milliseconds (log scale)"
    assert ax.get_xlabel() == "server"
    assert ax.get_title() == "Cold start: spawn to initialize response"
    [floor] = [line for line in ax.get_lines() if line.get_linestyle() == "--"]
    assert list(floor.get_ydata()) == [1.23, 1.23]
    assert "floor (c): 1.23 ms" in [t.get_text() for t in ax.get_legend().get_texts()]
    assert "AMD EPYC 7B13; 2 cores; Linux 6.1.0; 5 runs after 1 warm-up; 2026-11-30" == \
        fig.get_supxlabel()


def test_cold_start_linear_without_a_wide_span_and_no_floor_without_c():
    ax = figure(only(results(), "rust", "typescript"), "cold-start").axes[0]
    assert ax.get_yscale() == "log"  # 411.9 / 2.61 > 100
    doc = only(results(), "typescript", "python")
    ax = figure(doc, "cold-start").axes[0]
    assert ax.get_yscale() == "linear" and ax.get_ylabel() == "milliseconds"
    assert len(bars(ax)) == 2
    assert not [line for line in ax.get_lines() if line.get_linestyle() == "--"]


def test_memory_stacks_idle_per_process_beside_the_peak():
    ax = figure(results(), "memory").axes[0]
    patches = bars(ax)
    # c, rust, python: one idle and one peak bar; typescript: three idle parts and the peak
    assert len(patches) == 10
    stack = [p for p in patches if abs(p.get_x() + p.get_width() / 2 - (2 - 0.19)) < 1e-9]
    assert [round(p.get_height(), 2) for p in stack] == [91.04, 2.0, 68.26]
    assert [round(p.get_y(), 2) for p in stack] == [0, 91.04, 93.04]
    peaks = [p for p in patches if to_hex(p.get_facecolor()) == PEAK.lower()]
    assert [round(p.get_height(), 1) for p in peaks] == [25.1] * 4
    assert ax.get_ylabel() == "MiB" and ax.get_xlabel() == "server"
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["idle RSS", "peak RSS, 5 MiB call (vmhwm)"]


def test_footprint_bars_and_log_scale_for_a_wide_span():
    ax = figure(results(), "footprint").axes[0]
    assert [round(b.get_height(), 1) for b in bars(ax)] == [4.1] * 4 + [316.3] * 4
    assert ax.get_yscale() == "linear" and ax.get_ylabel() == "MiB"  # 316.3 / 4.1 < 100
    doc = results()
    doc["servers"][0]["footprint"]["artifact_bytes"] = 16 * 1024
    ax = figure(doc, "footprint").axes[0]
    assert ax.get_yscale() == "log" and ax.get_ylabel() == "MiB (log scale)"


def test_timeline_phases_on_a_shared_axis_with_limits():
    doc = results()
    doc["startup"]["runs"].append({"rust": {"first_byte": 3.0, "initialize": 5.0, "tools_list": 6.5},
                                   "typescript": {"first_byte": 260.0, "initialize": 400.0,
                                                  "tools_list": 420.0}})
    ax = figure(doc, "timeline").axes[0]
    patches = bars(ax)
    assert len(patches) == 6  # two servers, three phases each
    rust = [p for p in patches if p.get_y() < 0.5]
    # medians of two runs: first byte 2.0, initialize 4.0, tools/list 5.0 ms from spawn
    assert [(p.get_x(), p.get_width()) for p in rust] == [(0.0, 2.0), (2.0, 2.0), (4.0, 1.0)]
    assert ax.get_xlabel().splitlines() == [
        "milliseconds from spawn (median of 2 runs)",
        "Codex, Claude Code: startup limit 30 s, off scale (the slowest server uses 1.4% of it)"]
    doc["startup"]["limits"][0]["limit_s"] = 0.5
    ax = figure(doc, "timeline").axes[0]
    [limit] = [line for line in ax.get_lines() if line.get_linestyle() == "--"]
    assert list(limit.get_xdata()) == [500.0, 500.0]


def test_overview_has_a_panel_per_chart_the_file_can_fill():
    assert len(figure(results()).axes) == 4
    assert [ax.get_title() for ax in figure(results(startup=None)).axes] == [
        "Cold start: spawn to initialize response",
        "Memory of the process tree (idle stacked per process)", "Footprint"]
    doc = results(startup=None)
    for row in doc["servers"]:
        row.pop("memory", None), row.pop("footprint", None)
    assert len(figure(doc).axes) == 1
    with pytest.raises(ValueError, match="no timeline data"):
        figure(doc, "timeline")
    with pytest.raises(ValueError, match="no server with measurements"):
        figure(results(servers=[], startup=None))


def test_png_and_svg_files(tmp_path):
    fig = figure(results(), "cold-start")
    save(fig, tmp_path / "a.png")
    save(fig, tmp_path / "a.svg")
    assert (tmp_path / "a.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<svg" in (tmp_path / "a.svg").read_text()[:1000]
    with pytest.raises(ValueError, match=".png or .svg"):
        save(fig, tmp_path / "a.jpg")


def test_plot_command(tmp_path):
    source = tmp_path / "r.json"
    source.write_text(json.dumps(results(startup=None)))
    ok = CliRunner().invoke(main, ["plot", str(source), "-o", str(tmp_path / "all.png")])
    assert ok.exit_code == 0, ok.output
    assert (tmp_path / "all.png").read_bytes()[:4] == b"\x89PNG"
    svg = CliRunner().invoke(main, ["plot", str(source), "-o", str(tmp_path / "c.svg"),
                                    "--kind", "cold-start"])
    assert svg.exit_code == 0 and "<svg" in (tmp_path / "c.svg").read_text()[:1000]
    for args, message in [(["-o", str(tmp_path / "x.gif")], "must end in .png or .svg"),
                          (["-o", str(tmp_path / "x.png"), "--kind", "timeline"], "no timeline data"),
                          (["-o", str(tmp_path / "x.png"), "--kind", "pie"], "'pie' is not one of")]:
        bad = CliRunner().invoke(main, ["plot", str(source), *args])
        assert bad.exit_code == 2 and message in bad.output, bad.output
    missing = CliRunner().invoke(main, ["plot", str(tmp_path / "none.json"), "-o",
                                        str(tmp_path / "x.png")])
    assert missing.exit_code == 2 and "none.json" in missing.output
    assert not (tmp_path / "x.png").exists()


def test_matplotlib_is_imported_only_when_plotting():
    code = ("import sys, mcpstart.cli, mcpstart.views.plot, mcpstart.views.table, "
            "mcpstart.views.exports; print('matplotlib' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_history_draws_each_metric_against_the_sdk_version():
    """go measured at v1.9.0, v1.10.0 and a checkout (v1.10 after v1.9), python at two
    versions, rust at one (no column); a failed variant leaves its point out."""
    def row(name, language, version, median, kind="registry", **more):
        return {"name": name, "language": language, "sdk_version": version, "status": "ok",
                "sdk_source": {"kind": kind, "version": version},
                "handshake_ms": {"median": median, "ci_low": median - 1, "ci_high": median + 2},
                "memory": {"idle_rss_bytes": 10 * 1024 * 1024}, **more}

    doc = results()
    doc["servers"] = [
        row("go@v1.10.0", "go", "v1.10.0", 4.0), row("go", "go", "v1.9.0", 3.0, "default"),
        row("go@local", "go", None, 5.0, "path"), row("rust", "rust", "3.11.0", 2.0, "default"),
        row("python", "python", "2.3.0", 300.0, "default"),
        {"name": "python@2.2.0", "language": "python", "sdk_version": "2.2.0", "status": "failed",
         "sdk_source": {"kind": "registry", "version": "2.2.0"}}]
    fig = figure(doc, "history")
    titled = {ax.get_title(): ax for ax in fig.axes if ax.get_title()}
    assert list(titled) == ["go", "python"]
    assert len(fig.axes) == 5 * 2  # a row per metric, a column per language
    go, python = titled["go"], titled["python"]
    assert go.get_ylabel() == "cold start, median (ms)"
    assert [t.get_text() for t in fig.axes[-2].get_xticklabels()] == ["v1.9.0", "v1.10.0", "local"]
    assert list(go.get_lines()[-1].get_ydata()) == [3.0, 4.0, 5.0]
    assert [t.get_text() for t in fig.axes[-1].get_xticklabels()] == ["2.2.0", "2.3.0"]
    assert list(python.get_lines()[-1].get_xdata()) == [1]  # the failed 2.2.0 has no point
    assert fig.axes[2].get_ylabel() == "idle RSS (MiB)"
    assert list(fig.axes[2].get_lines()[-1].get_ydata()) == [10.0, 10.0, 10.0]
    doc["servers"] = doc["servers"][3:4]
    with pytest.raises(ValueError, match="needs a language measured at two SDK versions"):
        figure(doc, "history")
