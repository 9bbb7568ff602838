"""A scripted Streamable HTTP server for tests: mcpstart's own HttpTransport (its HTTP/1.1
parser, http1.Answers, its event streams, its exchanges and their causes) with only the
sockets and the clock replaced, as tests/scripted.py replaces the stdio pipes. A wait that
times out advances the virtual clock instead of sleeping.

An ``HttpScript`` answers each request the client sends on a connection with ``Wire``
events, each after a delay in virtual seconds: bytes on that connection (cut anywhere, as a
real server's writes may be), the server closing that connection, the process listening
(on the port mcpstart gave it, or elsewhere), or the process exiting. ``HttpGood`` answers
as a correct server does (tests/scripted.py's GoodServer for the JSON-RPC side).
"""

from __future__ import annotations

import errno
import json
from collections import deque
from dataclasses import dataclass, field

from mcpstart.command import Command
from mcpstart.transports.base import Ended, Exit
from mcpstart.transports.http import HttpTransport, _Connection

from scripted import GoodServer

REASONS = {200: "OK", 202: "Accepted", 204: "No Content", 301: "Moved Permanently",
           302: "Found", 307: "Temporary Redirect", 308: "Permanent Redirect",
           400: "Bad Request",
           401: "Unauthorized", 404: "Not Found", 405: "Method Not Allowed",
           500: "Internal Server Error"}


@dataclass
class Wire:
    """One event the scripted server causes, ``after_s`` virtual seconds after the request
    that caused it (after the spawn for ``HttpScript.boot``): ``kind`` "bytes" (``data`` on
    the request's connection), "close" (the server closes that connection), "listen" (it
    listens: on mcpstart's port when ``where`` is None, else only at ``where``, e.g.
    "127.0.0.1:8000") or "exit" (the process ends with ``code``; its connections close).
    ``on``: an earlier request whose connection takes the bytes or the close instead (the
    standalone GET stream, a request held open)."""

    kind: str
    data: bytes = b""
    after_s: float = 0.0
    code: int = 0
    where: str | None = None
    on: "Request | None" = None


@dataclass
class Request:
    """A request as the scripted server reads it: ``method``, ``target``, ``headers``
    (lower-case names), ``body`` and ``message`` (the body's JSON, None when it is none);
    ``sock``: the connection it came on."""

    method: str
    target: str
    headers: dict[str, str]
    body: bytes
    message: object = None
    sock: object = field(default=None, repr=False, compare=False)


def answer(status: int, body: bytes = b"", content_type: str = "application/json",
           headers: tuple[tuple[str, str], ...] = (), framing: str = "length") -> bytes:
    """An HTTP/1.1 answer's bytes: ``framing`` "length" (Content-Length), "chunked" (one
    chunk) or "close" (delimited by the server closing the connection: follow with a
    "close" Wire)."""
    lines = [f"HTTP/1.1 {status} {REASONS.get(status, 'Status')}"]
    if content_type:
        lines.append(f"Content-Type: {content_type}")
    lines += [f"{k}: {v}" for k, v in headers]
    if framing == "length":
        lines.append(f"Content-Length: {len(body)}")
        payload = body
    elif framing == "chunked":
        lines.append("Transfer-Encoding: chunked")
        payload = (f"{len(body):x}\r\n".encode() + body + b"\r\n" if body else b"") + b"0\r\n\r\n"
    else:
        lines.append("Connection: close")
        payload = body
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + payload


def event_stream(*messages: dict, prime: bool = True) -> bytes:
    """An event stream carrying ``messages`` (a priming event first when ``prime``)."""
    events = b"id: 0\ndata:\n\n" if prime else b""
    for index, message in enumerate(messages, 1):
        events += b"id: %d\ndata: %s\n\n" % (index, json.dumps(message).encode())
    return events


class HttpGood(GoodServer):
    """A correct Streamable HTTP server (2025-11-25): POST /mcp with one message, a session
    id set on the initialize answer, 202 for notifications and replies, 204 for DELETE, 405
    for GET; ``boot`` lists what happens after the spawn (listening at once)."""

    session = "s-1"
    boot: tuple[Wire, ...] = (Wire("listen"),)

    def http(self, request: Request) -> list[Wire]:
        """The Wire events for one request."""
        if request.method == "DELETE":
            return [Wire("bytes", answer(204, content_type=""))]
        if request.method != "POST":
            return [Wire("bytes", answer(405, content_type=""))]
        reply = self.reply(request.message)
        if reply is None:
            return [Wire("bytes", answer(202, content_type=""))]
        return [Wire("bytes", self.body(request, reply))]

    def body(self, request: Request, reply: dict) -> bytes:
        """A request's 200 answer carrying ``reply`` (JSON), with the session id on the
        initialize answer."""
        headers = ((("Mcp-Session-Id", self.session),)
                   if isinstance(request.message, dict)
                   and request.message.get("method") == "initialize" else ())
        return answer(200, json.dumps(reply).encode(), headers=headers)


class _Socket:
    """The client's end of one scripted connection: what it sends is read by the script,
    what the script writes waits in ``inbox`` for ``recv``."""

    def __init__(self, owner: "ScriptedHttpTransport"):
        self.owner = owner
        self.inbox: deque[bytes] = deque()
        self.sent = bytearray()
        self.closed = False

    def sendmsg(self, views) -> int:
        data = b"".join(bytes(v) for v in views)
        self.sent += data
        self.owner._requests(self)
        return len(data)

    def recv(self, size: int) -> bytes:
        if not self.inbox:
            raise BlockingIOError
        chunk = self.inbox.popleft()
        if len(chunk) > size:
            self.inbox.appendleft(chunk[size:])
            chunk = chunk[:size]
        return chunk

    def close(self) -> None:
        self.closed = True


@dataclass
class _Due:
    at_s: float
    order: int
    wire: Wire
    sock: _Socket | None = None


class ScriptedHttpTransport(HttpTransport):
    """An HttpTransport whose server is ``script`` (an HttpGood or one like it), spawned
    (mcpstart's port given in its argv) on a virtual clock that starts at 0.

    Attributes:
        requests: every request the client sent, in order.
        lifetime_s: the virtual time at shutdown.
        listening_at: where the script listens other than on mcpstart's port.
    """

    def __init__(self, script: HttpGood, url: str = "http://10.0.0.1:40001/mcp",
                 headers: dict[str, str] | None = None):
        super().__init__(url=url, headers=headers)
        self.command = Command(["scripted"])  # a spawned server's rules (retries, exits)
        self.script = script
        self.now_s = 0.0
        self._due: list[_Due] = []
        self._order = 0
        self._on_port = False
        self.listening_at: list[str] = []
        self._exit: Exit | None = None
        self.requests: list[Request] = []
        self.lifetime_s: float | None = None

    def fresh(self) -> "ScriptedHttpTransport":
        return ScriptedHttpTransport(self.script.fresh(), self.endpoint.url,
                                     dict(self.endpoint.headers))

    def clock(self) -> float:
        return self.now_s

    def now_ns(self) -> int:
        return int(self.now_s * 1e9)

    def start(self, first_message: bytes | None = None, wait_s: float = 0.0) -> None:
        self._schedule(list(self.script.boot), None)  # the spawn, at the clock's zero
        super().start(first_message, wait_s)

    def _schedule(self, wires: list[Wire], sock: _Socket | None) -> None:
        for wire in wires:
            self._order += 1
            self._due.append(_Due(self.now_s + wire.after_s, self._order, wire,
                                  wire.on.sock if wire.on is not None else sock))
        self._due.sort(key=lambda d: (d.at_s, d.order))

    def _requests(self, sock: _Socket) -> None:
        """Every whole request ``sock`` has sent, handed to the script."""
        while b"\r\n\r\n" in sock.sent:
            head, _, rest = bytes(sock.sent).partition(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, target, _ = lines[0].split(" ", 2)
            headers = {k.strip().lower(): v.strip()
                       for k, _, v in (line.partition(":") for line in lines[1:])}
            size = int(headers.get("content-length", 0))
            if len(rest) < size:
                return
            body, sock.sent = rest[:size], bytearray(rest[size:])
            try:
                message = json.loads(body) if body else None
            except ValueError:
                message = None
            request = Request(method, target, headers, body, message, sock)
            self.requests.append(request)
            self._schedule(self.script.http(request), sock)

    def _socket(self):
        return None

    def _connect(self) -> _Connection | None:
        if self._refused is not None:
            self._fail_queue(self._refused)
            return None
        if self._retry_at is not None and self.clock() < self._retry_at:
            return None
        self._retry_at = None
        if not self._on_port or self._exit is not None:
            self._on_refused(errno.ECONNREFUSED)
            return None
        conn = _Connection(_Socket(self), connecting=False)
        self._connected(conn, self.now_ns())
        self._connections.append(conn)
        return conn

    def _usable(self, conn: _Connection) -> bool:
        return not conn.closed

    def _listeners(self) -> list[str]:
        return list(self.listening_at)

    def _process_exited(self, wait_s: float) -> bool:
        return self._exit is not None

    def _pump(self, deadline: float, frames_wait: bool = False) -> bool:
        self._assign()
        if not self._exit_news and (frames_wait or not self._frames):
            until = min(deadline, self._timer())
            self._due = [d for d in self._due if d.sock is None or not d.sock.closed]
            if self._due and self._due[0].at_s <= until:
                due = self._due.pop(0)
                self.now_s = max(self.now_s, due.at_s)
                self._apply(due)
            else:
                self.now_s = max(self.now_s, until)
        stop, self._exit_news = self._exit_news, False
        return stop

    def _apply(self, due: _Due) -> None:
        wire = due.wire
        if wire.kind == "listen":
            if wire.where is None:
                self._on_port = True
            else:
                self.listening_at.append(wire.where)
        elif wire.kind == "exit":
            self._exit = Exit(wire.code, None, self.now_ns())
            self._exited_ns, self._exit_news = self.now_ns(), True
            for conn in list(self._connections):
                conn.sock.inbox.append(b"")
                self._read(conn, self.now_ns())
        elif due.sock is not None:
            conn = next((c for c in self._connections if c.sock is due.sock), None)
            if conn is None:
                return
            due.sock.inbox.append(wire.data if wire.kind == "bytes" else b"")
            while due.sock.inbox and not conn.closed:  # as poll(2) would wake it again
                self._read(conn, self.now_ns())

    def exit(self) -> Exit | None:
        return self._exit

    @property
    def output_open(self) -> bool:
        return self._exit is None

    def stderr_tail(self) -> str:
        return ""

    def shutdown(self, grace_s: float, kill_wait_s: float | None = None) -> Ended:
        self._leave(grace_s, self._exit is not None)
        self.lifetime_s = self.now_s
        if self._exit is not None:
            return Ended("already_exited", 0.0, self._exit.code)
        self._exit = Exit(-15, 15, self.now_ns())
        return Ended("sigterm", 0.0, -15)

    def close(self) -> None:
        for conn in self._connections:
            conn.close()
        self._connections.clear()


@dataclass
class HttpSpawner:
    """``Settings.http_spawner`` for scripted HTTP servers: every spawn (or URL) of a
    server plays ``script()``; every transport made is kept."""

    script: type
    made: list = field(default_factory=list)

    def __call__(self, command=None, *, url=None, headers=None, cpus=None,
                 path="/mcp") -> ScriptedHttpTransport:
        transport = ScriptedHttpTransport(self.script(), url or f"http://10.0.0.1:40001{path}",
                                          headers)
        self.made.append(transport)
        return transport
