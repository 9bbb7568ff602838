"""Each family in docs/faults.md, against the fake server: the right value, no hang,
no process left behind."""

import json
import os
import sys
import time

import psutil
import pytest

from mcpstart.measure.client import Skips
from mcpstart.measure.cold import cold_start
from mcpstart.measure.warm import tool_session
from mcpstart.wire import ToolCall, initialize_request
from mcpstart.measure.startup import one_start
from mcpstart.results import ServerResult
from mcpstart.command import Command
from mcpstart.transports.session import (Exited, FramingError, NoAnswer, Session,
                                    SessionError, Traffic)

from conftest import FAKE, FAST, PYTHON_LINE, fast, start
from scripted import Spawner, Timed

REV = "2025-11-25"


def open_session(command: Command) -> Session:
    return start(command, initialize_request(REV))


def handshake(command: Command, timeout_s: float = 10) -> dict:
    return cold_start(command, fast(timeout_s=timeout_s), Skips())


def session_row(command: Command, timeout_s: float = 10, **settings) -> tuple[ServerResult, Traffic, Exception | None]:
    """Run a tool session into a fresh row; returns the row, the traffic and the error."""
    row, traffic = ServerResult("fake"), Traffic()
    settings = fast(timeout_s=timeout_s, payload_bytes=settings.pop("payload_bytes", 200_000),
                    round_trips=settings.pop("round_trips", 3), **settings)
    error = None
    try:
        tool_session(command, settings, row, Skips(), traffic)
    except SessionError as err:
        error = err
    return row, traffic, error


def assert_gone(pids):
    for pid in pids:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_plain_server_handshake_and_eof_shutdown(fake):
    sample = handshake(fake())
    assert sample["negotiated_revision"] == REV
    assert sample["server_info"] == {"name": "fake", "version": "0"}
    assert 0 < sample["first_byte"] <= sample["handshake"] < 10_000
    assert sample["shutdown"].how == "eof" and sample["shutdown"].exit_code == 0
    assert sample["shutdown"].orphans == []
    assert sample["traffic"] == Traffic()


# 1. text on stdout that is not JSON-RPC
def test_banner_and_non_jsonrpc_lines_are_skipped_and_counted(fake):
    session = open_session(fake("--banner", "--not-jsonrpc", "--debug-mid"))
    try:
        response = session.wait(1, 10)
        assert response.message["result"]["protocolVersion"] == REV
        listing = session.request("tools/list", {}, 10)
        assert listing.message["result"]["tools"][0]["name"] == "reverse_text"
    finally:
        session.shutdown()
    # banner + {"status": "ready"} + three debug lines
    assert session.traffic.noise_lines == 5
    assert session.traffic.noise_example == "fake-server v0.0.1 starting up"
    assert "skipped 5 stdout line(s)" in session.traffic.warnings()[0]["detail"]


def test_a_last_line_that_starts_like_json_and_never_completes_is_counted():
    """A line held to be joined to the next (a JSON value over several lines) is noise once
    the server exits: counted and named, not dropped."""
    with pytest.raises(Exited) as err:
        handshake(Command(["sh", "-c", "echo one; echo '{two'; exit 3"]))
    assert "it wrote 2 stdout line(s) that are not JSON-RPC, first: 'one'" in str(err.value)


def test_handshake_is_timed_to_the_awaited_line_not_the_banner(fake):
    session = open_session(fake("--banner", "--slow-start", "1"))
    try:
        response = session.wait(1, 10)
    finally:
        session.shutdown()
    assert (response.at_ns - session.t0_ns) / 1e6 > 900  # the slept second is inside
    assert session.transport.first_byte_ns <= response.at_ns


# 2. notifications before the initialize response
def test_notifications_before_initialize_are_recorded(fake):
    session = open_session(fake("--notify-first"))
    try:
        assert "result" in session.wait(1, 10).message
    finally:
        session.shutdown()
    assert session.traffic.notifications == {"notifications/message": 1,
                                             "notifications/tools/list_changed": 1}


# 3. CRLF line ends
def test_crlf_is_accepted_and_noted(fake):
    session = open_session(fake("--crlf"))
    try:
        assert session.wait(1, 10).message["result"]["protocolVersion"] == REV
        session.request("tools/list", {}, 10)
    finally:
        session.shutdown()
    assert session.traffic.crlf_lines == 2
    assert {"kind": "crlf", "metric": None,
            "detail": "2 line(s) ended in CRLF (accepted)"} in session.traffic.warnings()


# 4. Content-Length framing
def test_content_length_reply_is_diagnosed_as_lsp_framing(fake):
    session = open_session(fake("--lsp-reply"))
    try:
        with pytest.raises(FramingError, match="Content-Length \\(LSP-style\\) framing"):
            session.wait(1, 10)
    finally:
        session.shutdown()


def test_silent_lsp_server_is_diagnosed_not_a_bare_timeout(fake):
    with pytest.raises(SessionError) as err:
        handshake(fake("--lsp"), timeout_s=1)
    assert "no answer to initialize within 1 s (nothing at all on stdout)" in str(err.value)
    assert "Content-Length (LSP-style) framing" in str(err.value)


def test_a_silent_server_is_told_every_wait_the_diagnosis_added_to_the_timeout(fake):
    """A timeout's cause names each wait after it, so the time a user waited adds up: the
    listen after stdin was closed and the fresh process's framed ping."""
    with pytest.raises(SessionError) as err:
        handshake(fake("--slow-start", "30", "--ignore-eof"), timeout_s=0.5)
    diagnosis_s = FAST.waits.diagnosis_s
    assert (f"no answer to initialize within 0.5 s (nothing at all on stdout); nothing in the "
            f"{diagnosis_s:g} s after stdin was closed; nor did a fresh process answer a "
            f"Content-Length framed ping in {min(0.5, 2 * diagnosis_s):g} s") in str(err.value)


def test_a_silent_stdio_server_that_listens_is_told_it_looks_like_an_http_server():
    """An HTTP server given as a stdio command (no {port}) writes nothing on stdout and
    listens: the timeout's cause names where, and what to give instead."""
    from conftest import PYTHON
    listens = ("import socket, time\ns = socket.socket()\ns.bind(('127.0.0.1', 0))\n"
               "s.listen()\nprint('port', s.getsockname()[1], flush=True, file=__import__("
               "'sys').stderr)\ntime.sleep(30)\n")
    with pytest.raises(SessionError) as err:
        handshake(Command([*PYTHON, "-c", listens]), timeout_s=0.5)
    port = str(err.value).split("port ")[-1].split()[0]
    assert (f"it listens on 127.0.0.1:{port} and wrote nothing on stdout: an HTTP server? "
            "Put {port} in its command") in str(err.value)
    with pytest.raises(SessionError) as quiet:  # silent, listening nowhere: not said
        handshake(Command([*PYTHON, "-c", "import time; time.sleep(30)"]), timeout_s=0.5)
    assert "listens" not in str(quiet.value)


# 5. large results in pieces, stderr flood
def test_large_chunked_result_with_stderr_flood(fake):
    row, _, error = session_row(fake("--chunked", "--stderr-bytes", str(1 << 20)), 30,
                                payload_bytes=5 * 1024 * 1024, round_trips=0)
    assert error is None
    payload = row.payload
    assert payload["verified"] and payload["unicode_verified"]
    assert payload["request_bytes"] == 5 * 1024 * 1024
    envelope = {"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": ""}]}}
    assert payload["response_bytes"] == 5 * 1024 * 1024 + len(json.dumps(envelope))
    assert row.shutdown["how"] == "eof"


# 6. slow start with progress on stderr
def test_slow_start_within_timeout_succeeds(fake):
    assert handshake(fake("--slow-start", "0.5"))["handshake"] >= 500


def test_slow_start_past_timeout_fails_with_stderr(fake):
    with pytest.raises(NoAnswer) as err:  # waiting out the 30 s start would bring the answer
        handshake(fake("--slow-start", "30"), timeout_s=0.5)
    assert "no answer to initialize within 0.5 s" in str(err.value)
    assert "downloading... 1/30" in str(err.value)


# 7. exits at once
def test_exit_at_once_reports_code_time_and_stderr(fake):
    with pytest.raises(Exited) as err:  # the timeout's cause would be "no answer within 60 s"
        handshake(fake("--need-env", "FOO_API_KEY"), timeout_s=60)
    message = str(err.value)
    assert message.startswith("initialize: the server exited with code 1 after ")
    assert "before answering" in message and "Error: FOO_API_KEY not set" in message
    elapsed = float(message.split("after ")[1].split(" ms")[0])
    assert 0 < elapsed < 60_000  # the exit's own time, inside the timeout


def test_env_from_command_reaches_the_server(fake):
    assert handshake(fake("--need-env", "FOO_API_KEY", env={"FOO_API_KEY": "x"}))[
        "negotiated_revision"] == REV


# 8. never flushes stdout
def test_unflushed_stdout_is_diagnosed(fake):
    with pytest.raises(SessionError, match="answer came only after stdin was closed"):
        handshake(fake("--no-flush"), timeout_s=1)


# 9. wrapper chains, inner process ignores SIGTERM
def test_shell_wrapper_tree_is_reclaimed():
    inner = f"{PYTHON_LINE} {FAKE} --trap-term --ignore-eof"
    session = open_session(Command(["sh", "-c", inner]))
    try:
        session.wait(1, 10)
        pids = [p.pid for p in session.processes.scan()]
    finally:
        shutdown = session.shutdown()
    assert len(pids) == 2  # sh and python: sh -c without exec keeps the shell
    assert shutdown.how == "sigkill"
    assert shutdown.orphans == []
    assert_gone(pids)


def test_tree_memory_is_summed_per_process():
    row, _, error = session_row(Command(["sh", "-c", f"{PYTHON_LINE} {FAKE} --child"]))
    assert error is None
    memory = row.memory
    names = sorted(p["name"] for p in memory["processes"])
    assert len(names) == 3 and "sh" in names  # sh -> fake server -> sleeping child
    assert memory["idle_rss_bytes"] == sum(p["idle_rss_bytes"] for p in memory["processes"])
    assert memory["idle_pss_bytes"] == sum(p["idle_pss_bytes"] for p in memory["processes"])
    assert memory["idle_uss_bytes"] <= memory["idle_pss_bytes"] <= memory["idle_rss_bytes"]
    assert memory["peak_method"] == "sampled"
    assert row.shutdown["how"] == "sigkill"  # the child ignores SIGTERM and EOF


def test_escaped_descendant_is_reported_as_orphan_and_killed(fake):
    session = open_session(fake("--escape"))
    try:
        session.wait(1, 10)
        time.sleep(0.3)
        escaped = [p.pid for p in session.processes.scan() if os.getpgid(p.pid) != session.transport.pid]
    finally:
        shutdown = session.shutdown()
    assert len(escaped) == 1
    assert [o["pid"] for o in shutdown.orphans] == escaped
    assert "signal.SIG_IGN" in " ".join(shutdown.orphans[0]["cmdline"])
    assert_gone(escaped)


# 10. ignores EOF, traps SIGTERM
def test_ignores_eof_needs_sigterm(fake):
    sample = handshake(fake("--ignore-eof"))
    assert sample["shutdown"].how == "sigterm"
    assert sample["shutdown"].ms >= 0.95 * FAST.waits.shutdown_grace_s * 1000  # EOF grace


def test_traps_sigterm_needs_sigkill(fake):
    sample = handshake(fake("--ignore-eof", "--trap-term"))
    assert sample["shutdown"].how == "sigkill"
    assert sample["shutdown"].exit_code == -9


# 11. server-to-client requests before answering
def test_server_requests_are_answered(fake):
    session = open_session(fake("--ask-first"))
    try:
        response = session.wait(1, 5)
    finally:
        session.shutdown()
    assert response.message["result"]["protocolVersion"] == REV
    assert session.traffic.server_requests == {"ping": 1, "roots/list": 1}


def test_cannot_start_missing_program():
    with pytest.raises(SessionError, match="cannot start '/nonexistent/server'"):
        start(Command(["/nonexistent/server"]))
    with pytest.raises(SessionError, match="cannot start 'no-such-mcp-server': not found on the "
                                           "server's PATH"):
        start(Command(["no-such-mcp-server"]))
    with pytest.raises(SessionError, match="working directory /nonexistent does not exist"):
        start(Command(["true"], "/nonexistent"))


def test_endless_line_fails_without_buffering_it_all(monkeypatch):
    monkeypatch.setattr("mcpstart.transports.framing.MAX_LINE_BYTES", 1 << 20)
    writer = "import sys\nwhile True: sys.stdout.write('x' * 65536)"
    with pytest.raises(SessionError, match="^initialize: .*more than 1 MiB on stdout without "
                                           "a newline"):
        handshake(Command([sys.executable, "-c", writer]), timeout_s=60)


# 12. answers that are almost right: accepted at once with a note, or failed at once
@pytest.mark.parametrize("switch, note", [
    ("--batch", "answered in a JSON-RPC batch array"),
    ("--no-jsonrpc", 'answered with no "jsonrpc" member'),
    ("--string-id", 'answered with id "1", another JSON type than the id sent'),
])
def test_almost_right_answers_are_accepted_with_a_warning(fake, switch, note):
    sample = handshake(fake(switch), timeout_s=60)  # the timeout would raise NoAnswer
    assert sample["negotiated_revision"] == REV
    notes = [w["detail"] for w in sample["traffic"].warnings() if w["kind"] == "irregular_answer"]
    assert any(note in n for n in notes), notes


@pytest.mark.parametrize("raw, cause", [
    ('{"jsonrpc":"2.0","id":{id},"result":{"protocolVersion":"x"},"error":{"code":1,"message":"m"}}',
     'initialize: the answer has both "result" and "error"'),
    ('{"jsonrpc":"2.0","id":{id}}', 'initialize: the answer has neither "result" nor "error"'),
    ('{"jsonrpc":"2.0","id":{id},"error":"boom"}', "initialize: the answer's \"error\" is not an object"),
    ('{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}',
     "initialize: the server answered with id null (error -32700: Parse error)"),
    ('{"jsonrpc":"2.0","result":{"protocolVersion":"2025-11-25"}}',
     "initialize: the server answered with no id"),
    ('[{"jsonrpc":"2.0","id":{id},"result":{}, "error":{}}]', 'initialize: the answer has both'),
])
def test_unusable_answers_fail_at_once_naming_what_was_wrong(fake, raw, cause):
    with pytest.raises(SessionError) as err:  # the timeout's cause would be "no answer"
        handshake(fake("--raw", f"initialize={raw}"), timeout_s=60)
    assert str(err.value).startswith(cause), str(err.value)


def test_pretty_printed_answer_fails_at_once_with_the_line_count(fake):
    with pytest.raises(SessionError) as err:  # the timeout's cause would be "no answer"
        handshake(fake("--pretty"), timeout_s=60)
    # json.dumps(indent=2) of the initialize answer spans 14 lines
    assert str(err.value).startswith(
        "initialize: the server wrote one JSON message over 14 lines; the stdio transport "
        "needs one message per line")


def test_an_id_never_sent_fails_at_once(fake):
    """While one request is pending, an answer with an id mcpstart never sent is evidently
    its answer, misnumbered: no client can match it, so the wait ends at once."""
    reply = 'initialize={"id": true, "error": {"code": -32700, "message": "Parse error"}}'
    with pytest.raises(SessionError) as err:  # the timeout's cause would be "no answer"
        handshake(fake("--reply", reply), timeout_s=60)
    assert str(err.value).startswith("initialize: the server answered with id true, an id "
                                     "mcpstart never sent (the pending request is id 1)")


# 13. paginated lists
def test_tools_are_followed_through_next_cursor(fake):
    row, _, error = session_row(fake("--pages", "3"))
    assert error is None
    assert row.tools["count"] == 3 and row.tools["pages"] == 3
    assert row.payload["tool"] == "reverse_text" and row.payload["verified"] is True


def test_a_cursor_that_never_advances_stops_with_a_warning(fake):
    row, _, error = session_row(fake("--cursor-loop"))
    assert error is None
    assert row.tools["pages"] == 2  # the second page repeated the first cursor
    assert {"kind": "paging", "metric": "tools",
            "detail": "tools/list paging stopped: nextCursor 'same' repeated a cursor already "
                      "followed"} in row.warnings


def test_the_all_at_once_start_follows_pages_and_stops_a_looping_cursor(fake):
    settings = fast(timeout_s=60)
    times = one_start([("paged", fake("--pages", "3")), ("loop", fake("--cursor-loop"))],
                      settings)
    for name in ("paged", "loop"):  # a page that waited out the timeout leaves tools_list None
        assert times[name]["tools_list"] is not None
        assert times[name]["initialize"] < times[name]["tools_list"]


# 14. a launcher that exits at once, its child serving
def test_launcher_row_is_measured_on_its_descendants(fake):
    row, traffic, error = session_row(fake("--launcher"))
    assert error is None
    assert row.memory["idle_rss_bytes"] > 5 << 20
    assert len(row.memory["processes"]) == 1
    assert row.memory["processes"][0]["cmdline"][-1] == "--launcher"
    assert row.memory["peak_rss_bytes_payload"] > row.memory["idle_rss_bytes"]
    assert traffic.launcher_exit["detail"].startswith("the spawned process exited with code 0 after ")
    assert "(a launcher); measured on the descendants" in traffic.launcher_exit["detail"]
    assert row.shutdown["how"] == "eof"


# 15. failures late in the session keep everything measured before
def test_tool_error_on_the_large_call_keeps_the_rest(fake):
    row, _, error = session_row(fake("--call-error"), timeout_s=60)
    assert str(error) == "tools/call reverse_text: the tool reported an error: payload too large"
    assert row.payload["is_error"] is True and row.payload["verified"] is None
    assert row.tools["count"] == 1 and row.memory["idle_rss_bytes"] > 0
    assert row.round_trip_ms["n"] == 3
    assert row.shutdown["how"] == "eof"


def test_exit_on_the_large_line_keeps_the_rest(fake):
    row, _, error = session_row(fake("--exit-on-large"), timeout_s=60)
    assert str(error).startswith("tools/call reverse_text: the server exited with code 3 after ")
    assert row.tools["count"] == 1 and row.memory["idle_rss_bytes"] > 0
    assert row.round_trip_ms is None  # they come after the large call: the server is gone
    assert row.shutdown == {"how": "already_exited", "ms": 0.0}


# 16. a server that answers only initialize
class OnlyInitialize(Timed):
    """Answers initialize 5 ms (virtual) after it is asked, and nothing else (as
    tests/fakes/fake_server.py --only-initialize)."""

    def __init__(self):
        super().__init__(0.005)

    def fresh(self):
        return OnlyInitialize()

    def result(self, method, params):
        return super().result(method, params) if method == "initialize" else None


def test_unanswered_method_is_named_and_not_asked_again():
    """On scripted servers (virtual clock): the first start waits out tools/list once and
    names it; the second never asks it, so no wait of it ends by its timer."""
    skips, spawner = Skips(), Spawner({"only": OnlyInitialize})
    settings = fast(timeout_s=1, call=ToolCall(), spawner=spawner)
    first = cold_start(Command(["only"]), settings, skips)
    second = cold_start(Command(["only"]), settings, skips)
    assert first["handshake"] == second["handshake"] == 5.0
    assert first["tools_list"] is None and second["tools_list"] is None
    assert skips.causes["tools/list"].startswith("no answer to tools/list within 1 s")
    [(_, one), (_, two)] = spawner.made
    asked = [[m.get("method") for m in t.sent if isinstance(m, dict)] for t in (one, two)]
    assert asked[0].count("tools/list") == 1 and "tools/list" not in asked[1]
    assert [round(t, 6) for t, how in one.waits if how == "timeout"] == [1.0]  # tools/list
    assert [t for t, how in two.waits if how == "timeout"] == []


@pytest.mark.e2e  # a real timing: the stdio transport acts at once on a real pipe
def test_a_timed_spawn_waits_the_timeout_once_in_all(fake):
    """A timed spawn blocks in Transport.start until the server writes; the wait that
    follows counts from the spawn, so a silent server costs the timeout once, not twice."""
    began = time.monotonic()
    session = start(fake("--slow-start", "30"), initialize_request(REV), wait_s=1)
    try:
        with pytest.raises(NoAnswer, match="no answer to initialize within 1 s"):
            session.wait(1, 1, diagnose=False)
        assert 1 <= time.monotonic() - began < 2.5
    finally:
        session.shutdown(grace_s=0.2)


def test_servers_started_together_are_never_each_others_orphans(fake):
    """As a subreaper, one server's process set adopts orphans started after its spawn; the
    servers spawned beside it (an editor-style start) are not orphans and stay their own."""
    from mcpstart.measure import spawn
    from mcpstart.transports.tree import child_subreaper

    first = initialize_request(REV)
    with child_subreaper(), spawn.started([(fake(), first), (fake(), first)], FAST,
                                          timed=True) as (a, b):
        for session in (a, b):
            session.wait(1, 10)
        assert [p.pid for p in a.processes.scan()] == [a.transport.pid]
        assert [p.pid for p in b.processes.scan()] == [b.transport.pid]
    assert a.ended.how == b.ended.how == "eof"


def test_a_start_of_several_that_fails_leaves_no_pipe_open(fake):
    """The all-at-once start prepares every spawn first; when a later program cannot be
    started, the sessions already started are shut down and no pipe of any is left open."""
    from mcpstart.measure import spawn

    before = set(os.listdir("/proc/self/fd"))
    first = initialize_request(REV)
    with pytest.raises(SessionError, match="cannot start"):
        with spawn.started([(fake(), first), (Command(["/nonexistent/server"]), first)], FAST,
                           timed=True):
            pass
    assert set(os.listdir("/proc/self/fd")) == before


def test_a_traceback_on_stderr_is_quoted_as_lines_with_its_last_error_first():
    crash = "import sys\nsys.stderr.write('starting\\n')\nraise ValueError(\"can't open 'db'\")"
    with pytest.raises(Exited) as err:
        handshake(Command([sys.executable, "-c", crash]))
    cause = str(err.value)
    assert "its last error: ValueError: can't open 'db'; stderr ended with:\n  starting\n" \
           "  Traceback (most recent call last):\n" in cause
    assert "\\n" not in cause and "\\'" not in cause  # lines, not a Python repr
