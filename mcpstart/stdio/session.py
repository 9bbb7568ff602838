"""One stdio-transport session with an MCP server: spawn, framing, JSON-RPC, timeouts, shutdown.

The client is tolerant, as ../shared/fault-cases.md asks: stdout lines that are not JSON-RPC
are skipped and counted, notifications are recorded, requests from the server are answered,
CRLF line ends are accepted, stderr is drained continuously, and every wait ends within its
timeout with a stated cause. Framing is newline-delimited JSON, as the MCP specification's
stdio transport prescribes (spec 2025-11-25, "Transports: stdio").
"""

from __future__ import annotations

import ctypes
import json
import os
import queue
import signal
import subprocess
import threading
import time
from collections import deque
from dataclasses import dataclass, field

import psutil

from .. import interrupts

READ_CHUNK = 1 << 16
MAX_LINE_BYTES = 256 << 20
"""Longest stdout line mcpstart buffers; a server that writes more without a newline fails."""
STDERR_TAIL_BYTES = 2000
SHUTDOWN_GRACE_S = 2.0
"""How long each shutdown step (stdin EOF, then SIGTERM) may take before the next one."""
DIAGNOSIS_WAIT_S = 2.0
"""After a timeout, how long mcpstart listens for a late answer while it finds the cause."""

PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h


class SessionError(Exception):
    """A wait on the server ended without the awaited message. ``str(err)`` is the cause."""


class FramingError(SessionError):
    """The server frames messages with LSP-style Content-Length headers instead of newlines."""


@dataclass(frozen=True)
class Command:
    """Exactly what is spawned: ``argv`` (no shell), ``cwd`` (None: mcpstart's), and ``env``,
    the variables set on top of mcpstart's own environment, as editors do."""

    argv: list[str]
    cwd: str | None = None
    env: dict[str, str] = field(default_factory=dict)

    def environment(self) -> dict[str, str]:
        """The complete environment the server gets."""
        return {**os.environ, **self.env}

    def record(self) -> dict:
        """The results-file form: ``{argv, cwd, env_keys}``; env values are never stored."""
        return {"argv": list(self.argv), "cwd": self.cwd, "env_keys": sorted(self.env)}


@dataclass
class Line:
    """One newline-terminated line read from the server's stdout.

    ``data`` excludes the line end; ``at_ns`` is ``time.perf_counter_ns()`` when the line's
    last byte was read; ``crlf`` is True when the line ended in CRLF.
    """

    data: bytes
    at_ns: int
    crlf: bool


@dataclass
class Response:
    """The JSON-RPC response to one request. ``at_ns`` as for ``Line``; ``size_bytes`` is the
    length of the response line as the server wrote it (line end excluded)."""

    message: dict
    at_ns: int
    size_bytes: int


@dataclass
class Traffic:
    """What the session saw besides the awaited responses (reported as warnings)."""

    noise_lines: int = 0
    noise_example: str | None = None
    crlf_lines: int = 0
    notifications: list[str] = field(default_factory=list)
    server_requests: list[str] = field(default_factory=list)
    stray_responses: int = 0
    stray_example: str | None = None

    def merge(self, other: "Traffic") -> None:
        """Add ``other``'s counts to these (first examples win)."""
        self.noise_lines += other.noise_lines
        self.noise_example = self.noise_example or other.noise_example
        self.crlf_lines += other.crlf_lines
        self.notifications += other.notifications
        self.server_requests += other.server_requests
        self.stray_responses += other.stray_responses
        self.stray_example = self.stray_example or other.stray_example

    def warnings(self) -> list[str]:
        """Human-readable notes on everything irregular the session saw."""
        notes = []
        if self.noise_lines:
            notes.append(
                f"skipped {self.noise_lines} stdout line(s) that are not JSON-RPC messages; "
                f"first: {self.noise_example!r}"
            )
        if self.crlf_lines:
            notes.append(f"{self.crlf_lines} line(s) ended in CRLF (accepted)")
        if self.server_requests:
            notes.append(f"server sent requests: {', '.join(sorted(set(self.server_requests)))}")
        if self.stray_responses:
            notes.append(f"{self.stray_responses} response(s) with an id mcpstart was not "
                         f"awaiting; first: {self.stray_example!r}")
        return notes


def become_subreaper() -> bool:
    """Make this process adopt orphaned descendants (Linux ``PR_SET_CHILD_SUBREAPER``), so a
    server's process that leaves its process group is still found. Returns False elsewhere."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _group_exists(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _reap_adopted_zombies(exclude: int) -> None:
    """Reap zombies that were re-parented to this (subreaper) process, except ``exclude``."""
    for child in psutil.Process().children():
        try:
            if child.pid != exclude and child.status() == psutil.STATUS_ZOMBIE:
                os.waitpid(child.pid, os.WNOHANG)
        except (ChildProcessError, psutil.Error):
            continue


class StdioSession:
    """A spawned MCP server and the client side of its stdio transport.

    Use ``StdioSession.spawn(...)``; always finish with ``shutdown()`` (also on errors), which
    guarantees no process of the server outlives the session.

    Attributes:
        t0_ns: ``time.perf_counter_ns()`` taken just before the spawn.
        first_byte_ns: when the first stdout byte arrived, or None.
        traffic: irregular traffic seen so far.
    """

    def __init__(self, command: Command):
        self.command = command
        self.traffic = Traffic()
        self.first_byte_ns: int | None = None
        self.stdout_bytes = 0
        self._lines: queue.Queue[Line | SessionError | None] = queue.Queue()
        self._writes: queue.Queue[bytes | None] = queue.Queue()
        self._stderr_tail: deque[bytes] = deque()
        self._stdout_eof_ns: int | None = None
        self._stdin_closed = False
        self._seen: dict[int, float] = {}  # pid -> create_time of every descendant seen
        self._next_id = 1
        self._proc: subprocess.Popen | None = None
        self._readers: list[threading.Thread] = []
        self.t0_ns = 0

    # ----- start -------------------------------------------------------------------------
    @classmethod
    def spawn(cls, command: Command, first_request: dict | None = None) -> "StdioSession":
        """Spawn ``command`` directly (no shell) in a new session and process group, with pipes
        for stdin, stdout and stderr, and write ``first_request`` right after the spawn.

        Args:
            command: what to spawn.
            first_request: a JSON-RPC message written immediately after spawn (it should use
                id 1; later ``request`` calls number from 2).

        Raises:
            SessionError: the program cannot be started (not found, not executable).
        """
        session = cls(command)
        session._start(first_request)
        return session

    def _start(self, first_request: dict | None) -> None:
        become_subreaper()
        if first_request is not None:
            self._writes.put(_encode(first_request))
            self._next_id = 2
        if self.command.cwd and not os.path.isdir(self.command.cwd):
            raise SessionError(f"working directory {self.command.cwd} does not exist")
        env = self.command.environment()
        with interrupts.shielded():  # an exit signal cannot separate the spawn from _LIVE
            self.t0_ns = time.perf_counter_ns()
            try:
                self._proc = subprocess.Popen(
                    self.command.argv, cwd=self.command.cwd, env=env, stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0,
                    start_new_session=True,
                )
            except OSError as err:
                raise SessionError(
                    f"cannot start {self.command.argv[0]!r}: {err.strerror or err}") from err
            _LIVE.add(self)
        threading.Thread(target=self._write_loop, daemon=True).start()
        self._readers = [threading.Thread(target=target, daemon=True)
                         for target in (self._read_stdout, self._read_stderr)]
        for reader in self._readers:
            reader.start()

    @property
    def pid(self) -> int:
        """PID of the spawned process, which leads the server's process group."""
        return self._proc.pid

    # ----- pipe threads ----------------------------------------------------------------
    def _write_loop(self) -> None:
        stdin = self._proc.stdin
        while (data := self._writes.get()) is not None:
            view = memoryview(data)
            try:
                while view:
                    view = view[stdin.write(view):]
            except (OSError, ValueError):  # the server closed stdin or exited
                break
        try:
            stdin.close()
        except OSError:
            pass

    def _read_stdout(self) -> None:
        fd = self._proc.stdout.fileno()
        pending = bytearray()
        while chunk := os.read(fd, READ_CHUNK):
            now = time.perf_counter_ns()
            if self.first_byte_ns is None:
                self.first_byte_ns = now
            self.stdout_bytes += len(chunk)
            start = len(pending)
            pending += chunk
            newline = pending.find(b"\n", start)
            while newline != -1:
                raw = bytes(pending[:newline])
                del pending[: newline + 1]
                crlf = raw.endswith(b"\r")
                self._lines.put(Line(raw[:-1] if crlf else raw, now, crlf))
                newline = pending.find(b"\n")
            if len(pending) > MAX_LINE_BYTES:
                self._lines.put(SessionError(
                    f"the server wrote more than {MAX_LINE_BYTES >> 20} MiB on stdout without a "
                    "newline; the stdio transport frames each message as one line"))
                pending.clear()
                while os.read(fd, READ_CHUNK):  # drain, so the server never blocks on stdout
                    pass
                break
        if pending:  # an unterminated last line still tells what the server wrote
            self._lines.put(Line(bytes(pending), time.perf_counter_ns(), False))
        self._stdout_eof_ns = time.perf_counter_ns()
        self._lines.put(None)

    def _read_stderr(self) -> None:
        fd = self._proc.stderr.fileno()
        kept = 0
        while chunk := os.read(fd, READ_CHUNK):
            self._stderr_tail.append(chunk)
            kept += len(chunk)
            while kept - len(self._stderr_tail[0]) >= STDERR_TAIL_BYTES:
                kept -= len(self._stderr_tail.popleft())

    def stderr_tail(self) -> str:
        """The last ~2000 bytes the server wrote to stderr, decoded leniently."""
        text = b"".join(self._stderr_tail)[-STDERR_TAIL_BYTES:]
        return text.decode("utf-8", errors="replace")

    # ----- JSON-RPC ---------------------------------------------------------------------
    def notify(self, method: str, params: dict | None = None) -> None:
        """Send a JSON-RPC notification (no reply expected)."""
        message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._writes.put(_encode(message))

    def send_request(self, method: str, params: dict | None = None) -> tuple[int, int]:
        """Queue a request for writing. Returns ``(id, sent_ns)``: sent_ns is taken just before
        the message is handed to the writer."""
        request_id = self._next_id
        self._next_id += 1
        data = _encode({"jsonrpc": "2.0", "id": request_id, "method": method,
                        "params": params or {}})
        sent = time.perf_counter_ns()
        self._writes.put(data)
        return request_id, sent

    def request(self, method: str, params: dict | None, timeout_s: float) -> Response:
        """Send a request and wait for its response; see ``wait_response``."""
        request_id, _ = self.send_request(method, params)
        return self.wait_response(request_id, timeout_s)

    def wait_response(self, request_id: int, timeout_s: float) -> Response:
        """Read stdout until the response with ``request_id`` arrives.

        Every other line is handled on the way: non-JSON-RPC lines are counted, notifications
        recorded, server requests answered (``ping`` with ``{}``, ``roots/list`` with no
        roots, anything else with -32601 Method not found), CRLF accepted.

        Returns:
            The response, including error responses (check ``message.get("error")``).

        Raises:
            SessionError: the server exited, closed stdout, spoke LSP-style Content-Length
                framing, or sent nothing awaited within ``timeout_s`` seconds; the message
                says which, with the exit code and stderr tail where there are any.
        """
        outcome = self._read_until(request_id, timeout_s)
        if outcome == "timeout":
            raise SessionError(self._diagnose_timeout(request_id, timeout_s))
        if outcome == "eof":
            raise SessionError(self._diagnose_eof())
        return outcome

    def _read_until(self, request_id: int, timeout_s: float) -> Response | str:
        """Handle stdout lines until the response with ``request_id``; returns it, or
        "timeout" or "eof". Raises FramingError on a Content-Length header."""
        deadline = time.monotonic() + timeout_s
        while (remaining := deadline - time.monotonic()) > 0:
            try:
                line = self._lines.get(timeout=min(remaining, 0.25))
            except queue.Empty:
                self._remember_tree()
                continue
            if line is None:
                self._lines.put(None)  # keep EOF visible to later waits
                return "eof"
            if isinstance(line, SessionError):
                raise line
            response = self._handle(line, request_id)
            if response is not None:
                return response
        return "timeout"

    def _handle(self, line: Line, awaited_id: int) -> Response | None:
        if line.crlf:
            self.traffic.crlf_lines += 1
        text = line.data.strip()
        if not text:
            return None
        try:
            message = json.loads(text)
        except ValueError:
            message = None
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            if text[:15].lower() == b"content-length:":
                raise FramingError(
                    "the server uses Content-Length (LSP-style) framing; the MCP stdio "
                    "transport is newline-delimited JSON (it wrote "
                    f"{text[:60].decode('utf-8', 'replace')!r})"
                )
            self.traffic.noise_lines += 1
            if self.traffic.noise_example is None:
                self.traffic.noise_example = text[:120].decode("utf-8", errors="replace")
            return None
        if "method" in message:
            if "id" in message:
                self._answer_server_request(message)
            else:
                self.traffic.notifications.append(str(message["method"]))
            return None
        answer_id = message.get("id")
        if answer_id == awaited_id and type(answer_id) is type(awaited_id):
            return Response(message, line.at_ns, len(line.data))
        self.traffic.stray_responses += 1
        if self.traffic.stray_example is None:
            self.traffic.stray_example = text[:200].decode("utf-8", errors="replace")
        return None

    def _answer_server_request(self, message: dict) -> None:
        method = str(message["method"])
        self.traffic.server_requests.append(method)
        reply: dict = {"jsonrpc": "2.0", "id": message["id"]}
        if method == "ping":
            reply["result"] = {}
        elif method == "roots/list":
            reply["result"] = {"roots": []}
        else:
            reply["error"] = {"code": -32601, "message": f"Method not found: {method}"}
        self._writes.put(_encode(reply))

    # ----- diagnosis --------------------------------------------------------------------
    def _elapsed_ms(self, at_ns: int | None = None) -> float:
        return ((at_ns or time.perf_counter_ns()) - self.t0_ns) / 1e6

    def _with_stderr(self, cause: str) -> str:
        if self.traffic.stray_example:
            cause += f"; it sent a response mcpstart did not ask for: {self.traffic.stray_example!r}"
        if self.traffic.noise_lines:
            cause += (f"; it wrote {self.traffic.noise_lines} stdout line(s) that are not "
                      f"JSON-RPC, first: {self.traffic.noise_example!r}")
        tail = self.stderr_tail().strip()
        return f"{cause}; stderr tail: {tail[-500:]!r}" if tail else f"{cause}; stderr was empty"

    def _diagnose_eof(self) -> str:
        try:
            code = self._proc.wait(timeout=SHUTDOWN_GRACE_S)
        except subprocess.TimeoutExpired:
            return self._with_stderr(
                f"closed stdout after {self._elapsed_ms(self._stdout_eof_ns):.0f} ms without "
                "answering, but kept running")
        return self._with_stderr(
            f"exited with code {code} after {self._elapsed_ms(self._stdout_eof_ns):.0f} ms "
            "before answering")

    def _diagnose_timeout(self, request_id: int, timeout_s: float) -> str:
        """Find why no answer came: it answers only at stdin EOF (stdout not flushed), it
        speaks LSP-style framing (probed in a fresh process), or it is simply slow."""
        cause = f"no response to request {request_id} within {timeout_s:g} s"
        self._close_stdin()
        if isinstance(self._read_until(request_id, DIAGNOSIS_WAIT_S), Response):
            return (f"{cause}; the answer came only after stdin was closed: the server does not "
                    "flush stdout after each message (block-buffered output, e.g. Python "
                    "without -u)")
        if self.stdout_bytes == 0:
            cause += " (nothing at all on stdout)"
            framing = _probe_lsp_framing(self.command, min(timeout_s, DIAGNOSIS_WAIT_S * 2))
            if framing:
                return f"{cause}; a fresh process answered a Content-Length framed ping: {framing}"
        return self._with_stderr(cause)

    # ----- process tree and shutdown -----------------------------------------------------
    def tree(self) -> list[psutil.Process]:
        """The spawned process and all its live descendants (empty once it has exited)."""
        try:
            root = psutil.Process(self._proc.pid)
            procs = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []
        for proc in procs:
            try:
                self._seen.setdefault(proc.pid, proc.create_time())
            except psutil.NoSuchProcess:
                pass
        return procs

    def _remember_tree(self) -> None:
        if self._proc.poll() is None:
            self.tree()

    def _close_stdin(self) -> None:
        if not self._stdin_closed:
            self._stdin_closed = True
            self._writes.put(None)

    def shutdown(self, grace_s: float = SHUTDOWN_GRACE_S) -> dict:
        """End the server as the MCP spec's stdio shutdown says: close stdin, wait ``grace_s``;
        SIGTERM the process group, wait ``grace_s``; SIGKILL the group. Then find descendants
        that left the group (re-parented to mcpstart as subreaper, or seen earlier in the
        tree), kill and report them. Exit signals wait until this is done (interrupts.shielded).

        Returns:
            ``{"how": "eof" | "sigterm" | "sigkill", "ms": float, "exit_code": int | None,
            "orphans": [{"pid", "cmdline"}]}``: ``how`` is the first step after which no
            process of the group was left; ``ms`` runs from closing stdin to that moment.
        """
        with interrupts.shielded():
            self._remember_tree()
            pgid = self._proc.pid  # start_new_session: the leader's pid is the group id
            start = time.perf_counter_ns()
            self._close_stdin()
            how = "eof"
            if not self._group_gone(pgid, grace_s):
                how = "sigterm"
                _signal_group(pgid, signal.SIGTERM)
                if not self._group_gone(pgid, grace_s):
                    how = "sigkill"
                    _signal_group(pgid, signal.SIGKILL)
                    self._group_gone(pgid, SHUTDOWN_GRACE_S)
            elapsed_ms = (time.perf_counter_ns() - start) / 1e6
            orphans = self._kill_orphans()
            for reader in self._readers:
                reader.join(SHUTDOWN_GRACE_S)
            _LIVE.discard(self)
        return {"how": how, "ms": elapsed_ms, "exit_code": self._proc.returncode,
                "orphans": orphans}

    def _group_gone(self, pgid: int, wait_s: float) -> bool:
        deadline = time.monotonic() + wait_s
        while True:
            self._proc.poll()
            _reap_adopted_zombies(exclude=self._proc.pid)
            if self._proc.returncode is not None and not _group_exists(pgid):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.005)

    def _kill_orphans(self) -> list[dict]:
        candidates = {p.pid: p for p in psutil.Process().children()
                      if p.pid != self._proc.pid}
        for pid, created in self._seen.items():
            try:
                proc = psutil.Process(pid)
                if proc.create_time() == created:
                    candidates.setdefault(pid, proc)
            except psutil.NoSuchProcess:
                continue
        orphans = []
        for proc in candidates.values():
            try:
                if proc.status() == psutil.STATUS_ZOMBIE:
                    continue
                orphans.append({"pid": proc.pid, "cmdline": proc.cmdline()})
                proc.kill()
            except psutil.NoSuchProcess:
                continue
        if orphans:
            psutil.wait_procs(list(candidates.values()), timeout=SHUTDOWN_GRACE_S)
            _reap_adopted_zombies(exclude=self._proc.pid)
        return orphans


_LIVE: set[StdioSession] = set()


def shutdown_all() -> None:
    """Shut down every session not shut down yet (on the way out after an error or signal)."""
    for session in list(_LIVE):
        session.shutdown(grace_s=0.5)


def _probe_lsp_framing(command: Command, wait_s: float) -> str | None:
    """Spawn ``command`` afresh and send one ping framed with a Content-Length header, as LSP
    does. Returns the framing diagnosis when it answers in kind, else None."""
    try:
        probe = StdioSession.spawn(command)
    except SessionError:
        return None
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    probe._writes.put(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    try:
        probe._read_until(1, wait_s)
    except FramingError as err:
        return str(err)
    finally:
        probe.shutdown(grace_s=0.1)
    return None


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def _encode(message: dict) -> bytes:
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
