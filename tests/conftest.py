"""Shared test helpers: a Command that runs the fake server with switches."""

import sys
from pathlib import Path

import pytest

from mcpstart.session import Command

FAKE = Path(__file__).parent / "fakes" / "fake_server.py"


def fake_command(*switches: str, env: dict | None = None) -> Command:
    """A Command spawning tests/fakes/fake_server.py with ``switches``."""
    return Command([sys.executable, str(FAKE), *switches], None, env or {})


@pytest.fixture
def fake():
    return fake_command
