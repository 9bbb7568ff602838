"""Every spawn of a measurement starts here: the one primitive, so each rule of the clock lives
in one place (docs/measurement.md).

A timed start goes, in this order:
1. the previous run fully reaped (callers leave no session running: each ends with its
   ``with`` block);
2. ``before_spawn`` (a cold page cache is made here);
3. the idle pause (``timed_window``): garbage collected, the collector paused until the
   block ends, then ``settings.pause_ms`` during which nothing of mcpstart runs;
4. each spawn prepared (transport constructed: executable resolved, environment built,
   pipes and poller made, as the C harness does after its pause);
5. per spawn: its argument conversion rehearsed, the clock, the first request into the
   pipe, the spawn, and for a single start a blocking wait until the server writes
   (StdioTransport.start);
6. the caller waits for the awaited id; leaving the block shuts every session down as the
   spec says (stdin EOF, SIGTERM, SIGKILL) and closes the pipes of spawns that never
   happened.
An untimed start (a protocol probe, the warm session) skips 2 and 3.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager

from ..command import Command
from ..transports.base import SpawnError
from ..transports.session import Session, SessionError, Traffic
from .settings import Settings


@contextmanager
def timed_window(pause_ms: float, collect: bool = True) -> Iterator[None]:
    """The state every timed spawn starts from (docs/measurement.md): garbage collected now, the
    collector paused until the block ends (a collection would otherwise land inside a
    timed wait at random), then the fixed idle pause, during which nothing of mcpstart
    runs; the block prepares the spawn, spawns and waits. Preparing after the pause, as the
    C harness does, leaves the spawn's data in the CPU's caches when the clock starts
    (docs/measurement.md, "The clock and what is timed"; its figure: docs/figures.md, "The timed
    path")."""
    enabled = gc.isenabled()
    if collect:
        gc.collect()
    gc.disable()
    try:
        if pause_ms > 0:
            time.sleep(pause_ms / 1000)
        yield
    finally:
        if enabled:
            gc.enable()


@contextmanager
def started(starts: Sequence[tuple[Command, dict | None]], settings: Settings, *, timed: bool,
            before_spawn: Callable[[], None] = lambda: None,
            traffic: Traffic | None = None) -> Iterator[list[Session]]:
    """Start one session per ``(command, first request)`` of ``starts`` (module doc for the
    order), each on ``settings.spawner(command)``; yield them, started in that order, and
    shut them all down when the block ends (each one's ``Session.ended``), also on errors;
    with ``traffic`` (a row's), what each session saw is added to it once it is shut down, so
    a deviation met in any start of a server is the row's.

    A single timed start blocks right after its spawn until the server writes (at most
    ``settings.timeout_s``); several timed starts (an editor starting its servers at once)
    do not, so the later spawns follow at once.

    Raises:
        SessionError: a program cannot be started; the sessions started before it are shut
            down and the spawns prepared after it closed.
    """
    with ExitStack() as stack:
        if timed:
            before_spawn()
            stack.enter_context(timed_window(settings.pause_ms, settings.collect_garbage))
        transports = []
        for command, _ in starts:
            try:
                transport = settings.spawner(command)
            except SpawnError as err:
                raise SessionError(err.strerror) from err
            transports.append(transport)
            stack.callback(_close_unstarted, transport)
        wait_s = settings.timeout_s if timed and len(starts) == 1 else 0.0
        sessions = []
        for transport, (_, request) in zip(transports, starts):
            session = Session.start(transport, request, wait_s, settings.waits)
            stack.callback(_end, session, traffic)
            sessions.append(session)
        yield sessions


def _end(session: Session, traffic: Traffic | None) -> None:
    if session.ended is None:
        session.shutdown()
    if traffic is not None:
        traffic.merge(session.traffic)


def _close_unstarted(transport) -> None:
    """Close the pipes of a spawn that never happened (a later start failed first)."""
    if not transport.t0_ns:
        transport.close()
