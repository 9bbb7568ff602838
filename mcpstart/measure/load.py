"""Bounded load on a Streamable HTTP server with Locust, run as a process of its own (Locust
patches the process that imports it; mcpstart never imports it): one scenario per run of
the engine (locust_mcp.py says what each does), the server's process tree and the engine
sampled meanwhile.

Bounds: ``settings.load_users`` users for ``settings.load_s`` seconds, every request at most
``settings.load_timeout_s`` (a stall is a timeout error); requests in flight when the time
is up finish or time out and are counted (``in_flight_at_end``); the engine's process is
killed if it outlives its own bounds by 30 s. The engine runs on the CPUs it is given
(``engine_cpus``: the calling thread's affinity while it is spawned, which it inherits).

Figures: RPS (requests finished in the window / its length), latency percentiles from the
pooled unrounded times of every finished request (errors included: a timeout counts its
full wait), never an average of percentiles; Locust's own histogram is stored as it is
(it rounds to whole ms under 100 ms, to 10 ms under 1 s), and a seeded draw of at most
SAMPLES times is stored for compare. The open loop's times run from each request's intended
send time (locust_mcp.py), the others' from its send. Errors by class; the server tree's CPU% (100 = one
core) and RSS, and the engine's CPU%, sampled every SAMPLE_S. ``rate_missed`` (the fixed-rate
scenarios): the rate fell short of the asked one by more than LOAD_PACE_MISS.

Whether the engine set the rate (``engine_bound``) comes from the run's own evidence: the
ceiling, the same scenario with the same users against the HTTP floor in this run, answering
in the server's own answer shape (``answer_shape``: c-http's --answer; a server
an independent load tool drives many times faster than this engine: benchmarks/load_check.py
shows it), is the engine's own maximum; a block at LOAD_BOUND of it or more is engine-bound and
its rate a lower bound of the server's (``engine_bound``, LOAD_BOUND).
"""

from __future__ import annotations

import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

from .. import platforms
from ..defaults import CEILING_OVER, LOAD_BOUND, LOAD_PACE_MISS, SERVER_BUSY
from ..endpoint import Endpoint
from ..transports.http import affinity
from ..wire import SMALL_TEXT, ToolCall
from . import load_workers
from .settings import Settings

SCENARIOS = ("session", "calls", "rate", "open")
PACED = ("rate", "open")
"""The fixed-rate scenarios at ``settings.load_rate``: "rate" a closed loop (paced users),
"open" an open loop (a schedule; locust_mcp.py says how each sends)."""
ERROR_CLASSES = ("timeout", "http_4xx", "http_5xx", "connection", "protocol")
SAMPLES = 100
"""Latency times stored per scenario (a seeded random draw), enough for compare's exact
test and small enough for it to stay fast."""
SAMPLE_S = 0.25
START_S = 30.0
"""How long the engine may take beyond its own bounds (start-up, writing) before it is
killed."""
LOCUSTFILE = Path(__file__).with_name("locust_mcp.py")


class LoadError(Exception):
    """The engine could not run (not installed, exited without its records)."""


def engine_version() -> str | None:
    """Locust's version where it is installed beside mcpstart, else None (no load)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("locust")
    except PackageNotFoundError:
        return None


def cores(server_count: int = 1) -> tuple[frozenset[int] | None, frozenset[int] | None]:
    """``(server_cpus, engine_cpus)``: the first ``server_count`` CPUs mcpstart may use for
    the server (--server-cpus), the rest for the engine; (None, None) when that leaves the
    engine none, and under the portable process layer (nothing is pinned: the load block's
    ``pinned_cpus`` says so; platforms.NOT_MEASURED)."""
    if platforms.current() == "portable":
        return None, None
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) <= server_count:
        return None, None
    return frozenset(cpus[:server_count]), frozenset(cpus[server_count:])


def run_scenario(endpoint: Endpoint, scenario: str, settings: Settings, call: ToolCall,
                 processes: list[psutil.Process], engine_cpus: frozenset[int] | None,
                 server_cpus: frozenset[int] | None = None) -> dict:
    """One scenario against ``endpoint``, its tools/call ``call`` with SMALL_TEXT where it
    places the payload; ``processes``: the server's (sampled; [] when not on this machine). Returns the load block (docs/results.md#httpload, module doc).

    Raises:
        LoadError: Locust is not installed, or its run left no records (its output's tail
            quoted).
    """
    data, samples, version = run_engine(endpoint, scenario, settings, call, processes,
                                        engine_cpus)
    users, duration, timeout = settings.load_users, settings.load_s, settings.load_timeout_s
    block = summarize(data, samples, settings.load_rate if scenario in PACED else None,
                      calls_only=scenario != "session")
    if "workers" in data:
        block.update(workers=data["workers"], workers_missing=data["workers_missing"])
    block.update(engine=f"locust {version}", scenario=scenario, users=users,
                 duration_s=duration, timeout_s=timeout,
                 pinned_cpus={"server": sorted(server_cpus) if server_cpus else None,
                              "engine": sorted(engine_cpus) if engine_cpus else None},
                 ceiling_rps=None, ceiling_ratio=None, engine_bound=None)
    return block


def run_engine(endpoint: Endpoint, scenario: str, settings: Settings, call: ToolCall,
               processes: list[psutil.Process],
               engine_cpus: frozenset[int] | None) -> tuple[dict, list[tuple], str]:
    """One run of the engine (run_scenario's arguments): ``(data, samples, version)``, its
    records as locust_mcp.py writes them (``{window: {start, deadline}, records: [[name,
    start, ms, class, detail]], unfinished: [[name, start]], histogram, ...}``, times in
    time.time() seconds; distributed, the workers' merged, with ``workers``:
    load_workers.merge), the _Sampler's samples and Locust's version. Distributed
    (load_workers.distributed): a master and ``settings.load_workers`` local workers, all on
    ``engine_cpus``, and ``settings.load_remote_workers`` that connect to the master at
    ``settings.load_master``; the engine's CPU is then theirs together (a remote worker's is
    its own report, in ``workers``).

    Raises:
        LoadError: as run_scenario; distributed, also when no worker sent its records.
    """
    version = engine_version()
    if version is None:
        raise LoadError("Locust is not installed (pip install 'mcpstart[http]')")
    users, duration, timeout = settings.load_users, settings.load_s, settings.load_timeout_s
    workers = settings.load_workers + settings.load_remote_workers
    spread = load_workers.distributed(settings)
    with tempfile.TemporaryDirectory(prefix="mcpstart-load-") as folder:
        config, output, log = (Path(folder) / n for n in ("config.json", "out.json", "log"))
        config.write_text(json.dumps({
            "host": endpoint.host, "port": endpoint.port, "path": endpoint.path,
            "headers": dict(endpoint.headers), "scenario": scenario, "users": users,
            "workers": workers if spread else 1,
            "duration_s": duration, "timeout_s": timeout,
            "rate": settings.load_rate, "rate_per_user": settings.load_rate / users,
            "output": str(output),
            "call": call.params(SMALL_TEXT), "reversed": call.verifiable,
            **_workload(settings)}))
        argv = [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless",
                "--users", str(users), "--spawn-rate", str(max(users, 1000)),
                "--run-time", f"{int(duration + timeout + (START_S if spread else 0)) + 2}s",
                "--stop-timeout", str(int(timeout) + 1), "--only-summary", "--loglevel",
                "ERROR", "--host", endpoint.url]
        local = []
        if spread:
            master = load_workers.master(settings.load_master)
            argv += load_workers.master_argv(master, workers, START_S)
            local = [load_workers.worker_argv(LOCUSTFILE, master.host, master.port)
                     ] * settings.load_workers
        samples: list[tuple] = []
        engines: list[subprocess.Popen] = []
        logs = [log] + [Path(folder) / f"worker-{n}.log" for n in range(len(local))]
        try:
            with affinity(engine_cpus):
                for command, path in zip([argv, *local], logs):
                    with open(path, "wb") as out:
                        engines.append(subprocess.Popen(
                            command, stdout=out, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True,
                            env={**os.environ, "MCPSTART_LOAD": str(config)}))
            sampler = _Sampler(processes, [e.pid for e in engines], samples)
            sampler.start()
            try:
                engines[0].wait(duration + timeout + START_S * (2 if spread else 1))
            except subprocess.TimeoutExpired:
                pass
            finally:
                sampler.stop()
        finally:
            for engine in engines:
                _end(engine)
        def said() -> str:  # read only when a run failed
            return "; ".join(f"{path.name}: {_tail(path) or 'nothing'}" for path in logs)
        if not output.exists():
            raise LoadError(f"the load engine (Locust {version}) exited with "
                            f"{engines[0].returncode} and no records; it said: {said()}")
        data = json.loads(output.read_text())
        if spread and not data["workers"]:
            raise LoadError(f"no load worker of Locust {version} sent its records; they said: "
                            f"{said()}")
        return (load_workers.merge(data, workers) if spread else data), samples, version


def _tail(path: Path) -> str:
    return path.read_bytes()[-1500:].decode("utf-8", "replace").strip()


def _workload(settings: Settings) -> dict:
    """The engine's configuration for ``settings.workload`` (locust_mcp.py): ``calls``, each
    ``{params, weight}``, one drawn by weight per call and its requests named
    ``tools/call NAME``, and ``think_s``, the pause after each iteration of the unpaced
    scenarios; {} without a workload (one call, named ``tools/call``, no pause)."""
    workload = settings.workload
    if workload is None:
        return {}
    return {"calls": [{"params": c.params(SMALL_TEXT), "weight": w}
                      for c, w in zip(workload.calls, workload.weights)],
            "think_s": workload.think_ms / 1000}


def engine_bound(block: dict, ceilings: list[dict]) -> dict:
    """``{ceiling_rps, ceiling_ratio, engine_bound}`` of ``block`` against its ceiling: of
    ``ceilings`` (the HTTP floor's blocks in this run, each in one answer shape), the one of
    the same scenario and ``answer_shape`` (None: no such ceiling was measured; the floor's
    own block is its own ceiling). The shape must match because the engine's own cost per
    request depends on it: reading a chunked event stream costs Locust more than a JSON
    body, so against a JSON floor a server that answers with a stream would look slow when
    the engine is what limits it. Engine-bound: ``rps >= LOAD_BOUND * ceiling_rps``
    (LOAD_BOUND says why), except where the floor kept the asked pace (then the pace, not the
    engine, set both rates) and where the server's own tree used SERVER_BUSY of the cores it
    was given or more (then the server is what limits it, whatever share of the ceiling its
    rate is: a server as fast as the engine). ``engine_bound`` is None (unknown) without both
    rates, or when the rate is above CEILING_OVER of the ceiling (then the ceiling was not the
    engine's maximum)."""
    ceiling = next((c for c in ceilings if c["scenario"] == block["scenario"]
                    and c.get("answer_shape") == block.get("answer_shape")), None)
    rps, top = block.get("rps"), (ceiling or {}).get("rps")
    if rps is None or not top:
        return {"ceiling_rps": top, "ceiling_ratio": None, "engine_bound": None}
    paced = ceiling.get("rate_missed") is False
    bound = None if rps > CEILING_OVER * top else (
        not paced and rps >= LOAD_BOUND * top and not _server_busy(block))
    return {"ceiling_rps": top, "ceiling_ratio": rps / top, "engine_bound": bound}


def _server_busy(block: dict) -> bool:
    """Whether the server's tree used SERVER_BUSY of its cores (the pinned ones, else the
    machine's) over the block; False where its CPU was not sampled (a server elsewhere)."""
    cpu, pinned = block.get("cpu_percent"), (block.get("pinned_cpus") or {}).get("server")
    cores = len(pinned) if pinned else os.cpu_count() or 1
    return cpu is not None and cpu >= SERVER_BUSY * 100 * cores


def summarize(data: dict, samples: list[tuple], rate: float | None = None,
              calls_only: bool = False) -> dict:
    """The figures of one run from the engine's records and mcpstart's samples (module doc):
    ``{requests, rps, rate, rate_missed, latency_ms: {n, p50, p95, p99, mean, samples,
    histogram, source}, by_request: {name: {n, p50, p95, p99, mean, errors}}, errors:
    {total, by_class, examples}, in_flight_at_end, unfinished, cpu_percent, rss_bytes,
    engine_cpu_percent, usage}``; ``rate``: a fixed-rate scenario's asked requests/s (None:
    unpaced; then ``rate_missed`` is None too). ``calls_only`` (the scenarios on kept
    sessions): ``rps`` and ``latency_ms`` count the tool calls alone, not the session each
    user opens once (its initialize, a stale session's DELETE: in ``by_request`` and
    ``errors``), so a fixed rate reads as the calls asked for."""
    start, deadline = data["window"]["start"], data["window"]["deadline"]
    records = data["records"]
    counted = [r for r in records if not calls_only or r[0].startswith("tools/call")]
    done = [r for r in counted if start is not None and r[1] + r[2] / 1000 <= deadline]
    late = [r for r in records if start is not None and r[1] + r[2] / 1000 > deadline]
    times = [r[2] for r in counted]
    by_class = {k: 0 for k in ERROR_CLASSES}
    examples = {}
    for r in records:
        if r[3]:
            by_class[r[3]] = by_class.get(r[3], 0) + 1
            examples.setdefault(r[3], r[4])
    unfinished = data["unfinished"]
    by_class["timeout"] += len(unfinished)  # still waiting when the engine stopped
    names = sorted({r[0] for r in records})
    window = (deadline - start) if start is not None else None
    used = [s for s in samples if start is not None and start <= s[0] <= deadline]
    rps = len(done) / window if window else None
    return {
        "requests": len(records) + len(unfinished), "rps": rps, "rate": rate,
        "rate_missed": None if rate is None or rps is None else rps < (1 - LOAD_PACE_MISS) * rate,
        "latency_ms": {**_percentiles(times),
                       "samples": random.Random(0).sample(times, min(SAMPLES, len(times))),
                       "histogram": data["histogram"],
                       "source": "mcpstart's unrounded time of every finished request "
                                 "(Locust's histogram rounds to whole ms under 100 ms)"},
        "by_request": {n: {**_percentiles([r[2] for r in records if r[0] == n]),
                           "errors": sum(1 for r in records if r[0] == n and r[3])}
                       for n in names},
        "errors": {"total": sum(by_class.values()), "by_class": by_class,
                   "examples": examples},
        "in_flight_at_end": len(late) + len(unfinished), "unfinished": len(unfinished),
        "cpu_percent": _rate(used, 1), "rss_bytes": max((s[2] for s in used), default=None),
        "engine_cpu_percent": _rate(used, 3),
        "usage": {"t_s": [round(s[0] - start, 3) for s in used],
                  "server_cpu_s": [round(s[1], 4) for s in used],
                  "rss_bytes": [s[2] for s in used], "engine_cpu_s": [round(s[3], 4) for s in used]},
    }


def _percentiles(values: list[float]) -> dict:
    if not values:
        return {"n": 0, "p50": None, "p95": None, "p99": None, "mean": None}
    cuts = statistics.quantiles(values, n=100, method="inclusive") if len(values) > 1 \
        else [values[0]] * 99
    return {"n": len(values), "p50": cuts[49], "p95": cuts[94], "p99": cuts[98],
            "mean": statistics.fmean(values)}


def _rate(samples: list[tuple], index: int) -> float | None:
    """CPU% (100 = one core) of the CPU seconds at ``index`` over the samples' span."""
    if len(samples) < 2 or samples[-1][0] <= samples[0][0]:
        return None
    return 100 * (samples[-1][index] - samples[0][index]) / (samples[-1][0] - samples[0][0])


class _Sampler(threading.Thread):
    """Every SAMPLE_S: (time.time(), the server tree's CPU seconds, its RSS, the engine's
    CPU seconds: its processes' together). Reads only /proc (psutil); touches no pipe or
    socket of a session."""

    def __init__(self, processes: list[psutil.Process], engine_pids: list[int], out: list):
        super().__init__(daemon=True)
        self.processes, self.out = processes, out
        self.engines = [psutil.Process(pid) for pid in engine_pids]
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(SAMPLE_S):
            cpu = rss = 0.0
            for proc in self.processes:
                try:
                    times = proc.cpu_times()
                    cpu += times.user + times.system
                    rss += proc.memory_info().rss
                except psutil.Error:
                    continue
            try:
                engine = sum(t.user + t.system + t.children_user + t.children_system
                             for t in (e.cpu_times() for e in self.engines))
            except psutil.Error:
                return
            self.out.append((time.time(), cpu, int(rss), engine))

    def stop(self) -> None:
        self.done.set()
        self.join()


def _end(engine: subprocess.Popen) -> None:
    """The engine's process group ended: SIGTERM, then SIGKILL after 2 s (it started a
    session of its own, so nothing else is signalled)."""
    if engine.poll() is None:
        for sig, wait in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(engine.pid, sig)
            except ProcessLookupError:
                break
            try:
                engine.wait(wait)
                break
            except subprocess.TimeoutExpired:
                continue
    try:
        os.killpg(engine.pid, signal.SIGKILL)  # anything it left in its group
    except (ProcessLookupError, PermissionError):
        pass
