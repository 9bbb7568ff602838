"""Default measurement settings, shared by the CLI and the library. Kept free of heavy imports
so that ``mcpstart --help`` starts fast."""

RUNS = 6
WARMUP = 1
TIMEOUT_S = 60.0
PAYLOAD_BYTES = 5 * 1024 * 1024
REVISION = "2025-11-25"
"""The newest protocol revision of the initialize-handshake era (MCP specification 2025-11-25)."""
PAUSE_MS = 50.0
"""Idle pause before every timed spawn, ms. The rule: a cold start read right after the
previous one reads faster than one after idle (caches still hot), and the reading rises to a
plateau as the idle grows; the pause is well inside that plateau (the C harness's figures:
docs/figures.md, "The pause"; the rule: docs/measurement.md)."""
ROUND_TRIPS = 100
PROFILED_STARTS = 3
"""Start-up profiles per server (measure/attribution.py), after the counted cold starts: a
median for the table. Each costs about one instrumented cold start."""
PROFILED_STARTS_COMPARE = 7
"""Start-up profiles per server when --sdk variants are measured to be compared: compare
names a distribution's change when its exact two-sided Mann-Whitney p, adjusted over the
distributions tested (Holm), is at most 0.1 (views/start_change.py). 3 starts a side reach p =
0.1 at least, which no adjusted p of two distributions or more passes; 7 reach 2 / C(14, 7)
= 0.00058, so a change separating every start passes among up to 170 distributions (a Python
MCP server imports about 30)."""
WARM_SESSIONS = 3
"""Sessions a warm series' counted calls are spread over (measure/warm_sessions.py). With a
slow mode in about a third of the sessions (the C floor on a 2-vCPU VM: 3 or 4 of 10), 3
sessions show both modes in about 2 runs of 3 (1 - 0.35^3 - 0.65^3 = 0.68), at the cost of
2 more starts of each server."""
PROBE_FLOOR_S = 5.0
"""The least wait of a revision-matrix probe (measure/revisions.py, probe_wait)."""
OUTPUT = "mcpstart-results.json"
"""The results file written when --output is not given (its TOML copy sits beside it)."""
LOAD_S = 10.0
LOAD_USERS = 10
"""The load bounds: 10 users for 10 s per scenario (the k6 benchmark ran 10 to 50)."""
LOAD_TIMEOUT_S = 5.0
"""Per-request timeout under load: a request unanswered after it is a timeout error."""
LOAD_RATE = 100.0
"""Requests per second of the fixed-rate load scenarios (closed and open loop)."""
LOAD_BOUND = 0.6
"""A load block whose rate is 60% of the engine's ceiling or more is engine-bound
(measure/load.py). In a closed loop each user's cycle is the server's time plus the engine's
own per-request time, so a rate at a large share of what the engine reaches against a server
that costs it nothing has spent that share of its cycles in the engine. The line is
calibrated by benchmarks/load_check.py (autocannon on the same server process, docs/checks.md):
0.6 lies between the blocks that read well under autocannon's rate (the engine's figure) and
those that read near it (the server's), where 0.8 left blocks at half of autocannon's rate
unmarked (the calibration's figures: docs/figures.md, "Load: the engine-bound line")."""
CEILING_OVER = 1.1
"""A load block whose rate is more than 110% of its ceiling shows that the ceiling was not the
engine's maximum (the floor was limited there by something else, e.g. the work of its answer,
or by noise): the block is then not judged (engine_bound unknown) and the table says so."""
SERVER_BUSY = 0.85
"""A server whose tree used 85% of the cores it was given over a load block is what limits
the rate (measure/load.py), whatever share of the engine's ceiling that rate is: a server as
fast as the engine reaches a large share of the ceiling and still reads near autocannon's
rate (benchmarks/load_check.py; the figures: docs/figures.md, "Load: the engine-bound line")."""
LOAD_PACE_MISS = 0.1
"""A fixed-rate scenario missed its asked rate when it reached less than 90% of it."""
HTTP_SESSIONS = 100
"""Full sessions timed per HTTP server (and the memory slope over them)."""
THRESHOLD_PCT = 10.0
"""compare: percent above OLD's median a significant slowdown must reach to count."""
THRESHOLDS_PCT = {"time": THRESHOLD_PCT, "calls": 50.0, "memory": 10.0, "footprint": 10.0,
                  "tools": 10.0, "load": 10.0}
"""compare: per metric family, the percent a change for the worse must reach to count
(docs/compare.md): timings and load latency slower, memory, sizes, counts and tokens larger,
load throughput lower. "calls" (the warm round trips and HTTP latency: the calls of one
session per run) is wider: the median of one session moves from session to session by more
than the cold starts' 10% on an unchanged server (Node's warm calls: 0.70 against 0.48 ms in
two 8-session runs of benchmarks/warm_check.py, docs/checks.md)."""
CALLS_NOISE_MS = 0.1
"""compare: a change of a "calls" median of at most 0.1 ms is noise, whatever its p (two runs
of one unchanged stdio server differed by 0.054 ms at p < 1e-15: each run's calls come from
one session, so the test compares sessions; benchmarks/warm_check.py holds mcpstart's own round
trip to a plain client's within 0.1 ms, docs/checks.md)."""
MEMORY_NOISE_PCT = 4.0
"""compare: a memory difference of at most 4% is noise, whatever the threshold. Each idle
reading is held to within 2% of /proc read by another process (benchmarks/memory_check.py,
docs/checks.md), so two readings of the same tree can differ by up to 2 x 2% through the
reading alone (docs/compare.md)."""
ALPHA = 0.01
"""compare: significance level of its exact one-sided Mann-Whitney U test."""
