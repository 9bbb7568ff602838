"""A plain MCP client for the independent checks, sharing no code with mcpstart's client:
JSON-RPC over a server's pipes (subprocess, the stdout BufferedReader's readline; or the pipes
of a server another client spawned, with os.read) or over Streamable HTTP (a plain socket, one kept-alive connection to /mcp). Each request returns an
Answer: the message, its size in bytes (the line without its line end; over HTTP the JSON body,
or the data of the SSE event that holds it) and its round trip in ms (time.perf_counter_ns
from just before the write to just after the read that completed it: the line, the body, or
the event, not the end of its stream).

Scripts in benchmarks/ import it by name: Python puts a script's folder first on sys.path, and
tests/conftest.py's ``benchmark()`` does the same.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import time
from contextlib import contextmanager
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


class Lines:
    """JSON-RPC requests over newline-delimited pipes; a subclass writes (``_send``) and reads
    one line (``_line``: with its newline, as readline gives it; b"" at EOF)."""

    _next_id = 1

    def request(self, method: str, params: dict) -> Answer:
        """Write one request and read lines until its answer (others are skipped).

        Raises:
            RuntimeError: stdout closed first.
        """
        id_, self._next_id = self._next_id, self._next_id + 1
        data = json.dumps({"jsonrpc": "2.0", "id": id_, "method": method,
                           "params": params}).encode() + b"\n"
        start = time.perf_counter_ns()
        self._send(data)
        while True:
            line = self._line()
            end = time.perf_counter_ns()
            if not line:
                raise RuntimeError(f"the server closed stdout before answering {method}")
            message = json.loads(line)
            if message.get("id") == id_:
                return Answer(message, len(line.rstrip(b"\r\n")), (end - start) / 1e6)


class Stdio(Lines):
    """A server spawned on pipes, initialized (``initialize``, ``notifications/initialized``);
    a context manager that closes stdin and reaps it (SIGKILL after 5 s)."""

    def __init__(self, command):
        self.proc = subprocess.Popen(command.argv, cwd=command.cwd, env=command.environment(),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        self.initialized = self.request("initialize", _initialize_params())
        self._send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
                   + b"\n")

    def _send(self, data: bytes) -> None:
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def _line(self) -> bytes:
        return self.proc.stdout.readline()

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


class Borrowed(Lines):
    """The plain client on the pipes of a server another client spawned and initialized (its
    stdin and stdout file descriptors), for turns of its own between the other's: no
    initialize. During a turn (``with client.turn():``) the descriptors block, as a
    subprocess's pipes do, and are set back after; the turn must end with every answer read,
    since the other client reads the same pipe next."""

    def __init__(self, stdin_fd: int, stdout_fd: int):
        self.stdin_fd, self.stdout_fd = stdin_fd, stdout_fd
        self._next_id = 1_000_000  # apart from the other client's ids
        self._rest = b""

    @contextmanager
    def turn(self):
        """Blocking descriptors for the block, restored after.

        Raises:
            RuntimeError: bytes after the last answer read (the other client's to read).
        """
        was = [os.get_blocking(fd) for fd in (self.stdin_fd, self.stdout_fd)]
        for fd in (self.stdin_fd, self.stdout_fd):
            os.set_blocking(fd, True)
        try:
            yield self
        finally:
            for fd, blocking in zip((self.stdin_fd, self.stdout_fd), was):
                os.set_blocking(fd, blocking)
        if self._rest:
            raise RuntimeError(f"the server wrote past the plain client's answers: {self._rest!r}")

    def _send(self, data: bytes) -> None:
        os.write(self.stdin_fd, data)

    def _line(self) -> bytes:
        while b"\n" not in self._rest:
            chunk = os.read(self.stdout_fd, 1 << 16)
            if not chunk:
                return b""
            self._rest += chunk
        line, newline, self._rest = self._rest.partition(b"\n")
        return line + newline


class Wire:
    """One kept-alive HTTP/1.1 connection to 127.0.0.1:PORT on a plain socket (TCP_NODELAY,
    each request one write), as lean as a client can be: http.client's header parsing (the
    email package) and buffered chunk reading cost a tenth of a millisecond or more per
    response, more than the client it checks. Reconnects after a "Connection: close"."""

    def __init__(self, port: int):
        self.port, self.sock, self.buffer = port, None, b""

    def send(self, method: str, body: bytes, headers: dict) -> None:
        if self.sock is None:
            self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=60)
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.buffer = b""
        head = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
        self.sock.sendall(f"{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n"
                          f"Content-Length: {len(body)}\r\n{head}\r\n".encode() + body)

    def head(self) -> tuple[int, dict]:
        """The response's status and headers (names lower-case); 1xx skipped."""
        while True:
            status = int(self._line().split()[1])
            headers = {}
            while line := self._line():
                name, _, value = line.decode("latin-1").partition(":")
                headers[name.strip().lower()] = value.strip()
            if status >= 200:
                return status, headers

    def body(self, headers: dict):
        """The response body's pieces as they arrive (chunked, Content-Length, or none)."""
        if headers.get("transfer-encoding", "").lower() == "chunked":
            while size := int(self._line().split(b";")[0], 16):
                yield self._exact(size)
                self._line()
            while self._line():  # trailers
                pass
        elif length := int(headers.get("content-length", 0)):
            yield self._exact(length)
        if headers.get("connection", "").lower() == "close":
            self.close()

    def drop_if_closed(self) -> None:
        """Forget the connection when the server closed it while it was idle (a server ends
        an idle kept-alive connection after its keep-alive timeout: uvicorn's, 5 s, can pass
        during another client's turn); the next request connects again."""
        if self.sock is not None and select.select([self.sock], [], [], 0)[0]:
            try:
                closed = not self.sock.recv(1, socket.MSG_PEEK)
            except OSError:
                closed = True
            if closed:
                self.close()

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def _fill(self) -> None:
        data = self.sock.recv(65536)
        if not data:
            raise RuntimeError("the server closed the connection")
        self.buffer += data

    def _line(self) -> bytes:
        while (end := self.buffer.find(b"\r\n")) < 0:
            self._fill()
        line, self.buffer = self.buffer[:end], self.buffer[end + 2:]
        return line

    def _exact(self, size: int) -> bytes:
        while len(self.buffer) < size:
            self._fill()
        data, self.buffer = self.buffer[:size], self.buffer[size:]
        return data


class Http:
    """An HTTP server spawned on a free loopback port ({port} in its command), reached once
    it accepts, initialized on one kept-alive connection (Wire; its Mcp-Session-Id kept); a
    context manager that ends the session (DELETE) and kills the server. With ``port``
    instead of a command, a server already listening on that loopback port, left running."""

    def __init__(self, command=None, start_timeout_s: float = 60, port: int | None = None):
        self.proc = None
        self.port = self._spawn(command, start_timeout_s) if port is None else port
        self.wire = Wire(self.port)
        self._next_id = 1
        self.initialized = self.open_session()

    def _spawn(self, command, start_timeout_s: float) -> int:
        """Spawn ``command`` on a free port and wait until it accepts; the port."""
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.proc = subprocess.Popen([a.replace(PORT, str(port)) for a in command.argv],
                                     cwd=command.cwd, env=command.environment(),
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + start_timeout_s
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return port
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self._kill()
                    raise RuntimeError(f"nothing listens on port {port}")
                time.sleep(0.01)

    def open_session(self) -> Answer:
        """A new session on the connection: ``initialize`` (its Answer returned), its
        Mcp-Session-Id kept, then ``notifications/initialized``."""
        self.headers = dict(ACCEPT)
        answer = self.request("initialize", _initialize_params())
        self.headers.update({"Mcp-Session-Id": self._headers.get("mcp-session-id", ""),
                             "MCP-Protocol-Version": REVISION})
        self._exchange("POST", json.dumps(
            {"jsonrpc": "2.0", "method": "notifications/initialized"}).encode())
        return answer

    @contextmanager
    def turn(self):
        """A turn of this client's between another's on the same server: first a connection
        the server closed while idle is dropped (Wire.drop_if_closed)."""
        self.wire.drop_if_closed()
        yield self

    def end_session(self) -> None:
        """DELETE the session."""
        self._exchange("DELETE", b"")

    def _exchange(self, method: str, body: bytes) -> None:
        """One request whose answer is read whole and dropped."""
        self.wire.send(method, body, self.headers)
        for _ in self.wire.body(self.wire.head()[1]):
            pass

    def request(self, method: str, params: dict) -> Answer:
        """POST one request and read its answer: a JSON body, or the event of an event stream
        that holds it (timed when that event's blank line is read, as a client acts on it
        then, not when the server ends the stream; the rest is read untimed).

        Raises:
            RuntimeError: the answer is neither, or does not hold the request's id.
        """
        id_, self._next_id = self._next_id, self._next_id + 1
        body = json.dumps({"jsonrpc": "2.0", "id": id_, "method": method,
                           "params": params}).encode()
        start = time.perf_counter_ns()
        self.wire.send("POST", body, self.headers)
        status, self._headers = self.wire.head()
        pieces = self.wire.body(self._headers)
        json_body = self._headers.get("content-type", "").split(";")[0].strip() \
            == "application/json"
        data = pending = b""
        for piece in pieces:
            pending = (pending + piece).replace(b"\r\n", b"\n")
            while not json_body and b"\n\n" in pending:
                event, pending = pending.split(b"\n\n", 1)
                data = b"\n".join(line[5:].lstrip(b" ") for line in event.split(b"\n")
                                  if line.startswith(b"data:"))
                if data.strip() and (message := json.loads(data)).get("id") == id_:
                    end = time.perf_counter_ns()
                    for _ in pieces:  # the rest of the stream, untimed
                        pass
                    return Answer(message, len(data), (end - start) / 1e6)
        end = time.perf_counter_ns()
        if json_body and (message := json.loads(pending)).get("id") == id_:
            return Answer(message, len(pending), (end - start) / 1e6)
        raise RuntimeError(f"{method}: HTTP {status} {(data or pending)[:200]!r}")

    def __enter__(self) -> "Http":
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.end_session()
        except (OSError, RuntimeError, ValueError):
            pass
        self.wire.close()
        self._kill()

    def _kill(self) -> None:
        """SIGKILL to the server's process group (it was started in a session of its own);
        nothing for a server this client did not spawn."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()


def client(command, transport: str):
    """The plain client for a recipe's transport ("stdio" or "http")."""
    return Http(command) if transport == "http" else Stdio(command)
