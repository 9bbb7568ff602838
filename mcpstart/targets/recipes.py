"""Build recipes: build-recipes/<name>.toml says, as data, how to build, run and count a server."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

LANGUAGES = ("typescript", "python", "go", "rust", "c")
DEPENDENCY_METHODS = ("npm-lock", "python-venv", "go-binary", "cargo-tree")


class RecipeError(ValueError):
    """A recipe that cannot be used; the message names the file and the field."""


@dataclass(frozen=True)
class Toolchain:
    """An external program a build needs: ``name`` and the argv that prints its version."""

    name: str
    version_argv: list[str]


@dataclass(frozen=True)
class Recipe:
    """One server's recipe. Strings in ``steps``, ``build_env``, ``run_*``, ``artifact_*`` and
    ``dependencies`` may hold the placeholders ``{build}`` (the build folder) and ``{src}``
    (its copy of the sources, where the steps run).

    Attributes:
        name: the file stem, which names the server everywhere.
        path: the recipe file.
        source_dir: the server's sources in the repository (``source``, relative to the
            recipe folder's parent).
        sources: globs, relative to ``source_dir``, of the files that are the build's inputs.
        dependencies: ``{"method", "target", "lock"}``; method is one of DEPENDENCY_METHODS.
    """

    name: str
    path: Path
    language: str
    sdk: str
    sdk_version: str
    source_dir: Path
    sources: list[str]
    tool_file: str
    toolchains: list[Toolchain]
    steps: list[list[str]]
    build_env: dict[str, str]
    run_argv: list[str]
    run_cwd: str
    run_env: dict[str, str]
    artifact_include: list[str]
    artifact_exclude: list[str]
    dependencies: dict[str, str]

    def source_files(self) -> list[Path]:
        """The input files the ``sources`` globs match, sorted, relative to ``source_dir``.

        Raises:
            RecipeError: a glob matches no file.
        """
        found: set[Path] = set()
        for pattern in self.sources:
            matches = [p for p in self.source_dir.glob(pattern) if p.is_file()]
            if not matches:
                raise RecipeError(f"{self.path}: sources: {pattern!r} matches no file in "
                                  f"{self.source_dir}")
            found.update(p.relative_to(self.source_dir) for p in matches)
        return sorted(found)


class _Fields:
    """Typed reads of a recipe table that fail with the file and the dotted field name."""

    def __init__(self, path: Path, table: dict, prefix: str = ""):
        self.path, self.table, self.prefix = path, table, prefix

    def _fail(self, key: str, why: str) -> RecipeError:
        return RecipeError(f"{self.path}: field '{self.prefix}{key}' {why}")

    def get(self, key: str, kind: type, default=None, required: bool = True):
        if key not in self.table:
            if required:
                raise self._fail(key, "is missing")
            return default
        value = self.table[key]
        if not isinstance(value, kind):
            raise self._fail(key, f"must be a {kind.__name__}, not {type(value).__name__}")
        return value

    def text(self, key: str, default: str | None = None) -> str:
        value = self.get(key, str, default, required=default is None)
        if not value:
            raise self._fail(key, "is empty")
        return value

    def argv(self, key: str, value=None) -> list[str]:
        value = self.get(key, list) if value is None else value
        if not value or not all(isinstance(s, str) and s for s in value):
            raise self._fail(key, "must be a non-empty list of non-empty strings")
        return list(value)

    def strings(self, key: str, required: bool = True) -> list[str]:
        value = self.get(key, list, [], required)
        if not all(isinstance(s, str) for s in value):
            raise self._fail(key, "must be a list of strings")
        return list(value)

    def env(self, key: str) -> dict[str, str]:
        value = self.get(key, dict, {}, required=False)
        if not all(isinstance(v, str) for v in value.values()):
            raise self._fail(key, "values must be strings")
        return dict(value)

    def sub(self, key: str, required: bool = True) -> "_Fields":
        return _Fields(self.path, self.get(key, dict, {}, required), f"{self.prefix}{key}.")

    def choice(self, key: str, allowed: tuple[str, ...]) -> str:
        value = self.text(key)
        if value not in allowed:
            raise self._fail(key, f"must be one of {', '.join(allowed)}, not {value!r}")
        return value


def load_recipe(path: Path) -> Recipe:
    """Read and check one recipe file.

    Raises:
        RecipeError: unreadable TOML, or a missing, empty or mistyped field (named in the
            message with the file), or a source folder / tool file that does not exist.
    """
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise RecipeError(f"{path}: cannot read recipe: {err}") from err
    top = _Fields(path, data)
    language, sdk, sdk_version = top.choice("language", LANGUAGES), top.text("sdk"), top.text("sdk_version")
    build, run, artifact, deps = (top.sub("build"), top.sub("run"), top.sub("artifact"),
                                  top.sub("dependencies"))
    toolchains = []
    for index, entry in enumerate(top.get("toolchains", list)):
        if not isinstance(entry, dict):
            raise RecipeError(f"{path}: field 'toolchains[{index}]' must be a table")
        fields = _Fields(path, entry, f"toolchains[{index}].")
        toolchains.append(Toolchain(fields.text("name"), fields.argv("version")))
    steps = build.get("steps", list)
    if not steps:
        raise RecipeError(f"{path}: field 'build.steps' must list at least one step")
    source_dir = (path.parent.parent / top.text("source")).resolve()
    if not source_dir.is_dir():
        raise RecipeError(f"{path}: field 'source': folder {source_dir} does not exist")
    tool_file = top.text("tool_file")
    if not (source_dir / tool_file).is_file():
        raise RecipeError(f"{path}: field 'tool_file': {source_dir / tool_file} does not exist")
    sources = top.strings("sources")
    for pattern in sources:
        if Path(pattern).is_absolute() or ".." in Path(pattern).parts:
            raise RecipeError(f"{path}: field 'sources': {pattern!r} must be relative to the "
                              "source folder, without '..'")
    recipe = Recipe(
        name=path.stem,
        path=path,
        language=language,
        sdk=sdk,
        sdk_version=sdk_version,
        source_dir=source_dir,
        sources=sources,
        tool_file=tool_file,
        toolchains=toolchains,
        steps=[build.argv(f"steps[{i}]", step if isinstance(step, list) else [None])
               for i, step in enumerate(steps)],
        build_env=build.env("env"),
        run_argv=run.argv("argv"),
        run_cwd=run.text("cwd", default="{src}"),
        run_env=run.env("env"),
        artifact_include=artifact.strings("include"),
        artifact_exclude=artifact.strings("exclude", required=False),
        dependencies={"method": deps.choice("method", DEPENDENCY_METHODS),
                      "target": deps.text("target"), "lock": deps.text("lock")},
    )
    recipe.source_files()  # every sources glob must match now, not halfway through a build
    return recipe


def load_recipes(folder: Path, names: list[str] | None = None) -> list[Recipe]:
    """Load every ``*.toml`` in ``folder`` (sorted by name), or only ``names``.

    Raises:
        RecipeError: the folder has no recipes, a named recipe does not exist (the message
            lists the known names), or a recipe is invalid.
    """
    folder = Path(folder)
    available = {p.stem: p for p in sorted(folder.glob("*.toml"))}
    if not available:
        raise RecipeError(f"no recipes (*.toml) in {folder}")
    unknown = [n for n in names or [] if n not in available]
    if unknown:
        raise RecipeError(f"no recipe named {', '.join(unknown)} in {folder}; "
                          f"known: {', '.join(available)}")
    return [load_recipe(available[n]) for n in dict.fromkeys(names or available)]
