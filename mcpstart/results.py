"""The results file: the contract every report reads. JSON is the source of truth
(``"schema": "mcpstart/1"``); a TOML copy with the same stem sits beside it. Every key, its
unit and when it is null: docs/results.md; the same as a JSON Schema: results.schema.json,
which ``load`` checks every file against."""

from __future__ import annotations

import json
import math
import os
import stat
from dataclasses import dataclass, field, fields
from functools import cache
from pathlib import Path

from . import warnings as warn
from .redact import redact
from .stats import is_number

SCHEMA = "mcpstart/1"
SCHEMA_FILE = Path(__file__).with_name("results.schema.json")
"""The results file as a JSON Schema (draft 2020-12), shipped in the package."""


class ResultsError(ValueError):
    """A file that is not an mcpstart results file of a schema this version reads."""


@dataclass
class ServerResult:
    """One server's row. Blocks are shaped as docs/results.md says; a block that was not
    measured (the server failed or was skipped first) stays None. ``status`` is "ok",
    "failed", "skipped" or "interrupted" (an exit signal cut its measurement short);
    ``reason`` says why when it is not "ok"."""

    name: str
    transport: str = "stdio"
    language: str | None = None
    sdk: str | None = None
    sdk_version: str | None = None
    sdk_source: dict | None = None
    status: str = "ok"
    reason: str | None = None
    not_measured: dict = field(default_factory=dict)
    server_info: dict | None = None
    server_capabilities: dict | None = None
    command: dict | None = None
    handshake_ms: dict | None = None
    phases_ms: dict | None = None
    modern_ms: dict | None = None
    round_trip_ms: dict | None = None
    """The warm round trips (measure/warm.py): ``{n, p50, p95, samples}``, and ``errors``
    ``{total, by_class: {http_4xx, http_5xx}}`` when an HTTP error status failed some calls
    (``n`` counts the others; warning kind ``series_errors``)."""
    memory: dict | None = None
    payload: dict | None = None
    """The large call (measure/warm.py): ``{tool, request_bytes, response_bytes,
    round_trip_ms, verified, unicode_verified, is_error, refused}``; ``request_bytes`` the
    payload the server took, ``refused`` ``[{request_bytes, cause}]``: each size it refused
    as too large (HTTP 413) before, halved each time; ``{tool, refused}`` alone when it
    refused every size (``not_measured.payload`` says which)."""
    tools: dict | None = None
    instructions: dict | None = None
    """The initialize answer's ``instructions`` (measure/tokens.py): ``{bytes, tokens}``."""
    footprint: dict | None = None
    protocol: dict | None = None
    shutdown: dict | None = None
    page_cache: dict | None = None
    traffic: dict | None = None
    http: dict | None = None
    """Streamable HTTP figures (docs/results.md#http): endpoint (the URL; a spawned
    server's with ``{port}``, measure/http_steps.py), start_ms, latency_ms, session_ms,
    sessions_leak, load; None for a stdio server. Each ``load[]`` block (measure/load.py)
    holds ``answer_shape`` (how the server answered a request: "json", "sse" or
    "sse-primed", transports/http.py), ``ceiling_rps`` (the engine's rate on the same scenario
    against the HTTP floor in this run, answering in that shape), ``ceiling_ratio`` (rps / ceiling_rps), ``engine_bound`` (True: the engine, not
    the server, set the rate; None: no ceiling) and, for the paced scenario, ``rate`` asked and
    ``rate_missed`` (reached under 90% of it). ``latency_ms.errors`` and
    ``session_ms.errors``: ``{total, by_class}``, the calls and sessions an HTTP error status
    failed (round_trip_ms's; the others are timed)."""
    workload: dict | None = None
    """A workload's per-tool figures (measure/per_tool.py; docs/results.md#workload):
    ``{shape, initialize_ms, tools: {NAME: {warm_ms, cold_first_call_ms}}}``; None without
    ``--workload``."""
    launcher: dict | None = None
    dual_era: dict | None = None
    caching: dict | None = None
    start_usage: dict | None = None
    """The tree's resource usage from spawn to the initialize answer, per figure over the cold
    starts (measure/usage.py; docs/results.md#start_usage)."""
    imports: dict | None = None
    """A Python server's import time per distribution, a Go server's package init time per
    module (measure/imports.py, go_init.py; docs/results.md#imports)."""
    classes: dict | None = None
    """A JVM server's classes loaded before its answer, per source (measure/jvm_classes.py;
    docs/results.md#classes)."""
    loader: dict | None = None
    """A native server's dynamic loading at start: the objects mapped and the relocations
    processed (measure/native_loader.py; docs/results.md#loader)."""
    runtime_heap: dict | None = None
    """The runtime's own heap figures once the server answered, in the start-up
    attribution's extra starts (measure/runtime_heap.py; docs/results.md#runtime_heap)."""
    memory_limit: dict | None = None
    """The server's memory cgroup with --memory-limit: ``{bytes, cgroup, cgroup_version,
    oom_kills, peak_bytes}`` (measure/limits.py; docs/results.md)."""
    orphans: list = field(default_factory=list)
    warnings: list = field(default_factory=list)

    def fail(self, reason: str) -> None:
        """Mark the row failed; the first cause wins, later ones become warnings (each cause
        once)."""
        if self.status != "failed":
            self.status, self.reason = "failed", reason
        elif reason != self.reason and all(w.get("detail") != reason for w in self.warnings
                                           if isinstance(w, dict)):
            self.warnings.append(warn.failure(reason))

    def cold_start_median(self) -> float | None:
        """The median ms from spawn to the initialize answer so far: ``handshake_ms``'s, or an
        HTTP server's ``http.start_ms.initialize``'s; None before any counted run."""
        return cold_start_median({"handshake_ms": self.handshake_ms, "http": self.http})

    def skip_block(self, block: str, reason: str) -> None:
        """Record why ``block`` is not measured for this server (shown as "n/a")."""
        self.not_measured[block] = reason


@dataclass
class Results:
    """A whole run: metadata plus one ServerResult per server, in measurement order."""

    created: str
    mcpstart_version: str
    argv: list[str]
    environment: dict
    settings: dict
    servers: list[ServerResult] = field(default_factory=list)
    run_sequence: list = field(default_factory=list)
    startup: dict | None = None
    load_ceiling: dict | None = None
    """The load engine's ceiling: its load blocks against the HTTP floor in this run
    (``{server, load: [...], by_answer: {shape: [...]}}``: ``load`` in the floor's own answer
    shape, ``by_answer`` the floor answering in each other shape a row's blocks record), or
    None without load."""
    interrupted: str | None = None
    """Why the run ended early (an exit signal), else None: the rows hold what came before."""
    incomplete: bool = False
    """True while a run is still writing the file (every rewrite before the last); a file
    left so was cut off (the process killed) and holds what was measured until then."""
    schema: str = SCHEMA
    secrets: tuple = field(default=(), repr=False)
    """Values masked with *** in every output (redact.py); never stored."""

    def to_dict(self) -> dict:
        """The JSON form, ``schema`` first, secrets masked; whatever a server sent is stored
        as JSON can hold it (``stored``)."""
        top = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "secrets"}
        top["servers"] = [{f.name: getattr(row, f.name) for f in fields(row)}
                          for row in self.servers]
        return stored({"schema": top.pop("schema"), **top}, self.secrets)

    @classmethod
    def from_dict(cls, data: dict) -> "Results":
        """Rebuild from the JSON form. Raises ResultsError on another schema."""
        schema = data.get("schema") if isinstance(data, dict) else None
        if isinstance(schema, str) and schema.startswith("mcpstart/") and schema != SCHEMA:
            raise ResultsError(f"an mcpstart results file of schema {schema!r}, which this "
                               f"mcpstart ({SCHEMA!r}) does not read: read it with the "
                               "mcpstart version that wrote it (its mcpstart_version), or a "
                               "newer one")
        if schema != SCHEMA:
            raise ResultsError(f"not an mcpstart results file (schema {SCHEMA!r} expected)")
        for key, kind in (("created", str), ("environment", dict), ("settings", dict),
                          ("servers", list)):
            if not isinstance(data.get(key), kind):
                raise ResultsError(f"'{key}' must be a {kind.__name__}")
        known = {f.name for f in fields(ServerResult)}
        servers = []
        for index, row in enumerate(data["servers"]):
            if not isinstance(row, dict) or not isinstance(row.get("name"), str):
                raise ResultsError(f"servers[{index}] must be a table with a 'name'")
            fields_ = {k: v for k, v in row.items() if k in known}
            fields_["orphans"], fields_["warnings"] = (list(row.get("orphans") or []),
                                                       list(row.get("warnings") or []))
            fields_["not_measured"] = dict(row.get("not_measured") or {})
            servers.append(ServerResult(**fields_))
        top = {f.name for f in fields(cls)} - {"servers", "secrets"}
        try:
            return cls(**{k: v for k, v in data.items() if k in top and v is not None},
                       servers=servers)
        except TypeError as err:
            raise ResultsError(str(err)) from err

    def save(self, path: Path) -> None:
        """Write ``path`` (JSON) and its ``.toml`` sibling, each atomically (temp file, rename)."""
        data = self.to_dict()
        _write_atomic(Path(path), json.dumps(data, indent=2, allow_nan=False) + "\n")
        import tomli_w

        _write_atomic(Path(path).with_suffix(".toml"), tomli_w.dumps(_toml_ready(data)))


MAX_DEPTH = 48
"""Deepest nesting of a value stored in a results file (a server's error data, say); deeper
parts are replaced by a note, so no writer or reader of the file runs out of stack."""


def stored(value, secrets: tuple = (), depth: int = 0):
    """``value`` as a results file holds it: dicts (string keys) and lists, strings with every
    secret masked (redact.py), numbers, booleans and None; a NaN or infinity a server sent
    becomes the string "nan", "inf" or "-inf" (JSON has no such number), anything nested
    deeper than MAX_DEPTH a note. Strings keep lone surrogates: the JSON writer escapes
    them, the TOML copy backslash-escapes them."""
    if depth > MAX_DEPTH:
        return f"(nested deeper than {MAX_DEPTH} levels; not stored)"
    if isinstance(value, dict):
        return {str(k): stored(v, secrets, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [stored(v, secrets, depth + 1) for v in value]
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return redact(str(value), secrets)


def is_results_file(path: Path) -> bool:
    """True when ``path`` is an mcpstart results file (JSON or its TOML copy) of this schema."""
    import tomllib

    try:
        text = Path(path).read_text(encoding="utf-8")
        data = tomllib.loads(text) if Path(path).suffix == ".toml" else json.loads(text)
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("schema") == SCHEMA


def writable_folder(path: Path) -> None:
    """Refuse a file path whose folder cannot be written into.

    Raises:
        ValueError: "cannot write into folder ..."."""
    if not path.parent.is_dir() or not os.access(path.parent, os.W_OK | os.X_OK):
        raise ValueError(f"cannot write into folder {str(path.parent)!r}")


def output_path(value: str) -> Path:
    """A results file to write: a .json name (its TOML copy goes beside it) in a folder that
    can be written, overwriting only mcpstart results files.

    Raises:
        ValueError: the reason, one sentence.
    """
    if not value.strip():
        raise ValueError("is empty")
    path = Path(value)
    if path.with_suffix(".toml") == path:
        raise ValueError("names the JSON results file; its TOML copy is written beside it "
                         "(use a .json name)")
    writable_folder(path)
    for target in (path, path.with_suffix(".toml")):
        if target.is_dir() or (target.exists() and not is_results_file(target)):
            copy = f", and the TOML copy of {str(path)!r} goes there" if target != path else ""
            raise ValueError(f"{str(target)!r} exists and is not an mcpstart results file"
                             f"{copy}; not overwriting it (give -o another name)")
    return path


def load(path: Path, reader: str = "mcpstart") -> Results:
    """Read a results JSON file; ``reader`` names the command for the message about a TOML
    copy given in its place.

    Raises:
        ResultsError: the TOML copy, unreadable, not JSON, another schema, or a value the
            results schema rejects (``validate``); the message names the file.
    """
    if Path(path).suffix == ".toml":
        raise ResultsError(f"{path} is the TOML copy; {reader} reads the JSON results file "
                           f"({Path(path).with_suffix('.json')})")
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, ValueError) as err:
        raise ResultsError(f"{path}: {err}") from err
    try:
        data = json.loads(text)
    except ValueError as err:
        raise ResultsError(f"{path}: not a JSON results file ({err})") from err
    try:
        if isinstance(data, dict) and data.get("schema") == SCHEMA:
            validate(data)
        return Results.from_dict(data)
    except ResultsError as err:
        raise ResultsError(f"{path}: {err}") from err


@cache
def _validator():
    from jsonschema import Draft202012Validator

    return Draft202012Validator(json.loads(SCHEMA_FILE.read_text(encoding="utf-8")))


def key_path(steps) -> str:
    """A key path as the docs write it: ``servers[0].handshake_ms.median``."""
    text = ""
    for step in steps:
        text += f"[{step}]" if isinstance(step, int) else f"{'.' * bool(text)}{step}"
    return text


def validate(data: dict) -> None:
    """Check a results dict against SCHEMA_FILE (jsonschema).

    Raises:
        ResultsError: the failure jsonschema ranks first, its key path leading:
            "servers[0].handshake_ms.median: 'fast' is not of type 'number', 'null'".
    """
    from jsonschema.exceptions import best_match

    error = best_match(_validator().iter_errors(data))
    if error is not None:
        raise ResultsError(f"{key_path(error.absolute_path) or '(top level)'}: {error.message} "
                           "(the results schema: docs/results.md)")
    for path, block in _stats_blocks(data, ()):
        _check_summary(path, block)


def _stats_blocks(value, path: tuple):
    """Every statistics block (stats.summarize's shape: ``samples``, ``median`` and
    ``ci_level`` among its keys) in ``value`` with its key path, depth first."""
    if isinstance(value, dict):
        if {"samples", "median", "ci_level"} <= value.keys():
            yield path, value
        for key, item in value.items():
            yield from _stats_blocks(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _stats_blocks(item, (*path, index))


def _check_summary(path: tuple, block: dict) -> None:
    """A statistics block's figures are those of its ``samples``: with every sample kept
    (``n`` of them) its ``median``, ``min`` and ``max`` are theirs (mcpstart writes them
    unrounded: stats.summarize); with a part kept (a long series), every kept sample lies
    within ``min`` and ``max``. So ``report`` (which shows the stored figures) and ``compare``
    (which tests the samples) read the same series.

    Raises:
        ResultsError: a figure that is not its samples' (a hand-edited or damaged file),
            naming its key path and both values.
    """
    samples = block["samples"]
    if not samples:
        return
    import statistics

    def close(a, b) -> bool:
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)

    low, high = min(samples), max(samples)
    if block.get("n") == len(samples):
        checks = [("median", statistics.median(samples), close), ("min", low, close),
                  ("max", high, close)]
    else:
        checks = [("min", low, lambda stored, v: stored <= v or close(stored, v)),
                  ("max", high, lambda stored, v: stored >= v or close(stored, v))]
    for key, value, holds in checks:
        stored = block.get(key)
        if stored is not None and not holds(stored, value):
            raise ResultsError(f"{key_path((*path, key))}: {stored!r} does not fit its samples "
                               f"(their {key}: {value!r}): the file was edited or is damaged")


def _toml_ready(value):
    """TOML has no null: drop None values (in tables and lists); escape lone surrogates,
    which no TOML (UTF-8) string can hold."""
    if isinstance(value, dict):
        return {k: _toml_ready(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_toml_ready(v) for v in value if v is not None]
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    return value


def _write_atomic(path: Path, text: str) -> None:
    """Write a temp file beside ``path`` (the target of a symlink), then rename it over; the
    file keeps an existing file's mode, else gets the umask's."""
    path = path.resolve()
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        if path.exists():
            os.chmod(tmp, stat.S_IMODE(path.stat().st_mode))
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


# ---- reading: every view reads a results file through these, tolerating any JSON value --

def documents(results) -> list[dict]:
    """One results file or a list of them (``Results`` objects or their JSON dicts) as a
    list of dicts; anything that is not a dict becomes an empty one."""
    items = results if isinstance(results, (list, tuple)) else [results]
    items = [r.to_dict() if hasattr(r, "to_dict") else r for r in items]
    return [r if isinstance(r, dict) else {} for r in items]


def dig(value, path: str):
    """The value at a dotted key path (``"handshake_ms.median"``), None where any step is
    missing or not a JSON object; a step into a list of objects picks the one whose
    ``scenario`` is the key (``"http.load.calls.rps"``)."""
    for key in path.split("."):
        if isinstance(value, list):
            value = next((v for v in value if isinstance(v, dict) and v.get("scenario") == key),
                         None)
            continue
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def servers(doc: dict) -> list[dict]:
    """The server rows of a results dict that are JSON objects."""
    rows = doc.get("servers")
    return [s for s in rows if isinstance(s, dict)] if isinstance(rows, list) else []


def name_of(server: dict) -> str:
    name = server.get("name")
    return name if isinstance(name, str) else "?"


def number_or_none(value) -> float | None:
    """``value`` when it is a finite JSON number (not a bool), else None."""
    return value if is_number(value) else None


def cold_start_median(row: dict) -> float | None:
    """A results row's median ms from spawn to the initialize answer: ``handshake_ms``'s,
    or an HTTP server's ``http.start_ms.initialize``'s (None when neither was measured)."""
    return dig(row, "handshake_ms.median") or dig(row, "http.start_ms.initialize.median")


def number(value) -> float:
    """``value`` when it is a finite JSON number (not a bool); else TypeError."""
    if not is_number(value):
        raise TypeError(f"not a number: {value!r}")
    return value


FLOOR = ("c", "mcpstart-c-floor")
"""The floor server: the reference recipe's name and the name it gives in serverInfo."""
FLOORS = (FLOOR[0], "c-http")
"""The floor's recipes: stdio's, and its Streamable HTTP sibling's."""


def is_floor(server: dict) -> bool:
    """True for a floor server's row (the minimal C server, over stdio or HTTP: the least
    any server scores)."""
    return server.get("name") in FLOORS and (
        server.get("language") == "c" or dig(server, "server_info.name") == FLOOR[1])
