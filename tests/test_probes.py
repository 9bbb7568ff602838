"""Probes, memory of process trees, and the revision matrix, against the fake server."""

import subprocess
import time

import psutil
import pytest

from mcpstart.measure import revisions
from mcpstart.measure.memory import SettleRule
from mcpstart.measure.client import ProbeError, Skips
from mcpstart.measure.cold import cold_start
from mcpstart.wire import UNICODE_CHECK, ToolCall, payload_text
from mcpstart.stdio.tree import child_subreaper, is_subreaper

from conftest import fast
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
    row, _, error = session_row(fake("--helper-mib", "150", "--helper-exits-on-call"))
    assert error is None
    memory = row.memory
    assert memory["idle_rss_bytes"] >= 150 * MIB
    assert memory["peak_rss_bytes_payload"] < memory["idle_rss_bytes"]
    helper = next(p for p in memory["processes"] if p["exited"])
    warning = next(w for w in row.warnings if w["kind"] == "memory")
    assert f"{helper['name']} (pid {helper['pid']}) exited in between" in warning["detail"]


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
    assert other.pid in [p["pid"] for p in row.memory["sharing"]]


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


def test_settle_rule_waits_for_a_late_drop_and_ends_early_on_flat_memory():
    rule = SettleRule()
    flat = [(t / 10, 100 * MIB) for t in range(31)]
    assert rule.settled(flat, node=False)
    assert not rule.settled(flat, node=True)  # V8's memory reducer has not run yet
    dropped = [(t / 10, (100 if t < 86 else 87) * MIB) for t in range(100)]
    assert not rule.settled(dropped, node=True)  # the 13% drop is inside the last 3 s
    settled = [(t / 10, (100 if t < 86 else 87) * MIB) for t in range(117)]
    assert rule.settled(settled, node=True)
    climbing = [(t / 10, int((100 + t) * MIB)) for t in range(50)]
    assert not rule.settled(climbing, node=False)  # 1%/s slope


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
    protocol, warnings = revisions.derive(revisions.matrix(command, fast(probe_timeout_s=1)))
    return protocol, warnings, {(r["method"], r["requested"]): r for r in protocol["matrix"]}


def test_legacy_server_that_exits_on_discover(fake):
    protocol, _, rows = _matrix(fake("--exit-on-discover"))
    assert rows[("server/discover", "2026-07-28")]["outcome"] == "exited"
    assert protocol["era"] == "legacy" and protocol["discover_versions"] is None
    assert "2025-11-25" in protocol["supported_revisions"]


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


def test_discover_without_result_type_is_not_modern(fake):
    protocol, warnings, _ = _matrix(fake("--discover", "2026-07-28", "--discover-no-result-type"))
    assert protocol["era"] == "legacy" and protocol["discover_versions"] is None
    assert warnings[0]["kind"] == "protocol" and "without resultType" in warnings[0]["detail"]
