"""Several sessions at once (copies.py) on real processes: the PSS of N copies checked
against a direct reading of /proc/PID/smaps_rollup, and the startup.sessions block of a run
(per server and per copy, the marginal cost from the one-copy start of the same rounds)."""

from mcpstart.measure import run
from mcpstart.measure.copies import copies_memory, label
from mcpstart.measure.startup import together
from mcpstart.results import ServerResult
from mcpstart.transports.tree import child_subreaper
from mcpstart.views.plot import figure
from mcpstart.views.table import table

from conftest import fake_command, fast

MIB = 1 << 20


def smaps_rollup(pid: int, field: str) -> int:
    """A field of /proc/PID/smaps_rollup in bytes (the kernel writes kB)."""
    with open(f"/proc/{pid}/smaps_rollup") as handle:
        for line in handle:
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no {field} in smaps_rollup of {pid}")


def test_the_pss_of_three_sessions_is_what_proc_says():
    servers = [((name, k), fake_command(*switches)) for k in (1, 2, 3)
               for name, switches in (("plain", ()), ("helper", ("--helper-mib", "20")))]
    with child_subreaper(), together(servers, fast()) as (sessions, times):
        assert all(t["tools_list"] is not None for t in times.values())
        rows, _, _ = copies_memory(sessions, fast())
        direct = {key: sum(smaps_rollup(p.pid, "Pss") for p in session.processes.alive())
                  for session, key in sessions.items()}
    assert len(rows) == 6
    assert {key: len(found) for key, found in rows.items()} == {
        (name, k): 1 if name == "plain" else 2 for name, k in rows}
    ours = {key: sum(r["idle_pss_bytes"] for r in found) for key, found in rows.items()}
    for key in ours:  # read a moment apart: within 1% or 64 KiB
        assert abs(ours[key] - direct[key]) <= max(0.01 * direct[key], 64 * 1024), key
    total = sum(ours.values())
    assert abs(total - sum(direct.values())) <= 0.01 * total
    helpers = [ours[("helper", k)] - ours[("plain", k)] for k in (1, 2, 3)]
    assert all(h >= 18 * MIB for h in helpers)  # the 20 MiB a helper holds is its own


def test_a_run_with_two_sessions_fills_startup_sessions():
    rows = [run.Server(ServerResult(name), fake_command()) for name in ("a", "b")]
    with child_subreaper():
        results = run.measure(rows, fast(runs=2, warmup=1, round_trips=0, payload_bytes=1000,
                                         probe_timeout_s=2.0), ["mcpstart", "measure"], {},
                              sessions=2)
    block = results.startup["sessions"]
    assert block["n"] == 2 and "error" not in block
    assert block["ready_ms"]["n"] == 2 and len(block["ready_ms"]["warmup_samples"]) == 1
    assert [r["copies"] for r in block["rounds"]] .count(2) == 3
    assert len(block["runs"]) == 2 and set(block["runs"][0]) == {
        label(n, k) for n in ("a", "b") for k in (1, 2)}
    assert all(r["memory"] is None for r in block["rounds"] if r["warmup"])
    counted = [r for r in block["rounds"] if not r["warmup"]]
    assert all(r["memory"] and r["settled"] is not None for r in counted)
    for kind in ("pss", "uss", "rss"):  # (total with 2 - total with 1) / (2 - 1)
        assert block[f"marginal_{kind}_bytes"] == \
            block[f"{kind}_bytes"] - block[f"single_{kind}_bytes"]
    for entry in block["per_server"].values():
        assert [c["copy"] for c in entry["copies"]] == [1, 2]
        assert all(c["processes"] == 1 and c["pss_bytes"] > MIB for c in entry["copies"])
        assert entry["marginal_pss_bytes"] > MIB
        assert entry["ready_ms"]["median"] <= block["ready_ms"]["median"]
    per_round = [sum(m["pss_bytes"] for m in r["memory"].values())
                 for r in counted if r["copies"] == 2]
    assert block["pss_bytes"] == round(sorted(per_round)[0] / 2 + sorted(per_round)[1] / 2)
    text = table(results.to_dict())  # the views: a section under the table, the timeline
    assert "2 sessions at once: 2 copies of every stdio server spawned together" in text
    assert "- a: last copy ready" in text and "Startup budget" not in text
    ax = figure(results.to_dict(), "timeline").axes[0]
    assert {t.get_text().split("  ")[0] for t in ax.get_yticklabels()} == {"a #1", "a #2", "b #1", "b #2"}
    assert ax.get_title() == "Startup timeline: 2 copies of every server spawned at once"
