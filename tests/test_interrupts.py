"""mcpstart as a real process: exit signals and build steps leave nothing running."""

import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from test_cli import repo

SLEEP = ["python3", "-c", "import time, sys; time.sleep(100)"]


def survivors(tmp_path: Path) -> list[str]:
    """Live processes whose command line mentions the test's folder."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if str(tmp_path) in cmdline and proc.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(cmdline)
    return found


FAST_CLI = ("import sys; sys.path.insert(0, sys.argv.pop(1)); import conftest; "
            "import mcpstart.measure.settings as s; s.BASE = conftest.FAST; "
            "from mcpstart.cli import main; main()")
"""mcpstart's CLI as its own process, with the tests' short fixed waits (conftest.FAST)."""


def start(tmp_path: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", FAST_CLI, str(Path(__file__).parent), "measure", "--recipes",
         str(tmp_path / "build-recipes"), "--cache-dir", str(tmp_path / "cache"), "--runs", "1",
         "--warmup", "0", "-o", str(tmp_path / "out.json"), *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _read_until(proc: subprocess.Popen, text: str, lines: list[str]) -> bool:
    """Read the process's stderr line by line until one holds ``text``."""
    line = proc.stderr.readline()
    lines.append(line)
    return text in line


def wait_for(predicate, timeout_s: float = 300) -> None:
    """Poll ``predicate`` until it holds; its bound only stops a hang (far longer than any
    load makes a step take)."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.1)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_exit_signal_during_measurement_reclaims_the_server(tmp_path, sig):
    repo(tmp_path, {"hangs": ["--slow-start", "100", "--trap-term"]})
    proc = start(tmp_path, "--timeout", "60")
    wait_for(lambda: any("fake_server.py" in c for c in survivors(tmp_path)))
    proc.send_signal(sig)
    proc.communicate(timeout=300)
    assert proc.returncode == 128 + sig
    assert survivors(tmp_path) == []


def test_second_signal_during_shutdown_still_reclaims(tmp_path):
    repo(tmp_path, {"hangs": ["--slow-start", "100", "--trap-term"]})
    proc = start(tmp_path, "--timeout", "60")
    wait_for(lambda: any("fake_server.py" in c for c in survivors(tmp_path)))
    proc.send_signal(signal.SIGINT)
    time.sleep(0.2)  # the server ignores EOF and SIGTERM: shutdown takes two graces
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=300)
    assert proc.returncode == 130
    assert survivors(tmp_path) == []


def test_signal_during_a_build_step_kills_the_step(tmp_path):
    repo(tmp_path, {"good": []}, steps=[[*SLEEP, "{build}"]])
    proc = start(tmp_path)
    wait_for(lambda: any("time.sleep(100)" in c for c in survivors(tmp_path)))
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=300)
    assert proc.returncode == 143
    assert survivors(tmp_path) == []


def test_background_process_left_by_a_build_step_is_killed(tmp_path):
    spawner = ("import subprocess, sys; subprocess.Popen([sys.executable, '-c', "
               "'import time; time.sleep(100)', sys.argv[1]])")
    repo(tmp_path, {"good": []}, steps=[["python3", "-c", spawner, "{build}"]])
    proc = subprocess.Popen(  # the build alone: what a measure adds after it is not the subject
        [sys.executable, "-c", FAST_CLI, str(Path(__file__).parent), "build", "--recipes",
         str(tmp_path / "build-recipes"), "--cache-dir", str(tmp_path / "cache")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    assert (tmp_path / "cache").is_dir()  # the build ran (its step spawned the background one)
    assert survivors(tmp_path) == []



def test_a_signal_keeps_what_was_measured_and_says_so(tmp_path):
    """Stopped during the tool session (after the cold starts and the revision matrix):
    the results file holds the series and the matrix, and says the run was stopped."""
    import json

    repo(tmp_path, {"good": ["--alloc-mib", "1"]})
    proc = start(tmp_path, "--runs", "2", "--round-trips", "0")
    stderr = []
    wait_for(lambda: _read_until(proc, "idle memory", stderr))
    proc.send_signal(signal.SIGINT)
    table, _ = proc.communicate(timeout=300)
    assert proc.returncode == 130
    assert "| status " in table and "interrupted" in table  # the table of what was measured
    data = json.loads((tmp_path / "out.json").read_text())
    row = data["servers"][0]
    assert data["interrupted"] == "stopped by SIGINT; the rows hold what was measured before it"
    assert row["status"] == "interrupted"
    assert row["reason"].startswith("cut short by SIGINT after 2 of 2 cold starts; ")
    assert row["handshake_ms"]["n"] == 2
    assert len(row["protocol"]["matrix"]) == 7 and row["protocol"]["era"] == "legacy"
    assert survivors(tmp_path) == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_before_the_first_answer_ends_the_wait_at_once(tmp_path, sig):
    """A server that writes nothing: the signal ends the first cold start's wait for its
    initialize answer at once (not at --timeout), and the file and message say where."""
    import json

    proc = subprocess.Popen(
        [sys.executable, "-c", FAST_CLI, str(Path(__file__).parent), "measure", "--runs", "2",
         "--warmup", "0", "--timeout", "60", "-o", str(tmp_path / "out.json"), "--",
         *SLEEP, str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: any("time.sleep(100)" in c and "mcpstart" not in c  # the server's
                         for c in survivors(tmp_path)))
    proc.send_signal(sig)
    try:
        _, stderr = proc.communicate(timeout=20)  # well under the 60 s timeout
    finally:
        proc.kill()
    where = (f"stopped by {sig.name} during the first cold start of python3, before its "
             "initialize answer")
    assert proc.returncode == 128 + sig, stderr
    assert f"{where}; the rows hold what was measured before it" in stderr
    data = json.loads((tmp_path / "out.json").read_text())
    assert data["interrupted"].startswith(where)
    assert data["servers"][0]["status"] == "interrupted"
    assert data["servers"][0]["reason"].startswith(f"cut short by {sig.name} after 0 of 2 ")
    assert survivors(tmp_path) == []
