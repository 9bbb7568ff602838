"""A workload's per-tool figures and the shared floor rule through the one run loop, on
scripted servers and a virtual clock: warm figures per tool, a cold first call per tool over
stdio, per-call sessions over HTTP with their initialize times, and the rule flagging a
server that adds 40 ms to every tool call (and nothing to initialize) but not its control."""

from dataclasses import replace
from pathlib import Path

from mcpstart.command import Command
from mcpstart.measure import run
from mcpstart.measure.server import Server
from mcpstart.measure.shared_floor import floor
from mcpstart.results import ServerResult, validate
from mcpstart.workload import load

from conftest import fast
from scripted import GoodServer, Spawner
from scripted_http import HttpGood, HttpSpawner

PAIR = load(str(Path(__file__).parent / "fixtures" / "workloads" / "pair.toml"))
TOOLS = {"tools": [{"name": "now", "inputSchema": {"type": "object"}},
                   {"name": "count", "inputSchema": {"type": "object", "properties": {
                       "n": {"type": "integer"}}}}]}
WORK_S = {"now": 0.001, "count": 0.003}
"""Each tool's own time (virtual seconds)."""


class PairTools:
    """The fixture workload's two tools: ``now`` (no arguments) and ``count`` (1 .. n)."""

    def result(self, method, params):
        if method == "tools/list":
            return TOOLS
        if method == "tools/call":
            args = params.get("arguments") or {}
            text = (" ".join(str(i) for i in range(1, args["n"] + 1))
                    if params["name"] == "count" else "12:00")
            return {"content": [{"type": "text", "text": text}]}
        return super().result(method, params)


class PairServer(PairTools, GoodServer):
    """A stdio server of the two tools, each taking its WORK_S."""

    def answer(self, message):
        outs = super().answer(message)
        if isinstance(message, dict) and message.get("method") == "tools/call":
            for out in outs:
                out.after_s = WORK_S[message["params"]["name"]]
        return outs


def measured(server: Server, **changes):
    settings = fast(**{"runs": 3, "warmup": 1, "round_trips": 20, "http_sessions": 0,
                       "load_s": 0, "workload": PAIR, "call": PAIR.calls[0], **changes})
    results = run.measure([server], settings, ["mcpstart", "measure"], {})
    validate(results.to_dict())
    return results


def test_a_stdio_workload_gives_each_tool_warm_figures_and_a_cold_first_call():
    results = measured(Server(ServerResult("pair"), Command(["pair"])),
                       spawner=Spawner({"pair": PairServer}))
    row = results.servers[0]
    assert row.status == "ok", row.reason
    tools = row.workload["tools"]
    assert tools["now"]["warm_ms"]["p50"] == 1.0 and tools["count"]["warm_ms"]["p50"] == 3.0
    assert tools["count"]["warm_ms"]["n"] == 20 and tools["count"]["warm_ms"]["p95"] == 3.0
    # spawn to that tool's answer: the start's phases, then the tool's own time
    before_call = row.phases_ms["tools_list"]["median"]
    assert tools["now"]["cold_first_call_ms"]["median"] == before_call + 1.0
    assert tools["count"]["cold_first_call_ms"]["median"] == before_call + 3.0
    assert tools["count"]["cold_first_call_ms"]["n"] == 3
    assert row.workload["initialize_ms"] is None  # one session over stdio: no warm initialize
    series = [r["series"] for r in results.run_sequence]
    assert series.count("workload") == 4 and series.count("handshake") == 4
    assert not [w for w in row.warnings if w["kind"] == "shared_floor"]


def test_without_a_workload_there_is_no_per_tool_series():
    settings = fast(runs=2, warmup=0, round_trips=2, spawner=Spawner({"pair": PairServer}),
                    call=PAIR.calls[0])
    results = run.measure([Server(ServerResult("pair"), Command(["pair"]))], settings,
                          ["mcpstart", "measure"], {})
    assert results.servers[0].workload is None
    assert "workload" not in {r["series"] for r in results.run_sequence}


class Delayed(PairTools, HttpGood):
    """A Streamable HTTP server with the two tools that answers every tools/call ``DELAY_S``
    after it, whatever the tool, and initialize at once."""

    DELAY_S = 0.040

    def http(self, request):
        wires = super().http(request)
        message = request.message
        if isinstance(message, dict) and message.get("method") == "tools/call":
            for wire in wires:
                wire.after_s = self.DELAY_S
        return wires


class Control(Delayed):
    """The same server without the delay."""

    DELAY_S = 0.0


def http_row(script):
    server = Server(ServerResult("h", "http"), Command(["h", "{port}"]), transport="http")
    results = measured(server, http_spawner=HttpSpawner(script),
                       workload=replace(PAIR, shape="per-call"))
    row = results.servers[0]
    assert row.status == "ok", row.reason
    return row


def test_a_server_adding_40_ms_to_every_tool_call_is_flagged_and_named():
    row = http_row(Delayed)
    work = row.workload
    assert work["shape"] == "per-call" and work["initialize_ms"]["n"] == 40
    assert work["tools"]["now"]["warm_ms"]["p50"] == work["tools"]["count"]["warm_ms"]["p50"] \
        == 40.0
    flagged = [w for w in row.warnings if w["kind"] == "shared_floor"]
    assert [w["metric"] for w in flagged] == ["workload.tools.*.warm_ms"]
    assert "count, now all answer in about 40.0 ms" in flagged[0]["detail"]
    assert "Nagle's algorithm meeting delayed ACKs" in flagged[0]["detail"]


def test_its_control_without_the_delay_is_not_flagged():
    row = http_row(Control)
    assert row.workload["tools"]["now"]["warm_ms"]["p50"] == 0.0
    assert not [w for w in row.warnings if w["kind"] == "shared_floor"]


def test_the_rule_needs_two_tools_at_one_floor_far_above_initialize():
    assert floor(1.0, {"a": 40.0, "b": 42.0, "c": 200.0}) == {
        "floor_ms": 40.0, "initialize_ms": 1.0, "tools": ["a", "b"], "nagle": True}
    assert floor(1.0, {"a": 40.0, "b": 60.0}) is None  # each its own time: no shared floor
    assert floor(1.0, {"a": 40.0}) is None  # one tool's time is its own
    assert floor(20.0, {"a": 40.0, "b": 41.0}) is None  # not 3x initialize
    assert floor(0.1, {"a": 0.4, "b": 0.4}) is None  # 4x, but not 5 ms above
    assert floor(None, {"a": 40.0, "b": 41.0}) is None  # no initialize to compare with
    assert floor(1.0, {"a": 100.0, "b": 110.0})["nagle"] is False


def test_the_table_and_the_per_tool_plot_show_each_tool():
    from conftest import require_modules
    from mcpstart.views.table import table

    results = measured(Server(ServerResult("pair"), Command(["pair"])),
                       spawner=Spawner({"pair": PairServer}))
    text = table(results)
    assert "Per tool: workload pair" in text and "shape shared" in text
    assert "  - now, warm: 1.00 / 1.00 / - ms (n=20) after 80 warm-up calls; cold first call" \
        in text
    assert "  - count, warm: 3.00 / 3.00 / - ms (n=20) after 80 warm-up calls;" in text
    require_modules("matplotlib", extra="plot")
    from mcpstart.views.plot import available, figure

    assert "per-tool" in available(results.to_dict())
    fig = figure(results.to_dict(), "per-tool")
    widths = sorted(p.get_width() for ax in fig.subfigs[0].axes for p in ax.patches)
    assert widths == [1.0, 3.0]


def test_a_tool_missing_required_arguments_says_to_give_them_in_the_workload(tmp_path):
    """The cause names the workload file's table, not --args, which a workload run refuses."""
    class Requires(PairServer):
        def result(self, method, params):
            if method != "tools/list":
                return super().result(method, params)
            count = {**TOOLS["tools"][1], "inputSchema": {
                **TOOLS["tools"][1]["inputSchema"], "required": ["n"]}}
            return {"tools": [TOOLS["tools"][0], count]}

    file = tmp_path / "w.toml"
    file.write_text('[[tools]]\nname = "now"\n[[tools]]\nname = "count"\n')
    workload = load(str(file))
    results = measured(Server(ServerResult("pair"), Command(["pair"])),
                       spawner=Spawner({"pair": Requires}), workload=workload,
                       call=workload.calls[0])
    row = results.servers[0]
    said = row.not_measured["workload.tools.count.warm_ms"]
    assert said == ("tools/call count: the tool requires n, which the call does not give; "
                    "give them in the workload's tools[1].arguments")
    assert row.workload["tools"]["now"]["warm_ms"]["p50"] == 1.0  # the other tool: measured
