"""One client session with an MCP server over a transport (base.Transport; stdio today): requests and their waits,
the tolerant handling of everything else a server writes, and the spec's shutdown.

Tolerant as docs/faults.md asks: stdout lines that are not JSON-RPC are skipped and
counted, notifications recorded, requests from the server answered, CRLF accepted, stderr
drained, almost-right answers accepted or failed at once (jsonrpc.py), and every wait ends
within its timeout with a cause that names the request ("no answer to tools/list within
10 s", "tools/call reverse_text: ..."). All I/O happens on the calling thread
(transport.py), so a response is stamped when it became readable. Every wait is timed by the
transport's clock.
"""

from __future__ import annotations

import json
import re
import signal
import time
from collections import Counter, deque
from dataclasses import dataclass, field

from .. import interrupts, warnings as warn
from . import jsonrpc
from .base import Ended, Frame, FrameTooLong, SpawnError, Transport, elapsed_ms
from .stdio import poll_many

CARRIER = {"body": "body", "event": "event"}
"""Frame.source -> the carrier clients.DEVIATIONS names (a stdio line otherwise)."""


@dataclass(frozen=True)
class Waits:
    """The fixed waits of a session (recorded with a run's settings; tests shorten them).

    Attributes:
        shutdown_grace_s: how long each shutdown step (stdin EOF, then SIGTERM, then SIGKILL)
            may take before the next one.
        diagnosis_s: after a timeout, how long mcpstart listens for a late answer once stdin
            is closed while it finds the cause; a silent server's LSP probe may take twice
            that (in a fresh process).
    """

    shutdown_grace_s: float = 2.0
    diagnosis_s: float = 2.0


class SessionError(Exception):
    """A wait on the server ended without a usable answer. ``str(err)`` is the cause."""


class FramingError(SessionError):
    """The server frames messages with LSP-style Content-Length headers instead of newlines."""


class NoAnswer(SessionError):
    """Nothing answered the request within its timeout (the server may still run)."""


class Exited(SessionError):
    """The server exited, or closed stdout, before it answered."""


@dataclass
class Response:
    """The answer to one request. ``at_ns``: ``time.perf_counter_ns()`` right after the read
    that completed its line; ``size_bytes``: the line's length as written (line end
    excluded); ``sent_ns``: when the request was handed to the transport; ``invalid_utf8``: what
    the answer's invalid UTF-8 is and what clients do with it (jsonrpc.Decoded), else None."""

    message: dict
    at_ns: int
    size_bytes: int
    sent_ns: int
    invalid_utf8: str | None = None
    went_ns: int = 0
    """When the request went out: ``sent_ns``, or later where the transport held it back
    (Transport.went_out_ns: over HTTP, behind a notification awaiting its 202)."""

    @property
    def answer_ms(self) -> float:
        """From the request handed to the transport to its answer, in ms: the server's time
        (and the transport's framing of this one request), none of the caller's."""
        return (self.at_ns - self.sent_ns) / 1e6

    @property
    def call_ms(self) -> float:
        """From the request going out to its answer, in ms: what a client that sends its
        messages in order times for this one request (per-tool warm latency)."""
        return (self.at_ns - (self.went_ns or self.sent_ns)) / 1e6


@dataclass
class Traffic:
    """What a session saw besides the awaited answers (reported as warnings)."""

    noise_lines: int = 0
    noise_example: str | None = None
    crlf_lines: int = 0
    notifications: Counter = field(default_factory=Counter)
    server_requests: Counter = field(default_factory=Counter)
    stray_responses: int = 0
    stray_example: str | None = None
    irregular: Counter = field(default_factory=Counter)
    split: Counter = field(default_factory=Counter)
    launcher_exit: dict | None = None
    refused: Counter = field(default_factory=Counter)
    unknown_progress: int = 0
    stderr_messages: int = 0
    streams: Counter = field(default_factory=Counter)

    def merge(self, other: "Traffic") -> None:
        """Add ``other``'s counts to these (first examples win)."""
        self.noise_lines += other.noise_lines
        self.noise_example = self.noise_example or other.noise_example
        self.crlf_lines += other.crlf_lines
        self.notifications.update(other.notifications)
        self.server_requests.update(other.server_requests)
        self.stray_responses += other.stray_responses
        self.stray_example = self.stray_example or other.stray_example
        self.irregular.update(other.irregular)
        self.split.update(other.split)
        self.launcher_exit = self.launcher_exit or other.launcher_exit
        self.refused.update(other.refused)
        self.unknown_progress += other.unknown_progress
        self.stderr_messages += other.stderr_messages
        self.streams.update(other.streams)

    def record(self) -> dict:
        """The results file's ``traffic`` block: counts per method of the notifications and
        server requests, lines skipped, stray responses, JSON-RPC messages on stderr and
        HTTP event streams (``streams``: HttpTransport.take_counts's counts)."""
        return {"notifications": dict(sorted(self.notifications.items())),
                "server_requests": dict(sorted(self.server_requests.items())),
                "refused_requests": dict(sorted(self.refused.items())),
                "noise_lines": self.noise_lines, "crlf_lines": self.crlf_lines,
                "stray_responses": self.stray_responses,
                "unknown_progress": self.unknown_progress,
                "stderr_messages": self.stderr_messages,
                "streams": dict(sorted(self.streams.items()))}

    def warnings(self) -> list[dict]:
        """The stored warnings (warnings.py) for everything irregular the session saw."""
        notes = []
        if self.noise_lines:
            notes.append(warn.stdout_noise(self.noise_lines, self.noise_example))
        if self.crlf_lines:
            notes.append(warn.crlf(self.crlf_lines))
        notes += [warn.irregular_answer(note, count)
                  for note, count in sorted(self.irregular.items())]
        notes += [warn.clients_disagree(note, count) for note, count in sorted(self.split.items())]
        if self.server_requests:
            notes.append(warn.server_requests(self.server_requests))
        if self.stray_responses:
            notes.append(warn.stray_responses(self.stray_responses, self.stray_example))
        if self.launcher_exit:
            notes.append(self.launcher_exit)
        if self.unknown_progress:
            notes.append(warn.unknown_progress(self.unknown_progress))
        if self.stderr_messages:
            notes.append(warn.stderr_messages(self.stderr_messages))
        return notes


class Session:
    """A spawned MCP server and the client side of its transport.

    Use ``Session.start(...)``, as a context manager or finishing with ``shutdown()`` (also
    on errors), which guarantees no process of the server outlives the session.

    Attributes:
        transport: the process and its pipes (``t0_ns``, ``first_byte_ns`` ...).
        waits: the fixed waits (shutdown grace, diagnosis).
        traffic: irregular traffic seen so far.
        ended: the shutdown's outcome, once shut down.
    """

    def __init__(self, transport: Transport, waits: Waits = Waits()):
        self.transport = transport
        self.waits = waits
        self.traffic = Traffic()
        self.ended: Ended | None = None
        self._backlog: deque[Frame] = deque()
        self._joined: list[bytes] | None = None
        self._pending: dict[int, tuple[str, int]] = {}
        self._sent: set[int] = set()
        self._notified: set[str] = set()  # the methods of the notifications sent
        self._next_id = 1
        self._answers = 0
        self._last_sent_ns, self._last_what = 0, "the first request"

    # ----- start -----------------------------------------------------------------------
    @classmethod
    def start(cls, transport: Transport, first_request: dict | None = None,
              wait_s: float = 0.0, waits: Waits = Waits()) -> "Session":
        """Start ``transport`` (for stdio: spawn, no shell, a new session and process group,
        three pipes) with ``first_request`` already on its way. The clock
        (``transport.t0_ns``) starts just before the request is written and the spawn;
        ``wait_s`` (a timed spawn) makes the spawn block right away until the server writes
        something (Transport.start), at most that long.

        Args:
            first_request: a JSON-RPC request (its id must be 1; later requests number on).

        Raises:
            SessionError: the program cannot be started (not found, not executable, no such
                working directory).
        """
        session = cls(transport, waits)
        try:
            first = jsonrpc.encode(first_request) if first_request else None
            if first_request:
                session._pending[first_request["id"]] = (_what(first_request), 0)  # 0: t0
                session._sent.add(first_request["id"])
                session._next_id = first_request["id"] + 1
            with interrupts.shielded():  # an exit signal cannot separate spawn from _LIVE
                _LIVE.add(session)  # first: a signal may end the start's wait (interruptible)
                try:
                    session.transport.start(first, wait_s)
                except Exception:  # not started (SystemExit comes only after the spawn)
                    _LIVE.discard(session)
                    raise
        except SpawnError as err:
            raise SessionError(err.strerror) from err
        return session

    @property
    def t0_ns(self) -> int:
        """``time.perf_counter_ns()`` just before the spawn."""
        return self.transport.t0_ns

    @property
    def processes(self):
        """The server's processes (tree.ProcessSet), or None where the transport has none."""
        return self.transport.processes

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        if self.ended is None:
            self.shutdown()

    # ----- requests --------------------------------------------------------------------
    def notify(self, method: str, params: dict | None = None) -> None:
        """Send a JSON-RPC notification (no answer expected)."""
        message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.transport.send(jsonrpc.encode(message), message)
        self._notified.add(method)
        self._last_sent_ns, self._last_what = self.transport.now_ns(), method

    def send_request(self, method: str, params: dict | None = None) -> int:
        """Write a request (as much as the pipe takes now; the rest during the wait).
        Returns its id."""
        request_id = self._next_id
        self._next_id += 1
        message = {"jsonrpc": "2.0", "id": request_id, "method": method,
                   "params": params if params is not None else {}}
        data = jsonrpc.encode(message)
        sent = self.transport.now_ns()
        self.transport.send(data, message)
        self._pending[request_id] = (_what(message), sent)
        self._last_sent_ns, self._last_what = sent, _what(message)
        self._sent.add(request_id)
        return request_id

    def request(self, method: str, params: dict | None, timeout_s: float) -> Response:
        """Send a request and wait for its answer; see ``wait``."""
        return self.wait(self.send_request(method, params), timeout_s)

    def wait(self, request_id: int, timeout_s: float, diagnose: bool = True) -> Response:
        """Serve the pipes until the answer to ``request_id`` arrives, at most ``timeout_s``
        after the request was sent (the first request: after the spawn).

        Everything else is handled on the way (jsonrpc.py): noise counted, notifications
        recorded, server requests answered (``ping`` with ``{}``, ``roots/list`` with no
        roots, anything else with -32601), almost-right answers accepted with a note.

        Returns:
            The answer, also an error answer (check ``message.get("error")``).

        With ``diagnose`` (the default), a timeout is followed by a search for its cause
        (a late answer once stdin is closed, LSP framing in a fresh process), which takes a
        few seconds more; without it the wait ends at the timeout (protocol probes).

        Raises:
            NoAnswer: nothing usable within ``timeout_s``.
            Exited: the server exited or closed stdout before answering.
            SessionError: it spoke LSP-style framing (FramingError) or answered in a form no
                client can use. Every message names the request and says what happened.
        """
        what, sent = self._pending[request_id]
        since_sent_s = (self.transport.now_ns() - (sent or self.t0_ns)) / 1e9  # the first: t0
        try:
            outcome = self._serve(request_id, self.transport.clock() + timeout_s - since_sent_s)
        except (jsonrpc.MalformedAnswer, FrameTooLong) as err:
            raise SessionError(self._with_stderr(f"{what}: {err}"
                                                 if isinstance(err, FrameTooLong) else str(err)))
        if outcome == "timeout":
            cause = (self._diagnose_timeout(request_id, timeout_s) if diagnose
                     else f"no answer to {what} within {timeout_s:g} s")
            raise NoAnswer(cause)
        if outcome == "eof":
            raise Exited(self._diagnose_eof(what))
        return outcome

    def serve(self, seconds: float) -> None:
        """Keep the pipes served for ``seconds`` without awaiting anything (notifications,
        server requests and stderr are handled, so the server never blocks on a pipe).

        Raises:
            Exited: the server exited (or closed stdout) by itself meanwhile; the cause says
                how long after mcpstart's last request.
        """
        try:
            outcome = self._serve(None, self.transport.clock() + seconds)
        except (jsonrpc.MalformedAnswer, FrameTooLong):
            return
        if outcome == "eof":
            raise Exited(self._diagnose_eof(None))

    def _serve(self, request_id: int | None, deadline: float) -> Response | str:
        """Handle lines until the answer to ``request_id`` (returned), "eof" or "timeout".
        An unterminated line that got no more bytes for a diagnosis wait and holds the
        awaited answer fails (Transport.receive's ``quiet_s``).

        Raises:
            MalformedAnswer: an evident answer no client can use (jsonrpc.py), an answer
                without its newline, a request that could not be written (the server closed
                its stdin), or the request cancelled by the server.
        """
        transport = self.transport
        while True:
            while self._backlog:
                answer = self._handle(self._backlog.popleft(), request_id)
                if answer is not None:
                    return answer
            if not transport.output_open:
                return "eof"
            if request_id is not None:
                self._check_delivered(request_id)
            remaining = deadline - transport.clock()
            if remaining <= 0:
                return "timeout"
            quiet = self.waits.diagnosis_s if request_id is not None else None
            self._backlog.extend(transport.receive(remaining, quiet))
            for note in transport.take_notes():
                self.traffic.irregular[note] += 1
            self.traffic.streams.update(transport.take_counts())
            if quiet is not None and not self._backlog and transport.output_open \
                    and transport.framed_by_lines:
                partial = transport.partial()
                if partial:
                    self._unterminated(partial, request_id)

    def _check_delivered(self, request_id: int) -> None:
        """Fail when the server's stdin refused bytes: it reads no more, so the awaited
        request was not (or not all) delivered."""
        what, _ = self._pending[request_id]
        if self.transport.input_refused_ns is not None:
            raise jsonrpc.MalformedAnswer(
                f"{what}: the server closed its stdin, so mcpstart could not write the request "
                "(the pipe refused it); it reads no further messages")

    def _unterminated(self, partial: bytes, request_id: int) -> None:
        """An unterminated line that got no more bytes for a diagnosis wait: fail if it holds
        the awaited answer."""
        what = self._pending[request_id][0]
        for value in jsonrpc.unterminated(partial):
            try:
                parsed = jsonrpc.classify(value, request_id, what, sent=self._sent,
                                          notified=self._notified)
            except jsonrpc.MalformedAnswer:
                parsed = None
            if parsed is not None and parsed.answer is None:
                continue
            ending = "a CR alone" if b"\r" in partial else "no newline"
            raise jsonrpc.MalformedAnswer(
                f"{what}: the server wrote its answer with {ending} at the end and nothing more "
                f"for {self.waits.diagnosis_s:g} s; the stdio transport ends every message "
                "with a newline, so a client waits for it")

    # ----- one line ----------------------------------------------------------------------
    def _handle(self, line: Frame, request_id: int | None) -> Response | None:
        if line.crlf:
            self.traffic.crlf_lines += 1
        text = line.data.strip()
        if not text:
            return None
        what = self._pending[request_id][0] if request_id is not None else ""
        decoded = jsonrpc.decode(text, CARRIER.get(line.source, "line"))
        if line.source == "stderr":
            return self._on_stderr(decoded, request_id, what)
        if self._joined is not None:
            if isinstance(decoded.value, (dict, list)):
                self._count_noise_lines(self._joined)
                self._joined = None
            else:
                return self._join(text, request_id, what, line)
        if decoded.value is None:
            if text[:15].lower() == b"content-length:":
                raise FramingError(
                    "the server uses Content-Length (LSP-style) framing; the MCP stdio "
                    f"transport is newline-delimited JSON (it wrote {jsonrpc.clip(text, 60)!r})")
            if request_id is not None and jsonrpc.names_id(text, request_id):
                raise jsonrpc.MalformedAnswer(
                    f"{what}: the line with the answer cannot be read: {decoded.error}")
            if jsonrpc.looks_like_json_start(text):
                self._joined = [text]
            else:
                self._count_noise_lines([text])
            return None
        for note in decoded.notes:
            self.traffic.irregular[note] += 1
        return self._take(decoded, request_id, what, line)

    def _on_stderr(self, decoded, request_id, what: str) -> None:
        """A stderr line that looks like JSON-RPC: counted; the awaited answer there fails."""
        if not isinstance(decoded.value, (dict, list)):
            return None
        self.traffic.stderr_messages += 1
        if request_id is None:
            return None
        try:
            parsed = jsonrpc.classify(decoded.value, request_id, what, sent=self._sent,
                                      notified=self._notified)
        except jsonrpc.MalformedAnswer:
            return None
        if parsed.answer is not None:
            raise jsonrpc.MalformedAnswer(
                f"{what}: the server wrote its answer on stderr; the stdio transport carries "
                "messages on stdout only, so a client never sees it")
        return None

    def _join(self, text: bytes, request_id, what: str, line: Frame) -> Response | None:
        """A line that continues a JSON value begun on an earlier line (case 12)."""
        self._joined.append(text)
        joined = b"\n".join(self._joined)
        if len(self._joined) > jsonrpc.MAX_JOINED_LINES or len(joined) > jsonrpc.MAX_JOINED_BYTES:
            self._count_noise_lines(self._joined)
            self._joined = None
            return None
        value = jsonrpc.decode(joined).value
        if value is None:
            return None
        lines, self._joined = len(self._joined), None
        parsed = jsonrpc.classify(value, request_id, what, sent=self._sent,
                                  notified=self._notified)
        if parsed.answer is not None:
            raise jsonrpc.MalformedAnswer(
                f"{what}: the server wrote one JSON message over {lines} lines; the stdio "
                "transport needs one message per line")
        self.traffic.irregular[f"a JSON message written over {lines} lines (skipped)"] += 1
        self._count_noise_lines([])
        return None

    def _unjoined(self) -> None:
        """Lines held to be joined to a JSON value that never completed are noise once the
        server has written its last (it exited, or the session ended)."""
        if self._joined is not None:
            self._count_noise_lines(self._joined)
            self._joined = None

    def _count_noise_lines(self, lines: list[bytes]) -> None:
        self.traffic.noise_lines += len(lines)
        if lines and self.traffic.noise_example is None:
            self.traffic.noise_example = jsonrpc.clip(lines[0], 120)

    def _take(self, decoded, request_id, what: str, line: Frame) -> Response | None:
        parsed = jsonrpc.classify(decoded.value, request_id, what, sent=self._sent,
                                  notified=self._notified)
        if parsed.noise:
            self._count_noise_lines([line.data.strip()])
        if decoded.strict and parsed.answer is not None:
            raise jsonrpc.MalformedAnswer(f"{what}: the line with the answer {decoded.strict}")
        if decoded.strict:
            self.traffic.irregular[f"a message that {decoded.strict} (skipped)"] += 1
            return None
        for note in decoded.split:
            self.traffic.split[note] += 1
        for notification in parsed.notifications:
            self._on_notification(notification, request_id, what)
        for note in parsed.notes:
            self.traffic.irregular[note] += 1
        for request in parsed.requests:
            self._answer_server_request(request)
        for stray in parsed.stray:
            self.traffic.stray_responses += 1
            if self.traffic.stray_example is None:
                self.traffic.stray_example = jsonrpc.clip(stray, 200)
        if parsed.answer is None:
            return None
        for note in parsed.answer.irregular:
            self.traffic.irregular[note] += 1
        _, sent = self._pending.pop(request_id)
        self._answers += 1
        went = self.transport.went_out_ns(request_id)
        return Response(parsed.answer.message, line.at_ns, len(line.data), sent or self.t0_ns,
                        decoded.invalid_utf8, went or sent or self.t0_ns)

    def _on_notification(self, message: dict, request_id, what: str) -> None:
        """Count a notification; one that cancels the awaited request ends its wait."""
        method = str(message["method"])
        self.traffic.notifications[method] += 1
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        if method == "notifications/progress":
            self.traffic.unknown_progress += 1  # mcpstart never sends a progressToken
        if (method == "notifications/cancelled" and request_id is not None
                and jsonrpc.same_id(params.get("requestId"), request_id)):
            reason = params.get("reason")
            raise jsonrpc.MalformedAnswer(
                f"{what}: the server cancelled the request (notifications/cancelled"
                + (f", reason: {jsonrpc.clip(reason, 200)!r})" if reason is not None else ")"))

    def _answer_server_request(self, message: dict) -> None:
        method = str(message["method"])
        self.traffic.server_requests[method] += 1
        reply: dict = {"jsonrpc": "2.0", "id": message["id"]}
        if method == "ping":
            reply["result"] = {}
        elif method == "roots/list":
            reply["result"] = {"roots": []}
        else:
            reply["error"] = {"code": -32601, "message": f"Method not found: {method}"}
            self.traffic.refused[method] += 1
        self.transport.send(jsonrpc.encode(reply), reply)

    # ----- diagnosis --------------------------------------------------------------------
    def stderr_tail(self) -> str:
        """The last ~2000 bytes the server wrote to stderr."""
        return self.transport.stderr_tail()

    def _with_stderr(self, cause: str) -> str:
        self._unjoined()
        if self.traffic.stray_example:
            cause += ("; it sent a response mcpstart did not ask for: "
                      f"{self.traffic.stray_example!r}")
        if self.traffic.noise_lines:
            cause += (f"; it wrote {self.traffic.noise_lines} {self.transport.noise_name} "
                      f"that are not JSON-RPC, first: {self.traffic.noise_example!r}")
        if self.traffic.notifications:
            cause += (f"; it sent {sum(self.traffic.notifications.values())} notification(s) "
                      f"({', '.join(sorted(self.traffic.notifications))})")
        tail = self.stderr_tail().strip()
        log = self.transport.log_name
        return f"{cause}; {said_on_stderr(tail, log)}" if tail else f"{cause}; {log} was empty"

    def _diagnose_eof(self, what: str | None) -> str:
        """Why stdout ended: an exit (its code or signal) or stdout closed by a server that
        runs on; ``what`` None: while no request was pending (said against the last one)."""
        transport = self.transport
        deadline = transport.clock() + self.waits.shutdown_grace_s
        while transport.exit() is None and transport.clock() < deadline:
            transport.receive(deadline - transport.clock())
        end = transport.output_end_ns or transport.now_ns()
        ended = transport.exit()
        if what is None:
            after_s = (end - (self._last_sent_ns or self.t0_ns)) / 1e9
            how = (f"exited by itself ({_exit_words(ended).removeprefix('exited with ')})"
                   if ended else "closed stdout by itself (and kept running)")
            return self._with_stderr(f"the server {how} {after_s:.1f} s after its last request "
                                     f"({self._last_what})")
        how = _exit_words(ended) if ended else ""
        after = elapsed_ms(self.t0_ns, end)
        if ended is None:
            return self._with_stderr(f"{what}: the server closed stdout after {after:.0f} ms "
                                     "without answering, but kept running")
        return self._with_stderr(f"{what}: the server {how} after {after:.0f} ms before "
                                 "answering")

    def _diagnose_timeout(self, request_id: int, timeout_s: float) -> str:
        """Why no answer came: what did arrive of it (the length and first bytes of an
        unfinished message), whether it came late once stdin was closed (block-buffered
        output, unless earlier answers came while stdin was open: then it was only late),
        LSP-style framing (probed in a fresh process), or a slow or silent server."""
        what, _ = self._pending[request_id]
        cause = f"no answer to {what} within {timeout_s:g} s"
        unfinished, flushed = self.transport.partial(), self._answers
        if unfinished:
            cause += (f"; {len(unfinished)} bytes of an unfinished message had arrived, "
                      f"beginning {jsonrpc.clip(unfinished, 80)!r}")
        listens = self._listens_silently()  # before stdin closes: the server may then exit
        timed_out = self.transport.clock()
        self.transport.end_input()
        try:
            late = self._serve(request_id, self.transport.clock() + self.waits.diagnosis_s)
        except (SessionError, jsonrpc.MalformedAnswer, FrameTooLong):
            late = False  # it ended, or wrote what is no answer: not a wait sat out
        if isinstance(late, Response):
            after = f"{self.transport.clock() - timed_out:.1f} s later"
            if not self.transport.framed_by_lines:  # HTTP: no stdin was closed
                return f"{cause}; the answer came {after}"
            if flushed:
                return (f"{cause}; the answer came {after}, once stdin was closed; {flushed} "
                        "earlier answer(s) came while it was open, so the server flushes its "
                        "output: it was slow, not buffered")
            return (f"{cause}; the answer came only after stdin was closed: the server does "
                    "not flush stdout after each message (block-buffered output, e.g. "
                    "Python without -u)")
        after_eof = (f"; nothing in the {self.waits.diagnosis_s:g} s after stdin was closed"
                     if late == "timeout" and self.transport.framed_by_lines else "")
        if self.traffic.refused:
            cause += ("; it asked mcpstart for " + ", ".join(sorted(self.traffic.refused))
                      + ", answered -32601 (method not found: mcpstart declares no client "
                      "capabilities), and may be waiting on that")
        if self.transport.received_bytes == 0:
            cause += f" ({self.transport.silence()})"
        cause += after_eof + listens
        if self.transport.received_bytes == 0:
            framing = _probe_lsp_framing(self.transport.fresh(),
                                         min(timeout_s, self.waits.diagnosis_s * 2)
                                         ) if self.transport.framed_by_lines else None
            if framing:
                return f"{cause}; a fresh process answered a Content-Length framed ping: {framing}"
            if framing is None and self.transport.framed_by_lines:
                cause += (f"; nor did a fresh process answer a Content-Length framed ping in "
                          f"{min(timeout_s, self.waits.diagnosis_s * 2):g} s")
        return self._with_stderr(cause)

    def _listens_silently(self) -> str:
        """For a stdio server that wrote nothing on stdout: where its tree listens, said as
        the likely cause (an HTTP server given as a stdio command: its command needs
        ``{port}``, or ``--url``); "" otherwise. Said, not acted on: a stdio server may also
        open a port of its own."""
        processes = self.transport.processes
        if not self.transport.framed_by_lines or self.transport.received_bytes or \
                processes is None:
            return ""
        places = processes.listening()
        return (f"; it listens on {', '.join(places)} and wrote nothing on stdout: an HTTP "
                "server? Put {port} in its command where its port goes (with --transport "
                "http if needed), or measure it running with --url") if places else ""

    # ----- shutdown ----------------------------------------------------------------------
    def shutdown(self, grace_s: float | None = None) -> Ended:
        """End the server as the MCP spec says (Transport.shutdown: stdin EOF, SIGTERM,
        SIGKILL, each step waiting ``grace_s``, default ``waits.shutdown_grace_s``; the
        SIGKILL step always that default). Exit signals wait until this is done
        (interrupts.shielded). Returns the Ended record (also kept in ``ended``); a launcher
        that exited while its descendants kept stdout open is noted in the traffic."""
        with interrupts.shielded():
            grace = self.waits.shutdown_grace_s if grace_s is None else grace_s
            self.ended = self.transport.shutdown(grace, self.waits.shutdown_grace_s)
            self._unjoined()
            for note in self.transport.take_notes():  # those of exchanges no answer was
                self.traffic.irregular[note] += 1  # awaited by this session (series, DELETEs)
            ended = self.transport.exit()
            if ended is not None and ended.output_open:
                self.traffic.launcher_exit = warn.launcher_exited(
                    ended.code, elapsed_ms(self.t0_ns, ended.at_ns))
            _LIVE.discard(self)
        return self.ended


def wait_any(waits: dict[Session, tuple[int, float]]) -> dict[Session, Response | SessionError]:
    """Serve several sessions' pipes together (an editor starting its servers at once) until
    at least one awaited answer (session -> (request id, deadline on its transport's clock))
    is settled. Returns each settled session's answer, or the SessionError that ended its
    wait (no diagnosis of timeouts: NoAnswer says only that the time ran out)."""
    while True:
        outcomes: dict[Session, Response | SessionError] = {}
        for session, (request_id, deadline) in waits.items():
            what = session._pending[request_id][0]
            try:
                found = session._serve(request_id, float("-inf"))
            except (jsonrpc.MalformedAnswer, FrameTooLong, SessionError) as err:
                found = SessionError(session._with_stderr(str(err)))
            if found == "eof":
                found = Exited(session._diagnose_eof(what))
            elif found == "timeout" and session.transport.clock() >= deadline:
                found = NoAnswer(f"no answer to {what} in time")
            if found != "timeout":
                outcomes[session] = found
        if outcomes:
            return outcomes
        remaining = min(deadline - session.transport.clock()
                        for session, (_, deadline) in waits.items())
        owner = {session.transport: session for session in waits}
        for transport, lines in poll_many(list(owner), remaining).items():
            owner[transport]._backlog.extend(lines)


def serve_all(sessions: list[Session], seconds: float) -> None:
    """Keep several sessions' pipes served for ``seconds`` without awaiting anything
    (servers started together, idle), with one ``poll`` over all of them: what each server
    writes is handled as ``Session.serve`` handles it.

    Raises:
        Exited: a server exited (or closed stdout) by itself meanwhile.
    """
    deadline = time.monotonic() + seconds
    owner = {session.transport: session for session in sessions}
    while True:
        for session in sessions:
            session.serve(0)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return
        for transport, lines in poll_many(list(owner), remaining).items():
            owner[transport]._backlog.extend(lines)


_LIVE: set[Session] = set()



def unanswered() -> bool:
    """Whether a session not shut down yet has had no answer at all (on the way out after a
    signal: the server was started and had not answered its first request)."""
    return any(not session._answers for session in _LIVE)


def shutdown_all() -> None:
    """Shut down every session not shut down yet (on the way out after an error or signal)."""
    for session in list(_LIVE):
        session.shutdown(grace_s=min(0.5, session.waits.shutdown_grace_s))


def _probe_lsp_framing(transport: Transport, wait_s: float) -> str | None:
    """Start ``transport`` (a fresh process of the same command) and send one ping framed
    with a Content-Length header, as LSP does. Returns the framing diagnosis when it answers
    in kind, else None."""
    try:
        probe = Session.start(transport)
    except SessionError:
        return None
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    probe.transport.send(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    probe._pending[1] = ("ping", transport.now_ns())
    try:
        probe._serve(1, transport.clock() + wait_s)
    except FramingError as err:
        return str(err)
    except (jsonrpc.MalformedAnswer, FrameTooLong):
        return None
    finally:
        probe.shutdown(grace_s=0.1)
    return None


TAIL_LINES = 8
"""How many of stderr's last lines a cause quotes."""
_ERROR_LINE = re.compile(r"error|exception|fatal|panic|traceback|not found|denied|refused",
                         re.IGNORECASE)


def said_on_stderr(tail: str, log: str = "stderr") -> str:
    """The last lines a server wrote on stderr (``log``: what it is called) as lines (not a
    Python repr), the final error line pulled out in front: "its last error: ValueError:
    boom; stderr ended with:\n  ..."."""
    lines = [line.rstrip() for line in tail.splitlines() if line.strip()][-TAIL_LINES:]
    error = next((line.strip() for line in reversed(lines) if _ERROR_LINE.search(line)), None)
    quoted = "\n".join(f"  {line}" for line in lines)
    return (f"its last error: {error}; " if error else "") + f"{log} ended with:\n{quoted}"


def _exit_words(ended) -> str:
    """"exited with code 1", "was killed by signal 9 (SIGKILL)", "exited" (code unknown)."""
    if ended.signal:
        try:
            name = signal.Signals(ended.signal).name
        except ValueError:
            name = "unknown"
        return f"was killed by signal {ended.signal} ({name})"
    return "exited" if ended.code is None else f"exited with code {ended.code}"


def _what(message: dict) -> str:
    """A request as causes name it: its method, plus the tool for tools/call."""
    method = str(message.get("method"))
    params = message.get("params")
    if method == "tools/call" and isinstance(params, dict) and params.get("name"):
        return f"tools/call {params['name']}"
    return method


