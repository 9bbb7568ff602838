"""What a transport adds to the one run loop (run.py): a ``Steps`` value per transport,
stdio_steps.STEPS and http_steps.STEPS. The loop itself (rounds, order, warm-ups, guards,
statistics, the modern-era series, the revision matrix, the tool session, the row's
finishing rules) is the same for both; a transport says only what differs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .. import Progress
from ..results import Results, ServerResult
from .server import Server
from .settings import Settings

Say = Callable[[str], None]
"""A progress line for one server's step (the loop adds the server's name and place)."""


@dataclass(frozen=True)
class Steps:
    """One transport's part of the run loop.

    ``transport``: the ``Server.transport`` it serves ("stdio" or "http"). ``series``: the
    cold-start series after "handshake" and "modern" (stdio: "dual"). ``labels``: what
    progress lines and causes call each series and the matrix step (e.g. "HTTP cold start").
    ``tag``: the prefix of its series in ``results.run_sequence`` ("" or "http_").
    ``prepare(live, settings, progress)``: before the first cold start (stdio: the cold page
    cache, the launchers; HTTP: the rows' ``http`` blocks). ``summarize(server)``: the runs so
    far into the row's blocks (rewritten after every run). ``after_session(server, settings,
    say)``: the server's steps after its tool session. ``row_wide(live, ceiling, settings,
    results, progress, on_update)``: steps that need every server's session done (HTTP:
    load and its ceiling) or None; a row is finished after it. ``floor(row)``: the row's
    cold-start series that sizes a busy machine's error (stats.busy_error)."""

    transport: str
    series: tuple[str, ...]
    labels: dict[str, str]
    tag: str
    prepare: Callable[[list[Server], Settings, Progress], None]
    summarize: Callable[[Server], None]
    after_session: Callable[[Server, Settings, Say], None]
    row_wide: Callable[[list[Server], Server | None, Settings, Results, Progress,
                        Callable[[Results], None]], None] | None
    floor: Callable[[ServerResult], dict | None]
