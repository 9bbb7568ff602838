"""Editor configs: the stdio servers a client's MCP config starts, as Targets, and the entries
that cannot be measured, as Skipped with the reason.

Per client (research-findings.md §7-§8 and the sources named in each reader):

- Claude Desktop ``claude_desktop_config.json``: ``{"mcpServers": {NAME: {"command", "args",
  "env"}}}``; no substitution; inherits the environment.
- Claude Code ``.mcp.json`` and ``~/.claude.json`` (user servers plus the local-scope servers
  of the workspace's entry under ``projects``): mcpServers; ``${VAR}``, ``${VAR:-default}``;
  cwd is the workspace (the project folder Claude Code runs in).
- Cursor ``.cursor/mcp.json``: mcpServers; ``${env:VAR}``, ``${workspaceFolder}``,
  ``${userHome}`` ...; ``envFile`` then ``env``.
- Windsurf ``~/.codeium/windsurf/mcp_config.json`` (newer ``~/.config/devin/``): mcpServers,
  remote entries use ``serverUrl``; ``${env:VAR}``, ``${file:PATH}``.
- VS Code ``.vscode/mcp.json`` / the profile's ``mcp.json``: ``{"servers", "inputs"}`` (also
  settings.json's ``{"mcp": {"servers"}}`` and, with client="vscode", the portable mcpServers
  ``.mcp.json``); VS Code's variables; envFile, env (null removes, PATH appends); cwd
  defaults to the workspace; ``~`` expanded.
- Zed ``settings.json``: ``context_servers``, flat ``{"command": "x", "args", "env"}`` or old
  ``{"command": {"path", "args", "env"}}``; ``enabled``; ``remote``; no substitution.
- Codex ``config.toml``: ``[mcp_servers.NAME]`` command, args, env, env_vars, cwd, enabled,
  startup_timeout_sec / startup_timeout_ms; a reduced environment; no substitution.

JSON files are read as JSON with comments and trailing commas (json5); TOML with tomllib.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from .cmdline import Skipped, Target, launch_notes

CLIENTS = ("claude-desktop", "claude-code", "cursor", "vscode", "windsurf", "zed", "codex")
CLIENT_NAMES = {"claude-desktop": "Claude Desktop", "claude-code": "Claude Code",
                "cursor": "Cursor", "vscode": "VS Code", "windsurf": "Windsurf", "zed": "Zed",
                "codex": "Codex"}

# Codex starts a stdio server with env_clear() and only these variables (when set), plus
# env_vars, plus env: openai/codex codex-rs/rmcp-client/src/utils.rs @08e91659.
CODEX_DEFAULT_ENV = ("HOME", "LOGNAME", "PATH", "SHELL", "USER", "__CF_USER_TEXT_ENCODING",
                     "LANG", "LC_ALL", "TERM", "TMPDIR", "TZ")
CODEX_DEFAULT_ENV_WINDOWS = (
    "PATH", "PATHEXT", "SHELL", "COMSPEC", "SYSTEMROOT", "SYSTEMDRIVE", "USERNAME",
    "USERDOMAIN", "USERPROFILE", "HOMEDRIVE", "HOMEPATH", "PROGRAMFILES", "PROGRAMFILES(X86)",
    "PROGRAMW6432", "PROGRAMDATA", "LOCALAPPDATA", "APPDATA", "TEMP", "TMP", "TMPDIR",
    "POWERSHELL", "PWSH")

_REMOTE_TYPES = ("http", "sse", "streamable-http", "streamableHttp", "streamable_http")
_PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")


class ConfigError(ValueError):
    """A config file that cannot be used at all; the message names the file."""


@dataclass(frozen=True)
class ConfigServers:
    """What one config file holds.

    Attributes:
        client: one of CLIENTS (a file no client's name matches, with ``mcpServers``, is read
            as "claude-desktop" and ``notes`` says so).
        path: the config file.
        targets: the servers to measure, in the file's order, named by the config's keys.
        skipped: the entries not measured, each with its reason.
        notes: remarks about the file as a whole.
    """

    client: str
    path: Path
    targets: list[Target]
    skipped: list[Skipped]
    notes: tuple[str, ...]


class _Skip(Exception):
    """An entry that cannot be measured; the message is the reason."""


class _Malformed(_Skip):
    """An entry that is wrong in itself (a field of the wrong type)."""


def load_config(path: str | os.PathLike, client: str | None = None,
                workspace: str | os.PathLike | None = None,
                environ: Mapping[str, str] | None = None,
                inputs: Mapping[str, str] | None = None,
                remote: bool = False) -> ConfigServers:
    """Read an editor's MCP config and say which servers it would start and how.

    Args:
        path: the config file.
        client: one of CLIENTS; None detects it from the file's name and content.
        workspace: the project folder for ``${workspaceFolder}``, relative ``envFile``/``cwd``
            and Claude Code's working directory. Default: the folder holding the config's
            ``.vscode``/``.cursor`` folder, else the config's folder; for ``~/.claude.json``
            the current directory (Claude Code started here).
        environ: the environment placeholders and Codex's env_vars read; default os.environ.
        inputs: values for VS Code's ``${input:ID}`` (``--input ID=VALUE``), masked as
            secrets.
        remote: read remote entries (``url``/``serverUrl``, with their ``headers``) as
            Streamable HTTP targets instead of skipping them (``--remote``); they are never
            put under load unless they are on a loopback address.

    Entries are skipped (never measured, never guessed) when they are disabled, remote
    (url/serverUrl, type http/sse/streamable-http), have no command (Zed extension servers),
    need what only a person supplies (an ``${input:..}`` not given in ``inputs``,
    ``${command:..}``, an envFile that cannot be read), name an environment variable that is
    not set and has no default where the client drops such a server (Claude Code), or are
    malformed (e.g. args not a list of strings). An unset ``${env:VAR}`` of VS Code, Cursor or
    Windsurf becomes "", as those clients start the server with an empty value (noted).

    Raises:
        ConfigError: unknown client; the file cannot be read or parsed; the client's server
            table is not an object; no client can be told from the file.
    """
    path = Path(path).expanduser()
    if client is not None and client not in CLIENTS:
        raise ConfigError(f"{path}: unknown client {client!r}; one of: {', '.join(CLIENTS)}")
    data = _read(path, as_toml=client == "codex" or (client is None and path.suffix == ".toml"))
    notes: list[str] = []
    label = CLIENT_NAMES.get(client)
    if client is None:
        client = _detect(path, data)
        label = CLIENT_NAMES.get(client, "Claude Desktop-style")
        if client is None:
            client = "claude-desktop"
            notes.append(f"{path.name} is not a file name a known client uses; read as Claude "
                         "Desktop's format (mcpServers, no variable substitution)")
    origin = f"{label} config {path.absolute()}"
    if workspace is not None:
        ws = Path(workspace).expanduser().absolute()
    elif path.name == ".claude.json":
        ws = Path.cwd()
    else:
        ws = _default_workspace(path.absolute())
    context = _Context(client, origin, ws, os.environ if environ is None else environ,
                       _inputs(data), dict(inputs or {}))
    targets, skipped = [], []
    for name, entry in _server_table(path, client, data, ws, notes).items():
        try:
            remote_url = _remote_url(entry) if remote else None
            targets.append(_remote_target(context, name, entry, remote_url) if remote_url
                           else _READERS[client](context, name, entry))
        except _Skip as why:
            skipped.append(Skipped(name, str(why), origin, isinstance(why, _Malformed)))
    return ConfigServers(client, path, targets, skipped, tuple(notes))


def _read(path: Path, as_toml: bool) -> dict:
    """The parsed file; ConfigError if it cannot be read, parsed, or is not an object."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    try:
        if as_toml:
            data = tomllib.loads(text)
        else:
            import json5                         # heavy import, only when a config is read
            data = json5.loads(text)
    except ValueError as exc:                    # TOMLDecodeError and json5's errors
        kind = "TOML" if as_toml else "JSON"
        raise ConfigError(f"{path}: not valid {kind}: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected an object at the top level, got "
                          f"{type(data).__name__}")
    return data


def _detect(path: Path, data: dict) -> str | None:
    """The client, from the file's name and folder, else from its keys; None for a file with
    ``mcpServers`` whose name no client uses. ConfigError when nothing fits."""
    name, parent = path.name, path.absolute().parent
    if "mcp_servers" in data or path.suffix == ".toml":
        return "codex"
    by_name = {"claude_desktop_config.json": "claude-desktop", ".mcp.json": "claude-code",
               ".claude.json": "claude-code"}
    if name in by_name:
        return by_name[name]
    if name == "mcp.json" and parent.name in (".cursor", ".vscode"):
        return "cursor" if parent.name == ".cursor" else "vscode"
    if name == "mcp_config.json" and (parent.name == "devin" or (
            parent.name.startswith("windsurf") and parent.parent.name == ".codeium")):
        return "windsurf"
    if "context_servers" in data:
        return "zed"
    if "servers" in data or isinstance(data.get("mcp"), dict):
        return "vscode"
    if "mcpServers" in data:
        return None
    raise ConfigError(f"{path}: cannot tell which client this is: no mcpServers, servers, "
                      "context_servers or mcp_servers; pass the client")


def _default_workspace(path: Path) -> Path:
    """The folder holding the config's .vscode/.cursor folder, else the config's folder."""
    parent = path.parent
    return parent.parent if parent.name in (".vscode", ".cursor") else parent


def _server_table(path: Path, client: str, data: dict, ws: Path, notes: list[str]) -> dict:
    """The client's {name: entry} table (empty when the key is absent)."""
    holder = data
    if client == "codex":
        key = "mcp_servers"
    elif client == "zed":
        key = "context_servers"
    elif client == "vscode":          # mcp.json; settings.json's "mcp"; the portable .mcp.json
        holder = data["mcp"] if "servers" not in data and isinstance(data.get("mcp"), dict) \
            else data
        key = "servers" if "servers" in holder or "mcpServers" not in holder else "mcpServers"
    else:
        key = "mcpServers"
    if key not in holder:
        notes.append(f"no {key} in the file: no servers")
    table = holder.get(key, {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: {key} must be an object, got {type(table).__name__}")
    if path.name == ".claude.json":                 # user scope + the project's local scope
        projects = data.get("projects")
        project = projects.get(str(ws)) if isinstance(projects, dict) else None
        if isinstance(project, dict):
            local = project.get("mcpServers")
            if isinstance(local, dict) and local:
                notes.append(f"also read the local-scope servers of project {ws}")
                table = {**table, **local}
            off = project.get("disabledMcpServers") or []
            table = {name: {**entry, "disabled": True} if name in off and isinstance(entry, dict)
                     else entry for name, entry in table.items()}
    return table


def _inputs(data: dict) -> dict[str, str]:
    """VS Code's inputs: {id: description}, to name what a person would be asked for."""
    holder = data.get("mcp") if isinstance(data.get("mcp"), dict) else data
    found = {}
    for item in holder.get("inputs", []) if isinstance(holder.get("inputs"), list) else []:
        if isinstance(item, dict) and isinstance(item.get("id"), str):
            found[item["id"]] = str(item.get("description", ""))
    return found


@dataclass
class _Context:
    """What every entry of one file is read with."""

    client: str
    origin: str
    workspace: Path
    environ: Mapping[str, str]
    inputs: dict[str, str]
    given: dict[str, str]
    """Values for ``${input:ID}`` given on the command line (``--input``)."""

    @property
    def home(self) -> str:
        return self.environ.get("HOME") or str(Path.home())


class _Resolver:
    """Expands the ``${...}`` placeholders the client expands, and records every value that
    came from the environment (or a file) in ``secrets``.

    - Claude Code: ``${VAR}``, ``${VAR:-default}`` (default when VAR is not set).
    - VS Code, Cursor: ``${env:VAR}``, ``${workspaceFolder}``, ``${workspaceFolderBasename}``,
      ``${userHome}``, ``${pathSeparator}``, ``${/}``; ``${input:..}``/``${command:..}`` need a
      person; any other ``${...}`` is not resolved by mcpstart.
    - Windsurf: ``${env:VAR}``, ``${file:PATH}`` (the file's trimmed text); other text is left
      as it is, as Windsurf leaves it.
    - Claude Desktop, Zed, Codex: no substitution.
    An unset variable: Claude Code drops the server (the entry is skipped); VS Code, Cursor
    and Windsurf start it with an empty string, and so does mcpstart, noting it.
    """

    def __init__(self, context: _Context):
        self.context = context
        self.secrets: set[str] = set()
        self.notes: list[str] = []

    def __call__(self, text: str) -> str:
        if self.context.client not in ("claude-code", "vscode", "cursor", "windsurf"):
            return text
        return _PLACEHOLDER.sub(self._one, text)

    def _env(self, name: str, placeholder: str) -> str:
        value = self.context.environ.get(name)
        if value is None and self.context.client == "claude-code":
            raise _Skip(f"needs environment variable {name} ({placeholder}), which is not set")
        if value is None:
            self.notes.append(f"{placeholder} is not set here: "
                              f"{CLIENT_NAMES[self.context.client]} starts the server with an "
                              "empty value, and so does mcpstart")
            return ""
        self.secrets.add(value)
        return value

    def _one(self, match: re.Match) -> str:
        inner, whole = match.group(1), match.group(0)
        client, ws = self.context.client, self.context.workspace
        if client == "claude-code":
            name, has_default, default = inner.partition(":-")
            if has_default and self.context.environ.get(name) is None:
                return default
            return self._env(name, whole)
        kind, colon, arg = inner.partition(":")
        if colon and kind == "env":
            return self._env(arg, whole)
        if client == "windsurf":
            if colon and kind == "file":
                try:
                    value = Path(arg).read_text(encoding="utf-8").strip()
                except (OSError, UnicodeDecodeError) as exc:
                    raise _Skip(f"needs the file {arg} ({whole}), which cannot be read: "
                                f"{exc.strerror or exc}") from None
                self.secrets.add(value)
                return value
            return whole
        if colon and kind == "input":
            if arg in self.context.given:
                self.secrets.add(self.context.given[arg])
                return self.context.given[arg]
            asked = self.context.inputs.get(arg)
            raise _Skip(f"needs {whole}, a value a person types in when "
                        f"{CLIENT_NAMES[client]} starts the server"
                        + (f" ({asked})" if asked else "") + f"; give it with --input {arg}=VALUE")
        if colon and kind == "command":
            raise _Skip(f"needs {whole}, the result of an editor command "
                        f"{CLIENT_NAMES[client]} runs")
        known = {"workspaceFolder": str(ws), "workspaceFolderBasename": ws.name,
                 "userHome": self.context.home, "pathSeparator": os.sep, "/": os.sep}
        if inner in known:
            return known[inner]
        raise _Skip(f"uses {whole}, which mcpstart does not resolve")


def _strings(value, what: str) -> list[str]:
    """A list of strings, or _Skip naming the field."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _Malformed(f"malformed entry: {what} must be a list of strings")
    return value


def _env_value(value, key: str) -> str:
    """A JSON env value as the spawning client passes it: strings as they are, numbers as
    JavaScript's String() writes them."""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(int(value)) if float(value).is_integer() else repr(value)
    raise _Malformed(f"malformed entry: env {key} must be a string")


def _untildify(text: str, home: str) -> str:
    """VS Code's untildify: a leading ``~`` before ``/`` or the end is the home folder."""
    return home + text[1:] if text == "~" or text.startswith(("~/", "~\\")) else text


def _check_launchable(entry) -> None:
    """_Skip for entries no client starts here: not an object, disabled, remote."""
    if not isinstance(entry, dict):
        raise _Malformed("malformed entry: not an object")
    if entry.get("disabled") is True or entry.get("enabled") is False:
        raise _Skip("disabled in the config")
    kind = entry.get("type") or entry.get("transport")
    if kind in _REMOTE_TYPES or (kind is None and ("url" in entry or "serverUrl" in entry)
                                 and "command" not in entry):
        raise _Skip(f"remote server ({kind or 'url'}): measured over HTTP with --remote")
    if kind not in (None, "stdio"):
        raise _Skip(f"transport type {kind!r} is not stdio")


def _remote_url(entry) -> str | None:
    """The URL of a remote entry (any client's ``url``/``serverUrl`` without a command), else
    None."""
    if not isinstance(entry, dict) or "command" in entry:
        return None
    url = entry.get("url") or entry.get("serverUrl")
    return url if isinstance(url, str) else None


def _remote_target(context: _Context, name: str, entry: dict, url: str) -> Target:
    """A remote entry as a Streamable HTTP target: its URL and ``headers`` resolved as the
    client resolves its other fields, every header value a secret; load only on loopback."""
    from ..endpoint import Endpoint, is_loopback

    if entry.get("disabled") is True or entry.get("enabled") is False:
        raise _Skip("disabled in the config")
    if entry.get("type") == "sse" or entry.get("transport") == "sse":
        raise _Skip("remote server (sse): the deprecated HTTP+SSE transport, which mcpstart "
                    "does not speak")
    resolve = _Resolver(context)
    headers = entry.get("headers") or {}
    if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
        raise _Malformed("malformed entry: headers must be an object of strings")
    headers = {str(k): resolve(v) for k, v in headers.items()}
    url = resolve(url)
    try:
        host = Endpoint.parse(url).host
    except ValueError as err:
        raise _Skip(f"remote server: {err}") from None
    return Target(name=name, argv=[], url=url, headers=headers, origin=context.origin,
                  secrets=_secrets(resolve.secrets, headers.values()),
                  load_allowed=is_loopback(host), notes=tuple(resolve.notes))


def _read_json_entry(context: _Context, name: str, entry) -> Target:
    """An mcpServers entry (Claude Desktop, Claude Code, Cursor, Windsurf) or a VS Code
    servers entry. VS Code also: envFile, then env over it (null removes a variable, PATH is
    appended to the inherited PATH), ``~`` expanded in command/args/cwd, cwd defaulting to
    the workspace (microsoft/vscode extHostMcpNode.ts). Cursor: envFile then env."""
    client = context.client
    _check_launchable(entry)
    command = entry.get("command")
    if not command:
        raise _Skip("no command")
    if not isinstance(command, str):
        raise _Malformed("malformed entry: command must be a string")
    args = _strings(entry.get("args", []), "args")
    raw_env = entry.get("env") or {}
    if not isinstance(raw_env, dict):
        raise _Malformed("malformed entry: env must be an object")
    resolve = _Resolver(context)
    home = context.home
    argv = [resolve(command)] + [resolve(a) for a in args]
    if client == "vscode":
        argv = [_untildify(a, home) for a in argv]
    env: dict[str, str] = {}
    removed: set[str] = set()
    if client in ("vscode", "cursor") and entry.get("envFile") is not None:
        if not isinstance(entry["envFile"], str):
            raise _Malformed("malformed entry: envFile must be a string")
        env.update(_env_file(context, resolve(entry["envFile"])))
    for key, value in raw_env.items():
        if value is None and client == "vscode":
            env.pop(key, None)
            removed.add(key)
            continue
        value = resolve(_env_value(value, key))
        if client == "vscode" and key.upper() == "PATH":
            current = env.get(key, context.environ.get(key))
            value = f"{current}{os.pathsep}{value}" if current else value
        env[key] = value
    cwd = None
    if client == "vscode":
        raw_cwd = entry.get("cwd")
        cwd_path = Path(_untildify(resolve(raw_cwd), home)) if isinstance(raw_cwd, str) \
            else context.workspace
        cwd = str(cwd_path if cwd_path.is_absolute() else context.workspace / cwd_path)
    elif client == "claude-code":
        cwd = str(context.workspace)
    base_env = None
    if removed:
        base_env = {k: v for k, v in context.environ.items() if k not in removed}
    return Target(name=name, argv=argv, cwd=cwd, env=env, base_env=base_env,
                  secrets=_secrets(resolve.secrets, env.values()), origin=context.origin,
                  notes=launch_notes(argv) + tuple(dict.fromkeys(resolve.notes)))


def _env_file(context: _Context, file: str) -> dict[str, str]:
    """KEY=VALUE lines of an envFile (relative to the workspace): blank lines and ``#``
    comments ignored, an ``export`` prefix allowed, one pair of surrounding quotes removed,
    ``\\n`` in double quotes a newline. _Skip when the file cannot be read."""
    path = context.workspace / file
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise _Skip(f"needs envFile {path}, which cannot be read: {exc.strerror or exc}") \
            from None
    values = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.removeprefix("export ").partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            quote, value = value[0], value[1:-1]
            if quote == '"':
                value = value.replace("\\n", "\n")
        values[key.strip()] = value
    return values


def _read_zed_entry(context: _Context, name: str, entry) -> Target:
    """A Zed context_servers entry: flat ``{"command": str, "args", "env"}`` or old
    ``{"command": {"path", "args", "env"}}``; ``source`` is ignored (zed-industries/zed
    settings_content/src/project.rs and migrations m_2025_06_16/m_2025_06_27)."""
    _check_launchable(entry)
    if entry.get("remote") is True:
        raise _Skip("remote: true: Zed starts it on the remote project's host")
    command = entry.get("command")
    if isinstance(command, dict):            # old shape
        program, args, env = command.get("path"), command.get("args", []), command.get("env")
    else:
        program, args, env = command, entry.get("args", []), entry.get("env")
    if program is None:
        if entry.get("source") == "extension" or "settings" in entry:
            raise _Skip("no command: a Zed extension server (its extension supplies the "
                        "command)")
        raise _Skip("no command")
    if not isinstance(program, str) or not program:
        raise _Malformed("malformed entry: command must be a non-empty string")
    env = env or {}
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise _Malformed("malformed entry: env must be an object of strings")
    argv = [program] + _strings(args, "args")
    return Target(name=name, argv=argv, env=dict(env), secrets=_secrets((), env.values()),
                  origin=context.origin, notes=launch_notes(argv))


def _read_codex_entry(context: _Context, name: str, entry) -> Target:
    """A Codex ``[mcp_servers.NAME]`` table (openai/codex codex-rs/config/src/mcp_types.rs
    @00b17c26). The server gets exactly Codex's reduced environment: CODEX_DEFAULT_ENV (the
    Windows list on Windows) and the env_vars names that are set, then ``env``; limit_s is
    startup_timeout_sec, else startup_timeout_ms / 1000."""
    if not isinstance(entry, dict):
        raise _Malformed("malformed entry: not a table")
    if entry.get("enabled") is False:
        raise _Skip("disabled in the config")
    command, url = entry.get("command"), entry.get("url")
    if command is not None and url is not None:
        raise _Skip("sets both command and url, which Codex rejects")
    if url is not None:
        raise _Skip("remote server (url): measured over HTTP with --remote")
    if not command:
        raise _Skip("no command")
    if not isinstance(command, str):
        raise _Malformed("malformed entry: command must be a string")
    argv = [command] + _strings(entry.get("args", []), "args")
    env = entry.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise _Malformed("malformed entry: env must be a table of strings")
    names = []
    if not isinstance(entry.get("env_vars", []), list):
        raise _Malformed("malformed entry: env_vars must be a list")
    for item in entry.get("env_vars", []):
        var = item.get("name") if isinstance(item, dict) else item
        if not isinstance(var, str):
            raise _Malformed("malformed entry: env_vars must hold names or {name, source} tables")
        if isinstance(item, dict) and item.get("source") == "remote":
            raise _Skip(f"env_vars entry {var} uses source remote, which requires remote MCP "
                        "stdio")
        names.append(var)
    defaults = CODEX_DEFAULT_ENV_WINDOWS if os.name == "nt" else CODEX_DEFAULT_ENV
    base_env = {k: context.environ[k] for k in (*defaults, *names) if k in context.environ}
    forwarded = [context.environ[k] for k in names if k in context.environ]
    cwd = entry.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise _Malformed("malformed entry: cwd must be a string")
    notes = [f"Codex passes a reduced environment: {', '.join(base_env) or 'no variable'} "
             f"from mcpstart's environment{' plus the config env' if env else ''}, "
             "nothing else"]
    missing = [k for k in names if k not in context.environ]
    if missing:
        notes.append(f"env_vars {', '.join(missing)} not set here, so Codex would not pass "
                     f"{'them' if len(missing) > 1 else 'it'}")
    return Target(name=name, argv=argv, cwd=cwd, env=dict(env), base_env=base_env,
                  secrets=_secrets(forwarded, env.values()),
                  limit_s=_codex_limit(entry), origin=context.origin,
                  notes=tuple(notes) + launch_notes(argv))


def _codex_limit(entry: dict) -> float | None:
    """startup_timeout_sec (seconds) wins over startup_timeout_ms, as in Codex."""
    for key, scale in (("startup_timeout_sec", 1), ("startup_timeout_ms", 1000)):
        value = entry.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise _Malformed(f"malformed entry: {key} must be a number >= 0")
        return value / scale
    return None


def _secrets(substituted, env_values) -> frozenset[str]:
    """Every substituted value and every env value, empty strings left out."""
    return frozenset(v for v in (*substituted, *env_values) if v)


_READERS = {"claude-desktop": _read_json_entry, "claude-code": _read_json_entry,
            "cursor": _read_json_entry, "vscode": _read_json_entry,
            "windsurf": _read_json_entry, "zed": _read_zed_entry, "codex": _read_codex_entry}
