"""Where a Python server's start goes: a few extra cold starts with the interpreter's import
profiling on (``PYTHONPROFILEIMPORTTIME=1``, the variable form of ``-X importtime``; Python
docs, "Command line and environment"), after the counted cold starts and never among them
(the profiling slows the start it profiles: each start is shown against the uninstrumented
median). Each is read to its initialize answer; its import tree is summed per installed
distribution, the package that owns each top-level module by the environment's own metadata
(``importlib.metadata.packages_distributions()`` run by the server's own interpreter with the
server's environment), self and cumulative.

A server qualifies when a process of its tree is a Python interpreter by command name
(PYTHON) in its cold starts' usage (usage.py): ``applies``; a stdio server's stderr and an HTTP
server's log (stdout and stderr) are read whole (Transport.log_text). The transport finding
(``other_transport``) is a stdio server's: an HTTP server's HTTP packages are its transport.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
from collections.abc import Iterator

import psutil

from ..transports.session import SessionError
from ..transports.tree import ProcessSet
from .profiled import profiled_start
from .server import Server
from .settings import Settings

BLOCK = "imports"
"""The results block this profile fills."""
ENV = {"PYTHONPROFILEIMPORTTIME": "1"}
PYTHON = re.compile(r"python[0-9.]*")
"""A Python interpreter's command name (``comm``: python, python3, python3.12)."""
LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \| (\s*)(\S+)\s*$")
"""One line of -X importtime: self µs, cumulative µs, two spaces per nesting level, module
(CPython Python/import.c, import_find_and_load)."""
STDLIB, NOT_INSTALLED = "(standard library)", "(not installed)"
HTTP_CLASSIFIERS = ("Topic :: Internet :: WWW/HTTP", "Environment :: Web Environment")
"""A distribution provides HTTP when one of its trove classifiers starts with one of these
(pypi.org/classifiers): the transport finding's rule (docs/startup.md)."""
QUERY = """\
import sys
startup = sorted(sys.modules)
import importlib.metadata as m, json
classifiers = {}
for d in m.distributions():
    classifiers.setdefault(d.metadata["Name"], d.metadata.get_all("Classifier") or [])
print(json.dumps({"startup": startup, "packages": m.packages_distributions(),
                  "classifiers": classifiers,
                  "stdlib": sorted(getattr(sys, "stdlib_module_names", ()))}))
"""
"""Run by the server's interpreter: the modules loaded before any code runs (the
interpreter's own start), each top-level module's distributions, each distribution's
classifiers, the standard library's names (Python >= 3.10)."""


def parse(text: str) -> list[dict]:
    """The import tree of -X importtime output: the top-level imports in order, each
    ``{name, self_us, cumulative_us, children}`` (the output lists a module after the ones
    it imported, indented one level deeper). Other lines are skipped."""
    pending: dict[int, list[dict]] = {}
    for line in text.splitlines():
        found = LINE.match(line)
        if not found:
            continue
        depth = len(found[3]) // 2
        node = {"name": found[4], "self_us": int(found[1]), "cumulative_us": int(found[2]),
                "children": pending.pop(depth + 1, [])}
        pending.setdefault(depth, []).append(node)
    return pending.get(0, [])


def owner(module: str, env: dict) -> str:
    """The distribution that installs ``module``'s top-level package (the first listed), else
    STDLIB or NOT_INSTALLED (the server's own code)."""
    top = module.split(".")[0]
    dists = env["packages"].get(top)
    if dists:
        return dists[0]
    return STDLIB if top in env["stdlib"] or top.startswith("_") else NOT_INSTALLED


def attribute(roots: list[dict], env: dict) -> dict:
    """One start's import tree per distribution.

    The leading top-level imports the interpreter makes before any code runs (``env
    ["startup"]``) are the interpreter's start (``interpreter_ms``), not the server's imports.

    Returns:
        ``{import_ms, interpreter_ms, http_ms, distributions: {name: {self_ms,
        cumulative_ms, modules}}}``: ``import_ms`` the cumulative time of the other
        top-level imports; per distribution the self time of all its modules, and the
        cumulative time of its outermost ones (those not imported by a module of the same
        distribution); ``http_ms`` the cumulative time of the outermost modules of the
        distributions that provide HTTP (provides_http), each counted once.
    """
    startup = set(env["startup"])
    first = next((i for i, r in enumerate(roots) if r["name"] not in startup), len(roots))
    dists: dict[str, dict] = {}
    http_us = 0

    def walk(node: dict, parent: str | None, inside_http: bool) -> None:
        nonlocal http_us
        name = owner(node["name"], env)
        entry = dists.setdefault(name, {"self_ms": 0.0, "cumulative_ms": 0.0, "modules": 0})
        entry["self_ms"] += node["self_us"] / 1000
        entry["modules"] += 1
        if name != parent:
            entry["cumulative_ms"] += node["cumulative_us"] / 1000
        http = provides_http(env["classifiers"].get(name, []))
        if http and not inside_http:
            http_us += node["cumulative_us"]
        for child in node["children"]:
            walk(child, name, inside_http or http)

    for root in roots[first:]:
        walk(root, None, False)
    return {"import_ms": sum(r["cumulative_us"] for r in roots[first:]) / 1000,
            "interpreter_ms": sum(r["cumulative_us"] for r in roots[:first]) / 1000,
            "http_ms": http_us / 1000, "distributions": dists}


def provides_http(classifiers: list[str]) -> bool:
    """The transport rule: a distribution is there for HTTP (HTTP_CLASSIFIERS)."""
    return any(c.startswith(HTTP_CLASSIFIERS) for c in classifiers)


def applies(server: Server) -> bool:
    """A server a process of whose tree was a Python interpreter in its cold starts."""
    return any(PYTHON.fullmatch(p["name"])
               for p in (server.row.start_usage or {}).get("processes", []))


def python_interpreter(processes: ProcessSet) -> dict | None:
    """``{exe, cwd, environ}`` of the tree's first live Python process (None if none)."""
    for proc in processes.scan():
        try:
            if PYTHON.fullmatch(proc.name()):
                return {"exe": _invoked(proc), "cwd": proc.cwd(), "environ": proc.environ()}
        except psutil.Error:
            continue
    return None


def _invoked(proc: psutil.Process) -> str:
    """The interpreter's path as it was invoked (argv[0], looked up in its PATH when bare):
    a virtual environment's ``bin/python`` is a symlink whose target (``/proc/pid/exe``)
    would run outside that environment (Python docs, venv: "How venvs work")."""
    argv0, cwd = proc.cmdline()[0], proc.cwd()
    if "/" not in argv0:
        return shutil.which(argv0, path=proc.environ().get("PATH")) or proc.exe()
    return os.path.join(cwd, argv0)


def environment_of(interpreter: dict, timeout_s: float) -> dict:
    """QUERY's answer from the server's interpreter, run with its environment (without the
    profiling variable) in its working directory.

    Raises:
        RuntimeError: the interpreter could not answer (the cause says why).
    """
    environ = {k: v for k, v in interpreter["environ"].items() if k not in ENV}
    try:
        done = subprocess.run([interpreter["exe"], "-c", QUERY], cwd=interpreter["cwd"],
                              env=environ, capture_output=True, text=True, timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise RuntimeError(f"{interpreter['exe']} could not list its distributions: "
                           f"{err}") from err
    if done.returncode != 0:
        raise RuntimeError(f"{interpreter['exe']} could not list its distributions: "
                           f"{done.stderr.strip()[-300:]}")
    return json.loads(done.stdout)


def block(starts: list[tuple[float, dict]], env: dict, uninstrumented_ms: float | None,
          transport: str, runtime: str = "python") -> dict:
    """The row's ``imports`` block (docs/results.md#imports) from the instrumented starts
    (``(handshake ms, attribute())`` each) and QUERY's ``env`` (another runtime's
    attribution passes its own starts in the same shape, ``env`` with ``classifiers`` and
    the ``main`` unit that is the server's own code, and its ``runtime``).

    Returns:
        ``{runtime, runs, instrumented_ms, uninstrumented_ms, import_ms, import_samples,
        interpreter_ms, share, distributions: [{name, self_ms, cumulative_ms, samples,
        modules, installed, http}], other_transport}``:
        medians over the starts; ``import_samples`` and a distribution's ``samples`` the
        per-start import_ms and self_ms, in start order (what ``compare`` tests: the self
        times of all distributions add up to import_ms);
        ``share`` import_ms / instrumented_ms; distributions by cumulative time, largest
        first (a distribution absent from a start counts 0 there; ``installed`` False for
        STDLIB and NOT_INSTALLED);
        ``http`` the transport rule's verdict (provides_http); ``other_transport`` for a
        stdio server, ``{distributions, cumulative_ms, share}`` of the HTTP ones imported at
        start (the finding, docs/startup.md; Python's classifiers only), else None;
        ``interpreter_ms`` None where the runtime's trace has no such part.
    """
    med = lambda values: statistics.median(values)  # noqa: E731
    names = list(dict.fromkeys(n for _, a in starts for n in a["distributions"]))
    rows = []
    for name in names:
        per = [a["distributions"].get(name) for _, a in starts]
        own = [p["self_ms"] if p else 0.0 for p in per]
        rows.append({"name": name, "self_ms": med(own),
                     "cumulative_ms": med([p["cumulative_ms"] if p else 0.0 for p in per]),
                     "samples": own,
                     "modules": max(p["modules"] if p else 0 for p in per),
                     "installed": name not in (STDLIB, NOT_INSTALLED, env.get("main")),
                     "http": provides_http(env["classifiers"].get(name, []))})
    rows.sort(key=lambda r: -r["cumulative_ms"])
    instrumented = med([ms for ms, _ in starts])
    import_samples = [a["import_ms"] for _, a in starts]
    import_ms = med(import_samples)
    other = None
    if transport == "stdio" and runtime == "python":
        http_ms = med([a["http_ms"] for _, a in starts])
        other = {"distributions": [r["name"] for r in rows if r["http"]],
                 "cumulative_ms": http_ms,
                 "share": http_ms / instrumented if instrumented else None}
    interpreter = [a["interpreter_ms"] for _, a in starts]
    return {"runtime": runtime, "runs": len(starts), "instrumented_ms": instrumented,
            "uninstrumented_ms": uninstrumented_ms, "import_ms": import_ms,
            "import_samples": import_samples,
            "interpreter_ms": None if None in interpreter else med(interpreter),
            "share": import_ms / instrumented if instrumented else None,
            "distributions": rows, "other_transport": other}


def measure(server: Server, settings: Settings) -> Iterator[None]:
    """The ``imports`` block of a server that ``applies``: ``settings.profiled_starts``
    instrumented starts, yielding after each (attribution.interleaved), then its
    interpreter's metadata.

    A start without an answer or an interpreter that cannot list its distributions leaves
    the block out with the cause (``not_measured["imports"]``); the row is not failed, as
    its timed figures stand.
    """
    starts, interpreter = [], None
    try:
        for _ in range(settings.profiled_starts):
            ms, text, found = profiled_start(server.command, server.spawning(settings), ENV,
                                             python_interpreter,
                                             server.before_spawn)
            interpreter = interpreter or found
            starts.append((ms, parse(text)))
            yield
        if interpreter is None:
            raise RuntimeError("no Python process was alive at the initialize answer")
        env = environment_of(interpreter, settings.timeout_s)
    except (SessionError, RuntimeError) as err:
        server.row.skip_block("imports", f"import profile: {err}")
        return
    server.row.imports = block([(ms, attribute(roots, env)) for ms, roots in starts], env,
                               server.row.cold_start_median(), server.transport)
    if server.row.imports["other_transport"] is None:
        server.row.skip_block("imports.other_transport", "the transport finding is a stdio "
                              "server's: an HTTP server's HTTP packages are its transport")
