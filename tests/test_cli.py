"""The CLI end to end against fake servers described by recipes: fast, no toolchain but Python.
Tests of options, output and exit codes run the recipes' servers as scripted servers on a
virtual clock (tests/scripted.py); those that read a real process (its environment, its
memory) run tests/fakes/fake_server.py."""

import json
import tomllib
from pathlib import Path

import pytest
import tomli_w
from click.testing import CliRunner

from mcpstart.cli import main

from conftest import FAKE, PYTHON, PYTHON_LINE, fast, toy_recipe, write_recipe
from scripted import Banner, Fake, NeedsEnv, Spawner

SCRIPTS = {(): Fake, ("--need-env", "FOO_API_KEY"): NeedsEnv, ("--banner",): Banner}
"""The scripted counterpart of each fake_server.py switch list the recipes below use."""


@pytest.fixture
def scripted(monkeypatch):
    """Commands measure the recipes' servers as scripted ones, chosen by the switches after
    ``python3 -S .../fake_server.py``."""
    spawner = Spawner(SCRIPTS, key=lambda command: tuple(command.argv[3:]))
    monkeypatch.setattr("mcpstart.measure.settings.BASE", fast(spawner=spawner))
    yield spawner
    assert spawner.made, "no server was spawned through the scripted spawner"

def repo(tmp_path: Path, servers: dict[str, list[str]], steps: list | None = None) -> Path:
    """Recipes named after ``servers``' keys, each running the fake server with the switches
    (without the site module: conftest.PYTHON)."""
    for name, switches in servers.items():
        recipe = toy_recipe()
        recipe.update(source="servers/fake", sources=["fake_server.py", "requirements.txt"],
                      tool_file="fake_server.py")
        recipe["build"]["steps"] = steps or [["python3", "-S", "-m", "py_compile", "fake_server.py"]]
        recipe["run"]["argv"] = ["python3", "-S", "{src}/fake_server.py", *switches]
        recipe["dependencies"]["lock"] = "{src}/requirements.txt"
        write_recipe(tmp_path, name, recipe, {"fake_server.py": FAKE.read_text(),
                                              "requirements.txt": "fake==0\n"})
    return tmp_path


def run(tmp_path, *args):
    return CliRunner().invoke(main, ["measure", "--recipes", str(tmp_path / "build-recipes"),
                                     "--cache-dir", str(tmp_path / "cache"), "--runs", "2",
                                     "--timeout", "10", "--payload-bytes", "100000",
                                     "-o", str(tmp_path / "out.json"), "--force", *args])


def test_failing_server_is_a_row_and_the_others_are_kept(scripted, tmp_path):
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
    assert rows["good"]["command"]["argv"][2].endswith("/src/fake_server.py")
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


def test_report_reprints_the_table(scripted, tmp_path):
    repo(tmp_path, {"good": []})
    measured = run(tmp_path)
    assert measured.exit_code == 0, measured.output
    report = CliRunner().invoke(main, ["report", str(tmp_path / "out.json"), "--format", "plain"])
    assert report.exit_code == 0
    assert "cold start, warm page cache: median [50% CI] (ms)" in report.output
    assert "good" in report.output


def test_a_broken_recipe_blocks_only_itself(scripted, tmp_path):
    """A recipe file that cannot be read, one that is invalid and one whose build fails are
    each a failed row with the cause; the good recipe beside them is built and measured, and
    ``--only`` of it is not blocked at all."""
    repo(tmp_path, {"unbuildable": []}, steps=[["python3", "-c", "raise SystemExit(3)"]])
    repo(tmp_path, {"good": []})
    (tmp_path / "build-recipes" / "invalid.toml").write_text("language = 'go'\n")
    (tmp_path / "build-recipes" / "unreadable.toml").write_text("[[[\n")
    result = run(tmp_path)
    assert result.exit_code == 1, result.output
    rows = {s["name"]: s for s in json.loads((tmp_path / "out.json").read_text())["servers"]}
    assert sorted(rows) == ["good", "invalid", "unbuildable", "unreadable"]
    assert rows["good"]["status"] == "ok" and rows["good"]["handshake_ms"]["n"] == 2
    assert rows["invalid"]["status"] == "failed"
    assert rows["invalid"]["reason"].startswith("unusable recipe: ")
    assert "invalid.toml: field 'run' is missing" in rows["invalid"]["reason"]
    assert "unreadable.toml: cannot read recipe" in rows["unreadable"]["reason"]
    assert rows["unbuildable"]["reason"].startswith("build failed: ")
    only = run(tmp_path, "--only", "good")
    assert only.exit_code == 0, only.output
    assert [s["name"] for s in json.loads((tmp_path / "out.json").read_text())["servers"]] == [
        "good"]
    built = CliRunner().invoke(main, ["build", "-q", "--recipes", str(tmp_path / "build-recipes"),
                                      "--cache-dir", str(tmp_path / "cache")])
    assert built.exit_code == 1
    lines = built.stdout.splitlines()
    assert lines[0].startswith("good: cached (")
    assert lines[1].startswith("invalid: failed: unusable recipe: ")
    assert "unreadable: failed: unusable recipe: " in built.stdout


def test_bad_input_exits_2(tmp_path):
    repo(tmp_path, {"good": []})
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
    (["--format", "githb"], "'githb' is not csv, json or one of"),
    (["-o", ""], "is empty"),
    (["--args", "{}"], "--args needs --call TOOL (--call reverse_text for the default tool)"),
    (["--protocol-version", " "], "is empty"),
    (["-o", "{tmp}/pyproject.json"], "pyproject.toml' exists and is not an mcpstart results "
     "file, and the TOML copy of '{tmp}/pyproject.json' goes there; not overwriting it (give -o "
     "another name)"),
    (["-o", "{tmp}/build-recipes/good.json"], "good.toml' exists and is not an mcpstart results"),
])
def test_bad_options_are_refused_before_any_work(tmp_path, args, message):
    repo(tmp_path, {"good": []})
    (tmp_path / "pyproject.toml").write_text("[project]\n")
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    message = message.replace("{tmp}", str(tmp_path))
    result = CliRunner().invoke(main, ["measure", "--recipes", str(tmp_path / "build-recipes"),
                                       "--cache-dir", str(tmp_path / "cache"), *args])
    assert result.exit_code == 2
    assert message in result.output
    assert not (tmp_path / "cache").exists()


def test_report_marks_unexpected_values_and_lists_warnings(scripted, tmp_path):
    repo(tmp_path, {"good": ["--banner"]})
    assert run(tmp_path).exit_code == 0
    data = json.loads((tmp_path / "out.json").read_text())
    data["servers"][0]["shutdown"] = {}
    (tmp_path / "out.json").write_text(json.dumps(data))
    report = CliRunner().invoke(main, ["report", str(tmp_path / "out.json")])
    assert report.exit_code == 0
    shutdown_row = next(l for l in report.output.splitlines() if l.startswith("| shutdown"))
    assert shutdown_row.rstrip(" |").endswith("?")
    # one banner per session: 1 warm-up + 2 runs, the tool session, the dual-era client's 3
    assert "- good warning: skipped 7 stdout line(s) that are not JSON-RPC" in report.output
    assert "100000 B call round trip (ms)" in report.output  # the payload named in labels


def test_unexpected_error_on_one_server_keeps_the_others(scripted, tmp_path, monkeypatch):
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


def test_progress_off_a_terminal_is_one_plain_line_per_step(scripted, tmp_path, monkeypatch):
    from mcpstart.views.progress import Display

    shown, real = [], Display.__call__

    def record(self, step):
        shown.append(self.mask(getattr(step, "text", step)))
        return real(self, step)

    monkeypatch.setattr(Display, "__call__", record)
    repo(tmp_path, {"good": [], "needs-key": ["--need-env", "FOO_API_KEY"]})
    result = run(tmp_path, "--env", "SOME_TOKEN=needs-key")  # a secret that shows up
    assert result.exit_code == 1
    assert "good: cold start run 2/2" in shown and "***: cold start warm-up 1/1" in shown
    rows = json.loads((tmp_path / "out.json").read_text())["servers"]
    outcomes = []
    for row in rows:
        reason = f": {row['reason']}".replace("\n", "\n  ") if row["reason"] else ""
        outcomes += f"mcpstart: {row['name']}: {row['status']}{reason}".splitlines()
        outcomes += [f"mcpstart: {row['name']} warning: {w['metric']}: {w['detail']}"
                     for w in row["warnings"]]
    lines = [f"mcpstart: {text}" for text in shown]
    assert shown[-1].startswith("results written to ")
    assert result.stderr.splitlines() == lines[:-1] + outcomes + lines[-1:]
    assert "needs-key" not in result.stderr + result.stdout


def test_quiet_leaves_stderr_to_errors(scripted, tmp_path):
    repo(tmp_path, {"good": [], "needs-key": ["--need-env", "FOO_API_KEY"]})
    result = run(tmp_path, "--quiet")
    assert result.exit_code == 1  # a server failed: the table says why, stderr stays empty
    assert result.stderr == "" and "| status " in result.stdout
    bad = run(tmp_path, "--quiet", "--format", "nope")
    assert bad.exit_code == 2 and "'nope' is not csv, json or one of" in bad.stderr
    built = CliRunner().invoke(main, ["build", "-q", "--recipes", str(tmp_path / "build-recipes"),
                                      "--cache-dir", str(tmp_path / "cache"), "good"])
    assert built.exit_code == 0 and built.stderr == ""
    assert built.stdout.startswith("good: cached (")


def test_measure_exports_like_hyperfine_and_dash_replaces_the_table(scripted, tmp_path):
    repo(tmp_path, {"good": []})
    result = run(tmp_path, "--export-json", "-", "--export-csv", str(tmp_path / "h.csv"),
                 "--export-markdown", str(tmp_path / "h.md"))
    assert result.exit_code == 0, result.output
    exported = json.loads(result.stdout)  # only the export: no table
    times = json.loads((tmp_path / "out.json").read_text())["servers"][0]["handshake_ms"]
    assert [r["command"] for r in exported["results"]] == ["good"]
    assert exported["results"][0]["times"] == [t / 1000 for t in times["samples"]]
    assert exported["results"][0]["median"] == times["median"] / 1000
    csv_lines = (tmp_path / "h.csv").read_text().splitlines()
    assert csv_lines[0] == "command,mean,stddev,median,user,system,min,max"
    assert csv_lines[1].startswith(f"good,{times['mean'] / 1000},")
    assert (tmp_path / "h.md").read_text().startswith("| Command | Mean [ms] |")
    report = CliRunner().invoke(main, ["report", str(tmp_path / "out.json"),
                                       "--export-markdown", "-"])
    assert report.exit_code == 0 and report.stdout == (tmp_path / "h.md").read_text()


def test_measure_takes_reports_long_formats(scripted, tmp_path):
    repo(tmp_path, {"good": []})
    as_json = run(tmp_path, "--format", "json", "--runs", "1", "--warmup", "0")
    assert as_json.exit_code == 0, as_json.output
    records = json.loads(as_json.stdout)
    median = next(r for r in records if r["metric"] == "handshake_ms.median")
    row = json.loads((tmp_path / "out.json").read_text())["servers"][0]
    assert median == {"server": "good", "file": median["file"], "metric": "handshake_ms.median",
                      "value": row["handshake_ms"]["median"], "unit": "ms"}
    report = CliRunner().invoke(main, ["report", str(tmp_path / "out.json"), "--format", "json"])
    assert json.loads(report.stdout) == records  # the same records from the results file
    as_csv = run(tmp_path, "--format", "csv", "--runs", "1", "--warmup", "0")
    assert as_csv.stdout.splitlines()[0] == "server,file,metric,value,unit"


@pytest.mark.parametrize("args, message", [
    (["--export-json", "-", "--export-csv", "-"], "--export-json and --export-csv both write "
                                                  "to stdout"),
    (["--export-csv", "/nonexistent-dir/x.csv"], "cannot write into folder '/nonexistent-dir'"),
    (["--export-markdown", "{tmp}"], "is a directory"),
])
def test_bad_exports_are_refused_before_any_work(tmp_path, args, message):
    repo(tmp_path, {"good": []})
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    for command in (["measure", "--cache-dir", str(tmp_path / "cache")], ["report"]):
        result = CliRunner().invoke(main, [*command, *args])
        assert result.exit_code == 2, result.output
        assert message in result.output
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize("command", [None, "build", "measure", "report", "compare", "plot",
                                     "html", "doctor", "revisions", "why", "load-worker"])
def test_every_help_ends_with_an_example(command):
    if command:
        assert command in main.commands
    result = CliRunner().invoke(main, [command, "--help"] if command else ["--help"])
    assert result.exit_code == 0
    tail = result.output[result.output.rindex("Example") if "Example" in result.output
                         else result.output.rindex("Typical use"):]
    assert "Options:" not in tail and "Commands:" not in tail
    assert f"  mcpstart {command or ''}".rstrip() in tail
    assert set(main.commands) == {"build", "measure", "report", "compare", "plot", "html",
                                  "doctor", "revisions", "why", "load-worker"}


def test_help_imports_nothing_heavy():
    import subprocess
    import sys

    code = ("import sys, mcpstart.cli; heavy = {'psutil', 'tabulate', 'matplotlib', 'json5'}; "
            "print(sorted(heavy & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_the_cli_module_loads_nothing_beyond_click_but_its_own_two():
    """What `mcpstart --help` loads before any command runs (benchmarks/cli_startup.py: its
    goal is 1.3x `import click`): the package, the CLI and its defaults; no dataclasses,
    pathlib, random or the progress view, which only a command needs."""
    import os
    import subprocess
    import sys

    import click

    code = ("import sys, click; before = set(sys.modules); import mcpstart.cli; "
            "print(' '.join(sorted(set(sys.modules) - before)))")
    paths = [str(Path(__file__).parent.parent), str(Path(click.__file__).parent.parent)]
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(paths)})
    loaded = set(out.stdout.split()) - {"locale", "_locale"}  # click's gettext: its help too
    assert loaded == {"mcpstart", "mcpstart.cli", "mcpstart.defaults"}


def test_help_loads_only_what_clicks_help_text_needs():
    """`mcpstart --help` itself, not only the import (benchmarks/cli_startup.py): beyond the
    CLI, click's wrapping and gettext; not shutil (with bz2 and lzma), which click's help
    formatter imports for the terminal's width unless given one (cli._help_width); nor does
    a command's help."""
    import os
    import subprocess
    import sys

    import click

    code = ("import sys, click; before = set(sys.modules); from mcpstart.cli import main\n"
            "for args in (['--help'], ['measure', '--help']):\n"
            "    try: main(args)\n"
            "    except SystemExit: print(*sorted(set(sys.modules) - before), file=sys.stderr)")
    paths = [str(Path(__file__).parent.parent), str(Path(click.__file__).parent.parent)]
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(paths)})
    top, command = (set(line.split()) for line in out.stderr.splitlines())
    assert top == {"mcpstart", "mcpstart.cli", "mcpstart.defaults", "locale", "_locale",
                   "click._textwrap", "textwrap"}
    assert not {"shutil", "bz2", "lzma"} & command


@pytest.mark.parametrize("columns", [None, "0", "40", "60", "100", "wide"])
def test_help_width_is_the_one_clicks_formatter_takes(monkeypatch, columns):
    from click.formatting import HelpFormatter

    from mcpstart.cli import _help_width

    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    assert _help_width() == HelpFormatter().width


def test_revisions_prints_the_matrix_and_fails_only_a_server_that_cannot_start(tmp_path):
    modern = f"modern={PYTHON_LINE} {FAKE} --discover 2026-07-28 --reject-initialize -32022"
    result = CliRunner().invoke(main, ["revisions", "--probe-timeout", "3", "--server", modern])
    assert result.exit_code == 0, result.output
    lines = [l for l in result.stdout.splitlines() if l.startswith("| modern")]
    assert len(lines) == 7  # discover, initialize x 6 (4 handshake revisions, 2026-07-28, 2099-12-31)
    assert "| initialize      | 2025-11-25  | error     |" in result.stdout
    assert "-32022" in result.stdout and '{"supported": ["2026-07-28"]' in result.stdout
    assert "- modern: era modern; supported revisions 2026-07-28" in result.stdout
    assert not list(tmp_path.iterdir())  # no results file without -o
    out = tmp_path / "m.json"
    missing = CliRunner().invoke(main, ["revisions", "--server", "gone=/nonexistent/server",
                                        "--server", modern, "-o", str(out)])
    assert missing.exit_code == 1
    rows = {s["name"]: s for s in json.loads(out.read_text())["servers"]}
    assert rows["gone"]["status"] == "failed" and "cannot start" in rows["gone"]["reason"]
    assert rows["modern"]["protocol"]["era"] == "modern"
    script = tmp_path / "bad-interpreter.sh"  # passes the PATH lookup, fails at exec
    script.write_text("#!/nonexistent/interpreter\n")
    script.chmod(0o755)
    broken = CliRunner().invoke(main, ["revisions", "--server", f"bad={script}"])
    assert broken.exit_code == 1, broken.output
    assert "- bad: failed: cannot start" in broken.stdout


def test_revisions_takes_a_command_after_double_dash():
    result = CliRunner().invoke(main, ["revisions", "--probe-timeout", "3", "--",
                                       *PYTHON, str(FAKE), "--discover", "2026-07-28"])
    assert result.exit_code == 0, result.output
    assert "- python3: era dual; supported revisions" in result.stdout


def test_a_call_missing_required_arguments_fails_early_saying_args(tmp_path):
    out = tmp_path / "o.json"
    result = CliRunner().invoke(main, ["measure", "--runs", "1", "--warmup", "0",
                                       "--round-trips", "0", "-o", str(out), "--call",
                                       "reverse_text", "--args", '{"other": "{payload}"}',
                                       "--", *PYTHON, str(FAKE)])
    assert result.exit_code == 1
    row = json.loads(out.read_text())["servers"][0]
    assert row["reason"] == ("tools/call reverse_text: the tool requires text, which the call "
                             "does not give; give them in --args")
    assert row["phases_ms"]["first_call"]["n"] == 0 and row["payload"] is None
    assert row["memory"]["idle_rss_bytes"] > 0  # measured before the failure: kept
    assert [w["detail"] for w in row["warnings"]].count(row["reason"]) == 0  # said once


def test_shell_completion_works_as_docs_cli_md_says():
    """The completion docs/cli.md documents: Click's, keyed on _MCPSTART_COMPLETE."""
    doc = (Path(__file__).parent.parent / "docs" / "cli.md").read_text()
    assert 'eval "$(_MCPSTART_COMPLETE=bash_source mcpstart)"' in doc
    script = CliRunner().invoke(main, [], prog_name="mcpstart",
                                env={"_MCPSTART_COMPLETE": "bash_source"})
    assert script.exit_code == 0 and "complete -o nosort -F _mcpstart_completion" in script.output
    words = CliRunner().invoke(main, [], prog_name="mcpstart", env={
        "_MCPSTART_COMPLETE": "bash_complete", "COMP_WORDS": "mcpstart doctor --fo",
        "COMP_CWORD": "2"})
    assert words.exit_code == 0 and words.output.splitlines() == ["plain,--format"]


def test_a_valid_run_moves_the_previous_results_file_into_the_store(scripted, tmp_path,
                                                                      monkeypatch):
    repo(tmp_path, {"good": []})
    monkeypatch.chdir(tmp_path)
    before = Path(__file__).parent / "fixtures" / "results" / "startup.json"
    Path("mcpstart-results.json").write_bytes(before.read_bytes())
    result = CliRunner().invoke(main, ["measure", "--recipes", "build-recipes", "--cache-dir",
                                       "cache", "--runs", "1", "--warmup", "0"])
    assert result.exit_code == 0, result.output
    assert "the previous run is kept as mcpstart-runs/0001.json" in result.stderr
    assert Path("mcpstart-runs/0001.json").read_bytes() == before.read_bytes()
    assert [s["name"] for s in json.loads(Path("mcpstart-results.json").read_text())["servers"]] \
        == ["good"]


def test_a_second_run_writing_the_same_results_file_is_refused(scripted, tmp_path,
                                                               monkeypatch):
    """A live process's claim on mcpstart-results.json refuses the run at once (exit 2,
    nothing moved into the store, nothing written); a dead process's claim is taken over and
    the claim is gone after the run."""
    import subprocess
    import sys
    repo(tmp_path, {"good": []})
    monkeypatch.chdir(tmp_path)
    before = Path(__file__).parent / "fixtures" / "results" / "startup.json"
    Path("mcpstart-results.json").write_bytes(before.read_bytes())
    args = ["measure", "--recipes", "build-recipes", "--cache-dir", "cache", "--runs", "1",
            "--warmup", "0"]
    other = subprocess.Popen([sys.executable, "-S", "-c", "import time; time.sleep(60)"])
    try:
        Path("mcpstart-results.json.lock").write_text(f"{other.pid}\n")
        refused = CliRunner().invoke(main, args)
    finally:
        other.kill()
        other.wait()
    assert refused.exit_code == 2
    assert f"another mcpstart run (pid {other.pid}) is writing 'mcpstart-results.json'" \
        in refused.stderr
    assert not Path("mcpstart-runs").exists()
    assert Path("mcpstart-results.json").read_bytes() == before.read_bytes()
    taken = CliRunner().invoke(main, args)  # the lock's process is gone: a stale claim
    assert taken.exit_code == 0, taken.output
    assert Path("mcpstart-runs/0001.json").read_bytes() == before.read_bytes()
    assert not Path("mcpstart-results.json.lock").exists()


def test_the_readmes_example_server_is_measured(tmp_path):
    """examples/my_server.py, the README's example: every figure of its session measured,
    its one tool called with the large payload and verified."""
    example = Path(__file__).parent.parent / "examples" / "my_server.py"
    out = tmp_path / "mine.json"
    result = CliRunner().invoke(main, ["measure", "--runs", "1", "--warmup", "0",
                                       "--round-trips", "2", "--payload-bytes", "4096",
                                       "--no-attribution", "-o", str(out), "--name", "mine",
                                       "--", *PYTHON, str(example)])
    assert result.exit_code == 0, result.output
    row = json.loads(out.read_text())["servers"][0]
    assert row["status"] == "ok" and row["server_info"]["name"] == "my-server"
    assert row["tools"]["count"] == 1 and row["payload"]["verified"] is True
    assert row["round_trip_ms"]["n"] == 2


def test_a_memory_limit_above_the_machines_memory_is_said_not_to_bind(monkeypatch, tmp_path):
    monkeypatch.setattr("mcpstart.cli._memory_bytes", lambda: 100 * 2**20)
    out = tmp_path / "o.json"
    above = CliRunner().invoke(main, ["measure", "--memory-limit", "200", "-o", str(out),
                                      "--", str(tmp_path / "no-such-server")])
    assert above.exit_code == 1  # the server cannot start: a row with its cause
    assert ("--memory-limit 200 MiB is above this machine's memory (100 MiB): the limit "
            "cannot bind") in above.stderr
    below = CliRunner().invoke(main, ["measure", "--memory-limit", "50", "-o", str(out),
                                      "--force", "--", str(tmp_path / "no-such-server")])
    assert below.exit_code == 1 and "cannot bind" not in below.stderr


@pytest.mark.parametrize("name, where", [("history", "mcpstart plot --kind history"),
                                         ("export", "mcpstart report FILE --export-csv OUT")])
def test_a_command_that_is_an_option_of_another_is_pointed_to(name, where):
    result = CliRunner().invoke(main, [name])
    assert result.exit_code == 2 and f"no command {name!r}: " in result.output
    assert where in result.output
