"""The CLI end to end against fake servers described by recipes: fast, no toolchain but Python."""

import json
import tomllib
from pathlib import Path

import pytest
import tomli_w
from click.testing import CliRunner

from mcpstart.cli import main

from conftest import FAKE, toy_recipe, write_recipe

def repo(tmp_path: Path, servers: dict[str, list[str]], steps: list | None = None) -> Path:
    """Recipes named after ``servers``' keys, each running the fake server with the switches."""
    for name, switches in servers.items():
        recipe = toy_recipe()
        recipe.update(source="servers/fake", sources=["fake_server.py", "requirements.txt"],
                      tool_file="fake_server.py")
        recipe["build"]["steps"] = steps or [["python3", "-m", "py_compile", "fake_server.py"]]
        recipe["run"]["argv"] = ["python3", "{src}/fake_server.py", *switches]
        recipe["dependencies"]["lock"] = "{src}/requirements.txt"
        write_recipe(tmp_path, name, recipe, {"fake_server.py": FAKE.read_text(),
                                              "requirements.txt": "fake==0\n"})
    return tmp_path


def run(tmp_path, *args):
    return CliRunner().invoke(main, ["measure", "--recipes", str(tmp_path / "build-recipes"),
                                     "--cache-dir", str(tmp_path / "cache"), "--runs", "2",
                                     "--timeout", "10", "--payload-bytes", "100000",
                                     "-o", str(tmp_path / "out.json"), *args])


def test_failing_server_is_a_row_and_the_others_are_kept(tmp_path):
    repo(tmp_path, {"good": [], "needs-key": ["--need-env", "FOO_API_KEY"]})
    result = run(tmp_path)
    assert result.exit_code == 1, result.output
    data = json.loads((tmp_path / "out.json").read_text())
    rows = {s["name"]: s for s in data["servers"]}
    assert rows["good"]["status"] == "ok" and rows["good"]["reason"] is None
    assert rows["good"]["handshake_ms"]["n"] == 2
    assert len(rows["good"]["handshake_ms"]["warmup_samples"]) == 1
    assert rows["good"]["payload"]["verified"] is True
    assert rows["good"]["footprint"]["tool_lines"] > 100
    assert rows["good"]["footprint"]["lock_count"] == 1
    assert rows["good"]["footprint"]["dependency_count"] is None  # the toy build has no venv
    assert any("no site-packages under" in w["detail"] for w in rows["good"]["warnings"])
    assert rows["good"]["command"]["argv"][1].endswith("/src/fake_server.py")
    assert rows["needs-key"]["status"] == "failed"
    assert "exited with code 1" in rows["needs-key"]["reason"]
    assert "FOO_API_KEY not set" in rows["needs-key"]["reason"]
    assert "| status " in result.stdout and "failed" in result.stdout
    assert (tmp_path / "out.toml").is_file()


def test_env_reaches_servers_and_its_value_is_not_stored(tmp_path):
    repo(tmp_path, {"needs-key": ["--need-env", "FOO_API_KEY"]})
    result = run(tmp_path, "--env", "FOO_API_KEY=hunter2", "--warmup", "0", "--env=B=x=y")
    assert result.exit_code == 0, result.output
    text = (tmp_path / "out.json").read_text()
    assert "hunter2" not in text
    data = json.loads(text)
    assert data["servers"][0]["command"]["env_keys"] == ["B", "FOO_API_KEY"]
    assert data["settings"]["env_keys"] == ["B", "FOO_API_KEY"]
    assert data["argv"][:2] == ["mcpstart", "measure"]
    assert "--env" in data["argv"] and "FOO_API_KEY=***" in data["argv"]
    assert "--env=B=***" in data["argv"]
    assert data["servers"][0]["handshake_ms"]["warmup_samples"] == []


def test_report_reprints_the_table(tmp_path):
    repo(tmp_path, {"good": []})
    measured = run(tmp_path)
    assert measured.exit_code == 0, measured.output
    report = CliRunner().invoke(main, ["report", str(tmp_path / "out.json"), "--format", "plain"])
    assert report.exit_code == 0
    assert "cold start, warm page cache: median [50% CI] (ms)" in report.output
    assert "good" in report.output


def test_bad_input_exits_2(tmp_path):
    repo(tmp_path, {"good": []})
    (tmp_path / "build-recipes" / "broken.toml").write_text("language = 'go'\n")
    result = run(tmp_path)
    assert result.exit_code == 2
    assert "broken.toml: field 'run' is missing" in result.output
    assert not (tmp_path / "out.json").exists()
    assert run(tmp_path, "--only", "nope").exit_code == 2
    assert CliRunner().invoke(main, ["measure", "--runs", "0"]).exit_code == 2
    assert CliRunner().invoke(main, ["report", str(tmp_path / "none.json")]).exit_code == 2
    toml = CliRunner().invoke(main, ["report", str(tmp_path / "x.toml")])
    assert toml.exit_code == 2 and "report reads the JSON results file" in toml.output


def test_skipped_toolchain_and_require_all(tmp_path):
    repo(tmp_path, {"good": []})
    recipe = tmp_path / "build-recipes" / "good.toml"
    data = tomllib.loads(recipe.read_text())
    data["toolchains"][0]["version"][0] = "nocc-xyz"
    recipe.write_text(tomli_w.dumps(data))
    result = run(tmp_path)
    assert result.exit_code == 0
    row = json.loads((tmp_path / "out.json").read_text())["servers"][0]
    assert row["status"] == "skipped" and row["reason"] == "nocc-xyz not found"
    assert run(tmp_path, "--require-all").exit_code == 1


@pytest.mark.parametrize("args, message", [
    (["-o", "results.toml"], "its TOML copy is written beside it"),
    (["-o", "/nonexistent-dir/r.json"], "cannot write into folder '/nonexistent-dir'"),
    (["--timeout", "nan"], "nan is not a finite number of seconds"),
    (["--timeout", "inf"], "inf is not a finite number of seconds"),
    (["--format", "githb"], "'githb' is not one of"),
    (["-o", ""], "is empty"),
    (["--protocol-version", " "], "is empty"),
    (["-o", "{tmp}/pyproject.json"], "pyproject.toml' exists and is not an mcpstart results file"),
    (["-o", "{tmp}/build-recipes/good.json"], "good.toml' exists and is not an mcpstart results"),
])
def test_bad_options_are_refused_before_any_work(tmp_path, args, message):
    repo(tmp_path, {"good": []})
    (tmp_path / "pyproject.toml").write_text("[project]\n")
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    result = CliRunner().invoke(main, ["measure", "--recipes", str(tmp_path / "build-recipes"),
                                       "--cache-dir", str(tmp_path / "cache"), *args])
    assert result.exit_code == 2
    assert message in result.output
    assert not (tmp_path / "cache").exists()


def test_report_marks_unexpected_values_and_lists_warnings(tmp_path):
    repo(tmp_path, {"good": ["--banner"]})
    assert run(tmp_path).exit_code == 0
    data = json.loads((tmp_path / "out.json").read_text())
    data["servers"][0]["shutdown"] = {}
    (tmp_path / "out.json").write_text(json.dumps(data))
    report = CliRunner().invoke(main, ["report", str(tmp_path / "out.json")])
    assert report.exit_code == 0
    shutdown_row = next(l for l in report.output.splitlines() if l.startswith("| shutdown"))
    assert shutdown_row.rstrip(" |").endswith("?")
    # one banner per session: 1 warm-up + 2 runs + the tool session
    assert "- good warning: skipped 4 stdout line(s) that are not JSON-RPC" in report.output
    assert "peak RSS, 100000 B call (MiB)" in report.output


def test_unexpected_error_on_one_server_keeps_the_others(tmp_path, monkeypatch):
    import mcpstart.measure.run as measure

    real = measure.tool_session

    def flaky(command, settings, row, *args, **kwargs):
        if row.name == "a-bad":
            raise TypeError("unexpected shape")
        return real(command, settings, row, *args, **kwargs)

    monkeypatch.setattr(measure, "tool_session", flaky)
    repo(tmp_path, {"a-bad": [], "good": []})
    result = run(tmp_path)
    assert result.exit_code == 1
    rows = {s["name"]: s for s in json.loads((tmp_path / "out.json").read_text())["servers"]}
    assert rows["a-bad"]["reason"] == ("mcpstart could not measure this server: "
                                       "TypeError: unexpected shape")
    assert rows["a-bad"]["handshake_ms"]["n"] == 2  # measured before the failure: kept
    assert rows["good"]["status"] == "ok"
