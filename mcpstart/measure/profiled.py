"""A profiled start: one timed cold start of a server with a runtime's start-up tracing
switched on by environment variables, read to its initialize answer. The start-up
attribution of each runtime (imports.py for Python, go_init.py for Go) runs a few of these
after the counted cold starts and never among them: tracing slows the start it traces, so
each is shown against the untraced median.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TypeVar

from ..command import Command
from ..transports.base import elapsed_ms
from ..transports.tree import ProcessSet
from ..wire import initialize_request
from . import spawn
from .settings import Settings

T = TypeVar("T")


def profiled_start(command: Command, settings: Settings, env: dict[str, str],
                   at_answer: Callable[[ProcessSet], T],
                   before_spawn: Callable[[], None] = lambda: None) -> tuple[float, str, T]:
    """One timed cold start of ``command`` with ``env`` added to its environment, read to
    the initialize answer (``before_spawn`` as spawn.started runs it); ``at_answer`` is
    called with the server's process set while the tree is still alive.

    Returns:
        ``(handshake ms, what the server wrote on its diagnostic output before the answer
        (Transport.log_text: stdio its stderr; HTTP its log of stdout and stderr),
        at_answer's value)``.

    Raises:
        SessionError: no valid initialize answer.
    """
    def keeping(command):
        transport = settings.spawner(command)
        transport.stderr_log = []  # a stdio transport keeps its stderr whole
        return transport

    command = replace(command, env={**command.env, **env})
    with spawn.started([(command, initialize_request(settings.requested_revision))],
                       replace(settings, spawner=keeping), timed=True,
                       before_spawn=before_spawn) as (session,):
        response = session.wait(1, settings.timeout_s)
        ms = elapsed_ms(session.t0_ns, response.at_ns)
        text = session.transport.log_text()
        found = at_answer(session.processes)
    return ms, text, found
