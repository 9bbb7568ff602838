"""Locust's master and workers as a run starts them (mcpstart/measure/load_workers.py): two
local workers against the C floor (c-http) merge into one run, every slot of the open loop's
schedule sent once by one of them; and a worker in a second network namespace (a veth pair
between it and this one, loopback up in each), started by ``mcpstart load-worker``, joins
the master across it and is merged."""

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from conftest import unavailable
from mcpstart.endpoint import Endpoint
from mcpstart.measure import load
from mcpstart.measure.settings import Settings
from mcpstart.targets.build import cache_root, ensure_built
from mcpstart.targets.recipes import PORT, load_recipes
from mcpstart.transports.http import free_port
from mcpstart.wire import ToolCall

from test_http import FAKE
from test_http_servers import RECIPES, wait_listening

pytestmark = pytest.mark.e2e
SECONDS, RATE = 3.0, 200.0
NS = f"mcpstart{os.getpid()}"
OUTSIDE, INSIDE = "10.231.7.1", "10.231.7.2"
"""The veth pair's two ends: this namespace's and the second one's (a /30 of a private
range)."""
VETH = (f"mcps{os.getpid() % 100000}a", f"mcps{os.getpid() % 100000}b")


def engine() -> None:
    if load.engine_version() is None:
        unavailable("Locust is not installed (pip install 'mcpstart[http]')")


@pytest.fixture(scope="module")
def c_http(tmp_path_factory):
    """The port of a running c-http (mcpstart's cached build)."""
    engine()
    [recipe] = load_recipes(RECIPES, ["c-http"])
    build = ensure_built(recipe, cache_root())
    if build.status == "skipped":
        unavailable(f"c-http: {build.reason}")
    assert build.ok, f"c-http: {build.reason}\n{build.log_tail}"
    port, command = free_port(), build.command()
    log = tmp_path_factory.mktemp("c-http") / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([a.replace(PORT, str(port)) for a in command.argv],
                                cwd=command.cwd, env=command.environment(), stdout=out,
                                stderr=subprocess.STDOUT)
    try:
        wait_listening(proc, port, log)
        yield port
    finally:
        proc.kill()
        proc.wait()


def test_two_workers_merge_into_one_run_and_each_reports_its_cpu(c_http, capsys):
    """The open loop at 200 requests/s for 3 s on two local workers: 600 calls, each slot of
    the schedule (j / rate s into the master's window) sent once, by one worker or the
    other; the request count is the sum of the workers', every time unrounded; each worker
    used some CPU and at most its one core."""
    settings = Settings(load_s=SECONDS, load_rate=RATE, load_workers=2)
    _server, engine_cpus = load.cores()
    data, samples, _version = load.run_engine(Endpoint("127.0.0.1", c_http), "open", settings,
                                              ToolCall(), [], engine_cpus)
    block = load.summarize(data, samples, RATE)
    workers = data["workers"]
    calls = sorted(r[1] - data["window"]["start"] for r in data["records"]
                   if r[0] == "tools/call")
    with capsys.disabled():
        print(f"\n2 workers, open loop {RATE:g}/s for {SECONDS:g} s: {block['requests']} "
              f"requests ({[w['requests'] for w in workers]} by worker; Locust's master "
              f"counted {data['locust_requests']}), worker CPU "
              f"{[round(w['cpu_percent'], 1) for w in workers]} %, engine "
              f"{block['engine_cpu_percent']:.1f} %")
    assert [w["index"] for w in workers] == [0, 1] and data["workers_missing"] == 0
    assert all(w["requests"] > 0 for w in workers)
    assert block["requests"] == sum(w["requests"] for w in workers) == len(data["records"])
    assert block["errors"]["total"] == 0
    assert calls == pytest.approx([j / RATE for j in range(int(RATE * SECONDS))], abs=1e-3)
    assert all(0 < w["cpu_percent"] <= 110 for w in workers)
    times = [r[2] for r in data["records"]]
    assert sum(t == round(t, 3) for t in times) <= len(times) // 100  # not Locust's whole ms


@pytest.fixture
def namespace():
    """A second network namespace NS joined to this one by a veth pair (OUTSIDE here,
    INSIDE there), loopback up in it; removed afterwards whatever happened."""
    def ip(*argv: str, inside: bool = False) -> subprocess.CompletedProcess:
        return subprocess.run(["ip", *(("netns", "exec", NS, "ip") if inside else ()), *argv],
                              capture_output=True, text=True, timeout=10)

    try:
        made = ip("netns", "add", NS)
    except (OSError, subprocess.TimeoutExpired) as err:
        unavailable(f"no network namespace can be made here: {err}")
    if made.returncode:
        unavailable(f"no network namespace can be made here: ip netns add said "
                    f"{made.stderr.strip()!r}")
    try:
        for argv, inside in ((("link", "add", VETH[0], "type", "veth", "peer", "name", VETH[1]),
                              False),
                             (("link", "set", VETH[1], "netns", NS), False),
                             (("addr", "add", f"{OUTSIDE}/30", "dev", VETH[0]), False),
                             (("link", "set", VETH[0], "up"), False),
                             (("addr", "add", f"{INSIDE}/30", "dev", VETH[1]), True),
                             (("link", "set", VETH[1], "up"), True),
                             (("link", "set", "lo", "up"), True)):
            done = ip(*argv, inside=inside)
            assert done.returncode == 0, f"ip {' '.join(argv)}: {done.stderr}"
        yield NS
    finally:
        ip("link", "del", VETH[0])
        ip("netns", "del", NS)


def test_a_worker_in_a_second_network_namespace_joins_and_is_merged(namespace, tmp_path,
                                                                    capsys):
    """``mcpstart load-worker OUTSIDE:PORT --once`` inside the second namespace and one local
    worker, against a server listening on OUTSIDE: the run completes, both workers sent
    requests, and the one that ran in the second namespace is among the merged."""
    engine()
    port, master = free_port(), f"{OUTSIDE}:{free_port()}"
    server = subprocess.Popen([sys.executable, str(FAKE), "--port", str(port), "--host",
                               OUTSIDE], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              text=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(Path(__file__).parent.parent), os.environ.get("PYTHONPATH", "")])}
    log = open(tmp_path / "worker.log", "wb")
    remote = subprocess.Popen(["ip", "netns", "exec", namespace, sys.executable, "-c",
                               "from mcpstart.cli import main; main()", "load-worker", master,
                               "--once"], stdout=log, stderr=subprocess.STDOUT, env=env)
    inside: set[int] = set()
    watching = threading.Event()

    def watch() -> None:  # the pids in the second namespace while the run lasts
        while not watching.wait(0.2):
            listed = subprocess.run(["ip", "netns", "pids", namespace], capture_output=True,
                                    text=True).stdout
            inside.update(int(pid) for pid in listed.split())

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        assert "running on" in server.stdout.readline()
        settings = Settings(load_s=SECONDS, load_workers=1, load_remote_workers=1,
                            load_master=master)
        data, samples, _version = load.run_engine(Endpoint(OUTSIDE, port), "calls", settings,
                                                  ToolCall(), [], None)
        assert remote.wait(30) == 0, (tmp_path / "worker.log").read_text()[-1500:]
    finally:
        watching.set()
        watcher.join()
        for proc in (remote, server):
            proc.kill()
            proc.wait()
        log.close()
    block = load.summarize(data, samples)
    workers = data["workers"]
    with capsys.disabled():
        print(f"\na worker in a second network namespace: {block['requests']} requests "
              f"({[w['requests'] for w in workers]} by worker, CPU "
              f"{[round(w['cpu_percent'], 1) for w in workers]} %), {block['rps']:.0f}/s")
    assert len(workers) == 2 and all(w["requests"] > 0 for w in workers)
    assert data["workers_missing"] == 0
    assert block["requests"] == sum(w["requests"] for w in workers)
    assert block["errors"]["total"] == 0
    assert sum(w["pid"] in inside for w in workers) == 1
