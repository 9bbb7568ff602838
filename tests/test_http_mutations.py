"""The generated HTTP fault harness: a scripted Streamable HTTP server plays a correct
session through mcpstart's own HTTP transport on a virtual clock (tests/scripted_http.py),
Hypothesis draws one to three mutations of it (tests/http_mutations.py) and where each
strikes, and every case must keep the invariants of the stdio harness
(tests/test_mutations.py): a row, never an internal error; an evident failure acted on
at once (no process lives as long as --timeout, in virtual time); the cause holds the
kind's evidence; what came before the fault stays; both results files are written and read
back; the table renders.

MCPSTART_HTTP_FAULT_CASES sets how many cases (120 here; the long run: 5000 and more, with
pytest's --hypothesis-show-statistics for the count of each kind drawn).
"""

import os

import pytest
from hypothesis import HealthCheck, event, given, settings, strategies as st

from conftest import fast
from mcpstart.command import Command
from mcpstart.measure import run
from mcpstart.results import ServerResult

from http_mutations import KINDS, METHODS, REDIRECTS_FOLLOWED, Mutation, MutatedHttp
from scripted_http import HttpSpawner
from test_mutations import said, written_and_rendered

CASES = int(os.environ.get("MCPSTART_HTTP_FAULT_CASES", "120"))
TIMEOUT_S = 60.0

mutation = st.sampled_from(KINDS).flatmap(
    lambda kind: st.sampled_from(kind.methods).map(lambda method: Mutation(kind.name, method)))
cases = st.lists(mutation, min_size=1, max_size=3, unique_by=(
    lambda m: m.method,
    lambda m: "followed" if m.kind in REDIRECTS_FOLLOWED else (m.kind, m.method)))


def check(mutations, tmp_path) -> None:
    spawner = HttpSpawner(lambda: MutatedHttp(tuple(mutations)))
    settings_ = fast(http_spawner=spawner, runs=1, warmup=0, round_trips=2,
                     payload_bytes=2000, http_sessions=2, timeout_s=TIMEOUT_S,
                     probe_timeout_s=5.0, order="sequential", transport="http", load_s=0)
    server = run.Server(ServerResult("server", "http"), Command(["server", "{port}"]),
                        transport="http")
    results = run.measure([server], settings_, ["mcpstart", "measure"], {})
    asked = {r.message.get("method") for t in spawner.made for r in t.requests
             if isinstance(r.message, dict)}
    hit = sorted((m for m in mutations if m.method in asked), key=lambda m: METHODS.index(m.method))
    lives = [t.lifetime_s for t in spawner.made if t.lifetime_s is not None]
    assert max(lives) < TIMEOUT_S, (lives, results.servers[0].reason)
    keeps_invariants(results, hit, tmp_path)


def keeps_invariants(results, hit: list[Mutation], tmp_path) -> None:
    """The invariants of a case whose mutations ``hit`` were reached (module doc)."""
    (row,) = results.servers
    text = said(row)
    assert "mcpstart could not measure this server" not in text, text
    for m in hit:
        if m.spec.evidence is not None:
            assert m.spec.evidence in text, (m, text)
    first = next((m for m in hit if m.spec.expect == "failed"), None)
    if first is None:
        assert row.status == "ok", (row.reason, text)
    else:
        assert row.status == "failed", (first, text)
        if first.method != "initialize":  # what came before the fault stays
            assert row.http["start_ms"]["initialize"]["n"] == 1, row.http
        if first.method == "tools/call":
            assert row.tools is not None and row.tools["count"] == 1
    written_and_rendered(results, tmp_path)


@settings(max_examples=CASES, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(cases)
def test_every_mutation_of_a_good_http_answer_keeps_the_invariants(tmp_path, mutations):
    for m in mutations:
        event(m.kind)
    check(mutations, tmp_path)


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_every_http_kind_alone(tmp_path, kind):
    """Each kind alone, at the methods in turn (kind i at METHODS[i % 3]); the long run
    (MCPSTART_HTTP_FAULT_CASES=5000 and more) takes every kind at every method."""
    index = KINDS.index(kind)
    methods = kind.methods if CASES >= 5000 else [kind.methods[index % len(kind.methods)]]
    for method in methods:
        check([Mutation(kind.name, method)], tmp_path)
