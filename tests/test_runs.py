"""Runs are never lost: the store of past runs, -o without --force, the results file written
before any work, marked incomplete until its last write, and the truth after an interruption."""

import json
import shutil
import tomllib
from pathlib import Path

from click.testing import CliRunner

from mcpstart import engine, runs
from mcpstart.cli import main
from mcpstart.results import Results, load

FRESH = Path(__file__).parent / "fixtures" / "results" / "startup.json"


def cut(value):
    """Every series cut to its first 8 samples, so that the exact test stays quick."""
    if isinstance(value, dict):
        return {k: v[:8] if k == "samples" else cut(v) for k, v in value.items()}
    return [cut(v) for v in value] if isinstance(value, list) else value


def test_runs_without_o_are_kept_and_compare_names_the_previous_one(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    default = Path("mcpstart-results.json")
    for created in ("first", "second", "third"):  # three runs, each written where measure does
        path = runs.output_for(None, force=False)
        assert path == default
        kept = runs.keep(path)
        run = Results.from_dict(cut(json.loads(FRESH.read_text())) | {"created": created})
        run.save(default)
    assert kept == Path("mcpstart-runs/0002.json")
    assert [p.name for p in runs.stored()] == ["0001.json", "0002.json"]
    assert tomllib.loads((tmp_path / "mcpstart-runs" / "0001.toml").read_text())["created"] \
        == "first"
    assert [load(runs.resolve(n)).created for n in ("@-1", "@-2", "@1", "mcpstart-results.json")] \
        == ["second", "first", "first", "third"]
    result = CliRunner().invoke(main, ["compare", "--format", "json"])  # @-1 vs the last run
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["old"] == "@-1 (mcpstart-runs/0002.json)"  # the file it is
    assert json.loads(result.output)["new"] == "mcpstart-results.json"
    missing = CliRunner().invoke(main, ["report", "@-3"])
    assert missing.exit_code == 2 and "no stored run @-3: mcpstart-runs/ holds 2" in missing.output


def test_o_onto_an_existing_file_is_refused_without_force(tmp_path):
    out = tmp_path / "out.json"
    shutil.copy(FRESH, out)
    result = CliRunner().invoke(main, ["measure", "--cache-dir", str(tmp_path / "cache"),
                                       "-o", str(out), "--", "true"])
    assert result.exit_code == 2 and "exists: give --force to replace it" in result.output
    assert out.read_bytes() == FRESH.read_bytes() and not (tmp_path / "cache").exists()
    assert runs.output_for(str(out), force=True) == out


def test_an_output_that_cannot_be_written_fails_before_any_work(tmp_path):
    out = tmp_path / "out.json"
    out.symlink_to(tmp_path / "gone" / "r.json")  # passes the folder check, cannot be written
    result = CliRunner().invoke(main, ["measure", "--cache-dir", str(tmp_path / "cache"),
                                       "-o", str(out), "--floor", "--only", "c"])
    assert result.exit_code == 2, result.output
    assert "cannot write the results file" in result.output
    assert f"cannot write the results file {out}: No such file" in result.output
    assert not (tmp_path / "cache").exists()  # nothing built, nothing measured


def test_a_file_being_written_is_marked_incomplete_and_the_views_say_so(tmp_path):
    out = tmp_path / "r.json"
    job = engine.Job(plan=None, settings=None, argv=[], output=out)
    rewrite, error, last = engine._writer(job, ())
    results = load(FRESH)
    rewrite(results)
    assert json.loads(out.read_text())["incomplete"] is True and not error
    report = CliRunner().invoke(main, ["report", str(out)])
    assert report.exit_code == 0
    assert f"{out} is incomplete: a run is still writing it" in report.stderr
    rewrite(results, done=True)
    assert json.loads(out.read_text())["incomplete"] is False and last == [results]
    assert "incomplete" not in CliRunner().invoke(main, ["report", str(out)]).stderr


def test_an_interruption_says_truly_what_was_written(tmp_path):
    out, said = tmp_path / "r.json", []
    job = engine.Job(plan=None, settings=None, argv=[], output=out, progress=said.append)
    rewrite, _, _ = engine._writer(job, ())
    empty = Results.from_dict(json.loads(FRESH.read_text()) | {"servers": []})
    engine._stopped(job, empty, rewrite, "SIGINT")
    assert said == [f"no server was started before SIGINT: {out} records only the "
                    "interruption"]
    written = json.loads(out.read_text())
    assert written["interrupted"] == ("stopped by SIGINT during the builds and footprints, "
                                      "before the first start") and written["servers"] == []
    engine._stopped(job, load(FRESH), rewrite, "SIGTERM")
    assert said[-1] == f"what was measured before SIGTERM (c, c-http) is in {out}"
    assert json.loads(out.read_text())["incomplete"] is False


def test_no_output_replaces_an_input_or_the_results_file_and_none_an_existing_file_unasked(
        tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(FRESH, "mcpstart-results.json")
    Path("old.html").write_text("kept")
    Path("old.svg").write_text("kept")
    mine = "is an input of this command or the run's own results file: not overwriting it"
    for args, said in (
            (["html", "mcpstart-results.json", "-o", "mcpstart-results.json", "--force"], mine),
            (["html", "-o", "./mcpstart-results.json", "--force"], mine),  # the default input
            (["report", "--export-json", "mcpstart-results.json", "--force"], mine),
            (["report", "mcpstart-results.json", "--export-markdown", "mcpstart-results.json"],
             mine),
            (["measure", "--export-json", "mcpstart-results.json", "--force", "--only", "c"],
             mine),  # the run's own results file, before the store is touched
            (["measure", "-o", "r.json", "--export-csv", "r.toml", "--force", "--only", "c"],
             mine),  # its TOML copy
            (["html", "-o", "old.html"], "'old.html' exists: give --force"),
            (["plot", "-o", "old.svg"], "'old.svg' exists: give --force"),
            (["report", "--export-csv", "old.html"], "'old.html' exists: give --force"),
            (["measure", "--export-json", "old.html", "--only", "c"],
             "'old.html' exists: give --force")):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 2, (args, result.output)
        assert said in result.output, (args, result.output)
    assert Path("mcpstart-results.json").read_bytes() == FRESH.read_bytes()
    assert Path("old.html").read_text() == Path("old.svg").read_text() == "kept"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "mcpstart-results.json", "old.html", "old.svg"]  # no store, no r.json, no cache
    result = CliRunner().invoke(main, ["html", "-o", "old.html", "--force"])
    assert result.exit_code == 0, result.output
    assert Path("old.html").read_text().startswith("<!DOCTYPE html>")


def test_bad_input_leaves_the_results_file_where_it_is(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(FRESH, "mcpstart-results.json")
    for args in (["--only", "nosuch"], ["--config", str(tmp_path / "none.json")],
                 ["--url", "notaurl"], ["--name", "", "--", "true"]):
        result = CliRunner().invoke(main, ["measure", *args])
        assert result.exit_code == 2, (args, result.output)
        assert "previous run is kept" not in result.output
    assert Path("mcpstart-results.json").read_bytes() == FRESH.read_bytes()
    assert not Path("mcpstart-runs").exists()
