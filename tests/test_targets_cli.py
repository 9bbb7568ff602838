"""Servers named on the command line and in editor configs, measured through the CLI: every
client's config, the startup budget, and secrets that must never leave. Tests of what is
measured and how it is reported run the configs' servers as scripted servers on a virtual
clock (tests/scripted.py); those about a real process (its environment, a program that
cannot start, one that echoes) run it."""

import json
import sys
import tomllib

import pytest
from click.testing import CliRunner

from mcpstart.cli import main

from conftest import FAKE, fast
from scripted import Fake, Out, Spawner, Timed
import scripted as scripted_transport

PY = sys.executable
QUICK = ["--runs", "1", "--warmup", "0", "--round-trips", "2", "--timeout", "10",
         "--payload-bytes", "100000", "--probe-timeout", "2"]


class SlowStart(Timed, Fake):
    """fake_server.py --slow-start 0.3: initialize answered 0.3 s (virtual) after it."""

    def __init__(self):
        super().__init__(0.3)

    def fresh(self):
        return SlowStart()


class ExitsWith2(Fake):
    """python3 -c "import sys; sys.exit(2)": exits with code 2, 20 ms (virtual) on."""

    def answer(self, message):
        return [Out("exit", code=2, after_s=0.02)]


SCRIPTS = {(): Fake, ("--slow-start", "0.3"): SlowStart,
           ("-c", "import sys; sys.exit(2)"): ExitsWith2}
"""The scripted counterpart of each command the configs below name, by its arguments after
the interpreter (and fake_server.py)."""


@pytest.fixture
def scripted(monkeypatch):
    """Commands measure the configs' servers as scripted ones; servers started at once wait
    on their virtual clocks."""
    spawner = Spawner(SCRIPTS, key=lambda c: tuple(a for a in c.argv[1:] if a != str(FAKE)))
    monkeypatch.setattr("mcpstart.measure.settings.BASE", fast(spawner=spawner))
    monkeypatch.setattr("mcpstart.transports.session.poll_many", scripted_transport.poll_many)
    yield spawner
    assert spawner.made, "no server was spawned through the scripted spawner"


def measure(tmp_path, *args):
    out = tmp_path / "out.json"
    result = CliRunner().invoke(main, ["measure", *QUICK, "-o", str(out), *args])
    return result, (json.loads(out.read_text()) if out.exists() else None)


def entry(name: str, *switches: str) -> dict:
    return {"command": PY, "args": [str(FAKE), *switches]}


def write_json(path, data) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("// written by the test\n" + json.dumps(data, indent=1))
    return str(path)


def client_configs(tmp_path) -> dict[str, tuple[str, set[str], set[str]]]:
    """client -> (config path, names to measure, names to skip), each with a remote entry,
    an unresolvable placeholder and a disabled entry where the client has them."""
    remote = {"url": "https://example.com/mcp"}
    configs = {}
    for client, path in (("claude-desktop", "claude_desktop_config.json"),
                         ("claude-code", "cc/.mcp.json"), ("cursor", "cu/.cursor/mcp.json")):
        servers = {f"{client}-a": entry("a"), f"{client}-remote": remote}
        skip = {f"{client}-remote"}
        if client != "claude-desktop":
            servers[f"{client}-needs"] = {"command": PY, "args": ["${NO_SUCH_VAR_MCPSTART}"]}
            skip.add(f"{client}-needs")
        configs[client] = (write_json(tmp_path / path, {"mcpServers": servers}),
                           {f"{client}-a"}, skip)
    configs["vscode"] = (write_json(tmp_path / "vs/.vscode/mcp.json", {
        "inputs": [{"type": "promptString", "id": "tok", "description": "a token"}],
        "servers": {"vscode-a": {"type": "stdio", **entry("a")},
                    "vscode-remote": {"type": "http", "url": "https://example.com/mcp"},
                    "vscode-input": {**entry("a"), "env": {"TOKEN": "${input:tok}"}}}}),
        {"vscode-a"}, {"vscode-remote", "vscode-input"})
    configs["windsurf"] = (write_json(tmp_path / "ws/.codeium/windsurf/mcp_config.json", {
        "mcpServers": {"windsurf-a": entry("a"), "windsurf-off": {**entry("a"), "disabled": True},
                       "windsurf-remote": {"serverUrl": "https://example.com/mcp"}}}),
        {"windsurf-a"}, {"windsurf-off", "windsurf-remote"})
    configs["zed"] = (write_json(tmp_path / "zed/settings.json", {"context_servers": {
        "zed-new": {"command": PY, "args": [str(FAKE)]},
        "zed-old": {"command": {"path": PY, "args": [str(FAKE)], "env": {}}},
        "zed-ext": {"source": "extension", "settings": {}},
        "zed-off": {"command": PY, "args": [str(FAKE)], "enabled": False}}}),
        {"zed-new", "zed-old"}, {"zed-ext", "zed-off"})
    codex = tmp_path / "codex" / "config.toml"
    codex.parent.mkdir()
    codex.write_text(f'[mcp_servers.codex-a]\ncommand = "{PY}"\nargs = ["{FAKE}"]\n'
                     'startup_timeout_sec = 7\n'
                     '[mcp_servers.codex-remote]\nurl = "https://example.com/mcp"\n'
                     f'[mcp_servers.codex-off]\ncommand = "{PY}"\nenabled = false\n')
    configs["codex"] = (str(codex), {"codex-a"}, {"codex-remote", "codex-off"})
    return configs


@pytest.mark.parametrize("client", ["claude-desktop", "claude-code", "cursor", "vscode",
                                    "windsurf", "zed", "codex"])
def test_each_client_config_measures_its_stdio_servers_and_skips_the_rest(scripted, tmp_path,
                                                                          client):
    path, measured, skipped = client_configs(tmp_path)[client]
    result, data = measure(tmp_path, "--config", path, "--budget", "10")
    rows = {s["name"]: s for s in data["servers"]}
    assert set(rows) == measured | skipped, result.output
    for name in measured:
        assert rows[name]["status"] == "ok", rows[name]["reason"]
        assert rows[name]["handshake_ms"]["n"] == 1 and rows[name]["payload"]["verified"]
        assert rows[name]["not_measured"]["footprint"].startswith("no recipe")
    for name in skipped:
        assert rows[name]["status"] == "skipped" and rows[name]["reason"], rows[name]
    assert result.exit_code == 0, result.output


def test_startup_budget_runs_all_at_once_and_honours_a_config_limit(scripted, tmp_path):
    config = tmp_path / "config.toml"
    config.write_text(f'[mcp_servers.quick]\ncommand = "{PY}"\nargs = ["{FAKE}"]\n'
                      f'[mcp_servers.slow]\ncommand = "{PY}"\n'
                      f'args = ["{FAKE}", "--slow-start", "0.3"]\nstartup_timeout_sec = 0.25\n')
    result, data = measure(tmp_path, "--config", str(config), "--runs", "2")
    assert result.exit_code == 0, result.output
    startup = data["startup"]
    assert startup["concurrent_ms"]["n"] == 2 and len(startup["runs"]) == 2
    for run in startup["runs"]:
        assert set(run) == {"quick", "slow"}
        assert run["quick"]["initialize"] < 250 <= 300 <= run["slow"]["initialize"]  # virtual
        assert run["slow"]["initialize"] < run["slow"]["tools_list"]
    # the last server ready is the slow one: the all-at-once time is its time
    assert startup["concurrent_ms"]["samples"] == [r["slow"]["tools_list"] for r in startup["runs"]]
    medians = [s["phases_ms"]["tools_list"]["median"] for s in data["servers"]]
    assert startup["sequential_sum_ms"] == pytest.approx(sum(medians))
    limits = {row["limit_s"]: row for row in startup["limits"]}
    assert set(limits) == {3.0, 10.0, 30.0, 60.0, 0.25}
    assert limits[10.0]["fits"] == {"quick": True} and limits[60.0]["fits"] == {"quick": True}
    assert limits[0.25] == {"client": "set in the config", "limit_s": 0.25, "fits": {"slow": False}}
    assert "Startup budget" in result.stdout


def test_secrets_never_leave(tmp_path):
    config = write_json(tmp_path / ".mcp.json", {"mcpServers": {
        "leaky": {"command": PY, "args": [str(FAKE), "--print-env", "--revision", "${MY_TOKEN}"],
                  "env": {"API_KEY": "config-secret-9137"}}}})
    out = tmp_path / "out.json"
    result = CliRunner(env={"MY_TOKEN": "from-the-env-5521"}).invoke(main, [
        "measure", *QUICK, "-o", str(out), "--config", config,
        "--env", "EXTRA=cli-secret-4410"])
    assert result.exit_code == 1
    text = result.stdout + result.stderr + out.read_text() + out.with_suffix(".toml").read_text()
    row = json.loads(out.read_text())["servers"][0]
    assert "exited with code 1" in row["reason"]
    assert "API_KEY=***" in row["reason"]  # the stderr tail, masked; the key is kept
    for secret in ("config-secret-9137", "from-the-env-5521", "cli-secret-4410"):
        assert secret not in text
    assert row["command"]["env_keys"] == ["API_KEY", "EXTRA"]
    assert row["command"]["argv"][-2:] == ["--revision", "***"]
    assert tomllib.loads(out.with_suffix(".toml").read_text())["servers"][0]["name"] == "leaky"


def test_a_server_that_cannot_start_is_a_row_and_the_others_are_measured(tmp_path):
    result, data = measure(tmp_path, "--server", f"good={PY} {FAKE}",
                           "--server", "gone=/nonexistent/server", "--cwd", str(tmp_path))
    assert result.exit_code == 1, result.output
    rows = {s["name"]: s for s in data["servers"]}
    assert rows["good"]["status"] == "ok" and rows["good"]["payload"]["verified"] is True
    assert rows["gone"]["status"] == "failed"
    assert "cannot start '/nonexistent/server': no executable file" in rows["gone"]["reason"]
    assert "Traceback" not in result.output


def test_a_config_with_no_servers_is_refused_not_replaced_by_the_reference_set(tmp_path):
    empty = write_json(tmp_path / "claude_desktop_config.json", {"mcpServers": {}})
    result, data = measure(tmp_path, "--config", empty)
    assert result.exit_code == 2 and data is None
    assert "no MCP servers in it (read as a claude-desktop config" in result.output


def test_a_malformed_entry_is_a_failed_row_and_a_remote_one_skipped(tmp_path):
    """A config typo must not pass a CI gate: exit 1, the entry a failed row with its cause;
    an entry left to the client (remote) stays skipped."""
    config = write_json(tmp_path / "claude_desktop_config.json", {"mcpServers": {
        "typo": {"command": 42}, "far": {"url": "https://example.test/mcp"}}})
    result, data = measure(tmp_path, "--config", config)
    assert result.exit_code == 1, result.output
    rows = {r["name"]: r for r in data["servers"]}
    assert rows["typo"]["status"] == "failed"
    assert rows["typo"]["reason"] == "malformed entry: command must be a string"
    assert rows["far"]["status"] == "skipped"


def test_two_configs_sharing_a_name_get_their_client_added(scripted, tmp_path):
    one = write_json(tmp_path / "claude_desktop_config.json", {"mcpServers": {"x": entry("a")}})
    two = write_json(tmp_path / "zed" / "settings.json",
                     {"context_servers": {"x": {"command": PY, "args": [str(FAKE)]}}})
    result, data = measure(tmp_path, "--config", one, "--config", two, "--budget", "10")
    assert result.exit_code == 0, result.output
    assert [s["name"] for s in data["servers"]] == ["x", "x@zed"]


def test_a_server_that_echoes_requests_fails_at_once_saying_so(tmp_path):
    result, data = measure(tmp_path, "--", "sh", "-c", "cat")
    assert result.exit_code == 1
    assert data["servers"][0]["reason"].startswith(
        "cold start run 1/1: initialize: the server wrote the request itself back on stdout")


def test_a_server_that_does_not_start_is_named_under_every_limit(scripted, tmp_path):
    """In a Codex config one server fails: the budget still lists it, under its own
    startup_timeout_sec too, saying why."""
    config = tmp_path / "config.toml"
    config.write_text(f'[mcp_servers.quick]\ncommand = "{PY}"\nargs = ["{FAKE}"]\n'
                      f'[mcp_servers.broken]\ncommand = "{PY}"\n'
                      f'args = ["-c", "import sys; sys.exit(2)"]\nstartup_timeout_sec = 20\n')
    result, data = measure(tmp_path, "--config", str(config))
    assert result.exit_code == 1
    startup = data["startup"]
    assert startup["not_started"] == {"broken": startup["not_started"]["broken"]}
    assert startup["not_started"]["broken"].startswith("exited with code 2 after ")
    limits = {row["limit_s"]: row["fits"] for row in startup["limits"]}
    assert limits[20.0] == {"broken": False} and limits[30.0] == {"quick": True}
    assert "- set in the config (limit 20.0 s): broken does not start (exited with code 2 " \
           "after " in result.stdout


def test_http_only_options_given_for_stdio_servers_are_said_to_be_ignored(scripted, tmp_path):
    """--load-s and --server-cpus shape only an HTTP server's load: on a stdio command they
    are named as ignored (not silently dropped); left at their defaults they are not named."""
    given, _ = measure(tmp_path, "--load-s", "2", "--server-cpus", "1", "--", PY, str(FAKE))
    assert given.exit_code == 0, given.output
    assert ("--load-s, --server-cpus: for a server measured over HTTP, and none is here"
            in given.stderr)
    quiet, _ = measure(tmp_path, "--force", "--", PY, str(FAKE))
    assert quiet.exit_code == 0 and "measured over HTTP" not in quiet.stderr
