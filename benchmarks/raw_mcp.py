"""A plain MCP client for the independent checks, sharing no code with mcpstart's client:
JSON-RPC over a server's pipes (subprocess, the stdout BufferedReader's readline) or over
Streamable HTTP (http.client, one kept-alive connection to /mcp). Each request returns an
Answer: the message, its size in bytes (the line without its line end; over HTTP the JSON body,
or the data of the SSE event that holds it) and its round trip in ms (time.perf_counter_ns
from just before the write to just after the read that completed it).

Scripts in benchmarks/ import it by name: Python puts a script's folder first on sys.path, and
tests/conftest.py's ``benchmark()`` does the same.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass

from mcpstart.targets.recipes import PORT

REVISION = "2025-11-25"
ACCEPT = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@dataclass
class Answer:
    message: dict
    size_bytes: int
    ms: float


def _initialize_params() -> dict:
    return {"protocolVersion": REVISION, "capabilities": {},
            "clientInfo": {"name": "raw-check", "version": "1"}}


class Stdio:
    """A server spawned on pipes, initialized (``initialize``, ``notifications/initialized``);
    a context manager that closes stdin and reaps it (SIGKILL after 5 s)."""

    def __init__(self, command):
        self.proc = subprocess.Popen(command.argv, cwd=command.cwd, env=command.environment(),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        self._next_id = 1
        self.initialized = self.request("initialize", _initialize_params())
        self._write({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _write(self, message: dict) -> None:
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict) -> Answer:
        """Write one request and read lines until its answer (others are skipped).

        Raises:
            RuntimeError: stdout closed first.
        """
        id_, self._next_id = self._next_id, self._next_id + 1
        data = json.dumps({"jsonrpc": "2.0", "id": id_, "method": method,
                           "params": params}).encode() + b"\n"
        start = time.perf_counter_ns()
        self.proc.stdin.write(data)
        self.proc.stdin.flush()
        while True:
            line = self.proc.stdout.readline()
            end = time.perf_counter_ns()
            if not line:
                raise RuntimeError(f"the server closed stdout before answering {method}")
            message = json.loads(line)
            if message.get("id") == id_:
                return Answer(message, len(line.rstrip(b"\r\n")), (end - start) / 1e6)

    def __enter__(self) -> "Stdio":
        return self

    def __exit__(self, *exc) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()


class Http:
    """An HTTP server spawned on a free loopback port ({port} in its command), reached once
    it accepts, initialized on one kept-alive connection (its Mcp-Session-Id kept); a context
    manager that ends the session (DELETE) and kills the server."""

    def __init__(self, command, start_timeout_s: float = 60):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.proc = subprocess.Popen([a.replace(PORT, str(self.port)) for a in command.argv],
                                     cwd=command.cwd, env=command.environment(),
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + start_timeout_s
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self._kill()
                    raise RuntimeError(f"nothing listens on port {self.port}")
                time.sleep(0.01)
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        self._next_id = 1
        self._response = None
        self.initialized = self.open_session()

    def open_session(self) -> Answer:
        """A new session on the connection: ``initialize`` (its Answer returned), its
        Mcp-Session-Id kept, then ``notifications/initialized``."""
        self.headers = dict(ACCEPT)
        answer = self.request("initialize", _initialize_params())
        self.headers.update({"Mcp-Session-Id": self._response.getheader("Mcp-Session-Id"),
                             "MCP-Protocol-Version": REVISION})
        self.conn.request("POST", "/mcp", json.dumps(
            {"jsonrpc": "2.0", "method": "notifications/initialized"}), self.headers)
        self.conn.getresponse().read()
        return answer

    def end_session(self) -> None:
        """DELETE the session."""
        self.conn.request("DELETE", "/mcp", headers=self.headers)
        self.conn.getresponse().read()

    def request(self, method: str, params: dict) -> Answer:
        """POST one request and read its whole answer (a JSON body or an event stream).

        Raises:
            RuntimeError: the answer is neither, or does not hold the request's id.
        """
        id_, self._next_id = self._next_id, self._next_id + 1
        body = json.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": params})
        start = time.perf_counter_ns()
        self.conn.request("POST", "/mcp", body, self.headers)
        self._response = self.conn.getresponse()
        raw = self._response.read()
        end = time.perf_counter_ns()
        kind = (self._response.getheader("Content-Type") or "").split(";")[0].strip()
        frames = [raw] if kind == "application/json" else [
            b"\n".join(line[5:].lstrip(b" ") for line in event.splitlines()
                       if line.startswith(b"data:"))
            for event in raw.replace(b"\r\n", b"\n").split(b"\n\n")]
        for data in frames:
            if data.strip() and (message := json.loads(data)).get("id") == id_:
                return Answer(message, len(data), (end - start) / 1e6)
        raise RuntimeError(f"{method}: HTTP {self._response.status} {raw[:200]!r}")

    def __enter__(self) -> "Http":
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.end_session()
        except (OSError, http.client.HTTPException):
            pass
        self.conn.close()
        self._kill()

    def _kill(self) -> None:
        """SIGKILL to the server's process group (it was started in a session of its own)."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()


def client(command, transport: str):
    """The plain client for a recipe's transport ("stdio" or "http")."""
    return Http(command) if transport == "http" else Stdio(command)
