"""SDK variants (--sdk) on a toy recipe whose "SDK" is a start-up delay: variants named and
built apart, a local checkout's state and staleness, a failed variant a row of its own, and
compare between two variants of one run. No network: the registry listing is replaced."""

import json
import re
import subprocess
import sys
from dataclasses import replace
from datetime import datetime, timezone

import pytest
from click.testing import CliRunner

from mcpstart.cli import main
from mcpstart.targets import releases, variants
from mcpstart.targets.build import build_key
from mcpstart.targets.recipes import RecipeError, load_recipe
from mcpstart.targets.releases import Release

from conftest import FAKE, PYTHON, toy_recipe, write_recipe

SERVER = f"""import pathlib, runpy, sys
delay = (pathlib.Path(__file__).parent / "delay.txt").read_text().strip()
sys.argv = [{str(FAKE)!r}, "--slow-start", delay]
runpy.run_path({str(FAKE)!r}, run_name="__main__")
"""
# a release's "SDK" is the delay it starts with: 2.0.1 is 300 ms slower (beyond the spread of
# a Python start beside the other test workers, so the verdict is the delay's; 60 ms was not),
# 9.9.9 does not build
PICK = ("import sys; v = '{version}'; sys.exit('no such release: ' + v) if v == '9.9.9' "
        "else open('delay.txt', 'w').write('0.3' if v == '2.0.1' else '0')")


def toy(tmp_path):
    recipe = toy_recipe()
    recipe.update(sdk_version="1.0.0", sources=["server.py", "delay.txt"])
    recipe["build"] = {"steps": [[sys.executable, "-c", "open('delay.txt', 'w').write('0')"]]}
    recipe["run"] = {"argv": [*PYTHON, "{src}/server.py"]}
    recipe["dependencies"] = {"method": "none", "lock": "{src}/delay.txt"}
    recipe["versions"] = {
        "package": "toy-sdk", "registry": "pypi", "list": ["pip", "index", "versions", "{package}"],
        "install_version": [[sys.executable, "-c", PICK]],
        "install_path": [["cp", "{path}/delay.txt", "delay.txt"]], "workspace": ["."]}
    return write_recipe(tmp_path, "toy", recipe, {"server.py": SERVER, "delay.txt": "0"})


@pytest.fixture
def registry(monkeypatch):
    """The toy SDK's releases, dated, as the registry would list them."""
    listed = [Release(v, datetime(2026, 1, day, tzinfo=timezone.utc), yanked=v == "2.0.2")
              for day, v in enumerate(["0.9.0", "1.0.0", "2.0.0", "2.0.1", "2.0.2", "2.1.0rc1"], 1)]
    monkeypatch.setattr(releases, "releases", lambda *a: listed)
    monkeypatch.setattr(releases, "release",
                        lambda package, registry, version: next(r for r in listed
                                                                if r.version == version))


def test_specs_name_their_variants(tmp_path, registry):
    recipe = load_recipe(toy(tmp_path))
    found, notes = variants.variants_of(recipe, ["2.0.1,2.0.0", "1.0.0", "latest"])
    # latest is 2.0.1 (2.0.2 is yanked); the default's version named outright is built too
    assert [r.name for r in found] == ["toy@1.0.0", "toy@2.0.0", "toy@2.0.1"]
    assert notes == ["--sdk python=1.0.0 is the default version: built from pypi as "
                     "toy@1.0.0, beside toy (the committed lock)"]
    assert found[0].sdk_source == variants.SdkSource("registry", "toy-sdk", "1.0.0")
    assert found[2].steps == [[sys.executable, "-c", PICK.replace("{version}", "2.0.1")]]
    assert found[2].sdk_version == "2.0.1" and found[2].sdk_source.kind == "registry"
    ranged, notes = variants.variants_of(recipe, ["0.9.0..2.1.0rc1"])
    assert [r.name for r in ranged] == ["toy@0.9.0", "toy@2.0.0", "toy@2.0.1"]
    assert notes == ["--sdk python=1.0.0 is the default version: measured as toy"]
    with_pre, _ = variants.variants_of(recipe, ["2.0.0..2.1.0rc1"], pre=True)
    assert [r.name for r in with_pre] == ["toy@2.0.0", "toy@2.0.1", "toy@2.1.0rc1"]
    keys = {build_key(r, {}) for r in [recipe, *found]}
    assert len(keys) == 4  # each variant builds in a folder of its own
    with pytest.raises(variants.VariantError, match="lists no release of toy-sdk from 3 to 4"):
        variants.variants_of(recipe, ["3..4"])


def test_an_older_api_takes_the_sources_of_its_range(tmp_path):
    path = toy(tmp_path)
    old = tmp_path / "servers" / "toy-v1"
    old.mkdir()
    (old / "server.py").write_text("# the 1.x API\n")
    (old / "delay.txt").write_text("0")
    text = path.read_text() + ('\n[[versions.sources]]\nbelow = "2.0.0"\n'
                               'source = "servers/toy-v1"\n')
    path.write_text(text)
    recipe = load_recipe(path)
    v1, v2 = variants.variants_of(recipe, ["1.5.0", "2.0.0"])[0]
    assert (v1.source_dir, v2.source_dir) == (old, recipe.source_dir)
    assert build_key(v1, {}) != build_key(replace(v1, source_dir=recipe.source_dir), {})
    (old / "delay.txt").unlink()
    with pytest.raises(RecipeError, match=r"sources\[0\]\.source' has no 'delay.txt' in"):
        load_recipe(path)


def test_a_date_fills_the_steps_that_ask_for_it(tmp_path, registry):
    recipe = load_recipe(toy(tmp_path))
    table = recipe.versions
    dated = recipe.__class__(**{**recipe.__dict__, "versions": table.__class__(
        **{**table.__dict__, "install_version": [["echo", "{package}=={version}", "{date}"]]})})
    [variant], _ = variants.variants_of(dated, ["2.0.0"])
    assert variant.steps == [["echo", "toy-sdk==2.0.0", "2026-01-04T00:00:00Z"]]  # its day + 1
    assert variant.sdk_source.record()["date"] == "2026-01-04T00:00:00Z"


def git(folder, *args):
    subprocess.run(["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@t",
                    *args], check=True, capture_output=True)


def test_a_local_checkout_is_recorded_and_goes_stale_when_a_file_changes(tmp_path):
    recipe = load_recipe(toy(tmp_path))
    checkout = tmp_path / "toy-sdk"
    checkout.mkdir()
    (checkout / "delay.txt").write_text("0")
    git(checkout, "init", "-q")
    git(checkout, "add", ".")
    git(checkout, "commit", "-qm", "one")
    [local], _ = variants.variants_of(recipe, [str(checkout)])
    head = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], text=True,
                          capture_output=True, check=True).stdout.strip()
    assert local.name == "toy@local" and local.steps == [["cp", f"{checkout}/delay.txt",
                                                          "delay.txt"]]
    assert local.sdk_source.record() == {
        "kind": "path", "package": "toy-sdk", "version": None, "date": None,
        "path": str(checkout), "commit": head, "dirty": False, "workspace": ["."]}
    (checkout / "delay.txt").write_text("0.5")  # an edit: stale, and dirty
    [edited], _ = variants.variants_of(recipe, [str(checkout)])
    assert edited.sdk_source.dirty is True
    assert build_key(edited, {}) != build_key(local, {})
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "delay.txt").write_text("0")
    two, _ = variants.variants_of(recipe, [str(checkout), str(plain)])
    assert [r.name for r in two] == ["toy@local-toy-sdk", "toy@local-plain"]
    assert (two[1].sdk_source.commit, two[1].sdk_source.dirty) == (None, None)
    before = two[1].sdk_source.fingerprint
    (plain / "new.txt").write_text("x")  # a folder that is no checkout counts every file
    assert variants.variants_of(recipe, [str(plain)])[0][0].sdk_source.fingerprint != before
    with pytest.raises(variants.VariantError, match="not a folder"):
        variants.variants_of(recipe, [str(tmp_path / "missing")])


def measure(tmp_path, *args):
    out = tmp_path / "out.json"
    result = CliRunner().invoke(main, ["measure", "--recipes", str(tmp_path / "build-recipes"),
                                       "--cache-dir", str(tmp_path / "cache"), "--round-trips",
                                       "0", "--payload-bytes", "1000", "-o", str(out), *args])
    return result, (json.loads(out.read_text()) if out.exists() else None)


@pytest.mark.e2e  # a real timing: compare's verdict on a live 300 ms difference
def test_variants_measured_in_one_run_and_compared_within_it(tmp_path):
    """toy@2.0.1 starts 300 ms later than toy@2.0.0: compare of the two variants exits 1;
    the default and toy@2.0.0, the same code built twice, exit 0. A release that does not
    build is a failed row with its log's tail; the others go on."""
    toy(tmp_path)
    result, data = measure(tmp_path, "--sdk", "python=2.0.0,2.0.1,9.9.9", "--runs", "8",
                           "--warmup", "1", "--order", "interleave", "--seed", "3",
                           "--no-attribution")  # where a start goes is not its subject
    assert result.exit_code == 1, result.output  # the 9.9.9 row failed
    rows = {s["name"]: s for s in data["servers"]}
    assert list(rows) == ["toy", "toy@2.0.0", "toy@2.0.1", "toy@9.9.9"]
    broken = rows["toy@9.9.9"]
    assert broken["status"] == "failed" and "no such release: 9.9.9" in broken["reason"]
    assert broken["sdk_source"]["version"] == "9.9.9"
    assert all(rows[n]["status"] == "ok" for n in ("toy", "toy@2.0.0", "toy@2.0.1"))
    # the toy's "lock" is delay.txt, which 2.0.1's build rewrites and 2.0.0's leaves as committed
    assert rows["toy@2.0.1"]["sdk_source"]["lock_sha256"] != rows["toy"]["sdk_source"]["lock_sha256"]
    assert rows["toy@2.0.0"]["sdk_source"]["lock_sha256"] is None
    assert "footprint.lock_count" in rows["toy@2.0.0"]["not_measured"]
    assert rows["toy"]["sdk_source"]["kind"] == "default"
    rounds = [r["server"] for r in data["run_sequence"] if r["series"] == "handshake"]
    assert rounds[:3] != rounds[3:6] or rounds[3:6] != rounds[6:9]  # interleaved, shuffled
    slower = CliRunner().invoke(main, ["compare", str(tmp_path / "out.json"), "--old-variant",
                                       "toy@2.0.0", "--new-variant", "toy@2.0.1"])
    assert slower.exit_code == 1, slower.output
    assert "| toy@2.0.0 -> toy@2.0.1 | handshake_ms" in slower.output
    assert "regression" in slower.output and "floor" not in slower.output
    same = CliRunner().invoke(main, ["compare", str(tmp_path / "out.json"), "--old-variant",
                                     "toy", "--new-variant", "toy@2.0.0"])
    assert same.exit_code == 0, same.output
    report = CliRunner().invoke(main, ["report", str(tmp_path / "out.json"), "--metrics",
                                       "sdk_version"])
    assert re.search(r"\| SDK version +\| +1\.0\.0 \| +2\.0\.0 \| +2\.0\.1 \| +9\.9\.9 \|",
                     report.output), report.output


def test_bad_sdk_options_are_usage_errors(tmp_path):
    toy(tmp_path)
    result, _ = measure(tmp_path, "--sdk", "java=2.0.0")
    assert result.exit_code == 2 and "--sdk: no reference server in java; known: toy" in result.output
    result, _ = measure(tmp_path, "--sdk", "python")
    assert result.exit_code == 2 and "expected LANG=SPEC" in result.output
    result, _ = measure(tmp_path, "--sdk", "python=2.0.0", "--", "python3", "x.py")
    assert result.exit_code == 2 and "it does not apply to -- COMMAND" in result.output
    one = CliRunner().invoke(main, ["compare", str(tmp_path / "x.json"), "--old-variant", "a"])
    assert one.exit_code == 2 and "give OLD and NEW files, or one file with" in one.output


def test_only_keeps_a_servers_variants_or_names_one(tmp_path):
    from mcpstart.targets.plan import PlanError, make_plan

    toy(tmp_path)
    folder = lambda: tmp_path / "build-recipes"  # noqa: E731
    plan = make_plan((), (), (), None, None, None, ("toy",), False, folder,
                     sdk=("toy=2.0.0,2.0.1",))
    assert [r.name for r in plan.recipes] == ["toy", "toy@2.0.0", "toy@2.0.1"]
    plan = make_plan((), (), (), None, None, None, ("toy@2.0.1",), False, folder,
                     sdk=("toy=2.0.0,2.0.1",))
    assert [r.name for r in plan.recipes] == ["toy@2.0.1"]
    with pytest.raises(PlanError) as err:  # an HTTP recipe's name, asked of the stdio set
        make_plan((), (), (), None, None, None, ("toy-http",), False, folder)
    assert str(err.value) == ("no server named toy-http; known: toy; the Streamable HTTP ones "
                              "(c-http, ...) with --transport http or both")
    with pytest.raises(PlanError) as err:  # a reference name beside a server of one's own
        make_plan((), ("mine=true",), (), None, None, None, ("toy",), False, folder)
    assert str(err.value) == ("no server named toy; known: mine; beside servers you name, the "
                              "reference set is not measured (--floor adds the C floor)")


def test_report_puts_each_server_before_its_variants_in_version_order():
    from mcpstart.views.table import in_variant_order

    def row(name, kind=None, version=None):
        return {"name": name, "sdk_source": kind and {"kind": kind, "version": version}}

    rows = [row("go@v1.10.0", "registry", "v1.10.0"), row("python", "default", "2.3.0"),
            row("go@local", "path"), row("fs@zed"), row("go", "default", "v1.8.0"),
            row("go@v1.9.0", "registry", "v1.9.0"), row("python@2.1.1", "registry", "2.1.1")]
    assert [r["name"] for r in in_variant_order(rows)] == [
        "go", "go@v1.9.0", "go@v1.10.0", "go@local", "python", "python@2.1.1", "fs@zed"]
    plain = [row("b"), row("a"), row("fs@zed")]
    assert in_variant_order(plain) == plain


@pytest.mark.e2e
@pytest.mark.untimed  # a build and its resolved packages
def test_an_old_python_sdk_release_builds_with_the_dependencies_of_its_day(tmp_path):
    """python@2.1.1 from PyPI, resolved as of its release's day: the SDK version found among
    the shipped packages is 2.1.1, and the resolved list is pip's own listing of the venv."""
    from pathlib import Path

    recipes = Path(__file__).parent.parent / "build-recipes"
    out = tmp_path / "r.json"
    result = CliRunner().invoke(main, [
        "measure", "--recipes", str(recipes),  # mcpstart's build cache: reused across runs
        "--sdk", "python=2.1.1", "--only", "python@2.1.1", "--runs", "1", "--warmup", "0",
        "--round-trips", "0", "--no-attribution", "-o", str(out)])
    assert result.exit_code == 0, result.output
    [row] = json.loads(out.read_text())["servers"]
    source = row["sdk_source"]
    assert (row["name"], row["sdk_version"], source["kind"]) == ("python@2.1.1", "2.1.1", "registry")
    assert source["date"] == "2026-08-26T16:13:59Z"  # the wheel's upload time + 1 day
    venv = Path(row["command"]["argv"][0]).parent.parent
    listed = json.loads(subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "list",
                                        "--format", "json"], capture_output=True, text=True,
                                       check=True).stdout)
    shipped = {(p["name"].lower().replace("_", "-"), p["version"]) for p in listed
               if p["name"].lower() not in ("pip", "setuptools", "wheel")}
    assert {(p["name"], p["version"]) for p in source["resolved"]} == shipped
    assert ("mcp", "2.1.1") in shipped and row["footprint"]["dependency_count"] == len(shipped)
