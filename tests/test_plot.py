"""Plots, looked at as a reader would: every kind drawn from four stored results files
(tests/fixtures/plots: the reference set, an editor config of six launcher trees, the HTTP
set, SDK variants), checked from the text the renderer draws; then what each chart plots.

The stored files are benchmarks/figures/results.json, editor-sizing.json, http-results.json
and history.json made small: settle curves, run sequences, dual-era and caching blocks
dropped, protocol blocks cut to the era and revisions, sample lists over 12 cut to 12."""

import copy
import functools
import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import require_modules

require_modules("matplotlib", extra="plot")

from matplotlib.colors import to_rgba  # noqa: E402
from matplotlib.legend import Legend  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from mcpstart.cli import main  # noqa: E402
from mcpstart.results import dig  # noqa: E402
from mcpstart.views.plot import PEAK, figure, noisy  # noqa: E402
from test_views import results  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures" / "plots"
FILES = ("reference", "launchers", "http", "history")


@functools.cache
def _stored(name: str) -> str:
    return (FIXTURES / f"{name}.json").read_text()


def stored(name: str) -> dict:
    """A stored results file (a fresh copy each time)."""
    return json.loads(_stored(name))


@functools.cache
def overview(name: str):
    """The figure of every chart the stored file ``name`` fills, and its drawn texts (drawn
    once for the module: tests only read it)."""
    fig = figure(stored(name))
    return fig, legible(fig)


def legend_texts(fig) -> list[str]:
    return [t.get_text() for lg in fig.findobj(Legend) for t in lg.get_texts()]


def axes_titled(fig, prefix: str) -> list:
    return [ax for ax in fig.axes if ax.get_title().startswith(prefix)]


def drawn(fig) -> list[tuple[str, object]]:
    """(text, window extent) of every text drawn when the figure is drawn, in drawing
    order: Text.draw is watched (it returns at once for a hidden or empty text, and an
    axis draws only the tick labels inside its view)."""
    seen = []
    original = Text.draw

    def watch(self, renderer):
        if self.get_visible() and self.get_text().strip():
            seen.append(self)
        return original(self, renderer)

    Text.draw = watch
    try:
        fig.canvas.draw()
    finally:
        Text.draw = original
    renderer = fig.canvas.get_renderer()
    return [(t.get_text(), t.get_window_extent(renderer)) for t in dict.fromkeys(seen)]


def legible(fig) -> list[str]:
    """Checks every plot must pass; returns the drawn texts. No two texts overlap (more
    than half a pixel each way), none leaves the figure, every axis label set is drawn, and
    every axis is linear (a bar on a log axis has a meaningless length)."""
    texts = drawn(fig)
    width, height = fig.canvas.get_width_height()
    for (a, box_a), (b, box_b) in itertools.combinations(texts, 2):
        overlap = (min(box_a.x1, box_b.x1) - max(box_a.x0, box_b.x0),
                   min(box_a.y1, box_b.y1) - max(box_a.y0, box_b.y0))
        assert not (overlap[0] > 0.5 and overlap[1] > 0.5), f"{a!r} overlaps {b!r}"
    for text, box in texts:
        assert box.x0 >= -1 and box.y0 >= -1 and box.x1 <= width + 1 and box.y1 <= height + 1, text
    names = [t for t, _ in texts]
    for ax in fig.axes:
        assert ax.get_xscale() == ax.get_yscale() == "linear"
        for label in (ax.get_xlabel(), ax.get_ylabel(), ax.get_title()):
            assert not label or label in names, label
    assert any(ax.get_xlabel() for ax in fig.axes)
    return names


CHARTS = {"Cold start": "handshake_ms.median", "Idle memory": "memory.idle_rss_bytes",
          "Peak RSS": "memory.peak_rss_bytes_payload", "Artifact": "footprint.artifact_bytes",
          "Dev tree": "footprint.dev_tree_bytes", "HTTP cold start": "http.start_ms.initialize.median",
          "Under load: requests": "http.load.calls.rps", "Under load: p95": "http.load.calls.latency_ms.p95"}
"""A chart's title and the figure a server needs to have a row in it."""


def leaves(fig) -> list:
    """The subfigures that hold axes (a chart each), at any depth."""
    subs = getattr(fig, "subfigs", [])
    return [leaf for sub in subs for leaf in leaves(sub)] if subs else [fig]


@pytest.mark.parametrize("name", ["reference", "launchers", "http"])
def test_every_chart_from_the_stored_files_is_legible(name):
    """The overview draws every chart kind the file fills (history: the tests below); each
    chart names, on its rows, every server that has its figure, and only those."""
    doc = stored(name)
    fig, texts = overview(name)
    expected = {"reference": ["Cold start", "Idle memory", "Peak RSS", "Artifact", "Dev tree"],
                "launchers": ["Cold start", "Idle memory", "Startup timeline"],
                "http": ["Idle memory", "Peak RSS", "Artifact", "Dev tree", "HTTP cold start",
                         "Under load: requests", "Under load: p95"]}[name]
    charts = {}
    for leaf in leaves(fig):
        title = next(ax.get_title() for ax in leaf.axes if ax.get_title())
        rows = [t.get_text() for ax in leaf.axes for t in ax.get_yticklabels()]
        assert all(row in texts for row in rows)
        charts[title] = {row.split("  ")[0] for row in rows}
    assert [next(c for c in charts if c.startswith(e)) for e in expected] == list(charts)
    for title, rows in charts.items():
        path = next((p for prefix, p in CHARTS.items() if title.startswith(prefix)), None)
        if path is None:  # the timeline: a row per copy, "name #2"
            rows = {row.split(" #")[0] for row in rows}
            path = "handshake_ms.median"
        assert rows == {s["name"] for s in doc["servers"] if dig(s, path) is not None}, title
    assert any("noisy run" in t for t in texts) == (name in ("launchers", "http"))


def test_the_noisy_mark_comes_from_the_load_warning():
    doc = stored("reference")
    assert noisy(doc) is None
    doc["servers"][0]["warnings"].append({"kind": "load", "metric": "handshake_ms",
                                          "detail": "the 1-minute load average was 14.2"})
    doc["environment"]["load_average"] = [14.2, 12.0, 9.0]
    assert noisy(doc) == "noisy run: load 14.20 on 2 cores when it started"
    doc["servers"] = doc["servers"][:2]
    fig = figure(doc, "cold-start")
    assert fig._suptitle.get_text().startswith("⚠ noisy run: load 14.20 on 2 cores")
    assert fig._suptitle.get_bbox_patch().get_facecolor()[:3] == pytest.approx((0.863, 0.078, 0.235), abs=0.01)
    assert overview("reference")[0]._suptitle is None


def test_cold_start_draws_every_run_the_median_and_the_tables_interval_on_split_linear_panels():
    doc = stored("reference")
    for row in doc["servers"]:  # an interval that is not min..max, as at n >= 9
        ordered = sorted(row["handshake_ms"]["samples"])
        row["handshake_ms"].update(ci_low=ordered[1], ci_high=ordered[-2], ci_level=0.78125)
    fig = figure(doc, "cold-start")
    fast, slow = fig.axes  # c, rust, go within 20x; typescript, java, python beside
    assert [t.get_text() for t in fast.get_yticklabels()] == ["c  1.19 ms", "rust  2.32 ms", "go  4.74 ms"]
    assert [t.get_text().split()[0] for t in slow.get_yticklabels()] == ["typescript", "java", "python"]
    assert fast.get_xlim()[0] == slow.get_xlim()[0] == 0
    by_name = {s["name"]: s["handshake_ms"] for s in doc["servers"]}
    for ax, names in ((fast, ["c", "rust", "go"]), (slow, ["typescript", "java", "python"])):
        lines = ax.get_lines()
        for y, name in enumerate(names):
            block = by_name[name]
            at_row = [ln for ln in lines if len(ln.get_ydata()) and all(abs(v - y) < 0.3 for v in ln.get_ydata())]
            dots = [ln for ln in at_row if ln.get_marker() == "o"]
            assert sorted(dots[0].get_xdata()) == sorted(block["samples"])
            [interval] = [ln for ln in at_row if ln.get_linewidth() == 3]
            assert list(interval.get_xdata()) == [block["ci_low"], block["ci_high"]]
            [median] = [ln for ln in at_row if ln.get_marker() == "|"]
            assert list(median.get_xdata()) == [block["median"]]
    assert legend_texts(fig) == ["one run", "median", "the median's 78.1% confidence interval", "the floor server",
                                 "name in red: stdev over 10% of the mean"]
    red = {t.get_text().split()[0] for ax in fig.axes for t in ax.get_yticklabels()
           if t.get_color() == "crimson"}
    assert red == {s["name"] for s in doc["servers"]
                   if any(w["kind"] == "high_variation" for w in s["warnings"])} == {"c", "go", "python"}
    assert "each panel its own scale" in slow.get_xlabel()


def test_memory_is_pss_per_process_with_every_process_of_the_launcher_trees_in_the_legend():
    doc = stored("launchers")
    fig = overview("launchers")[0]
    [idle] = axes_titled(fig, "Idle memory")
    assert idle.get_title() == "Idle memory: PSS, stacked per process"
    processes = {p["name"] for s in doc["servers"] for p in s["memory"]["processes"]}
    assert processes == {"npm exec @model", "sh", "node", "uv", "python"}
    assert set(legend_texts(fig)) >= processes
    tree_order = ["npm exec @model", "sh", "node", "uv", "python"]  # launcher first, each tree whole
    assert [t for t in legend_texts(fig) if t in processes] == tree_order
    shades = {p.get_facecolor() for p in idle.patches}
    assert len(shades) == len(processes) and to_rgba(PEAK) not in shades  # the peak's colour
    # the stack of "memory" (npm, sh, node) sums to its tree's PSS
    row = [t.get_text() for t in idle.get_yticklabels()].index("memory")
    stack = [p for p in idle.patches if isinstance(p, Rectangle) and abs(p.get_y() + p.get_height() / 2 - row) < 1e-9]
    tree = next(s for s in doc["servers"] if s["name"] == "memory")["memory"]
    assert sum(p.get_width() for p in stack) * 2**20 == pytest.approx(tree["idle_pss_bytes"], rel=1e-6)


def renamed(doc: dict, prefix: str = "@modelcontextprotocol/server-") -> dict:
    """``doc`` with every server named as a package (``prefix`` + name), its startup runs'
    rows too ("name #2" keeps its copy number)."""
    for s in doc["servers"]:
        s["name"] = prefix + s["name"]
    for holder in (dig(doc, "startup") or {}, dig(doc, "startup.sessions") or {}):
        holder["runs"] = [{prefix + k: v for k, v in run.items()} for run in holder.get("runs") or []]
    return doc


def test_long_server_names_stack_the_charts_and_keep_every_text_inside():
    """Package names wider than half the page: memory and footprint stand one chart above
    the other (side by side, the second ran off the figure), the split-scale note and the
    timeline's off-scale limits wrap inside it."""
    doc = stored("reference")
    doc["servers"] = [s for s in doc["servers"] if s["name"] in ("c", "rust", "python")]
    doc = renamed(doc)
    fig = figure(doc)
    texts = legible(fig)
    assert all(any(t.startswith(s["name"]) for t in texts) for s in doc["servers"])
    for upper, lower in (("Idle memory", "Peak RSS"), ("Artifact", "Dev tree")):
        above, below = axes_titled(fig, upper)[-1], axes_titled(fig, lower)[0]
        assert above.get_window_extent().y0 > below.get_window_extent().y1, (upper, lower)
    timeline = figure(renamed(stored("launchers")), "timeline")
    legible(timeline)
    first, *note = timeline.axes[0].get_xlabel().split("\n")
    assert first == "milliseconds from spawn (median of 6 runs)" and len(note) == 2
    assert " ".join(note) == ("Claude Desktop, Zed, Cline (VS Code): startup limit 60 s, off scale "
                              "(the slowest server uses 25.7% of it)")


def test_a_file_without_pss_falls_back_to_rss_and_says_so():
    doc = results(startup=None)
    for row in doc["servers"]:
        for holder in [row.get("memory") or {}, *(row.get("memory") or {}).get("processes", [])]:
            holder.pop("idle_pss_bytes", None)
    fig = figure(doc, "memory")
    assert fig.axes[0].get_title() == "Idle memory: RSS, stacked per process"
    assert any(ax.get_xlabel().startswith("MiB (RSS of the process tree)") for ax in fig.axes)


def test_http_draws_the_cold_start_and_each_load_figure_on_its_own_axis():
    doc = stored("http")
    fig = overview("http")[0]
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()][-3:]
    assert titles == ["HTTP cold start: spawn to initialize answered",
                      "Under load: requests per second", "Under load: p95 latency"]
    assert not any(ax.get_shared_x_axes().get_siblings(ax)[1:] for ax in fig.axes)  # no twin axes
    [rps] = [ax for ax in fig.axes if ax.get_title() == "Under load: requests per second"]
    python = next(s for s in doc["servers"] if s["name"] == "python-http")
    widths = sorted(round(p.get_width(), 1) for p in rps.patches if isinstance(p, Rectangle))
    assert round(python["http"]["load"][0]["rps"], 1) in widths
    assert "the engine's ceiling (on c-http, calls): 5798/s" in legend_texts(fig)


def test_history_states_the_level_tells_the_default_build_apart_marks_the_unmeasured_in_page_width():
    """And four languages keep the page's width: two rows of two columns, 8 inches wide (a
    column per language widened the figure past a page)."""
    doc = stored("history")
    python = next(s for s in doc["servers"] if s["name"] == "python@2.1.0")
    python["memory"]["idle_pss_bytes"] = None  # a figure this variant did not measure
    clones = copy.deepcopy([s for s in doc["servers"] if s["name"] in ("go@v1.7.0", "go", "python@2.2.0", "python")])
    for s in clones:
        s["language"] = {"go": "rust", "python": "typescript"}[s["language"]]
        s["name"] = s["name"].replace("go", "rust").replace("python", "typescript")
    doc["servers"] += clones
    fig = figure(doc, "history")
    texts = legible(fig)
    assert list(fig.get_size_inches()) == [8.0, pytest.approx(18.7)]
    top = {ax.get_title(): ax.get_window_extent() for ax in fig.axes if ax.get_title()}
    assert list(top) == ["go", "python", "rust", "typescript"]
    assert top["go"].y0 == top["python"].y0 > top["rust"].y1  # rust and typescript below
    assert "cold start (ms)\nmedian, 96.9% CI" in texts
    assert legend_texts(fig) == ["SDK variants (registry, checkout)", "the recipe's locked default build",
                      "not measured"]
    go_pss = fig.axes[2]  # rows: metrics; columns: go, python
    python_pss = fig.axes[3]
    [default] = [ln for ln in go_pss.get_lines() if ln.get_marker() == "*"]
    assert list(default.get_xdata()) == [3]  # go's default build (v1.8.0), not on the line
    [missing] = [ln for ln in python_pss.get_lines() if ln.get_marker() == "x"]
    assert list(missing.get_xdata()) == [2]  # 2.1.0
    # no marker sits on the frame: the top is above every point and whisker
    for ax in fig.axes:
        assert ax.get_ylim()[1] > ax.dataLim.y1 * 1.1


def test_history_across_runs_and_a_figure_no_run_measured():
    """Package names as server names: the legend of six takes rows, inside the figure."""
    long = "@modelcontextprotocol/server-everything-"
    a, b, c = (renamed(stored("reference"), long) for _ in range(3))
    b["created"], c["created"] = "2026-12-02T00:00:00+00:00", "2026-12-03T00:00:00+00:00"
    rust = next(s for s in b["servers"] if s["name"] == long + "rust")
    for key in ("median", "ci_low", "ci_high"):  # rust slower in run 2
        rust["handshake_ms"][key] *= 2
    for doc in (a, b, c):
        for s in doc["servers"]:
            s["footprint"] = None
        doc["servers"][0].setdefault("warnings", []).append(  # every run noisy: three marks
            {"kind": "load", "metric": "handshake_ms", "detail": "busy"})
    fig = figure([c, a, b], "history", ["@3", "@1", "@2"])  # drawn in the order made
    texts = legible(fig)  # the three runs' marks wrap inside the figure
    assert [t.get_text() for t in fig.axes[-1].get_xticklabels()] == ["@1", "@2", "@3"]
    order = [s["name"] for s in a["servers"]]
    rust = [ln for ln in fig.axes[0].get_lines() if ln.get_marker() == "o"][order.index(long + "rust")]
    assert list(rust.get_ydata()) == pytest.approx([2.317, 4.634, 2.317], rel=1e-3)
    assert texts.count("not measured") == 2 + 1  # dependencies and artifact panels, legend
    assert {s["name"] for s in a["servers"]} <= set(texts)


def test_plot_command_draws_history_from_the_store(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mcpstart-runs").mkdir()
    older, newer = stored("reference"), stored("reference")
    older["servers"] = newer["servers"] = older["servers"][:2]
    (tmp_path / "mcpstart-runs" / "0001.json").write_text(json.dumps(older))
    newer["created"] = "2026-12-02T00:00:00+00:00"
    (tmp_path / "mcpstart-results.json").write_text(json.dumps(newer))
    ok = CliRunner().invoke(main, ["plot", "--kind", "history", "-o", "runs.svg"])
    assert ok.exit_code == 0, ok.output
    svg = (tmp_path / "runs.svg").read_text()
    assert "Across runs" in svg and "@1" in svg and "last" in svg
    bad = CliRunner().invoke(main, ["plot", "@-1", "mcpstart-results.json", "-o", "x.png"])
    assert bad.exit_code == 2 and "--kind history only" in bad.output


def test_overview_has_a_chart_per_kind_the_file_can_fill():
    titles = [ax.get_title() for ax in figure(results(startup=None)).axes if ax.get_title()]
    assert titles == ["Cold start: spawn to initialize answered", "Idle memory: PSS",
                      "Peak RSS, 5 MiB call", "Artifact", "Dev tree (the build's)"]
    doc = results(startup=None)
    for row in doc["servers"]:
        row.pop("memory", None), row.pop("footprint", None)
    with pytest.raises(ValueError, match="no timeline data"):
        figure(doc, "timeline")
    with pytest.raises(ValueError, match="no server with measurements"):
        figure(results(servers=[], startup=None))
    one = copy.deepcopy(doc)
    one["servers"] = one["servers"][:1]
    with pytest.raises(ValueError, match="needs a language measured at two SDK versions"):
        figure(one, "history")


def test_plot_command(tmp_path):
    source = tmp_path / "r.json"
    source.write_text(json.dumps(results(startup=None)))
    ok = CliRunner().invoke(main, ["plot", str(source), "-o", str(tmp_path / "c.png"),
                                   "--kind", "cold-start"])
    assert ok.exit_code == 0, ok.output
    assert (tmp_path / "c.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
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


def test_why_stacks_each_profiled_start_by_part_and_idle_rss_by_class():
    """Parts from table.start_split (their bars add up to the profiled start), classes from
    memory.idle_split; a server without a profiled start has no bar in the first chart."""
    doc = copy.deepcopy(stored("reference"))
    python, go = (next(s for s in doc["servers"] if s["name"] == n) for n in ("python", "go"))
    python["imports"] = {"instrumented_ms": 600.0, "interpreter_ms": 20.0, "distributions": [
        {"name": "mcp", "self_ms": 300.0, "installed": True},
        {"name": "mcp-types", "self_ms": 100.0, "installed": True},
        {"name": "(standard library)", "self_ms": 80.0, "installed": False},
        {"name": "(not installed)", "self_ms": 5.0, "installed": False},
        {"name": "pydantic", "self_ms": 50.0, "installed": True}]}
    for row, anon in ((python, 40), (go, 3)):
        row["memory"]["idle_split"] = {"exe_code": {"rss_bytes": 2 * 2**20},
                                       "anon": {"rss_bytes": anon * 2**20}}
    fig = figure(doc, "why")
    texts = legible(fig)
    (start,) = axes_titled(fig, "Where the profiled start goes")
    assert [t.get_text() for t in start.get_yticklabels()] == ["python"]
    widths = [round(bar.get_width(), 3) for bar in start.patches]
    assert widths == [100.0, 400.0, 5.0, 50.0, 45.0] and "600.0" in texts
    assert {"runtime and standard library", "SDK", "server code", "other packages",
            "rest of the start"} <= set(legend_texts(fig))
    (memory,) = axes_titled(fig, "Idle RSS by class of mapping")
    assert sorted(t.get_text() for t in memory.get_yticklabels()) == ["go", "python"]
    assert {"exe_code", "anon"} <= set(legend_texts(fig))


def test_per_tool_legend_of_long_tool_names_wraps_into_rows_inside_the_figure():
    doc = stored("reference")
    doc["servers"] = doc["servers"][:2]
    tools = ["create_entities_with_observations", "delete_observations_from_graph",
             "search_nodes_by_query_text", "read_graph", "add_observations_to_entities"]
    for i, s in enumerate(doc["servers"]):
        s["workload"] = {"initialize_ms": {"p50": 1.0 + i},
                         "tools": {t: {"warm_ms": {"p50": 2.0 + j + i}} for j, t in enumerate(tools)}}
    fig = figure(doc, "per-tool")
    legible(fig)
    assert legend_texts(fig) == ["initialize", *tools]


def test_a_name_the_font_cannot_draw_is_one_note_not_matplotlibs_warnings(tmp_path):
    """A server named in a script the plot's font lacks: one note naming the characters,
    none of matplotlib's per-glyph warnings (with their source lines) on stderr."""
    doc = results(startup=None)
    doc["servers"][0]["name"] = "名前"
    source = tmp_path / "r.json"
    source.write_text(json.dumps(doc))
    ok = CliRunner().invoke(main, ["plot", str(source), "-o", str(tmp_path / "c.png"),
                                   "--kind", "cold-start"])
    assert ok.exit_code == 0, ok.output
    assert "the plot's font has no glyph for 前 名: drawn as boxes" in ok.output
    assert "UserWarning" not in ok.output and "Glyph" not in ok.output
