"""Launcher overhead (launcher.py) on real processes: a launcher chain whose overhead is known
by construction (``sh -c`` sleeping 0.3 s before the Python server, with and without exec),
and a fake npx that goes to "the network" (sleeps) unless npm's offline variable is set."""

import os
import sys

import pytest

from mcpstart.command import Command
from mcpstart.measure import launcher, run
from mcpstart.results import ServerResult

from conftest import FAKE, PYTHON, PYTHON_LINE, fast

SLEEP_S = 0.3
MIB = 1 << 20
NPX = f"""#!{sys.executable}
import os, subprocess, sys, time
if os.environ.get("npm_config_offline") != "true":
    time.sleep({SLEEP_S})  # asks the registry on every start
sys.exit(subprocess.call([*{PYTHON!r}, {str(FAKE)!r}]))
"""


def measure(argv: list[str], runs: int, cwd: str | None = None):
    server = run.Server(ServerResult("launched"), Command(argv, cwd))
    results = run.measure([server], fast(runs=runs, warmup=0, round_trips=0,
                                         payload_bytes=1000, probe_timeout_s=2.0,
                                         attribution=False),
                          ["mcpstart", "measure"], {})
    return results.servers[0], results


@pytest.mark.e2e  # a real timing: a real shell chain's cost, read from live starts
@pytest.mark.parametrize("exec_", [False, True], ids=["child", "exec"])
def test_a_shell_chain_costs_what_it_was_built_to_cost(exec_, tmp_path):
    script = f"sleep {SLEEP_S}; {'exec ' if exec_ else ''}{PYTHON_LINE} {FAKE}"
    row, results = measure(["sh", "-c", script], runs=5, cwd=str(tmp_path))
    assert row.status == "ok", row.reason
    block = row.launcher
    assert block["kind"] == "sh -c" and block["reason"] is None
    assert block["argv"] == [*PYTHON, str(FAKE)] and block["cwd"] == str(tmp_path)
    assert block["direct_ms"]["n"] == block["overhead_ms"]["n"] == 5
    # the sleep, plus a shell and a sleep process: near the construction (a loaded machine
    # slows either series of a round, so the median difference may fall a little short)
    assert SLEEP_S * 1000 - 100 <= block["overhead_ms"]["median"] <= SLEEP_S * 1000 + 200
    assert block["overhead_ms"]["samples"] == pytest.approx(
        [a - b for a, b in zip(block["launched_ms"]["samples"], block["direct_ms"]["samples"])])
    assert block["offline_env"] is None and block["network_each_start"] is None
    series = [r["series"] for r in results.run_sequence if r["round"] == 0]
    assert "handshake" in series and "direct" in series
    if exec_:  # the shell became the server: one process, nothing on top
        assert len(row.memory["processes"]) == 1
        assert block["overhead_bytes"] == 0 and block["overhead_rss_bytes"] == 0
    else:  # the shell stays as the server's parent: its own few MiB
        shell = next(p for p in row.memory["processes"] if p["label"].startswith("sh"))
        assert block["overhead_rss_bytes"] == shell["idle_rss_bytes"]
        assert 0 < block["overhead_bytes"] <= block["overhead_rss_bytes"] < 5 * MIB


@pytest.mark.e2e  # a real timing: a statistical verdict on live starts
def test_a_launcher_that_asks_the_network_on_every_start_is_found(tmp_path):
    npx = tmp_path / "npx"
    npx.write_text(NPX)
    npx.chmod(0o755)
    row, results = measure([str(npx), "-y", "fake-server"], runs=5)
    assert row.status == "ok", row.reason
    block = row.launcher
    assert block["kind"] == "npx" and block["argv"] == [*PYTHON, str(FAKE)]
    assert block["offline_env"] == ["npm_config_offline"]
    assert block["offline_ms"]["n"] == block["network_ms"]["n"] == 5
    assert SLEEP_S * 1000 - 100 <= block["network_ms"]["median"] <= SLEEP_S * 1000 + 200
    assert block["network_verdict"] == "regression" and block["network_p"] <= 0.01
    assert block["network_each_start"] is True
    warning = next(w for w in row.warnings if w["kind"] == "launcher")
    assert "went to the network on every start" in warning["detail"]
    assert {r["series"] for r in results.run_sequence} >= {"handshake", "direct", "offline"}


def test_a_launcher_whose_server_cannot_be_read_says_so(monkeypatch):
    monkeypatch.setattr(launcher, "holds_write_end", lambda pid, inode: False)
    row, _ = measure(["sh", "-c", f"{PYTHON_LINE} {FAKE}"], runs=1)
    assert row.launcher["argv"] is None and "holds the server's stdout" in row.launcher["reason"]
    assert "cannot be resolved" in row.not_measured["launcher.overhead_ms"]
    assert os.path.basename(row.command["argv"][0]) == "sh"


@pytest.mark.parametrize("cmdline, kind", [
    (["npm exec @modelcontextprotocol/server-memory@2026.8.31", "", "", ""], "npm exec"),
    (["/usr/local/bin/uv", "tool", "uvx", "mcp-server-time==2026.10.19"], "uv tool uvx"),
    (["node", "/usr/bin/npx", "-y", "pkg"], "npx"),
    (["sh", "-c", "'mcp-server-memory'"], "sh -c"),
    (["node", "/root/.npm/_npx/c98c/node_modules/.bin/mcp-server-memory"], None),
    (["/root/.cache/uv/archive-v0/R/bin/python", "/root/.cache/uv/archive-v0/R/bin/x"], None),
])
def test_the_launchers_as_their_processes_show_them(cmdline, kind):
    """What npx and uvx look like in /proc once running (seen on npm 10 and uv 0.13)."""
    from mcpstart.targets.cmdline import launcher_of

    assert launcher_of(cmdline) == kind
