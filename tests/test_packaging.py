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

from conftest import FAKE, PYTHON, unavailable

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
    shipped = tracked("servers", "build-recipes", "workload-recipes")
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


NO_PLOT = '''
import sys
sys.path.append({tests!r})


class NoPlot:
    """matplotlib absent, as in an install without the plot extra."""

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "matplotlib":
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)


sys.meta_path.insert(0, NoPlot())
import mcpstart
import mcpstart.measure.settings as settings
from conftest import fast
from scripted import Fake, Spawner
from mcpstart.cli import main

print("package", mcpstart.__file__, file=sys.stderr)
from mcpstart.measure import tokens


def no_tokenizer():  # seconds to load, and not what this checks (tests/conftest.py)
    raise tokens.Unavailable("not loaded here")


tokens._encoding = no_tokenizer
settings.BASE = fast(spawner=Spawner({{(): Fake}}, key=lambda command: ()))
for args in (["measure", "-q", "--runs", "1", "--warmup", "0", "--round-trips", "0",
              "--no-attribution", "-o", "m.json", "--", "server"],
             ["report", "m.json"], ["compare", "m.json", "m.json"],
             ["plot", "m.json", "-o", "p.png"]):
    try:
        main(args, prog_name="mcpstart")
    except SystemExit as stop:
        print("exit", args[0], stop.code, file=sys.stderr)
print("matplotlib loaded:", "matplotlib" in sys.modules, file=sys.stderr)
'''


def test_without_the_plot_extra_measure_report_and_compare_work(wheel, tmp_path):
    """`pip install .` without [plot]: the wheel asks for matplotlib only in that extra, and
    the wheel's own mcpstart, in an interpreter to which matplotlib does not exist, measures
    (a scripted server), reports and compares, while plot names the extra. (A real install
    into a fresh venv needs PyPI and about 20 s; the import of an absent module fails the
    same way under this blocker, so the fast tier checks it here.)"""
    metadata = zipfile.ZipFile(wheel).read(
        f"{wheel.name.split('-')[0]}-{wheel.name.split('-')[1]}.dist-info/METADATA").decode()
    wants = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    plotting = [line for line in wants if "matplotlib" in line]
    assert plotting and all("extra == 'plot'" in line or "extra == 'test'" in line
                            for line in plotting), plotting
    assert any("extra == 'plot'" in line for line in plotting)
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    done = subprocess.run([sys.executable, "-c", NO_PLOT.format(tests=str(REPO / "tests"))],
                          cwd=tmp_path, text=True, capture_output=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(site)})
    said = done.stderr.splitlines()
    assert f"package {site / 'mcpstart' / '__init__.py'}" in said, done.stderr
    assert [line for line in said if line.startswith("exit ")] == [
        "exit measure 0", "exit report 0", "exit compare 0", "exit plot 2"], done.stderr
    assert "plot draws with matplotlib, which is not installed: pip install 'mcpstart[plot]'" \
        in done.stderr
    assert "matplotlib loaded: False" in said
    assert "| status " in done.stdout and "No regression." in done.stdout
    assert json.loads((tmp_path / "m.json").read_text())["servers"][0]["handshake_ms"]["n"] == 1
    assert not (tmp_path / "p.png").exists()


@pytest.mark.e2e
@pytest.mark.untimed  # an install, not a timing
def test_pip_install_without_the_plot_extra_measures_reports_and_compares(wheel, tmp_path):
    """The real thing the fast test above stands in for: the wheel pip-installed into a
    fresh venv (its dependencies from PyPI, or pip's cache), without [plot]: matplotlib is
    not there, the installed `mcpstart` measures a server, reports and compares, and `plot`
    names the extra."""
    venv = tmp_path / "venv"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    # pip of this interpreter installs into the venv (--python): no pip of its own to set up
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   env=env)
    python, script = venv / "bin" / "python", venv / "bin" / "mcpstart"
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install",
                           "--no-compile", "--disable-pip-version-check", str(wheel)],
                          capture_output=True, text=True, timeout=600, env=env)
    if done.returncode and any(sign in done.stdout + done.stderr for sign in (
            "NewConnectionError", "Failed to establish", "No matching distribution")):
        unavailable(f"pip cannot reach PyPI for the dependencies: {done.stderr.strip()[-300:]}")
    assert done.returncode == 0, done.stdout + done.stderr
    probe = subprocess.run([str(python), "-c", "import mcpstart; print(mcpstart.__file__)\n"
                            "import matplotlib"], cwd=tmp_path, capture_output=True,
                           text=True, env=env)
    assert probe.stdout.startswith(str(venv)), probe.stdout  # the wheel's copy, not a checkout
    assert "No module named 'matplotlib'" in probe.stderr

    def mcpstart(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(script), *args], cwd=tmp_path, capture_output=True,
                              text=True, timeout=300, env=env)

    measured = mcpstart("measure", "-q", "--runs", "1", "--warmup", "0", "--round-trips", "0",
                        "--no-attribution", "-o", "m.json", "--", *PYTHON, str(FAKE))
    assert measured.returncode == 0, measured.stdout + measured.stderr
    [row] = json.loads((tmp_path / "m.json").read_text())["servers"]
    assert row["status"] == "ok" and row["handshake_ms"]["n"] == 1, row
    reported = mcpstart("report", "m.json")
    assert reported.returncode == 0 and "| status " in reported.stdout, reported.stderr
    compared = mcpstart("compare", "m.json", "m.json")
    assert compared.returncode == 0 and "No regression." in compared.stdout, compared.stderr
    plotted = mcpstart("plot", "m.json", "-o", "p.png")
    assert plotted.returncode == 2, plotted.stdout + plotted.stderr
    assert "pip install 'mcpstart[plot]'" in plotted.stderr
    assert not (tmp_path / "p.png").exists()
