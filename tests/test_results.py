import json
import os
import tomllib

import pytest

from mcpstart.results import Results, ResultsError, ServerResult, load
from mcpstart.stats import summarize


def sample_results() -> Results:
    row = ServerResult("go", "stdio", "go", "go-sdk", "v1.8.0", handshake_ms=summarize([1.0, 2.0, 3.0], [9.0]),
                       warnings=["bad \ud800 surrogate"])
    failed = ServerResult("rust", "stdio", "rust", "rmcp", "3.11.0")
    failed.fail("exited with code 1")
    failed.fail("second cause")
    return Results("2026-01-01T00:00:00+00:00", "0.1.0", ["mcpstart", "measure"],
                   {"hostname": "h"}, {"runs": 3}, [row, failed])


def test_json_roundtrip_and_toml_copy(tmp_path):
    path = tmp_path / "out.json"
    sample_results().save(path)
    data = json.loads(path.read_text())
    assert list(data)[0] == "schema" and data["schema"] == "mcpstart/1"
    loaded = load(path)
    assert loaded.servers[0].handshake_ms["warmup_samples"] == [9.0]
    assert loaded.servers[1].status == "failed"
    assert loaded.servers[1].reason == "exited with code 1"
    assert loaded.servers[1].warnings == [{"kind": "failure", "metric": None,
                                           "detail": "second cause"}]

    toml = tomllib.loads(path.with_suffix(".toml").read_text())
    assert toml["servers"][0]["handshake_ms"]["median"] == 2.0
    assert "p95" not in toml["servers"][0]["handshake_ms"]  # null omitted
    assert "memory" not in toml["servers"][0]
    assert toml["servers"][0]["warnings"] == ["bad \\ud800 surrogate"]
    assert not list(tmp_path.glob(".out*"))  # no temp files left behind


def test_secrets_are_masked_in_both_files_and_keys_kept(tmp_path):
    results = sample_results()
    results.servers[1].fail("stderr tail: 'token=hunter22 rejected'")
    results.servers[0].command = {"argv": ["srv", "--key", "hunter22"], "cwd": None,
                                  "env_keys": ["API_KEY"]}
    results.secrets = ("hunter22",)
    path = tmp_path / "out.json"
    results.save(path)
    for text in (path.read_text(), path.with_suffix(".toml").read_text()):
        assert "hunter22" not in text
        assert "token=*** rejected" in text and "API_KEY" in text


def test_load_rejects_other_files(tmp_path):
    other = tmp_path / "x.json"
    other.write_text('{"schema": "other/2"}')
    with pytest.raises(ResultsError, match="not an mcpstart results file"):
        load(other)
    with pytest.raises(ResultsError, match="missing.json"):
        load(tmp_path / "missing.json")


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["servers"][0].pop("name"), r"servers\[0\]: 'name' is a required property"),
    (lambda d: d.update(servers=None), "servers: None is not of type 'array'"),
    (lambda d: d.update(servers=[1]), r"servers\[0\]: 1 is not of type 'object'"),
    (lambda d: d.update(environment=None), "environment: None is not of type 'object'"),
    (lambda d: d.pop("created"), r"\(top level\): 'created' is a required property"),
])
def test_load_rejects_a_bad_shape_with_the_place(tmp_path, edit, message):
    path = tmp_path / "out.json"
    sample_results().save(path)
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))
    with pytest.raises(ResultsError, match=message):
        load(path)


def test_files_follow_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        sample_results().save(tmp_path / "out.json")
    finally:
        os.umask(old)
    assert (tmp_path / "out.json").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "out.toml").stat().st_mode & 0o777 == 0o644


def test_existing_file_keeps_its_mode_and_symlink(tmp_path):
    real = tmp_path / "real.json"
    real.write_text("{}")
    real.chmod(0o600)
    link = tmp_path / "link.json"
    link.symlink_to(real)
    sample_results().save(link)
    assert link.is_symlink() and load(link).servers[0].name == "go"
    assert real.stat().st_mode & 0o777 == 0o600


def test_table_escapes_lone_surrogates():
    from mcpstart.views.table import table

    results = sample_results()
    results.servers[0].sdk_version = "v\ud800"
    assert "v\\ud800" in table(results)


def test_the_docs_list_exactly_the_warning_kinds():
    from pathlib import Path

    from mcpstart.warnings import Kind

    page = (Path(__file__).parent.parent / "docs" / "warnings.md").read_text()
    listed = {line.split("`")[1] for line in page.splitlines() if line.startswith("| `")}
    assert listed == {str(kind) for kind in Kind}
