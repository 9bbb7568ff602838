"""Progress of a run on stderr, drawn from the run's ``mcpstart.Step`` events.

Three modes, chosen from the stream:

- live (the stream is a terminal and ``TERM`` is not ``dumb``): one line rewritten in place
  after a carriage return. A Step with ``done``/``total`` (the cold-start series, the
  all-at-once startup) shows a bar ``[#######-------------] 14/36``, its text and the time
  since the display started; a build (a Step with a ``log``) shows a spinner, the server,
  the build's own elapsed time and the last line of the build log. Notes (phase "note"), a
  build's outcome (a build Step without a log), the start of a build (its log path) and
  everything given to ``line`` and ``outcomes`` are printed as plain lines above the live
  line, so the scrollback tells what happened.
- plain (any other stream): one line per Step, ``mcpstart: <text>``; while a long Step runs
  (a build, a Step with a ``log``; the revision matrix, whose silent probes each wait out
  their wait; the HTTP load; the wait for idle memory to settle), a heartbeat line every ``HEARTBEAT_S`` seconds (``mcpstart:
  still building rust (2:30)``), so that a CI system that stops jobs silent for some
  minutes sees the job alive.
- quiet: nothing (errors are Click's, not the display's).

Timing: the display draws only inside its callback, which the run calls between runs, before
the pause that precedes every timed spawn. The exceptions are the long Steps, which time no
start: a build blocks the calling thread in a subprocess, the load runs in Locust's own
process, the revision matrix waits out silent probes, the idle-memory wait only samples
the server's memory. A small thread (the ticker) redraws
the spinner every ``SPIN_S`` seconds (live) or writes a heartbeat every ``HEARTBEAT_S``
seconds (plain) while such a Step is the current one, and is stopped (joined) as soon as any
other Step arrives, before the callback returns, so no thread of the display runs during a
timed start or a timed call.

Colour only on a terminal, and never when ``NO_COLOR`` is set to a non-empty value
(https://no-color.org); then not one ANSI escape is written: the live line is rubbed out with
spaces, never with an erase sequence.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import threading
import time
from collections.abc import Callable

from .. import Step

PREFIX = "mcpstart: "
SPIN_S = 0.1
"""Seconds between two redraws of a build's spinner."""
HEARTBEAT_S = 20.0
"""Seconds between two heartbeat lines of a long Step off a terminal: under the 30 s at which
issue 31 asks for a line (CI systems stop jobs silent for some minutes: GitLab and Travis CI
at 10)."""
LONG_PHASES = ("matrix", "load", "settle")
"""Phases of Steps that run long without Steps of their own, beside builds (a ``log``): the
revision matrix, the HTTP load, the wait for idle memory to settle (up to the settle rule's
``max_s``, 30 s: measure/memory.py). None of them times a start or a call."""
BAR_WIDTH = 20
SPINNER = "|/-\\"
LOG_TAIL_BYTES = 4096
"""How much of the end of a build log is read to find its last line."""
STATUS_COLORS = {"ok": "green", "failed": "red", "skipped": "yellow"}
_ESCAPE = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|[@-Z\\-_])")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def is_terminal(stream) -> bool:
    """True when ``stream`` is a terminal that can redraw a line (``TERM`` is not dumb)."""
    try:
        return bool(stream.isatty()) and os.environ.get("TERM") != "dumb"
    except (AttributeError, ValueError):  # no isatty, or closed
        return False


def last_line(path) -> str:
    """The last non-blank line of a file (a build log) as printable text: the part after the
    last carriage return (a tool's own progress bar), ANSI escapes and control characters
    removed; "" when the file cannot be read or holds no text. Reads at most the last
    LOG_TAIL_BYTES bytes."""
    try:
        with open(path, "rb") as handle:
            handle.seek(max(handle.seek(0, os.SEEK_END) - LOG_TAIL_BYTES, 0))
            tail = handle.read().decode("utf-8", "replace")
    except OSError:
        return ""
    for line in reversed(tail.splitlines()):  # splits at \r too
        line = _CONTROL.sub("", _ESCAPE.sub("", line)).strip()
        if line:
            return line
    return ""


def elapsed(seconds: float) -> str:
    """``m:ss`` (``h:mm:ss`` from one hour on)."""
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def bar(done: int, total: int, width: int = BAR_WIDTH) -> tuple[str, str]:
    """The filled and the empty part of a ``width``-character bar for ``done`` of ``total``
    (click's progress bar characters: ``#`` and ``-``)."""
    filled = width * min(max(done, 0), total) // total if total > 0 else 0
    return "#" * filled, "-" * (width - filled)


class Display:
    """Shows Steps on ``stream`` (default: stderr); pass it as the run's ``progress``
    callback, and use it as a context manager (or call ``close``) so the live line is cleared
    and a build's spinner stopped whatever happens.

    Args:
        stream: a text stream; its ``isatty()`` chooses live or plain (module doc).
        quiet: show nothing.
        mask: applied to every text before it is shown (the CLI masks secrets:
            ``lambda text: redact(text, secrets)``); may be replaced later, e.g. once the
            secrets are known.
        clock: seconds, monotonic (``time.monotonic``); the elapsed times use it.
        heartbeat_s: seconds between two heartbeat lines (plain mode).

    Attributes:
        mode: "live", "plain" or "quiet".
        color: whether ANSI colours are written (live mode and no NO_COLOR).
    """

    def __init__(self, stream=None, *, quiet: bool = False,
                 mask: Callable[[str], str] = lambda text: text,
                 clock: Callable[[], float] = time.monotonic,
                 heartbeat_s: float = HEARTBEAT_S):
        self.stream = stream if stream is not None else sys.stderr
        self.mode = "quiet" if quiet else "live" if is_terminal(self.stream) else "plain"
        self.color = self.mode == "live" and not os.environ.get("NO_COLOR")
        self.mask = mask
        self.clock = clock
        self.heartbeat_s = heartbeat_s
        self._started = clock()
        self._current: Step | None = None  # the Step the live line shows
        self._current_since = self._started
        self._drawn = 0  # visible characters of the live line on screen
        self._lock = threading.Lock()
        self._ticker: threading.Thread | None = None
        self._stop = threading.Event()

    # ---- the progress callback ----------------------------------------------------------
    def __call__(self, step: Step | str) -> None:
        """Show one Step (a str is a note). Returns only once a build's spinner, if one ran,
        has stopped."""
        if isinstance(step, str):
            step = Step(step)
        self._stop_ticker()
        if self.mode == "quiet":
            return
        text = self.mask(step.text)
        if self.mode == "plain":
            self._write(PREFIX + text + "\n")
            if step.log is not None or step.phase in LONG_PHASES:
                self._start_ticker(self._heartbeat, step, self.clock(), self.heartbeat_s,
                                   "mcpstart-heartbeat")
            return
        if step.phase == "note":
            self._permanent(text)
            return
        if step.phase == "build":
            self._current = None
            self._permanent(text)  # a build's outcome, or where its log is
            if step.log is None:
                return
        with self._lock:
            self._current, self._current_since = step, self.clock()
            self._draw()
        if step.log is not None:
            self._start_ticker(self._spin, step, self._current_since, SPIN_S, "mcpstart-spinner")

    def line(self, text: str, color: str | None = None) -> None:
        """Print ``text`` (masked) as a plain line, above the live line; ``color`` a click
        colour name, used only when colour is on."""
        if self.mode != "quiet":
            self._stop_ticker()
            self._permanent(self.mask(text), color)

    def outcomes(self, servers: list[dict]) -> None:
        """The end of a run: ``close``, then one plain line per server of a results dict's
        ``servers``: ``name: ok``, or ``name: failed: <reason>`` / ``name: skipped:
        <reason>`` (a reason's further lines indented), then ``name warning: <metric>:
        <detail>`` per warning."""
        from ..results import name_of
        from .table import warning_text

        self.close()
        for server in servers:
            name, status = name_of(server), server.get("status")
            reason = str(server.get("reason") or "").replace("\n", "\n  ")
            self.line(f"{name}: {status}" + (f": {reason}" if reason else ""),
                      STATUS_COLORS.get(status))
            for warning in server.get("warnings") or []:
                self.line(f"{name} warning: {warning_text(warning)}", "yellow")

    def close(self) -> None:
        """Stop a spinner or heartbeat and clear the live line; ``line`` still works
        afterwards."""
        self._stop_ticker()
        with self._lock:
            self._current = None
            self._clear()

    def __enter__(self) -> "Display":
        _ACTIVE.append(self)
        return self

    def __exit__(self, *exc) -> None:
        self.close()
        if self in _ACTIVE:
            _ACTIVE.remove(self)

    # ---- drawing --------------------------------------------------------------------------
    def _start_ticker(self, tick: Callable, step: Step, since: float, every_s: float,
                      name: str) -> None:
        """A thread calling ``tick(step, since, turn)`` every ``every_s`` seconds (under the
        lock) until ``_stop_ticker``."""
        def run(stop: threading.Event) -> None:
            turn = 0
            while not stop.wait(every_s):
                turn += 1
                with self._lock:
                    if not stop.is_set():
                        tick(step, since, turn)

        self._stop = threading.Event()
        self._ticker = threading.Thread(target=run, args=(self._stop,), name=name, daemon=True)
        self._ticker.start()

    def _stop_ticker(self) -> None:
        if self._ticker is not None:
            self._stop.set()
            self._ticker.join()
            self._ticker = None

    def _spin(self, _step: Step, _since: float, turn: int) -> None:
        self._draw(turn)

    def _heartbeat(self, step: Step, since: float, _turn: int) -> None:
        """``still building NAME (m:ss)`` for a build, else ``still on: TEXT (m:ss)``."""
        what = (f"building {self.mask(step.server or step.text)}" if step.log is not None
                else f"on: {self.mask(step.text)}")
        self._write(f"{PREFIX}still {what} ({elapsed(self.clock() - since)})\n")

    def _style(self, text: str, color: str | None) -> str:
        if not (self.color and color):
            return text
        import click

        return click.style(text, fg=color)

    def _write(self, text: str) -> None:
        self.stream.write(text.encode("utf-8", "backslashreplace").decode("utf-8"))
        self.stream.flush()

    def _permanent(self, text: str, color: str | None = None) -> None:
        with self._lock:
            self._clear()
            self._write(PREFIX + self._style(text, color) + "\n")
            if self._current is not None:
                self._draw()

    def _clear(self) -> None:
        if self._drawn:
            self._write("\r" + " " * self._drawn + "\r")
            self._drawn = 0

    def _width(self) -> int:
        """The terminal's columns; else $COLUMNS, else 80 (shutil.get_terminal_size)."""
        try:
            columns = os.get_terminal_size(self.stream.fileno()).columns
        except (AttributeError, OSError, ValueError):
            columns = 0
        return columns or shutil.get_terminal_size().columns

    def _parts(self, step: Step, turn: int) -> list[tuple[str, str | None]]:
        """The live line as (text, colour) parts."""
        now = self.clock()
        if step.log is not None:
            who = self.mask(step.server) if step.server else self.mask(step.text)
            last = self.mask(last_line(step.log))
            return [(SPINNER[turn % len(SPINNER)], "cyan"),
                    (f" {who}: building {elapsed(now - self._current_since)}", None),
                    (f" | {last}" if last else "", None)]
        text = f"{self.mask(step.text)} ({elapsed(now - self._started)})"
        if step.done is None or not step.total:
            return [(text, None)]
        filled, empty = bar(step.done, step.total)
        return [("[", None), (filled, "green"), (f"{empty}] {step.done}/{step.total} {text}", None)]

    def _draw(self, turn: int = 0) -> None:
        """Redraw the live line (the caller holds the lock), cut to the terminal's width."""
        room, shown = max(self._width() - 1, 1), []
        for text, color in self._parts(self._current, turn):
            text = text[:room - sum(len(t) for t, _ in shown)]
            shown.append((text, color))
        visible = sum(len(t) for t, _ in shown)
        self._write("\r" + "".join(self._style(t, c) for t, c in shown if t)
                    + " " * max(self._drawn - visible, 0))
        self._drawn = visible


_ACTIVE: list[Display] = []
"""The displays open as context managers, innermost last."""


def emit(step) -> None:
    """Show a Step (or a plain message) on the innermost open Display, else as a plain line
    ``mcpstart: <text>`` on stderr (a command's own messages after its display closed)."""
    if _ACTIVE:
        _ACTIVE[-1](step)
    else:
        print(f"{PREFIX}{getattr(step, 'text', step)}", file=sys.stderr)
