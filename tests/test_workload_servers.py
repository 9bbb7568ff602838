"""End to end: build each workload server (workload-recipes/*.toml) with mcpstart's build and
drive it with a plain client, no mcpstart measuring code: JSON-RPC lines over pipes for stdio,
http.client for Streamable HTTP. Each server is initialized (protocolVersion 2024-11-05, as the
benchmark's k6 script), lists the four tools, and answers one call of each with the reference
workload's arguments (mcpstart/workloads/benchmark.toml; fetch_external_data against a loopback
http.server started here): the Fibonacci number, the upper-cased object, the mock's body, and a
wait of at least delay_ms. Builds go to mcpstart's cache, so only the first run pays for them;
a missing toolchain skips a server through unavailable()."""

import http.client
import http.server
import json
import queue
import subprocess
import threading
import time
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from conftest import unavailable
from mcpstart.targets.build import cache_root, ensure_built
from mcpstart.targets.recipes import PORT, WORKLOAD_RECIPE_FOLDER, WORKLOADS, load_recipes
from test_http_servers import exchange, free_port, wait_listening

pytestmark = [pytest.mark.e2e, pytest.mark.untimed]  # builds, and what each tool answers

RECIPES = Path(__file__).parent.parent / WORKLOAD_RECIPE_FOLDER
NAMES = ("c", "c-http", "go", "go-http", "java", "java-http", "python", "python-http",
         "rust", "rust-http", "typescript", "typescript-http")
WORKLOAD = tomllib.loads((WORKLOADS / "benchmark.toml").read_text())
TOOLS = ["calculate_fibonacci", "fetch_external_data", "process_json_data",
         "simulate_database_query"]
MOCK_BODY = '{"status":"ok","message":"mock response \\"quoted\\""}'
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2024-11-05", "capabilities": {},
    "clientInfo": {"name": "mcpstart-test", "version": "1"}}}
HANDSHAKE_ERA = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""What initialize may negotiate: the Java SDK's Streamable HTTP transport answers 2024-11-05
with 2025-11-25 (Streamable HTTP came with 2025-03-26), as the benchmark's servers may."""
ANSWER_TIMEOUT_S = 30


@pytest.fixture(scope="module")
def mock_api():
    """The base URL of a loopback HTTP server answering GET /api with MOCK_BODY."""

    class Mock(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = MOCK_BODY.encode()
            self.send_response(200 if self.path == "/api" else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Mock)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def calls(mock_api: str) -> list[tuple[str, dict]]:
    """(tool, arguments) of the reference workload, "{mock_api}" filled in."""
    def fill(value):
        return value.replace("{mock_api}", mock_api) if isinstance(value, str) else value
    return [(t["name"], {k: fill(v) for k, v in t["arguments"].items()})
            for t in WORKLOAD["tools"]]


def fibonacci(n: int) -> int:
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


def upper(value):
    if isinstance(value, dict):
        return {k: upper(v) for k, v in value.items()}
    return value.upper() if isinstance(value, str) else value


def check_answer(name: str, arguments: dict, message: dict, took_s: float) -> None:
    """The tool's answer holds what the tool is for; its text block is its structured output."""
    result = message["result"]
    assert not result.get("isError"), result
    output = json.loads(result["content"][0]["text"])
    if "structuredContent" in result:
        assert result["structuredContent"] == output
    if name == "calculate_fibonacci":
        assert output["result"] == fibonacci(arguments["n"]) == 55
    elif name == "fetch_external_data":
        assert (output["status_code"], output["body"]) == (200, MOCK_BODY)
    elif name == "process_json_data":
        assert output["transformed_data"] == upper(arguments["data"])
        assert output["transformed_data"]["name"] == "BENCHMARK"
        assert sorted(output["original_keys"]) == sorted(arguments["data"])
    else:
        assert took_s >= arguments["delay_ms"] / 1e3
        assert (output["query"], output["delay_ms"]) == (arguments["query"], arguments["delay_ms"])


@pytest.fixture(scope="module", params=NAMES)
def built(request):
    [recipe] = load_recipes(RECIPES, [request.param])
    build = ensure_built(recipe, cache_root())
    if build.status == "skipped":
        unavailable(f"{recipe.name}: {build.reason}")
    assert build.ok, f"{recipe.name}: {build.reason}\n{build.log_tail}"
    return recipe, build.command()


@contextmanager
def stdio_client(command, log: Path) -> Iterator:
    """A server from ``command`` on pipes (its stderr to ``log``), initialized with INITIALIZE
    and notified; yields ``request(message) -> answer``, which writes one JSON-RPC line and
    returns the answer with its id (notifications and log lines skipped), failing the test
    when none comes in ANSWER_TIMEOUT_S. The server is killed at the end."""
    with open(log, "wb") as err:
        proc = subprocess.Popen(command.argv, cwd=command.cwd, env=command.environment(),
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()

    def request(message: dict) -> dict:
        proc.stdin.write(json.dumps(message).encode() + b"\n")
        proc.stdin.flush()
        while True:  # skip notifications and log lines
            try:
                answer = json.loads(lines.get(timeout=ANSWER_TIMEOUT_S))
            except queue.Empty:
                pytest.fail(f"no answer to {message['method']}: {log.read_text()[-2000:]}")
            if answer.get("id") == message["id"]:
                return answer

    try:
        assert request(INITIALIZE)["result"]["protocolVersion"] in HANDSHAKE_ERA
        proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        yield request
    finally:
        proc.kill()
        proc.wait()


def stdio_session(command, log: Path, mock_api: str) -> None:
    with stdio_client(command, log) as request:
        listed = request({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        assert sorted(t["name"] for t in listed["result"]["tools"]) == TOOLS
        for id_, (name, arguments) in enumerate(calls(mock_api), 3):
            started = time.perf_counter()
            answer = request({"jsonrpc": "2.0", "id": id_, "method": "tools/call",
                              "params": {"name": name, "arguments": arguments}})
            check_answer(name, arguments, answer, time.perf_counter() - started)


def http_session(command, log: Path, mock_api: str) -> None:
    port = free_port()
    with open(log, "wb") as out:
        proc = subprocess.Popen([a.replace(PORT, str(port)) for a in command.argv],
                                cwd=command.cwd, env=command.environment(),
                                stdin=subprocess.DEVNULL, stdout=out, stderr=out)
    try:
        wait_listening(proc, port, log)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=ANSWER_TIMEOUT_S)
        for id_, (name, arguments) in enumerate(calls(mock_api), 3):  # a session per call
            response, message = exchange(conn, "POST", INITIALIZE, {})
            assert response.status == 200
            assert message["result"]["protocolVersion"] in HANDSHAKE_ERA
            headers = {"Mcp-Session-Id": response.getheader("Mcp-Session-Id")}
            response, _ = exchange(conn, "POST", {"jsonrpc": "2.0",
                                                  "method": "notifications/initialized"}, headers)
            assert response.status == 202
            if id_ == 3:
                _, listed = exchange(conn, "POST", {"jsonrpc": "2.0", "id": 2,
                                                    "method": "tools/list"}, headers)
                assert sorted(t["name"] for t in listed["result"]["tools"]) == TOOLS
            started = time.perf_counter()
            response, message = exchange(conn, "POST", {
                "jsonrpc": "2.0", "id": id_, "method": "tools/call",
                "params": {"name": name, "arguments": arguments}}, headers)
            assert response.status == 200
            check_answer(name, arguments, message, time.perf_counter() - started)
            response, _ = exchange(conn, "DELETE", None, headers)
            assert response.status in (200, 202, 204)
    finally:
        proc.kill()
        proc.wait()


def test_each_tool_answers_with_its_work(built, mock_api, tmp_path):
    recipe, command = built
    session = http_session if recipe.transport == "http" else stdio_session
    session(command, tmp_path / "server.log", mock_api)


def test_every_workload_recipe_is_tested():
    recipes = load_recipes(RECIPES, transport=None)
    assert sorted(r.name for r in recipes if r.workload == "benchmark") == list(NAMES)
    assert {r.workload for r in recipes} == {"benchmark", "search"}  # search: test_search_servers
