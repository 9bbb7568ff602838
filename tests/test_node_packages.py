"""Node.js start-up attribution (measure/node_packages.py) on traces in the preload's format
(node_trace.mjs, as recorded from the typescript reference server): the main thread's
loading cut at its requests, evaluations nested (CommonJS) and not (ES modules), files to
npm packages by the nearest named package.json, the launcher's process left out, and the
parts adding up to the profiled start."""

import json
import statistics
import subprocess
from pathlib import Path

import pytest

from mcpstart import defaults
from mcpstart.command import Command
from mcpstart.measure import attribution, imports, node_packages, runtime_heap
from mcpstart.measure.server import Server
from mcpstart.results import ServerResult
from mcpstart.views.table import start_split


def _tree(tmp_path):
    """An app with an entry script, a scoped SDK whose dist/ has a package.json without a
    name (as many npm packages ship, to set "type"), and a CommonJS dependency."""
    def write(path, text=""):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path.as_uri()
    app = tmp_path / "app"
    write(app / "package.json", json.dumps({"name": "app", "type": "module"}))
    sdk = app / "node_modules" / "@acme" / "sdk"
    write(sdk / "package.json", json.dumps({"name": "@acme/sdk"}))
    write(sdk / "dist" / "package.json", json.dumps({"type": "module"}))
    write(app / "node_modules" / "dep" / "package.json", json.dumps({"name": "dep"}))
    return {"entry": write(app / "dist" / "server.js"),
            "sdk": write(sdk / "dist" / "index.mjs"),
            "dep": write(app / "node_modules" / "dep" / "i.js"),
            "loose": write(tmp_path / "loose.js")}


def _trace(u):
    """The server's node: the hooks run at 1010; resolve and load requests, the main
    thread's event loop idle (waiting for the loader thread) 8 ms of the loading; evaluation
    from 1040 (the CommonJS dependency, then the SDK, then the entry); a dynamic import's
    request after it (the server's code, not the loading); a last line being written."""
    return "\n".join([
        f"P\t100\t1000.0\t40.0\t{u['entry']}",
        "R\t1010.0\t5.0",
        "S\tresolve\t\t1011.0\t5.0",
        f"S\tload\t{u['entry']}\t1013.0\t6.5",
        f"S\tresolve\t{u['entry']}\t1016.0\t6.5",
        f"S\tresolve\t{u['entry']}\t1016.5\t6.5",
        f"I\t{u['entry']}\t{u['sdk']}",
        f"I\t{u['entry']}\tnode:module",
        f"S\tload\t{u['sdk']}\t1020.0\t9.0",
        "S\tload\tnode:module\t1021.0\t9.0",
        f"S\tresolve\t{u['sdk']}\t1030.0\t10.0",
        f"I\t{u['sdk']}\t{u['dep']}",
        f"S\tload\t{u['dep']}\t1032.0\t10.0",
        f"B\t{u['dep']}\t1040.0\t13.0",
        f"E\t{u['dep']}\t1042.0",
        f"B\t{u['sdk']}\t1042.0\t13.0",
        f"E\t{u['sdk']}\t1047.0",
        f"B\t{u['entry']}\t1047.0\t13.0",
        f"E\t{u['entry']}\t1048.0",
        f"S\tresolve\t{u['entry']}\t1060.0\t20.0",
        f"B\t{u['entry']}\t10",
    ])


LAUNCHER = "P\t99\t900.0\t35.0\tfile:///usr/lib/node_modules/npm/bin/npm-cli.js\n" \
           "B\tfile:///usr/lib/node_modules/npm/lib/cli.js\t901.0\t0.0\n" \
           "E\tfile:///usr/lib/node_modules/npm/lib/cli.js\t950.0\n"


def test_loading_is_cut_at_each_request_and_charged_to_its_module(tmp_path):
    u = _tree(tmp_path)
    trace = node_packages.server_trace([LAUNCHER, _trace(u)], until_ms=2000.0)
    assert trace["start_ms"] == 1000.0 and trace["runtime_ms"] == 40.0
    modules = trace["modules"]
    assert modules[u["entry"]] == {"evaluate_ms": 1.0, "load_ms": 5.0}
    assert modules[u["sdk"]] == {"evaluate_ms": 5.0, "load_ms": 9.0}
    assert modules[u["dep"]] == {"evaluate_ms": 2.0, "load_ms": 2.0}
    assert modules["node:module"] == {"evaluate_ms": 0.0, "load_ms": 1.0}
    assert trace["linking_ms"] == 5.0 and trace["loader_wait_ms"] == 8.0
    loads = sum(m["load_ms"] for m in modules.values())
    assert loads + trace["linking_ms"] + trace["loader_wait_ms"] \
        == trace["first_ms"] - trace["hooks_ms"] == 30.0


FIXTURE = Path(__file__).parent / "fixtures" / "node_trace" / "acme.tsv"
"""Recorded with node 20.20 and the preload from an app (dist/server.js, ESM, importing
@acme/sdk and node:fs) whose SDK's index.mjs imports table.mjs and spin.mjs (ESM, in a dist/
with a nameless package.json) and dep (CommonJS, requiring more.js); index.mjs spins 20 ms
at its top level, table.mjs 10 ms, dep 5 ms, more.js 3 ms (recorded on a busy machine: more
for each). ``{root}`` stands for the folder."""
PACKAGES = {"app": {"name": "app", "type": "module"},
            "app/node_modules/@acme/sdk": {"name": "@acme/sdk"},
            "app/node_modules/@acme/sdk/dist": {"type": "module"},
            "app/node_modules/dep": {"name": "dep", "main": "index.js"}}


def test_a_recorded_trace_by_module_and_package(tmp_path):
    for folder, manifest in PACKAGES.items():
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / folder / "package.json").write_text(json.dumps(manifest))
    text = FIXTURE.read_text().replace("{root}", str(tmp_path))
    trace = node_packages.server_trace([text], until_ms=2e12)
    url = lambda path: f"file://{tmp_path}/app/{path}"  # noqa: E731
    sdk = "node_modules/@acme/sdk/dist/"
    modules = trace["modules"]
    assert set(modules) == {url("dist/server.js"), url(sdk + "index.mjs"),
                            url(sdk + "table.mjs"), url(sdk + "spin.mjs"),
                            url("node_modules/dep/index.js"), url("node_modules/dep/more.js")}
    assert modules[url(sdk + "index.mjs")]["evaluate_ms"] == pytest.approx(22.719, abs=1e-3)
    assert modules[url(sdk + "table.mjs")]["evaluate_ms"] == pytest.approx(13.491, abs=1e-3)
    assert modules[url("node_modules/dep/more.js")]["evaluate_ms"] == pytest.approx(14.986,
                                                                                  abs=1e-3)
    assert modules[url("node_modules/dep/index.js")] == pytest.approx(
        {"evaluate_ms": 18.816, "load_ms": 0.16}, abs=1e-3)  # more.js's 14.986 taken out
    assert modules[url("dist/server.js")]["load_ms"] == pytest.approx(5.206, abs=1e-3)
    loads = sum(m["load_ms"] for m in modules.values())
    assert loads + trace["linking_ms"] + trace["loader_wait_ms"] == pytest.approx(
        trace["first_ms"] - trace["hooks_ms"])
    assert trace["linking_ms"] == pytest.approx(3.969, abs=1e-3)
    assert trace["loader_wait_ms"] == pytest.approx(15.390, abs=1e-3)
    dists = node_packages.attribute(trace, {})["distributions"]
    assert {name: d["modules"] for name, d in dists.items()} == {
        "@acme/sdk": 3, "dep": 2, imports.NOT_INSTALLED: 1}
    assert dists["@acme/sdk"]["self_ms"] == pytest.approx(46.187, abs=1e-3)
    assert dists["@acme/sdk"]["cumulative_ms"] == pytest.approx(
        dists["@acme/sdk"]["self_ms"] + dists["dep"]["self_ms"])
    assert dists[imports.NOT_INSTALLED]["cumulative_ms"] == pytest.approx(
        sum(d["self_ms"] for d in dists.values()))


def test_commonjs_requires_nest_and_leave_their_parent_its_own_time():
    text = ("P\t7\t0.0\t30.0\tfile:///a.js\n"
            "B\tfile:///a.js\t100.0\t0.0\nB\tfile:///b.js\t101.0\t0.0\n"
            "B\tfile:///c.js\t102.0\t0.0\n"
            "E\tfile:///c.js\t104.0\nE\tfile:///b.js\t106.0\nE\tfile:///a.js\t110.0\n"
            "B\tfile:///d.js\t111.0\t0.0\n")
    trace = node_packages.parse(text, until_ms=115.0)
    evaluate = {url: m["evaluate_ms"] for url, m in trace["modules"].items()}
    assert evaluate == {"file:///a.js": 5.0, "file:///b.js": 3.0, "file:///c.js": 2.0,
                        "file:///d.js": 4.0}
    assert trace["edges"] == {"file:///a.js": {"file:///b.js"}, "file:///b.js": {"file:///c.js"}}
    assert trace["hooks_ms"] is None and trace["linking_ms"] is None
    assert node_packages.parse("B\tfile:///a.js\t1.0\t0.0\n", until_ms=2.0) is None


def test_a_file_belongs_to_the_nearest_named_package_json(tmp_path):
    u = _tree(tmp_path)
    names = {}
    assert node_packages.package_of(u["sdk"], names) == "@acme/sdk"
    assert node_packages.package_of(u["dep"], names) == "dep"
    assert node_packages.package_of(u["entry"], names) == "app"
    assert node_packages.package_of("node:fs", names) == imports.STDLIB
    assert node_packages.package_of("data:text/javascript,", names) == "(data)"
    assert node_packages.package_of(u["loose"], names) == imports.NOT_INSTALLED


def test_packages_self_and_cumulative_and_the_parts_make_the_start(tmp_path):
    u = _tree(tmp_path)
    trace = node_packages.server_trace([_trace(u), LAUNCHER], until_ms=2000.0)
    found = node_packages.attribute(trace, {})
    dists = found["distributions"]
    assert dists[imports.NOT_INSTALLED] == {"self_ms": 6.0, "cumulative_ms": 25.0, "modules": 1}
    assert dists["@acme/sdk"] == {"self_ms": 14.0, "cumulative_ms": 18.0, "modules": 1}
    assert dists["dep"] == {"self_ms": 4.0, "cumulative_ms": 4.0, "modules": 1}
    assert dists[imports.STDLIB] == {"self_ms": 1.0, "cumulative_ms": 1.0, "modules": 1}
    assert found["import_ms"] == 25.0 and found["interpreter_ms"] == 40.0
    assert found["loader_wait_ms"] == 8.0
    block = imports.block([(100.0, found)] * 3, {"classifiers": {}}, 90.0, "stdio",
                          runtime="node")
    row = {"sdk": "@acme/sdk", "imports": {**block, "linking_ms": found["linking_ms"]}}
    split = dict(start_split(row))
    assert split == {"runtime and standard library": 41.0, "SDK": 14.0, "server code": 6.0,
                     "other packages": 4.0, "rest of the start": 35.0}
    assert sum(split.values()) == block["instrumented_ms"]


def test_a_scoped_sdk_counts_its_scope_as_the_sdk():
    block = {"instrumented_ms": 10.0, "interpreter_ms": 1.0, "distributions": [
        {"name": "@acme/sdk", "self_ms": 2.0, "installed": True},
        {"name": "@acme/core", "self_ms": 3.0, "installed": True},
        {"name": "@acmeish/other", "self_ms": 1.0, "installed": True}]}
    split = dict(start_split({"sdk": "@acme/sdk", "imports": block}))
    assert split["SDK"] == 5.0 and split["other packages"] == 1.0


def test_the_preload_goes_through_node_options(tmp_path):
    command = Command(argv=["node", "server.js"], env={"NODE_OPTIONS": "--max-old-space-size=64"})
    env = node_packages.traced_env(command, str(tmp_path))
    assert env["NODE_OPTIONS"] == ("--max-old-space-size=64 --import="
                                   + node_packages.PRELOAD.as_uri())
    assert env[node_packages.FOLDER] == str(tmp_path) and node_packages.PRELOAD.is_file()


def test_a_tree_that_runs_node_gets_the_node_profile():
    row = ServerResult(name="s")
    row.start_usage = {"processes": [{"name": "npm exec"}, {"name": "node"}]}
    server = Server(row, None)
    assert attribution.chosen(server) is node_packages
    assert row.not_measured == {"classes": attribution.WHY_NOT["classes"]}


def _heap(used: int) -> str:
    """An H line: heapUsed ``used``, heapTotal 4000, total_physical_size 3000, external 600,
    arrayBuffers 200, rss 9000."""
    return f"H\t1070.0\t{used}\t4000\t3000\t600\t200\t9000\n"


def test_the_heap_figures_are_the_server_nodes_last_and_medians_over_starts(tmp_path):
    entry = _tree(tmp_path)["entry"]
    server = f"P\t100\t1000.0\t40.0\t{entry}\n" + _heap(700) + "H\t1080.0\t5\n" + _heap(800)
    trace = node_packages.server_trace([LAUNCHER + _heap(1), server], until_ms=2e3)
    assert trace["pid"] == 100
    assert trace["heap"] == {"heap_used_bytes": 800, "heap_committed_bytes": 4000,
                             "heap_physical_bytes": 3000, "external_bytes": 600,
                             "array_buffers_bytes": 200, "rss_bytes": 9000}
    assert node_packages.parse(f"P\t100\t1000.0\t40.0\t{entry}\n", 2e3)["heap"] is None
    starts = [{**trace["heap"], "heap_used_bytes": used} for used in (900, 800, 1000)]
    assert runtime_heap.block("node", starts) == {"runtime": "node", "runs": 3,
                                                  **trace["heap"], "heap_used_bytes": 900}
    with pytest.raises(ValueError):
        runtime_heap.block("node", [])


@pytest.mark.e2e
def test_the_typescript_server_start_by_package(tmp_path):
    """Three traced starts of the built typescript reference server (cached build): the SDK,
    its core and zod by package, the entry's own package as the server's code, the parts
    (node's start, the packages' self times, the graph's linking, the waits for the loader
    thread) inside the start, and the
    SDK's cumulative time within 2x of importing it alone by hand (performance.now() around
    the import; benchmarks/node_import_check.py holds it to 20%)."""
    from test_runtime_heap import attributed
    row, build = attributed("typescript", node_packages)
    block = row.imports
    assert block is not None, row.not_measured
    assert block["runtime"] == "node" and block["runs"] == defaults.PROFILED_STARTS
    dists = {d["name"]: d for d in block["distributions"]}
    sdk = dists["@modelcontextprotocol/server"]
    assert sdk["installed"] and sdk["modules"] >= 2
    assert sdk["cumulative_ms"] > sdk["self_ms"] > 0
    assert dists["zod"]["modules"] > 10 and dists["@modelcontextprotocol/core"]["installed"]
    assert not dists[imports.NOT_INSTALLED]["installed"]
    assert dists[imports.NOT_INSTALLED]["cumulative_ms"] >= sdk["cumulative_ms"]
    parts = (block["interpreter_ms"] + block["import_ms"] + block["linking_ms"]
             + block["loader_wait_ms"])
    assert block["loader_wait_ms"] > 0
    assert 0.3 * block["instrumented_ms"] < parts <= block["instrumented_ms"]
    assert abs(sum(d["self_ms"] for d in dists.values()) - block["import_ms"]) \
        <= 0.2 * block["import_ms"]
    script = ("const t0 = performance.now(); await import('@modelcontextprotocol/server'); "
              "console.log(performance.now() - t0);")
    folder = Path(build.command().argv[1]).parent.parent
    hand = statistics.median(float(subprocess.run(
        ["node", "--input-type=module", "-e", script], cwd=folder, capture_output=True,
        text=True, check=True).stdout) for _ in range(3))
    assert hand / 2 <= sdk["cumulative_ms"] <= 2 * hand
    heap = row.runtime_heap  # V8's figures at the answer, SIGUSR2 to the server's node
    assert heap is not None, row.not_measured
    assert heap["runs"] == defaults.PROFILED_STARTS
    assert 0 < heap["heap_used_bytes"] <= heap["heap_committed_bytes"] < heap["rss_bytes"]
    assert 0 < heap["heap_physical_bytes"] <= heap["heap_committed_bytes"]
    assert heap["array_buffers_bytes"] <= heap["external_bytes"]
