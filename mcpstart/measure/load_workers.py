"""Locust's master and workers for one load scenario (``--load-workers N``, local, on the
engine's CPUs; ``--load-remote-workers M``, each started on another machine by ``mcpstart
load-worker HOST:PORT``): the processes' command lines, each worker's share of the open loop's
schedule, and the merge of the workers' records into one run's.

Locust's own distribution carries everything (docs.locust.io, "Distributed load generation"):
the master forwards its custom arguments to every worker with the spawn message, so mcpstart's
configuration (locust_mcp.py, ``--mcpstart-config``) reaches a worker on any machine; a worker
sends its records to the master as one custom message (``MESSAGE``, ``runner.send_message``)
when its window is over. A custom message, not a file per worker: a remote worker shares no
file system with mcpstart, and Locust's messages are msgpack, whose floats are IEEE 754
doubles, so every time arrives as the worker measured it (exact, unrounded).

Import-light: locust_mcp.py, run by Locust, imports this module too.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

MESSAGE = "mcpstart_records"
"""The custom message a worker sends its records in: ``{index, host, pid, window: {start,
deadline}, records, unfinished, cpu_s, wall_s}`` (locust_mcp.py)."""
ANY_HOST = ("", "0.0.0.0", "::")


@dataclass(frozen=True)
class Master:
    """Where the master listens (``bind_host``, ``port``) and where local workers reach it
    (``host``)."""

    bind_host: str
    port: int
    host: str


def distributed(settings) -> bool:
    """Whether ``settings`` (Settings) run the engine as a master and workers: more than one
    local worker, or any remote one (one local worker alone: one process, as always)."""
    return settings.load_workers > 1 or settings.load_remote_workers > 0


def address(text: str) -> tuple[str, int]:
    """``(host, port)`` of ``HOST:PORT`` (an IPv6 host in brackets: ``[::1]:5557``).

    Raises:
        ValueError: no port, or one outside 1..65535.
    """
    host, colon, port = text.strip().rpartition(":")
    if not colon or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{text!r} is not HOST:PORT")
    return host.strip("[]"), int(port)


def checked(text: str) -> str:
    """``text`` once it is ``HOST:PORT`` (address).

    Raises:
        ValueError: as address.
    """
    address(text)
    return text


def master(bind: str | None) -> Master:
    """The master of one run: at ``bind`` (``HOST:PORT``, ``--load-master``: where remote
    workers reach it), else on a free loopback port."""
    if bind is None:
        from ..transports.http import free_port

        return Master("127.0.0.1", free_port(), "127.0.0.1")
    host, port = address(bind)
    return Master(host, port, "127.0.0.1" if host in ANY_HOST else host)


def master_argv(where: Master, workers: int, wait_s: float) -> list[str]:
    """Locust's options that make a run the master of ``workers`` workers, starting once all
    have connected, at most ``wait_s`` seconds."""
    return ["--master", "--master-bind-host", where.bind_host or "*",
            "--master-bind-port", str(where.port), "--expect-workers", str(workers),
            "--expect-workers-max-wait", str(int(wait_s))]


def worker_argv(locustfile: Path, host: str, port: int) -> list[str]:
    """The command line of one worker of the master at ``host``:``port`` (local or remote:
    the same one; its configuration comes from the master)."""
    return [sys.executable, "-m", "locust", "-f", str(locustfile), "--worker",
            "--master-host", host, "--master-port", str(port), "--loglevel", "ERROR"]


def serve(at: str, once: bool, locustfile: Path, version: str | None) -> int:
    """``mcpstart load-worker HOST:PORT``: a worker of the master at ``at``, with this
    mcpstart's ``locustfile`` (load.LOCUSTFILE; ``version``: Locust's, None where it is not
    installed), again after each run unless ``once`` (every
    scenario of a measure run is a master of its own; a worker waits for the next master, by
    Locust's own retries, up to 5 minutes). Returns the exit status: 0 served, 1 the worker
    failed (its own output says why) or Locust is not installed."""
    if version is None:
        print("mcpstart: Locust is not installed (pip install 'mcpstart[http]')",
              file=sys.stderr)
        return 1
    host, port = address(at)
    while True:
        status = 0 if subprocess.call(worker_argv(locustfile, host, port)) == 0 else 1
        if once:
            return status


def share(worker: int, workers: int, user: int, users: int) -> tuple[int, int]:
    """``(index, stride)`` of user ``user`` of the ``users`` on worker ``worker`` of
    ``workers`` in the open loop's one schedule (arrivals.slots' ``index`` and ``users``):
    slot j goes to worker j mod ``workers`` and, on it, to user (j div ``workers``) mod
    ``users``, so the workers' users together take every slot once, whatever number of users
    each worker got. One worker: ``(user, users)``."""
    return worker + workers * user, workers * users


def merge(data: dict, expected: int) -> dict:
    """The master's output (``{window, workers: [MESSAGE's data], histogram, ...}``) as one
    run's (load.summarize's ``data``): every worker's records and unfinished requests
    together, each worker's times moved onto the master's clock by the difference of the two
    windows' starts (a worker's window starts at the master's spawning_complete message; a
    remote machine's clock may differ from mcpstart's), latencies as measured; and
    ``workers``: per worker ``{index, host, pid, requests, cpu_percent}`` (its own CPU over its
    window, 100 = one core), by index, and ``workers_missing``: how many of the ``expected``
    sent none (then the figures are the others' alone)."""
    start = data["window"]["start"]
    records, unfinished, workers = [], [], []
    for worker in sorted(data["workers"], key=lambda w: w["index"]):
        own = worker["window"]["start"]
        shift = start - own if start is not None and own is not None else 0.0
        records += [[name, at + shift, ms, klass, detail]
                    for name, at, ms, klass, detail in worker["records"]]
        unfinished += [[name, at + shift] for name, at in worker["unfinished"]]
        workers.append({"index": worker["index"], "host": worker["host"], "pid": worker["pid"],
                        "requests": len(worker["records"]) + len(worker["unfinished"]),
                        "cpu_percent": 100 * worker["cpu_s"] / worker["wall_s"]
                        if worker["wall_s"] else None})
    return {**data, "records": records, "unfinished": unfinished, "workers": workers,
            "workers_missing": max(expected - len(workers), 0)}
