"""The transport seam: what a client session needs from a transport, whatever carries the
messages (the stdio transport's pipes, stdio.py; Streamable HTTP, http.py).

The split is the one the official SDKs use: a transport owns the server's process and moves
framed messages with their arrival times; the session above it (session.py) matches answers to
requests, answers the server's requests and says why a wait ended. A transport never parses
JSON-RPC; a session never touches a pipe.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field


def elapsed_ms(start_ns: int, at_ns: int | None) -> float | None:
    """Milliseconds from ``start_ns`` to ``at_ns`` (perf_counter_ns readings); None for None."""
    return None if at_ns is None else (at_ns - start_ns) / 1e6


class SpawnError(OSError):
    """The program cannot be started (not found, not executable, no such working directory)."""


class FrameTooLong(Exception):
    """The server wrote more than a transport buffers for one message."""


@dataclass
class Frame:
    """One framed message (for stdio: one line) as it arrived.

    ``data`` excludes the frame's end; ``at_ns`` is ``time.perf_counter_ns()`` taken when the
    wait that delivered the frame's last byte woke up; ``crlf`` is True when a line ended in
    CRLF; ``source`` is "stdout", or "stderr" for a line of the diagnostic stream that looks
    like a JSON message (a server writing its answers to the wrong stream); over HTTP "body"
    (an ``application/json`` body) or "event" (an event's data).
    """

    data: bytes
    at_ns: int
    crlf: bool = False
    source: str = "stdout"


@dataclass
class Exit:
    """How the spawned process ended: ``code`` (None when not known: not mcpstart's child),
    ``signal`` (the signal that killed it, else None), ``at_ns`` (perf_counter_ns of the
    wake-up that saw it), ``output_open`` (True when its output stayed open, held by its
    descendants: a launcher)."""

    code: int | None
    signal: int | None
    at_ns: int
    output_open: bool = False


@dataclass
class Ended:
    """The result of a shutdown: ``how`` ("eof", "sigterm" or "sigkill": the step after which
    no process was left; "already_exited": none was left when it began), ``ms`` from its first step to the last process's exit, ``exit_code``
    of the spawned process where known, ``orphans`` (processes that had left the process group
    and were still running when it began: ``[{pid, cmdline}]``) and ``exited`` (every process
    seen exiting)."""

    how: str
    ms: float
    exit_code: int | None = None
    orphans: list[dict] = field(default_factory=list)
    exited: list[dict] = field(default_factory=list)


class Transport(ABC):
    """One server as a client sees it through a transport.

    Life cycle: ``start`` (spawn, with the clock), ``send`` and ``receive`` any number of
    times, ``shutdown`` once (also after errors). Not thread-safe: one thread drives it.

    Attributes:
        t0_ns: ``time.perf_counter_ns()`` taken just before the spawn (the clock's zero).
        first_byte_ns: when the first byte of output arrived, or None.
        received_bytes: bytes of output received so far.
        output_end_ns: when the output ended (stdout EOF), or None.
    """

    t0_ns: int = 0
    first_byte_ns: int | None = None
    received_bytes: int = 0
    output_end_ns: int | None = None
    accepting_ns: int | None = None
    """When the server's endpoint first accepted a connection (a network transport), or None;
    the stdio transport has none."""
    input_refused_ns: int | None = None
    """When the server's input first refused bytes mcpstart wrote (it closed its stdin), or
    None; never set by mcpstart's own closing."""

    @abstractmethod
    def start(self, first_message: bytes | None = None, wait_s: float = 0.0) -> None:
        """Take the clock, put ``first_message`` on its way and spawn; with ``wait_s`` block
        at once until the server writes (at most ``wait_s``).

        Raises:
            SpawnError: the program cannot be started.
        """

    @abstractmethod
    def send(self, data: bytes, message: dict | None = None) -> None:
        """Queue ``data`` (one or more framed messages) for the server; dropped once the
        server's input is closed. ``message``: the one message ``data`` encodes, as the
        session built it, for a transport that must know its id, method or params (HTTP's
        headers) without parsing ``data`` again; a byte stream (stdio) ignores it."""

    @abstractmethod
    def receive(self, timeout_s: float, quiet_s: float | None = None) -> list[Frame]:
        """Wait at most ``timeout_s`` and return as soon as frames arrived, the output ended
        or the process exited ([] for the last two and for a timeout); with ``quiet_s``, also
        once an unterminated frame got no more bytes for that long ([]).

        Raises:
            FrameTooLong: a message longer than the transport buffers.
        """

    @property
    @abstractmethod
    def output_open(self) -> bool:
        """False once no further frame can arrive (stdout EOF)."""

    @abstractmethod
    def partial(self) -> bytes:
        """The bytes of an unterminated last frame received so far (b"" when none)."""

    def take_notes(self) -> list[str]:
        """Deviations the transport met below the session since the last call (an HTTP
        notification refused, bytes past an answer), each once; the session counts them
        with its traffic. The stdio transport has none."""
        return []

    def take_counts(self) -> dict[str, int]:
        """Counts of what the transport did below the session since the last call (HTTP: its
        event streams, http.HttpTransport.take_counts), added to the session's traffic. The
        stdio transport has none."""
        return {}

    def listen(self) -> None:
        """Open the streams on which the server may send requests unasked, from the next
        session on (HTTP: the standalone GET stream, http.HttpTransport.listen). Only
        untimed sessions ask it: a timed start sends what a plain client's start sends. The
        stdio transport's one stream is always open: nothing to do."""

    @abstractmethod
    def end_input(self) -> None:
        """Close the server's input (stdin EOF) once what is queued is written."""

    @abstractmethod
    def exit(self) -> Exit | None:
        """How the spawned process ended, once it did; None while it runs."""

    @abstractmethod
    def stderr_tail(self) -> str:
        """The last ~2000 bytes of the server's diagnostic output, decoded leniently."""

    def log_text(self) -> str:
        """Everything the server has written on its diagnostic output so far, decoded
        leniently, where the transport keeps it whole (stdio: once ``stderr_log`` was set
        before the spawn; HTTP: its one log file of stdout and stderr); else its tail."""
        return self.stderr_tail()

    @abstractmethod
    def shutdown(self, grace_s: float) -> Ended:
        """End the server as the MCP specification says and release everything: close its
        input and wait ``grace_s``, SIGTERM and wait ``grace_s``, SIGKILL; no process of the
        server outlives this."""

    @abstractmethod
    def close(self) -> None:
        """Release what the transport holds (pipes, connections) without ending a process:
        for one never started, or after ``shutdown``."""

    @abstractmethod
    def fresh(self) -> "Transport":
        """An unstarted transport for another process of the same command (a diagnosis in a
        fresh process)."""

    processes = None
    """The server's process set (tree.ProcessSet) where the transport spawned processes that
    can be read, else None (memory is then not measured)."""

    framed_by_lines = True
    """Messages are lines of a byte stream (stdio), so a silent server may be speaking
    LSP-style framing (a diagnosis probes for it); False for HTTP."""

    log_name = "stderr"
    """What a cause calls the server's diagnostic output (``stderr_tail``)."""
    noise_name = "stdout line(s)"
    """What a cause calls the pieces of output that are not JSON-RPC messages."""

    def silence(self) -> str:
        """What a server that sent nothing at all did not send, for a timeout's cause."""
        return "nothing at all on stdout"

    def clock(self) -> float:
        """Seconds of a monotonic clock; every wait of a session is timed by it (a scripted
        transport gives its own)."""
        return time.monotonic()

    def now_ns(self) -> int:
        """Nanoseconds of the clock that stamps frames (``t0_ns``, ``Frame.at_ns``)."""
        return time.perf_counter_ns()

    def went_out_ns(self, request_id) -> int | None:
        """When the request ``request_id`` went out (``now_ns``), where the transport held
        it back after it was handed over (HTTP: behind a notification awaiting its 202, as
        clients send messages in order); None: it went out when handed over. Asked once,
        when its answer is read."""
        return None
