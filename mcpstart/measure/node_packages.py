"""Where a Node.js server's start goes: a few extra cold starts with a preload of mcpstart's
(node_trace.mjs, given as ``--import`` through NODE_OPTIONS, which node reads at its start
and a launcher passes on), after the counted cold starts and never among them, each read to
its initialize answer and shown against the untraced median. The preload registers loader
hooks (``module.register()``, Node.js >= 20.6) and writes, per module, when the main thread
evaluated it and when it asked the loader thread for it. Times are summed per npm package: a
file's package is the ``name`` of the nearest package.json above it that has one (npm's
own unit: what a server's author adds, upgrades or drops), a file under none is the server's
own code (imports.NOT_INSTALLED), as is the entry script's package; ``node:`` builtins are
imports.STDLIB.

A module's self time, all on the main thread (docs/startup.md#a-nodejs-servers-packages):

- its loading: the main thread's ES module loading (the hooks' start to the first
  evaluation) cut at each request it sends the loader thread, each span's busy part (less
  the event loop's idle time in it: waiting for the loader thread's answers) charged to the
  module the request is for (loading_spans): its compile;
- its evaluation: an ES module's body between two statements the load hook adds at its head
  and end (ES modules are evaluated after the whole graph is linked, dependencies first, so
  the two marks hold its own body); a CommonJS file's ``Module.prototype.load`` (read,
  compile and run), the files it requires taken out.

Not a module's: node's own start before the preload (``interpreter_ms``), the graph's
instantiation after the last request (``linking_ms``), the main thread's waits for the
loader thread during the loading (``loader_wait_ms``: resolving and reading each file there,
and the hooks' messages, which an unprofiled node does not send), and the rest (exec, the
hooks' thread start, the server until the answer): ``instrumented_ms`` less the parts.

A package's ``cumulative_ms`` sums the self times of every module reachable from its own
(ES imports as the ``resolve`` hook saw them, CommonJS requires by nesting), each once: what
importing that package alone costs.

A server (stdio or HTTP) qualifies when a process of its tree was ``node`` in its cold
starts' usage (usage.py). With a launcher in the tree (npm exec is itself node) the last node
process to start before the answer is the server's.
"""

from __future__ import annotations

import json
import os
import re
import signal
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote, urlsplit

from ..command import Command
from ..transports.session import SessionError
from . import imports, runtime_heap
from .profiled import profiled_start
from .server import Server
from .settings import Settings

BLOCK = "imports"
"""The results block this profile fills."""
NODE = re.compile(r"node(js)?")
"""Node.js's command name (``comm``; Debian's binary is ``nodejs``)."""
PRELOAD = Path(__file__).with_name("node_trace.mjs")
FOLDER = "MCPSTART_NODE_TRACE"
"""The variable that names the folder the preload writes each process's trace to."""
HEAP_WAIT_S = 1.0
"""How long the server's node has to write its heap figures after SIGUSR2: it has answered
and waits idle, so its event loop runs the listener at once."""


def traced_env(command: Command, folder: str) -> dict[str, str]:
    """NODE_OPTIONS with the preload added to what the server's environment already sets
    (a space-separated option list: Node.js docs, "Command-line API", NODE_OPTIONS; the file
    URL has no space to quote), and FOLDER."""
    before = command.environment().get("NODE_OPTIONS", "")
    option = f"--import={PRELOAD.as_uri()}"
    return {"NODE_OPTIONS": f"{before} {option}" if before else option, FOLDER: folder}


def parse(text: str, until_ms: float) -> dict | None:
    """One process's trace (node_trace.mjs's lines) as ``{pid, start_ms, runtime_ms, entry,
    hooks_ms, first_ms, modules: {url: {evaluate_ms, load_ms}}, linking_ms, loader_wait_ms,
    edges: {url: {url, ...}}, heap}``: ``heap`` the last H line's V8 figures
    (runtime_heap.NODE: bytes), None without; times in ms since the epoch (``runtime_ms``
    since the process's time origin); ``hooks_ms`` when the loader hooks ran, ``first_ms``
    the first evaluation's begin (each None without); ``load_ms``, ``linking_ms`` and
    ``loader_wait_ms`` loading_spans's (the entry's resolve, asked with no parent, is the
    entry's; ``linking_ms`` and ``loader_wait_ms`` None without hooks or evaluation). An
    evaluation still open at the read ends at ``until_ms``; a module evaluated twice (a
    CommonJS file loaded again after a cache deletion) sums. None without the preload's P
    line."""
    head, hooks, first, heap = None, None, None, None
    stack: list[list] = []  # [url, begin, children's ms]
    evaluate: dict[str, float] = {}
    edges: dict[str, set[str]] = {}
    sends: list[tuple[float, float, str]] = []  # (time, idle, url)

    def close(at: float) -> None:
        url, begin, inner = stack.pop()
        evaluate[url] = evaluate.get(url, 0.0) + (at - begin) - inner
        if stack:
            stack[-1][2] += at - begin
            edges.setdefault(stack[-1][0], set()).add(url)

    for line in text.split("\n")[:-1]:  # the last is empty, or a line still being written
        fields = line.split("\t")
        kind, count = fields[0], len(fields)
        if kind == "P" and count == 5:
            head = {"pid": int(fields[1]), "start_ms": float(fields[2]),
                    "runtime_ms": float(fields[3]), "entry": fields[4]}
        elif kind == "H" and count == 2 + len(runtime_heap.NODE):
            heap = dict(zip(runtime_heap.NODE, map(int, fields[2:])))
        elif kind == "R" and count == 3:
            hooks = (float(fields[1]), float(fields[2]))
        elif kind == "B" and count == 4:
            first = (float(fields[2]), float(fields[3])) if first is None else first
            stack.append([fields[1], float(fields[2]), 0.0])
        elif kind == "E" and count == 3 and any(s[0] == fields[1] for s in stack):
            while stack[-1][0] != fields[1]:  # an inner one that threw: ends here too
                close(float(fields[2]))
            close(float(fields[2]))
        elif kind == "S" and count == 5:
            sends.append((float(fields[3]), float(fields[4]), fields[2]))
        elif kind == "I" and count == 3:
            edges.setdefault(fields[1], set()).add(fields[2])
    while stack:
        close(until_ms)
    if head is None:
        return None
    loading, linking, wait = {}, None, None
    if hooks is not None and first is not None:
        loading, linking, wait = loading_spans(sorted(sends), hooks, first)
    if "" in loading and head["entry"]:
        loading[head["entry"]] = loading.pop("") + loading.get(head["entry"], 0.0)
    modules = {url: {"evaluate_ms": evaluate.get(url, 0.0), "load_ms": loading.get(url, 0.0)}
               for url in {*evaluate, *loading}}
    return {**head, "hooks_ms": None if hooks is None else hooks[0],
            "first_ms": None if first is None else first[0], "modules": modules, "linking_ms": linking, "loader_wait_ms": wait, "edges": edges,
            "heap": heap}


def loading_spans(sends: list[tuple[float, float, str]], hooks: tuple[float, float],
                  first: tuple[float, float]) -> tuple[dict[str, float], float, float]:
    """The main thread's ES module loading, from the hooks' start to the first evaluation
    (``hooks`` and ``first``: ``(time, idle)``), cut at each of its requests to the loader
    thread (``sends``: ``(time, idle, url)`` in time order; idle: the event loop's idle ms so
    far). Each span's busy part (the span less the idle time in it, where the main thread
    waited for the loader thread's answers) is charged to the module the request that ends
    it is for, the one the main thread was compiling or about to (a ``load`` of url: url's
    resolve answered; a ``resolve`` from url: url was compiled, as an ES module asks for its
    imports' resolves right after its compile, and the load hook gives each one an import).

    Returns:
        ``({url: busy ms}, the last span's busy ms, the idle ms of all spans)``: the last
        span, from the last request to the first evaluation, holds the graph's
        instantiation (no module's); the three sum to ``first`` less ``hooks`` in time.
    """
    spans: dict[str, float] = {}
    before, before_idle = hooks
    for at, idle, url in sends:
        if hooks[0] <= at <= first[0]:
            spans[url] = spans.get(url, 0.0) + (at - before) - (idle - before_idle)
            before, before_idle = at, idle
    return spans, (first[0] - before) - (first[1] - before_idle), first[1] - hooks[1]


def server_trace(texts: list[str], until_ms: float) -> dict | None:
    """The trace of the node process that started last (a launcher's node starts first),
    from the texts of each process's file; None when no process ran the preload."""
    traces = [t for t in (parse(text, until_ms) for text in texts) if t is not None]
    return max(traces, key=lambda t: t["start_ms"], default=None)


def package_of(url: str, names: dict[str, str]) -> str:
    """The npm package of a module URL: the ``name`` of the nearest package.json above a
    ``file:`` URL's file that has one, else imports.NOT_INSTALLED; another scheme (``node:``,
    ``data:``) by its scheme. ``names`` caches each folder's answer."""
    parts = urlsplit(url)
    if parts.scheme == "node":
        return imports.STDLIB
    if parts.scheme != "file":
        return f"({parts.scheme})"
    folder = os.path.dirname(unquote(parts.path))
    seen = []
    while folder not in names:
        seen.append(folder)
        try:
            with open(os.path.join(folder, "package.json"), encoding="utf-8") as file:
                name = json.load(file).get("name")
        except (OSError, ValueError, AttributeError):
            name = None
        if isinstance(name, str) and name:
            names[folder] = name
        elif os.path.dirname(folder) == folder:
            names[folder] = imports.NOT_INSTALLED
        else:
            folder = os.path.dirname(folder)
    for each in seen:
        names[each] = names[folder]
    return names[folder]


def attribute(trace: dict, names: dict[str, str]) -> dict:
    """One start's trace per package, in imports.attribute's shape: ``{import_ms,
    interpreter_ms, http_ms: 0, linking_ms, loader_wait_ms, distributions: {package:
    {self_ms, cumulative_ms, modules}}}``: a module's self time is its loading and its
    evaluation; ``import_ms`` their sum over the modules, ``interpreter_ms`` node's start
    before the preload, ``linking_ms`` and ``loader_wait_ms`` parse's; the entry script's package is imports.NOT_INSTALLED
    (the server's own code)."""
    main = package_of(trace["entry"], names) if trace["entry"] else None
    own = {url: sum(times.values()) for url, times in trace["modules"].items()}
    owner = {url: package_of(url, names) for url in own}
    owner = {url: imports.NOT_INSTALLED if name == main else name
             for url, name in owner.items()}
    dists: dict[str, dict] = {}
    for url, ms in own.items():
        entry = dists.setdefault(owner[url], {"self_ms": 0.0, "cumulative_ms": 0.0,
                                              "modules": 0})
        entry["self_ms"] += ms
        entry["modules"] += 1
    for name, entry in dists.items():
        reached = reachable([u for u, n in owner.items() if n == name], trace["edges"])
        entry["cumulative_ms"] = sum(own.get(u, 0.0) for u in reached)
    return {"import_ms": sum(own.values()), "interpreter_ms": trace["runtime_ms"],
            "http_ms": 0.0, "linking_ms": trace["linking_ms"],
            "loader_wait_ms": trace["loader_wait_ms"], "distributions": dists}


def reachable(roots: list[str], edges: dict[str, set[str]]) -> set[str]:
    """``roots`` and every URL reachable from them along ``edges``."""
    seen, todo = set(roots), list(roots)
    while todo:
        for child in edges.get(todo.pop(), ()):
            if child not in seen:
                seen.add(child)
                todo.append(child)
    return seen


def applies(server: Server) -> bool:
    """A server a process of whose tree was node in its cold starts."""
    return any(NODE.fullmatch(p["name"])
               for p in (server.row.start_usage or {}).get("processes", []))


def measure(server: Server, settings: Settings) -> Iterator[None]:
    """The ``imports`` block (``runtime`` "node", with ``linking_ms`` and ``loader_wait_ms``)
    of a server that ``applies``: ``settings.profiled_starts`` traced starts, yielding after
    each (attribution.interleaved); and its ``runtime_heap`` (V8's figures of each start,
    read once it has answered: read_at_answer). A start without an answer, without a trace
    or without the loader hooks leaves the block out with the cause
    (``not_measured["imports"]``); the row is not failed."""
    starts, names, heaps = [], {}, []
    try:
        for _ in range(settings.profiled_starts):
            with tempfile.TemporaryDirectory(prefix="mcpstart-node-") as folder:
                ms, _, (texts, until) = profiled_start(
                    server.command, server.spawning(settings),
                    traced_env(server.command, folder),
                    lambda _p, folder=folder: read_at_answer(folder), server.before_spawn)
            trace = server_trace(texts, until)
            if trace is not None and trace["heap"] is not None:
                heaps.append(trace["heap"])
            if trace is None:
                raise RuntimeError("no node process ran the preload (NODE_OPTIONS "
                                   "overridden, or a node older than 20.6)")
            if trace["hooks_ms"] is None:
                raise RuntimeError("no loader hooks: module.register() needs Node.js 20.6 "
                                   "or later")
            starts.append((ms, attribute(trace, names)))
            yield
    except (SessionError, RuntimeError) as err:
        runtime_heap.lost(server.row, "imports", f"module evaluation trace: {err}")
        return
    runtime_heap.record(server.row, "node", heaps, "the server's node wrote no heap figures "
                        f"within {HEAP_WAIT_S:g} s of SIGUSR2")
    block = imports.block(starts, {"classifiers": {}}, server.row.cold_start_median(),
                          server.transport, runtime="node")
    parts = {key: [a[key] for _, a in starts] for key in ("linking_ms", "loader_wait_ms")}
    server.row.imports = {**block, **{key: None if None in values else statistics.median(values)
                                      for key, values in parts.items()}}
    server.row.skip_block("imports.other_transport", "the transport finding reads Python "
                          "distributions' classifiers only")


def read_at_answer(folder: str) -> tuple[list[str], float]:
    """read_traces once the server has answered, after asking the server's node (the one
    server_trace picks) for its heap figures: SIGUSR2, then its file read again until its
    H line is there or HEAP_WAIT_S have passed (the read's time stays the first read's)."""
    texts, until = read_traces(folder)
    trace = server_trace(texts, until)
    if trace is None:
        return texts, until
    try:
        os.kill(trace["pid"], signal.SIGUSR2)
    except OSError:  # gone
        return texts, until
    path = os.path.join(folder, f"{trace['pid']}.tsv")
    deadline = time.monotonic() + HEAP_WAIT_S
    while "\nH\t" not in Path(path).read_text(encoding="utf-8", errors="replace") \
            and time.monotonic() < deadline:
        time.sleep(0.005)
    return read_traces(folder)[0], until


def read_traces(folder: str) -> tuple[list[str], float]:
    """Each process's trace file as written so far, and the read's time (ms since the
    epoch, the clock of the trace's times)."""
    until = time.time() * 1000
    texts = []
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as file:
            texts.append(file.read())
    return texts, until
