"""The stdio transport's process side: spawn a server with three pipes and move bytes, all on
the calling thread.

Everything that can be done before the clock starts is done in ``prepare`` and the
StdioTransport's constructor (resolve the executable against the child's PATH, build the
environment, make the pipes and the first poller); ``start`` rehearses the spawn's argument
conversion, takes the clock, writes the first message, calls ``os.posix_spawn`` and, for a
timed spawn, blocks right away until the server writes. ``receive`` then waits on
stdout, stderr, stdin (while output is pending) and the process's pidfd together and stamps
each stdout line with ``time.perf_counter_ns()`` taken the moment ``poll`` woke up for the
read that completed it. No thread touches the pipes, so an arrival is stamped when it became
readable, not when a thread got to it. Lines are framed by framing.LineBuffer; the server's
processes (tree.ProcessSet) are shut down as the MCP specification says.
"""

from __future__ import annotations

import errno
import os
import select
import shutil
import signal
import time
from collections import deque
from dataclasses import dataclass

from .. import interrupts
from ..command import Command
from .base import Ended, Exit, Frame, FrameTooLong, SpawnError, Transport
from .framing import LineBuffer, Outbox
from .exits import exit_fd
from .tree import ProcessSet, escalate, spawned

READ_CHUNK = 1 << 16
"""stdout is read into one preallocated buffer of this size: no allocation between a wake-up
and its read. A pipe holds 64 KiB (the Linux default, pipe(7)), about what one read can
return; a larger buffer only costs page faults and cache right before the clock."""
SIGDEF = (signal.SIGPIPE, signal.SIGXFSZ)
"""Reset to their defaults in the child: Python ignores them, and ignored signals survive
exec."""
STDERR_CHUNK = 1 << 16
STDERR_TAIL_BYTES = 2000
STDERR_LINE_BYTES = 1 << 16
"""Longest stderr line looked at as a possible JSON message (longer ones are only tailed)."""




@dataclass
class Prepared:
    """A spawn made ready before the clock: the resolved executable, argv and environment,
    already encoded (bytes pass ``os.posix_spawn`` unconverted), the working directory, the
    pipes (parent ends and child ends) and the file actions that put the child's ends on 0,
    1 and 2."""

    path: bytes
    argv: list[bytes]
    env: dict[bytes, bytes]
    cwd: str | None
    child_fds: tuple[int, int, int]
    parent_fds: tuple[int, int, int]
    actions: list[tuple[int, int, int]]

    def spawn(self, **extra) -> int:
        """``os.posix_spawn`` of this spawn, in a new session, SIGDEF at their defaults;
        ``extra``: further keyword arguments. Returns the pid."""
        return os.posix_spawn(self.path, self.argv, self.env, file_actions=self.actions,
                              setsid=True, setsigdef=SIGDEF, **extra)

    def close(self) -> None:
        """Close every pipe end of a spawn that will not happen (or failed)."""
        for fd in (*self.child_fds, *self.parent_fds):
            try:
                os.close(fd)
            except OSError:  # closed already
                pass


def _high_fd(fd: int) -> int:
    """``fd`` moved to 3 or above (close-on-exec), so dup2 onto 0-2 in the child always works."""
    if fd > 2:
        return fd
    import fcntl  # POSIX only: imported here so that reading results needs none of it

    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    os.close(fd)
    return moved


def resolve(command: Command, env: dict[str, str] | None = None) -> str:
    """The executable ``command.argv[0]`` names, as the spawn will run it: a path relative to
    the working directory, or a name looked up on the server's own PATH.

    Raises:
        SpawnError: the working directory does not exist, or no executable file is found.
    """
    cwd = command.cwd
    if cwd is not None and not os.path.isdir(cwd):
        raise SpawnError(errno.ENOENT, f"working directory {cwd} does not exist")
    program = command.argv[0]
    if os.sep in program:
        path = os.path.join(cwd or os.getcwd(), program)
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            raise SpawnError(errno.ENOENT, f"cannot start {program!r}: no executable file "
                                           f"at {path}")
        return path
    env = command.environment() if env is None else env
    found = shutil.which(program, path=env.get("PATH", os.defpath))
    if found is None:
        raise SpawnError(errno.ENOENT, f"cannot start {program!r}: not found on the "
                                       "server's PATH")
    return os.path.join(cwd or os.getcwd(), found)


def prepare(command: Command) -> Prepared:
    """Do everything of a spawn that can be done before the clock starts.

    Raises:
        SpawnError: as ``resolve``.
    """
    env = command.environment()
    path = resolve(command, env)
    cwd = command.cwd
    stdin_r, stdin_w = (_high_fd(fd) for fd in os.pipe())
    stdout_r, stdout_w = (_high_fd(fd) for fd in os.pipe())
    stderr_r, stderr_w = (_high_fd(fd) for fd in os.pipe())
    for fd in (stdin_w, stdout_r, stderr_r):
        os.set_blocking(fd, False)
    child = (stdin_r, stdout_w, stderr_w)
    encoded = {os.fsencode(k): os.fsencode(v) for k, v in env.items()}  # not inside the clock
    return Prepared(os.fsencode(path), [os.fsencode(a) for a in command.argv], encoded, cwd,
                    child, (stdin_w, stdout_r, stderr_r),
                    [(os.POSIX_SPAWN_DUP2, fd, target) for target, fd in enumerate(child)])


def rehearse(prepared: Prepared) -> None:
    """Run ``os.posix_spawn``'s argument conversion once without a spawn, just before the
    clock: the call is refused with TypeError before any fork, because ``scheduler`` must
    hold an ``os.sched_param``, and CPython converts argv, the environment and the file
    actions before it checks that. After the idle pause that conversion is cold in the CPU's
    caches and delays the fork; rehearsed, it is warm (the tracepoint figures: docs/figures.md,
    "The timed path")."""
    try:
        prepared.spawn(scheduler=(os.SCHED_OTHER, None))
    except (TypeError, NotImplementedError):  # NotImplementedError: no scheduler option
        pass


class StdioTransport(Transport):
    """A server spawned with three pipes: ``StdioTransport(command)`` prepares the spawn (or
    give ``prepared``), ``start()`` spawns it; finish with ``shutdown()``. Not thread-safe:
    one thread drives it (module doc).

    Attributes (besides base.Transport's):
        command: what is spawned.
        prepared: the spawn made ready before the clock.
        pid: the spawned process (leader of its own session and process group).
    """

    def __init__(self, command: Command, prepared: Prepared | None = None):
        """Everything but the process: built before the clock, so that nothing but the
        write of the first message stands between the spawn and the first poll.

        Raises:
            SpawnError: as ``prepare``.
        """
        self.command = command
        self.prepared = prepared = prepared or prepare(command)
        self.pid = 0
        self.pidfd: int | None = None
        self._exited_ns: int | None = None
        self._output_open_at_exit: bool | None = None
        self._processes: ProcessSet | None = None
        self._stdin, self._stdout, self._stderr = prepared.parent_fds
        self._pending_out = Outbox()
        self._stdin_close_requested = False
        self._input_ended_ns: int | None = None
        self._lines = LineBuffer()
        self._buffer = bytearray(READ_CHUNK)
        self._stderr_tail: deque[bytes] = deque()
        self._stderr_kept = 0
        self._stderr_open = True
        self._stderr_line = bytearray()
        self._stderr_frames: list[Frame] = []
        self.stderr_log: list[bytes] | None = None
        """Set to a list to keep every stderr chunk there, in order (not only the tail)."""
        self._first = select.poll()
        self._first.register(self._stdout, select.POLLIN)
        self._first.register(self._stderr, select.POLLIN)
        self._early: tuple[list, int] | None = None

    def fresh(self) -> "StdioTransport":
        return StdioTransport(self.command)

    @property
    def processes(self) -> ProcessSet:
        """The server's processes (docs/process-tree.md), found from here on."""
        if self._processes is None:
            self._processes = ProcessSet(self.pid)
        return self._processes

    def start(self, first_message: bytes | None = None, wait_s: float = 0.0) -> None:
        """Take the clock, write ``first_message``, spawn, and with ``wait_s`` block at once
        until stdout or stderr has something (at most ``wait_s``).

        The first message goes into the pipe just before the spawn, inside the clock: the
        server finds it at its first read of stdin, as if it were written right after the
        spawn, and the parent has less to do after the spawn. That matters: on 2 cores the
        parent, woken when the child execs, runs on the child's CPU and delays it by about the
        time it works (docs/figures.md, "The timed path"). So nothing but the closing of the
        child's pipe ends and the switch back of the working directory (posix_spawn has no
        chdir) stands between the spawn and this wait; the wake-up it ends with is kept for
        the next ``receive``. Just before the clock the spawn's argument conversion is
        rehearsed (``rehearse``). The child runs in a new session (hence a new process
        group), with SIGPIPE and SIGXFSZ at their defaults.

        Raises:
            SpawnError: ``posix_spawn`` failed.
        """
        prepared = self.prepared
        child = prepared.child_fds
        previous = os.getcwd() if prepared.cwd is not None else None
        try:
            if previous is not None:
                os.chdir(prepared.cwd)
            rehearse(prepared)
            self.t0_ns = time.perf_counter_ns()
            if first_message:
                try:
                    written = os.write(self._stdin, first_message)
                except BlockingIOError:  # larger than the pipe: the rest during the wait
                    written = 0
                self._pending_out.append(memoryview(first_message)[written:])
            try:
                self.pid = prepared.spawn()
            except OSError as err:
                prepared.close()
                self._stdin = self._stdout = self._stderr = -1
                raise SpawnError(err.errno, f"cannot start {os.fsdecode(prepared.argv[0])!r}: "
                                            f"{err.strerror or err}") from err
            spawned(self.pid)
            for fd in child:  # without this, no EOF when the child dies
                os.close(fd)
            if wait_s > 0 and not self._pending_out:  # else receive() writes the rest first
                with interrupts.interruptible():  # a signal ends the wait, not the timeout
                    events = self._first.poll(wait_s * 1000)
                if events:
                    self._early = (events, time.perf_counter_ns())
        finally:
            if previous is not None:
                os.chdir(previous)
            if self.pid:  # also when a signal ended the wait
                self.pidfd = exit_fd(self.pid)

    # ----- writing ---------------------------------------------------------------------
    def send(self, data: bytes, message: dict | None = None) -> None:
        """Queue ``data`` for the server's stdin and write as much as the pipe takes now; the
        rest goes out during later ``receive`` calls. Dropped once stdin is closed (noted in
        ``input_refused_ns`` when the server closed it). ``message`` is not needed: the line
        is the message."""
        if self._stdin_close_requested:
            return
        if self._stdin < 0:
            self._refused()
            return
        self._pending_out.append(data)
        self._flush()

    def _flush(self) -> None:
        while self._pending_out:
            try:
                written = os.writev(self._stdin, self._pending_out.views)
            except BlockingIOError:
                return
            except OSError:  # EPIPE: the server closed stdin or exited
                self._pending_out.clear()
                self._refused()
                break
            self._pending_out.sent(written)
        if self._stdin_close_requested:
            self._close_stdin_now()

    def _refused(self) -> None:
        if self.input_refused_ns is None and not self._stdin_close_requested:
            self.input_refused_ns = time.perf_counter_ns()

    def end_input(self) -> None:
        """Close the server's stdin once the queued bytes are written (EOF for the server)."""
        if self._input_ended_ns is None:
            self._input_ended_ns = time.perf_counter_ns()
        self._stdin_close_requested = True
        self._flush()

    def _close_stdin_now(self) -> None:
        if self._stdin >= 0:
            os.close(self._stdin)
            self._stdin = -1
            self._pending_out.clear()

    # ----- reading ---------------------------------------------------------------------
    @property
    def output_open(self) -> bool:
        """False once stdout reached EOF."""
        return self._stdout >= 0

    def receive(self, timeout_s: float, quiet_s: float | None = None) -> list[Frame]:
        """Serve the pipes for at most ``timeout_s`` seconds, returning as soon as one or more
        complete stdout lines arrived, stdout reached EOF, or the spawned process exited; with
        ``quiet_s``, also once an unterminated line got no more bytes for that long. stderr is
        drained into a tail and pending stdin bytes are written meanwhile.

        Raises:
            FrameTooLong: more than framing.MAX_LINE_BYTES on stdout without a newline.
        """
        if self._early is not None:  # the wake-up that ended the wait in start()
            (events, woke), self._early = self._early, None
            frames, stop = self.handle(events, woke)
            if frames or stop:
                return frames
        now = time.monotonic()
        deadline, quiet_until = now + max(timeout_s, 0), now + (quiet_s or 0)
        poller = select.poll()
        while True:
            fds = self.register(poller)
            if not fds:
                return []
            wait = deadline - time.monotonic()
            if quiet_s is not None and self._lines.pending:
                wait = min(wait, quiet_until - time.monotonic())
            received = self.received_bytes
            events = poller.poll(max(wait, 0) * 1000)
            frames, stop = self.handle(events, time.perf_counter_ns())
            for fd in fds:
                poller.unregister(fd)
            now = time.monotonic()
            if self.received_bytes != received and quiet_s is not None:
                quiet_until = now + quiet_s
            if frames or stop or now >= deadline:
                return frames
            if quiet_s is not None and self._lines.pending and now >= quiet_until:
                return []

    def handle(self, events: list[tuple[int, int]], woke_ns: int) -> tuple[list[Frame], bool]:
        """Serve the ready fds (``woke_ns``: when ``poll`` returned them). Returns the
        complete stdout lines and whether stdout ended or the process exited."""
        frames: list[Frame] = []
        stop = False
        for fd, event in events:
            if fd == self._stdout:
                frames += self._read_stdout(woke_ns)
                stop = stop or self._stdout < 0
            elif fd == self._stderr:
                self._read_stderr(woke_ns)
            elif fd == self._stdin:
                if event & (select.POLLERR | select.POLLHUP):
                    if self._pending_out:
                        self._refused()
                    self._close_stdin_now()
                else:
                    self._flush()
            elif fd == self.pidfd and self._exited_ns is None:
                self._exited_ns = woke_ns
                stop = True
        if self._exited_ns is not None and self._output_open_at_exit is None:
            self._output_open_at_exit = self._stdout >= 0
        if self._stderr_frames:
            frames, self._stderr_frames = frames + self._stderr_frames, []
        return frames, stop

    def register(self, poller: select.poll) -> list[int]:
        """Register the fds to wait on with ``poller`` (for one ``poll`` over several
        transports: ``poll_many``); returns them."""
        fds = []
        for fd, mask in ((self._stdout, select.POLLIN), (self._stderr, select.POLLIN),
                         (self._stdin if self._pending_out else -1, select.POLLOUT),
                         (self.pidfd if self._exited_ns is None and self.pidfd is not None
                          else -1, select.POLLIN)):
            if fd is not None and fd >= 0 and (fd != self._stderr or self._stderr_open):
                poller.register(fd, mask)
                fds.append(fd)
        return fds

    def _read_stdout(self, now: int) -> list[Frame]:
        try:
            size = os.readv(self._stdout, [self._buffer])
        except BlockingIOError:
            return []
        chunk = bytes(memoryview(self._buffer)[:size])
        if not chunk:
            os.close(self._stdout)
            self._stdout = -1
            self.output_end_ns = now
            return self._lines.end(now)
        if self.first_byte_ns is None:
            self.first_byte_ns = now
        self.received_bytes += len(chunk)
        return self._lines.feed(chunk, now)

    def _read_stderr(self, now: int) -> None:
        try:
            chunk = os.read(self._stderr, STDERR_CHUNK)
        except BlockingIOError:
            return
        if not chunk:
            self._stderr_open = False
            return
        self._stderr_messages(chunk, now)
        if self.stderr_log is not None:
            self.stderr_log.append(chunk)
        self._stderr_tail.append(chunk)
        self._stderr_kept += len(chunk)
        while self._stderr_kept - len(self._stderr_tail[0]) >= STDERR_TAIL_BYTES:
            self._stderr_kept -= len(self._stderr_tail.popleft())

    def _stderr_messages(self, chunk: bytes, now: int) -> None:
        """Keep the stderr lines that look like JSON messages as frames (source "stderr")."""
        lines = (bytes(self._stderr_line) + chunk).split(b"\n")
        self._stderr_line = bytearray(lines.pop()[:STDERR_LINE_BYTES])
        for line in lines:
            if line.lstrip()[:1] in (b"{", b"[") and (b'"id"' in line or b'"jsonrpc"' in line):
                self._stderr_frames.append(Frame(line.rstrip(b"\r"), now, False, "stderr"))

    def partial(self) -> bytes:
        return self._lines.partial

    def read_fds(self) -> list[int]:
        """The stdout and stderr ends still open (drained while the processes exit)."""
        return [fd for fd in (self._stdout, self._stderr if self._stderr_open else -1) if fd >= 0]

    def drain(self) -> None:
        """Read whatever stdout and stderr hold now, dropping stdout lines (at shutdown)."""
        for fd in self.read_fds():
            if fd == self._stdout:
                try:
                    self._read_stdout(time.perf_counter_ns())
                except FrameTooLong:
                    pass
            else:
                self._read_stderr(time.perf_counter_ns())

    def stderr_tail(self) -> str:
        """The last ~2000 bytes the server wrote to stderr, decoded leniently."""
        text = b"".join(self._stderr_tail)[-STDERR_TAIL_BYTES:]
        return text.decode("utf-8", errors="replace")

    def log_text(self) -> str:
        """What the server wrote to stderr, whole when ``stderr_log`` was set before the
        spawn (base.Transport.log_text), with what its pipe holds now read first."""
        if self.stderr_log is None:
            return self.stderr_tail()
        while True:
            size = len(self.stderr_log)
            self.drain()
            if len(self.stderr_log) == size:
                return b"".join(self.stderr_log).decode("utf-8", errors="replace")

    def exit(self) -> Exit | None:
        """How the spawned process ended (its code once mcpstart reaped it), or None."""
        if self._exited_ns is None:
            return None
        self.processes.alive()  # collects the exit, with its code
        code = self.processes.exited.get(self.pid, {}).get("exit_code")
        return Exit(code, -code if code is not None and code < 0 else None, self._exited_ns,
                    bool(self._output_open_at_exit))

    # ----- shutdown ----------------------------------------------------------------------
    def shutdown(self, grace_s: float, kill_wait_s: float | None = None) -> Ended:
        """End the server as the MCP spec's stdio shutdown says: close stdin and wait
        ``grace_s``; SIGTERM and wait ``grace_s``; SIGKILL and wait ``kill_wait_s`` (default
        ``grace_s``). Every step addresses the server's whole process set (tree.py), and the
        pipes are drained meanwhile so a server writing at exit never blocks; then every pipe
        end and pidfd is closed.

        Stdin closed earlier (a timeout's diagnosis closes it) counts as the first step: the
        wait after it is what is left of ``grace_s``. ``Ended.ms`` runs from closing stdin to
        the moment the last process exited, as a pidfd reported it (resolution: one poll wake-up, well under 0.1 ms); ``how`` is
        "already_exited" (ms 0) when no process of the server was left to end.
        """
        processes = self.processes
        alive = [p.pid for p in processes.scan()]
        self.end_input()
        start = self._input_ended_ns  # stdin may have been closed before (a timeout's diagnosis)
        had_s = (time.perf_counter_ns() - start) / 1e9  # the grace it has had since
        how, last = ("eof", processes.wait_gone(max(0.0, grace_s - had_s), self)) if alive \
            else ("already_exited", start)
        ended = escalate(processes, self.pid, alive, start, how, last, grace_s, kill_wait_s,
                         self)
        self.close()
        return ended

    def close(self) -> None:
        """Close every pipe end and the pidfd (the process itself is ``shutdown``'s); for a
        spawn that never happened, the child's pipe ends too."""
        if not self.pid:
            self.prepared.close()
            self._stdin = self._stdout = self._stderr = -1
            return
        self._close_stdin_now()
        for name in ("_stdout", "_stderr"):
            fd = getattr(self, name)
            if fd >= 0:
                os.close(fd)
                setattr(self, name, -1)
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None


def poll_many(transports: list[StdioTransport], timeout_s: float
              ) -> dict[StdioTransport, list[Frame]]:
    """``receive`` for several servers at once (an editor-style start): one ``poll`` over all
    their pipes, returning when any of them has something. Returns the new frames per
    transport (empty lists included)."""
    poller = select.poll()
    owner: dict[int, StdioTransport] = {}
    for transport in transports:
        for fd in transport.register(poller):
            owner[fd] = transport
    events: dict[StdioTransport, list[tuple[int, int]]] = {t: [] for t in transports}
    for fd, event in poller.poll(max(timeout_s, 0) * 1000) if owner else []:
        events[owner[fd]].append((fd, event))
    woke = time.perf_counter_ns()
    return {transport: transport.handle(ready, woke)[0] for transport, ready in events.items()}
