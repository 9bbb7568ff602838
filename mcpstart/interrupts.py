"""Exit signals. SIGINT, SIGTERM and SIGHUP (where the system has it) end mcpstart in order: they raise SystemExit
(status 128 + signal number) so every ``finally`` runs and no spawned process is left behind;
while a ``shielded()`` block reclaims processes, they wait until the block ends, except
within an ``interruptible()`` part of it (a wait on a process already recorded)."""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

EXIT_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP")
                     if hasattr(signal, name))
"""The exit signals this system has (Windows has no SIGHUP)."""
_state = {"depth": 0, "pending": None, "open": False}


def _handler(signum: int, _frame) -> None:
    if _state["depth"] and not _state["open"]:
        _state["pending"] = _state["pending"] or signum
        return
    raise SystemExit(128 + signum)


@contextmanager
def exit_on_signals() -> Iterator[None]:
    """Within the block, exit signals raise SystemExit(128 + signal); the previous handlers
    come back afterwards. Main thread only."""
    previous = {sig: signal.signal(sig, _handler) for sig in EXIT_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextmanager
def shielded() -> Iterator[None]:
    """Defer exit signals until the block ends, then exit as the first of them asked."""
    _state["depth"] += 1
    try:
        yield
    finally:
        _state["depth"] -= 1
        if not _state["depth"] and _state["pending"]:
            signum, _state["pending"] = _state["pending"], None
            raise SystemExit(128 + signum)


@contextmanager
def interruptible() -> Iterator[None]:
    """Within a ``shielded()`` block, the part where an exit signal may act at once (the
    blocking wait after a spawn whose process is already recorded): a deferred signal exits
    on entry, a new one exits where it lands."""
    if _state["pending"]:
        signum, _state["pending"] = _state["pending"], None
        raise SystemExit(128 + signum)
    _state["open"] = True
    try:
        yield
    finally:
        _state["open"] = False


@contextmanager
def orderly_exit(say: Callable[[str], None]) -> Iterator[None]:
    """Within the block, an exit signal ends the program in order (SystemExit 128 + N,
    ``say`` told so) and every session an error or a signal cut short is shut down on the
    way out (transports.session.shutdown_all; only when that module was loaded, since no
    session exists otherwise: a command that reads results imports nothing of the engine)."""
    with exit_on_signals():
        try:
            yield
        except SystemExit as stop:
            if isinstance(stop.code, int) and stop.code > 128:
                say(f"stopped by {signal.Signals(stop.code - 128).name}")
            raise
        finally:
            session = sys.modules.get("mcpstart.transports.session")
            if session is not None:
                session.shutdown_all()
