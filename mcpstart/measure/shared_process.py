"""One shared Streamable HTTP process for N sessions (``--sessions N`` on an HTTP server),
the figure to set beside N stdio copies (copies.py): users ask whether one HTTP server
serving every editor window beats a stdio process per window.

A round spawns the server once and, as soon as its port accepts (the timed start of
spawn.started), opens ``copies`` client sessions at once: each its own connection and
``Mcp-Session-Id``, each initialize, ``notifications/initialized`` and ``tools/list`` (every
page, client.list_tools), one thread per client so that none waits for another. Ready is the
last client's tools/list answer, in ms from the spawn. Then the server's memory is read as
copies.py reads it: the settle rule over its processes, then RSS, PSS and USS summed over
them (smaps_rollup). Rounds alternate N sessions and one, in an order shuffled per round, so
the marginal cost of one more session is (N - 1)-averaged as copies.py has it.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from .. import Step
from ..transports.http import HttpTransport
from ..transports.session import Session, SessionError
from ..wire import initialize_request
from . import memory, spawn
from .client import initialize_result, list_tools
from .copies import KINDS, alternating, marginal, median, sums
from .settings import Settings
from ..stats import summarize

READY_RULE = ("tools/list answered to its last page for every one of the N client sessions "
              "of one HTTP server process, from its spawn")


def _ready(session: Session, settings: Settings, answered: bool = False) -> int:
    """Take ``session`` to ready (initialize unless ``answered``, initialized, every
    tools/list page); returns when the last page arrived (``perf_counter_ns``).

    Raises:
        SessionError: a request got no usable answer.
    """
    if not answered:
        initialize_result(session.request(
            "initialize", initialize_request(settings.requested_revision)["params"],
            settings.timeout_s))
    session.notify("notifications/initialized")
    return list_tools(session, settings.timeout_s).at_ns


def _client(url: str, headers: dict | None, settings: Settings
            ) -> tuple[Session, int | SessionError]:
    """One more client session of its own on the running server, taken to ready: returns it
    (still open: the caller's thread shuts it down) with its ready time, or the error."""
    session = Session.start(HttpTransport(url=url, headers=headers), waits=settings.waits)
    try:
        return session, _ready(session, settings)
    except SessionError as err:
        return session, err


def one_round(server, copies: int, settings: Settings, read_memory: bool) -> dict:
    """One spawn of ``server`` (run.Server of an HTTP command) serving ``copies`` sessions
    opened at once, all held open until its memory is read.

    Returns:
        ``{copies, ready_ms, memory: {pss_bytes, uss_bytes, rss_bytes, processes} | None,
        settled, settle_s}``.

    Raises:
        SessionError: the server cannot be started, or a client got no usable answer.
    """
    first = initialize_request(settings.requested_revision)
    out = {"copies": copies, "ready_ms": None, "memory": None, "settled": None,
           "settle_s": None}
    others = []
    with spawn.started([(server.command, first)], server.spawning(settings),
                       timed=True) as (session,):
        transport = session.transport
        try:
            with ThreadPoolExecutor(max_workers=max(copies - 1, 1)) as pool:
                others = [pool.submit(_client, transport.endpoint.url, server.headers,
                                      settings) for _ in range(copies - 1)]
                initialize_result(session.wait(1, settings.timeout_s))
                ends = [_ready(session, settings, answered=True)]
            ends += [future.result()[1] for future in others]
            errors = [end for end in ends if isinstance(end, SessionError)]
            if errors:
                raise errors[0]
            out["ready_ms"] = (max(ends) - transport.t0_ns) / 1e6
            if read_memory:
                out["settled"], out["settle_s"] = memory.settle(
                    transport.processes, time.sleep, settings.settle)
                out["memory"] = sums(memory.idle_rows(transport.processes))
        finally:  # every client, once all threads are done (the pool's end waits for them)
            for future in others:
                future.result()[0].shutdown()
    return out


def measure_shared(server, n: int, settings: Settings, progress=lambda _: None) -> dict:
    """The ``startup.sessions.shared[NAME]`` block: ``settings.warmup + settings.runs``
    rounds, each a spawn serving ``n`` sessions and one serving a single session
    (sessions.alternating).

    Returns:
        ``{n, ready_rule, settle_rule, ready_ms: <stats>, single_ready_ms: <stats>,
        pss_bytes, uss_bytes, rss_bytes, single_*_bytes, marginal_*_bytes, rounds}``: memory
        the median over the counted rounds; marginal as copies.py has it.

    Raises:
        SessionError: as ``one_round``.
    """
    total = settings.warmup + settings.runs
    rounds = alternating(
        n, settings, lambda copies, read: one_round(server, copies, settings, read),
        lambda index, _warmup, copies: Step(
            f"{server.row.name}: {copies} session(s) on one process, round {index + 1}/{total}",
            "startup", server.row.name, index, total), progress)

    def counted(copies: int) -> list[dict]:
        return [r for r in rounds if r["copies"] == copies and not r["warmup"]]

    def ready(copies: int) -> dict:
        picked = [r for r in rounds if r["copies"] == copies]
        return summarize([r["ready_ms"] for r in picked if not r["warmup"]],
                         [r["ready_ms"] for r in picked if r["warmup"]])

    block = {"n": n, "ready_rule": READY_RULE, "settle_rule": settings.settle.describe(),
             "ready_ms": ready(n), "single_ready_ms": ready(1)}
    for kind in KINDS:
        many, one = (median([r["memory"][f"{kind}_bytes"] for r in counted(c)])
                     for c in (n, 1))
        block.update({f"{kind}_bytes": many, f"single_{kind}_bytes": one,
                      f"marginal_{kind}_bytes": marginal(many, one, n)})
    block["rounds"] = rounds
    return block

