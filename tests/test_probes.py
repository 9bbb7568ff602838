import pytest

from mcpstart.measure.probes import UNICODE_CHECK, ProbeError, handshake_series, payload_text, tool_session
from mcpstart.stdio.session import SessionError

MIB = 1024 * 1024
REV = "2025-11-25"


def test_warmup_runs_are_recorded_but_not_counted(fake):
    said = []
    series = handshake_series(fake(), runs=3, warmup=2, revision=REV, timeout_s=10,
                              progress=said.append)
    block = series["handshake_ms"]
    assert block["n"] == 3 and len(block["samples"]) == 3 and len(block["warmup_samples"]) == 2
    assert block["median"] == sorted(block["samples"])[1]
    assert series["first_byte_ms"]["n"] == 3
    assert said == ["handshake warm-up 1/2", "handshake warm-up 2/2", "handshake run 1/3",
                    "handshake run 2/3", "handshake run 3/3"]
    assert series["negotiated_revision"] == REV


def test_negotiated_revision_is_recorded_verbatim(fake):
    series = handshake_series(fake("--revision", "2024-11-05"), 1, 0, REV, 10)
    assert series["negotiated_revision"] == "2024-11-05"


def test_peak_memory_of_a_call_is_exact_high_water_mark(fake):
    result = tool_session(fake("--alloc-mib", "96"), REV, 30, payload_bytes=1000)
    memory = result["memory"]
    assert memory["peak_method"] == "vmhwm"
    grown = memory["peak_rss_bytes_payload"] - memory["idle_rss_bytes"]
    assert 90 * MIB <= grown <= 140 * MIB
    assert memory["processes"][0]["peak_rss_bytes_payload"] == memory["peak_rss_bytes_payload"]
    # sampled RSS never sees more than the high-water mark, up to the kernel's per-CPU
    # RSS counter slack (a few hundred KiB)
    assert memory["peak_rss_bytes_sampled"] <= memory["peak_rss_bytes_payload"] + MIB
    assert memory["peak_rss_bytes_sampled"] >= memory["idle_rss_bytes"] + 60 * MIB


def test_tools_block_and_wrong_reversal_detected(fake):
    result = tool_session(fake("--wrong-reverse", "--output-schema"), REV, 30, payload_bytes=1000)
    assert result["tools"] == {"count": 1, "list_bytes": result["tools"]["list_bytes"],
                               "output_schema": True, "structured_content": False}
    assert result["tools"]["list_bytes"] > 100
    assert result["payload"]["verified"] is True  # ASCII reverses the same by UTF-16 units
    assert result["payload"]["unicode_verified"] is False  # the emoji's surrogates swap


def test_payload_text_has_no_symmetry():
    text = payload_text(1000)
    assert len(text) == 1000 and text.isascii() and text != text[::-1]
    assert UNICODE_CHECK[::-1] != UNICODE_CHECK
    assert "\U0001F600" in UNICODE_CHECK and "e\u0301" in UNICODE_CHECK


@pytest.mark.parametrize("reply, cause", [
    ('initialize={"error": "boom"}', "initialize returned a malformed JSON-RPC error: 'boom'"),
    ('initialize={"error": {"code": -32602, "message": "bad version"}}',
     "initialize returned JSON-RPC error -32602: bad version"),
    ('initialize={"result": {"protocolVersion": ["a"]}}', "no protocolVersion string: \"['a']\""),
    ('initialize={"result": {"protocolVersion": null}}', "no protocolVersion string: 'None'"),
    ('tools/list={"result": {"tools": null}}', "tools/list result has no tools list: 'None'"),
    ('tools/list={"result": {"tools": "reverse_text"}}', "has no tools list: 'reverse_text'"),
    ('tools/call={"result": {"content": null}}', "tools/call result has no content list"),
    ('tools/call={"result": {"content": [], "isError": true}}', "reported isError"),
])
def test_malformed_answers_fail_with_the_cause(fake, reply, cause):
    with pytest.raises(ProbeError) as err:
        tool_session(fake("--reply", reply), REV, 10, payload_bytes=1000)
    assert cause in str(err.value)


@pytest.mark.parametrize("answer_id", ["true", '"1"', "null"])
def test_an_answer_with_another_id_is_not_taken_and_is_shown(fake, answer_id):
    reply = f'initialize={{"id": {answer_id}, "error": {{"code": -32700, "message": "Parse error"}}}}'
    with pytest.raises(SessionError) as err:
        handshake_series(fake("--reply", reply), 1, 0, REV, timeout_s=1)
    message = str(err.value)
    assert "no response to request 1 within 1 s" in message
    assert f'it sent a response mcpstart did not ask for: \'{{"jsonrpc": "2.0", "id": {answer_id}, ' \
           '"error": {"code": -32700, "message": "Parse error"}}\'' in message
