"""Editor configs: which servers each client's file starts, how, and which are skipped why."""

import json
import os
from pathlib import Path

import pytest

from mcpstart.targets.cmdline import DOCKER_NOTE, Skipped, Target
from mcpstart.targets.configs import ConfigError, load_config

FIXTURES = Path(__file__).parent / "fixtures" / "configs"
ENVIRON = {
    "HOME": "/home/u", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PAGER": "less",
    "EDITOR": "vim", "OPENAI_API_KEY": "sk-never-passed-to-codex",
    "TOOLS_BIN": "/opt/tools", "API_KEY": "sk-test-123", "CURSOR_TOKEN": "cursor-tok",
    "HOME_TOKEN": "home-tok", "TZ_NAME": "Europe/Paris", "CONTEXT7_API_KEY": "ctx-key",
}
REMOTE = "measured over HTTP with --remote"
CODEX_BASE = {"HOME": "/home/u", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
ALL_FIXTURES = ["claude_desktop_config.json", "claude-code/.mcp.json", "cursor/.cursor/mcp.json",
                "vscode/.vscode/mcp.json", "windsurf/.codeium/windsurf/mcp_config.json",
                "zed/settings.json", "codex/config.toml", "generic/servers.json"]


def load(relative: str, **kwargs):
    """The fixture's servers, read with ENVIRON unless told otherwise."""
    kwargs.setdefault("environ", ENVIRON)
    return load_config(FIXTURES / relative, **kwargs)


def skipped(result) -> dict[str, str]:
    return {s.name: s.reason for s in result.skipped}


def test_claude_desktop():
    path = FIXTURES / "claude_desktop_config.json"
    result = load("claude_desktop_config.json")
    origin = f"Claude Desktop config {path}"
    assert result.client == "claude-desktop" and result.notes == ()
    assert result.targets == [
        Target("memory", ["npx", "-y", "@modelcontextprotocol/server-memory"], origin=origin),
        Target("github", ["docker", "run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN",
                          "ghcr.io/github/github-mcp-server"],
               env={"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_fixture_token"},
               secrets=frozenset({"ghp_fixture_token"}), origin=origin, notes=(DOCKER_NOTE,)),
        # Claude Desktop substitutes nothing: the placeholder reaches the server as written
        Target("fetch", ["uvx", "mcp-server-fetch", "--user-agent", "${FETCH_AGENT}"],
               origin=origin),
    ]
    assert result.skipped == [
        Skipped("remote", f"remote server (url): {REMOTE}", origin),
        Skipped("broken", "malformed entry: args must be a list of strings", origin, True),
    ]


def test_claude_code():
    folder = FIXTURES / "claude-code"
    result = load("claude-code/.mcp.json")
    origin = f"Claude Code config {folder / '.mcp.json'}"
    assert result.client == "claude-code"
    assert result.targets == [
        Target("filesystem", ["npx", "-y", "@modelcontextprotocol/server-filesystem", "."],
               cwd=str(folder), origin=origin),
        Target("api", ["/opt/tools/api-server", "--verbose"], cwd=str(folder),
               env={"API_KEY": "sk-test-123", "LOG_LEVEL": "info"},
               secrets=frozenset({"/opt/tools", "sk-test-123", "info"}), origin=origin),
    ]
    assert skipped(result) == {
        "needs-token": "needs environment variable ACME_TOKEN (${ACME_TOKEN}), which is not set",
        "sentry": f"remote server (http): {REMOTE}",
        "events": f"remote server (sse): {REMOTE}",
    }


def test_claude_code_default_gives_way_to_a_set_variable():
    result = load("claude-code/.mcp.json",
                  environ={**ENVIRON, "LOG_LEVEL": "debug", "PROJECT_ROOT": "/srv/p"})
    filesystem, api = result.targets
    assert filesystem.argv[-1] == "/srv/p" and "/srv/p" in filesystem.secrets
    assert api.env["LOG_LEVEL"] == "debug" and "debug" in api.secrets


def test_cursor():
    workspace = FIXTURES / "cursor"
    result = load("cursor/.cursor/mcp.json")
    origin = f"Cursor config {workspace / '.cursor' / 'mcp.json'}"
    assert result.client == "cursor"
    fetch_env = {"FETCH_USER_AGENT": "mcpstart-test", "FETCH_PROXY": "http://proxy.local:3128",
                 "FETCH_TIMEOUT": "30"}                  # env wins over the envFile's 10
    assert result.targets == [
        Target("fetch", ["uvx", "mcp-server-fetch"], env=fetch_env,
               secrets=frozenset(fetch_env.values()), origin=origin),
        Target("local", ["/home/u/bin/local-mcp", "--root", str(workspace), "--name", "cursor"],
               env={"LOCAL_TOKEN": "cursor-tok"}, secrets=frozenset({"cursor-tok"}),
               origin=origin),
        # Cursor starts it with an empty value for an unset variable: so does mcpstart
        Target("needs-env", ["npx", "-y", "@acme/mcp-server"], env={"ACME_KEY": ""},
               origin=origin, notes=("${env:ACME_KEY} is not set here: Cursor starts the "
                                     "server with an empty value, and so does mcpstart",)),
    ]
    assert skipped(result) == {
        "no-envfile": f"needs envFile {workspace / 'missing.env'}, which cannot be read: "
                      "No such file or directory",
        "remote": f"remote server (url): {REMOTE}",
    }


def test_vscode():
    workspace = FIXTURES / "vscode"
    result = load("vscode/.vscode/mcp.json")
    origin = f"VS Code config {workspace / '.vscode' / 'mcp.json'}"
    assert result.client == "vscode"
    git_env = {"GIT_AUTHOR_NAME": "Fixture Author", "GIT_MESSAGE": "line one\nline two",
               "PATH": f"/usr/bin:/bin{os.pathsep}/opt/git/bin", "GIT_RETRIES": "3"}
    assert result.targets == [
        Target("memory", ["npx", "-y", "@modelcontextprotocol/server-memory"],
               cwd=str(workspace), env={"MEMORY_FILE_PATH": f"{workspace}/memory.json"},
               secrets=frozenset({f"{workspace}/memory.json"}), origin=origin),
        Target("git", ["uvx", "mcp-server-git", "--repository", str(workspace)],
               cwd=str(workspace / "tools"), env=git_env,
               base_env={k: v for k, v in ENVIRON.items() if k != "PAGER"},
               secrets=frozenset(git_env.values()), origin=origin),
        Target("home", ["/home/u/bin/home-server", "/home/u/data", "--token", "home-tok"],
               cwd="/home/u/work", secrets=frozenset({"home-tok"}), origin=origin),
    ]
    assert skipped(result) == {
        "github": "needs ${input:github-token}, a value a person types in when VS Code starts "
                  "the server (GitHub personal access token); give it with --input "
                  "github-token=VALUE",
        "picked": "needs ${command:mcp.pickServerScript}, the result of an editor command "
                  "VS Code runs",
        "settings-value": "uses ${config:editor.fontSize}, which mcpstart does not resolve",
        "copilot": f"remote server (http): {REMOTE}",
    }


def test_vscode_workspace_argument(tmp_path):
    result = load("vscode/.vscode/mcp.json", workspace=tmp_path)
    memory = result.targets[0]
    assert memory.cwd == str(tmp_path)
    assert memory.env == {"MEMORY_FILE_PATH": f"{tmp_path}/memory.json"}
    assert skipped(result)["git"] == (f"needs envFile {tmp_path / 'vscode.env'}, which cannot "
                                      "be read: No such file or directory")


def test_windsurf():
    path = FIXTURES / "windsurf" / ".codeium" / "windsurf" / "mcp_config.json"
    result = load("windsurf/.codeium/windsurf/mcp_config.json")
    origin = f"Windsurf config {path}"
    assert result.client == "windsurf"
    assert result.targets == [
        # Windsurf resolves ${env:..} and ${file:..} only; other text stays as written
        Target("time", ["uvx", "mcp-server-time", "--local-timezone", "Europe/Paris",
                        "--root", "${workspaceFolder}"],
               secrets=frozenset({"Europe/Paris"}), origin=origin),
        Target("needs-env", ["npx", "-y", "@acme/other-server"], env={"OTHER_KEY": ""},
               origin=origin, notes=("${env:OTHER_KEY} is not set here: Windsurf starts the "
                                     "server with an empty value, and so does mcpstart",)),
    ]
    key = "/nonexistent/mcpstart-fixture/acme.key"
    assert skipped(result) == {
        "keyed": f"needs the file {key} (${{file:{key}}}), which cannot be read: "
                 "No such file or directory",
        "off": "disabled in the config",
        "hosted": f"remote server (url): {REMOTE}",
    }


def test_windsurf_file_placeholder_reads_the_trimmed_file(tmp_path):
    secret = tmp_path / "acme.key"
    secret.write_text("  s3cret-value\n")
    folder = tmp_path / ".codeium" / "windsurf"
    folder.mkdir(parents=True)
    (folder / "mcp_config.json").write_text(json.dumps({"mcpServers": {"keyed": {
        "command": "npx", "args": ["-y", "@acme/mcp-server"],
        "env": {"ACME_KEY": f"Key ${{file:{secret}}}"}}}}))
    [target] = load_config(folder / "mcp_config.json", environ={}).targets
    assert target.env == {"ACME_KEY": "Key s3cret-value"}
    assert target.secrets == frozenset({"s3cret-value", "Key s3cret-value"})


def test_zed_both_shapes():
    path = FIXTURES / "zed" / "settings.json"
    result = load("zed/settings.json")
    origin = f"Zed config {path}"
    assert result.client == "zed"
    assert result.targets == [
        Target("memory", ["npx", "-y", "@modelcontextprotocol/server-memory"],
               env={"MEMORY_FILE_PATH": "/tmp/zed-memory.json"},
               secrets=frozenset({"/tmp/zed-memory.json"}), origin=origin),
        Target("git", ["uvx", "mcp-server-git"], origin=origin),           # the old shape
        Target("literal", ["node", "${HOME}/server.js"], origin=origin),   # no substitution
    ]
    assert skipped(result) == {
        "postgres": "no command: a Zed extension server (its extension supplies the command)",
        "off": "disabled in the config",
        "on-host": "remote: true: Zed starts it on the remote project's host",
        "hosted": f"remote server (url): {REMOTE}",
    }


@pytest.mark.skipif(os.name == "nt", reason="Codex's default variables differ on Windows")
def test_codex():
    path = FIXTURES / "codex" / "config.toml"
    result = load("codex/config.toml")
    origin = f"Codex config {path}"
    reduced = "Codex passes a reduced environment: HOME, PATH, LANG{} from mcpstart's environment"
    assert result.client == "codex"
    assert result.targets == [
        Target("context7", ["npx", "-y", "@upstash/context7-mcp"],
               env={"MY_ENV_VAR": "MY_ENV_VALUE"},
               base_env={**CODEX_BASE, "CONTEXT7_API_KEY": "ctx-key"},
               secrets=frozenset({"MY_ENV_VALUE", "ctx-key"}), limit_s=20.5, origin=origin,
               notes=(reduced.format(", CONTEXT7_API_KEY") + " plus the config env, nothing else",
                      "env_vars NOT_SET_HERE not set here, so Codex would not pass it")),
        Target("time", ["uvx", "mcp-server-time"], cwd="/srv/time", base_env=CODEX_BASE,
               limit_s=45.0, origin=origin, notes=(reduced.format("") + ", nothing else",)),
        Target("literal", ["node", "${HOME}/server.js"], base_env=CODEX_BASE, origin=origin,
               notes=(reduced.format("") + ", nothing else",)),
    ]
    assert skipped(result) == {
        "figma": f"remote server (url): {REMOTE}",
        "off": "disabled in the config",
        "executor-only": "env_vars entry TOKEN uses source remote, which requires remote MCP "
                         "stdio",
    }


def test_generic_mcpservers_file_is_read_as_claude_desktop_and_says_so():
    path = FIXTURES / "generic" / "servers.json"
    result = load("generic/servers.json")
    assert result.client == "claude-desktop"
    assert result.notes == ("servers.json is not a file name a known client uses; read as "
                            "Claude Desktop's format (mcpServers, no variable substitution)",)
    assert result.targets == [Target("time", ["uvx", "mcp-server-time"],
                                     origin=f"Claude Desktop-style config {path}")]


def test_client_argument_overrides_detection():
    path = FIXTURES / "generic" / "servers.json"
    result = load("generic/servers.json", client="cursor")
    assert result.client == "cursor" and result.notes == ()
    assert result.targets[0].origin == f"Cursor config {path}"


def test_client_without_its_key_says_there_are_no_servers():
    result = load("claude_desktop_config.json", client="zed")
    assert (result.targets, result.skipped) == ([], [])
    assert result.notes == ("no context_servers in the file: no servers",)


@pytest.mark.parametrize("relative", ALL_FIXTURES)
def test_every_env_value_is_a_secret(relative):
    for target in load(relative).targets:
        assert {v for v in target.env.values() if v} <= target.secrets, target.name


def test_vscode_user_settings_and_portable_forms(tmp_path):
    settings = tmp_path / "settings.json"
    settings.write_text('{"editor.fontSize": 14, "mcp": {"servers": {"time": '
                        '{"command": "uvx", "args": ["mcp-server-time"]}}}}')
    result = load_config(settings, environ={})
    assert result.client == "vscode" and [t.argv for t in result.targets] == [
        ["uvx", "mcp-server-time"]]
    portable = tmp_path / ".mcp.json"
    portable.write_text('{"mcpServers": {"time": {"command": "uvx", '
                        '"args": ["--from", "${env:PKG}", "mcp-server-time"]}}}')
    result = load_config(portable, client="vscode", environ={"PKG": "mcp-server-time==1.0"})
    assert [t.argv for t in result.targets] == [
        ["uvx", "--from", "mcp-server-time==1.0", "mcp-server-time"]]
    assert result.targets[0].cwd == str(tmp_path)


def test_claude_json_user_and_project_servers(tmp_path):
    project = tmp_path / "proj"
    config = tmp_path / ".claude.json"
    config.write_text(json.dumps({
        "mcpServers": {"memory": {"command": "npx",
                                  "args": ["-y", "@modelcontextprotocol/server-memory"]}},
        "projects": {
            str(project): {"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]},
                                          "git": {"command": "uvx", "args": ["mcp-server-git"]}},
                           "disabledMcpServers": ["git"]},
            "/elsewhere": {"mcpServers": {"other": {"command": "other-server"}}},
        }}))
    result = load_config(config, workspace=project, environ={})
    assert result.client == "claude-code"
    assert [(t.name, t.cwd) for t in result.targets] == [("memory", str(project)),
                                                         ("time", str(project))]
    assert skipped(result) == {"git": "disabled in the config"}
    assert result.notes == (f"also read the local-scope servers of project {project}",)


@pytest.mark.parametrize("entry, reason", [
    ({"command": ["npx"]}, "malformed entry: command must be a string"),
    ({"command": "npx", "env": ["A=1"]}, "malformed entry: env must be an object"),
    ({"command": "npx", "env": {"A": {"nested": 1}}}, "malformed entry: env A must be a string"),
    ({"args": ["x"]}, "no command"),
    ({"command": "npx", "type": "websocket"}, "transport type 'websocket' is not stdio"),
    ("npx -y x", "malformed entry: not an object"),
])
def test_malformed_json_entries(tmp_path, entry, reason):
    config = tmp_path / "claude_desktop_config.json"
    config.write_text(json.dumps({"mcpServers": {"bad": entry}}))
    assert skipped(load_config(config, environ={})) == {"bad": reason}


def test_json_numbers_in_env_become_strings(tmp_path):
    config = tmp_path / ".mcp.json"
    config.write_text('{"mcpServers": {"s": {"command": "srv", "env": {"PORT": 8080, "R": 0.5}}}}')
    [target] = load_config(config, environ={}).targets
    assert target.env == {"PORT": "8080", "R": "0.5"}


@pytest.mark.parametrize("table, reason", [
    ('command = "npx"\nstartup_timeout_sec = -1', "malformed entry: startup_timeout_sec must be "
                                                  "a number >= 0"),
    ('command = "npx"\nenv_vars = "TOKEN"', "malformed entry: env_vars must be a list"),
    ('command = "npx"\nurl = "https://x"', "sets both command and url, which Codex rejects"),
    ('command = "npx"\n[mcp_servers.bad.env]\nPORT = 8080',
     "malformed entry: env must be a table of strings"),
])
def test_malformed_codex_entries(tmp_path, table, reason):
    config = tmp_path / "config.toml"
    config.write_text(f"[mcp_servers.bad]\n{table}\n")
    assert skipped(load_config(config, environ={})) == {"bad": reason}


def test_codex_seconds_win_over_milliseconds(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text('[mcp_servers.s]\ncommand = "srv"\nstartup_timeout_sec = 5\n'
                      'startup_timeout_ms = 90000\n')
    assert load_config(config, environ={}).targets[0].limit_s == 5


@pytest.mark.parametrize("name, text, message", [
    ("bad.json", '{"mcpServers": {', "not valid JSON"),
    ("config.toml", "[mcp_servers.x\ncommand = 1", "not valid TOML"),
    ("list.json", "[1, 2]", "expected an object at the top level, got list"),
    ("claude_desktop_config.json", '{"mcpServers": []}', "mcpServers must be an object"),
    ("other.json", '{"editor.fontSize": 14}', "cannot tell which client this is"),
])
def test_unusable_files(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ConfigError, match=message) as caught:
        load_config(path, environ={})
    assert str(path) in str(caught.value)


def test_missing_file_and_unknown_client(tmp_path):
    with pytest.raises(ConfigError, match="cannot read") as caught:
        load_config(tmp_path / "nope.json")
    assert str(tmp_path / "nope.json") in str(caught.value)
    with pytest.raises(ConfigError, match="unknown client 'emacs'; one of: claude-desktop"):
        load_config(FIXTURES / "claude_desktop_config.json", client="emacs")


def test_the_cli_offers_exactly_the_clients_configs_reads():
    from mcpstart.cli import CLIENTS as CLIENT_CHOICES
    from mcpstart.targets.configs import CLIENTS

    assert CLIENT_CHOICES == CLIENTS


def test_a_vscode_input_given_on_the_command_line_is_used_and_kept_secret():
    result = load("vscode/.vscode/mcp.json", inputs={"github-token": "ghp-secret-123"})
    github = next(t for t in result.targets if t.name == "github")
    assert "ghp-secret-123" in {*github.argv, *github.env.values()}
    assert "ghp-secret-123" in github.secrets
    assert "github" not in skipped(result)
