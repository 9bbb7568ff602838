"""The Streamable HTTP transport: a server that listens on a loopback port mcpstart gives it
(``{port}`` in its argv), or one already running at a URL, reached with HTTP/1.1 POSTs whose
answers become Frames for the session above (session.py works over it unchanged). The bytes
of each request and answer are http1.py's (HTTP/1.1 framing, parsed by llhttp).

What the MCP specification asks of a client, and where this module does it:
- 2025-11-25, basic/transports, "Streamable HTTP": every JSON-RPC message is its own POST to
  the MCP endpoint with ``Accept: application/json, text/event-stream``; a notification or
  response is answered 202 with no body; a request with one JSON object or an SSE stream
  that may carry the server's notifications and requests before the response (both read:
  ``_finish`` and sse.EventStream); the ``Mcp-Session-Id`` the server sets on the
  ``InitializeResult`` is sent on every later request and ended with DELETE (``shutdown``,
  ``end_session``); ``MCP-Protocol-Version`` carries the negotiated revision on every request
  after initialize.
- 2025-11-25, "Listening for Messages from the Server": on a transport asked to ``listen``
  (the untimed sessions that call tools: warm.tool_session, the full sessions; never a
  timed cold start, whose phases a plain client's start must match request for request),
  once each session's ``notifications/initialized`` is sent, a GET on the endpoint (``Accept: text/event-stream``, the session's headers)
  opens the standalone stream where the server offers one (405: it offers none); the
  server's requests and notifications on it become frames as those of a POST's stream do,
  and the session answers them (session.py). It is closed before the session's DELETE.
- 2025-11-25, "Resumability and Redelivery": an event stream that ends or breaks before
  it is done (a POST's before its answer, the standalone one) after an event with an id is
  resumed by a GET with ``Last-Event-ID``, after the stream's last ``retry:`` time; its
  events continue the stream it resumes (a POST's answer may come on it). A resumption
  that brings no new event id is not tried again: the request then fails, saying so.
- 2025-11-25, "Session Management": a request carrying ``Mcp-Session-Id`` answered HTTP 404
  means the session is gone, and the client MUST start a new one: the initialize of the
  session is sent again without the id, then ``notifications/initialized``, then the
  request again with the new id, all before its answer (so its time holds them), and a
  note says so. Once per transport: a second 404 fails the request, naming both sessions.
- A redirect (RFC 9110, section 15.4: 301, 302, 303, 307, 308) to a request: with a
  ``Location`` of the endpoint's own origin (scheme, host, port), the request is sent again
  there, as it was, and so is every later one (the endpoint moved), with a note; once per
  transport. Another origin (where the session's headers, e.g. Authorization, must not go),
  no Location, or a second redirect fails the request at once, naming status and Location.
- 2026-07-28, basic/transports/streamable-http, "Request Metadata": a request whose
  ``params._meta`` names ``io.modelcontextprotocol/protocolVersion`` (the stateless era: no
  initialize, no session) carries ``MCP-Protocol-Version`` equal to it, ``Mcp-Method``, and
  for tools/call, resources/read and prompts/get ``Mcp-Name`` (``params.name`` or
  ``params.uri``), Base64-encoded as ``=?base64?...?=`` where it is not plain header-safe
  ASCII ("Value Encoding"). ``Mcp-Param-*`` headers (``x-mcp-header`` in a tool's
  inputSchema) are not sent: a tool that declares them is answered ``HeaderMismatch``.

An HTTP error status is an answer too: a body that is the JSON-RPC error answer of the
request passes as it is; anything else (plain text, an error with id null, no body) becomes
an error answer to that request whose message starts "HTTP <status>", so a failure is
evident at once and never waits for a timeout.

The process side: the server is spawned as the stdio transport spawns (stdio.prepare's
rules: resolved executable, environment built before the clock, a new session and process
group), with its stdin a pipe kept open and its stdout and stderr in one unlinked file
(never a pipe, which a server logging every request would fill while no one reads it, e.g.
under load). ``cpus`` pins it from its spawn: the calling thread's CPU affinity is set
around ``os.posix_spawn`` and the child inherits it (sched_setaffinity(2)). Shutdown: a
DELETE of the session, the connections closed, then SIGTERM to its process set, SIGKILL
after the grace (an HTTP server does not end at stdin EOF).

The port counts as accepting once a connect() to it succeeds: mcpstart tries a
non-blocking connect, and after a refusal (an RST, immediate on loopback) tries again after
``retry_interval_s``: 2% of the time since the spawn, at least 50 us (plus the sleep's
timer slack, 50 us) and at most 1 ms, so the figure is late by at most that interval (about
0.1 ms for a 1 ms start, 1 ms for a 0.5 s one). The retries sleep rather than spin: a
spinning client takes a core the starting server needs (docs/figures.md, "HTTP: spinning
against sleeping connect retries"). The connection that got through carries the first request.
"""

from __future__ import annotations

import base64
import errno
import json
import os
import select
import socket
import tempfile
import time
import zlib
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from urllib.parse import urljoin, urlsplit

from .. import interrupts
from ..command import Command
from ..endpoint import ENDPOINT, Endpoint
from . import jsonrpc
from .base import Ended, Exit, Frame, FrameTooLong, SpawnError, Transport
from .framing import MAX_LINE_BYTES, Outbox
from .http1 import Answers, content_decoder, request_head
from .sse import EventStream
from .exits import exit_fd
from .stdio import Prepared, _high_fd, rehearse, resolve
from .tree import ProcessSet, escalate, spawned

PORT = "{port}"
"""The placeholder of a command's argv that becomes the port the server listens on."""
ACCEPT = "application/json, text/event-stream"
MAX_CONNECTIONS = 4
"""Connections to one server at most: one carries the requests in turn; another opens only
when every open one is busy (a reply to a server's request while its event stream is open,
a request still unanswered after its wait ended, or an answered one whose stream the server
keeps open)."""
RETRY_MIN_S, RETRY_MAX_S, RETRY_FRACTION = 50e-6, 1e-3, 0.02
LOOK_MIN_S, LOOK_FRACTION = 0.1, 0.25
"""While a spawned server's port refuses connections, its process tree's listening sockets
are read 0.1 s after the spawn, then every 25% of the time since it (at least 0.1 s): a
server faster to listen costs no look; a slower one, a few looks of a few ms each. Two
looks in a row that find it listening elsewhere fail what is queued (one could see another
port of a server, e.g. its metrics, bound just before the MCP one)."""
POLL_RESOLUTION_S = 1e-3
"""poll(2) waits in whole milliseconds (Python rounds a shorter timeout up): a shorter wait
(a connect retry) sleeps, then looks once more; the sleep overshoots by the timer slack
(50 us), so the first retries come about every 0.1 ms."""
READ_CHUNK = 1 << 16
LOG_TAIL_BYTES = 2000
META_VERSION = "io.modelcontextprotocol/protocolVersion"
INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
"""The notification a session renewed after a 404 sends (``_renewed``)."""
NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
"""The methods whose ``Mcp-Name`` header mirrors a param (2026-07-28, "Standard Request
Headers")."""


OLD_SSE = ("the server speaks the deprecated HTTP+SSE transport (2024-11-05): its event stream "
           "sent an `endpoint` event naming {!r} as where to POST messages; mcpstart speaks "
           "Streamable HTTP (2025-03-26 and later), whose answers come on the POST itself")
"""The cause of an ``endpoint`` event, the first event of the old transport's stream
(2024-11-05, basic/transports, "HTTP with SSE"): evidence at once of that transport."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on now at ``host`` (the kernel's choice for port 0)."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def header_value(text: str) -> str:
    """``text`` as an ``Mcp-Name`` / ``Mcp-Param-*`` value: as it is when it is visible ASCII
    and spaces without leading or trailing whitespace, else ``=?base64?<UTF-8 Base64>?=``
    (2026-07-28, "Value Encoding"; a plain value that looks like the sentinel is encoded
    too)."""
    plain = (text.isascii() and all(0x20 <= ord(c) < 0x7F for c in text)
             and text == text.strip() and not (text.startswith("=?base64?")
                                               and text.endswith("?=")))
    return text if plain else f"=?base64?{base64.b64encode(text.encode()).decode()}?="


def retry_interval_s(since_spawn_s: float) -> float:
    """How long after a refused connect the next one is tried (module doc)."""
    return min(max(since_spawn_s * RETRY_FRACTION, RETRY_MIN_S), RETRY_MAX_S)


def with_port(command: Command, port: int) -> Command:
    """``command`` with every ``{port}`` of its argv replaced by ``port``."""
    return Command([a.replace(PORT, str(port)) for a in command.argv], command.cwd,
                   command.env, command.base_env)


@contextmanager
def affinity(cpus: frozenset[int] | None):
    """Within the block the calling thread runs on ``cpus`` (None: unchanged); what it
    spawns meanwhile inherits them. The thread's own set is restored after."""
    if not cpus:
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


@dataclass
class _Exchange:
    """One HTTP request and its answer as it arrives. ``kind``: "request", "notification",
    "response" (a reply to a server's request), "delete" (the session's end), "stream" (a
    GET for an event stream: the standalone one, or ``resumes`` a request's) or "raw" (bytes
    that are no JSON message); ``rpc_id``/``method``: the JSON-RPC request's; ``body``: the
    message's bytes as the session built them (a view: never copied)."""

    kind: str
    body: bytes | memoryview
    headers: list[tuple[str, str]]
    rpc_id: object = None
    method: str | None = None
    status: int | None = None
    reason: str = ""
    content_type: str = ""
    stream: EventStream | None = None
    buffer: bytearray = field(default_factory=bytearray)
    named: bool = False
    done: bool = False
    session_id: str | None = None
    headers_in: dict[str, str] = field(default_factory=dict)
    """The answer's header fields (lower-case names; a repeated one: its last value)."""
    retried: bool = False
    decoder: object = None
    """The answer's content decoder (http1.content_decoder), None when it has no coding."""
    prepared: list[memoryview] | None = None
    """The request's buffers (``_encode``), made before the clock for the first request of a
    spawn."""
    resumes: "_Exchange | None" = None
    """A "stream" GET's request whose event stream it resumes (None: the standalone one)."""
    last_event_id: str | None = None
    """The ``Last-Event-ID`` a "stream" GET sends (None: a new stream)."""
    not_before: float = 0.0
    """The clock's time before which it is not sent (a stream's ``retry:``)."""
    renews: "_Exchange | None" = None
    """An initialize sent again for this request, whose session was not found (HTTP 404):
    its answer is the transport's, never a frame (``_renewed``)."""


class _Connection:
    """One TCP connection, its answers' parser and the exchange it carries."""

    def __init__(self, sock: socket.socket, connecting: bool):
        self.sock = sock
        self.answers = Answers()
        self.connecting = connecting
        self.exchange: _Exchange | None = None
        self.out = Outbox()  # the requests' heads and bodies, each as it was made
        self.closed = False
        self.used = 0

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.sock.close()


def _label(exchange: _Exchange) -> str:
    """What an exchange carried, as a note names it."""
    return exchange.method or {"response": "a reply to the server's request",
                               "delete": "the session's DELETE",
                               "stream": "the standalone GET stream"}.get(
                                   exchange.kind, "bytes that are no message")


def _status(exchange: _Exchange) -> str:
    """"HTTP 200 OK (Content-Type: text/html)": an answer's status and the header fields
    that say what its body is."""
    fields = [f"{name}: {exchange.headers_in[name.lower()]}"
              for name in ("Content-Type", "Content-Encoding") if name.lower() in exchange.headers_in]
    return (f"HTTP {exchange.status} {exchange.reason}".rstrip()
            + f" ({', '.join(fields) or 'no Content-Type'})")


def _answered(conn: _Connection) -> bool:
    """Whether ``conn`` carries a request already answered on an event stream still open
    (the request's own, or the GET that resumed it)."""
    exchange = conn.exchange
    target = exchange and (exchange.resumes or exchange)
    return (exchange is not None and target.kind == "request" and target.named
            and exchange.stream is not None)


def _standalone(conn: _Connection) -> bool:
    """Whether ``conn`` carries the standalone GET stream (never a request in flight)."""
    exchange = conn.exchange
    return exchange is not None and exchange.kind == "stream" and exchange.resumes is None


def _prepare(command: Command) -> tuple[Prepared, int]:
    """The spawn made ready before the clock (stdio.prepare's rules), stdin a pipe, stdout and
    stderr one unlinked file; returns it and the file's descriptor.

    Raises:
        SpawnError: as stdio.resolve.
    """
    env = command.environment()
    path = resolve(command, env)
    stdin_r, stdin_w = (_high_fd(fd) for fd in os.pipe())
    fd, name = tempfile.mkstemp(prefix="mcpstart-http-server-", suffix=".log")
    try:  # the child's writes go to the end, from stdout or stderr
        child_log = _high_fd(os.open(name, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC))
    finally:
        os.unlink(name)
    log = _high_fd(fd)
    encoded = {os.fsencode(k): os.fsencode(v) for k, v in env.items()}
    prepared = Prepared(os.fsencode(path), [os.fsencode(a) for a in command.argv], encoded,
                        command.cwd, (stdin_r, child_log, child_log), (stdin_w, log, -1),
                        [(os.POSIX_SPAWN_DUP2, stdin_r, 0), (os.POSIX_SPAWN_DUP2, child_log, 1),
                         (os.POSIX_SPAWN_DUP2, child_log, 2)])
    return prepared, log


class HttpTransport(Transport):
    """A server over Streamable HTTP: ``HttpTransport(command)`` spawns ``command`` with a free
    loopback port in place of ``{port}`` (endpoint ``path``, /mcp by default);
    ``HttpTransport(url=...)`` speaks to a server already running (no process: memory and
    shutdown are not its own).
    Not thread-safe: one thread drives it (base.Transport).

    Attributes (besides base.Transport's):
        endpoint: where the MCP endpoint is.
        command: what is spawned (None for a URL).
        pid: the spawned process, 0 before the spawn and for a URL.
        accepting_ns: when the first connection got through.
        session_id: the ``Mcp-Session-Id`` of the current handshake-era session, or None.
        protocol_version: the revision ``initialize`` negotiated, sent as
            ``MCP-Protocol-Version`` on later handshake-era requests.
    Deviations below the session (a notification refused or answered with a body, bytes
    past an answer) go to the session's traffic through ``take_notes``.
    """

    def __init__(self, command: Command | None = None, *, url: str | None = None,
                 headers: dict[str, str] | None = None, cpus: frozenset[int] | None = None,
                 path: str = ENDPOINT):
        """Everything but the process, before the clock; ``path``: a spawned server's
        endpoint.

        Raises:
            SpawnError: as stdio.resolve (the program or working directory is missing).
            ValueError: a URL that is not http://HOST:PORT/PATH.
        """
        if (command is None) == (url is None):
            raise ValueError("HttpTransport needs a command or a URL, not both")
        self._spec = (command, url, headers, cpus, path)
        self.cpus = cpus
        self.command = None
        self._address = None
        self._spare: socket.socket | None = None
        if url is not None:
            self.endpoint = Endpoint.parse(url, headers)
            self.prepared, self._log = None, -1
        else:
            port = free_port()
            self.command = with_port(command, port)
            self.endpoint = Endpoint("127.0.0.1", port, path, tuple((headers or {}).items()))
            self.prepared, self._log = _prepare(self.command)
            self._stdin = self.prepared.parent_fds[0]
            self._address = (socket.AF_INET, socket.SOCK_STREAM, 0, "", ("127.0.0.1", port))
            self._spare = self._socket()
        self.pid = 0
        self.pidfd: int | None = None
        self._processes: ProcessSet | None = None
        self._exited_ns: int | None = None
        self._exit_news = False  # the exit was seen and not yet reported by a wait
        self._scanned_at_exit = False
        self.accepting_ns: int | None = None
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self.answer_shape: str | None = None
        """How the last answer to a request came, named as c-http's --answer names them:
        "json" (a JSON body), "sse" (an event stream whose first event named the request),
        "sse-primed" (one whose answer came after other events, e.g. an empty priming
        event); None before an answer."""
        self._notes: list[str] = []
        self._connections: list[_Connection] = []
        self._queue: deque[_Exchange] = deque()
        self._went_out: dict[object, int] = {}
        """JSON-RPC id -> when its request began to go out (went_out_ns)."""
        self._frames: list[Frame] = []
        self._retry_at: float | None = None
        self._look_at_s = LOOK_MIN_S  # since the spawn: when its listeners are next read
        self._elsewhere: list[str] = []
        self._refused: str | None = None
        self._answered: deque = deque(maxlen=64)  # the ids of the last requests answered
        self._counts: dict[str, int] = {}  # take_counts
        self._listening = False  # listen
        self._initialize: bytes | None = None  # the last initialize's body: a renewal's
        self._expired: str | None = None  # the session id a 404 ended (module doc)
        self._moved: str | None = None  # the Location a redirect was followed to

    def fresh(self) -> "HttpTransport":
        command, url, headers, cpus, path = self._spec
        return HttpTransport(command, url=url, headers=headers, cpus=cpus, path=path)

    @property
    def processes(self) -> ProcessSet | None:
        """The spawned server's processes (docs/process-tree.md), or None for a URL."""
        if self.command is None or not self.pid:
            return None
        if self._processes is None:
            self._processes = ProcessSet(self.pid)
        return self._processes

    # ----- start -----------------------------------------------------------------------
    def start(self, first_message: bytes | None = None, wait_s: float = 0.0) -> None:
        """Take the clock and spawn (pinned to ``cpus``), or for a URL just take the clock;
        queue ``first_message``; with ``wait_s`` block until the port accepts a connection
        (at most ``wait_s``) and send it at once.

        Raises:
            SpawnError: ``posix_spawn`` failed.
        """
        first = [self._exchange(line) for line in (first_message or b"").splitlines()
                 if line.strip()]  # encoded before the clock
        if first:
            try:
                first[0].prepared = self._encode(first[0])
            except ValueError:
                pass  # said when it is sent (_begin)
        if self.prepared is not None:
            self._spawn()
        else:
            self.t0_ns = self.now_ns()
        self._queue.extend(first)
        self._assign()
        if wait_s > 0:
            deadline = self.clock() + wait_s
            with interrupts.interruptible():  # a signal ends the wait, not the timeout
                while self.accepting_ns is None and self._refused is None and \
                        self._exited_ns is None and self.clock() < deadline:
                    self._pump(deadline)

    def _spawn(self) -> None:
        prepared = self.prepared
        previous = os.getcwd() if prepared.cwd is not None else None
        try:
            if previous is not None:
                os.chdir(prepared.cwd)
            with affinity(self.cpus):
                rehearse(prepared)
                self.t0_ns = self.now_ns()
                try:
                    self.pid = prepared.spawn()
                except OSError as err:
                    self.close()
                    raise SpawnError(err.errno, f"cannot start {os.fsdecode(prepared.argv[0])!r}"
                                                f": {err.strerror or err}") from err
            spawned(self.pid)
            os.close(prepared.child_fds[0])
            os.close(prepared.child_fds[1])
        finally:
            if previous is not None:
                os.chdir(previous)
        self.pidfd = exit_fd(self.pid)

    # ----- sending ---------------------------------------------------------------------
    def send(self, data: bytes, message: dict | None = None) -> None:
        """POST each JSON-RPC message of ``data`` (one per line, as the session frames them),
        in order, with the headers its era asks for (module doc). Given ``message`` (the one
        message ``data`` encodes, base.Transport.send), its id, method and params are read
        from it and ``data`` goes out as it is: a request of megabytes is neither parsed
        again nor copied."""
        if message is not None:
            end = len(data) - data.endswith(b"\n")
            self._queue.append(self._exchange(memoryview(data)[:end], message))
        else:
            for line in data.splitlines():
                if line.strip():
                    self._queue.append(self._exchange(line))
        if self._listening and self._queue \
                and self._queue[-1].method == "notifications/initialized":
            self._queue.append(self._stream())
        self._assign()

    def went_out_ns(self, request_id) -> int | None:
        """When the request began to go out on a connection (base.Transport.went_out_ns)."""
        return self._went_out.pop(request_id, None)

    def listen(self) -> None:
        """From the next ``notifications/initialized`` on, each session of this transport
        opens the standalone GET stream (module doc)."""
        self._listening = True

    def _stream(self, last_event_id: str | None = None,
                resumes: _Exchange | None = None) -> _Exchange:
        """A GET for an event stream (module doc): the standalone one, or with
        ``last_event_id`` the resumption of a stream (``resumes``: its request)."""
        headers = [("Accept", "text/event-stream")]
        if self.protocol_version:
            headers.append(("MCP-Protocol-Version", self.protocol_version))
        if self.session_id:
            headers.append(("Mcp-Session-Id", self.session_id))
        if last_event_id is not None:
            headers.append(("Last-Event-ID", last_event_id))
        return _Exchange("stream", b"", headers + list(self.endpoint.headers),
                         resumes=resumes, last_event_id=last_event_id)

    def _count(self, what: str) -> None:
        self._counts[what] = self._counts.get(what, 0) + 1

    def take_counts(self) -> dict[str, int]:
        """Event streams since the last call: ``standalone_opened`` (the GET answered with a
        stream), ``standalone_none`` (answered 405), ``resumed`` (GETs with
        ``Last-Event-ID``)."""
        counts, self._counts = self._counts, {}
        return counts

    def _exchange(self, body: bytes | memoryview, message: dict | None = None) -> _Exchange:
        """The exchange that POSTs ``body``; ``message`` is what it encodes (parsed from
        ``body`` when not given)."""
        if message is None:
            try:
                message = json.loads(body)
            except ValueError:
                message = None
        if not isinstance(message, dict):
            return _Exchange("raw", body, self._headers(None, None))
        method = message.get("method") if isinstance(message.get("method"), str) else None
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        kind = ("request" if method and "id" in message else
                "notification" if method else "response")
        if method == "initialize":
            self._initialize = bytes(body)
        return _Exchange(kind, body, self._headers(method, params), message.get("id"), method)

    def _headers(self, method: str | None, params: dict | None) -> list[tuple[str, str]]:
        headers = [("Content-Type", "application/json"), ("Accept", ACCEPT)]
        meta = (params or {}).get("_meta")
        modern = meta.get(META_VERSION) if isinstance(meta, dict) else None
        if isinstance(modern, str):  # 2026-07-28: per-request metadata, no session
            headers += [("MCP-Protocol-Version", modern), ("Mcp-Method", method or "")]
            name = (params or {}).get(NAMED.get(method or "", ""))
            if isinstance(name, str):
                headers.append(("Mcp-Name", header_value(name)))
        elif method != "initialize":
            if self.protocol_version:
                headers.append(("MCP-Protocol-Version", self.protocol_version))
            if self.session_id:
                headers.append(("Mcp-Session-Id", self.session_id))
        return headers + list(self.endpoint.headers)

    def end_input(self) -> None:
        """Nothing to close before the end: HTTP has no input stream (shutdown ends the
        session and the process)."""

    def new_session(self) -> None:
        """Forget the session: the next ``initialize`` opens another one on the same server
        (a full session per iteration); its event streams are closed."""
        self._close_streams()
        self.session_id = self.protocol_version = None

    def _close_streams(self) -> None:
        """Close the connections of the session's GET streams, and forget queued ones."""
        for conn in self._connections:
            if conn.exchange is not None and conn.exchange.kind == "stream":
                conn.exchange.done, conn.exchange = True, None
                conn.close()
        self._queue = deque(e for e in self._queue if e.kind != "stream")

    def end_session(self, timeout_s: float) -> int | None:
        """DELETE the current session (2025-11-25, "Session Management") and wait for the
        answer, at most ``timeout_s``. Returns its HTTP status (405: the server does not
        let clients end sessions), or None when there is no session or no answer came."""
        if self.session_id is None:
            return None
        self._close_streams()
        exchange = _Exchange("delete", b"", [("Mcp-Session-Id", self.session_id),
                                             *(([("MCP-Protocol-Version", self.protocol_version)]
                                                if self.protocol_version else [])),
                                             *self.endpoint.headers])
        self.session_id = None
        self._queue.append(exchange)
        deadline = self.clock() + timeout_s
        while not exchange.done and self.clock() < deadline and self._exited_ns is None:
            self._pump(deadline, frames_wait=True)
        return exchange.status if exchange.done else None

    # ----- the connections -------------------------------------------------------------
    def _assign(self) -> None:
        """Give queued exchanges, in order, to idle connections; open one when none is idle
        and ``_room`` allows it. A stream GET goes on a connection of its own (it holds it),
        once its ``not_before`` has come (``_timer`` wakes the pump for it); what is queued
        behind it does not wait for that, nor for a connection for it. Nothing overtakes a
        notification that awaits its 202 (2025-11-25: messages in order)."""
        while self._queue:
            if any(c.exchange is not None and c.exchange.kind == "notification"
                   and c.exchange.status is None for c in self._connections):
                return
            now = self.clock()
            for exchange in [e for e in self._queue if e.not_before <= now]:
                conn = None if exchange.kind == "stream" else next(
                    (c for c in self._connections if c.exchange is None and not c.closed
                     and self._usable(c)), None)
                self._connections = [c for c in self._connections if not c.closed]
                if conn is None and self._room(exchange):
                    conn = self._connect()
                if conn is not None:
                    break
                if exchange.kind != "stream":
                    return
            else:
                return
            self._queue.remove(exchange)
            self._begin(conn, exchange)

    def _usable(self, conn: _Connection) -> bool:
        """Whether an idle connection can carry the next request. The server may have closed
        it since its last answer (a FIN or RST is there to read), or written past that
        answer (a second answer, bytes beyond its Content-Length), which would be read as the
        next request's answer: such a connection is closed, the bytes noted."""
        if conn.used == 0:
            return True
        ready = select.poll()
        ready.register(conn.sock, select.POLLIN)
        if not ready.poll(0):
            return True
        try:
            data = conn.sock.recv(READ_CHUNK)
        except BlockingIOError:
            return True
        except OSError:
            data = b""
        if data:
            self._notes.append(f"the server wrote {len(data)} bytes after an answer, on a "
                               f"kept-alive connection (mcpstart closed it): "
                               f"{jsonrpc.clip(data, 80)}")
        conn.close()
        return False

    def _room(self, exchange: _Exchange) -> bool:
        """Whether another connection may open for ``exchange`` (``_assign`` holds everything
        while a notification awaits its 202): not for a notification while a request is in
        flight, and at most MAX_CONNECTIONS at once. A
        request whose answer came on an event stream the server keeps open (it SHOULD close
        it, 2025-11-25 "Sending Messages to the Server") is not in flight: at the limit, the
        oldest such stream (or an idle connection, first) is closed to make room."""
        in_flight = [c for c in self._connections if c.exchange is not None
                     and not _answered(c) and not _standalone(c)]
        if exchange.kind == "notification" and in_flight:
            return False
        if len(self._connections) >= MAX_CONNECTIONS:
            lingering = next((c for c in self._connections if c.exchange is None),
                             None) or next((c for c in self._connections if _answered(c)), None)
            if lingering is None:
                return False
            if lingering.exchange is not None:
                lingering.exchange.done, lingering.exchange = True, None
            lingering.close()
            self._connections.remove(lingering)
        return True

    def _connect(self) -> _Connection | None:
        """A new connection attempt, unless a refused one waits for its retry time. On
        loopback the kernel settles a connect within the call (an RST, or the handshake), so
        its outcome is looked at right away."""
        if self._refused is not None:
            self._fail_queue(self._refused)  # what was queued after the refusal, at once
            return None
        if self._retry_at is not None and self.clock() < self._retry_at:
            return None
        self._retry_at = None
        try:
            sock, self._spare = self._spare or self._socket(), None
        except OSError as err:
            self._fail_queue(f"cannot reach {self.endpoint.url}: {err.strerror or err}")
            return None
        code = sock.connect_ex(self._address[4])
        if code == errno.EINPROGRESS:
            ready = select.poll()
            ready.register(sock, select.POLLOUT)
            if ready.poll(0):
                code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        at = self.now_ns()
        if code not in (0, errno.EINPROGRESS):
            sock.close()
            self._on_refused(code)
            return None
        conn = _Connection(sock, connecting=code != 0)
        if code == 0:
            self._connected(conn, at)
        self._connections.append(conn)
        return conn

    def _socket(self) -> socket.socket:
        """A non-blocking TCP socket for the endpoint (TCP_NODELAY, as the SDKs' clients
        set it), made before it is needed: before the clock, and after each refusal.

        Raises:
            OSError: the host does not resolve, or no socket can be made.
        """
        if self._address is None:
            self._address = socket.getaddrinfo(self.endpoint.host, self.endpoint.port,
                                               type=socket.SOCK_STREAM)[0]
        sock = socket.socket(self._address[0], socket.SOCK_STREAM)
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock

    def _on_refused(self, code: int) -> None:
        """A connect that did not get through: a spawned server that is not listening yet is
        tried again (module doc); a URL's server is not there, which fails what is queued."""
        if self.command is not None and self.accepting_ns is None:
            since = (self.now_ns() - self.t0_ns) / 1e9
            if since >= self._look_at_s:
                self._look_at_s = since + max(LOOK_MIN_S, since * LOOK_FRACTION)
                elsewhere, self._elsewhere = self._elsewhere, self._listeners()
                if elsewhere and self._elsewhere:
                    self._fail_queue(
                        f"the server listens on {', '.join(self._elsewhere)}, not on "
                        f"{self.endpoint.authority}, the port mcpstart gave it in place of "
                        f"{PORT}: its command may not pass {PORT} on, or the server ignores it")
                    return
            self._retry_at = self.clock() + retry_interval_s(since)
            self._spare = self._socket()
            return
        if self._process_exited(0.1):
            return  # the server is gone: the session says how it ended
        self._fail_queue(f"cannot connect to {self.endpoint.url}: {os.strerror(code)}")

    def _listeners(self) -> list[str]:
        """Where the spawned process tree listens, sorted: "127.0.0.1:8000", "[::1]:8000"
        (TCP sockets in LISTEN) and "unix:PATH" (named Unix sockets); [] for a URL
        (tree.ProcessSet.listening)."""
        return self.processes.listening() if self.processes is not None else []

    def _connected(self, conn: _Connection, at_ns: int) -> None:
        conn.connecting = False
        if self.accepting_ns is None:
            self.accepting_ns = at_ns

    def _begin(self, conn: _Connection, exchange: _Exchange) -> None:
        try:
            data = exchange.prepared or self._encode(exchange)
        except ValueError as err:  # a header field that cannot be sent: fails at once
            self._failed(exchange, f"the request cannot be sent: {err}")
            return
        conn.exchange = exchange
        conn.used += 1
        if exchange.kind == "request":
            self._went_out.setdefault(exchange.rpc_id, self.now_ns())
        for part in data:
            conn.out.append(part)
        if not conn.connecting:
            self._write(conn)

    def _encode(self, exchange: _Exchange) -> list[memoryview]:
        """``exchange``'s request: its head (http1.request_head) and its body, when it has
        one, as they are.

        Raises:
            ValueError: a header field that cannot be sent (e.g. a negotiated revision,
                the server's word, holding a line break).
        """
        headers = [("Host", self.endpoint.authority), *exchange.headers]
        if exchange.kind in ("delete", "stream"):
            method = "DELETE" if exchange.kind == "delete" else "GET"
            return [memoryview(request_head(method, self.endpoint.path, headers))]
        body = memoryview(exchange.body)
        return [memoryview(request_head("POST", self.endpoint.path, headers, len(body))), body]

    def _write(self, conn: _Connection) -> None:
        """Write what the socket takes now of ``conn.out`` (framing.Outbox)."""
        while conn.out:
            try:
                sent = conn.sock.sendmsg(conn.out.views)
            except BlockingIOError:
                return
            except OSError as err:
                self._lost(conn, f"the connection failed while sending: {err.strerror or err}")
                return
            conn.out.sent(sent)

    # ----- receiving -------------------------------------------------------------------
    @property
    def output_open(self) -> bool:
        """False once the spawned process exited and none of its processes is left (a
        launcher's child that serves on keeps it open); always True for a URL."""
        if self.command is None or self._exited_ns is None:
            return True
        processes = self.processes
        if not self._scanned_at_exit:  # the children it may have left serving
            self._scanned_at_exit = True
            processes.scan()
        return bool(processes.alive())

    def partial(self) -> bytes:
        """The body of an answer to a request begun and not finished: a JSON body's bytes so
        far, or the data of an event not yet dispatched (sse.EventStream.unfinished); b""
        when none."""
        for conn in self._connections:
            exchange = conn.exchange
            if exchange is None or exchange.kind != "request" or exchange.status is None:
                continue
            held = (exchange.stream.unfinished if exchange.stream is not None
                    else bytes(exchange.buffer))
            if held:
                return held
        return b""

    framed_by_lines = False
    log_name = "its log (stdout and stderr)"
    noise_name = "event(s) of its HTTP answers"

    def silence(self) -> str:
        """"nothing accepted a connection at URL" (its argv may not pass ``{port}`` on), or
        "no byte of an HTTP answer"."""
        if self.accepting_ns is None:
            return f"nothing accepted a connection at {self.endpoint.url}"
        return "no byte of an HTTP answer"

    def receive(self, timeout_s: float, quiet_s: float | None = None) -> list[Frame]:
        """Serve the connections for at most ``timeout_s``, returning as soon as frames came
        (a JSON answer's body, or an event of an event stream), the process exited, or the
        time ran out ([]). ``quiet_s`` has no use here: a frame is whole or not yet there.

        Raises:
            FrameTooLong: a body or event larger than framing.MAX_LINE_BYTES.
        """
        deadline = self.clock() + max(timeout_s, 0)
        while not self._frames:
            stop = self._pump(deadline)
            if stop or self.clock() >= deadline:
                break
        frames, self._frames = self._frames, []
        return frames

    def _pump(self, deadline: float, frames_wait: bool = False) -> bool:
        """One wait: poll the connections and the process, handle what is ready. Returns
        True when it saw the process exit (once). Frames not yet taken end it at once
        unless ``frames_wait`` (a wait for something else: the session's DELETE)."""
        self._assign()
        if self._exit_news:  # seen while assigning (a reconnect the dead server refused)
            self._exit_news = False
            return True
        if self._frames and not frames_wait:  # made while assigning: no wait
            return False
        poller = select.poll()
        owners: dict[int, _Connection] = {}
        for conn in self._connections:
            mask = 0 if conn.connecting else select.POLLIN  # idle too: to see it closed
            if conn.connecting or conn.out:
                mask |= select.POLLOUT
            if mask:
                poller.register(conn.sock, mask)
                owners[conn.sock.fileno()] = conn
        if self.pidfd is not None and self._exited_ns is None:
            poller.register(self.pidfd, select.POLLIN)
        wait = min(deadline, self._timer()) - self.clock()
        short = wait < POLL_RESOLUTION_S and not owners  # a retry's wait: no socket to watch
        events = poller.poll(0 if short else max(wait, 0) * 1000)
        if not events and short and wait > 0:  # poll(2) rounds up to whole ms
            time.sleep(wait)  # not a spin: on 2 busy cores that takes the server's CPU
            events = poller.poll(0)
        woke = self.now_ns()
        for fd, event in events:
            conn = owners.get(fd)
            if conn is None:
                if fd == self.pidfd and self._exited_ns is None:
                    self._exited_ns, self._exit_news = woke, True
                continue
            if conn.connecting:
                self._finish_connect(conn, woke)
            elif event & select.POLLOUT and conn.out:
                self._write(conn)
            if event & (select.POLLIN | select.POLLHUP | select.POLLERR) and not conn.connecting \
                    and not conn.closed:
                self._read(conn, woke)
        self._connections = [c for c in self._connections if not c.closed]
        stop, self._exit_news = self._exit_news, False
        return stop

    def _timer(self) -> float:
        """The clock's time of the next thing due without a socket event: a connect retry,
        or a queued GET's ``not_before``; infinity when none."""
        due = [e.not_before for e in self._queue if e.not_before]
        return min(due + ([self._retry_at] if self._retry_at is not None else []),
                   default=float("inf"))

    def _finish_connect(self, conn: _Connection, woke: int) -> None:
        code = conn.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if code:
            exchange = conn.exchange
            conn.exchange = None
            conn.close()
            if exchange is not None:
                self._queue.appendleft(exchange)
            self._on_refused(code)
            return
        self._connected(conn, woke)
        self._write(conn)

    def _read(self, conn: _Connection, woke: int) -> None:
        try:
            chunk = conn.sock.recv(READ_CHUNK)
        except BlockingIOError:
            return
        except OSError as err:
            self._lost(conn, f"the connection failed: {err.strerror or err}")
            return
        if chunk:
            if self.first_byte_ns is None:
                self.first_byte_ns = woke
            self.received_bytes += len(chunk)
        events, error = conn.answers.feed(chunk)
        for event in events:
            if conn.closed:
                return
            self._event(conn, event, woke)
        if conn.closed:
            return
        if error is not None:
            self._lost(conn, f"the server's HTTP answer cannot be read: {error}")
        elif not chunk:
            begun = conn.exchange.status if conn.exchange is not None else None
            self._lost(conn, "the server closed the connection before answering" if begun is None
                       else f"the server closed the connection in the middle of its answer "
                            f"(HTTP {begun}: the body cut short)")

    def _event(self, conn: _Connection, event: tuple, woke: int) -> None:
        """One event of http1.Answers for the exchange ``conn`` carries."""
        exchange = conn.exchange
        if exchange is None:  # an answer to no request: the connection is not usable
            self._notes.append("the server wrote an answer after its answer, on a kept-alive "
                               "connection (mcpstart closed it)")
            conn.close()
            return
        if event[0] == "head":
            _, exchange.status, exchange.reason, fields = event
            headers = dict(fields)
            exchange.content_type = headers.get("content-type", "").split(";")[0].strip()
            exchange.session_id = headers.get("mcp-session-id")
            exchange.headers_in = headers
            if exchange.content_type == "text/event-stream" and 200 <= exchange.status < 300:
                exchange.stream = EventStream()
            if exchange.kind == "stream" and exchange.resumes is None \
                    and exchange.last_event_id is None:
                self._count("standalone_opened" if exchange.stream else "standalone_none"
                            if exchange.status == 405 else "standalone_refused")
            try:
                exchange.decoder = content_decoder(headers.get("content-encoding", ""))
            except ValueError as err:
                self._end(conn, f"{_status(exchange)} with {err}, a content coding mcpstart "
                                "does not decode (it sent no Accept-Encoding; the SDK clients "
                                "accept gzip and deflate)")
                return
            if exchange.decoder is not None:
                coding = headers["content-encoding"].strip()
                self._notes.append(f"answers {coding}-encoded (Content-Encoding: {coding}) "
                                   "though mcpstart sent no Accept-Encoding: decoded, as the "
                                   "SDK clients do (they ask for gzip and deflate)")
        elif event[0] == "body":
            data = event[1]
            if exchange.decoder is not None:
                try:
                    data = exchange.decoder.decompress(data)
                except zlib.error as err:
                    coding = exchange.headers_in.get("content-encoding", "").strip()
                    self._end(conn, f"{_status(exchange)}: its body cannot be decoded as "
                                    f"Content-Encoding: {coding} says ({err})")
                    return
            self._body(conn, exchange, data, woke)
        elif exchange.decoder is not None and not self._flushed(conn, exchange, woke):
            return
        elif self._finish(exchange, woke):
            conn.exchange = None
            if not event[1] or conn.out:  # an early answer (413) leaves the body unsent
                conn.close()
        elif event[1]:  # an earlier request's answer written again: this one's comes next
            exchange.done, exchange.status, exchange.buffer = False, None, bytearray()
        else:
            self._lost(conn, "the server answered an earlier request again, then closed the "
                             "connection")

    def _flushed(self, conn: _Connection, exchange: _Exchange, woke: int) -> bool:
        """The end of a coded body: what its decoder still holds goes to the body; False
        (the request failed) when the coded data ended short."""
        self._body(conn, exchange, exchange.decoder.flush(), woke)
        if conn.closed:
            return False
        if exchange.decoder.eof:
            return True
        coding = exchange.headers_in.get("content-encoding", "").strip()
        self._end(conn, f"{_status(exchange)}: its Content-Encoding: {coding} body ended "
                        "short of its end")
        return False

    def _body(self, conn: _Connection, exchange: _Exchange, data: bytes, woke: int) -> None:
        if exchange.stream is None:
            exchange.buffer += data
            if len(exchange.buffer) > MAX_LINE_BYTES:
                raise FrameTooLong(f"an HTTP answer of more than {MAX_LINE_BYTES} bytes")
            return
        for event in exchange.stream.feed(data):
            if event.event == "endpoint" and exchange.kind == "request":
                self._end(conn, OLD_SSE.format(jsonrpc.clip(event.data, 120)))
                return
            self._frame(exchange.resumes or exchange, event.data, woke)
        if exchange.stream.pending_bytes > MAX_LINE_BYTES:
            raise FrameTooLong(f"an event of more than {MAX_LINE_BYTES} bytes")

    def _frame(self, exchange: _Exchange, data: bytes, woke: int) -> None:
        if exchange.rpc_id is not None and jsonrpc.names_id(data, exchange.rpc_id):
            exchange.named = True
            self.answer_shape = ("json" if exchange.stream is None else
                                 "sse" if exchange.stream.ended <= 1 else "sse-primed")
            self._answered.append(exchange.rpc_id)
            if exchange.method == "initialize":
                self._initialized(exchange, data)
        if exchange.renews is not None:
            if exchange.named:
                self._renewed(exchange, data, woke)
            return
        self._frames.append(Frame(data, woke, source="event" if exchange.stream else "body"))

    def _initialized(self, exchange: _Exchange, data: bytes) -> None:
        """The session's id and negotiated revision from the initialize answer, for the
        headers of what follows (2025-11-25, "Session Management", "Protocol Version
        Header")."""
        try:
            result = json.loads(data).get("result")
        except (ValueError, AttributeError):
            return
        if isinstance(result, dict) and isinstance(result.get("protocolVersion"), str):
            self.protocol_version = result["protocolVersion"]
            self.session_id = exchange.session_id

    def _finish(self, exchange: _Exchange, woke: int) -> bool:
        """The exchange's answer is complete: its JSON body becomes a frame; an HTTP error,
        an empty answer to a request or an event stream that ended without the answer
        becomes an error answer (module doc). Returns False when the answer was one an
        earlier request already got, written again (a frame, which the session counts as a
        stray): the exchange's own answer is still to come."""
        exchange.done = True
        status, body = exchange.status, bytes(exchange.buffer)
        if exchange.kind == "delete":
            return True
        if exchange.kind == "stream":
            self._stream_ended(exchange, woke, None)
            return True
        ok = status is not None and 200 <= status < 300
        if exchange.kind != "request":
            if ok and body.strip() and self._again(body):
                self._frames.append(Frame(body, woke))
                return False
            what = _label(exchange)
            if not ok:
                self._notes.append(f"{what} refused with HTTP {status} {exchange.reason}".rstrip()
                                   + (f": {jsonrpc.clip(body, 200)}" if body.strip() else ""))
            elif status != 202 or body.strip():
                self._notes.append(f"{what} answered with HTTP {status}"
                                   + (" and a body" if body.strip() else "") + " (accepted; "
                                   "the specification asks 202 Accepted with no body)")
            return True
        if ok and exchange.stream is not None:
            self._stream_ended(exchange, woke, None)
            return True
        if ok and body.strip():
            decoded = jsonrpc.decode(body, "body")
            if not jsonrpc.is_message(decoded.value):
                self._error_answer(exchange, woke, f"{_status(exchange)}: a complete body of "
                                   f"{len(body)} bytes that is "
                                   f"{decoded.error or 'not a JSON-RPC message'}, beginning "
                                   f"{jsonrpc.clip(body, 80)!r}")
                return True
            self._frame(exchange, body, woke)
            if exchange.named:
                return True
        if not ok and self._moves(exchange, woke):
            return True
        if not ok and jsonrpc.names_id(body, exchange.rpc_id):
            self._frame(exchange, body, woke)  # the request's own JSON-RPC error answer
            return True
        if ok and body.strip():  # a body that does not name the request: the session's to judge
            return not self._again(body)
        self._error_answer(exchange, woke, None, body)
        return True

    def _moves(self, exchange: _Exchange, woke: int) -> bool:
        """A request's error status that moves the session (module doc): a 404 to a request
        carrying the session id starts a new session, a redirect is followed, each once and
        noted; each's second time, or a redirect that cannot be followed, is the request's
        error answer naming what happened. Returns False for any other status."""
        status, label = exchange.status, f"{exchange.method} answered {_status(exchange)}"
        sent_id = dict(exchange.headers).get("Mcp-Session-Id")
        if status == 404 and sent_id is not None and exchange.method != "initialize":
            if self._expired is not None or self._initialize is None:
                self._error_answer(exchange, woke, f"{label} carrying Mcp-Session-Id: "
                                   f"{sent_id}, a session started after an earlier 404 to "
                                   f"Mcp-Session-Id: {self._expired}: not found either (a new "
                                   "session is started once)")
                return True
            self._expired = sent_id
            self._notes.append(f"{label} carrying Mcp-Session-Id: {sent_id}: the session was "
                               "not found (expired); mcpstart started a new one, as the "
                               "specification says a client must, and sent the request again")
            self.session_id = None
            again = _Exchange("request", self._initialize, self._headers("initialize", None),
                              None, "initialize", renews=exchange)
            try:
                again.rpc_id = json.loads(self._initialize).get("id")
            except (ValueError, AttributeError):
                pass
            self._queue.appendleft(again)
            return True
        if status not in (301, 302, 303, 307, 308):
            return False
        location = exchange.headers_in.get("location", "").strip()
        target = urlsplit(urljoin(self.endpoint.url, location)) if location else None
        same = target is not None and target.scheme == "http" and (
            (target.hostname or "").lower(), target.port or 80) == (
            self.endpoint.host.lower().strip("[]"), self.endpoint.port)
        if not location or not same or self._moved is not None:
            why = ("with no Location: nowhere to follow it" if not location else
                   f"to Location: {location}, another origin than {self.endpoint.authority} "
                   "(the session's headers go to its own origin only)" if not same else
                   f"to Location: {location} after an earlier redirect to {self._moved} "
                   "(one is followed)")
            self._error_answer(exchange, woke, f"{label} {why}")
            return True
        self._moved = location
        path = (target.path or "/") + (f"?{target.query}" if target.query else "")
        self.endpoint = replace(self.endpoint, path=path)
        self._notes.append(f"{label} to Location: {location} (the same origin): mcpstart sent "
                           "it there, and every later request")
        self._queue.appendleft(_Exchange(exchange.kind, exchange.body, exchange.headers,
                                         exchange.rpc_id, exchange.method))
        return True

    def _renewed(self, renewal: _Exchange, data: bytes, woke: int) -> None:
        """The answer to a renewal's initialize (``_moves``): with a session, its
        ``notifications/initialized`` and the request again go first in the queue; else the
        request fails, saying what the initialize got."""
        request = renewal.renews
        if self.session_id is None:
            self._error_answer(renewal, woke, f"its answer gave no session: "
                                              f"{jsonrpc.clip(data, 200)}")
            return
        follow = [self._exchange(INITIALIZED)]
        if self._listening:
            follow.append(self._stream())
        follow.append(_Exchange("request", request.body, self._headers(request.method, None),
                                request.rpc_id, request.method))
        self._queue.extendleft(reversed(follow))

    def _stream_ended(self, exchange: _Exchange, woke: int, broke: str | None) -> None:
        """An event stream ended (``broke``: the cause of its connection's failure, None
        for an end the server made), or a stream GET was answered without one: what it
        held becomes frames; a stream left unfinished is resumed where the module doc says
        so; else a request whose answer it was to carry fails, saying how it ended."""
        stream = exchange.stream
        target = exchange.resumes or (exchange if exchange.kind == "request" else None)
        if stream is not None and broke is None:
            for event in stream.end():
                self._frame(target or exchange, event.data, woke)
        if target is not None and target.named:
            return
        if stream is None and exchange.kind == "stream":  # a GET answered without a stream
            if target is None:
                if exchange.status != 405:
                    self._notes.append(f"the standalone GET stream was answered "
                                       f"{_status(exchange)} (the specification asks for an "
                                       "event stream or HTTP 405)")
                return
            self._failed(target, f"the server ended its event stream without the answer, and "
                                 f"the GET that resumes it (Last-Event-ID: "
                                 f"{exchange.last_event_id}) was answered {_status(exchange)}")
            return
        last = stream.last_id if stream is not None else None
        if last is not None and last != exchange.last_event_id and (
                target is not None or self.session_id is not None):
            again = self._stream(last, target)
            again.not_before = self.clock() + (stream.retry_ms or 0) / 1000
            self._queue.append(again)
            self._count("resumed")
            return
        if target is None:
            return  # the standalone stream ended: the server may end it (2025-11-25)
        cause = broke or "the server ended its event stream without the answer"
        if exchange.last_event_id is not None:
            cause += (f" (it was resumed with Last-Event-ID: {exchange.last_event_id}, and "
                      "the resumed stream brought no further event id)")
        self._failed(target, cause)

    def _again(self, body: bytes) -> bool:
        """Whether ``body`` names a request answered already: its answer written again."""
        return any(jsonrpc.names_id(body, earlier) for earlier in self._answered)

    def _error_answer(self, exchange: _Exchange, woke: int, cause: str | None,
                      body: bytes = b"") -> None:
        """A JSON-RPC error answer to ``exchange``'s request that says what HTTP did."""
        status = exchange.status
        code, said = None, jsonrpc.clip(body.decode("utf-8", "replace").strip(), 300)
        try:
            error = json.loads(body).get("error")
            if isinstance(error, dict):
                code, said = error.get("code"), jsonrpc.clip(error.get("message"), 300)
        except (ValueError, AttributeError):
            pass
        text = cause or (f"HTTP {status} {exchange.reason}".rstrip()
                         + (f": {said}" if said else " with no body" if status != 202
                            else " with no answer (a request needs one)")
                         + self._hint(exchange))
        if exchange.renews is not None:  # the new session's initialize failed
            renews = exchange.renews
            self._error_answer(renews, woke, f"{_status(renews)} to {renews.method} carrying "
                               f"Mcp-Session-Id: {self._expired} (the session was not "
                               f"found), and the initialize of a new session failed: {text}")
            return
        message = {"jsonrpc": "2.0", "id": exchange.rpc_id,
                   "error": {"code": code, "message": text, "data": {"http_status": status}}}
        self._frames.append(Frame(jsonrpc.json_bytes(message), woke))

    def _hint(self, exchange: _Exchange) -> str:
        """What a user can change for a status that says the request never reached an MCP
        endpoint it may use: 401/403 (credentials: ``--header``), or 404 to an initialize
        (no endpoint at this path: ``--endpoint``, or the URL's path); else ""."""
        if exchange.status in (401, 403):
            return ("; the server asks for credentials: send them with --header "
                    "'Authorization: ...' (or a config entry's headers)")
        if exchange.status == 404 and exchange.method == "initialize" \
                and exchange.renews is None:
            return (f"; nothing serves MCP at {self.endpoint.path}: give the server's path "
                    "with --endpoint PATH (or in --url)")
        return ""

    def _end(self, conn: _Connection, cause: str) -> None:
        """The answer ``conn`` carries is evidently not one mcpstart can read: its request
        fails at once with ``cause``, and the connection (the rest of that answer) closes."""
        exchange, conn.exchange = conn.exchange, None
        conn.close()
        self._failed(exchange, cause)

    def _lost(self, conn: _Connection, cause: str) -> None:
        """A connection ended (or broke) mid-exchange: its request fails with ``cause``,
        unless the server's process exited (the session then says how it ended)."""
        exchange = conn.exchange
        conn.exchange = None
        conn.close()
        if exchange is None or exchange.done:
            return
        if exchange.status is None and conn.used > 1 and not exchange.retried:
            exchange.retried = True  # a kept-alive connection the server had just closed:
            self._queue.appendleft(exchange)  # at once on a new one (a dead server refuses it)
            self._notes.append(f"{_label(exchange)} sent again on a new connection: the server "
                               "closed a kept-alive connection before any byte of the answer "
                               "(it may have read the request, so the call may have run "
                               "twice; its time includes both tries)")
            return
        if self._process_exited(0.1):
            exchange.done = True
            return
        if exchange.stream is not None:
            exchange.done = True
            self._stream_ended(exchange, self.now_ns(), cause)
            return
        self._failed(exchange, cause)

    def _failed(self, exchange: _Exchange, cause: str) -> None:
        """``exchange`` ends without an answer: a request gets an error answer saying
        ``cause`` (unless its answer already came), anything else a note."""
        exchange.done = True
        if exchange.resumes is not None:
            self._failed(exchange.resumes, cause)
        elif exchange.kind == "request" and not exchange.named:
            self._error_answer(exchange, self.now_ns(), cause)
        elif exchange.kind != "request":
            self._notes.append(f"{_label(exchange)} not delivered: {cause}")

    def take_notes(self) -> list[str]:
        notes, self._notes = self._notes, []
        return notes

    def _process_exited(self, wait_s: float) -> bool:
        """True when the spawned process exited (waiting at most ``wait_s`` for its pidfd:
        a dying server closes its sockets just before it is gone)."""
        if self.pidfd is None:
            return False
        if self._exited_ns is None and select.select([self.pidfd], [], [], wait_s)[0]:
            self._exited_ns, self._exit_news = self.now_ns(), True
        return self._exited_ns is not None

    def _fail_queue(self, cause: str) -> None:
        """Nothing can be sent: every queued request fails with ``cause`` at once."""
        self._refused = cause
        woke = self.now_ns()
        while self._queue:
            exchange = self._queue.popleft()
            target = exchange.resumes or exchange
            if target.kind == "request":
                target.status = None
                self._error_answer(target, woke, cause)

    # ----- the process -----------------------------------------------------------------
    def exit(self) -> Exit | None:
        """How the spawned process ended, once it did (always None for a URL)."""
        if self._exited_ns is None or not self.pid:
            return None
        processes = self.processes
        others = bool(processes.alive())
        code = processes.exited.get(self.pid, {}).get("exit_code")
        return Exit(code, -code if code is not None and code < 0 else None, self._exited_ns,
                    others)

    def stderr_tail(self) -> str:
        """The last ~2000 bytes the server wrote on stdout and stderr (one file)."""
        if self._log < 0:
            return ""
        size = os.fstat(self._log).st_size
        text = os.pread(self._log, LOG_TAIL_BYTES, max(size - LOG_TAIL_BYTES, 0))
        return text.decode("utf-8", errors="replace")

    def log_text(self) -> str:
        """Everything the server wrote on stdout and stderr so far (its one log file)."""
        if self._log < 0:
            return ""
        return os.pread(self._log, os.fstat(self._log).st_size, 0).decode(
            "utf-8", errors="replace")

    def _leave(self, grace_s: float, exited: bool) -> None:
        """The client's part of a shutdown: the session ended (DELETE, at most
        ``min(grace_s, 1)`` s) unless the server has ``exited``, every connection closed and
        nothing left queued."""
        if self.session_id is not None and not exited:
            self.end_session(min(grace_s, 1.0))
        for conn in self._connections:
            conn.close()
        self._connections.clear()
        self._queue.clear()

    def shutdown(self, grace_s: float, kill_wait_s: float | None = None) -> Ended:
        """End the session (DELETE, at most ``min(grace_s, 1)`` s), close the connections,
        then end the spawned server: SIGTERM to its process set and wait ``grace_s``, SIGKILL
        and wait ``kill_wait_s`` (default ``grace_s``). ``Ended.ms`` runs from the SIGTERM
        to the last exit; ``how`` is "sigterm" for a server that ended on it, "closed" for a
        URL (nothing of it is mcpstart's to end)."""
        self._leave(grace_s, self._exited_ns is not None)
        if self.command is None:
            return Ended("closed", 0.0)
        if not self.pid:
            self.close()
            return Ended("already_exited", 0.0)
        processes = self.processes
        alive = [p.pid for p in processes.scan()]
        start = self.now_ns()
        ended = escalate(processes, self.pid, alive, start, "already_exited",
                         start if not alive else None, grace_s, kill_wait_s,
                         now_ns=self.now_ns)
        self.close()
        return ended

    def close(self) -> None:
        """Close the connections, the server's stdin, its log file and the pidfd (the
        process itself is ``shutdown``'s); for a spawn that never happened, every pipe."""
        for conn in self._connections:
            conn.close()
        self._connections.clear()
        if self._spare is not None:
            self._spare.close()
            self._spare = None
        if self.prepared is not None and not self.pid:
            self.prepared.close()
            self.prepared = None
            self._log = -1
            return
        for name in ("_stdin", "_log"):
            fd = getattr(self, name, -1)
            if fd >= 0:
                os.close(fd)
                setattr(self, name, -1)
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None
