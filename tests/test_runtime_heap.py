"""The runtime's own heap figures (measure/runtime_heap.py): the JVM's from jcmd's output
(recorded from the java reference server, G1, plus a Serial collector's heap lines) and, on
the built java server, read at each logged start's answer (jvm_classes.py); ``attributed``
runs a reference server's attribution for the e2e tests here and in test_node_packages.py. V8's figures are
tested with the Node.js trace (tests/test_node_packages.py)."""

from pathlib import Path

import pytest

from conftest import unavailable
from mcpstart.measure import attribution, jvm_classes, runtime_heap
from mcpstart.measure.server import Server
from mcpstart.measure.settings import Settings
from mcpstart.results import ServerResult
from mcpstart.targets.build import cache_root, ensure_built
from mcpstart.targets.recipes import load_recipes
from mcpstart.transports.tree import child_subreaper

JCMD = (Path(__file__).parent / "fixtures" / "jcmd_heap.txt").read_text()
KB = 1024
SERIAL = """\
 def new generation   total 116160K, used 47662K [0x0000000687400000, 0x000000068f200000)
  eden space 103296K,  46% used [0x0000000687400000, 0x000000068a28ba00, 0x000000068d8e0000)
 tenured generation   total 258048K, used 100K [0x0000000704d50000, 0x0000000714950000)
 Metaspace       used 11138K, committed 11328K, reserved 1114112K
"""


def test_the_jvm_figures_are_nmts_committed_and_the_collectors_used():
    assert runtime_heap.jvm_figures(JCMD) == {
        "heap_used_bytes": 13228 * KB, "heap_committed_bytes": 397312 * KB,
        "code_committed_bytes": 7749 * KB, "nmt_committed_bytes": 491004 * KB}
    g1 = JCMD[:JCMD.index(" garbage-first heap")]
    serial = runtime_heap.jvm_figures(g1 + SERIAL)  # each generation's used summed
    assert serial["heap_used_bytes"] == (47662 + 100) * KB


def test_without_tracking_or_heap_lines_there_are_no_figures():
    with pytest.raises(ValueError, match="no native memory summary"):
        runtime_heap.jvm_figures("4242:\nNative memory tracking is not enabled\n" + SERIAL)
    with pytest.raises(ValueError, match="no native memory summary"):
        runtime_heap.jvm_figures(JCMD[:JCMD.index(" garbage-first heap")])


GC = """\
init internal/bytealg @0.005 ms, 0 ms clock, 0 bytes, 0 allocs
gc 1 @0.004s 2%: 0.010+0.20+0.003 ms clock, 0.040+0.050/0.15/0.10+0.013 ms cpu, 3->3->1 MB, 4 MB goal, 0 MB stacks, 0 MB globals, 4 P
gc 2 @0.012s 3%: 0.011+0.31+0.004 ms clock, 0.045+0.10/0.20/0.10+0.016 ms cpu, 4->5->2 MB, 6 MB goal, 0 MB stacks, 0 MB globals, 4 P
gc 3 @0.020s 3%: 0.011+0.31+0.004 ms clock, 0.045+0.10/0.20/0.10+0.016 ms cpu, 4->5->2 MB, 6 MB go"""


def test_go_heap_is_the_last_complete_collection_and_none_without_one():
    assert runtime_heap.go_figures(GC) == {"heap_used_bytes": 2 << 20,
                                           "heap_goal_bytes": 6 << 20, "collections": 2}
    assert runtime_heap.go_figures(GC.split("\ngc 1")[0]) is None


def test_why_shows_the_runtimes_own_heap():
    from mcpstart.views.why import why
    from test_jvm_classes import LOG
    heap = runtime_heap.block("jvm", [runtime_heap.jvm_figures(JCMD)])
    classes = jvm_classes.block([(600.0, jvm_classes.parse(LOG))], 400.0)
    text = why({"servers": [{"name": "j", "handshake_ms": {"median": 400.0},
                             "classes": classes, "runtime_heap": heap}]}, "j")
    assert ("the runtime's own heap at its answer (jvm, median of 1 extra starts, MiB): heap "
            "used 12.9, heap committed 388.0, code committed 7.6, nmt committed 479.5") in text


def attributed(name: str, runtime):
    """``(row, build)`` of the built reference server ``name`` (cached build; unavailable()
    when it cannot be built here), the row after ``runtime.measure`` (a start-up attribution
    module: jvm_classes, else node_packages) with java or node in its start usage."""
    [recipe] = load_recipes(Path(__file__).parent.parent / "build-recipes", [name])
    build = ensure_built(recipe, cache_root())
    if build.status == "skipped":
        unavailable(f"{name}: {build.reason}")
    assert build.ok, build.reason
    row = ServerResult(name, sdk=recipe.sdk)
    row.start_usage = {"processes": [{"name": "java" if runtime is jvm_classes else "node"}]}
    with child_subreaper():
        attribution.interleaved([(None, runtime.measure(Server(row, build.command()),
                                                        Settings(timeout_s=60)))])
    return row, build


@pytest.mark.e2e
def test_the_java_servers_heap_at_each_logged_start():
    """The built java reference server: the classes block and, from the same three starts,
    NMT's heap and the collector's used bytes."""
    row, _ = attributed("java", jvm_classes)
    assert row.classes is not None and row.classes["classes"] > 1000, row.not_measured
    heap = row.runtime_heap
    assert heap is not None, row.not_measured
    assert heap["runtime"] == "jvm" and heap["runs"] == Settings().profiled_starts
    assert 0 < heap["heap_used_bytes"] <= heap["heap_committed_bytes"] \
        < heap["nmt_committed_bytes"]
    assert 0 < heap["code_committed_bytes"] < heap["nmt_committed_bytes"]
