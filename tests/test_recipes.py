from pathlib import Path

import pytest

from mcpstart.targets import recipes
from mcpstart.targets.recipes import (RecipeError, Versions, find_recipe_folder, load_recipe,
                                      load_recipes)

from conftest import toy_recipe, write_recipe

def write_repo(tmp_path: Path, recipe: dict) -> Path:
    return write_recipe(tmp_path, "toy", recipe, {"server.py": "print('x')\n"})


def test_good_recipe_loads_with_defaults(tmp_path):
    recipe = load_recipe(write_repo(tmp_path, toy_recipe()))
    assert recipe.name == "toy"
    assert recipe.source_dir == (tmp_path / "servers" / "toy").resolve()
    assert recipe.run_cwd == "{src}" and recipe.run_env == {} and recipe.artifact_exclude == []
    assert recipe.toolchains[0].version_argv == ["python3", "--version"]
    assert [str(p) for p in recipe.source_files()] == ["server.py"]
    assert recipe.has_build and recipe.steps == [["python3", "-m", "py_compile", "server.py"]]
    assert recipe.versions is None  # a recipe without [versions] still loads


def test_only_run_argv_is_required(tmp_path):
    path = write_recipe(tmp_path, "bare", {"run": {"argv": ["my-server", "--stdio"]}}, {})
    recipe = load_recipe(path)
    assert recipe.run_argv == ["my-server", "--stdio"]
    assert not recipe.has_build and recipe.steps == [] and recipe.sources == []
    assert (recipe.language, recipe.sdk, recipe.sdk_version, recipe.tool_file) == (None,) * 4
    assert recipe.source_dir is None and recipe.run_cwd is None
    assert recipe.artifact_include == [] and recipe.dependencies == {} and recipe.toolchains == []


def test_without_build_the_run_starts_in_the_source_folder(tmp_path):
    path = write_recipe(tmp_path, "mine", {"language": "ruby", "source": "servers/mine",
                                           "tool_file": "server.rb",
                                           "run": {"argv": ["ruby", "server.rb"]}},
                        {"server.rb": "puts 1\n"})
    recipe = load_recipe(path)
    assert recipe.language == "ruby"  # any string: the reference names are not a closed list
    assert recipe.run_cwd == str((tmp_path / "servers" / "mine").resolve())


def test_none_dependency_method_needs_no_target_or_lock(tmp_path):
    recipe = toy_recipe()
    recipe["dependencies"] = {"method": "none"}
    assert load_recipe(write_repo(tmp_path, recipe)).dependencies == {"method": "none"}
    recipe["dependencies"]["target"] = "{build}/x"
    with pytest.raises(RecipeError, match="field 'dependencies.target' is not used by method 'none'"):
        load_recipe(write_repo(tmp_path, recipe))


def test_every_problem_is_reported_in_one_message(tmp_path):
    recipe = {"language": "", "sdk": 3, "sdk_verison": "1.0", "tool_file": "x.py",
              "build": {"steps": [["make"], "make install"]},
              "run": {"argv": ["{build}/server"], "cwd": 7},
              "artifact": {"exclude": ["x"]},
              "dependencies": {"method": "guess"}}
    path = write_recipe(tmp_path, "bad", recipe, {})
    with pytest.raises(RecipeError) as err:
        load_recipe(path)
    lines = str(err.value).splitlines()
    assert lines[0] == f"{path}: 10 problems:"
    assert [line.strip() for line in lines[1:]] == [
        "field 'sdk_verison' is not a recipe field here (known: language, sdk, sdk_version, "
        "source, sources, tool_file, toolchains, transport, workload, build, run, artifact, "
        "dependencies, versions)",
        "field 'language' is empty",
        "field 'sdk' must be a string, not int",
        "field 'tool_file' needs 'source', the folder it is in",
        "field 'build.steps[1]' must be a non-empty list of non-empty strings",
        "field 'source' is missing: a [build] copies its files from this folder",
        "field 'sources' is missing: a [build] needs the files that key its cache",
        "field 'run.cwd' must be a string, not int",
        "field 'artifact.include' is missing",
        "field 'dependencies.method' must be one of npm-installed, python-venv, go-binary, "
        "cargo-tree, maven, none, not 'guess'",
    ]


def test_placeholders_need_a_build(tmp_path):
    recipe = {"run": {"argv": ["{src}/server"], "env": {"HOME": "{build}/home"}},
              "artifact": {"include": ["/opt/server"]},
              "dependencies": {"method": "go-binary", "target": "{build}/server"}}
    with pytest.raises(RecipeError) as err:
        load_recipe(write_recipe(tmp_path, "p", recipe, {}))
    assert str(err.value).splitlines()[1:] == [
        "  field 'run.argv' uses {src}, but the recipe has no [build]",
        "  field 'run.env.HOME' uses {build}, but the recipe has no [build]",
        "  field 'dependencies.target' uses {build}, but the recipe has no [build]",
    ]


def _set(path: str, value):
    """An edit that sets (or, with value None, removes) the dotted field ``path``."""
    def edit(recipe: dict) -> None:
        *parents, key = path.split(".")
        table = recipe
        for part in parents:
            table = table[int(part)] if part.isdigit() else table[part]
        if value is None:
            table.pop(key)
        else:
            table[key] = value
    return edit


@pytest.mark.parametrize("edit, message", [
    (_set("run.argv", None), "field 'run.argv' is missing"),
    (_set("build.steps", "make"), "field 'build.steps' must be a list, not str"),
    (_set("build.steps", []), "field 'build.steps' must list at least one step"),
    (_set("run.argv", []), "field 'run.argv' must be a non-empty list"),
    (_set("language", ["go"]), "field 'language' must be a string, not list"),
    (_set("dependencies.method", "guess"), "field 'dependencies.method' must be one of"),
    (_set("dependencies.target", None), "field 'dependencies.target' is missing: method "
                                        "'python-venv' counts what it names"),
    (_set("toolchains.0.version", "python3"), "field 'toolchains[0].version' must be a list"),
    (_set("toolchains.0.name", None), "field 'toolchains[0].name' is missing"),
    (_set("tool_file", "nope.py"), "field 'tool_file'"),
    (_set("run", None), "field 'run' is missing"),
    (_set("transport", "websocket"), "field 'transport' must be one of stdio, http, not "
                                     "'websocket'"),
    (_set("transport", "http"), "field 'run.argv' holds no {port}: an HTTP server is told "
                                "its port there"),
    (_set("workload", "nope"), "field 'workload' names no workload file"),
    (_set("run.endpoint", "/rpc"), "field 'run.endpoint' is the path of an HTTP server's MCP "
                                   'endpoint; the recipe is not transport = "http"'),
])
def test_bad_recipe_names_file_and_field(tmp_path, edit, message):
    recipe = toy_recipe()
    edit(recipe)
    path = write_repo(tmp_path, recipe)
    with pytest.raises(RecipeError) as err:
        load_recipe(path)
    assert str(path) in str(err.value)
    assert message in str(err.value)


def test_missing_source_folder_is_named(tmp_path):
    path = write_repo(tmp_path, toy_recipe())
    path.write_text(path.read_text().replace('"servers/toy"', '"servers/gone"'))
    with pytest.raises(RecipeError) as err:
        load_recipe(path)
    assert str(err.value) == (f"{path}: field 'source' names folder "
                              f"{(tmp_path / 'servers' / 'gone').resolve()}, which does not exist")


def test_unreadable_toml_names_the_file(tmp_path):
    path = write_repo(tmp_path, toy_recipe())
    path.write_text(path.read_text() + "\n[[[")
    with pytest.raises(RecipeError, match=f"{path}: cannot read recipe"):
        load_recipe(path)


def test_unknown_name_lists_known(tmp_path):
    write_repo(tmp_path, toy_recipe())
    with pytest.raises(RecipeError, match="no recipe named rust .* known: toy"):
        load_recipes(tmp_path / "build-recipes", ["rust"])


@pytest.mark.parametrize("sources, message", [
    (["*.rs"], r"field 'sources' has '\*.rs', which matches no file"),
    (["/etc/hostname"], r"field 'sources' has '/etc/hostname', which must be relative"),
    (["../x.py"], r"field 'sources' has '../x.py', which must be relative"),
])
def test_sources_are_checked_when_loading(tmp_path, sources, message):
    recipe = toy_recipe()
    recipe["sources"] = sources
    with pytest.raises(RecipeError, match=message):
        load_recipe(write_repo(tmp_path, recipe))


def test_transport_is_stdio_unless_the_recipe_says_http(tmp_path):
    assert load_recipe(write_repo(tmp_path, toy_recipe())).transport == "stdio"
    recipe = toy_recipe()
    recipe["transport"] = "http"
    recipe["run"]["argv"] = ["python3", "server.py", "--port", "{port}"]
    loaded = load_recipe(write_recipe(tmp_path, "toy-http", recipe, {}))
    assert loaded.transport == "http" and loaded.endpoint == "/mcp"
    assert loaded.run_argv == ["python3", "server.py", "--port", "{port}"]  # filled at spawn
    recipe["run"]["endpoint"] = "/rpc?v=1"
    assert load_recipe(write_recipe(tmp_path, "toy-http", recipe, {})).endpoint == "/rpc?v=1"
    recipe["run"]["endpoint"] = "rpc"
    with pytest.raises(RecipeError, match="field 'run.endpoint' 'rpc' is not a path: it must "
                                          "start with /"):
        load_recipe(write_recipe(tmp_path, "toy-http", recipe, {}))


def test_without_names_only_stdio_recipes_load_unless_asked(tmp_path):
    write_repo(tmp_path, toy_recipe())
    recipe = toy_recipe()
    recipe["transport"] = "http"
    recipe["run"]["argv"] = ["python3", "server.py", "--port={port}"]
    write_recipe(tmp_path, "toy-http", recipe, {})
    folder = tmp_path / "build-recipes"
    assert [r.name for r in load_recipes(folder)] == ["toy"]
    assert [r.name for r in load_recipes(folder, transport="http")] == ["toy-http"]
    assert [r.name for r in load_recipes(folder, transport=None)] == ["toy-http", "toy"]  # by file name
    assert [r.name for r in load_recipes(folder, ["toy-http", "toy"])] == ["toy-http", "toy"]


def test_a_name_asked_twice_is_measured_once(tmp_path):
    write_repo(tmp_path, toy_recipe())
    assert len(load_recipes(tmp_path / "build-recipes", ["toy", "toy"])) == 1


def test_reference_recipes_are_valid():
    folder = Path(__file__).parent.parent / "build-recipes"
    loaded = {r.name: r for r in load_recipes(folder)}
    assert {"go", "python", "rust", "typescript"} <= set(loaded)
    assert all(r.has_build and r.artifact_include and r.dependencies for r in loaded.values())
    assert loaded["typescript"].dependencies["method"] == "npm-installed"


def test_reference_http_recipes_are_built_by_name_only():
    folder = Path(__file__).parent.parent / "build-recipes"
    assert [r.name for r in load_recipes(folder)] == ["c", "go", "java", "python", "rust",
                                                      "typescript"]
    http = load_recipes(folder, transport="http")
    assert [r.name for r in http] == ["c-http", "go-http", "python-http", "rust-http",
                                      "typescript-http"]
    for recipe in http:
        stdio = load_recipe(folder / f"{recipe.name.removesuffix('-http')}.toml")
        assert recipe.run_argv[-2:] == ["--port", "{port}"]
        assert recipe.source_dir.name == recipe.name and recipe.tool_file == stdio.tool_file
        assert (recipe.sdk, recipe.sdk_version, recipe.dependencies["method"]) == \
            (stdio.sdk, stdio.sdk_version, stdio.dependencies["method"])


def test_workload_recipes_serve_the_reference_sdk_versions():
    folder = Path(__file__).parent.parent / recipes.WORKLOAD_RECIPE_FOLDER
    workloads = load_recipes(folder, transport=None)
    assert len(workloads) == 15
    assert {r.workload for r in workloads} == {"benchmark", "search"}
    reference = {r.name: r for r in load_recipes(folder.parent / "build-recipes", transport=None)}
    assert not {r.workload for r in reference.values()} - {None}
    for recipe in workloads:
        stdio = load_recipe(folder / f"{recipe.name.removesuffix('-http')}.toml")
        assert recipe.source_dir == stdio.source_dir  # one program serves both transports
        assert recipe.transport == ("http" if recipe.name.endswith("-http") else "stdio")
        assert (recipe.sdk, recipe.sdk_version) == (reference[recipe.language].sdk,
                                                    reference[recipe.language].sdk_version)


VERSIONS = {
    "package": "toy-sdk", "registry": "pypi",
    "list": ["python3", "-m", "pip", "index", "versions", "--pre", "{package}"],
    "install_version": [["python3", "-m", "pip", "install", "--uploaded-prior-to", "{date}",
                         "{package}=={version}"]],
    "install_path": [["python3", "-m", "pip", "install", "{path}/src/types", "{path}"]],
    "workspace": ["src/types", "."],
}


def with_versions(**changes) -> dict:
    """The toy recipe with a [versions] table; a change of None removes that key."""
    recipe = toy_recipe()
    recipe["versions"] = {k: v for k, v in {**VERSIONS, **changes}.items() if v is not None}
    return recipe


def test_versions_table_loads_into_a_dataclass(tmp_path):
    recipe = load_recipe(write_repo(tmp_path, with_versions()))
    assert recipe.versions == Versions(
        package="toy-sdk", registry="pypi",
        list_argv=["python3", "-m", "pip", "index", "versions", "--pre", "{package}"],
        install_version=[["python3", "-m", "pip", "install", "--uploaded-prior-to", "{date}",
                          "{package}=={version}"]],
        install_path=[["python3", "-m", "pip", "install", "{path}/src/types", "{path}"]],
        workspace=["src/types", "."])
    assert recipe.steps == [["python3", "-m", "py_compile", "server.py"]]  # [build] unchanged


def test_versions_needs_only_package_and_registry(tmp_path):
    recipe = load_recipe(write_repo(tmp_path, with_versions(
        list=None, install_version=None, install_path=None, workspace=None)))
    assert recipe.versions == Versions(package="toy-sdk", registry="pypi")
    assert recipe.versions.install_version == [] and recipe.versions.list_argv == []


@pytest.mark.parametrize("changes, message", [
    ({"package": None}, "field 'versions.package' is missing"),
    ({"registry": "conda"}, "field 'versions.registry' must be one of npm, pypi, go, crates, "
                            "maven, not 'conda'"),
    ({"pin": []}, "field 'versions.pin' is not a recipe field here (known: package, registry, "
                  "list, install_version, install_path, workspace, sources)"),
    ({"sources": [{"below": "2.0", "source": "servers/none"}]},
     "field 'versions.sources[0].source' names folder"),
    ({"sources": [{"below": "two", "source": "servers/toy"}]},
     "field 'versions.sources[0].below' 'two' is not a version"),
    ({"sources": [{"source": "servers/toy"}]}, "field 'versions.sources[0].below' is missing"),
    ({"sources": ["servers/toy"]}, "field 'versions.sources[0]' must be a table"),
    ({"list": []}, "field 'versions.list' must be a non-empty list of non-empty strings"),
    ({"install_version": []}, "field 'versions.install_version' must list at least one step"),
    ({"install_version": [["pip", "install", "toy-sdk"]]},
     "field 'versions.install_version' never uses {version}"),
    ({"install_version": [["pip", "install", "{path}", "toy=={version}"]]},
     "field 'versions.install_version' uses {path}, which only install_path has"),
    ({"registry": "maven"}, "field 'versions.install_version' uses {date}, but registry "
                            "'maven' gives no release dates"),
    ({"install_path": [["pip", "install", "."]]}, "field 'versions.install_path' never uses {path}"),
    ({"install_path": [["pip", "install", "{path}", "toy=={version}"]]},
     "field 'versions.install_path' uses {version}, which only install_version has"),
    ({"install_path": [["cp", "-r", "{path}", "x"], ["pip", "--uploaded-prior-to", "{date}"]]},
     "field 'versions.install_path' uses {date}, which only install_version has"),
    ({"install_path": [["make"], "make install"]},
     "field 'versions.install_path[1]' must be a non-empty list of non-empty strings"),
    ({"install_path": None}, "field 'versions.workspace' needs install_path"),
    ({"workspace": ["../types"]}, "field 'versions.workspace' has '../types', which must be "
                                  "a folder relative to the checkout"),
    ({"workspace": ["/src/types"]}, "field 'versions.workspace' has '/src/types'"),
])
def test_bad_versions_table_names_the_field(tmp_path, changes, message):
    with pytest.raises(RecipeError) as err:
        load_recipe(write_repo(tmp_path, with_versions(**changes)))
    assert message in str(err.value)


def test_versions_needs_a_build(tmp_path):
    path = write_recipe(tmp_path, "bare", {"run": {"argv": ["toy-server"]},
                                           "versions": {"package": "toy", "registry": "npm"}}, {})
    with pytest.raises(RecipeError) as err:
        load_recipe(path)
    assert str(err.value) == (f"{path}: field 'versions' needs a [build]: its steps are built "
                              "in place of [build].steps")


def test_reference_recipes_say_how_to_pin_their_sdk():
    loaded = {r.name: r for r in load_recipes(Path(__file__).parent.parent / "build-recipes")}
    expected = {"typescript": ("@modelcontextprotocol/server", "npm"), "python": ("mcp", "pypi"),
                "go": ("github.com/modelcontextprotocol/go-sdk", "go"), "rust": ("rmcp", "crates"),
                "java": ("io.modelcontextprotocol.sdk:mcp", "maven")}
    for name, (package, registry) in expected.items():
        versions = loaded[name].versions
        assert (versions.package, versions.registry) == (package, registry)
        assert versions.package == loaded[name].sdk  # the same SDK the recipe's sdk names
        assert versions.install_version and versions.install_path and versions.workspace
    assert loaded["c"].versions is None
    assert loaded["python"].versions.workspace == ["src/mcp-types", "."]
    assert loaded["typescript"].versions.workspace == ["packages/core", "packages/server"]
    root = Path(__file__).parent.parent
    assert loaded["python"].versions.sources == (("2.0.0", root / "servers" / "python-v1",
                                                  ("server.py",)),)  # mcp 1.x: FastMCP


def test_recipe_folder_option_then_current_directory_then_packaged(tmp_path, monkeypatch):
    mine = tmp_path / "mine"
    mine.mkdir()
    assert find_recipe_folder(str(mine), cwd=tmp_path) == (mine, f"recipes from {mine} (--recipes)")
    with pytest.raises(RecipeError, match="--recipes .*/nope: no such folder"):
        find_recipe_folder(str(tmp_path / "nope"))

    (tmp_path / "build-recipes").mkdir()
    folder, why = find_recipe_folder(None, cwd=tmp_path)
    assert folder == tmp_path / "build-recipes"
    assert why.endswith("(./build-recipes in the current directory)")

    checkout = Path(__file__).resolve().parent.parent / "build-recipes"
    folder, why = find_recipe_folder(None, cwd=mine)  # no ./build-recipes there
    assert folder == checkout  # tests run from a checkout: the package's own sibling folder
    assert "the reference recipes of the mcpstart checkout" in why

    packaged = tmp_path / "site" / "mcpstart" / "reference"
    (packaged / "build-recipes").mkdir(parents=True)
    monkeypatch.setattr(recipes, "PACKAGED", packaged)  # as a wheel install lays it out
    folder, why = find_recipe_folder(None, cwd=mine)
    assert folder == packaged / "build-recipes" and "installed with mcpstart" in why

    monkeypatch.setattr(recipes, "PACKAGED", tmp_path / "empty" / "a" / "reference")
    with pytest.raises(RecipeError, match="no recipe folder: no ./build-recipes here"):
        find_recipe_folder(None, cwd=mine)
