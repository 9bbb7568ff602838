"""The wheel: `pip install .` must give a mcpstart that finds its reference recipes and server
sources from any folder, and must not ship build outputs left in a checkout."""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import unavailable

REPO = Path(__file__).resolve().parent.parent
REFERENCE = "mcpstart/reference/"
BUILD_OUTPUTS = {  # what builds and runs leave in a checkout
    "servers/typescript/node_modules/zod/index.js": "module.exports = {}\n",
    "servers/typescript/dist/server.js": "console.log(1)\n",
    "servers/rust/target/release/reverse-text": "ELF",
    "servers/python/__pycache__/server.cpython-311.pyc": "pyc",
    "servers/python/.venv/bin/python": "venv",
    "mcpstart/__pycache__/cli.cpython-311.pyc": "pyc",
}


def tracked(*folders: str) -> set[str]:
    """The files git tracks under ``folders`` in this checkout."""
    done = subprocess.run(["git", "-C", str(REPO), "ls-files", "--", *folders],
                          capture_output=True, text=True)
    if done.returncode:
        unavailable(f"not a git checkout: {done.stderr.strip()}")
    return set(done.stdout.split())


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """A wheel built with pip from a copy of the checkout's tracked files plus build outputs
    (and without .gitignore, so the exclusions tested are pyproject.toml's own)."""
    tmp = tmp_path_factory.mktemp("wheel")
    copy = tmp / "repo"
    for rel in tracked("."):
        if rel != ".gitignore" and (REPO / rel).is_file():
            (copy / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / rel, copy / rel)
    for rel, text in BUILD_OUTPUTS.items():
        (copy / rel).parent.mkdir(parents=True, exist_ok=True)
        (copy / rel).write_text(text)
    # the build backend installed (the test extra has it) builds in place: an isolated build
    # would first install it into a fresh environment, which takes most of the time
    isolation = [] if importlib.util.find_spec("hatchling") is None else ["--no-build-isolation"]
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", str(copy), "--no-deps",
                           *isolation, "--disable-pip-version-check", "-w", str(tmp / "dist")],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    [built] = (tmp / "dist").glob("mcpstart-*.whl")
    return built


def test_wheel_ships_package_recipes_and_server_sources_only(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    reference = {n.removeprefix(REFERENCE) for n in names if n.startswith(REFERENCE)}
    shipped = tracked("servers", "build-recipes")
    assert "servers/python/server.py" in shipped and "build-recipes/go.toml" in shipped
    assert reference == shipped  # every recipe and server source, and no build output
    package = {n for n in names if n.startswith("mcpstart/") and not n.startswith(REFERENCE)}
    assert package == tracked("mcpstart")  # every subpackage, no __pycache__
    assert {"mcpstart/targets/recipes.py", "mcpstart/transports/__init__.py",
            "mcpstart/measure/footprint.py", "mcpstart/views/__init__.py",
            "mcpstart/results.schema.json"} <= package


def test_installed_wheel_finds_its_recipes_from_any_folder(wheel, tmp_path):
    site, elsewhere = tmp_path / "site", tmp_path / "elsewhere"
    zipfile.ZipFile(wheel).extractall(site)  # a pure-Python wheel installs by unpacking
    elsewhere.mkdir()
    probe = ("from mcpstart.targets.recipes import find_recipe_folder, load_recipes\n"
             "folder, why = find_recipe_folder(None)\n"
             "recipes = load_recipes(folder, transport=None)\n"
             "print(folder); print(why)\n"
             "for r in recipes: print(r.name, r.source_dir)\n")
    done = subprocess.run([sys.executable, "-S", "-c", probe], cwd=elsewhere, text=True,
                          capture_output=True, env={**os.environ, "PYTHONPATH": str(site)})
    assert done.returncode == 0, done.stderr
    folder, why, *rows = done.stdout.splitlines()
    assert folder == str(site / REFERENCE / "build-recipes")
    assert "the reference recipes installed with mcpstart" in why
    names = [Path(p).stem for p in sorted(tracked("build-recipes"))]  # in file-name order
    assert rows == [f"{name} {site / REFERENCE / 'servers' / name}" for name in names]


def test_installed_wheel_checks_results_files_against_its_schema(wheel, tmp_path):
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    bad = tmp_path / "bad.json"
    data = json.loads((REPO / "tests" / "fixtures" / "v0_2_0" / "reference.json").read_text())
    data["servers"][0]["memory"]["idle_rss_bytes"] = "big"
    bad.write_text(json.dumps(data))
    probe = ("import sys, mcpstart.results as r\n"
             "print(r.__file__)\n"
             f"r.load({str(REPO / 'tests' / 'fixtures' / 'v0_2_0' / 'reference.json')!r})\n"
             f"r.load({str(bad)!r})\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, text=True,
                          capture_output=True, env={**os.environ, "PYTHONPATH": str(site)})
    assert done.stdout.strip() == str(site / "mcpstart" / "results.py")  # the wheel's copy
    assert "servers[0].memory.idle_rss_bytes: 'big' is not of type 'integer', 'null'" in \
        done.stderr
