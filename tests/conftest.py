"""Shared test helpers: the fake server, and toy recipes written as real TOML files."""

import copy
import os
import shutil
import sys
from pathlib import Path

import pytest
import tomli_w

from mcpstart.stdio.session import Command

FAKE = Path(__file__).parent / "fakes" / "fake_server.py"
REQUIRE_ALL = os.environ.get("MCPSTART_REQUIRE_ALL") == "1"

TOY_RECIPE = {
    "language": "python", "sdk": "toy", "sdk_version": "0", "source": "servers/toy",
    "sources": ["server.py"], "tool_file": "server.py",
    "toolchains": [{"name": "python3", "version": ["python3", "--version"]}],
    "build": {"steps": [["python3", "-m", "py_compile", "server.py"]]},
    "run": {"argv": ["python3", "{src}/server.py"]},
    "artifact": {"include": ["{src}/server.py"]},
    "dependencies": {"method": "python-venv", "target": "{build}/venv",
                     "lock": "{src}/server.py"},
}


def require_programs(*programs: str) -> None:
    """Skip the calling test (or fixture) when one of ``programs`` is not on PATH; with
    MCPSTART_REQUIRE_ALL=1 (CI) fail it instead."""
    missing = [p for p in programs if shutil.which(p) is None]
    if missing and REQUIRE_ALL:
        pytest.fail(f"not found: {', '.join(missing)} (MCPSTART_REQUIRE_ALL=1)")
    if missing:
        pytest.skip(f"not found: {', '.join(missing)} (set MCPSTART_REQUIRE_ALL=1 to fail instead)")


def fake_command(*switches: str, env: dict | None = None) -> Command:
    """A Command spawning tests/fakes/fake_server.py with ``switches``."""
    return Command([sys.executable, str(FAKE), *switches], None, env or {})


def toy_recipe() -> dict:
    """A fresh copy of a minimal valid recipe (edit it, then ``write_recipe``)."""
    return copy.deepcopy(TOY_RECIPE)


def write_recipe(root: Path, name: str, recipe: dict, files: dict[str, str]) -> Path:
    """Write ``files`` into the recipe's source folder under ``root`` and the recipe as
    ``root/build-recipes/<name>.toml``; returns the recipe's path."""
    source = root / recipe.get("source", "servers/toy")
    source.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        (source / rel).write_text(text)
    path = root / "build-recipes" / f"{name}.toml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(tomli_w.dumps(recipe))
    return path


@pytest.fixture
def fake():
    return fake_command
