"""Servers named by a command line: the Target that says how to spawn one, and its display name."""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field

from ..endpoint import ENDPOINT

DOCKER_NOTE = ("docker run: memory figures exclude the container (its processes run under the "
               "Docker daemon, not as mcpstart's descendants)")


@dataclass(frozen=True)
class Target:
    """A server to measure that is not built from a recipe.

    Attributes:
        name: the name used in tables and the results file.
        argv: the command and its arguments, spawned as they are (no shell).
        cwd: the working directory, or None for mcpstart's own.
        env: variables set on top of the base environment.
        base_env: None: the server inherits mcpstart's environment; else exactly this
            (e.g. Codex's reduced environment).
        secrets: values that must never be shown or stored: every env value, and every
            value substituted from the environment (empty strings left out).
        limit_s: a startup limit the config sets, in seconds (Codex startup_timeout_sec).
        origin: where the server came from, e.g. "Codex config /home/u/.codex/config.toml".
        notes: warnings to show with the row (docker, reduced environment ...).
        url: a Streamable HTTP server already running at this URL (``argv`` is then empty);
            None for a command.
        headers: HTTP headers sent with every request to ``url`` (a config's; values are
            secrets).
        load_allowed: load may be sent to ``url``: a loopback address, or a URL the user
            named together with --load-s; never a remote entry of a config.
        endpoint_path: the MCP endpoint's path of a command spawned over HTTP (--endpoint).
    """

    name: str
    argv: list[str]
    cwd: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    base_env: dict[str, str] | None = None
    secrets: frozenset[str] = frozenset()
    limit_s: float | None = None
    origin: str = "command line"
    notes: tuple[str, ...] = ()
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    load_allowed: bool = True
    endpoint_path: str = ENDPOINT

    @property
    def transport(self) -> str:
        """"http" for a URL or a command with ``{port}`` in its argv, else "stdio"."""
        return "http" if self.url or any("{port}" in a for a in self.argv) else "stdio"


@dataclass(frozen=True)
class Skipped:
    """A server a config names that is not measured, and why (``reason``, one sentence);
    ``malformed``: the entry itself is wrong (a typo a CI gate must not pass: its row fails),
    not one mcpstart leaves to the client (remote, disabled, asking the user)."""

    name: str
    reason: str
    origin: str
    malformed: bool = False


# Options of the package runners that take a value (``--opt VALUE``; ``--opt=VALUE`` needs no
# entry), and the options among them that name the package.
_NPM_VALUED = ("--package", "-p", "-c", "--call", "--registry", "--cache", "--prefix",
               "-w", "--workspace", "--userconfig", "--loglevel")
_UV_VALUED = ("--from", "--with", "--with-editable", "--with-requirements", "--python", "-p",
              "--index", "--default-index", "--index-url", "-i", "--extra-index-url",
              "--find-links", "-f", "--directory", "--project", "--config-file", "--cache-dir",
              "--constraints", "--constraint", "-c", "--overrides", "--override",
              "--build-constraints", "--build-constraint", "-b", "--env-file",
              "--index-strategy", "--keyring-provider", "--resolution", "--prerelease",
              "--exclude-newer", "--exclude-newer-package", "--link-mode",
              "--upgrade-package", "-P", "--reinstall-package", "--refresh-package",
              "--no-build-package", "--no-binary-package", "--config-setting", "-C",
              "--allow-insecure-host", "--color")
_PIPX_VALUED = ("--spec", "--python", "--index-url", "-i", "--pip-args", "--backend")

_NPM = (_NPM_VALUED, ("--package", "-p"), "npm")
_UV = (_UV_VALUED, ("--from",), "python")
_PIPX = (_PIPX_VALUED, ("--spec",), "python")

# launcher words -> (valued options, package options, ecosystem)
_RUNNERS = {
    ("npx",): _NPM, ("pnpx",): _NPM, ("bunx",): _NPM, ("npm", "exec"): _NPM,
    ("pnpm", "dlx"): _NPM, ("yarn", "dlx"): _NPM, ("bun", "x"): _NPM,
    ("uvx",): _UV, ("uv", "tool", "run"): _UV, ("pipx", "run"): _PIPX,
    ("uv", "tool", "uvx"): _UV,  # what uvx execs into (uv 0.13: "uv tool uvx PKG")
}
_PYTHON_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")


def _program(word: str) -> str:
    """The program's name: the basename, without a Windows .exe/.cmd/.bat suffix."""
    base = os.path.basename(word.replace("\\", "/"))
    stem, ext = os.path.splitext(base)
    return stem if ext.lower() in (".exe", ".cmd", ".bat") else base


def _is_location(spec: str) -> bool:
    """A package spec that is a URL, a git/file spec or a path rather than a registry name."""
    return (":" in spec or spec.startswith((".", "/", "~", "\\"))
            or ("/" in spec and not spec.startswith("@")))


def _tail(spec: str) -> str:
    """The last segment of a URL or path spec, without .git/.tgz/.tar.gz."""
    last = re.split(r"[/:\\]", spec.rstrip("/\\"))[-1]
    for suffix in (".git", ".tgz", ".tar.gz"):
        last = last.removesuffix(suffix)
    return last or spec


def _package(spec: str, ecosystem: str) -> str:
    """The package name in a spec, version and extras stripped (see server_name)."""
    if _is_location(spec):
        return _tail(spec)
    if ecosystem == "npm":
        at = spec.find("@", 1)             # 1: the '@' of a scope is not a version
        return spec[:at] if at > 0 else spec
    match = _PYTHON_NAME.match(spec)
    return match.group(0) if match else spec


def server_name(argv: list[str]) -> str:
    """A short display name for a server launched by ``argv``.

    Rules:
    - ``cmd /c REST`` (Windows) is named by REST.
    - Package runners are named by the package they run: ``npx``, ``pnpx``, ``bunx``,
      ``npm exec``, ``pnpm dlx``, ``yarn dlx``, ``bun x`` (npm packages); ``uvx``,
      ``uv tool run``, ``pipx run`` (Python packages). The runner's own options are skipped:
      flags (``-y``, ``--yes``, ``-q`` ...), options with a value (``--python 3.12``, ``-p PKG``
      or ``-p=PKG`` ...), and ``--``. The package is the value of ``-p``/``--package`` (npm),
      ``--from`` (uv) or ``--spec`` (pipx) when one is given and is a registry name, else the
      first positional word (the command the runner runs).
    - Versions and extras are stripped, scopes kept: ``@modelcontextprotocol/server-memory@latest``
      -> ``@modelcontextprotocol/server-memory``; ``mcp-server-time==1.0`` and
      ``mcp-server-time@latest`` -> ``mcp-server-time``; ``pkg[cli]>=2`` -> ``pkg``.
    - A spec that is a URL, git spec or path (``github:u/repo``, ``git+https://...``,
      ``./pkg``) gives way to the positional command for ``--from``/``--spec``/``--package``;
      as the positional word it is named by its last segment (``repo``).
    - Anything else (and a runner with no package): the basename of argv[0] without a
      Windows .exe/.cmd/.bat suffix: ``/usr/bin/python3 -m foo`` -> ``python3``.

    Raises:
        ValueError: argv is empty.
    """
    if not argv:
        raise ValueError("empty command: nothing to name")
    if _program(argv[0]).lower() == "cmd" and len(argv) > 2 and argv[1].lower() == "/c":
        return server_name(argv[2:])
    words = [_program(argv[0])] + argv[1:]
    for launcher, (valued, package_options, ecosystem) in _RUNNERS.items():
        if tuple(words[:len(launcher)]) == launcher:
            name = _runner_package(argv[len(launcher):], valued, package_options, ecosystem)
            return name or words[0]
    return words[0]


def _runner_package(args: list[str], valued: tuple[str, ...], package_options: tuple[str, ...],
                    ecosystem: str) -> str | None:
    """The package a runner runs, from the words after the runner (see server_name)."""
    option_package = None
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--":
            i += 1
            break
        if not word.startswith("-") or word == "-":
            break
        key, has_value, value = word.partition("=")
        if key in valued and not has_value:
            i += 1
            value = args[i] if i < len(args) else ""
            has_value = True
        if has_value and key in package_options and option_package is None:
            option_package = value
        i += 1
    command = args[i] if i < len(args) else None
    if option_package and not _is_location(option_package):
        return _package(option_package, ecosystem)
    if command:
        return _package(command, ecosystem)
    return _tail(option_package) if option_package else None


def parse_server_option(text: str) -> tuple[str, list[str]]:
    """Read ``--server NAME=COMMAND``: ``"mem=npx -y @modelcontextprotocol/server-memory"``
    -> ``("mem", ["npx", "-y", "@modelcontextprotocol/server-memory"])``.

    NAME is everything before the first ``=``: non-empty, no whitespace. COMMAND is split like a
    POSIX shell splits words (shlex: quotes and backslashes group words); no shell ever runs.

    Raises:
        ValueError: no ``=``, an empty or blank-containing NAME, an empty COMMAND, or
            unbalanced quotes in COMMAND; the message quotes the text.
    """
    name, eq, command = text.partition("=")
    if not eq:
        raise ValueError(f"--server {text!r}: expected NAME=COMMAND, e.g. "
                         "'memory=npx -y @modelcontextprotocol/server-memory'")
    if not name:
        raise ValueError(f"--server {text!r}: the NAME before '=' is empty")
    if any(ch.isspace() for ch in name):
        raise ValueError(f"--server {text!r}: NAME {name!r} contains whitespace")
    try:
        argv = shlex.split(command)
    except ValueError as exc:               # "No closing quotation", "No escaped character"
        raise ValueError(f"--server {text!r}: cannot split the command: {exc}") from None
    if not argv:
        raise ValueError(f"--server {text!r}: the COMMAND after '=' is empty")
    return name, argv


def launch_notes(argv: list[str]) -> tuple[str, ...]:
    """Warnings that follow from how a server is launched: ``docker run`` gets DOCKER_NOTE
    (memory figures cannot include the container). Empty tuple otherwise."""
    if argv and _program(argv[0]) == "docker" and "run" in argv[1:]:
        return (DOCKER_NOTE,)
    return ()


LABEL_CHARS = 40
"""Longest process label; a longer one is cut with an ellipsis."""
_INTERPRETERS = re.compile(r"(node|nodejs|deno|bun|python[0-9.]*|pypy[0-9.]*|ruby|java|perl)$")
_SHELLS = ("sh", "bash", "dash", "zsh")
_VALUED = ("-m", "-c", "-jar", "-cp", "-classpath", "--require", "-r", "--import", "-e")


def process_label(cmdline: list[str], name: str = "") -> str:
    """One short name for any process of a server's tree, by one rule: a package runner and
    the package it runs ("npx @upstash/context7-mcp", "uvx mcp-server-sqlite"); an
    interpreter and what it runs ("node @upstash/context7-mcp" for a script in an npm
    package, "node index.js", "python -m mcp_server_time", "java server.jar", "python3 -c"
    for inline code, "sh -c python3"); else the program's name. At most LABEL_CHARS
    characters (a runner's scoped package that does not fit loses its scope first:
    "npm exec server-everything"); ``name`` (the kernel's 15-character comm) when there is
    no command line."""
    if not cmdline:
        return name or "?"
    if " " in cmdline[0] and not any(cmdline[1:]):  # a title the process set (npm exec's)
        cmdline = cmdline[0].split()
    words = [_program(cmdline[0]), *cmdline[1:]]
    for launcher in _RUNNERS:
        if tuple(words[:len(launcher)]) == launcher:
            package = server_name(cmdline)
            label = f"{' '.join(launcher)} {package}"
            if len(label) > LABEL_CHARS and package.startswith("@") and "/" in package:
                label = f"{' '.join(launcher)} {package.split('/', 1)[1]}"  # the scope goes first
            return _cut(label)
    program = words[0]
    if program in _SHELLS and len(words) > 2 and words[1] == "-c":
        inner = _shell_words(words[2])
        return _cut(f"{program} -c {_program(inner[0]) if inner else ''}".rstrip())
    if _INTERPRETERS.match(program):
        args = iter(words[1:])
        for arg in args:
            if arg in ("-c", "-e", "--eval"):
                return _cut(f"{program} {arg}")
            if arg in ("-m", "-jar"):
                target = next(args, "")
                return _cut(f"{program} {arg} {target}" if arg == "-m"
                            else f"{program} {os.path.basename(target)}")
            if arg in _VALUED:
                next(args, None)
            elif not arg.startswith("-"):
                return _cut(f"{program} {_script(arg)}")
    return _cut(program)


_LAUNCHER_SCRIPTS = {"npx-cli.js": "npx", "npm-cli.js": "npm", "pnpm.cjs": "pnpm",
                     "pnpm.js": "pnpm", "pipx": "pipx", "uvx": "uvx"}
"""Scripts of the package runners as an interpreter runs them ("node .../npx-cli.js")."""


def launcher_of(cmdline: list[str]) -> str | None:
    """The known launcher a command line runs, or None: a package runner of server_name's
    list ("npx", "npm exec", "pnpm dlx", "bunx", "uvx", "uv tool run", "pipx run" ...), also
    through an interpreter running the runner's script ("node .../npx-cli.js -y pkg" and
    "node /usr/bin/npx -y pkg" are npx), or a shell running a command string ("sh -c"). A
    title a process set over its argv (npx shows "npm exec PKG" as one word, then empty ones)
    is read as words."""
    if not cmdline:
        return None
    if " " in cmdline[0] and not any(cmdline[1:]):  # a title the process set (npm exec's)
        cmdline = cmdline[0].split()
    words = [_program(cmdline[0]), *cmdline[1:]]
    script = _program(words[1]) if len(words) > 1 else ""
    if _INTERPRETERS.match(words[0]) and (script in _LAUNCHER_SCRIPTS
                                          or script in {r[0] for r in _RUNNERS}):
        words = [_LAUNCHER_SCRIPTS.get(script, script), *words[2:]]
    for launcher in _RUNNERS:
        if tuple(words[:len(launcher)]) == launcher:
            return " ".join(launcher)
    if words[0] in _SHELLS and len(words) > 2 and words[1] == "-c":
        return f"{words[0]} -c"
    return None


def _shell_words(text: str) -> list[str]:
    """A shell command string's words as the shell reads them (quotes removed), or split on
    blanks when its quotes do not balance."""
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def _script(path: str) -> str:
    """A script as a label names it: the npm package it belongs to, else its file name (also
    for a link in node_modules/.bin, which names a package's bin, not the package)."""
    parts = path.replace("\\", "/").split("/")
    if "node_modules" in parts and parts[-2:-1] != [".bin"]:
        at = len(parts) - 1 - parts[::-1].index("node_modules")
        package = parts[at + 1:at + 3] if parts[at + 1:at + 2] and parts[at + 1].startswith("@") \
            else parts[at + 1:at + 2]
        if package:
            return "/".join(package)
    return parts[-1]


def _cut(text: str) -> str:
    return text if len(text) <= LABEL_CHARS else text[:LABEL_CHARS - 1] + "…"
