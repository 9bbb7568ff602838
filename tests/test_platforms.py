"""Platforms (docs/platforms.md): with the POSIX-only names hidden as Windows lacks them, the
commands that read results work and ``measure`` refuses at once, before any build; the choice
of the process layer."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import unavailable

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
def test_plot_needs_nothing_windows_lacks(tmp_path):
    if importlib.util.find_spec("matplotlib") is None:
        unavailable("matplotlib is not installed (the plot extra)")
    out = tmp_path / "cold.png"
    [(status, _)], stderr = as_on_windows(["plot", str(FIXTURE), "-o", str(out)])
    assert status == 0, stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
