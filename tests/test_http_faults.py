"""HTTP servers that misbehave as real ones do, each played on the virtual clock through
mcpstart's own HTTP transport (tests/scripted_http.py) and measured as a row: what each
must come to, and how much (virtual) time it may take to come to it."""

import gzip
import json

import pytest

from conftest import fast
from mcpstart.command import Command
from mcpstart.measure import run
from mcpstart.results import ServerResult, validate
from mcpstart.transports.session import Waits

from scripted import GoodServer, Out, ScriptedTransport, Spawner, line
from scripted_http import HttpGood, HttpSpawner, Wire, answer

TIMEOUT_S = 20.0


def measured(script, **changes):
    """One row of ``script`` over scripted HTTP, and the transports it made."""
    spawner = HttpSpawner(script)
    settings = fast(**{"http_spawner": spawner, "runs": 1, "warmup": 0, "round_trips": 3,
                       "payload_bytes": 2000, "http_sessions": 2, "timeout_s": TIMEOUT_S,
                       "probe_timeout_s": 5.0, "order": "sequential", "transport": "http",
                       "load_s": 0, **changes})
    server = run.Server(ServerResult("server", "http"), Command(["server", "{port}"]),
                        transport="http")
    results = run.measure([server], settings, ["mcpstart", "measure"], {})
    validate(results.to_dict())  # every row these faults leave is a valid results file
    (row,) = results.servers
    return row, spawner.made


def said(row) -> str:
    return "\n".join([row.reason or ""] + [str(w.get("detail")) for w in row.warnings])


def longest_life_s(made) -> float:
    """The longest virtual life of any process of the row (the wait it cost)."""
    return max(t.lifetime_s for t in made)


class Gzip(HttpGood):
    """Every JSON answer gzip-encoded though the client sent no Accept-Encoding (a
    compressing middleware or CDN)."""

    def body(self, request, reply):
        headers = (("Content-Encoding", "gzip"),)
        if request.message.get("method") == "initialize":
            headers += (("Mcp-Session-Id", self.session),)
        return answer(200, gzip.compress(json.dumps(reply).encode()), headers=headers)


def test_a_gzip_encoded_answer_is_decoded_and_warned_about_naming_the_encoding():
    row, made = measured(Gzip)
    assert row.status == "ok", row.reason
    assert row.tools["count"] == 1 and row.http["latency_ms"]["n"] == 3
    assert "Content-Encoding: gzip" in said(row)
    assert longest_life_s(made) < 1.0


class Brotli(Gzip):
    def body(self, request, reply):
        return answer(200, b"\x1b\x00\xf8\xff" + json.dumps(reply).encode()[:40],
                      headers=(("Content-Encoding", "br"),))


def test_an_encoding_mcpstart_cannot_decode_fails_at_once_naming_it():
    row, made = measured(Brotli)
    assert row.status == "failed"
    assert "Content-Encoding: br" in row.reason and "HTTP 200" in row.reason, row.reason
    assert longest_life_s(made) < 1.0


class Html(HttpGood):
    """Answers every POST 200 with an HTML page (a proxy's login or error page)."""

    def http(self, request):
        return [Wire("bytes", answer(200, b"<!doctype html><title>Sign in</title>", "text/html"))]


def test_a_complete_answer_that_is_not_json_rpc_fails_at_once_with_status_headers_and_bytes():
    row, made = measured(Html)
    assert row.status == "failed"
    assert "HTTP 200 OK (Content-Type: text/html)" in row.reason, row.reason
    assert "'<!doctype html><title>Sign in</title>'" in row.reason
    assert "stdout" not in row.reason and "stdin" not in row.reason
    assert longest_life_s(made) < 1.0


class OldSse(HttpGood):
    """The deprecated HTTP+SSE transport (2024-11-05): the stream's first event is
    ``endpoint`` naming where to POST, then keep-alives every 15 s, never ending."""

    def http(self, request):
        head = answer(200, b"", "text/event-stream", framing="close")
        wires = [Wire("bytes", head + b"event: endpoint\r\ndata: /messages/?session_id=9f\r\n\r\n")]
        return wires + [Wire("bytes", b": ping\r\n\r\n", 15.0 * n) for n in range(1, 5)]


def test_the_deprecated_http_sse_transport_fails_at_once_naming_it_and_its_endpoint_event():
    row, made = measured(OldSse)
    assert row.status == "failed"
    assert "HTTP+SSE" in row.reason and "2024-11-05" in row.reason, row.reason
    assert "endpoint" in row.reason and "/messages/?session_id=9f" in row.reason
    assert longest_life_s(made) < 1.0


class OwnPort(HttpGood):
    """Ignores ``{port}``: listens on a port of its own 0.3 s after its spawn."""

    boot = (Wire("listen", after_s=0.3, where="127.0.0.1:8000"),)


def test_a_server_listening_elsewhere_fails_as_soon_as_its_listener_appears():
    row, made = measured(OwnPort)
    assert row.status == "failed"
    assert "127.0.0.1:8000" in row.reason and "{port}" in row.reason, row.reason
    assert 0.3 <= longest_life_s(made) < 0.7


class EndlessCursor(HttpGood):
    """tools/list never ends: the same tool and a fresh cursor on every page."""

    def result(self, method, params):
        result = super().result(method, params)
        if method == "tools/list":
            page = int((params.get("cursor") or "c0")[1:]) + 1
            result = {**result, "nextCursor": f"c{page}"}
        return result


def test_an_endless_cursor_ends_paging_with_a_warning_naming_it_and_counts_tools_once():
    row, made = measured(EndlessCursor)
    assert row.status == "ok", row.reason
    assert row.tools["count"] == 1
    single = len(json.dumps(GoodServer().result("tools/list", {})["tools"],
                            separators=(",", ":")))
    assert row.tools["definitions_bytes"] == single
    paging = [w["detail"] for w in row.warnings if "nextCursor" in w["detail"]]
    assert paging and "'c100'" in paging[0], row.warnings
    assert row.http["latency_ms"]["n"] == 3


class NotificationError(HttpGood):
    """Answers notifications/initialized with an error whose id is null."""

    def http(self, request):
        message = request.message
        if isinstance(message, dict) and message.get("method") == "notifications/initialized":
            error = {"jsonrpc": "2.0", "id": None, "error": {
                "code": -32600, "message": "Invalid request: notifications/initialized "
                                           "is not a request"}}
            return [Wire("bytes", answer(400, json.dumps(error).encode()))]
        return super().http(request)


def test_an_error_answering_a_notification_over_http_is_not_the_next_answer():
    row, _ = measured(NotificationError)
    assert row.status == "ok", row.reason
    assert row.tools["count"] == 1 and row.http["latency_ms"]["n"] == 3
    assert "notifications/initialized" in said(row)


class StdioNotificationError(GoodServer):
    def answer(self, message):
        if isinstance(message, dict) and message.get("method") == "notifications/initialized":
            return [Out("stdout", line({"jsonrpc": "2.0", "id": None, "error": {
                "code": -32600, "message": "notifications/initialized: not a request"}}))]
        return super().answer(message)


def test_an_error_answering_a_notification_over_stdio_is_not_the_next_answer():
    """The regression of an earlier round: the id-null error after notifications/initialized
    was taken as tools/list's answer, failing the row."""
    spawner = Spawner({"server": StdioNotificationError})
    settings = fast(spawner=spawner, runs=1, warmup=0, round_trips=3, payload_bytes=2000,
                    timeout_s=TIMEOUT_S, probe_timeout_s=5.0, order="sequential")
    (row,) = run.measure([run.Server(ServerResult("server"), Command(["server"]))], settings,
                         ["mcpstart", "measure"], {}).servers
    assert row.status == "ok", row.reason
    assert row.tools["count"] == 1 and row.round_trip_ms["n"] == 3
    assert "notifications/initialized" in said(row)
    assert max(t.lifetime_s for _, t in spawner.made) < TIMEOUT_S


class Late(HttpGood):
    """Answers initialize 4 s after it is asked."""

    def http(self, request):
        wires = super().http(request)
        if isinstance(request.message, dict) and request.message.get("method") == "initialize":
            for wire in wires:
                wire.after_s = 4.0
        return wires


def test_a_late_http_answer_is_said_in_http_terms():
    row, _ = measured(Late, timeout_s=3.0, waits=Waits(shutdown_grace_s=0.5, diagnosis_s=2.0))
    assert row.status == "failed"
    assert "no answer to initialize within 3 s; the answer came 1.0 s later" in row.reason
    for stdio_word in ("stdin", "stdout line", "block-buffered", "stderr"):
        assert stdio_word not in row.reason, row.reason


class Silent(HttpGood):
    """Accepts connections and never answers initialize."""

    def http(self, request):
        if isinstance(request.message, dict) and request.message.get("method") == "initialize":
            return []
        return super().http(request)


def test_a_silent_http_server_times_out_with_a_cause_in_http_terms():
    row, made = measured(Silent, timeout_s=3.0)
    assert row.status == "failed"
    assert row.reason.endswith("no answer to initialize within 3 s (no byte of an HTTP "
                               "answer); its log (stdout and stderr) was empty"), row.reason
    assert 3.0 <= longest_life_s(made) < 5.0


class EveryThirdCall500(HttpGood):
    """Answers every third tools/call of a process HTTP 500 with a plain-text body."""

    def __init__(self):
        self.calls = 0

    def http(self, request):
        if isinstance(request.message, dict) and request.message.get("method") == "tools/call":
            self.calls += 1
            if self.calls % 3 == 0:
                return [Wire("bytes", answer(500, b"the tool broke", "text/plain"))]
        return super().http(request)


def test_an_error_status_on_calls_of_a_series_is_counted_and_the_row_stays_ok():
    row, _ = measured(EveryThirdCall500, round_trips=6, http_sessions=4)
    assert row.status == "ok", row.reason
    # the tool session: the large call, the Unicode check, then round trips 1-6: calls 3
    # and 6 of the process are round trips 1 and 4
    latency = row.http["latency_ms"]
    assert latency["n"] == 4 and latency["errors"] == {"total": 2, "by_class": {"http_5xx": 2}}
    assert row.round_trip_ms["errors"] == latency["errors"]
    # the sessions' process: five warm-up sessions (calls 1-5), then sessions 1-4 (calls
    # 6-9: the first and the last fail)
    assert row.http["session_ms"]["n"] == 2
    assert row.http["session_ms"]["errors"] == {"total": 2, "by_class": {"http_5xx": 2}}
    warned = [w["detail"] for w in row.warnings if w["kind"] == "series_errors"]
    assert warned == [
        "2 of 6 round_trip_ms failed with an HTTP error status (counted, not a failure: see "
        "round_trip_ms.errors); the first: tools/call reverse_text: HTTP 500 Internal Server "
        "Error: the tool broke",
        "2 of 4 http.session_ms failed with an HTTP error status (counted, not a failure: see "
        "http.session_ms.errors); the first: tools/call reverse_text: HTTP 500 Internal "
        "Server Error: the tool broke"]


class NeedsToken(HttpGood):
    """Answers 401 to any request without ``Authorization: Bearer s3cret-token``."""

    def http(self, request):
        if request.headers.get("authorization") != "Bearer s3cret-token":
            return [Wire("bytes", answer(401, b'{"error":"invalid_token"}',
                                         headers=(("WWW-Authenticate", "Bearer"),)))]
        return super().http(request)


def test_a_header_given_on_the_command_line_reaches_a_url_and_is_shown_nowhere(tmp_path):
    from mcpstart.engine import job_for, measure as run_job
    from mcpstart.redact import redact_argv

    argv = ["mcpstart", "measure", "--url", "http://127.0.0.1:40001/mcp", "--header",
            "Authorization: Bearer s3cret-token"]
    assert redact_argv(argv)[-1] == "Authorization: ***"
    assert redact_argv(["--header=Authorization: Bearer s3cret-token"]) == [
        "--header=Authorization: ***"]
    rows = {}
    for given in ((), ("Authorization: Bearer s3cret-token",)):
        options = {"server_specs": (), "configs": (), "client": None, "cwd": None,
                   "recipes_dir": None, "output": tmp_path / f"r{len(given)}.json",
                   "load_seconds": 0.0, "url": "http://127.0.0.1:40001/mcp",
                   "headers": given}
        settings = fast(http_spawner=HttpSpawner(NeedsToken), runs=1, warmup=0,
                        round_trips=3, http_sessions=2, timeout_s=TIMEOUT_S,
                        transport="http")
        job = job_for((), options, settings, redact_argv(argv), lambda _: None)
        outcome = run_job(job)
        rows[bool(given)] = outcome.results.servers[0]
        written = (tmp_path / f"r{len(given)}.json").read_text()
        assert "s3cret" not in written
        assert "s3cret" not in str(outcome.shown().to_dict())
    assert rows[False].status == "failed" and "HTTP 401" in rows[False].reason
    assert rows[True].status == "ok", rows[True].reason
    assert rows[True].command["header_keys"] == ["Authorization"]
    assert rows[True].http["latency_ms"]["n"] == 3


@pytest.mark.parametrize("value", ["Authorization: Bearer s3cret\x01", "X-A: s3cret\nX-B: y",
                                   "Bearer s3cret", "Bad Name: s3cret"])
def test_a_header_that_cannot_be_sent_is_bad_input_and_its_value_is_never_shown(value):
    from click.testing import CliRunner

    from mcpstart.cli import main

    result = CliRunner().invoke(main, ["measure", "--url", "http://127.0.0.1:9/mcp",
                                       "--header", value])
    assert result.exit_code == 2, result.output
    assert "give it as 'Name: value'" in result.output and "s3cret" not in result.output
