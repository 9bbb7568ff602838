"""The workload file: its format, its errors naming the key, bare names, {mock_api}."""

from pathlib import Path

import pytest
from hypothesis import given, settings as hsettings, strategies as st

from mcpstart.wire import ToolCall
from mcpstart.workload import Workload, load, parse

PAIR = Path(__file__).parent / "fixtures" / "workloads" / "pair.toml"


def test_the_fixture_file_loads_with_its_defaults_and_weights():
    workload = load(str(PAIR))
    assert workload.name == "pair" and workload.shape == "shared"
    assert workload.calls == (ToolCall("now", {}), ToolCall("count", {"n": 5}))
    assert workload.weights == (1.0, 3.0)
    assert not workload.needs_mock_api
    assert workload.record()["tools"][1] == {"name": "count", "arguments": {"n": 5},
                                             "weight": 3.0}


def test_a_bare_name_resolves_in_the_packaged_folder(tmp_path):
    (tmp_path / "mine.toml").write_text('[[tools]]\nname = "x"\n')
    assert load("mine", tmp_path).calls == (ToolCall("x", {}),)
    with pytest.raises(ValueError, match=r"no such file.*packaged: mine"):
        load("other", tmp_path)


@pytest.mark.parametrize("data, key", [
    ({}, "tools"),
    ({"tools": [{"name": "a"}], "extra": 1}, "extra: unknown key"),
    ({"tools": [{"name": "a"}], "session": {"shape": "pooled"}}, "session.shape"),
    ({"tools": [{"name": "a"}], "session": {"think_ms": -1}}, "session.think_ms"),
    ({"tools": [{"name": "a", "weight": 0}]}, r"tools\[0\].weight"),
    ({"tools": [{"name": "a", "weight": True}]}, r"tools\[0\].weight"),
    ({"tools": [{"name": "a"}, {"name": "a"}]}, r"tools\[1\].name: 'a' is listed twice"),
    ({"tools": [{"name": "a", "arguments": [1]}]}, r"tools\[0\].arguments"),
    ({"tools": [{"arguments": {}}]}, r"tools\[0\].name"),
    ({"tools": [{"name": "a", "args": {}}]}, r"tools\[0\].args: unknown key"),
    ({"tools": [{"name": "a", "colour": 1, "wieght": 2}]},
     r"tools\[0\].colour, tools\[0\].wieght: unknown keys"),
])
def test_a_bad_file_names_the_key(data, key):
    with pytest.raises(ValueError, match=key):
        parse(data, "w", "w.toml")


def test_mock_api_is_replaced_in_every_string_argument():
    workload = parse({"tools": [{"name": "fetch", "arguments": {
        "endpoint": "{mock_api}/data", "more": ["{mock_api}"], "n": 1}}]}, "w", "w.toml")
    assert workload.needs_mock_api
    resolved = workload.with_mock_api("http://127.0.0.1:9")
    assert resolved.calls[0].arguments == {"endpoint": "http://127.0.0.1:9/data",
                                           "more": ["http://127.0.0.1:9"], "n": 1}
    assert not resolved.needs_mock_api


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=8)
KEYS = st.sampled_from(["tools", "session", "name", "arguments", "weight", "shape",
                        "think_ms", "description", "x"])


@hsettings(max_examples=60, deadline=None)
@given(st.dictionaries(KEYS, JSON | st.lists(st.dictionaries(KEYS, JSON, max_size=4),
                                             max_size=3), max_size=4))
def test_any_table_gives_a_workload_or_a_value_error(data):
    try:
        assert isinstance(parse(data, "w", "w.toml"), Workload)
    except ValueError as err:
        assert str(err)


def test_measure_refuses_a_workload_with_call_and_a_bad_file_by_its_key(tmp_path):
    from click.testing import CliRunner

    from mcpstart.cli import main

    both = CliRunner().invoke(main, ["measure", "--workload", str(PAIR), "--call", "x",
                                     "--", "true"])
    assert both.exit_code == 2 and "without --call" in both.output
    bad = tmp_path / "bad.toml"
    bad.write_text('[[tools]]\nname = "a"\nweight = -1\n')
    refused = CliRunner().invoke(main, ["measure", "--workload", str(bad), "--", "true"])
    assert refused.exit_code == 2 and "tools[0].weight" in refused.output


def test_the_mock_api_serves_only_for_a_workload_that_needs_it():
    import json as json_
    import urllib.error
    import urllib.request

    from mcpstart.measure.mock_api import for_workload
    from mcpstart.measure.settings import BASE
    from dataclasses import replace

    plain = replace(BASE, workload=load(str(PAIR)))
    with for_workload(plain) as same:
        assert same is plain
    needs = parse({"tools": [{"name": "fetch", "arguments": {"endpoint": "{mock_api}/x"}}]},
                  "w", "w.toml")
    with for_workload(replace(BASE, workload=needs)) as resolved:
        url = resolved.workload.mock_api
        assert resolved.call.arguments == {"endpoint": f"{url}/x"}
        with urllib.request.urlopen(f"{url}/x", timeout=5) as answer:
            assert answer.status == 200
            assert json_.loads(answer.read())["path"] == "/x"
        assert resolved.record("sequential")["workload"]["mock_api"] == url
    with pytest.raises(urllib.error.URLError):  # stopped with the block
        urllib.request.urlopen(f"{url}/x", timeout=5)


def test_a_packaged_workload_alone_measures_the_recipes_that_serve_it(tmp_path, monkeypatch):
    import shutil

    from mcpstart import engine
    from mcpstart.engine import JobError, job_for
    from mcpstart.measure.settings import BASE
    from dataclasses import replace

    from conftest import toy_recipe, write_recipe

    for name, serves in (("plain", None), ("four", "pair"), ("other", "else")):
        recipe = toy_recipe()
        if serves:
            recipe["workload"] = serves
        write_recipe(tmp_path, name, recipe, {"server.py": "print()\n"})
    (tmp_path / "workload-recipes").mkdir()
    for name in ("four", "other"):
        shutil.move(tmp_path / "build-recipes" / f"{name}.toml", tmp_path / "workload-recipes")
    packaged = tmp_path / "workloads"
    packaged.mkdir()
    shutil.copy(PAIR, packaged / "pair.toml")
    shutil.copy(PAIR, packaged / "else.toml")
    monkeypatch.setattr(engine, "PACKAGED_WORKLOADS", packaged)
    monkeypatch.setattr("mcpstart.targets.recipes.WORKLOADS", packaged)
    monkeypatch.chdir(tmp_path)
    options = {"server_specs": (), "configs": (), "client": None, "cwd": None,
               "recipes_dir": None, "output": None}

    def planned(workload, command=()):
        job = job_for(command, options, replace(BASE, workload=workload), ["mcpstart"],
                      lambda _: None)
        return [r.name for r in job.plan.recipes]

    assert planned(load("pair", packaged)) == ["four"]
    assert planned(load(str(PAIR))) == ["plain"]  # a file of one's own: the reference set
    (packaged / "none.toml").write_text('[[tools]]\nname = "x"\n')
    with pytest.raises(JobError, match="no stdio recipe .* serves the workload none"):
        planned(load("none", packaged))


def test_a_path_that_is_no_file_is_said_to_be_none(tmp_path):
    with pytest.raises(ValueError, match=r"--workload .*: not a file \(a workload is a TOML"):
        load(str(tmp_path))
