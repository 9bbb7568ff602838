"""Each family in ../shared/fault-cases.md, against the fake server: the right value, no hang,
no process left behind."""

import json
import os
import sys
import time

import psutil
import pytest

from mcpstart.measure.probes import handshake, initialize_request, tool_session
from mcpstart.stdio.session import Command, FramingError, SessionError, StdioSession, Traffic

from conftest import FAKE

REV = "2025-11-25"


def open_session(command: Command) -> StdioSession:
    return StdioSession.spawn(command, first_request=initialize_request(REV))


def assert_gone(pids):
    for pid in pids:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_plain_server_handshake_and_eof_shutdown(fake):
    sample = handshake(fake(), REV, timeout_s=10)
    assert sample["negotiated_revision"] == REV
    assert sample["server_info"] == {"name": "fake", "version": "0"}
    assert 0 < sample["first_byte_ms"] <= sample["handshake_ms"] < 10_000
    assert sample["shutdown"]["how"] == "eof"
    assert sample["shutdown"]["orphans"] == []
    assert sample["traffic"] == Traffic()


# 1. text on stdout that is not JSON-RPC
def test_banner_and_non_jsonrpc_lines_are_skipped_and_counted(fake):
    session = open_session(fake("--banner", "--not-jsonrpc", "--debug-mid"))
    try:
        response = session.wait_response(1, 10)
        assert response.message["result"]["protocolVersion"] == REV
        listing = session.request("tools/list", {}, 10)
        assert listing.message["result"]["tools"][0]["name"] == "reverse_text"
    finally:
        session.shutdown()
    # banner + {"status": "ready"} + three debug lines
    assert session.traffic.noise_lines == 5
    assert session.traffic.noise_example == "fake-server v0.0.1 starting up"
    assert "skipped 5 stdout line(s)" in session.traffic.warnings()[0]


def test_handshake_is_timed_to_the_awaited_line_not_the_banner(fake):
    session = open_session(fake("--banner", "--slow-start", "1"))
    try:
        response = session.wait_response(1, 10)
    finally:
        session.shutdown()
    assert (response.at_ns - session.t0_ns) / 1e6 > 900  # the slept second is inside
    assert session.first_byte_ns <= response.at_ns


# 2. notifications before the initialize response
def test_notifications_before_initialize_are_recorded(fake):
    session = open_session(fake("--notify-first"))
    try:
        assert "result" in session.wait_response(1, 10).message
    finally:
        session.shutdown()
    assert session.traffic.notifications == ["notifications/message",
                                             "notifications/tools/list_changed"]


# 3. CRLF line ends
def test_crlf_is_accepted_and_noted(fake):
    session = open_session(fake("--crlf"))
    try:
        assert session.wait_response(1, 10).message["result"]["protocolVersion"] == REV
        session.request("tools/list", {}, 10)
    finally:
        session.shutdown()
    assert session.traffic.crlf_lines == 2
    assert "2 line(s) ended in CRLF (accepted)" in session.traffic.warnings()


# 4. Content-Length framing
def test_content_length_reply_is_diagnosed_as_lsp_framing(fake):
    session = open_session(fake("--lsp-reply"))
    try:
        with pytest.raises(FramingError, match="Content-Length \\(LSP-style\\) framing"):
            session.wait_response(1, 10)
    finally:
        session.shutdown()


def test_silent_lsp_server_is_diagnosed_not_a_bare_timeout(fake):
    start = time.monotonic()
    with pytest.raises(SessionError) as err:
        handshake(fake("--lsp"), REV, timeout_s=1)
    assert "no response to request 1 within 1 s (nothing at all on stdout)" in str(err.value)
    assert "Content-Length (LSP-style) framing" in str(err.value)
    assert time.monotonic() - start < 10


# 5. large results in pieces, stderr flood
def test_large_chunked_result_with_stderr_flood(fake):
    result = tool_session(fake("--chunked", "--stderr-bytes", str(1 << 20)), REV, 30,
                          payload_bytes=5 * 1024 * 1024)
    payload = result["payload"]
    assert payload["verified"] and payload["unicode_verified"]
    assert payload["request_bytes"] == 5 * 1024 * 1024
    envelope = {"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": ""}]}}
    assert payload["response_bytes"] == 5 * 1024 * 1024 + len(json.dumps(envelope))
    assert result["shutdown"]["how"] == "eof"


# 6. slow start with progress on stderr
def test_slow_start_within_timeout_succeeds(fake):
    sample = handshake(fake("--slow-start", "2"), REV, timeout_s=10)
    assert sample["handshake_ms"] >= 2000


def test_slow_start_past_timeout_fails_with_stderr(fake):
    start = time.monotonic()
    with pytest.raises(SessionError) as err:
        handshake(fake("--slow-start", "30"), REV, timeout_s=1)
    assert time.monotonic() - start < 12
    assert "no response to request 1 within 1 s" in str(err.value)
    assert "downloading... 1/30" in str(err.value)


# 7. exits at once
def test_exit_at_once_reports_code_time_and_stderr(fake):
    start = time.monotonic()
    with pytest.raises(SessionError) as err:
        handshake(fake("--need-env", "FOO_API_KEY"), REV, timeout_s=30)
    assert time.monotonic() - start < 5  # no timeout wait
    message = str(err.value)
    assert "exited with code 1 after" in message and "before answering" in message
    assert "Error: FOO_API_KEY not set" in message
    elapsed = float(message.split("after ")[1].split(" ms")[0])
    assert 50 <= elapsed < 3000


def test_env_from_command_reaches_the_server(fake):
    sample = handshake(fake("--need-env", "FOO_API_KEY", env={"FOO_API_KEY": "x"}), REV, 10)
    assert sample["negotiated_revision"] == REV


# 8. never flushes stdout
def test_unflushed_stdout_is_diagnosed(fake):
    with pytest.raises(SessionError, match="answer came only after stdin was closed"):
        handshake(fake("--no-flush"), REV, timeout_s=1)


# 9. wrapper chains, inner process ignores SIGTERM
def test_shell_wrapper_tree_is_summed_and_reclaimed():
    inner = f"{sys.executable} {FAKE} --trap-term --ignore-eof"
    command = Command(["sh", "-c", inner], None, {})
    session = open_session(command)
    try:
        session.wait_response(1, 10)
        procs = session.tree()
        pids = [p.pid for p in procs]
    finally:
        shutdown = session.shutdown()
    assert len(pids) == 2  # sh and python: sh -c without exec keeps the shell
    assert shutdown["how"] == "sigkill"
    assert shutdown["orphans"] == []
    assert_gone(pids)


def test_tree_memory_is_summed_per_process():
    inner = f"{sys.executable} {FAKE} --child"
    result = tool_session(Command(["sh", "-c", inner], None, {}), REV, 30, payload_bytes=1000)
    memory = result["memory"]
    names = sorted(p["name"] for p in memory["processes"])
    assert len(names) == 3 and "sh" in names  # sh -> fake server -> sleeping child
    assert memory["idle_rss_bytes"] == sum(p["idle_rss_bytes"] for p in memory["processes"])
    assert memory["idle_pss_bytes"] == sum(p["idle_pss_bytes"] for p in memory["processes"])
    assert memory["idle_uss_bytes"] <= memory["idle_pss_bytes"] <= memory["idle_rss_bytes"]
    assert result["shutdown"]["how"] == "sigkill"  # the child ignores SIGTERM and EOF


def test_escaped_descendant_is_reported_as_orphan_and_killed(fake):
    session = open_session(fake("--escape"))
    try:
        session.wait_response(1, 10)
        time.sleep(0.3)
        escaped = [p.pid for p in session.tree() if os.getpgid(p.pid) != session.pid]
    finally:
        shutdown = session.shutdown()
    assert len(escaped) == 1
    assert [o["pid"] for o in shutdown["orphans"]] == escaped
    assert "signal.SIG_IGN" in " ".join(shutdown["orphans"][0]["cmdline"])
    assert_gone(escaped)


# 10. ignores EOF, traps SIGTERM
def test_ignores_eof_needs_sigterm(fake):
    sample = handshake(fake("--ignore-eof"), REV, 10)
    assert sample["shutdown"]["how"] == "sigterm"
    assert sample["shutdown"]["ms"] >= 1900  # the EOF grace period was waited out


def test_traps_sigterm_needs_sigkill(fake):
    sample = handshake(fake("--ignore-eof", "--trap-term"), REV, 10)
    assert sample["shutdown"]["how"] == "sigkill"
    assert sample["shutdown"]["exit_code"] == -9


# 11. server-to-client requests before answering
def test_server_requests_are_answered(fake):
    session = open_session(fake("--ask-first"))
    try:
        response = session.wait_response(1, 5)
    finally:
        session.shutdown()
    assert response.message["result"]["protocolVersion"] == REV
    assert session.traffic.server_requests == ["ping", "roots/list"]


def test_cannot_start_missing_program():
    with pytest.raises(SessionError, match="cannot start '/nonexistent/server'"):
        StdioSession.spawn(Command(["/nonexistent/server"]))


def test_endless_line_fails_without_buffering_it_all(monkeypatch):
    monkeypatch.setattr("mcpstart.stdio.session.MAX_LINE_BYTES", 1 << 20)
    writer = "import sys\nwhile True: sys.stdout.write('x' * 65536)"
    start = time.monotonic()
    with pytest.raises(SessionError, match="more than 1 MiB on stdout without a newline"):
        handshake(Command([sys.executable, "-c", writer]), REV, timeout_s=30)
    assert time.monotonic() - start < 10
