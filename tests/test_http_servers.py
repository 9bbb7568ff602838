"""End to end: build each Streamable HTTP reference server (build-recipes/*-http.toml) with
mcpstart's build, start it on a free loopback port and drive one handshake-era session
(initialize with Mcp-Session-Id, notifications/initialized, tools/list, tools/call, DELETE, a
call on the ended session) and the 2026-07-28 stateless pair (server/discover, tools/call
without initialize) with http.client. Builds go to mcpstart's cache ($MCPSTART_CACHE_DIR, else
the user cache), so only the first run pays for them. A missing toolchain skips a server;
with MCPSTART_REQUIRE_ALL=1 (CI) it fails instead."""

import http.client
import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from mcpstart.targets.build import cache_root, ensure_built
from mcpstart.targets.recipes import PORT, load_recipes

pytestmark = pytest.mark.e2e

RECIPES = Path(__file__).parent.parent / "build-recipes"
REQUIRED = os.environ.get("MCPSTART_REQUIRE_ALL") == "1"
NAMES = ("c-http", "go-http", "python-http", "rust-http", "typescript-http")
SERVER_INFO = {name: {"name": "reverse-text", "version": "1.0.0"} for name in NAMES}
SERVER_INFO["c-http"] = {"name": "mcpstart-c-floor", "version": "1.0.0"}
TEXT = "mcp e\u0301t\u00e9 \U0001F600 \u6f22\u5b57!"
META = "io.modelcontextprotocol/"
ACCEPT = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
START_TIMEOUT_S = 60


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(proc: subprocess.Popen, port: int, log: Path) -> None:
    """Return once 127.0.0.1:port accepts a connection; fail if the server exits first."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"server exited with {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.02)
    pytest.fail(f"nothing listens on port {port} after {START_TIMEOUT_S} s")


@pytest.fixture(scope="module", params=NAMES)
def server(request, tmp_path_factory):
    """(name, port) of one built HTTP server, running until the module's tests are done."""
    [recipe] = load_recipes(RECIPES, [request.param])
    build = ensure_built(recipe, cache_root())
    if build.status == "skipped":
        if REQUIRED:
            pytest.fail(f"{recipe.name}: {build.reason} (MCPSTART_REQUIRE_ALL=1)")
        pytest.skip(f"{recipe.name}: {build.reason} (set MCPSTART_REQUIRE_ALL=1 to fail instead)")
    assert build.ok, f"{recipe.name}: {build.reason}\n{build.log_tail}"
    port = free_port()
    command = build.command()
    log = tmp_path_factory.mktemp(recipe.name) / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([a.replace(PORT, str(port)) for a in command.argv],
                                cwd=command.cwd, env=command.environment(),
                                stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                start_new_session=True)
    try:
        wait_listening(proc, port, log)
        yield recipe.name, port
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def exchange(conn, method: str, body: dict | None, headers: dict) -> tuple:
    """Send one request; returns (response, the JSON-RPC message, or None for a body that is
    neither JSON nor SSE). An SSE answer is read to its end and its message with the
    request's id is taken."""
    payload = None if body is None else json.dumps(body)
    conn.request(method, "/mcp", payload, {**ACCEPT, **headers})
    response = conn.getresponse()
    raw = response.read().decode()
    kind = (response.getheader("Content-Type") or "").split(";")[0]
    if kind == "application/json" and raw:
        return response, json.loads(raw)
    if kind != "text/event-stream":  # no body (202, DELETE) or a plain-text error (Go, Rust)
        return response, None
    events = ["\n".join(line[5:].lstrip() for line in event.splitlines()
                        if line.startswith("data:")) for event in raw.split("\n\n")]
    messages = [json.loads(data) for data in events if data.strip()]
    return response, next(m for m in messages if m.get("id") == (body or {}).get("id"))


def call(id_: int, text: str, meta: dict | None = None) -> dict:
    params = {"name": "reverse_text", "arguments": {"text": text}}
    if meta:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": params}


def reversed_text(message: dict) -> str:
    [content] = message["result"]["content"]
    assert content["type"] == "text"
    return content["text"]


def test_a_handshake_session_ends_on_delete(server):
    name, port = server
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    started = time.perf_counter()
    response, message = exchange(conn, "POST", {
        "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "mcpstart-test", "version": "1"}}}, {})
    assert response.status == 200
    assert message["result"]["protocolVersion"] == "2025-11-25"
    assert message["result"]["serverInfo"] == SERVER_INFO[name]
    session = response.getheader("Mcp-Session-Id")
    assert session and session.isascii() and len(session) >= 16
    headers = {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}

    response, message = exchange(conn, "POST", {"jsonrpc": "2.0",
                                                "method": "notifications/initialized"}, headers)
    assert response.status == 202 and message is None
    response, message = exchange(conn, "POST", {"jsonrpc": "2.0", "id": 2,
                                                "method": "tools/list"}, headers)
    assert response.status == 200
    assert [t["name"] for t in message["result"]["tools"]] == ["reverse_text"]
    response, message = exchange(conn, "POST", call(3, TEXT), headers)
    assert response.status == 200 and reversed_text(message) == TEXT[::-1]

    response, _ = exchange(conn, "DELETE", None, headers)
    assert response.status in (200, 202, 204)
    response, _ = exchange(conn, "POST", call(4, "gone"), headers)
    assert response.status == 404  # the session ended: the client must start a new one
    assert time.perf_counter() - started < 1


def test_a_2026_client_needs_no_initialize(server):
    name, port = server
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    meta = {f"{META}protocolVersion": "2026-07-28", f"{META}clientCapabilities": {},
            f"{META}clientInfo": {"name": "mcpstart-test", "version": "1"}}
    modern = {"MCP-Protocol-Version": "2026-07-28"}
    started = time.perf_counter()
    response, message = exchange(conn, "POST", {
        "jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}},
        {**modern, "Mcp-Method": "server/discover"})
    assert response.status == 200 and response.getheader("Mcp-Session-Id") is None
    result = message["result"]
    assert "2026-07-28" in result["supportedVersions"]
    assert result["_meta"][f"{META}serverInfo"] == SERVER_INFO[name]
    response, message = exchange(conn, "POST", call(2, TEXT, meta),
                                 {**modern, "Mcp-Method": "tools/call", "Mcp-Name": "reverse_text"})
    assert response.status == 200 and reversed_text(message) == TEXT[::-1]
    assert message["result"]["resultType"] == "complete"
    assert time.perf_counter() - started < 1


def test_every_http_recipe_is_tested():
    assert sorted(r.name for r in load_recipes(RECIPES, transport="http")) == list(NAMES)
