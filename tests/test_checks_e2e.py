"""End to end: each independent check of benchmarks/ run once on the floor server, with bounds
loose enough for a busy machine, tight enough that a 2x error fails (mcpstart within LOOSE times
the independent figure, either way, plus the target's absolute slack; memory within twice its
tolerance): the handshake
(overhead.py, the C harness), the warm round trip (warm_check.py, a plain client), idle memory
(memory_check.py, a /proc reader; on go), tool count, bytes and tokens (tools_check.py, a raw probe
and tiktoken; equal), the HTTP phases (http_clock.py, the C client), the loader's counts (loader_check.py, the
ELF files' relocation tables; equal) and the per-tool warm calls (workload_check.py, a plain
client on the same pipes or the same HTTP server). Builds come from
mcpstart's cache, as the scripts take them."""

import os
import statistics
from contextlib import contextmanager
from dataclasses import replace

import pytest

from mcpstart.measure import mock_api, native_loader
from mcpstart.measure.server import Server
from mcpstart.measure.settings import Settings
from mcpstart.results import ServerResult
from mcpstart.targets.build import cache_root, ensure_built
from mcpstart.targets.recipes import load_recipes
from mcpstart.transports.http import HttpTransport
from mcpstart.workload import load

from conftest import BENCHMARKS, benchmark, require_programs, unavailable

pytestmark = pytest.mark.e2e


LOOSE = 1.5
ROUNDS = 3
"""The rounds a timing comparison may take to agree (test_the_handshake_against_the_c_harness)."""


def near(mine: float, theirs: float, slack_ms: float) -> bool:
    return theirs / LOOSE - slack_ms <= mine <= LOOSE * theirs + slack_ms


@pytest.fixture(scope="module")
def built():
    """name -> Command of the floor servers (c, c-http) and of go, built or from the cache."""
    commands = {}
    for recipe in load_recipes(BENCHMARKS.parent / "build-recipes", ["c", "c-http", "go"]):
        build = ensure_built(recipe, cache_root())
        if not build.ok:
            unavailable(f"{recipe.name}: {build.reason}")
        commands[recipe.name] = build.command()
    return commands


def test_the_handshake_against_the_c_harness(built, tmp_path):
    """overhead.py's round on the C floor: mcpstart's median handshake near the harness's, in
    one of up to ROUNDS rounds (a busy moment of the machine can take one round's median; an
    error of mcpstart's own is in every round: docs/checks.md has the round that missed)."""
    require_programs("cc")
    overhead = benchmark("overhead")
    binary = overhead.compile_harness(tmp_path)
    rounds = []
    for _ in range(ROUNDS):
        harness, mine, shutdowns = overhead.one_round(binary, built["c"], runs=8, warmup=3,
                                                      pause_ms=50)
        assert len(shutdowns) == 8
        rounds.append((mine, harness))
        if near(mine, harness, 0.05):
            break
    assert near(*rounds[-1], 0.05), f"(mcpstart, harness) ms medians by round: {rounds}"


@contextmanager
def one_cpu():
    """This process, and so every server it spawns meanwhile, on one CPU. A warm round trip
    of the floor server is bimodal session by session when client and server may sit on two
    CPUs of a VM: about 0.03 ms, or 0.35 ms when each answer waits for an idle CPU's wake-up
    (10 sessions of each method: 3 and 4 of 10 in the slow mode), so 2 sessions per method
    can compare two modes; on one CPU every session reads 0.01-0.05 ms."""
    allowed = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(allowed)})
    try:
        yield
    finally:
        os.sched_setaffinity(0, allowed)


def test_the_warm_round_trip_against_a_plain_client(built):
    warm = benchmark("warm_check")
    with one_cpu():
        found = warm.compare(built["c"], "stdio", rounds=2, calls=30)
    (mine, _), (theirs, _) = found["mcpstart"], found["plain"]
    assert 0 < mine and near(mine, theirs, warm.SLACK_MS)


def test_idle_memory_against_a_proc_reader(built):
    """On go: the C floor's PSS is a few pages, which other copies of the same binary (other
    runs on the machine) shift by more than 2% between two readings."""
    memory = benchmark("memory_check")
    found = memory.compare(built["go"], "stdio")
    assert found["pids"][0] == found["pids"][1]
    for figure in memory.FIGURES:
        mine, theirs = found["mcpstart"][figure], found["reader"][figure]
        assert abs(mine - theirs) <= 2 * memory.TOLERANCE * theirs, figure


@pytest.mark.tokenizer
@pytest.mark.untimed  # counts, bytes and tokens: equal, not timed
def test_tool_figures_against_a_raw_probe_and_tiktoken(built):
    try:
        import bpe_openai, tiktoken  # noqa: F401
    except ImportError as err:
        unavailable(f"{err.name} is not installed (the test extra has it)")
    tools = benchmark("tools_check")
    found = tools.compare(built["c"], "stdio")
    assert found["mcpstart"] == found["raw"]
    assert found["raw"]["count"] == 1 and found["raw"]["tokens"] > 20


def test_the_http_phases_against_the_c_client(built, tmp_path):
    """Each phase's minimum over 6 rounds: the medians of 4 rounds once missed by 1.7 ms on
    first_call (2.3 ms) in CI while every other phase met; a 2x clock error moves the minimum
    as much as the median."""
    clock = benchmark("http_clock")
    binary = clock.compile_client(tmp_path)
    settings = replace(Settings(), spawner=lambda command: HttpTransport(command))
    c_runs, our_runs = [], []
    for round_ in range(6):
        theirs, mine = clock.one_round(binary, built["c-http"], settings, round_)
        c_runs.append(theirs)
        our_runs.append(mine)
    found = clock.per_phase(c_runs, our_runs, pick=min)
    assert set(found) == set(clock.PHASES) - {"modern_port"}
    for phase, (theirs, mine) in found.items():
        assert near(mine, theirs, clock.SLACK_MS), phase


def test_the_runtime_heap_against_the_inspector():
    """memory_split_check's runtime heap part on the TypeScript server: mcpstart's profiled
    starts yield a runtime_heap (the attribution's measure is a generator: a check that does
    not iterate it reads none), within LOOSE of one by-hand start's inspector reading. At the
    answer V8's committed heap is bimodal (new space 8 or 16 MiB: 1.40x apart), inside LOOSE."""
    require_programs("node")
    check = benchmark("memory_split_check")
    [recipe] = load_recipes(BENCHMARKS.parent / "build-recipes", ["typescript"])
    build = ensure_built(recipe, cache_root())
    if not build.ok:
        unavailable(f"typescript: {build.reason}")
    mine = check.by_mcpstart(build.command(), "stdio", "node")
    with check.tempfile.TemporaryDirectory() as folder:
        hand = check.by_hand(build.command(), "stdio", "node", folder)
    assert mine["runs"] == Settings().profiled_starts
    for key in ("heap_committed_bytes", "heap_used_bytes"):
        assert near(mine[key], hand[key], 0), key
    assert hand["anon_rss_bytes"] > hand["heap_used_bytes"] / LOOSE


def test_the_loader_counts_against_the_elf_tables(built):
    """loader_check on the floor server: mcpstart's loader block (glibc's statistics, one
    profiled start) against the relocation tables of the program and of each library ldd
    lists, read with pyelftools: relative relocations equal, symbol resolutions above the
    tables' entries by the loader's own lookups only (at most OWN_LOOKUPS), the same objects."""
    require_programs("ldd")
    check = benchmark("loader_check")
    server = Server(ServerResult("c"), built["c"])
    program = built["c"].program()
    server.row.start_usage = {"processes": [{"name": os.path.basename(program)}]}  # one process
    assert native_loader.applies(server, None)
    list(native_loader.measure(server, replace(Settings(), profiled_starts=1)))
    block = server.row.loader
    files = [program, *check.libraries(program)]
    tables = [check.counts(p) for p in files if not os.path.basename(p).startswith("ld-linux")]
    relative, symbol = (sum(found[i] for found in tables) for i in (0, 1))
    assert block["relative_relocations"] == relative
    resolved = block["relocations"] + block["relocations_from_cache"]
    assert 0 <= resolved - symbol <= check.OWN_LOOKUPS
    assert sorted(block["objects"]) == sorted(os.path.basename(p) for p in files)


@pytest.mark.parametrize("recipe_name", ["c", "c-http"])
def test_the_per_tool_check_takes_turns_on_one_server(recipe_name):
    """workload_check's round on the C workload server: over stdio mcpstart's series function
    and the plain client on the same pipes, over HTTP mcpstart's per-call sessions and the
    plain client's on one server process; in turns, each method every tool's counted calls,
    the sleeping tool at least its delay on both, and each tool's medians within LOOSE (plus
    the check's 0.2 ms) of each other."""
    check = benchmark("workload_check")
    [recipe] = load_recipes(check.WORKLOAD_RECIPES, [recipe_name])
    build = ensure_built(recipe, cache_root())
    if not build.ok:
        unavailable(f"workload {recipe_name}: {build.reason}")
    settings = replace(Settings(), workload=load("benchmark"), round_trips=20, warm_sessions=1)
    with mock_api.for_workload(settings) as settings, \
            check.shared_process(recipe.transport, build.command()) as port:
        got = check.one_round(recipe_name, build.command(), settings, port)
    delay = next(c for c in settings.workload.calls if c.name == "simulate_database_query")
    for tool in got["plain"]:
        mine, theirs = got["mcpstart"][tool], got["plain"][tool]
        assert len(mine) == len(theirs) == 20, tool
        assert near(statistics.median(mine), statistics.median(theirs), check.SLACK_MS), tool
    for method in got:
        assert min(got[method]["simulate_database_query"]) >= delay.arguments["delay_ms"]
