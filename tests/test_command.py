"""Bare command lines: display names, --server NAME=COMMAND, launch notes."""

import pytest

from mcpstart.targets.cmdline import DOCKER_NOTE, launch_notes, parse_server_option, server_name


@pytest.mark.parametrize("argv, name", [
    # npx and the other npm runners: the package, version stripped, scope kept
    (["npx", "-y", "@modelcontextprotocol/server-memory"], "@modelcontextprotocol/server-memory"),
    (["npx", "-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
     "@modelcontextprotocol/server-filesystem"),
    (["npx", "@playwright/mcp@latest"], "@playwright/mcp"),
    (["npx", "-y", "tavily-mcp@0.1.4"], "tavily-mcp"),
    (["npx", "-y", "--", "mcp-remote@0.1.2", "https://mcp.example.com/sse"], "mcp-remote"),
    (["npx", "--yes", "-p", "@modelcontextprotocol/server-memory", "mcp-server-memory"],
     "@modelcontextprotocol/server-memory"),
    (["npx", "-y", "--package=task-master-ai", "task-master-ai"], "task-master-ai"),
    (["npx", "--registry", "https://npm.example.com", "-y", "@acme/mcp@2.0.0"], "@acme/mcp"),
    (["npx", "-y", "github:someone/weather-mcp"], "weather-mcp"),
    (["/usr/local/bin/npx", "-y", "@upstash/context7-mcp@latest"], "@upstash/context7-mcp"),
    ([r"C:\Program Files\nodejs\npx.cmd", "-y", "firecrawl-mcp"], "firecrawl-mcp"),
    (["cmd", "/c", "npx", "-y", "@modelcontextprotocol/server-memory"],
     "@modelcontextprotocol/server-memory"),
    (["npm", "exec", "--yes", "--", "@scope/pkg@2"], "@scope/pkg"),
    (["bunx", "@modelcontextprotocol/server-memory@1.0.0"], "@modelcontextprotocol/server-memory"),
    (["pnpm", "dlx", "@modelcontextprotocol/server-everything"],
     "@modelcontextprotocol/server-everything"),
    # uvx, uv tool run, pipx run: the Python package, specifiers and extras stripped
    (["uvx", "mcp-server-time"], "mcp-server-time"),
    (["uvx", "mcp-server-time==1.0"], "mcp-server-time"),
    (["uvx", "awslabs.aws-api-mcp-server@latest"], "awslabs.aws-api-mcp-server"),
    (["uvx", "mcp-server-x[cli]>=2"], "mcp-server-x"),
    (["uvx", "--from", "mcp-server-git", "mcp-server-git"], "mcp-server-git"),
    (["uvx", "--from", "awslabs.terraform-mcp-server", "python", "-m",
      "awslabs.terraform_mcp_server.server"], "awslabs.terraform-mcp-server"),
    (["uvx", "--python", "3.12", "-q", "--with", "httpx", "mcp-server-fetch"],
     "mcp-server-fetch"),
    (["uvx", "--from", "git+https://github.com/org/mcp-tool.git", "mcp-tool-cli"],
     "mcp-tool-cli"),
    (["uv", "tool", "run", "--from", "mcp-server-git==0.6", "mcp-server-git"], "mcp-server-git"),
    (["pipx", "run", "mcp-server-fetch"], "mcp-server-fetch"),
    (["pipx", "run", "--spec", "mcp-server-fetch==2025.1", "mcp-server-fetch"],
     "mcp-server-fetch"),
    # anything else: the program's basename
    (["/usr/bin/python3", "-m", "foo"], "python3"),
    (["node", "/srv/weather/build/index.js"], "node"),
    (["uv", "--directory", "/srv/weather", "run", "weather.py"], "uv"),
    (["docker", "run", "-i", "--rm", "mcp/fetch"], "docker"),
    (["./target/release/my-server"], "my-server"),
    # a runner with no package is named by the runner
    (["npx"], "npx"),
    (["npx", "-y"], "npx"),
])
def test_server_name(argv, name):
    assert server_name(argv) == name


def test_server_name_of_nothing_is_an_error():
    with pytest.raises(ValueError, match="empty command"):
        server_name([])


@pytest.mark.parametrize("text, expected", [
    ("mem=npx -y @modelcontextprotocol/server-memory",
     ("mem", ["npx", "-y", "@modelcontextprotocol/server-memory"])),
    ('fs=npx -y @modelcontextprotocol/server-filesystem "/tmp/my files"',
     ("fs", ["npx", "-y", "@modelcontextprotocol/server-filesystem", "/tmp/my files"])),
    ("time=uvx mcp-server-time --local-timezone=Europe/Paris",
     ("time", ["uvx", "mcp-server-time", "--local-timezone=Europe/Paris"])),
    ("py=python3 -c 'print(1)'", ("py", ["python3", "-c", "print(1)"])),
    ("x=env A=b c", ("x", ["env", "A=b", "c"])),            # only the first '=' splits
    ("@scope/srv=./server", ("@scope/srv", ["./server"])),
])
def test_parse_server_option(text, expected):
    assert parse_server_option(text) == expected


@pytest.mark.parametrize("text, message", [
    ("npx -y @modelcontextprotocol/server-memory", "expected NAME=COMMAND"),
    ("=npx -y x", "NAME before '=' is empty"),
    ("my server=npx -y x", "contains whitespace"),
    ("mem=", "COMMAND after '=' is empty"),
    ("mem=   ", "COMMAND after '=' is empty"),
    ('mem=npx -y "unclosed', "No closing quotation"),
])
def test_parse_server_option_rejects(text, message):
    with pytest.raises(ValueError, match=message) as caught:
        parse_server_option(text)
    assert repr(text) in str(caught.value)


@pytest.mark.parametrize("argv, notes", [
    (["docker", "run", "-i", "--rm", "mcp/fetch"], (DOCKER_NOTE,)),
    (["/usr/bin/docker", "run", "-i", "ghcr.io/github/github-mcp-server"], (DOCKER_NOTE,)),
    (["docker", "exec", "-i", "box", "server"], ()),
    (["npx", "run"], ()),
    (["uvx", "mcp-server-time"], ()),
])
def test_launch_notes(argv, notes):
    assert launch_notes(argv) == notes


@pytest.mark.parametrize("cmdline, label", [
    (["npm", "exec", "@upstash/context7-mcp"], "npm exec @upstash/context7-mcp"),
    (["npx", "-y", "chrome-devtools-mcp@latest", "--headless", "--isolated"],
     "npx chrome-devtools-mcp"),
    (["uvx", "mcp-server-sqlite", "--db-path", "x.db"], "uvx mcp-server-sqlite"),
    (["/usr/bin/node", "/r/.npm/_npx/9/node_modules/@upstash/context7-mcp/dist/index.js"],
     "node @upstash/context7-mcp"),
    (["node", "dist/server.js"], "node server.js"),
    (["/venv/bin/python3", "/venv/bin/mcp-server-time"], "python3 mcp-server-time"),
    (["python3", "-m", "mcp_server_time", "--local-timezone", "UTC"], "python3 -m mcp_server_time"),
    (["java", "-Xmx1g", "-jar", "/b/reverse-text.jar"], "java reverse-text.jar"),
    (["sh", "-c", "python3 server.py"], "sh -c python3"),
    (["python3", "-c", "import time; time.sleep(9)", "150"], "python3 -c"),
    (["node", "--max-old-space-size=64", "-e", "setInterval(()=>{})"], "node -e"),
    (["/usr/lib/chromium/chromium", "--type=renderer", "--lang=en-US"], "chromium"),
    ([], "npm exec @upsta"),
    # as a real npx run shows its tree: npm exec's title over its argv, the shell it runs the
    # bin through (quoted), and node on the bin's link in node_modules/.bin
    (["npm exec @modelcontextprotocol/server-everything@2026.8.31", "", ""],
     "npm exec server-everything"),
    (["sh", "-c", "'mcp-server-everything'"], "sh -c mcp-server-everything"),
    (["node", "/r/.npm/_npx/a7/node_modules/.bin/mcp-server-everything"],
     "node mcp-server-everything"),
])
def test_one_naming_rule_for_every_process(cmdline, label):
    from mcpstart.targets.cmdline import LABEL_CHARS, process_label

    assert process_label(cmdline, "npm exec @upsta") == label
    assert len(process_label(["node", "/x/" + "a" * 80 + ".js"])) == LABEL_CHARS
