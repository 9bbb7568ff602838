"""How a run measures, as one typed object that travels through the run to every probe
(docs/results.md#settings): counts, timeouts, the payload, the order, and every fixed wait (settle rule,
diagnosis wait, shutdown grace, sampler intervals), all recorded in the results file."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace

from .. import defaults, platforms
from ..command import Command
from ..transports.base import Transport
from ..transports.http import HttpTransport
from ..transports.session import Waits
from ..transports.stdio import StdioTransport
from ..wire import ToolCall
from ..workload import Workload
from .memory import Sampling, SettleRule

PHASE_RULE = ("from the spawn, the server's time only: the initialize answer, then each later "
              "request's time from being handed to the transport to its answer, added; "
              "mcpstart's own time between an answer and its next request is not counted")
"""How the phases past the handshake are timed (recorded in the results' settings). A client
that reacts at once (benchmarks/http_clock.c) reads the same; mcpstart's Python takes 0.1 to
0.5 ms per request to react on a cold start, which a wall clock would add to the server's
figure. A server still busy after an answer (finishing its own start) overlaps that time, so
the rule can read it early by at most that much."""


@dataclass(frozen=True)
class Settings:
    """Every setting of a run.

    Attributes:
        runs, warmup: counted and warm-up cold starts per server.
        timeout_s: bound of every wait on a server.
        payload_bytes: size of the large tool call's payload text.
        requested_revision: the revision asked for in ``initialize``.
        env: variables set for every server on top of its environment (keys stored only).
        pause_ms: idle pause before every timed spawn.
        order: "interleave" (rounds, one run of each server per round, shuffled) or
            "sequential"; None: interleave when several servers are measured.
        seed: the seed of the per-round shuffle.
        cache_state: "warm" (files in the page cache) or "cold" (evicted before each run).
        round_trips: counted small calls of a warm series (0: none).
        warm_sessions: the sessions they are spread over (measure/warm_sessions.py).
        probe_timeout_s: the wait of each revision-matrix probe, as given (--probe-timeout);
            None: derived from the server's measured start (revisions.probe_wait).
        probe_floor_s: the least derived wait of a revision-matrix probe.
        fallback_timeout_s: how long a dual-era client waits for the server/discover probe
            before it falls back to initialize (None: dual_era.DEFAULT_FALLBACK).
        call: the tool to call (None: reverse_text where the server lists it; with a
            workload, its first tool).
        workload: the tools called per tool, their weights under load and the session
            shape (workload.py; docs/workloads.md), or None.
        mock_api_latency_ms: how long the mock API (mock_api.py) waits before each answer.
        settle: when idle memory counts as settled.
        waits: a session's fixed waits (shutdown grace, diagnosis after a timeout).
        probe_grace_s: the shutdown grace of a revision-matrix probe and of the unprobed
            first start of ``mcpstart revisions``.
        sampling: how often the peak sampler reads RSS and looks for new processes.
        collect_garbage: collect garbage before every timed spawn (the collector is paused
            through the spawn either way); tests that time nothing turn it off.
        spawner: how a Command becomes an unstarted Transport (the stdio transport; tests
            give a scripted one). Not recorded.
        http_spawner: how an HTTP server becomes an unstarted Transport:
            ``http_spawner(command, headers=, cpus=, path=)`` for a spawned one,
            ``http_spawner(url=, headers=)`` for one already running (the Streamable HTTP
            transport; tests give a scripted one). Not recorded.
        transport: which servers of the reference set: "stdio", "http" or "both".
        load_s: seconds of each load scenario against an HTTP server (0: no load).
        load_users: concurrent users of the load engine.
        load_timeout_s: per-request timeout under load (a stall counts as a timeout error).
        load_rate: requests per second of the fixed-rate scenarios (closed and open loop).
        load_workers: the engine's local worker processes (1: one process, no master;
            load_workers.py), on the CPUs not given to the server.
        load_remote_workers: workers the master also waits for, each started on another
            machine by ``mcpstart load-worker HOST:PORT``.
        load_master: ``HOST:PORT`` the master listens on (remote workers need it); None: a
            free loopback port.
        http_sessions: full sessions (initialize .. DELETE) timed per HTTP server, with the
            server's memory read before and after them.
        attribution: where each start goes (docs/startup.md): the tree's usage read at
            every cold start's initialize answer (usage.py) and the start-up profiles
            (attribution.py); False (--no-attribution): neither.
        profiled_starts: start-up profiles per server (--profiled-starts;
            defaults.PROFILED_STARTS, PROFILED_STARTS_COMPARE with --sdk).
        memory_limit_bytes: each spawned server's memory cgroup limit (limits.py); None:
            no limit.
        server_cpus: CPUs an HTTP server is pinned to under load, the engine on the rest
            (load.cores).
        process_layer: how the server's processes are followed and read (platforms.py):
            "linux" or "portable"; None: ``platforms.default_layer()`` (``layer``).
    """

    runs: int = defaults.RUNS
    warmup: int = defaults.WARMUP
    timeout_s: float = defaults.TIMEOUT_S
    payload_bytes: int = defaults.PAYLOAD_BYTES
    requested_revision: str = defaults.REVISION
    env: dict[str, str] = field(default_factory=dict)
    pause_ms: float = defaults.PAUSE_MS
    order: str | None = None
    seed: int = 0
    cache_state: str = "warm"
    round_trips: int = defaults.ROUND_TRIPS
    warm_sessions: int = defaults.WARM_SESSIONS
    probe_timeout_s: float | None = None
    probe_floor_s: float = defaults.PROBE_FLOOR_S
    fallback_timeout_s: float | None = None
    call: ToolCall | None = None
    workload: Workload | None = None
    mock_api_latency_ms: float = 0.0
    settle: SettleRule = SettleRule()
    waits: Waits = Waits()
    probe_grace_s: float = 0.5
    sampling: Sampling = Sampling()
    collect_garbage: bool = True
    spawner: Callable[[Command], Transport] = field(default=StdioTransport, compare=False,
                                                      repr=False)
    http_spawner: Callable[..., Transport] = field(default=HttpTransport, compare=False,
                                                   repr=False)
    transport: str = "stdio"
    load_s: float = defaults.LOAD_S
    load_users: int = defaults.LOAD_USERS
    load_timeout_s: float = defaults.LOAD_TIMEOUT_S
    load_rate: float = defaults.LOAD_RATE
    load_workers: int = 1
    load_remote_workers: int = 0
    load_master: str | None = None
    http_sessions: int = defaults.HTTP_SESSIONS
    attribution: bool = True
    profiled_starts: int = defaults.PROFILED_STARTS
    memory_limit_bytes: int | None = None
    server_cpus: int = 1
    process_layer: str | None = None

    @property
    def layer(self) -> str:
        """The process layer this run uses (``process_layer`` resolved)."""
        return self.process_layer or platforms.default_layer()

    @classmethod
    def from_options(cls, base: "Settings", options: dict, **more) -> "Settings":
        """``base`` with every field that ``options`` (a command's parsed options) names by its
        field name, and ``more``; other keys of ``options`` are left alone."""
        names = {f.name for f in fields(cls)}
        return replace(base, **{**{k: v for k, v in options.items() if k in names}, **more})

    def record(self, order: str) -> dict:
        """The results file's ``settings`` block (``order`` as resolved for the run)."""
        return {
            "runs": self.runs, "warmup": self.warmup, "timeout_s": self.timeout_s,
            "payload_bytes": self.payload_bytes, "requested_revision": self.requested_revision,
            "order": order, "seed": self.seed, "pause_ms": self.pause_ms,
            "cache_state": self.cache_state, "round_trips": self.round_trips,
            "warm_sessions": self.warm_sessions,
            "probe_timeout_s": self.probe_timeout_s, "probe_floor_s": self.probe_floor_s,
            "fallback_timeout_s": self.fallback_timeout_s,
            "call_tool": self.call.name if self.call else None,
            "call_arguments": self.call.arguments if self.call else None,
            "workload": self.workload.record() if self.workload else None,
            "mock_api_latency_ms": self.mock_api_latency_ms,
            "settle_rule": self.settle.describe(),
            "sample_interval_ms": self.sampling.interval_s * 1000,
            "rescan_interval_ms": self.sampling.rescan_s * 1000,
            "shutdown_grace_s": self.waits.shutdown_grace_s,
            "diagnosis_wait_s": self.waits.diagnosis_s,
            "probe_grace_s": self.probe_grace_s, "collect_garbage": self.collect_garbage,
            "env_keys": sorted(self.env),
            "transport": self.transport, "load_s": self.load_s, "load_users": self.load_users,
            "load_timeout_s": self.load_timeout_s, "load_rate": self.load_rate,
            "load_workers": self.load_workers, "load_remote_workers": self.load_remote_workers,
            "load_master": self.load_master,
            "http_sessions": self.http_sessions, "phase_rule": PHASE_RULE,
            "attribution": self.attribution, "profiled_starts": self.profiled_starts,
            "memory_limit_bytes": self.memory_limit_bytes,
            "server_cpus": self.server_cpus, "process_layer": self.layer,
        }


BASE = Settings()
"""The settings a command starts from; its options replace the fields they name (the CLI's
defaults are these). Tests that are not about the fixed waits give it short ones."""
