"""mcpstart: a profiler for MCP servers, over stdio and Streamable HTTP: cold start and its
phases, memory of the process tree, round trips, footprint, protocol revisions, sessions at
once, HTTP load; for the reference servers of each official SDK, a C floor, or any server."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from pathlib import Path

__version__ = "0.2.0"


class Step(NamedTuple):
    """One progress event of a run (a named tuple, not a dataclass: this module loads with
    every command, ``--help`` included, and typing is loaded by click already while
    dataclasses and pathlib are not; benchmarks/cli_startup.py).

    Attributes:
        text: the line a plain log prints ("go: cold start run 3/6").
        phase: "build", "matrix", "cold start", "session", "settle" (the wait for idle
            memory, within a session), "load", "startup" or "note".
        server: the server it concerns, if one.
        done, total: position in a series of known length (the cold-start runs), for a bar;
            None where the length is unknown (a build).
        log: a file whose last line tells more while the step runs (a build log).
    """

    text: str
    phase: str = "note"
    server: str | None = None
    done: int | None = None
    total: int | None = None
    log: Path | None = None


Progress = Callable[[Step], None]
"""A callback that receives each Step (the CLI shows them on stderr)."""
