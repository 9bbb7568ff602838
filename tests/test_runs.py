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
        path, said = runs.output_for(None, force=False)
        assert path == default
        run = Results.from_dict(cut(json.loads(FRESH.read_text())) | {"created": created})
        run.save(default)
    assert said == "the previous run is kept as mcpstart-runs/0002.json (mcpstart compare @-1 NEW)"
    assert [p.name for p in runs.stored()] == ["0001.json", "0002.json"]
    assert tomllib.loads((tmp_path / "mcpstart-runs" / "0001.toml").read_text())["created"] \
        == "first"
    assert [load(runs.resolve(n)).created for n in ("@-1", "@-2", "@1", "mcpstart-results.json")] \
        == ["second", "first", "first", "third"]
    result = CliRunner().invoke(main, ["compare", "--format", "json"])  # @-1 vs the last run
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["old"] == "@-1"
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
    assert runs.output_for(str(out), force=True) == (out, None)


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
