"""The third round of public failures (the mutations issue), each as a family: the right value,
at once, with everything else still measured. On scripted servers (tests/scripted.py), whose
waits say which timer ended them; the idle watchdog against a real process's settle wait."""

import re

import pytest

from mcpstart.command import Command
from mcpstart.measure import run
from mcpstart.measure.settings import Settings
from mcpstart.results import ServerResult
from mcpstart.views.table import table

from conftest import fake_command, fast
from scripted import GoodServer, Out, Spawner, line

RUNS = 2
TRANSPORT_HAS_NO_PROCESS = "the transport has no process of the server to read"


class Fake(GoodServer):
    """tests/fakes/fake_server.py's defaults: a legacy server (server/discover is -32601)."""

    def result(self, method, params):
        return KeyError(method) if method == "server/discover" else super().result(method, params)


def call_of(message) -> str | None:
    """The text of a tools/call request, else None."""
    if isinstance(message, dict) and message.get("method") == "tools/call" and "id" in message:
        return str(message["params"]["arguments"]["text"])
    return None


class DeepSmallCall(Fake):
    """Answers a small tools/call with a result nested 100000 arrays deep."""

    def answer(self, message):
        text = call_of(message)
        if text is None or len(text) >= 100:
            return super().answer(message)
        levels = 100_000
        return [Out("stdout", b'{"jsonrpc":"2.0","id":%d,"result":{"content":[],"x":'
                    % message["id"] + b"[" * levels + b"]" * levels + b"}}\n")]


class CancelCall(Fake):
    """Cancels every tools/call (notifications/cancelled) and never answers it."""

    def answer(self, message):
        if call_of(message) is None:
            return super().answer(message)
        return [Out("stdout", line({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                    "params": {"requestId": message["id"],
                                               "reason": "request timed out on the server"}}))]


class SamplingCall(Fake):
    """On tools/call asks sampling/createMessage and never answers the call."""

    def answer(self, message):
        if call_of(message) is None:
            return super().answer(message)
        return [Out("stdout", line({"jsonrpc": "2.0", "id": 500, "method": "sampling/createMessage",
                                    "params": {"messages": [], "maxTokens": 10}}))]


class AnswerOnStderr(Fake):
    """Writes its answers to tools/call on stderr."""

    def answer(self, message):
        if call_of(message) is None:
            return super().answer(message)
        return [Out("stderr", line(self.reply(message)))]


FLOOD = 2000
"""Notifications of each method a flooding server sends before every initialize answer."""


class Flood(Fake):
    """Before answering initialize: FLOOD notifications/message, then FLOOD
    notifications/progress for a token nobody asked for."""

    def answer(self, message):
        outs = super().answer(message)
        if isinstance(message, dict) and message.get("method") == "initialize":
            notes = [{"jsonrpc": "2.0", "method": "notifications/message",
                      "params": {"level": "debug", "data": f"tick {n}"}} for n in range(FLOOD)]
            notes += [{"jsonrpc": "2.0", "method": "notifications/progress",
                       "params": {"progressToken": "nobody-asked", "progress": n}}
                      for n in range(FLOOD)]
            outs.insert(0, Out("stdout", b"".join(line(note) for note in notes)))
        return outs


class NoToolsCapability(Fake):
    """initialize declares capabilities {} (tools/list still answers)."""

    def result(self, method, params):
        result = super().result(method, params)
        if method == "initialize":
            result["capabilities"] = {}
        return result


def measure(script, **settings) -> tuple[ServerResult, list]:
    """One scripted server measured end to end (runs, matrix, session): the row and the waits
    that ended by their timer, as (timeout asked in s, how it ended), over every process."""
    spawner = Spawner({"fake": script})
    settings = fast(**{"runs": RUNS, "warmup": 0, "round_trips": 3, "payload_bytes": 50_000,
                       "timeout_s": 10, "probe_timeout_s": 2, "spawner": spawner, **settings})
    results = run.measure([run.Server(ServerResult("fake"), Command(["fake"]))],
                          settings, ["mcpstart"], {})
    table([results])  # the table renders whatever happened
    timed_out = [w for _, t in spawner.made for w in t.waits if w[1] in ("timeout", "quiet")]
    return results.servers[0], timed_out


def test_an_answer_nested_too_deep_fails_that_call_and_keeps_the_rest():
    row, timed_out = measure(DeepSmallCall)
    assert row.status == "failed"
    assert "tools/call reverse_text: the line with the answer cannot be read: it is nested " \
           "deeper than mcpstart's JSON parser (Python's json) reads" in row.reason
    assert "RecursionError" not in row.reason and "could not measure" not in row.reason
    assert row.handshake_ms["n"] == RUNS and row.tools["count"] == 1
    # memory is the transport's to read, not lost to the failure
    assert row.not_measured["memory"] == TRANSPORT_HAS_NO_PROCESS
    assert row.payload["verified"] is True  # the large call after it is measured
    assert timed_out == []


@pytest.mark.e2e  # its subject is a real timing: the settle wait outlasting a real watchdog
def test_an_idle_watchdog_exit_is_said_and_nothing_passes_for_idle_memory():
    settings = fast(runs=RUNS, warmup=0, round_trips=3, payload_bytes=50_000, timeout_s=10,
                    probe_timeout_s=2, settle=Settings().settle)  # its 3 s floor
    results = run.measure([run.Server(ServerResult("fake"), fake_command("--idle-exit", "2"))],
                          settings, ["mcpstart"], {})
    row = results.servers[0]
    assert row.status == "failed"
    # the watchdog's 2 s, as measured: at least 2.0 s, more on a busy machine (no upper bound)
    said = re.match(r"the server exited by itself \(code 0\) (\d+\.\d) s after its last "
                    r"request \(tools/list\)", row.reason)
    assert said and float(said[1]) >= 2.0, row.reason
    assert row.memory is None and row.not_measured["memory"] == row.reason
    assert row.shutdown == {"how": "already_exited", "ms": 0.0}
    assert row.handshake_ms["n"] == RUNS and row.tools["count"] == 1


def test_a_cancelled_request_ends_its_wait_quoting_the_reason():
    row, timed_out = measure(CancelCall)
    assert row.reason.startswith("tools/call reverse_text: the server cancelled the request "
                                 "(notifications/cancelled, reason: 'request timed out on the "
                                 "server')")
    assert timed_out == []  # no wait sat out the 10 s timeout
    assert row.handshake_ms["n"] == RUNS and row.tools["count"] == 1


def test_a_tool_blocked_on_its_own_request_names_it_in_the_timeout():
    row, _ = measure(SamplingCall, timeout_s=1)
    assert row.reason.startswith("no answer to tools/call reverse_text within 1 s; it asked "
                                 "mcpstart for sampling/createMessage, answered -32601 (method "
                                 "not found: mcpstart declares no client capabilities)")
    # asked by the dual-era client's first call (its series ends there) and the tool session
    assert row.traffic["refused_requests"] == {"sampling/createMessage": 2}


def test_an_answer_on_stderr_ends_the_wait_saying_so():
    row, timed_out = measure(AnswerOnStderr)
    assert "tools/call reverse_text: the server wrote its answer on stderr; the stdio " \
           "transport carries messages on stdout only" in row.reason
    assert timed_out == []


def test_a_flood_of_notifications_is_counted_per_method():
    row, _ = measure(Flood)
    assert row.status == "ok", row.reason
    sessions = 2 * RUNS + 1  # the cold starts, the dual-era client's starts, the warm session
    assert row.traffic["notifications"] == {"notifications/message": FLOOD * sessions,
                                            "notifications/progress": FLOOD * sessions}
    assert row.traffic["unknown_progress"] == FLOOD * sessions
    details = [w["detail"] for w in row.warnings]
    assert f"{2 * FLOOD * sessions} notifications in all (notifications/message " \
           f"{FLOOD * sessions}, notifications/progress {FLOOD * sessions})" in details
    assert any(d.startswith(f"{FLOOD * sessions} notifications/progress with a progressToken "
                            "mcpstart never sent") for d in details)


def test_no_tools_capability_is_warned_while_tools_list_answers():
    row, _ = measure(NoToolsCapability)
    assert row.status == "ok" and row.tools["count"] == 1
    assert {"kind": "no_tools_capability", "metric": "server_capabilities",
            "detail": "initialize declared no tools capability, yet tools/list answered; "
                      "clients that check capabilities.tools show no tools"} in row.warnings


def test_a_command_that_cannot_start_is_a_row():
    results = run.measure([run.Server(ServerResult("none"), Command(["/nonexistent/server"]))],
                          fast(runs=1, warmup=0), ["mcpstart"], {})
    assert results.servers[0].reason.startswith("cold start run 1/1: cannot start "
                                                "'/nonexistent/server'")
