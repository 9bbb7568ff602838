"""compare's account of what changed in a build (views/build_change.py): packages added, gone
and changed in version, the binary's sections that moved by a page or more, in the text and
the JSON; never a regression."""

import copy
import json

from mcpstart.views import build_change
from mcpstart.views.compare import compare, render, to_json

KIB = 1024


def _row(resolved, sections):
    return {"name": "go", "status": "ok", "sdk_source": {"resolved": resolved},
            "footprint": {"sections": sections}}


OLD = _row([{"name": "github.com/acme/sdk", "version": "v1.7.0"},
            {"name": "golang.org/x/sys", "version": "v0.30.0"},
            {"name": "github.com/old/dep", "version": "v1.0.0"}],
           {".text": 4000 * KIB, ".rodata": 2000 * KIB, ".data": 40 * KIB, ".bss": 200 * KIB})
NEW = _row([{"name": "github.com/acme/sdk", "version": "v1.8.0"},
            {"name": "golang.org/x/sys", "version": "v0.30.0"},
            {"name": "golang.org/x/oauth2", "version": "v0.27.0"}],
           {".text": 4600 * KIB, ".rodata": 2002 * KIB, ".data": 40 * KIB, ".bss": 200 * KIB,
            ".gopclntab": 900 * KIB})


def test_packages_and_sections_that_changed():
    found = build_change.build_change("go", OLD, NEW)
    assert found["packages"] == {
        "added": [{"name": "golang.org/x/oauth2", "version": "v0.27.0"}],
        "gone": [{"name": "github.com/old/dep", "version": "v1.0.0"}],
        "changed": [{"name": "github.com/acme/sdk", "old": "v1.7.0", "new": "v1.8.0"}]}
    assert [s["name"] for s in found["sections"]] == [".gopclntab", ".text"]
    assert found["sections"][1] == {"name": ".text", "old_bytes": 4000 * KIB,
                                    "new_bytes": 4600 * KIB, "change_bytes": 600 * KIB}


def test_nothing_changed_or_a_side_without_data_gives_nothing():
    assert build_change.build_change("go", OLD, copy.deepcopy(OLD)) is None
    bare = {"name": "go", "status": "ok"}
    assert build_change.build_change("go", OLD, bare) is None
    only_sections = build_change.build_change("go", {**OLD, "sdk_source": None}, NEW)
    assert only_sections["packages"] is None and only_sections["sections"]


def test_compare_shows_it_and_never_gates_it():
    comparison = compare({"servers": [OLD]}, {"servers": [NEW]})
    assert comparison.exit_status == 0
    text = render(comparison)
    assert "go: what changed in the build" in text
    assert "  added: golang.org/x/oauth2 v0.27.0" in text
    assert "  changed: github.com/acme/sdk v1.7.0 -> v1.8.0" in text
    assert ".text 3.9 -> 4.5 (+0.6)" in text
    assert json.loads(to_json(comparison))["build_changes"][0]["packages"]["gone"] == [
        {"name": "github.com/old/dep", "version": "v1.0.0"}]
