"""Shared test helpers: the fake server, fast settings, a session started on the stdio
transport, and toy recipes written as real TOML files."""

import copy
import importlib
import importlib.util
import json
import os
import shutil
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import tomli_w

from mcpstart.command import Command
from mcpstart.measure import tokens
from mcpstart.measure.memory import SettleRule
from mcpstart.measure.settings import Settings
from mcpstart.results import Results, ResultsError, validate
from mcpstart.transports.base import SpawnError
from mcpstart.transports.session import Session, SessionError, Waits
from mcpstart.transports.stdio import StdioTransport

FAKE = Path(__file__).parent / "fakes" / "fake_server.py"
PYTHON = (sys.executable, "-S")
"""The interpreter that runs the fakes (tests/fakes/), which use the standard library only:
without the site module, whose .pth files (an environment's certificate bundle, editable
installs) can cost several times a bare interpreter's start, and the tests start fakes
hundreds of times."""
PYTHON_LINE = " ".join(PYTHON)
"""PYTHON as the start of a shell command line."""
BENCHMARKS = Path(__file__).parent.parent / "benchmarks"
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


FAST_SETTLE = SettleRule(interval_s=0.05, slope_window_s=0.2, drop_window_s=0.3, min_s=0,
                         max_s=2)
"""A settle rule that ends in about 0.3 s on flat memory, for tests that are not about it."""
FAST = Settings(pause_ms=0, settle=FAST_SETTLE, waits=Waits(shutdown_grace_s=0.5, diagnosis_s=0.5),
                probe_grace_s=0.2, collect_garbage=False, warm_sessions=1)
"""Settings whose fixed waits are short: tests that are not about a wait pass these. One warm
session: tests about the warm series' sessions ask for more (tests/test_warm_sessions.py)."""


def fast(**changes) -> Settings:
    """FAST with ``changes`` (Settings fields)."""
    return replace(FAST, **changes)


def start(command: Command, request: dict | None = None, wait_s: float = 0.0,
          waits: Waits = FAST.waits) -> Session:
    """A session on the stdio transport, started untimed (finish it with ``shutdown``)."""
    try:
        transport = StdioTransport(command)
    except SpawnError as err:
        raise SessionError(err.strerror) from err
    return Session.start(transport, request, wait_s, waits)


@pytest.fixture(autouse=True)
def fast_waits(monkeypatch):
    """Commands run with FAST's waits, in both tiers (a module fixture sets its own: it runs
    before this)."""
    monkeypatch.setattr("mcpstart.measure.settings.BASE", FAST)


def _tokenizer_not_loaded():
    raise tokens.Unavailable("the tokenizer is not loaded by a test not marked tokenizer "
                             "(tests/conftest.py)")


@pytest.fixture(scope="session", autouse=True)
def no_tokenizer():
    """bpe-openai's ranks take seconds to load per worker: a run counts no tokens (as without
    the ``tokens`` extra: the count None, the reason in ``not_measured``), from the first
    fixture on, except in a test marked ``tokenizer`` (one that checks a token count)."""
    with pytest.MonkeyPatch.context() as patch:
        real = tokens._encoding
        patch.setattr(tokens, "_encoding", _tokenizer_not_loaded)
        yield real


@pytest.fixture(autouse=True)
def tokenizer_where_asked(request, monkeypatch, no_tokenizer):
    """The real tokenizer for a test marked ``tokenizer``."""
    if request.node.get_closest_marker("tokenizer") is not None:
        monkeypatch.setattr(tokens, "_encoding", no_tokenizer)


@pytest.fixture(scope="session", autouse=True)
def e2e_results_valid(request):
    """Every results file the end-to-end tier (its tests and their fixtures) writes satisfies
    the results schema (mcpstart/results.schema.json): each file is checked as it stands at
    the end of the session."""
    e2e = {item.nodeid for item in request.session.items if item.get_closest_marker("e2e")}
    written, save = {}, Results.save

    def checked(self, path) -> None:
        save(self, path)
        if os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" (", 1)[0] in e2e:
            written[Path(path)] = None

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Results, "save", checked)
        yield
    failures = []
    for path in written:
        try:
            validate(json.loads(path.read_text()))
        except ResultsError as err:
            failures.append(f"{path}: {err}")
    assert not failures, "\n".join(failures)


def unavailable(reason: str, beyond_ci: bool = False) -> None:
    """Skip the calling test (or fixture) for ``reason``; with MCPSTART_REQUIRE_ALL=1 (CI)
    fail it instead, except for ``beyond_ci``: a program CI's machine kind does not have
    (LaTeX), whose check a test has already made another way. Every skip of the suite goes
    through here."""
    if REQUIRE_ALL and not beyond_ci:
        pytest.fail(f"{reason} (MCPSTART_REQUIRE_ALL=1)")
    pytest.skip(reason if beyond_ci else f"{reason} (set MCPSTART_REQUIRE_ALL=1 to fail instead)",
                allow_module_level=True)


def require_modules(*names: str, extra: str = "test") -> None:
    """``unavailable`` unless every module of ``names`` (optional dependencies, installed by
    the pyproject.toml extra ``extra``) can be imported; at module level it skips the module."""
    missing = [name for name in names if importlib.util.find_spec(name) is None]
    if missing:
        unavailable(f"not installed: {', '.join(missing)} (pip install 'mcpstart[{extra}]')")


def require_programs(*programs: str) -> None:
    """``unavailable`` unless every one of ``programs`` is on PATH."""
    missing = [p for p in programs if shutil.which(p) is None]
    if missing:
        unavailable(f"not found: {', '.join(missing)}")


def benchmark(name: str):
    """The script benchmarks/NAME.py as a module, for a test that runs its check once.
    benchmarks/ is not a package: its folder goes first on sys.path, as when a script runs,
    so the scripts' imports of each other resolve the same way."""
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    return importlib.import_module(name)


def fake_command(*switches: str, env: dict | None = None) -> Command:
    """A Command spawning tests/fakes/fake_server.py with ``switches``."""
    return Command([*PYTHON, str(FAKE), *switches], None, env or {})


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
