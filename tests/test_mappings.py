"""Idle memory by class of mapping (mcpstart/measure/mappings.py, docs/process-tree.md): each
kind of mapping lands in its class, the classes of a live fake server sum to its VmRSS and
show the memory it holds, and the memory block sums its processes' splits."""

import json
import subprocess

from conftest import FAKE, PYTHON
from mcpstart.measure import mappings, memory
from mcpstart.transports.tree import ProcessSet
from mcpstart.views.table import ROW_BY_PATH, cell, top_holder
from mcpstart.views.why import why

EXE = "/usr/bin/node"
SMAPS = """\
00400000-00600000 r-xp 00000000 fe:00 11 /usr/bin/node (deleted)
Size:               2048 kB
Rss:                1024 kB
Pss:                 512 kB
VmFlags: rd ex mr mw me
00600000-00700000 r--p 00200000 fe:00 11 /usr/bin/node
Size:               1024 kB
Rss:                 100 kB
Pss:                 100 kB
01000000-01100000 rw-p 00000000 00:00 0 [heap]
Size:               1024 kB
Rss:                 900 kB
Pss:                 900 kB
7f0000000000-7f0000040000 rwxp 00000000 00:00 0
Size:                256 kB
Rss:                 200 kB
Pss:                 200 kB
7f0000040000-7f0000080000 rw-p 00000000 00:00 0
Size:                256 kB
Rss:                  64 kB
Pss:                  64 kB
7f0000080000-7f0000090000 rw-p 00000000 00:00 0 [anon:v8 heap]
Size:                 64 kB
Rss:                  32 kB
Pss:                  32 kB
7f1000000000-7f1000100000 r-xp 00000000 fe:00 22 /usr/lib/libc.so.6 (deleted)
Size:               1024 kB
Rss:                 400 kB
Pss:                  40 kB
7f1000100000-7f1000110000 rw-p 00000000 fe:00 23 /tmp/a file with spaces
Size:                 64 kB
Rss:                   8 kB
Pss:                   8 kB
7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0 [stack]
Size:                132 kB
Rss:                  16 kB
Pss:                  16 kB
7ffc00100000-7ffc00102000 r-xp 00000000 00:00 0 [vdso]
Size:                  8 kB
Rss:                   4 kB
Pss:                   0 kB
"""


def kib(size: int, rss: int, pss: int) -> dict:
    return {"size_bytes": size * 1024, "rss_bytes": rss * 1024, "pss_bytes": pss * 1024}


def test_each_kind_of_mapping_lands_in_its_class():
    assert mappings.parse(SMAPS, EXE) == {
        "exe_code": kib(2048, 1024, 512), "lib_code": kib(1024, 400, 40),
        "jit_code": kib(256, 200, 200), "heap": kib(1024, 900, 900), "stack": kib(132, 16, 16),
        "anon": kib(320, 96, 96), "file_data": kib(1088, 108, 108), "other": kib(8, 4, 0)}
    assert top_holder(mappings.parse(SMAPS, EXE)) == ("exe_code", 1024 * 1024, 1024 / 2748)


def vm_rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as handle:
        return next(int(line.split()[1]) * 1024 for line in handle if line.startswith("VmRSS:"))


def ask(proc: subprocess.Popen, mid: int, method: str, params: dict) -> dict:
    """One request to a fake server over its pipes, and its answer."""
    proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": mid, "method": method,
                                 "params": params}) + "\n")
    proc.stdin.flush()
    answer = json.loads(proc.stdout.readline())
    assert answer["id"] == mid
    return answer


def idle_fake(*switches: str) -> subprocess.Popen:
    """A fake server past its start (it answered initialize), then idle on its stdin."""
    proc = subprocess.Popen([*PYTHON, str(FAKE), *switches], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    ask(proc, 1, "initialize", {"protocolVersion": "2025-06-18"})
    return proc


def test_a_live_split_sums_to_rss_and_holds_the_allocation_as_anon():
    small, large = idle_fake(), idle_fake("--idle-mib", "48")
    try:
        rows = {proc: memory.idle_rows(ProcessSet(proc.pid)) for proc in (small, large)}
        rss = {proc: vm_rss(proc.pid) for proc in rows}
    finally:
        for proc in (small, large):
            proc.stdin.close()
            proc.wait(5)
    for proc, (row,) in rows.items():
        split = row["idle_split"]
        summed = sum(value["rss_bytes"] for value in split.values())
        assert abs(summed - rss[proc]) <= 0.02 * rss[proc], (summed, rss[proc])
        assert split["lib_code"]["rss_bytes"] > 0  # the C library at least
        assert split["exe_code"]["size_bytes"] > 0
        pss = sum(value["pss_bytes"] for value in split.values())
        assert abs(pss - row["idle_pss_bytes"]) <= 0.02 * row["idle_pss_bytes"]
    grown = (rows[large][0]["idle_split"]["anon"]["rss_bytes"]
             - rows[small][0]["idle_split"]["anon"]["rss_bytes"])
    assert 46 << 20 <= grown <= 52 << 20, grown
    block = memory.idle_block(rows[large], 0.0, memory.SettleRule(), memory.Sampling(), [])
    assert block["idle_split"] == rows[large][0]["idle_split"]


def test_the_split_near_the_peak_shows_the_class_that_grew():
    proc = idle_fake("--then-alloc-mib", "48")  # holds 48 MiB for 0.3 s inside the call
    try:
        processes = ProcessSet(proc.pid)
        idle = mappings.split(proc.pid)
        with memory.Sampler(processes, memory.Sampling()) as sampler:
            ask(proc, 2, "tools/call", {"name": "reverse_text",
                                        "arguments": {"text": "a" * 200_000}})
    finally:
        proc.stdin.close()
        proc.wait(5)
    grown = {name: sampler.peak_split[name]["rss_bytes"] - idle[name]["rss_bytes"]
             for name in mappings.CLASSES}
    assert max(grown, key=grown.get) == "anon"
    assert 46 << 20 <= grown["anon"] <= 54 << 20, grown
    assert mappings.rss(sampler.peak_split) <= sampler.peak_bytes * 1.02


def test_the_block_sums_splits_class_by_class_and_loses_none():
    one, two = mappings.parse(SMAPS, EXE), mappings.parse(SMAPS, "/elsewhere")
    summed = mappings.total([one, two])
    assert summed["exe_code"]["rss_bytes"] == 1024 * 1024
    assert summed["lib_code"]["rss_bytes"] == (1024 + 400 + 400) * 1024
    assert mappings.total([one, None]) is None and mappings.total([]) is None


def test_the_table_and_why_name_the_holders():
    split = mappings.parse(SMAPS, EXE)
    server = {"name": "node", "transport": "stdio", "status": "ok",
              "handshake_ms": {"n": 1, "median": 50.0}, "start_usage": None,
              "imports": {"import_ms": 1.0, "instrumented_ms": 2.0, "runs": 1,
                          "uninstrumented_ms": 2.0, "interpreter_ms": 1.0, "distributions": []},
              "memory": {"idle_split": split}}
    assert cell(server, ROW_BY_PATH["memory.idle_split"]) == "exe_code 1.0 (37%)"
    text = why({"servers": [server]}, "node")
    lines = text[text.index("idle memory by class"):].splitlines()[1:]
    assert [line.split(":")[0].strip() for line in lines] == [
        "exe_code", "heap", "lib_code", "jit_code", "file_data", "anon", "stack", "other"]
    assert lines[0].strip() == "exe_code: 1.0, 0.5"


def test_why_of_a_row_measured_without_attribution_shows_its_memory_and_says_the_rest():
    """--no-attribution leaves the start's blocks out, not the idle split: why prints the
    split and says why each start block is missing, rather than refusing the row."""
    split = mappings.parse(SMAPS, EXE)
    reason = "--no-attribution"
    server = {"name": "plain", "transport": "stdio", "status": "ok",
              "handshake_ms": {"n": 1, "median": 50.0}, "start_usage": None, "imports": None,
              "not_measured": {"start_usage": reason, "imports": reason},
              "memory": {"idle_split": split}}
    text = why({"servers": [server]}, "plain")
    assert "  start usage: not measured: --no-attribution" in text.splitlines()
    assert "  imports: not measured: --no-attribution" in text.splitlines()
    assert "idle memory by class" in text
