from pathlib import Path

import pytest

from mcpstart.targets.recipes import RecipeError, load_recipe, load_recipes

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
    (_set("sdk", None), "field 'sdk' is missing"),
    (_set("build.steps", "make"), "field 'build.steps' must be a list, not str"),
    (_set("run.argv", []), "field 'run.argv' must be a non-empty list"),
    (_set("language", "cobol"), "field 'language' must be one of"),
    (_set("dependencies.method", "guess"), "field 'dependencies.method' must be one of"),
    (_set("toolchains.0.version", "python3"), "field 'toolchains[0].version' must be a list"),
    (_set("tool_file", "nope.py"), "field 'tool_file'"),
    (_set("run", None), "field 'run' is missing"),
])
def test_bad_recipe_names_file_and_field(tmp_path, edit, message):
    recipe = toy_recipe()
    edit(recipe)
    path = write_repo(tmp_path, recipe)
    with pytest.raises(RecipeError) as err:
        load_recipe(path)
    assert str(path) in str(err.value)
    assert message in str(err.value)


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
    (["*.rs"], r"sources: '\*.rs' matches no file"),
    (["/etc/hostname"], r"'/etc/hostname' must be relative"),
    (["../x.py"], r"'../x.py' must be relative"),
])
def test_sources_are_checked_when_loading(tmp_path, sources, message):
    recipe = toy_recipe()
    recipe["sources"] = sources
    with pytest.raises(RecipeError, match=message):
        load_recipe(write_repo(tmp_path, recipe))


def test_a_name_asked_twice_is_measured_once(tmp_path):
    write_repo(tmp_path, toy_recipe())
    assert len(load_recipes(tmp_path / "build-recipes", ["toy", "toy"])) == 1


def test_reference_recipes_are_valid():
    folder = Path(__file__).parent.parent / "build-recipes"
    names = [r.name for r in load_recipes(folder)]
    assert names == ["go", "python", "rust", "typescript"]
