"""JVM class loading before the answer (measure/jvm_classes.py) on a log written here: the
sources as rows, a line still being written left out, medians over starts; and which runtime's
profile a server gets (measure/attribution.py)."""

from mcpstart.measure import attribution, go_init, imports, jvm_classes, runtime_heap
from mcpstart.results import ServerResult
from mcpstart.views.table import top_jars

LOG = """\
[0.068s] java.lang.Object source: shared objects file
[0.069s] java.io.Serializable source: shared objects file
[0.120s] sun.launcher.LauncherHelper source: jrt:/java.base
[0.158s] app.Server source: file:/srv/app/target/server.jar
[0.238s] io.mcp.spec.Transport source: file:/srv/app/lib/mcp-core-2.1.0.jar
[0.239s] io.mcp.spec.Session source: file:/srv/app/lib/mcp-core-2.1.0.jar
[0.240s] app.Server$$Lambda/0x0000 source: app.Server
[0.241s] java.lang.invoke.LambdaForm$MH/0x01 source: __JVM_LookupDefineClass__
[0.300s] io.mcp.spec.Schema source: file:/srv/app/lib/mcp-co"""


def test_sources_are_jars_the_jdk_and_classes_made_at_run_time():
    found = jvm_classes.parse(LOG)
    assert found["classes"] == 8 and found["first_ms"] == 68.0 and found["last_ms"] == 241.0
    assert found["sources"] == {jvm_classes.JDK: 3, "server.jar": 1, "mcp-core-2.1.0.jar": 2,
                                jvm_classes.GENERATED: 2}


def test_the_block_takes_medians_and_counts_an_absent_source_as_zero():
    one = jvm_classes.parse(LOG)
    two = jvm_classes.parse(LOG.replace("mcp-core-2.1.0.jar", "mcp-core-2.2.0.jar"))
    block = jvm_classes.block([(500.0, one), (700.0, one), (600.0, two)], 400.0)
    by_name = {s["name"]: s for s in block["sources"]}
    assert block["instrumented_ms"] == 600.0 and block["classes"] == 8
    assert by_name["mcp-core-2.1.0.jar"]["classes"] == 2 and by_name["mcp-core-2.2.0.jar"]["classes"] == 0
    assert by_name[jvm_classes.JDK]["jdk"] and not by_name["server.jar"]["jdk"]
    assert block["sources"][0]["name"] == jvm_classes.JDK
    row = {"classes": block}
    assert top_jars(8, row) == "8 (JDK 3; mcp-core-2.1.0.jar 2, server.jar 1, mcp-core-2.2.0.jar 0)"


class _Server:
    def __init__(self, names, transport="stdio"):
        self.transport, self.command = transport, None
        self.row = ServerResult(name="s")
        self.row.start_usage = {"processes": [{"name": n} for n in names]}


def test_each_server_gets_one_runtime_and_the_other_blocks_say_why():
    java, python, sh = _Server(["sh", "java"]), _Server(["uv", "python3.12"]), _Server(["sh"])
    assert attribution.chosen(java) is jvm_classes
    heap = {"runtime_heap": runtime_heap.WHY_NOT}  # V8's, the JVM's and Go's figures only
    assert java.row.not_measured == {"imports": attribution.WHY_NOT["imports"]}
    assert attribution.chosen(python) is imports
    assert python.row.not_measured == {"classes": attribution.WHY_NOT["classes"], **heap}
    assert attribution.chosen(sh) is None and set(sh.row.not_measured) == {
        "imports", "classes", "runtime_heap"}
    assert attribution.chosen(_Server(["java"], transport="http")) is jvm_classes
    assert go_init.BLOCK == "imports" and set(attribution.WHY_NOT) == {
        r.BLOCK for r in attribution.RUNTIMES}


def test_why_shows_the_classes_and_go_package_inits():
    from mcpstart.views.why import why
    from test_go_init import INFO, TRACE
    classes = jvm_classes.block([(600.0, jvm_classes.parse(LOG))], 400.0)
    text = why({"servers": [{"name": "j", "handshake_ms": {"median": 400.0}, "classes": classes}]}, "j")
    assert ("JVM classes: 8 loaded before the answer of a 600.0 ms logged start (1 runs; "
            "unlogged median 400.0 ms); the first at 68.0 ms") in text
    assert "    mcp-core-2.1.0.jar: 2" in text
    one = go_init.attribute(go_init.parse(TRACE), INFO)
    block = {**imports.block([(10.0, one)], {"classifiers": {}, "main": INFO["main"]}, 8.0,
                             "stdio", runtime="go"),
             "packages": go_init.package_rows([go_init.parse(TRACE)], INFO)}
    text = why({"servers": [{"name": "g", "handshake_ms": {"median": 8.0}, "imports": block}]}, "g")
    assert "package init: 4.62 ms of a 10.0 ms profiled start" in text
    assert "interpreter" not in text and "    github.com/acme/sdk: 2.50, 2" in text
    assert "    github.com/acme/sdk/jsonschema: 2.00, 81256, 296" in text


def test_why_without_a_breakdown_says_the_rows_own_reason():
    import pytest
    from mcpstart.views.why import why
    portable = {"name": "c", "status": "ok",
                "not_measured": {"start_usage": "not read by the portable process layer"}}
    failed = {"name": "m", "status": "failed", "reason": "the OOM killer ended it"}
    with pytest.raises(ValueError, match="c has no start breakdown: not read by the portable"):
        why({"servers": [portable]}, "c")
    with pytest.raises(ValueError, match="m has no start breakdown: it failed: the OOM killer"):
        why({"servers": [failed]}, "m")
