"""Probes, memory of process trees, and the revision matrix, against the fake server."""

import os
import sys
import subprocess
import time
from dataclasses import replace

import psutil
import pytest

from mcpstart.measure import revisions
from mcpstart.measure.memory import Curve, SettleRule
from mcpstart.measure.client import ProbeError, Skips
from mcpstart.measure.cold import cold_start
from mcpstart.wire import UNICODE_CHECK, ToolCall, payload_text
from mcpstart.transports.tree import child_subreaper, is_subreaper, parents

from conftest import FAST_SETTLE, fake_command, fast
from test_faults import session_row

MIB = 1024 * 1024
REV = "2025-11-25"


def test_cold_start_phases_are_cumulative_from_the_spawn(fake):
    sample = cold_start(fake(), fast(call=ToolCall()), Skips())
    assert 0 < sample["first_byte"] <= sample["handshake"] < sample["tools_list"] \
        < sample["first_call"] < 10_000
    assert sample["tools"].find("reverse_text") is not None
    assert sample["negotiated_revision"] == REV


def test_negotiated_revision_is_recorded_verbatim(fake):
    sample = cold_start(fake("--revision", "2024-11-05"), fast(), Skips())
    assert sample["negotiated_revision"] == "2024-11-05"


@pytest.mark.e2e  # a real timing: the pause is slept before the clock starts
def test_pause_comes_before_the_clock(fake):
    start = time.monotonic()
    sample = cold_start(fake(), fast(pause_ms=300), Skips())
    assert time.monotonic() - start >= 0.3
    assert sample["handshake"] < 300  # the pause is not inside the figure


def test_peak_memory_of_a_one_process_call_is_the_high_water_mark(fake):
    row, _, error = session_row(fake("--alloc-mib", "96"))
    assert error is None
    memory = row.memory
    assert memory["peak_method"] == "vmhwm"
    grown = memory["peak_rss_bytes_payload"] - memory["idle_rss_bytes"]
    assert 90 * MIB <= grown <= 140 * MIB
    assert memory["processes"][0]["peak_rss_bytes_hwm"] == memory["peak_rss_bytes_payload"]
    assert memory["peak_rss_bytes_hwm_sum"] == memory["peak_rss_bytes_payload"]
    # sampled RSS never sees more than the high-water mark, up to the kernel's per-CPU
    # RSS counter slack (a few hundred KiB)
    assert memory["peak_rss_bytes_sampled"] <= memory["peak_rss_bytes_payload"] + MIB


def test_the_parents_read_from_proc_are_psutils():
    """tree.parents reads /proc itself (the process-tree scan's cost): the same parent pids
    as psutil for every process both list, and this process's child under this process."""
    child = subprocess.Popen(["sleep", "30"])
    try:
        before = {p.pid: p.info["ppid"] for p in psutil.process_iter(["ppid"])}
        ours = parents()
        after = {p.pid: p.info["ppid"] for p in psutil.process_iter(["ppid"])}
        # the processes of the machine that kept their parent meanwhile
        steady = {pid for pid in ours.keys() & before.keys() & after.keys()
                  if before[pid] == after[pid]}
        assert len(steady) > 3 and child.pid in steady
        assert {pid: ours[pid] for pid in steady} == {pid: before[pid] for pid in steady}
        assert ours[child.pid] == os.getpid()
    finally:
        child.kill()
        child.wait()


def test_a_child_that_lives_only_during_the_call_is_counted(fake):
    row, _, error = session_row(fake("--child-alloc-mib", "100"))
    assert error is None
    memory = row.memory
    assert memory["peak_method"] == "sampled"
    assert memory["peak_rss_bytes_payload"] >= memory["idle_rss_bytes"] + 100 * MIB
    child = [p for p in memory["processes"] if p["exited"]]
    assert len(child) == 1 and child[0]["peak_rss_bytes_sampled"] >= 100 * MIB
    assert child[0]["idle_rss_bytes"] is None  # born and gone inside the call


def test_a_helper_that_exits_during_the_call_is_named(fake):
    # the helper's 150 MiB may take long to fill on a busy machine: settle waits for them
    # (at most 60 s, not FAST's 2 s), as it ends once memory is flat
    settle = replace(FAST_SETTLE, max_s=60)
    row, _, error = session_row(fake("--helper-mib", "150", "--helper-exits-on-call"),
                                settle=settle)
    assert error is None
    memory = row.memory
    assert memory["idle_rss_bytes"] >= 150 * MIB
    assert memory["peak_rss_bytes_payload"] < memory["idle_rss_bytes"]
    helper = next(p for p in memory["processes"] if p["exited"])
    warning = next(w for w in row.warnings if w["kind"] == "memory")
    assert helper["label"] == f"{os.path.basename(sys.executable)} -c"  # python3, or a venv's python
    assert f"{helper['label']} (pid {helper['pid']}) exited in between" in warning["detail"]


def test_staggered_peaks_are_sampled_as_the_tree_holds_them(fake):
    row, _, error = session_row(fake("--child-alloc-mib", "150", "--then-alloc-mib", "150"))
    assert error is None
    memory = row.memory
    server = memory["processes"][0]
    # the true simultaneous maximum: the server's idle RSS plus one 150 MiB block at a time
    # (the child's interpreter adds its own few MiB)
    true_max = memory["idle_rss_bytes"] + 150 * MIB
    assert abs(memory["peak_rss_bytes_payload"] - true_max) <= 0.10 * true_max
    assert server["peak_rss_bytes_hwm"] >= server["idle_rss_bytes"] + 150 * MIB


def test_a_double_forked_helper_is_counted_and_reclaimed(fake):
    with child_subreaper() as became:  # the CLI does this; a library user opts in
        assert became
        row, _, error = session_row(fake("--double-fork-mib", "100"))
    assert not is_subreaper()  # as it was before the block
    assert error is None
    memory = row.memory
    helper = [p for p in memory["processes"] if p["idle_rss_bytes"] and p["idle_rss_bytes"] >= 100 * MIB]
    assert len(helper) == 1
    assert memory["idle_rss_bytes"] >= 100 * MIB + 5 * MIB
    assert not psutil.pid_exists(helper[0]["pid"]) or \
        psutil.Process(helper[0]["pid"]).status() == psutil.STATUS_ZOMBIE
    assert row.shutdown["how"] == "sigkill"  # the helper ignores EOF and SIGTERM
    assert [o["pid"] for o in row.orphans] == [helper[0]["pid"]]


def test_sharing_lists_a_second_copy_of_the_server(fake):
    command = fake()
    other = subprocess.Popen(command.argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    try:
        row, _, error = session_row(command)
    finally:
        other.stdin.close()
        other.wait()
    assert error is None
    assert {"pid": other.pid, "mcpstart": False} in row.memory["sharing"]  # no command line


def test_a_bystander_child_of_the_host_program_is_left_alone(fake):
    bystander = subprocess.Popen(["sleep", "30"])
    try:
        with child_subreaper():
            row, _, error = session_row(fake("--escape"))
        assert error is None
        assert bystander.poll() is None  # not signalled
        assert bystander.pid not in [p["pid"] for p in row.memory["processes"]]
    finally:
        bystander.terminate()
    assert bystander.wait(5) == -15  # its own wait() still returns its status


def test_settle_rule_holds_for_every_process_whatever_its_runtime():
    rule = SettleRule()
    flat = Curve()
    for step in range(101):
        flat.add(step / 10, {1: 60 * MIB, 2: 40 * MIB})
    assert rule.settled(flat)  # 10 s of flat memory: settled
    early = Curve()
    for step in range(50):
        early.add(step / 10, {1: 60 * MIB})
    assert not rule.settled(early)  # flat, but the 10 s floor has not passed
    dropped = Curve()  # a launcher frees 40 MiB 9 s in; its child stays flat
    for step in range(181):
        dropped.add(step / 10, {1: (80 if step < 90 else 40) * MIB, 2: 30 * MIB})
    assert not rule.settled(dropped)  # the drop is inside the last 10 s
    for step in range(181, 191):
        dropped.add(step / 10, {1: 40 * MIB, 2: 30 * MIB})
    assert rule.settled(dropped)
    moving = Curve()  # the tree's sum is flat, one process grows while the other shrinks
    for step in range(120):
        moving.add(step / 10, {1: (50 + step) * MIB, 2: (200 - step) * MIB})
    assert not rule.settled(moving)


def settle_replay(rule: SettleRule, readings) -> tuple[float, int]:
    """Replay ``readings(t)`` (pid -> RSS bytes at ``t`` s) on the rule's sampling interval
    until it settles: (the time, the tree's RSS read then); fails past ``max_s``."""
    curve = Curve()
    for step in range(round(rule.max_s / rule.interval_s) + 1):
        curve.add(step * rule.interval_s, readings(step * rule.interval_s))
        if rule.settled(curve):
            return curve.t_s[-1], curve.total[-1]
    pytest.fail(f"not settled in {rule.max_s} s")


def test_settle_rule_waits_out_a_launchers_second_drop():
    """A launcher that frees 24 MiB 1.7 s into the wait and 24 MiB more 9 s later, past the
    10 s floor (a uv launcher did so): the idle figure is within 3% of the final RSS, read
    once 10 s passed without a drop; memory that never drops still settles at the floor."""
    def launcher(t: float) -> dict[int, int]:
        return {1: (20 + 24 * (t < 1.7) + 24 * (t < 10.7)) * MIB, 2: 12 * MIB}

    rule = SettleRule()
    at, idle = settle_replay(rule, launcher)
    final = sum(launcher(rule.max_s).values())
    assert abs(idle - final) <= 0.03 * final
    assert at == pytest.approx(10.7 + rule.drop_window_s, abs=0.15)
    assert settle_replay(rule, lambda t: {1: 60 * MIB})[0] == pytest.approx(rule.min_s)


def test_payload_text_has_no_symmetry():
    text = payload_text(1000)
    assert len(text) == 1000 and text.isascii() and text != text[::-1]
    assert UNICODE_CHECK[::-1] != UNICODE_CHECK
    assert "\U0001F600" in UNICODE_CHECK and "e\u0301" in UNICODE_CHECK


def test_call_arguments_get_the_payload():
    call = ToolCall("echo", {"message": "say {payload}!", "n": 3, "nested": ["{payload}"]})
    assert call.params("abc") == {"name": "echo", "arguments": {
        "message": "say abc!", "n": 3, "nested": ["abc"]}}
    assert not call.verifiable and ToolCall().verifiable


@pytest.mark.parametrize("reply, cause", [
    ('initialize={"error": {"code": -32602, "message": "bad version"}}',
     "initialize returned JSON-RPC error -32602: bad version"),
    ('initialize={"result": {"protocolVersion": ["a"]}}', 'no protocolVersion string: ["a"]'),
    ('tools/list={"result": {"tools": null}}', "tools/list result has no tools list: 'None'"),
    ('tools/call={"result": {"content": null}}', "tools/call reverse_text: the result has no "
                                                 "content list"),
])
def test_malformed_results_fail_with_the_cause(fake, reply, cause):
    row, _, error = session_row(fake("--reply", reply))
    assert isinstance(error, ProbeError)
    assert cause in str(error)


def test_wrong_reversal_is_detected_and_output_schemas_counted(fake):
    row, _, error = session_row(fake("--wrong-reverse", "--output-schema", "--pages", "3"))
    assert error is None
    assert row.tools["with_output_schema"] == 3 and row.tools["output_schema"] is True
    assert row.tools["structured_content"] is False
    assert row.payload["verified"] is True  # ASCII reverses the same by UTF-16 units
    assert row.payload["unicode_verified"] is False  # the emoji's surrogates swap


def test_another_tool_is_called_with_the_payload_unverified(fake):
    row, _, error = session_row(fake(), call=ToolCall("reverse_text", {"text": "x{payload}"}))
    assert error is None
    assert row.payload["verified"] is None and row.payload["is_error"] is False


def test_a_server_without_the_tool_is_said_plainly(fake):
    row, _, error = session_row(fake("--reply", 'tools/list={"result": {"tools": []}}'))
    assert error is None
    assert row.payload is None and row.tools["count"] == 0
    assert row.not_measured["payload"].startswith("the server lists no reverse_text tool")
    assert row.tools["output_schema"] is None and row.tools["structured_content"] is None


# the revision matrix
def _matrix(command):
    wait = revisions.probe_wait(fast(probe_timeout_s=1), [], "cold start")
    protocol, warnings = revisions.derive(revisions.matrix(command, fast(), wait["s"]), wait)
    return protocol, warnings, {(r["method"], r["requested"]): r for r in protocol["matrix"]}


def test_legacy_server_that_exits_on_discover(fake):
    protocol, _, rows = _matrix(fake("--exit-on-discover"))
    assert rows[("server/discover", "2026-07-28")]["outcome"] == "exited"
    assert protocol["era"] == "legacy" and protocol["discover_versions"] is None
    assert "2025-11-25" in protocol["supported_revisions"]


@pytest.mark.e2e  # a real timing: a real probe timeout
def test_discover_that_never_answers_ends_at_the_probe_timeout(fake):
    start = time.monotonic()
    protocol, _, rows = _matrix(fake("--silent-discover"))
    assert rows[("server/discover", "2026-07-28")]["outcome"] == "no_answer"
    assert 1000 <= rows[("server/discover", "2026-07-28")]["ms"] < 2000
    assert time.monotonic() - start < 15
    assert protocol["era"] == "legacy"


@pytest.mark.parametrize("code", [-32022, -32004, -32602])
def test_modern_only_server_rejecting_initialize(fake, code):
    protocol, _, rows = _matrix(fake("--discover", "2026-07-28", "--reject-initialize", str(code)))
    init = rows[("initialize", "2025-11-25")]
    assert init["outcome"] == "error" and init["error_code"] == code
    assert init["error_data"] == {"supported": ["2026-07-28"], "requested": "2025-11-25"}
    assert protocol["era"] == "modern" and protocol["supported_revisions"] == ["2026-07-28"]
    assert protocol["discover"]["server_info"] == {"name": "fake-modern", "version": "1"}


def test_dual_server_and_a_pinned_era(fake):
    protocol, _, _ = _matrix(fake("--discover", "2026-07-28", "--era-pinned"))
    assert protocol["era"] == "dual"  # each probe in its own process: the pin never bites
    assert {"2025-11-25", "2026-07-28"} <= set(protocol["supported_revisions"])
    assert revisions.speaks_modern(protocol)


def test_a_revision_not_asked_for_is_recorded_verbatim(fake):
    protocol, _, rows = _matrix(fake("--revision", "2025-03-26"))
    assert rows[("initialize", "2024-11-05")]["answered"] == "2025-03-26"
    assert protocol["supported_revisions"] == ["2025-03-26"]


def test_initialize_asking_the_modern_revision_is_one_probe_of_the_matrix(fake):
    """The published table's experiment: initialize asking 2026-07-28. One server echoes it,
    one negotiates down, one rejects it: each answer kept as it came."""
    echoes, _, rows = _matrix(fake())
    accepted = rows[("initialize", "2026-07-28")]
    assert (accepted["outcome"], accepted["answered"]) == ("answered", "2026-07-28")
    assert accepted["result"]["protocolVersion"] == "2026-07-28"
    assert accepted["result"]["serverInfo"] == {"name": "fake", "version": "0"}
    assert "result" not in rows[("initialize", "2025-11-25")]  # only this probe keeps it
    assert echoes["initialize_modern"] == {
        "outcome": "answered", "answered": "2026-07-28", "error_code": None, "error_message": None,
        "wait_s": 1}
    down, _, rows = _matrix(fake("--revision", "2025-11-25"))
    assert rows[("initialize", "2026-07-28")]["answered"] == "2025-11-25"
    rejects, _, rows = _matrix(fake("--discover", "2026-07-28", "--reject-initialize", "-32022"))
    rejected = rows[("initialize", "2026-07-28")]
    assert (rejected["outcome"], rejected["error_code"], rejected["answered"]) == (
        "error", -32022, None)
    assert rejected["error_data"] == {"supported": ["2026-07-28"], "requested": "2026-07-28"}
    assert rejected["result"] is None
    table = [{"name": n, "protocol": p} for n, p in (
        ("rust", echoes), ("go", down), ("typescript", rejects))]
    from mcpstart.views.table import ROWS, cell

    row = next(r for r in ROWS if r.path == "protocol.initialize_modern")
    assert [cell(s, row) for s in table] == ["2026-07-28", "2025-11-25 (down)",
                                             "rejected: error -32022"]


def test_discover_without_result_type_is_not_modern(fake):
    protocol, warnings, _ = _matrix(fake("--discover", "2026-07-28", "--discover-no-result-type"))
    assert protocol["era"] == "legacy" and protocol["discover_versions"] is None
    assert warnings[0]["kind"] == "protocol" and "without resultType" in warnings[0]["detail"]


@pytest.mark.e2e
def test_idle_memory_is_read_after_a_launcher_frees_what_it_held_in_two_steps():
    """A launcher that holds 2 x 24 MiB and frees them 2 s and 11 s after its start (9 s
    apart, the second past the 10 s floor, as a uv launcher did): by the default settle rule
    (no runtime named) the idle figure is within 3% of the tree's final settled RSS, and the
    curve that shows both drops is kept. The one test of the default rule on a real clock."""
    row, _, error = session_row(fake_command("--launcher-frees", "24:2,24:11"),
                                timeout_s=30, settle=SettleRule())
    assert error is None
    memory = row.memory
    launcher = next(p for p in memory["processes"] if p["pid"] == row_leader(memory))
    series = memory["settle_curve"]["per_process"][str(launcher["pid"])]
    assert max(v for v in series if v) - series[-1] >= 46 * MIB  # both drops in the curve
    assert launcher["idle_rss_bytes"] < 30 * MIB  # after both: about 10 MiB of Python
    final = memory["before_call_rss_bytes"]  # the idle tree once more, just before the call
    assert abs(memory["idle_rss_bytes"] - final) <= 0.03 * final
    assert memory["idle_rss_bytes"] == sum(p["idle_rss_bytes"] for p in memory["processes"])


def row_leader(memory: dict) -> int:
    """The spawned process: the one whose parent is not in the tree."""
    pids = {p["pid"] for p in memory["processes"]}
    return next(p["pid"] for p in memory["processes"] if p["ppid"] not in pids)


def test_the_large_calls_peak_carries_no_growth_of_the_round_trips(fake):
    """Small calls that each keep 40 MiB (a model loaded on the first conversions): the large
    call runs from the idle session, before the round trips, and the memory just before it is
    a figure of its own."""
    row, _, error = session_row(fake("--grow-on-small", "40"), round_trips=3)
    assert error is None and row.round_trip_ms["n"] == 3
    memory = row.memory
    assert memory["peak_state"] == "the idle session, before the warm round trips"
    assert abs(memory["before_call_rss_bytes"] - memory["idle_rss_bytes"]) < 4 * MIB
    assert memory["peak_rss_bytes_payload"] - memory["before_call_rss_bytes"] < 30 * MIB
