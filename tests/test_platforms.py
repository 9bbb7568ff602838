"""Platforms (docs/platforms.md): with the POSIX-only names hidden as Windows lacks them, the
commands that read results work and ``measure`` refuses at once, before any build; the choice
of the process layer."""

from __future__ import annotations

import importlib.util
import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from mcpstart import engine, platforms
from mcpstart.command import Command
from mcpstart.measure import mappings, memory, run, usage
from mcpstart.measure.client import Skips
from mcpstart.measure.cold import cold_start
from mcpstart.measure.warm import tool_session
from mcpstart.results import ServerResult
from mcpstart.transports import exits
from mcpstart.transports.session import Exited, Traffic
from mcpstart.wire import initialize_request

from conftest import FAKE, PYTHON_LINE, fast, start, unavailable
from scripted import GoodServer, Spawner

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "v0_2_0" / "reference.json"

AS_ON_WINDOWS = r"""
import subprocess, selectors, shutil, tempfile, socket, threading, asyncio, http.client
import psutil, click  # their Windows versions need none of the names hidden below
import os, select, signal, sys
for name in ("fcntl", "resource", "termios", "tty", "pty", "grp", "pwd"):
    sys.modules[name] = None
for module, names in ((os, ("pidfd_open", "fork", "forkpty", "posix_spawn", "posix_spawnp",
                            "getpgid", "killpg", "setsid", "getsid", "wait3", "wait4", "waitid",
                            "sched_setaffinity", "sched_getaffinity", "posix_fadvise", "getuid",
                            "geteuid", "sysconf", "getloadavg")),
                      (select, ("poll", "epoll")),
                      (signal, ("SIGHUP", "SIGKILL", "SIGPIPE", "SIGXFSZ", "SIGCHLD", "SIGQUIT",
                                "SIGUSR1", "SIGUSR2", "SIGSTOP", "SIGCONT", "SIGALRM"))):
    for name in names:
        if hasattr(module, name):
            delattr(module, name)
# the stdlib's POSIX subprocess stands in for its Windows one, which needs none of these
subprocess._PopenSelector = selectors.SelectSelector
subprocess.Popen.kill = lambda self: self.send_signal(9)
from mcpstart.cli import main
for command in sys.argv[1:]:  # each command in turn, its exit status on a line after it
    try:
        main(command.split("\x1f"), prog_name="mcpstart")
    except SystemExit as stop:
        print(f"\n@@ exit {stop.code or 0}", flush=True)
"""


def as_on_windows(*commands: list[str], cwd: Path = ROOT) -> tuple[list[tuple[int, str]], str]:
    """Each ``mcpstart COMMAND`` of ``commands`` in turn, in one fresh interpreter where the
    names Windows lacks are hidden. Returns ``[(exit status, stdout)]`` and the stderr."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", AS_ON_WINDOWS,
                           *("\x1f".join(c) for c in commands)], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=120)
    assert done.returncode == 0, done.stderr
    outcomes, lines = [], []
    for line in done.stdout.splitlines():
        if line.startswith("@@ exit "):
            outcomes.append((int(line.removeprefix("@@ exit ")), "\n".join(lines)))
            lines = []
        else:
            lines.append(line)
    return outcomes, done.stderr


def test_reading_results_needs_nothing_windows_lacks(tmp_path):
    recipes = tmp_path / "recipes"
    recipes.mkdir()
    cache = tmp_path / "cache"
    (helped, report, compared, doctor, refused), stderr = as_on_windows(
        ["--help"], ["report", str(FIXTURE)], ["compare", str(FIXTURE), str(FIXTURE)],
        ["doctor", "--recipes", str(recipes), "--format", "json"],
        ["measure", "--cache-dir", str(cache)], cwd=tmp_path)
    assert helped[0] == 0 and "compare" in helped[1]
    assert report[0] == 0 and report[1].startswith("| metric") and "typescript" in report[1]
    assert compared[0] == 0 and "No regression." in compared[1]
    assert doctor[0] == 1
    checks = {c["name"]: c for c in json.loads(doctor[1])["checks"]}
    assert checks["platform"]["status"] == "missing" and checks["platform"]["needed"]
    assert "os.posix_spawn or select.poll" in checks["platform"]["found"]
    assert "pidfd + poll" not in checks  # no Linux probe where nothing can start
    assert checks["load average"]["status"] == "missing"
    # measure refuses at once, naming the platform, before any build or file
    assert refused[0] == 2
    assert f"cannot start servers on {sys.platform}: it has no os.posix_spawn or select.poll" \
        in stderr
    assert "Traceback" not in stderr
    assert not cache.exists() and not list(tmp_path.glob("mcpstart-results*"))


@pytest.mark.e2e
@pytest.mark.untimed  # a file drawn, not a timing
def test_plot_needs_nothing_windows_lacks(tmp_path):
    if importlib.util.find_spec("matplotlib") is None:
        unavailable("matplotlib is not installed (the plot extra)")
    out = tmp_path / "cold.png"
    [(status, _)], stderr = as_on_windows(["plot", str(FIXTURE), "-o", str(out)])
    assert status == 0, stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ---- the portable process layer on Linux (platforms.py, transports/exits.py) -------------

@pytest.fixture
def portable(monkeypatch):
    """The portable layer in use, with os.pidfd_open gone: a pidfd anywhere would raise."""
    monkeypatch.delattr(os, "pidfd_open")
    assert platforms.default_layer() == "portable"
    with platforms.using("portable"):
        yield


def test_the_layer_is_linux_where_pidfds_exist_and_said_otherwise(monkeypatch):
    assert platforms.default_layer() == ("linux" if hasattr(os, "pidfd_open") else "portable")
    assert fast().record("interleave")["process_layer"] == platforms.default_layer()
    assert fast(process_layer="portable").record("interleave")["process_layer"] == "portable"
    said = []
    monkeypatch.delattr(os, "pidfd_open", raising=False)
    engine._check_layer(fast(), said.append)
    assert said == ["no pidfds here (os.pidfd_open): measuring through the portable process "
                    "layer; PSS, the exact peak, the start's CPU and waits and CPU pinning are "
                    "not measured (docs/platforms.md)"]
    engine._check_layer(fast(process_layer="portable"), said.append)  # asked for: not said
    assert len(said) == 1
    with pytest.raises(engine.JobError, match="needs os.pidfd_open"):
        engine._check_layer(fast(process_layer="linux"), said.append)
    with pytest.raises(engine.JobError, match="--cache-state cold needs posix_fadvise"):
        engine._check_layer(fast(cache_state="cold"), said.append)


def run_measure(scripts: dict, **settings):
    servers = [run.Server(ServerResult(name), Command([name])) for name in scripts]
    return run.measure(servers, fast(spawner=Spawner(scripts), payload_bytes=1000, **settings),
                       ["mcpstart", "measure"], {}), None, None


def test_a_portable_run_marks_what_it_cannot_measure(portable):
    results, _, _ = run_measure({"a": GoodServer}, runs=2, warmup=0, round_trips=0,
                                process_layer="portable")
    row = results.servers[0]
    assert row.status == "ok" and results.settings["process_layer"] == "portable"
    assert {k: row.not_measured[k] for k in platforms.NOT_MEASURED if not k.startswith("http.")} \
        == {k: v for k, v in platforms.NOT_MEASURED.items() if not k.startswith("http.")}
    assert "http.load.pinned_cpus" not in row.not_measured  # a stdio row has no load


def test_portable_exit_at_once_reports_code_and_stderr(portable, fake):
    with pytest.raises(Exited) as err:
        cold_start(fake("--need-env", "FOO_API_KEY"), fast(timeout_s=60), Skips())
    assert str(err.value).startswith("initialize: the server exited with code 1 after ")
    assert "Error: FOO_API_KEY not set" in str(err.value)


def test_portable_tree_is_reclaimed_and_every_exit_seen(portable):
    inner = f"{PYTHON_LINE} {FAKE} --trap-term --ignore-eof"
    session = start(Command(["sh", "-c", inner]), initialize_request("2025-11-25"))
    try:
        session.wait(1, 10)
        pids = [p.pid for p in session.processes.scan()]
    finally:
        shutdown = session.shutdown()
    assert len(pids) == 2 and shutdown.how == "sigkill"
    assert sorted(e["pid"] for e in shutdown.exited) == sorted(pids)
    for pid in pids:  # the shell reaped by mcpstart, the server by init (a zombie until then)
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_portable_sees_a_grandchild_killed_first(portable):
    """sh -> fake server -> its sleeping child: the grandchild, not mcpstart's child, is
    killed first; its exit is seen (by polling, pid and start time) while the rest runs."""
    session = start(Command(["sh", "-c", f"{PYTHON_LINE} {FAKE} --child"]),
                    initialize_request("2025-11-25"))
    try:
        session.wait(1, 10)
        processes = session.processes
        deadline = time.monotonic() + 10
        while len(processes.scan()) < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        shell, server, grandchild = [p.pid for p in processes.scan()]
        os.kill(grandchild, signal.SIGKILL)
        assert processes._collect_exits(5) is not None
        assert list(processes.exited) == [grandchild]
        assert processes.exited[grandchild]["exit_code"] is None  # its parent reaps it
        assert {p.pid for p in processes.alive()} == {shell, server}
    finally:
        shutdown = session.shutdown()
    assert {e["pid"] for e in shutdown.exited} == {shell, server, grandchild}
    assert shutdown.exit_code is not None  # the shell, mcpstart's child, reaped with its code


def test_portable_tree_memory_has_rss_and_uss_but_no_pss(portable, monkeypatch):
    def no_proc(path, *args, **kw):  # mcpstart's own reads; psutil's are its own
        assert not str(path).startswith("/proc/"), f"{path} read under the portable layer"
        return open(path, *args, **kw)

    for module in (memory, mappings, usage):
        monkeypatch.setattr(module, "open", no_proc, raising=False)
    row, traffic = ServerResult("fake"), Traffic()
    tool_session(Command(["sh", "-c", f"{PYTHON_LINE} {FAKE} --child"]),
                 fast(timeout_s=10, payload_bytes=200_000, round_trips=3,
                      process_layer="portable"), row, Skips(), traffic)
    block = row.memory
    assert len(block["processes"]) == 3
    assert block["idle_rss_bytes"] == sum(p["idle_rss_bytes"] for p in block["processes"])
    assert 0 < block["idle_uss_bytes"] < block["idle_rss_bytes"]
    assert block["idle_pss_bytes"] is None and block["idle_split"] is None
    assert block["peak_method"] == "sampled" and block["peak_rss_bytes_hwm_sum"] is None
    assert block["peak_rss_bytes_payload"] == block["peak_rss_bytes_sampled"] > 0


def test_portable_descriptors_of_one_process_are_one_pipe(portable):
    """Two watchers of one process (its transport, its process set) get the same pipe, so
    both see its exit at the same moment, as two pidfds would."""
    child = subprocess.Popen(["sleep", "30"])
    first, second = exits.exit_fd(child.pid), exits.exit_fd(child.pid)
    try:
        assert os.fstat(first).st_ino == os.fstat(second).st_ino
        assert not select.select([first, second], [], [], 0)[0]
        child.kill()
        assert select.select([first], [], [], 5)[0] == [first]
        assert select.select([second], [], [], 0)[0] == [second]
    finally:
        child.kill()
        child.wait()
        os.close(first)
        os.close(second)


@pytest.mark.e2e
@pytest.mark.untimed  # which figures the portable layer gives, not how fast
def test_without_pidfds_the_floor_and_go_are_measured_through_the_portable_layer(
        tmp_path, monkeypatch):
    """As on macOS: no os.pidfd_open, no --process-layer: the portable layer, said once;
    every row ok, each Linux-only figure marked not measured with the reason."""
    from click.testing import CliRunner

    from mcpstart.cli import main

    monkeypatch.delattr(os, "pidfd_open")
    out = tmp_path / "portable.json"
    done = CliRunner().invoke(main, ["measure", "--only", "c", "--only", "go", "--runs", "3",
                                     "--warmup", "1", "--round-trips", "5", "-o", str(out)])
    assert done.exit_code == 0, done.output
    assert done.stderr.count("measuring through the portable process layer") == 1
    results = json.loads(out.read_text())
    assert results["settings"]["process_layer"] == "portable"
    rows = {row["name"]: row for row in results["servers"]}
    assert set(rows) == {"c", "go"}
    for row in rows.values():
        assert row["status"] == "ok", row["reason"]
        assert row["handshake_ms"]["n"] == 3 and row["handshake_ms"]["median"] > 0
        for key, why in platforms.NOT_MEASURED.items():
            if not key.startswith("http."):
                assert row["not_measured"][key] == why
        memory = row["memory"]
        assert memory["idle_rss_bytes"] > 0 and memory["idle_uss_bytes"] > 0
        assert memory["idle_pss_bytes"] is None and memory["peak_method"] == "sampled"
        assert memory["peak_rss_bytes_payload"] >= memory["idle_rss_bytes"]
        assert row["start_usage"] is None
        assert row["shutdown"]["how"] == "eof" and row["orphans"] == []


def test_doctor_without_pidfds_names_the_portable_layer_and_needs_no_linux_probe(monkeypatch):
    from mcpstart import doctor

    monkeypatch.delattr(os, "pidfd_open")
    layer = doctor.check_layer()
    assert (layer.name, layer.status, layer.needed) == ("process layer", "missing", False)
    assert "psutil" in layer.meaning and platforms.NOT_MEASURED["start_usage"] in layer.meaning
    sentence, status = doctor.verdict([layer])
    assert status == 0 and sentence.startswith("ready, with less: process layer")
