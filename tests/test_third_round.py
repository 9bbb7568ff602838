"""The third round of public failures (the mutations issue), each as a family, against real
processes of the fake server: the right value, at once, with everything else still measured."""

import re
import time

from mcpstart.command import Command
from mcpstart.measure import run
from mcpstart.measure.settings import Settings
from mcpstart.results import ServerResult
from mcpstart.views.table import table

from conftest import fake_command, fast

RUNS = 2


def measure(*switches, **settings) -> tuple[ServerResult, float]:
    """One server measured end to end (runs, matrix, session); the row and the seconds."""
    settings = fast(**{"runs": RUNS, "warmup": 0, "round_trips": 3, "payload_bytes": 50_000,
                       "timeout_s": 10, "probe_timeout_s": 2, **settings})
    began = time.monotonic()
    results = run.measure([run.Server(ServerResult("fake"), fake_command(*switches))],
                          settings, ["mcpstart"], {})
    table([results])  # the table renders whatever happened
    return results.servers[0], time.monotonic() - began


def test_an_answer_nested_too_deep_fails_that_call_and_keeps_the_rest():
    row, seconds = measure("--deep-small-call", "100000")
    assert row.status == "failed"
    assert "tools/call reverse_text: the line with the answer cannot be read: it is nested " \
           "deeper than mcpstart's JSON parser (Python's json) reads" in row.reason
    assert "RecursionError" not in row.reason and "could not measure" not in row.reason
    assert row.handshake_ms["n"] == RUNS and row.tools["count"] == 1
    assert row.memory["idle_rss_bytes"] > 0
    assert row.payload["verified"] is True  # the large call after it is measured
    assert seconds < 10


def test_an_idle_watchdog_exit_is_said_and_nothing_passes_for_idle_memory():
    row, _ = measure("--idle-exit", "2", settle=Settings().settle)  # its 3 s floor
    assert row.status == "failed"
    # the watchdog's 2 s, as measured: at least 2.0 s, more on a busy machine (no upper bound
    # outside the e2e tier)
    said = re.match(r"the server exited by itself \(code 0\) (\d+\.\d) s after its last "
                    r"request \(tools/list\)", row.reason)
    assert said and float(said[1]) >= 2.0, row.reason
    assert row.memory is None and row.not_measured["memory"] == row.reason
    assert row.shutdown == {"how": "already_exited", "ms": 0.0}
    assert row.handshake_ms["n"] == RUNS and row.tools["count"] == 1


def test_a_cancelled_request_ends_its_wait_quoting_the_reason():
    row, seconds = measure("--cancel-call")
    assert row.reason.startswith("tools/call reverse_text: the server cancelled the request "
                                 "(notifications/cancelled, reason: 'request timed out on the "
                                 "server')")
    assert seconds < 10  # no wait sat out the 10 s timeout
    assert row.handshake_ms["n"] == RUNS and row.tools["count"] == 1


def test_a_tool_blocked_on_its_own_request_names_it_in_the_timeout():
    row, _ = measure("--sampling-call", timeout_s=1)
    assert row.reason.startswith("no answer to tools/call reverse_text within 1 s; it asked "
                                 "mcpstart for sampling/createMessage, answered -32601 (method "
                                 "not found: mcpstart declares no client capabilities)")
    # asked by the dual-era client's first call (its series ends there) and the tool session
    assert row.traffic["refused_requests"] == {"sampling/createMessage": 2}


def test_an_answer_on_stderr_ends_the_wait_saying_so():
    row, seconds = measure("--answer-on-stderr")
    assert "tools/call reverse_text: the server wrote its answer on stderr; the stdio " \
           "transport carries messages on stdout only" in row.reason
    assert seconds < 10


def test_a_flood_of_notifications_is_counted_per_method():
    row, _ = measure("--flood", "20000")
    assert row.status == "ok", row.reason
    sessions = 2 * RUNS + 1  # the cold starts, the dual-era client's starts, the warm session
    assert row.traffic["notifications"] == {"notifications/message": 20000 * sessions,
                                            "notifications/progress": 20000 * sessions}
    assert row.traffic["unknown_progress"] == 20000 * sessions
    details = [w["detail"] for w in row.warnings]
    assert f"{40000 * sessions} notifications in all (notifications/message " \
           f"{20000 * sessions}, notifications/progress {20000 * sessions})" in details
    assert any(d.startswith(f"{20000 * sessions} notifications/progress with a progressToken "
                            "mcpstart never sent") for d in details)


def test_no_tools_capability_is_warned_while_tools_list_answers():
    row, _ = measure("--no-tools-capability")
    assert row.status == "ok" and row.tools["count"] == 1
    assert {"kind": "no_tools_capability", "metric": "server_capabilities",
            "detail": "initialize declared no tools capability, yet tools/list answered; "
                      "clients that check capabilities.tools show no tools"} in row.warnings


def test_a_command_that_cannot_start_is_a_row():
    results = run.measure([run.Server(ServerResult("none"), Command(["/nonexistent/server"]))],
                          fast(runs=1, warmup=0), ["mcpstart"], {})
    assert results.servers[0].reason.startswith("cold start run 1/1: cannot start "
                                                "'/nonexistent/server'")
