"""A workload file (docs/workloads.md): the tools a run calls, their arguments and weights,
and the session shape, for any server. Named by a path, or by a bare name NAME that
resolves to the packaged ``mcpstart/workloads/NAME.toml``. A leaf beside wire.py: it
imports only wire."""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path

from .wire import ToolCall, fill

PACKAGED = Path(__file__).with_name("workloads")
"""The packaged workloads, ``NAME.toml`` each."""
MOCK_API = "{mock_api}"
"""Replaced in every string argument by the base URL (``http://127.0.0.1:PORT``) of the mock
API mcpstart starts for the run (measure/mock_api.py)."""
SHAPES = ("per-call", "shared")
"""``per-call``: initialize, notifications/initialized, one tools/call, then the session's end
(over HTTP its DELETE), as the Streamable HTTP benchmark's k6 script runs each call;
``shared``: every call on one session."""
TOP_KEYS, SESSION_KEYS, TOOL_KEYS = ({"description", "source", "session", "tools"},
                                     {"shape", "think_ms"}, {"name", "arguments", "weight"})


@dataclass(frozen=True)
class Workload:
    """A loaded workload file.

    Attributes:
        name: the bare name (the file's stem).
        path: the file it was read from.
        calls: one ToolCall per ``[[tools]]`` entry, in the file's order (names unique).
        weights: each call's share of the calls under load (positive, same order).
        shape: one of SHAPES.
        think_ms: the pause after each iteration under load, ms (>= 0).
        description, source: the file's own words, or None.
        mock_api: the mock API's URL put in place of ``{mock_api}`` (None: not yet, or not
            needed).
    """

    name: str
    path: str
    calls: tuple[ToolCall, ...]
    weights: tuple[float, ...]
    shape: str = "per-call"
    think_ms: float = 0.0
    description: str | None = None
    source: str | None = None
    mock_api: str | None = None

    @property
    def needs_mock_api(self) -> bool:
        """True when an argument holds ``{mock_api}``: the run starts the mock API."""
        return any(fill(c.arguments, MOCK_API, "") != c.arguments for c in self.calls)

    def with_mock_api(self, url: str) -> "Workload":
        """This workload with ``{mock_api}`` replaced by ``url`` in every argument."""
        return replace(self, mock_api=url, calls=tuple(
            replace(c, arguments=fill(c.arguments, MOCK_API, url)) for c in self.calls))

    def record(self) -> dict:
        """The results' ``settings.workload`` block (docs/results.md#settings)."""
        return {"name": self.name, "path": self.path, "shape": self.shape,
                "think_ms": self.think_ms, "description": self.description,
                "source": self.source, "mock_api": self.mock_api,
                "tools": [{"name": c.name, "arguments": c.arguments, "weight": w}
                          for c, w in zip(self.calls, self.weights)]}


def resolve(spec: str, folder: Path = PACKAGED) -> Path:
    """The file ``spec`` names: a path that exists, else ``folder/SPEC.toml`` for a bare
    name (no ``/``, no ``.toml``).

    Raises:
        ValueError: ``spec`` is not a regular file (a folder, a device), or neither exists
            (the message lists the packaged names).
    """
    path = Path(spec).expanduser()
    if path.is_file():
        return path
    if path.exists():
        raise ValueError(f"--workload {spec}: not a file (a workload is a TOML file, or the "
                         "name of a packaged one)")
    if "/" not in spec and not spec.endswith(".toml") and (folder / f"{spec}.toml").is_file():
        return folder / f"{spec}.toml"
    names = ", ".join(sorted(p.stem for p in folder.glob("*.toml"))) or "none"
    raise ValueError(f"--workload {spec}: no such file, nor a packaged workload of that name "
                     f"(packaged: {names})")


def load(spec: str, folder: Path = PACKAGED) -> Workload:
    """The workload ``spec`` names (``resolve``), read and checked.

    Raises:
        ValueError: no such file, not TOML, or a key missing, unknown or of the wrong type
            or value (the message names the file and the key).
    """
    path = resolve(spec, folder)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise ValueError(f"workload {path}: {err}") from err
    try:
        return parse(data, path.stem, str(path))
    except ValueError as err:
        raise ValueError(f"workload {path}: {err}") from err


def parse(data: dict, name: str, path: str) -> Workload:
    """A Workload from a workload file's parsed TOML ``data`` (module doc; docs/workloads.md).

    Raises:
        ValueError: a key missing, unknown, or of the wrong type or value (named).
    """
    _known(data, TOP_KEYS, "")
    for key in ("description", "source"):
        if not isinstance(data.get(key, ""), str):
            raise ValueError(f"{key}: must be a string")
    session = data.get("session", {})
    if not isinstance(session, dict):
        raise ValueError("session: must be a table")
    _known(session, SESSION_KEYS, "session.")
    shape = session.get("shape", "per-call")
    if shape not in SHAPES:
        raise ValueError(f"session.shape: {shape!r} is not one of {', '.join(SHAPES)}")
    think = _number(session.get("think_ms", 0.0), "session.think_ms", lambda v: v >= 0,
                    "a finite number >= 0")
    tools = data.get("tools")
    if not isinstance(tools, list) or not tools:
        raise ValueError("tools: at least one [[tools]] entry is needed")
    calls, weights = [], []
    for index, tool in enumerate(tools):
        where = f"tools[{index}]."
        if not isinstance(tool, dict):
            raise ValueError(f"tools[{index}]: must be a table")
        _known(tool, TOOL_KEYS, where)
        tool_name = tool.get("name")
        if not isinstance(tool_name, str) or not tool_name.strip():
            raise ValueError(f"{where}name: a non-empty string is needed")
        if tool_name in {c.name for c in calls}:
            raise ValueError(f"{where}name: {tool_name!r} is listed twice (figures are per "
                             "tool name)")
        arguments = tool.get("arguments", {})
        if not isinstance(arguments, dict):
            raise ValueError(f"{where}arguments: must be a table (tools/call arguments are a "
                             "JSON object)")
        calls.append(ToolCall(tool_name, arguments, f"the workload's {where}arguments"))
        weights.append(_number(tool.get("weight", 1), f"{where}weight", lambda v: v > 0,
                               "a finite number > 0"))
    return Workload(name, path, tuple(calls), tuple(weights), shape, think,
                    data.get("description"), data.get("source"))


def _known(table: dict, keys: set[str], where: str) -> None:
    unknown = sorted(set(table) - keys)
    if unknown:
        said = ", ".join(f"{where}{key}" for key in unknown)
        raise ValueError(f"{said}: unknown key{'s' if len(unknown) > 1 else ''} (known: "
                         f"{', '.join(sorted(keys))})")


def _number(value, key: str, ok, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value) or not ok(value):
        raise ValueError(f"{key}: {value!r} is not {what}")
    return float(value)
