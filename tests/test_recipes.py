from pathlib import Path

import pytest

from mcpstart.recipes import RecipeError, load_recipe, load_recipes

GOOD = '''
language = "python"
sdk = "fake"
sdk_version = "0"
source = "servers/toy"
sources = ["*.py"]
tool_file = "tool.py"

[[toolchains]]
name = "python3"
version = ["python3", "--version"]

[build]
steps = [["python3", "-c", "pass"]]

[run]
argv = ["python3", "{src}/tool.py"]

[artifact]
include = ["{src}/tool.py"]

[dependencies]
method = "python-venv"
target = "{build}/venv"
lock = "{src}/tool.py"
'''


def write_repo(tmp_path: Path, recipe: str, name: str = "toy") -> Path:
    (tmp_path / "servers" / "toy").mkdir(parents=True, exist_ok=True)
    (tmp_path / "servers" / "toy" / "tool.py").write_text("print('x')\n")
    (tmp_path / "build-recipes").mkdir(exist_ok=True)
    path = tmp_path / "build-recipes" / f"{name}.toml"
    path.write_text(recipe)
    return path


def test_good_recipe_loads_with_defaults(tmp_path):
    recipe = load_recipe(write_repo(tmp_path, GOOD))
    assert recipe.name == "toy"
    assert recipe.source_dir == (tmp_path / "servers" / "toy").resolve()
    assert recipe.run_cwd == "{src}" and recipe.run_env == {} and recipe.artifact_exclude == []
    assert recipe.toolchains[0].version_argv == ["python3", "--version"]
    assert [str(p) for p in recipe.source_files()] == ["tool.py"]


@pytest.mark.parametrize("edit, message", [
    (lambda s: s.replace('sdk = "fake"\n', ""), "field 'sdk' is missing"),
    (lambda s: s.replace('steps = [["python3", "-c", "pass"]]', 'steps = "make"'),
     "field 'build.steps' must be a list, not str"),
    (lambda s: s.replace('argv = ["python3", "{src}/tool.py"]', "argv = []"),
     "field 'run.argv' must be a non-empty list"),
    (lambda s: s.replace('language = "python"', 'language = "cobol"'),
     "field 'language' must be one of"),
    (lambda s: s.replace('method = "python-venv"', 'method = "guess"'),
     "field 'dependencies.method' must be one of"),
    (lambda s: s.replace('version = ["python3", "--version"]', 'version = "python3"'),
     "field 'toolchains[0].version' must be a list"),
    (lambda s: s.replace('tool_file = "tool.py"', 'tool_file = "nope.py"'),
     "field 'tool_file'"),
    (lambda s: s.replace("[run]", "[runn]"), "field 'run' is missing"),
    (lambda s: s + "\n[[[", "cannot read recipe"),
])
def test_bad_recipe_names_file_and_field(tmp_path, edit, message):
    path = write_repo(tmp_path, edit(GOOD))
    with pytest.raises(RecipeError) as err:
        load_recipe(path)
    assert str(path) in str(err.value)
    assert message in str(err.value)


def test_unknown_name_lists_known(tmp_path):
    write_repo(tmp_path, GOOD)
    with pytest.raises(RecipeError, match="no recipe named rust .* known: toy"):
        load_recipes(tmp_path / "build-recipes", ["rust"])


@pytest.mark.parametrize("sources, message", [
    ('["*.rs"]', r"sources: '\*.rs' matches no file"),
    ('["/etc/hostname"]', r"'/etc/hostname' must be relative"),
    ('["../x.py"]', r"'../x.py' must be relative"),
])
def test_sources_are_checked_when_loading(tmp_path, sources, message):
    with pytest.raises(RecipeError, match=message):
        load_recipe(write_repo(tmp_path, GOOD.replace('["*.py"]', sources)))


def test_a_name_asked_twice_is_measured_once(tmp_path):
    write_repo(tmp_path, GOOD)
    assert len(load_recipes(tmp_path / "build-recipes", ["toy", "toy"])) == 1


def test_reference_recipes_are_valid():
    folder = Path(__file__).parent.parent / "build-recipes"
    names = [r.name for r in load_recipes(folder)]
    assert names == ["go", "python", "rust", "typescript"]
