"""Container-like memory limits (measure/limits.py): mcpstart's own cgroups read from
/proc/self files written here, the shell that enters a cgroup and execs the server in its place
(same pid), the row naming the limit after the OOM killer struck; and, end to end on this
machine's memory cgroup, a server allocating past its limit."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcpstart.cli import main
from mcpstart.command import Command
from mcpstart.measure import limits
from mcpstart.results import ServerResult

from conftest import FAKE, unavailable

MOUNTINFO = """\
25 30 0:22 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755
26 25 0:23 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
33 25 0:30 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
34 25 0:31 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
"""
CGROUP = "8:pids:/\n4:memory:/jobs/job7\n0::/user.slice/session-3.scope\n"


def test_own_cgroups_come_from_the_mounts_and_the_process_paths(tmp_path):
    (tmp_path / "mountinfo").write_text(MOUNTINFO)
    (tmp_path / "cgroup").write_text(CGROUP)
    assert limits.own_cgroups(tmp_path) == (
        Path("/sys/fs/cgroup/unified/user.slice/session-3.scope"),
        Path("/sys/fs/cgroup/memory/jobs/job7"))
    (tmp_path / "cgroup").write_text("0::/\n")
    assert limits.own_cgroups(tmp_path) == (Path("/sys/fs/cgroup/unified"), None)


def test_the_server_enters_its_cgroup_as_the_same_process(tmp_path):
    procs = tmp_path / "cgroup.procs"  # a plain file stands in for the cgroup's
    limit = limits.MemoryLimit(tmp_path, 1, 2**20)
    wrapped = limit.wrap(Command([sys.executable, "-S", "-c", "import os; print(os.getpid())"],
                                 env={"X": "1"}))
    assert wrapped.env == {"X": "1"} and wrapped.argv[:2] == ["/bin/sh", "-c"]
    done = subprocess.run(wrapped.argv, capture_output=True, text=True, check=True)
    assert procs.read_text().strip() == done.stdout.strip()


class _Server:
    def __init__(self, folder: Path, kills: int, status: str = "ok"):
        (folder / "memory.oom_control").write_text(f"oom_kill_disable 0\nunder_oom 0\n"
                                                   f"oom_kill {kills}\n")
        (folder / "memory.max_usage_in_bytes").write_text("5000\n")
        self.memory_limit = limits.MemoryLimit(folder, 1, 100 * 2**20)
        self.row = ServerResult(name="s")
        if status == "failed":
            self.row.fail("tools/call reverse_text: the server was killed by signal 9")


def test_a_row_failed_by_the_oom_killer_names_the_limit(tmp_path):
    failed = _Server(tmp_path, kills=1, status="failed")
    limits.judge(failed)
    assert failed.row.reason.startswith("the kernel's OOM killer ended 1 process(es) of the "
                                        "server at its memory limit of 100 MiB (--memory-limit")
    assert failed.row.reason.endswith(": tools/call reverse_text: the server was killed by "
                                      "signal 9")
    assert failed.row.memory_limit == {"bytes": 100 * 2**20, "cgroup": str(tmp_path),
                                       "cgroup_version": 1, "oom_kills": 1, "peak_bytes": 5000}


def test_a_standing_row_gets_a_warning_and_no_kill_changes_nothing(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    standing, calm = _Server(tmp_path / "a", kills=2), _Server(tmp_path / "b", kills=0)
    limits.judge(standing)
    limits.judge(calm)
    assert standing.row.status == "ok"
    assert [w["kind"] for w in standing.row.warnings] == ["memory"]
    assert "ended 2 process(es)" in standing.row.warnings[0]["detail"]
    assert calm.row.warnings == [] and calm.row.memory_limit["oom_kills"] == 0


def test_no_cgroup_is_a_reason_on_the_row(monkeypatch):
    monkeypatch.setattr(limits, "own_cgroups", lambda: (None, None))
    with pytest.raises(limits.LimitError, match="mcpstart is in no memory cgroup"):
        limits.make("x", 2**20)
    server = _Bare()
    limits.attach([server], 2**20, "t")
    assert server.memory_limit is None
    assert server.row.not_measured["memory_limit"] == (
        "no memory limit set: no memory cgroup could be made (mcpstart is in no memory cgroup)")


class _Bare:
    def __init__(self):
        self.command, self.memory_limit, self.row = Command(["x"]), None, ServerResult("s")


@pytest.mark.e2e
@pytest.mark.untimed  # a kill by the cgroup, not a timing
def test_a_server_past_its_memory_limit_is_a_row_naming_it(tmp_path):
    try:
        limits.make("mcpstart-probe", 2**20).remove()
    except limits.LimitError as err:
        unavailable(f"no memory cgroup here: {err}")
    out = tmp_path / "r.json"
    result = CliRunner().invoke(main, [
        "measure", "--runs", "1", "--warmup", "0", "--round-trips", "0", "--memory-limit",
        "100", "-o", str(out), "--name", "alloc", "--", sys.executable, "-S", str(FAKE),
        "--alloc-mib", "300"])
    row = json.loads(out.read_text())["servers"][0]
    assert result.exit_code == 1
    assert row["status"] == "failed" and "at its memory limit of 100 MiB" in row["reason"]
    assert row["memory_limit"]["oom_kills"] >= 1 and row["memory_limit"]["bytes"] == 100 * 2**20
    assert row["handshake_ms"]["n"] == 1  # its start was measured before the call
    assert not Path(row["memory_limit"]["cgroup"]).exists()


def test_the_server_gets_its_cpus_and_the_engine_the_rest(monkeypatch):
    from mcpstart.measure import load
    monkeypatch.setattr(load.os, "sched_getaffinity", lambda _pid: {0, 1, 2, 3})
    assert load.cores() == (frozenset({0}), frozenset({1, 2, 3}))
    assert load.cores(3) == (frozenset({0, 1, 2}), frozenset({3}))
    assert load.cores(4) == (None, None)  # the engine would get none: nothing pinned
