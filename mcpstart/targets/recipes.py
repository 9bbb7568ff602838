"""Build recipes: build-recipes/<name>.toml says, as data, how to build, run and count a server.

Only ``run.argv`` is required. Everything else is optional: without ``[build]`` nothing is
built and the server is spawned as written; without ``[artifact]``, ``[dependencies]`` or
``tool_file`` those footprint figures are not applicable; without ``transport`` the server
speaks stdio (``transport = "http"``: it listens on the port given as ``{port}`` in its
argv, its MCP endpoint at ``run.endpoint``, default /mcp); without ``[versions]`` the server is built only at the SDK version its own lock pins.
Every problem in a recipe is reported in one RecipeError, each naming its dotted field.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from ..endpoint import ENDPOINT, endpoint_path
from ..workload import PACKAGED as PACKAGED_WORKLOADS

DEPENDENCY_METHODS = ("npm-installed", "python-venv", "go-binary", "cargo-tree", "maven",
                      "none")
TRANSPORTS = ("stdio", "http")
PORT = "{port}"
"""The placeholder an HTTP recipe's ``run.argv`` holds for the port the server listens on
(filled in when it is spawned, not by the build)."""
REGISTRIES = ("npm", "pypi", "go", "crates", "maven")
"""Where ``[versions].package`` is published; each names how its releases and their dates
are read (docs/recipes.md, "Other SDK versions")."""
UNDATED_REGISTRIES = ("maven",)
"""Registries that give no release date here, so ``{date}`` cannot be filled in."""
PLACEHOLDERS = ("{build}", "{src}", "{cache}")
RECIPE_FOLDER = "build-recipes"
WORKLOAD_RECIPE_FOLDER = "workload-recipes"
"""The workload servers' recipes (sibling of RECIPE_FOLDER, same format, each with
``workload``): built only when asked for by name or folder, never by a default run."""
WORKLOADS = PACKAGED_WORKLOADS
"""Where the workload files a recipe's ``workload`` names live (``<name>.toml``)."""
PACKAGED = Path(__file__).resolve().parent.parent / "reference"
"""Where a wheel install keeps its copy of build-recipes/, workload-recipes/ and servers/
(siblings, as in the repository, because a recipe's ``source`` is relative to the recipe
folder's parent)."""

_TOP = ("language", "sdk", "sdk_version", "source", "sources", "tool_file", "toolchains",
        "transport", "workload", "build", "run", "artifact", "dependencies", "versions")
_VERSIONS = ("package", "registry", "list", "install_version", "install_path", "workspace",
             "sources")


class RecipeError(ValueError):
    """A recipe that cannot be used; the message names the file and every bad field."""


@dataclass(frozen=True)
class Toolchain:
    """An external program a build needs: ``name`` and the argv that prints its version."""

    name: str
    version_argv: list[str]


@dataclass(frozen=True)
class Versions:
    """A recipe's ``[versions]``: how to build the server at another release of its SDK or
    from a local checkout of it. The steps are argv lists like ``[build].steps`` and run in
    their place (same ``{build}``, ``{src}``, ``[build].env``, run, artifact, dependencies).

    Attributes:
        package: the SDK as its registry names it (npm package, PyPI project, Go module
            path, crate, Maven ``groupId:artifactId``).
        registry: one of REGISTRIES; says how the releases and their dates are read.
        list_argv: the package manager's own command that lists the releases (may hold
            ``{package}``); empty where it has none (cargo).
        install_version: the build at ``{version}``; may use ``{date}``, the release's
            publication time plus one day (ISO 8601 UTC), to resolve the other dependencies
            as of that day. Empty when not given.
        install_path: the build against the checkout at ``{path}``. Empty when not given.
        workspace: the checkout's members (folders relative to ``{path}``, "." for its
            root) that ``install_path`` installs from the checkout; recorded with the result.
        sources: server sources for older SDK releases whose API differs
            (``[[versions.sources]]``: ``below`` a version, ``source`` a folder like the
            recipe's own holding its ``tool_file``, ``sources`` its globs, default the
            recipe's), as (below, folder, globs): a release takes the one with the lowest
            ``below`` it is under, else the recipe's own ``source``.
    """

    package: str
    registry: str
    list_argv: list[str] = field(default_factory=list)
    install_version: list[list[str]] = field(default_factory=list)
    install_path: list[list[str]] = field(default_factory=list)
    workspace: list[str] = field(default_factory=list)
    sources: tuple[tuple[str, Path, tuple[str, ...]], ...] = ()


@dataclass(frozen=True)
class Recipe:
    """One server's recipe. Strings in ``steps``, ``build_env``, ``run_*``, ``artifact_*`` and
    ``dependencies`` may hold the placeholders ``{build}`` (the build folder), ``{src}``
    (its copy of the sources, where the steps run) and ``{cache}`` (the cache folder the
    build folders are in, for dependency caches that recipes share), but only when the
    recipe has a build.

    Attributes:
        name: the file stem, which names the server everywhere.
        path: the recipe file.
        language: any string ("typescript", "python", "go", "rust", "java", "c" for the reference
            set), or None.
        source_dir: the server's sources (``source``, relative to the recipe folder's
            parent), or None.
        sources: globs, relative to ``source_dir``, of the files that are the build's inputs
            (its cache key); required with a build.
        steps: the build's commands; empty when the recipe has no ``[build]``.
        run_cwd: ``run.cwd``; default ``{src}`` with a build, else ``source_dir``, else None
            (mcpstart's own working directory).
        artifact_include: globs of what a user installs; empty without ``[artifact]``.
        dependencies: ``{"method", "target", "lock"}`` (target and lock may be absent);
            method is one of DEPENDENCY_METHODS; empty without ``[dependencies]``.
        transport: one of TRANSPORTS; "stdio" unless the recipe says ``transport = "http"``
            (then ``run_argv`` holds PORT).
        endpoint: an HTTP server's MCP endpoint path (``run.endpoint``; default /mcp).
        versions: ``[versions]``, or None without it.
        workload: the workload file whose tools the server serves (``workload``: a name in
            WORKLOADS, e.g. "benchmark"), or None for a server of the reference set.
        sdk_source: for an SDK variant (targets/variants.py), the ``SdkSource`` it is built
            from (its steps are then ``[versions]``' in place of ``[build]``'s); None for the
            recipe as written.
        broken: why the file cannot be used (a RecipeError's message), for a recipe kept as
            a row of its own (``load_recipes(keep_broken=True)``); None for a usable one.
    """

    name: str
    path: Path
    run_argv: list[str]
    language: str | None = None
    sdk: str | None = None
    sdk_version: str | None = None
    source_dir: Path | None = None
    sources: list[str] = field(default_factory=list)
    tool_file: str | None = None
    toolchains: list[Toolchain] = field(default_factory=list)
    steps: list[list[str]] = field(default_factory=list)
    build_env: dict[str, str] = field(default_factory=dict)
    run_cwd: str | None = None
    run_env: dict[str, str] = field(default_factory=dict)
    artifact_include: list[str] = field(default_factory=list)
    artifact_exclude: list[str] = field(default_factory=list)
    dependencies: dict[str, str] = field(default_factory=dict)
    transport: str = "stdio"
    endpoint: str = ENDPOINT
    versions: Versions | None = None
    workload: str | None = None
    sdk_source: object | None = None
    broken: str | None = None

    @property
    def has_build(self) -> bool:
        """True when the recipe has a ``[build]``: it is built into a cache folder first."""
        return bool(self.steps)

    def source_files(self) -> list[Path]:
        """The input files the ``sources`` globs match, sorted, relative to ``source_dir``.

        Raises:
            RecipeError: a glob matches no file.
        """
        files, unmatched = _match(self.source_dir, self.sources)
        if unmatched:
            raise RecipeError(f"{self.path}: field 'sources' has {unmatched[0]!r}, which "
                              f"matches no file in {self.source_dir}")
        return files


def _match(folder: Path | None, patterns) -> tuple[list[Path], list[str]]:
    """The files the globs match in ``folder`` (sorted, relative) and the globs matching none."""
    found: set[Path] = set()
    unmatched = []
    for pattern in patterns:
        matches = [p for p in folder.glob(pattern) if p.is_file()] if folder else []
        if not matches:
            unmatched.append(pattern)
        found.update(p.relative_to(folder) for p in matches)
    return sorted(found), unmatched


class _Table:
    """Typed reads of one recipe table. A problem is appended to the shared ``errors`` list
    (naming the dotted field) and the read returns None, so all problems are found at once."""

    def __init__(self, data: dict, prefix: str, errors: list[str], known: tuple[str, ...]):
        self.data, self.prefix, self.errors = data, prefix, errors
        for key in data:
            if key not in known:
                self.fail(key, f"is not a recipe field here (known: {', '.join(known)})")

    def fail(self, key: str, why: str) -> None:
        self.errors.append(f"field '{self.prefix}{key}' {why}")

    def get(self, key: str, kind: type, required: bool = False):
        if key not in self.data:
            if required:
                self.fail(key, "is missing")
            return None
        value = self.data[key]
        if not isinstance(value, kind):
            self.fail(key, f"must be a {_KIND_NAMES[kind]}, not {type(value).__name__}")
            return None
        return value

    def text(self, key: str, required: bool = False) -> str | None:
        value = self.get(key, str, required)
        if value == "":
            self.fail(key, "is empty")
            return None
        return value

    def argv(self, key: str, value=None, required: bool = False) -> list[str] | None:
        value = self.get(key, list, required) if value is None else value
        if value is not None and not (value and all(isinstance(s, str) and s for s in value)):
            self.fail(key, "must be a non-empty list of non-empty strings")
            return None
        return value

    def strings(self, key: str, required: bool = False) -> list[str]:
        value = self.get(key, list, required) or []
        if not all(isinstance(s, str) for s in value):
            self.fail(key, "must be a list of strings")
            return []
        return value

    def env(self, key: str) -> dict[str, str]:
        value = self.get(key, dict) or {}
        if not all(isinstance(v, str) for v in value.values()):
            self.fail(key, "values must be strings")
            return {}
        return value

    def table(self, key: str, known: tuple[str, ...], required: bool = False) -> _Table | None:
        value = self.get(key, dict, required)
        return None if value is None else _Table(value, f"{self.prefix}{key}.", self.errors, known)


_KIND_NAMES = {str: "string", list: "list", dict: "table"}


def _steps(table: _Table, key: str, required: bool = False) -> list[list[str]]:
    """``key`` of ``table`` as a list of build steps, each a non-empty argv; [] when absent."""
    listed = table.get(key, list, required)
    if listed == []:
        table.fail(key, "must list at least one step")
    steps = []
    for index, step in enumerate(listed or []):
        step = table.argv(f"{key}[{index}]", step if isinstance(step, list) else [None])
        steps.append(step or [])
    return steps


def _uses(steps: list[list[str]], placeholder: str) -> bool:
    return any(placeholder in arg for step in steps for arg in step)


def _version_sources(table: _Table, root: Path, globs: list[str], tool_file: str | None
                     ) -> tuple[tuple[str, Path, tuple[str, ...]], ...]:
    """``[[versions.sources]]`` checked (Versions.sources): each a table with ``below`` and
    ``source``, a folder under ``root`` in which each of its ``sources`` globs (default
    ``globs``) matches and ``tool_file`` is."""
    found = []
    for index, entry in enumerate(table.get("sources", list) or []):
        if not isinstance(entry, dict):
            table.fail(f"sources[{index}]", "must be a table")
            continue
        fields = _Table(entry, f"{table.prefix}sources[{index}].", table.errors,
                        ("below", "source", "sources"))
        below, source = fields.text("below", required=True), fields.text("source", required=True)
        own = fields.strings("sources") or globs
        folder = (root / source).resolve() if source else None
        if folder and not folder.is_dir():
            fields.fail("source", f"names folder {folder}, which does not exist")
        elif folder:
            missing = _match(folder, own)[1] + (
                [tool_file] if tool_file and not (folder / tool_file).is_file() else [])
            if missing:
                fields.fail("source", f"has no {missing[0]!r} in {folder}")
            elif below and not any(c.isdigit() for c in below):
                fields.fail("below", f"{below!r} is not a version")
            elif below:
                found.append((below, folder, tuple(own)))
    return tuple(found)


def _versions(table: _Table, root: Path, globs: list[str],
              tool_file: str | None) -> Versions | None:
    """The ``[versions]`` table checked: ``package`` and ``registry`` required;
    ``install_version`` uses ``{version}`` and not ``{path}``; ``install_path`` uses
    ``{path}`` and neither ``{version}`` nor ``{date}``; ``{date}`` only where the registry
    dates its releases; ``workspace`` only with ``install_path``, as relative folders
    without '..'; ``sources`` as ``_version_sources`` says. Problems go to the table's error list (load_recipe raises them all);
    None without a package or registry."""
    package, registry = table.text("package", required=True), table.text("registry", required=True)
    if registry and registry not in REGISTRIES:
        table.fail("registry", f"must be one of {', '.join(REGISTRIES)}, not {registry!r}")
    listed = table.argv("list") if "list" in table.data else []
    by_version, by_path = _steps(table, "install_version"), _steps(table, "install_path")
    if by_version and not _uses(by_version, "{version}"):
        table.fail("install_version", "never uses {version}")
    if _uses(by_version, "{path}"):
        table.fail("install_version", "uses {path}, which only install_path has")
    if registry in UNDATED_REGISTRIES and _uses(by_version, "{date}"):
        table.fail("install_version", f"uses {{date}}, but registry {registry!r} gives no "
                                      "release dates")
    if by_path and not _uses(by_path, "{path}"):
        table.fail("install_path", "never uses {path}")
    for placeholder in ("{version}", "{date}"):
        if _uses(by_path, placeholder):
            table.fail("install_path", f"uses {placeholder}, which only install_version has")
    workspace = table.strings("workspace")
    if workspace and "install_path" not in table.data:
        table.fail("workspace", "needs install_path, the steps that install these members")
    for member in workspace:
        if not member or Path(member).is_absolute() or ".." in Path(member).parts:
            table.fail("workspace", f"has {member!r}, which must be a folder relative to the "
                                    "checkout, without '..'")
    if not (package and registry):
        return None
    return Versions(package=package, registry=registry, list_argv=listed or [],
                    install_version=by_version, install_path=by_path, workspace=workspace,
                    sources=_version_sources(table, root, globs, tool_file))


def load_recipe(path: Path) -> Recipe:
    """Read and check one recipe file.

    Raises:
        RecipeError: unreadable TOML; or, all in one message (one line per problem, each
            naming the dotted field): a missing ``run.argv``, an empty, mistyped or unknown
            field, a source folder or tool file that does not exist, a ``sources`` glob that
            matches no file, a ``[build]`` without ``source``/``sources``, a dependency method
            not in DEPENDENCY_METHODS, a ``transport`` not in TRANSPORTS, an HTTP recipe
            whose ``run.argv`` lacks PORT, a ``run.endpoint`` that is not a path or is given
            to a stdio recipe, ``{build}``/``{src}``/``{cache}`` in a recipe without
            ``[build]``, a ``workload`` that names no file in WORKLOADS, or a ``[versions]`` that breaks the rules of ``_versions`` or has no
            ``[build]``.
    """
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise RecipeError(f"{path}: cannot read recipe: {err}") from err
    errors: list[str] = []
    top = _Table(data, "", errors, _TOP)
    build = top.table("build", ("steps", "env"))
    run = top.table("run", ("argv", "cwd", "env", "endpoint"), required=True)
    artifact = top.table("artifact", ("include", "exclude"))
    deps = top.table("dependencies", ("method", "target", "lock"))
    versions_table = top.table("versions", _VERSIONS)

    language, sdk, sdk_version = top.text("language"), top.text("sdk"), top.text("sdk_version")
    source, sources = top.text("source"), top.strings("sources")
    source_dir = None
    if source:
        source_dir = (path.parent.parent / source).resolve()
        if not source_dir.is_dir():
            top.fail("source", f"names folder {source_dir}, which does not exist")
            source_dir = None
    for pattern in sources:
        if Path(pattern).is_absolute() or ".." in Path(pattern).parts:
            top.fail("sources", f"has {pattern!r}, which must be relative to the source "
                                "folder, without '..'")
        elif source_dir and _match(source_dir, [pattern])[1]:
            top.fail("sources", f"has {pattern!r}, which matches no file in {source_dir}")

    tool_file = top.text("tool_file")
    if tool_file and not source:
        top.fail("tool_file", "needs 'source', the folder it is in")
    elif tool_file and source_dir and not (source_dir / tool_file).is_file():
        top.fail("tool_file", f"{source_dir / tool_file} does not exist")

    toolchains = []
    for index, entry in enumerate(top.get("toolchains", list) or []):
        if not isinstance(entry, dict):
            top.fail(f"toolchains[{index}]", "must be a table")
            continue
        fields = _Table(entry, f"toolchains[{index}].", errors, ("name", "version"))
        name, version = fields.text("name", required=True), fields.argv("version", required=True)
        if name and version:
            toolchains.append(Toolchain(name, version))

    steps, build_env = [], build.env("env") if build else {}
    if build:
        steps = _steps(build, "steps", required=True)
        if not source:
            top.fail("source", "is missing: a [build] copies its files from this folder")
        if not sources:
            top.fail("sources", "is missing: a [build] needs the files that key its cache")

    run_argv = run.argv("argv", required=True) if run else None
    transport = top.text("transport") or "stdio"
    if transport not in TRANSPORTS:
        top.fail("transport", f"must be one of {', '.join(TRANSPORTS)}, not {transport!r}")
    elif transport == "http" and run_argv and not any(PORT in a for a in run_argv):
        run.fail("argv", f"holds no {PORT}: an HTTP server is told its port there")
    workload = top.text("workload")
    if workload and not (WORKLOADS / f"{workload}.toml").is_file():
        top.fail("workload", f"names no workload file ({WORKLOADS / workload}.toml does not "
                             "exist)")
    endpoint = run.text("endpoint") if run else None
    if endpoint and transport != "http":
        run.fail("endpoint", "is the path of an HTTP server's MCP endpoint; the recipe is not "
                             'transport = "http"')
    elif endpoint:
        try:
            endpoint_path(endpoint)
        except ValueError as err:
            run.fail("endpoint", str(err))
    run_cwd = run.text("cwd") if run else None
    run_env = run.env("env") if run else {}
    include = artifact.strings("include", required=True) if artifact else []
    exclude = artifact.strings("exclude") if artifact else []

    dependencies = {}
    if deps:
        method = deps.text("method", required=True)
        if method and method not in DEPENDENCY_METHODS:
            deps.fail("method", f"must be one of {', '.join(DEPENDENCY_METHODS)}, not {method!r}")
        target, lock = deps.text("target"), deps.text("lock")
        if method == "none" and target:
            deps.fail("target", "is not used by method 'none' (no dependencies to count)")
        elif method in DEPENDENCY_METHODS and method != "none" and "target" not in deps.data:
            deps.fail("target", f"is missing: method {method!r} counts what it names")
        dependencies = {k: v for k, v in (("method", method), ("target", target),
                                          ("lock", lock)) if v}

    versions = (_versions(versions_table, path.parent.parent, sources, tool_file)
                if versions_table else None)
    if versions_table and "build" not in data:
        top.fail("versions", "needs a [build]: its steps are built in place of [build].steps")

    if "build" not in data:
        texts = [("run.argv", a) for a in run_argv or []] + [("run.cwd", run_cwd)]
        texts += [(f"run.env.{k}", v) for k, v in run_env.items()]
        texts += [("artifact.include", p) for p in include]
        texts += [("artifact.exclude", p) for p in exclude]
        texts += [(f"dependencies.{k}", v) for k, v in dependencies.items() if k != "method"]
        for name, text in texts:
            used = [p for p in PLACEHOLDERS if text and p in text]
            if used:
                errors.append(f"field '{name}' uses {used[0]}, but the recipe has no [build]")
    errors = list(dict.fromkeys(errors))
    if errors:
        raise RecipeError(f"{path}: {errors[0]}" if len(errors) == 1 else
                          f"{path}: {len(errors)} problems:\n  " + "\n  ".join(errors))
    default_cwd = "{src}" if steps else (str(source_dir) if source_dir else None)
    return Recipe(
        name=path.stem,
        path=path,
        run_argv=list(run_argv),
        language=language,
        sdk=sdk,
        sdk_version=sdk_version,
        source_dir=source_dir,
        sources=sources,
        tool_file=tool_file,
        toolchains=toolchains,
        steps=steps,
        build_env=build_env,
        run_cwd=run_cwd or default_cwd,
        run_env=run_env,
        artifact_include=include,
        artifact_exclude=exclude,
        dependencies=dependencies,
        transport=transport,
        endpoint=endpoint or ENDPOINT,
        versions=versions,
        workload=workload,
    )


def load_recipes(folder: Path, names: list[str] | None = None,
                 transport: str | None = "stdio", keep_broken: bool = False) -> list[Recipe]:
    """Load ``names`` from ``folder`` (in that order, whatever their transport), or without
    names every ``*.toml`` there (sorted by name) whose transport is ``transport``: by
    default the stdio servers, the reference set; None: every recipe. With ``keep_broken``
    an invalid recipe does not stop the others: it comes back as a Recipe with ``broken``
    set (``broken_recipe``), which builds as a failure with that cause.

    Raises:
        RecipeError: the folder has no recipes, a named recipe does not exist (the message
            lists the known names), or (without ``keep_broken``) a recipe is invalid.
    """
    folder = Path(folder)
    available = {p.stem: p for p in sorted(folder.glob("*.toml"))}
    if not available:
        raise RecipeError(f"no recipes (*.toml) in {folder}")
    unknown = [n for n in names or [] if n not in available]
    if unknown:
        raise RecipeError(f"no recipe named {', '.join(unknown)} in {folder}; "
                          f"known: {', '.join(available)}")
    loaded = []
    for name in dict.fromkeys(names or available):
        try:
            loaded.append(load_recipe(available[name]))
        except RecipeError as err:
            if not keep_broken:
                raise
            loaded.append(broken_recipe(available[name], str(err)))
    if names or transport is None:
        return loaded
    return [r for r in loaded if r.transport == transport]


def broken_recipe(path: Path, why: str) -> Recipe:
    """A Recipe standing for an invalid file ``path``, ``broken`` saying ``why``; its
    transport is the file's own ``transport`` where the TOML reads and names one of
    TRANSPORTS, else "stdio"."""
    try:
        said = tomllib.loads(path.read_text(encoding="utf-8")).get("transport")
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        said = None
    return Recipe(path.stem, path, [], transport=said if said in TRANSPORTS else "stdio",
                  broken=why)


def find_recipe_folder(option: str | None, cwd: Path | None = None) -> tuple[Path, str]:
    """The recipe folder for this run and one sentence saying which and why: ``option``
    (``--recipes DIR``), else ``./build-recipes`` when the current directory (``cwd``,
    default the process's) has one, else the copy shipped with mcpstart (in a wheel:
    ``mcpstart/reference/build-recipes``; in a source checkout or editable install: the
    checkout's top-level ``build-recipes``).

    Raises:
        RecipeError: ``option`` is not a folder, or no packaged copy exists.
    """
    if option:
        folder = Path(option).expanduser()
        if not folder.is_dir():
            raise RecipeError(f"--recipes {option}: no such folder")
        return folder.resolve(), f"recipes from {folder.resolve()} (--recipes)"
    here = (cwd or Path.cwd()) / RECIPE_FOLDER
    if here.is_dir():
        return here.resolve(), f"recipes from {here.resolve()} (./{RECIPE_FOLDER} in the current directory)"
    for folder, what in ((PACKAGED / RECIPE_FOLDER, "installed with mcpstart"),
                         (PACKAGED.parent.parent / RECIPE_FOLDER, "of the mcpstart checkout")):
        if folder.is_dir():
            return folder, (f"recipes from {folder} (the reference recipes {what}; no "
                            f"./{RECIPE_FOLDER} here and no --recipes)")
    raise RecipeError(f"no recipe folder: no ./{RECIPE_FOLDER} here, no --recipes DIR, and "
                      f"no copy shipped with mcpstart at {PACKAGED / RECIPE_FOLDER}")
