"""End to end: every verdict of mcpstart/transports/clients.py (what the TypeScript SDK's and
the Python SDK's clients do with a message's bytes) checked against the clients themselves:
each deviation's example is fed to the TypeScript SDK in the built TypeScript reference
server's folder (tests/clients/typescript_probe.mjs) and to the Python SDK in the built Python
reference server's venv (tests/clients/python_probe.py), as a stdio line, an application/json
body and an event's data. The builds come from mcpstart's cache, as tests/test_http_servers.py's."""

import json
import subprocess
from pathlib import Path

import pytest

from mcpstart.targets.build import cache_root, ensure_built
from mcpstart.targets.recipes import load_recipes
from mcpstart.transports.clients import (CARRIERS, DEVIATIONS, ENDS, LAST, PYTHON_INT_DIGITS,
                                         PYTHON_MAX_DEPTH, READS, REJECTS, REPLACES,
                                         SDK_VERSIONS)

from conftest import unavailable

pytestmark = [pytest.mark.e2e, pytest.mark.untimed]  # what clients do, not how fast

ROOT = Path(__file__).parent.parent
PROBES = Path(__file__).parent / "clients"
def message(x: bytes) -> bytes:
    return b'{"jsonrpc":"2.0","id":1,"result":{"x":' + x + b"}}"


READ_BY_ALL = {
    "well_formed": message(b"1"),
    "digits_at_the_limit": message(b"1" * PYTHON_INT_DIGITS),
    "depth_at_the_limit": message(b"[" * (PYTHON_MAX_DEPTH - 2) + b"]" * (PYTHON_MAX_DEPTH - 2)),
}
"""Messages every client reads: a probe can say "reads", and the limits clients.py names are
the last values read (one more is each limit's deviation example)."""
RECIPE_OF = {"typescript": "typescript", "python": "python"}
CLAIMS = [(name, client, carrier) for name, deviation in DEVIATIONS.items()
          for client in deviation.verdicts for carrier in CARRIERS]
HOLDS = {
    READS: lambda outcome, value: outcome == "reads",
    REPLACES: lambda outcome, value: outcome == "reads" and "\ufffd" in value,
    LAST: lambda outcome, value: outcome == "reads" and value == "2",
    REJECTS: lambda outcome, value: outcome == "rejects",
    ENDS: lambda outcome, value: outcome == "ends",
}
"""Verdict -> whether a probe's (outcome, value) shows it (the examples' last duplicate is 2)."""


@pytest.fixture(scope="module")
def builds() -> dict:
    """client -> the Build of the reference server whose folder holds that client's SDK."""
    out = {}
    for client, name in RECIPE_OF.items():
        [recipe] = load_recipes(ROOT / "build-recipes", [name])
        build = ensure_built(recipe, cache_root())
        if build.status == "skipped":
            unavailable(f"{recipe.name}: {build.reason}")
        assert build.ok, f"{recipe.name}: {build.reason}\n{build.log_tail}"
        out[client] = build
    return out


@pytest.fixture(scope="module")
def seen(builds, tmp_path_factory) -> dict:
    """client -> case -> carrier -> [outcome, value], both probes run at once."""
    cases = tmp_path_factory.mktemp("claims") / "cases.json"
    cases.write_text(json.dumps({**{name: m.hex() for name, m in READ_BY_ALL.items()},
                                 **{name: d.example.hex() for name, d in DEVIATIONS.items()}}))
    running = {
        "typescript": subprocess.Popen(
            ["node", "--input-type=module", "-e", (PROBES / "typescript_probe.mjs").read_text(),
             str(cases)], cwd=builds["typescript"].path(""), stdout=subprocess.PIPE,
            stderr=subprocess.PIPE),
        "python": subprocess.Popen(
            [builds["python"].command().argv[0], str(PROBES / "python_probe.py"), str(cases)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)}
    out = {}
    for client, proc in running.items():
        stdout, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 0, f"{client} probe: {stderr.decode()[-2000:]}"
        out[client] = json.loads(stdout)
    return out


@pytest.mark.parametrize("name,client,carrier", CLAIMS,
                         ids=[f"{n}-{c}-{k}" for n, c, k in CLAIMS])
def test_each_claim_holds_for_that_client(seen, name, client, carrier):
    verdict = DEVIATIONS[name].verdicts[client][carrier]
    outcome, value = seen[client][name][carrier]
    assert HOLDS[verdict](outcome, value), \
        f"clients.py says {client} {verdict} ({name}, {carrier}); it did: {outcome} {value!r}"


@pytest.mark.parametrize("name", READ_BY_ALL)
def test_every_client_reads_a_message_within_the_limits(seen, name):
    for client in seen:
        outcomes = seen[client][name]
        assert all(outcomes[c][0] == "reads" for c in CARRIERS), (client, outcomes)


def test_the_claims_name_the_sdk_versions_that_were_probed(builds):
    package = builds["typescript"].path("node_modules/@modelcontextprotocol/server/package.json")
    assert json.loads(Path(package).read_text())["version"] == SDK_VERSIONS["typescript"]
    [metadata] = Path(builds["python"].command().argv[0]).parent.parent.glob(
        "lib/python*/site-packages/mcp-*.dist-info/METADATA")
    version = next(line.split(": ", 1)[1] for line in metadata.read_text().splitlines()
                   if line.startswith("Version: "))
    assert version == SDK_VERSIONS["python"]
