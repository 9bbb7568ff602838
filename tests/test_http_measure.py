"""End to end: ``measure --transport http`` over the reference HTTP servers (built with
mcpstart's build, cached), with short waits and a 0.5 s load: every row ok, the start-up
phases in order from the spawn, the 5 MiB call verified over HTTP, the warm latency and
session cost, every load block saying whether the engine set its rate (at its ceiling, the
same scenario on the HTTP floor in the same run answering in the server's own shape: the
floor's own blocks are), the table and
the plot drawn, and no process left."""

import psutil
import pytest

from conftest import fast, unavailable
from mcpstart.defaults import CEILING_OVER
from mcpstart.engine import job_for, measure
from mcpstart.measure import load
from mcpstart.views.plot import figure
from mcpstart.views.table import table

pytestmark = pytest.mark.e2e


def test_the_reference_servers_over_http(tmp_path):
    if load.engine_version() is None:
        unavailable("Locust is not installed (pip install 'mcpstart[http]')")
    settings = fast(runs=2, warmup=0, round_trips=100, http_sessions=20, load_s=0.5,
                    transport="http")
    options = {"server_specs": (), "configs": (), "client": None, "cwd": None,
               "recipes_dir": None, "output": tmp_path / "r.json"}
    outcome = measure(job_for((), options, settings, ["mcpstart"], lambda _: None))
    results = outcome.results.to_dict()
    rows = {row["name"]: row for row in results["servers"]}
    assert set(rows) >= {"c-http", "go-http", "python-http", "rust-http", "typescript-http"}
    assert results["load_ceiling"]["server"] == "c-http"
    # the ceiling of each answer shape: the floor's own (JSON) and the floor with --answer
    shaped = [b for blocks in results["load_ceiling"]["by_answer"].values() for b in blocks]
    ceiling = {(b["answer_shape"], b["scenario"]): b["rps"]
               for b in results["load_ceiling"]["load"] + shaped}
    shapes = {name: {b["answer_shape"] for b in row["http"]["load"]} for name, row in rows.items()}
    assert (shapes["c-http"], shapes["go-http"], shapes["rust-http"]) == (
        {"json"}, {"sse"}, {"sse-primed"})
    for name, row in rows.items():
        assert row["status"] == "ok", (name, row["reason"])
        start = row["http"]["start_ms"]
        phases = [start[p]["median"] for p in ("port", "initialize", "tools_list", "first_call")]
        assert phases == sorted(phases) and phases[0] > 0, (name, phases)
        assert start["modern_first_call"]["median"] > 0
        assert row["payload"]["verified"] is True and row["payload"]["unicode_verified"] is True
        assert row["http"]["latency_ms"]["n"] == 100 and row["http"]["latency_ms"]["p99"] > 0
        assert row["http"]["session_ms"]["n"] == 20
        assert row["protocol"]["era"] == "dual"
        for block in row["http"]["load"]:
            assert block["ceiling_rps"] == ceiling[block["answer_shape"], block["scenario"]]
            assert block["ceiling_ratio"] == block["rps"] / block["ceiling_rps"]
            # above CEILING_OVER of its ceiling the ceiling was not the engine's maximum (the
            # floor's run and this one differ by the engine's noise): unknown, not a verdict
            over = block["ceiling_ratio"] > CEILING_OVER
            if over:
                assert block["engine_bound"] is None, (name, block)
            else:
                assert isinstance(block["engine_bound"], bool), (name, block)
            assert block["requests"] > 0 and block["pinned_cpus"]["engine"]
    # the floor is its own ceiling: at the engine's maximum in every unpaced scenario
    assert all(b["engine_bound"] for b in rows["c-http"]["http"]["load"]
               if b["scenario"] not in load.PACED)
    text = table(outcome.results)
    assert "HTTP cold start: initialize answered" in text and "(ceiling " in text
    figure(results, "http")
    left = [p for p in psutil.Process().children(recursive=True) if p.status() != "zombie"]
    assert not left, left
