"""The property-based fault harness: a scripted server plays a correct session, Hypothesis
draws one to three mutations of it (tests/mutations.py: per message, per byte stream, per
process) and where each strikes, and every case must keep the invariants:

- mcpstart returns a row, never an internal error;
- an evident answer or failure is acted on within the diagnosis wait: no process of the
  case lives as long as --timeout (virtual time: which timer fired, not the wall clock),
  unless a mutation there sent nothing evident;
- the cause names what happened, in the server's terms (the kind's evidence);
- everything measured before the fault stays in the row;
- both results files are written and read back;
- the table and the exports render.

The run is fixed (derandomized); MCPSTART_FAULT_CASES sets how many cases (100 in the fast
tier, beside every kind alone at every point; a fuller run: MCPSTART_FAULT_CASES=200, the long
run: MCPSTART_FAULT_CASES=5000 python3 -m pytest tests/test_mutations.py).
"""

import json
import os
import sys
import time
import tomllib
from pathlib import Path

import psutil
import pytest

from conftest import require_modules

require_modules("hypothesis")  # the test extra's property-based engine
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from mcpstart.command import Command
from mcpstart.measure import run
from mcpstart.results import ServerResult, load
from mcpstart.transports.session import Waits
from mcpstart.transports.tree import child_subreaper
from mcpstart.views.exports import exporter
from mcpstart.views.table import table

from conftest import fast
from mutations import BY_NAME, KINDS, METHODS, TIMEOUT_S, Mutation, MutatedServer
from scripted import Spawner

CASES = int(os.environ.get("MCPSTART_FAULT_CASES", "100"))
FAILING = ("failed", "timeout")

mutation = st.sampled_from(KINDS).flatmap(
    lambda kind: st.sampled_from(kind.methods).map(lambda method: Mutation(kind.name, method)))
cases = st.lists(mutation, min_size=1, max_size=3, unique_by=lambda m: m.method)


def measure(mutations):
    spawner = Spawner({"server": lambda: MutatedServer(tuple(mutations))})
    settings_ = fast(spawner=spawner, runs=1, warmup=0, round_trips=2, payload_bytes=2000,
                     timeout_s=TIMEOUT_S, probe_timeout_s=5.0, order="sequential",
                     waits=Waits(shutdown_grace_s=2.0, diagnosis_s=2.0))
    servers = [run.Server(ServerResult("server"), Command(["server"]))]
    return run.measure(servers, settings_, ["mcpstart", "measure"], {}), spawner


def reached(mutations, spawner) -> list[Mutation]:
    """The mutations whose method some process was asked, in session order."""
    asked = {m.get("method") for _, t in spawner.made for m in t.sent if isinstance(m, dict)}
    hit = [m for m in mutations if m.method in asked]
    return sorted(hit, key=lambda m: METHODS.index(m.method))


def said(row) -> str:
    """Everything the row says: its reason, warnings and the revision matrix's errors."""
    parts = [row.reason or ""] + [str(w.get("detail")) for w in row.warnings]
    for probe in (row.protocol or {}).get("matrix") or []:
        parts.append(f"{probe['outcome']}: {probe.get('error_message') or ''}")
    return "\n".join(parts)


def check(mutations, tmp_path) -> None:
    results, spawner = measure(mutations)
    hit = reached(mutations, spawner)
    if not any(m.spec.expect == "timeout" for m in hit):
        lives = [t.lifetime_s for _, t in spawner.made]
        assert max(lives) < TIMEOUT_S, (lives, said(results.servers[0]))  # not the timeout
    keeps_invariants(results, hit, tmp_path)


def keeps_invariants(results, hit: list[Mutation], tmp_path) -> None:
    """The invariants of a case whose mutations ``hit`` were reached (module doc)."""
    (row,) = results.servers
    text = said(row)
    assert "mcpstart could not measure this server" not in text, text
    failing = [m for m in hit if m.spec.expect in FAILING]
    broken = {m.method for m in failing}
    for m in hit:
        evidence = m.spec.evidence
        if m.spec.needs in broken:
            continue
        if m.spec.expect == "timeout" and m.method == "server/discover":
            assert "no_answer" in text or evidence in text, (m, text)
        elif evidence is not None:
            assert evidence in text, (m, text)
    first = next((m for m in failing if m.method != "server/discover"), None)
    if first is None:
        assert row.status == "ok", (row.reason, text)
    else:
        assert row.status == "failed"
        if first.method != "initialize":  # what came before the fault stays
            assert row.handshake_ms["n"] == 1 and row.handshake_ms["median"] is not None
        if first.method == "tools/call":
            assert row.tools is not None and row.tools["count"] == 1
    written_and_rendered(results, tmp_path)


def written_and_rendered(results, tmp_path) -> None:
    """Both results files are written and read back; the table and the exports render."""
    path = tmp_path / "results.json"
    results.save(path)
    loaded = load(path)
    assert loaded.to_dict() == json.loads(path.read_text())
    tomllib.loads(path.with_suffix(".toml").read_text(encoding="utf-8"))
    table([loaded])
    exporter("long_csv").render([loaded])
    exporter("hyperfine_json").render([loaded])


@settings(max_examples=CASES, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(cases)
def test_every_mutation_of_a_good_answer_keeps_the_invariants(tmp_path, mutations):
    check(mutations, tmp_path)


@pytest.mark.parametrize("kind", KINDS, ids=[kind.name for kind in KINDS])
def test_every_kind_alone_at_every_point(tmp_path, kind):
    """Each kind of the grammar alone, at each method it may strike (the cases Hypothesis
    builds on)."""
    for method in kind.methods:
        check([Mutation(kind.name, method)], tmp_path)


def test_a_deviation_met_only_in_a_later_start_is_the_rows_warning(tmp_path):
    """Found by the 5000-case run: the handshake fails (the server closes its stdin after
    initialize), and tools/list is asked only by the caching start, whose string id must be
    warned about in the row as any other start's."""
    check([Mutation("close_stdin", "initialize"), Mutation("id_other_type", "tools/list")],
          tmp_path)


SCRIPTED = Path(__file__).parent / "fakes" / "scripted_server.py"
REAL_KINDS = [k for k in KINDS if k.expect != "timeout" and k.family == "process"] + [
    BY_NAME[name] for name in ("split_writes", "no_final_newline", "invalid_utf8", "cut_off")]
real_mutation = st.sampled_from(REAL_KINDS).flatmap(
    lambda kind: st.sampled_from(kind.methods).map(lambda method: Mutation(kind.name, method)))
REAL_TIMEOUT_S = 30.0


def in_session_order(mutations) -> list[Mutation]:
    """The mutations a real server's session reaches: those up to the first that fails
    (server/discover runs in processes of its own)."""
    hit = []
    for m in sorted(mutations, key=lambda m: METHODS.index(m.method)):
        hit.append(m)
        if m.spec.expect in FAILING and m.method != "server/discover":
            break
    return hit + [m for m in mutations if m.method == "server/discover" and m not in hit]


@pytest.mark.e2e  # a real timing: real processes' faults end before the timeout
@settings(max_examples=10, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(real_mutation, min_size=1, max_size=2, unique_by=lambda m: m.method),
       st.sampled_from([(), ("--child-holds-stdout",), ("--ignore-term",)]))
def test_real_processes_keep_the_invariants(tmp_path, mutations, switches):
    """A smaller set against real processes, for the faults a process makes: exits with a
    code or a signal, closed pipes, floods, a child that keeps the pipes, a trapped SIGTERM.
    With a 30 s timeout, every case must end well before it; nothing may be left running."""
    plan = json.dumps([[m.kind, m.method] for m in mutations])
    command = Command([sys.executable, str(SCRIPTED), plan, *switches])
    settings_ = fast(runs=1, warmup=0, round_trips=2, payload_bytes=2000, timeout_s=REAL_TIMEOUT_S,
                     probe_timeout_s=5.0, order="sequential")
    began = time.monotonic()
    with child_subreaper():
        results = run.measure([run.Server(ServerResult("server"), command)], settings_,
                              ["mcpstart", "measure"], {})
    assert time.monotonic() - began < REAL_TIMEOUT_S
    keeps_invariants(results, in_session_order(mutations), tmp_path)
    left = [p.pid for p in psutil.process_iter(["cmdline"])
            if str(SCRIPTED) in " ".join(p.info["cmdline"] or [])]
    assert left == []
