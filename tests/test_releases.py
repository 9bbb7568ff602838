"""Release listings read as each package manager prints them (captured outputs, no network),
and the version order."""

import json
from datetime import datetime, timezone

import pytest

from mcpstart.targets import releases
from mcpstart.targets.releases import Release


def test_versions_sort_as_releases_do():
    listed = ["v1.10.0", "v1.9.0", "v1.8.0-pre.2", "v1.8.0", "v1.8.0-pre.1", "2.0.0-M2",
              "2.0.0-RC1", "2.0.0", "2.0.0-beta.5", "2.0.0rc1"]
    ordered = sorted(listed, key=releases.version_key)
    assert ordered.index("v1.9.0") < ordered.index("v1.10.0")
    assert ordered.index("v1.8.0-pre.1") < ordered.index("v1.8.0-pre.2") < ordered.index("v1.8.0")
    assert ordered.index("2.0.0-M2") < ordered.index("2.0.0-beta.5") < ordered.index("2.0.0-RC1") \
        < ordered.index("2.0.0")
    assert [v for v in listed if releases.is_pre(v)] == [
        "v1.8.0-pre.2", "v1.8.0-pre.1", "2.0.0-M2", "2.0.0-RC1", "2.0.0-beta.5", "2.0.0rc1"]


def test_npm_time_listing():
    text = json.dumps({"created": "2026-01-01T00:00:00.000Z", "modified": "2026-11-01T00:00:00Z",
                       "2.0.0": "2026-07-29T09:15:09.194Z", "2.0.0-beta.5": "2026-08-09T18:10:56Z"})
    found = {r.version: r.published for r in releases.parse_npm_time(text)}
    assert found == {"2.0.0": datetime(2026, 7, 29, 9, 15, 9, 194000, timezone.utc),
                     "2.0.0-beta.5": datetime(2026, 8, 9, 18, 10, 56, tzinfo=timezone.utc)}
    assert releases.own_day(found["2.0.0"]) == "2026-07-30T09:15:09Z"


def test_pip_index_and_the_pep_691_page():
    out = ("WARNING: pip index is currently an experimental command.\nmcp (2.3.0)\n"
           "Available versions: 2.3.0, 2.1.1, 2.0.0rc1, 1.30.0\n  INSTALLED: 2.3.0\n")
    assert releases.parse_pip_index(out) == ["2.3.0", "2.1.1", "2.0.0rc1", "1.30.0"]
    with pytest.raises(releases.ReleaseError, match="printed no versions"):
        releases.parse_pip_index("ERROR: No matching distribution found for nope\n")
    page = json.dumps({"meta": {"api-version": "1.1"}, "versions": ["2.1.1", "2.2.0"], "files": [
        {"filename": "mcp-2.1.1-py3-none-any.whl", "upload-time": "2026-08-25T16:13:59.024858Z",
         "yanked": False},
        {"filename": "mcp-2.1.1.tar.gz", "upload-time": "2026-08-25T16:14:30Z", "yanked": False},
        {"filename": "mcp-2.2.0.tar.gz", "upload-time": "2026-09-08T16:06:19Z", "yanked": "bad"},
        {"filename": "not-a-dist.zip"}]})
    found = releases.parse_pep691(page)
    assert found["2.1.1"] == Release("2.1.1", datetime(2026, 8, 25, 16, 13, 59, 24858,
                                                       timezone.utc), False)
    assert found["2.2.0"].yanked and set(found) == {"2.1.1", "2.2.0"}


def test_go_cargo_and_maven_listings():
    assert releases.parse_go_versions('{"Path": "m", "Versions": ["v1.7.0", "v1.8.0"]}') == [
        "v1.7.0", "v1.8.0"]
    assert releases.parse_go_versions('{"Path": "m"}') == []
    index = ('{"name":"rmcp","vers":"0.1.0","yanked":true}\n'
             '{"name":"rmcp","vers":"3.1.4","yanked":false,"pubtime":"2026-08-20T03:47:12Z","v":2}\n')
    assert releases.parse_sparse_index(index) == [
        Release("0.1.0", None, True),
        Release("3.1.4", datetime(2026, 8, 20, 3, 47, 12, tzinfo=timezone.utc), False)]
    assert [releases.sparse_index_path(c) for c in ("a", "ab", "abc", "rmcp", "Serde")] == [
        "1/a", "2/ab", "3/a/abc", "rm/cp/rmcp", "se/rd/serde"]
    xml = ("<metadata><groupId>io.modelcontextprotocol.sdk</groupId><versioning>"
           "<latest>2.2.0</latest><versions><version>2.0.0-M2</version><version>2.1.0"
           "</version></versions><lastUpdated>20261129095406</lastUpdated></versioning></metadata>")
    assert releases.parse_maven_metadata(xml) == ["2.0.0-M2", "2.1.0"]


def test_a_failing_listing_says_which_command(tmp_path):
    with pytest.raises(releases.ReleaseError, match=r"`python3 -c .*` exited with code 3: nope"):
        releases.releases("x", "pypi", ["python3", "-c", "import sys; sys.stderr.write('nope'); sys.exit(3)"])
    with pytest.raises(releases.ReleaseError, match="the npm listing of x could not be read"):
        releases.releases("x", "npm", ["echo", "not json"])
