"""A Streamable HTTP session that moves under the client, on the virtual clock
(tests/scripted_http.py): a session the server no longer knows (HTTP 404 to a request
carrying its id: a new session once, then the cause) and an endpoint that redirects (3xx:
followed once within its origin, else the cause at once)."""

import json

from scripted_http import HttpGood, Wire, answer
from test_http_faults import longest_life_s, measured, said

NOT_FOUND = answer(404, b'{"jsonrpc":"2.0","id":null,"error":{"code":-32001,'
                        b'"message":"Session not found"}}')


def sent(transport) -> list[tuple[str, str, str | None, str | None]]:
    """What one transport sent: (HTTP method, target, JSON-RPC method, session id)."""
    return [(r.method, r.target, (r.message or {}).get("method"), r.headers.get("mcp-session-id"))
            for r in transport.requests]


class Expires(HttpGood):
    """Hands out s-1, s-2, ... and forgets a process's first session at its first request
    after notifications/initialized (an expiry, a restart behind a load balancer): HTTP 404
    to anything that carries it from then on."""

    def __init__(self):
        self.sessions, self.gone = 0, set()

    def http(self, request):
        sid = request.headers.get("mcp-session-id")
        if sid in self.gone:
            return [Wire("bytes", NOT_FOUND)]
        method = (request.message or {}).get("method") if request.method == "POST" else None
        if method == "initialize":
            self.sessions += 1
            self.session = f"s-{self.sessions}"
        elif method == "notifications/initialized" and sid == "s-1":
            self.gone.add(sid)
        return super().http(request)


def test_a_session_not_found_is_started_again_once_with_a_warning_and_the_row_is_measured():
    row, made = measured(Expires)
    assert row.status == "ok", row.reason
    assert row.tools["count"] == 1 and row.http["latency_ms"]["n"] == 3
    assert "tools/list answered HTTP 404 Not Found" in said(row), said(row)
    assert "carrying Mcp-Session-Id: s-1: the session was not found" in said(row)
    assert sent(made[0])[:7] == [
        ("POST", "/mcp", "initialize", None),
        ("POST", "/mcp", "notifications/initialized", "s-1"),
        ("POST", "/mcp", "tools/list", "s-1"),  # 404
        ("POST", "/mcp", "initialize", None),
        ("POST", "/mcp", "notifications/initialized", "s-2"),
        ("POST", "/mcp", "tools/list", "s-2"),
        ("POST", "/mcp", "tools/call", "s-2")]
    assert longest_life_s(made) < 1


class NeverFound(Expires):
    """Forgets every session as soon as it is made."""

    def http(self, request):
        wires = super().http(request)
        self.gone.add(self.session)
        return wires


def test_a_second_session_not_found_fails_at_once_naming_both_sessions():
    row, made = measured(NeverFound)
    assert row.status == "failed"
    assert "tools/list answered HTTP 404 Not Found" in row.reason, row.reason
    assert "carrying Mcp-Session-Id: s-2" in row.reason
    assert "earlier 404 to Mcp-Session-Id: s-1" in row.reason, row.reason
    assert [s[2] for s in sent(made[0])].count("initialize") == 2  # renewed once, not more
    assert longest_life_s(made) < 1


class Moves(HttpGood):
    """Answers ``status`` with ``location`` to any POST not at ``home``."""

    status, location, home = 307, "/mcp/", "/mcp/"

    def http(self, request):
        if request.method == "POST" and request.target != self.home:
            more = (("Location", self.location),) if self.location else ()
            return [Wire("bytes", answer(self.status, b"", "", more))]
        return super().http(request)


def test_a_redirect_within_the_origin_is_followed_once_and_every_later_request_goes_there():
    row, made = measured(Moves)
    assert row.status == "ok", row.reason
    assert "initialize answered HTTP 307 Temporary Redirect" in said(row), said(row)
    assert "to Location: /mcp/ (the same origin)" in said(row)
    for transport in made:
        first, *rest = sent(transport)
        assert first[:2] == ("POST", "/mcp")  # initialize, or a stateless first request
        assert rest and all(target == "/mcp/" for _, target, _, _ in rest), rest
    assert longest_life_s(made) < 1


class AbsoluteSameOrigin(Moves):
    status, location = 308, "http://10.0.0.1:40001/mcp/"


def test_an_absolute_location_of_the_same_origin_is_followed():
    row, _ = measured(AbsoluteSameOrigin)
    assert row.status == "ok", row.reason
    assert "HTTP 308" in said(row)


class OtherOrigin(Moves):
    status, location = 308, "http://other.example:8080/mcp"


class NoLocation(Moves):
    status, location = 302, None


class Loops(Moves):
    status, location, home = 301, "/next", "/nowhere"


def test_a_redirect_that_cannot_be_followed_fails_at_once_naming_status_and_location():
    for script, words in ((OtherOrigin, ("HTTP 308 Permanent Redirect", "to Location: "
                                         "http://other.example:8080/mcp, another origin")),
                          (NoLocation, ("HTTP 302 Found", "with no Location")),
                          (Loops, ("HTTP 301 Moved Permanently", "to Location: /next after "
                                   "an earlier redirect to /next"))):
        row, made = measured(script)
        assert row.status == "failed", (script, row.reason)
        assert all(w in row.reason for w in words), (script, row.reason)
        assert longest_life_s(made) < 1
        assert len(made[0].requests) <= 2  # followed at most once


class DropsEverySecondCall(HttpGood):
    """Closes the connection, without a byte of answer, on every second tools/call it reads
    (a server that drops requests on kept-alive connections)."""

    def __init__(self):
        self.calls = 0

    def http(self, request):
        if (request.message or {}).get("method") == "tools/call":
            self.calls += 1
            if self.calls % 2 == 0:
                return [Wire("close")]
        return super().http(request)


def test_a_call_sent_again_after_a_kept_alive_connection_closed_is_counted_and_said():
    """The client sends a request once more when a kept-alive connection closes before any
    byte of its answer (the server may have closed it idle), never silently: the server may
    have read it, so the warning says the call may have run twice."""
    row, made = measured(DropsEverySecondCall)
    assert row.status == "ok", row.reason
    again = [w for w in row.warnings if "sent again on a new connection" in str(w["detail"])]
    assert len(again) == 1 and again[0]["detail"].startswith("tools/call sent again"), said(row)
    dropped = sum(sum(1 for r in t.requests if (r.message or {}).get("method") == "tools/call")
                  // 2 for t in made)  # each process's script drops every second call it reads
    assert f"({dropped} time(s); accepted)" in again[0]["detail"], (dropped, said(row))


class Refuses(HttpGood):
    """Answers every POST with one status (401: credentials needed; 404: no endpoint here)."""

    status = 401

    def http(self, request):
        return [Wire("bytes", answer(self.status, b"no"))]


class NotHere(Refuses):
    status = 404


def test_a_status_that_a_user_can_mend_says_how():
    """401 names --header, 404 to initialize names --endpoint: the request never reached an
    MCP endpoint the client may use, and the row fails at once saying what to change."""
    row, made = measured(Refuses)
    assert row.status == "failed" and "HTTP 401 Unauthorized: no; the server asks for " \
        "credentials: send them with --header 'Authorization: ...'" in row.reason, row.reason
    row, made = measured(NotHere)
    assert row.status == "failed" and "HTTP 404 Not Found: no; nothing serves MCP at /mcp: " \
        "give the server's path with --endpoint PATH" in row.reason, row.reason
    assert longest_life_s(made) < 1
