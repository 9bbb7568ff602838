"""The results schema (mcpstart/results.schema.json, docs/results.md): every results file in
the repository satisfies it, a key of the wrong type or a key it does not know is rejected
naming its key path, and report, compare and plot of such a file exit 2 saying so."""

import copy
import json
import re
from functools import cache
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcpstart.cli import main
from mcpstart.results import ResultsError, is_results_file, key_path, validate

ROOT = Path(__file__).parent.parent
FILES = sorted(p for p in [*(ROOT / "tests" / "fixtures").rglob("*.json"),
                           *(ROOT / "benchmarks" / "figures").glob("*.json")]
               if is_results_file(p))
"""The 0.2.0 fixtures, files of this version (tests/fixtures/results/) and the dated figures."""
LOOPED = [ROOT / "tests" / "fixtures" / "v0_2_0" / "reference.json",
          ROOT / "tests" / "fixtures" / "v0_2_0" / "faults.json",
          *sorted((ROOT / "tests" / "fixtures" / "results").glob("*.json"))]
"""The files whose every key the wrong-type test changes (the figures repeat their keys)."""

OPEN = re.compile(r"""(servers\[\]\.(server_info|server_capabilities|protocol\.negotiated_revision
    |protocol\.discover\.(server_info|capabilities)|protocol\.matrix\[\]\.(answered|error_code
    |error_message|error_data|result)|protocol\.initialize_modern\.(answered|error_code
    |error_message)|caching\.(discover|tools_list)_cache_scope|tools\.tokens\.per_tool\[\]\.name)
    |settings\.call_arguments\.\w+)(\.|\[|$)""", re.X)
"""Values stored verbatim from a server or the user, any JSON value (docs/results.md)."""
MAPS = re.compile(r"""(environment\.toolchains|settings\.call_arguments|servers\[\]\.(not_measured|traffic\.\w+
    |memory\.settle_curve\.per_process|http\.load\[\]\.(latency_ms\.histogram|by_request
    |errors\.(by_class|examples))|launcher\.stopped)|startup\.((warmup_)?runs\[\]|limits\[\]\.fits
    |not_started|sessions\.((warmup_)?runs\[\]|per_server|rounds\[\]\.memory|shared))
    |load_ceiling\.(by_answer|load\[\]\.(latency_ms\.histogram|by_request
    |errors\.(by_class|examples))))$""", re.X)
"""Objects keyed by names (a server's, a tool's, a method's, a class's) or the user's
(--args): any key."""

NUMBERS = re.compile(r"servers\[\]\.caching\.(discover|tools_list)_ttl_ms$")
"""Keys of any number (a server's ttlMs) that hold a whole one in the fixtures."""


def generic(path: tuple) -> str:
    return key_path(["[]" if isinstance(step, int) else step for step in path]).replace(".[]",
                                                                                        "[]")


def nodes(value, path=()):
    """Every (path, value) of a JSON document, containers included, depth first."""
    yield path, value
    items = value.items() if isinstance(value, dict) else (
        enumerate(value) if isinstance(value, list) else ())
    for key, child in items:
        yield from nodes(child, (*path, key))


def spine(doc: dict, path: tuple) -> tuple[dict, tuple]:
    """``doc`` cut down to ``path``: each object to the key on it (and the keys the schema
    requires: the top level's, a row's ``name``), each list of containers to the element on
    it (a list of scalars whole). Returns it, a document that validates in microseconds,
    and the path into it."""
    def cut(value, rest: tuple) -> tuple[object, tuple]:
        if not rest:
            return copy.deepcopy(value), ()
        inner, inner_path = cut(value[rest[0]], rest[1:])
        if isinstance(value, list):
            if not any(isinstance(v, (dict, list)) for v in value):
                return copy.deepcopy(value), rest
            return [inner], (0, *inner_path)
        return {rest[0]: inner}, (rest[0], *inner_path)

    out, new_path = cut(doc, path)
    if path[:1] == ("servers",) and len(path) > 2:
        out["servers"][0]["name"] = doc["servers"][path[1]]["name"]
    required = {"schema": doc["schema"], "created": doc["created"], "environment": {},
                "settings": {}, "servers": []}
    return {**required, **out}, new_path


def replaced(doc, path, value):
    doc = copy.deepcopy(doc)
    holder = doc
    for step in path[:-1]:
        holder = holder[step]
    holder[path[-1]] = value
    return doc


def rejected(doc, path) -> str:
    with pytest.raises(ResultsError) as caught:
        validate(doc)
    message = str(caught.value)
    assert message.startswith(f"{key_path(path) or '(top level)'}: "), message
    return message


@cache
def parsed(file: Path) -> dict:
    return json.loads(file.read_text())


@cache
def representatives() -> list[tuple[Path, tuple]]:
    """One concrete path per generic key path (indices as []) over LOOPED."""
    seen, out = set(), []
    for file in LOOPED:
        for path, _ in nodes(parsed(file)):
            if path and generic(path) not in seen:
                seen.add(generic(path))
                out.append((file, path))
    return out


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_results_file_in_the_repository_validates(path):
    validate(json.loads(path.read_text()))


def test_the_fixtures_hold_every_kind_of_file():
    """The looped files hold every block: a failed row, HTTP with load, the startup and
    sessions blocks, a launcher, a revisions-only file."""
    keys = {generic(path) for file in LOOPED for path, _ in nodes(parsed(file))}
    for key in ("servers[].http.load[].rps", "load_ceiling.by_answer", "startup.limits[].fits",
                "startup.sessions.per_server", "startup.sessions.shared",
                "servers[].launcher.overhead_ms.median", "servers[].payload.refused",
                "servers[].protocol.matrix[].verdict", "servers[].dual_era.ms.median",
                "servers[].caching.may_defer_spawn", "servers[].sdk_source.resolved"):
        assert key in keys, key
    statuses = {v for file in LOOPED for p, v in nodes(parsed(file))
                if generic(p) == "servers[].status"}
    assert {"ok", "failed"} <= statuses


def test_each_key_of_a_wrong_type_is_rejected_naming_it():
    """Every key (one per key path) changed to a value of another JSON type: rejected with
    its key path first, unless the key is one the schema leaves open (OPEN: then every value
    passes); a null key must reject at least one of a string, a number and a bool; a key
    holding a whole number must reject 1.5 (it is an integer) unless it is a NUMBERS key."""
    checked = open_ = 0
    for file, full in representatives():
        doc, path = spine(parsed(file), full)
        validate(doc)  # the cut-down document is valid as it is
        value, name = nodes_value(doc, path), generic(full)
        if OPEN.match(name):
            for wrong in ("fast", 1.5, True, None, [], {}):
                validate(replaced(doc, path, wrong))
            open_ += 1
            continue
        if value is None:
            outcomes = []
            for wrong in ("fast", 1.5, True):
                try:
                    validate(replaced(doc, path, wrong))
                    outcomes.append(False)
                except ResultsError:
                    outcomes.append(True)
            assert any(outcomes), f"{file.name}: {name} takes any value"
            rejected(replaced(doc, path, [wrong for wrong, out in zip(("fast", 1.5, True),
                                                                      outcomes) if out][0]),
                     path)
        else:
            wrong = 1.5 if isinstance(value, (str, dict, list)) else "fast"
            rejected(replaced(doc, path, wrong), path)
            if type(value) is int and not NUMBERS.match(name):  # a count, bytes, a pid
                rejected(replaced(doc, path, 1.5), path)
        checked += 1
    assert checked > 700 and open_ >= 10, (checked, open_)


def test_an_unknown_key_is_rejected_naming_its_object():
    """Every object (one per key path) given a key the schema does not name: rejected with
    the object's path, unless it is a map keyed by names (MAPS) or open (OPEN)."""
    objects = 0
    for file, full in representatives():
        doc, path = spine(parsed(file), full)
        if not isinstance(nodes_value(doc, path), dict) or OPEN.match(generic(full)):
            continue
        grown = copy.deepcopy(doc)
        target = nodes_value(grown, path)
        if MAPS.match(generic(full)):
            if target:  # a name more, with a value like the others
                target["unexpected_key"] = copy.deepcopy(next(iter(target.values())))
                validate(grown)
            continue
        target["unexpected_key"] = 1
        assert "'unexpected_key' was unexpected" in rejected(grown, path)
        objects += 1
    assert objects > 100, objects


def nodes_value(doc, path):
    for step in path:
        doc = doc[step]
    return doc


@pytest.mark.parametrize("command", ["report", "compare", "plot"])
def test_report_compare_and_plot_of_a_file_the_schema_rejects_exit_2(tmp_path, command):
    data = json.loads(LOOPED[0].read_text())
    data["servers"][0]["handshake_ms"]["median"] = "fast"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    args = {"report": [str(bad)], "compare": [str(LOOPED[0]), str(bad)],
            "plot": [str(bad), "-o", str(tmp_path / "x.png")]}[command]
    result = CliRunner().invoke(main, [command, *args])
    assert result.exit_code == 2, result.output
    assert (f"{bad}: servers[0].handshake_ms.median: 'fast' is not of type 'number', 'null'"
            in result.output)
    assert not (tmp_path / "x.png").exists()
