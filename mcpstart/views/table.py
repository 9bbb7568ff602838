"""Tables: views of one or more results files (docs/results.md), metrics as rows
and one column per server (per server and file when several files are shown).

Readers tolerate any JSON value: a value absent because its block is listed in the row's
``not_measured`` shows "n/a"; absent because a failure stopped it, "-"; a value of an
unexpected type, "?".
"""

from __future__ import annotations

import re
import shlex
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from ..defaults import CEILING_OVER, LOAD_BOUND, LOAD_PACE_MISS, SERVER_BUSY, THRESHOLD_PCT
from ..results import dig, documents, is_floor, is_number, name_of, number, servers
from ..stats import summarize
from ..wire import MODERN_REVISION
from .per_tool import workload_section
from .sizing import caps_section, sessions_section

MIB = 1024 * 1024
KIB = 1024
MARKDOWN_FORMATS = ("github", "pipe")


class UnknownMetric(ValueError):
    """A ``metrics`` key path that names no row; the message lists the known ones."""


MARKDOWN = {"md": "github", "markdown": "github"}
"""Names a user gives Markdown by, as tabulate's GitHub-flavoured format."""


def check_format(value: str, long_formats: tuple[str, ...] = ()) -> str:
    """``value`` when it is a tabulate format or one of ``long_formats``; "md" and "markdown"
    as "github" (MARKDOWN).

    Raises:
        ValueError: any other value; the message lists the choices.
    """
    from tabulate import tabulate_formats

    value = MARKDOWN.get(value, value)
    if value not in (*tabulate_formats, *long_formats):
        either = f"{', '.join(long_formats)} or one of " if long_formats else "one of "
        raise ValueError(f"{value!r} is not {either}{', '.join(tabulate_formats)}")
    return value


def ms_decimals(value: float) -> int:
    """Decimals that fit a millisecond value: 0.01 ms under 10 ms, 0.1 ms under 1 s, 1 ms above."""
    return 2 if abs(value) < 10 else 1 if abs(value) < 1000 else 0


def fmt_ms(value) -> str:
    value = number(value)
    return f"{value:.{ms_decimals(value)}f}"


def fmt_mib(value) -> str:
    """Bytes as MiB with one decimal; under 0.1 MiB in KiB ("20.0 KiB"), under 1 KiB in
    bytes ("340 B"), the unit then written out (the row's unit is MiB)."""
    size = number(value)
    if abs(size) < KIB:
        return f"{size:.0f} B"
    if abs(size) < 0.1 * MIB:
        return f"{size / KIB:.1f} KiB"
    return f"{size / MIB:.1f}"


def _kib(value) -> str:
    return f"{number(value) / KIB:.1f}"


def _list(value) -> list:
    if not isinstance(value, list):
        raise TypeError(f"not a list: {value!r}")
    return value


def _count(value) -> str:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"not a count: {value!r}")
    return str(value)


def _text(value) -> str:
    if not isinstance(value, str):
        raise TypeError(f"not a string: {value!r}")
    return value


def _yes(value) -> str:
    if not isinstance(value, bool):
        raise TypeError(f"not a bool: {value!r}")
    return "yes" if value else "no"


def _or_dash(render: Callable, value) -> str:
    return "-" if value is None else render(value)


# ---- rows ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Row:
    """One metric. ``path`` is the results key path that names the row (``--metrics``);
    ``also`` are further key paths the cell reads (exported too). A cell is empty ("n/a"
    or "-") when every one of its paths is null. ``render(value, server)`` gets the value
    at ``path`` and the server's dict and returns the cell's text."""

    path: str
    label: str
    render: Callable[[object, dict], str]
    also: tuple[str, ...] = ()

    @property
    def paths(self) -> tuple[str, ...]:
        return (self.path, *self.also)


def _initialize_modern(value, s) -> str:
    """What initialize asking 2026-07-28 got: the revision answered ("2025-11-25 (down)" when
    another), else how it was refused ("rejected: error -32022", "rejected: exited"), or
    "unknown" where the matrix's verdict of that probe is (silence, or a probe that reached no
    server: the program could not be started, nothing accepted the connection)."""
    outcome = value.get("outcome")
    probe = next((m for m in _list(dig(s, "protocol.matrix")) if isinstance(m, dict)
                  and m.get("method") == "initialize" and m.get("requested") == MODERN_REVISION),
                 None)
    if outcome == "answered":
        answered = _text(value.get("answered"))
        return answered if answered == MODERN_REVISION else f"{answered} (down)"
    if outcome == "no_answer":
        return f"unknown ({no_answer(value.get('wait_s'))})"
    if probe and probe.get("verdict") == "unknown":
        return "unknown (reached no server)"
    if outcome == "error":
        code = value.get("error_code")
        return f"rejected: error {_count(code)}" if code is not None else "rejected: error"
    return f"rejected: {_text(outcome)}"


def no_answer(wait_s) -> str:
    """"no answer in 5 s" (a probe's silence: its revision is unknown, never unsupported);
    "no answer" for a file that did not record the wait."""
    return "no answer" if wait_s is None else f"no answer in {number(wait_s):g} s"


def _short(revision: str) -> str:
    return revision[:7] if re.fullmatch(r"\d{4}-\d\d-\d\d", revision) else revision


def _revisions(value, s) -> str:
    """"2024-11..2026-07": the first and last year-month of the supported revisions; then
    those a probe got no answer for ("; 2026-07 unknown (no answer in 5 s)")."""
    revisions = sorted(_text(v) for v in _list(value))
    text = ("none" if not revisions else revisions[0] if len(revisions) == 1
            else "..".join(_short(r) for r in (revisions[0], revisions[-1])))
    unknown = dig(s, "protocol.unknown_revisions")
    if unknown:
        silent = any(isinstance(m, dict) and m.get("outcome") == "no_answer"
                     for m in _list(dig(s, "protocol.matrix")))
        text += (f"; {', '.join(_short(_text(r)) for r in _list(unknown))} unknown "
                 f"({no_answer(dig(s, 'protocol.probe_wait.s')) if silent else 'reached no server'})")
    return text


def probe_wait(value) -> str:
    """A ``protocol.probe_wait`` block: "9 s (3x the slowest cold start, 3000 ms)", "1 s
    (--probe-timeout)", "5 s (the floor, above 3x the slowest cold start, 40.0 ms)", "5 s
    (the floor; no start measured)"."""
    wait, slowest, source = number(value.get("s")), value.get("slowest_start_ms"), value.get("source")
    rule = _text(value.get("rule"))
    seen = f"the slowest {_text(source)}, {fmt_ms(slowest)} ms" if slowest is not None else None
    why = {"given": "--probe-timeout", "derived": f"3x {seen}",
           "floor": f"the floor, above 3x {seen}" if seen else "the floor; no start measured"}
    return f"{wait:g} s ({why.get(rule, rule)})"


def _server_info(value, _s) -> str:
    name, version = value.get("name"), value.get("version")
    return " ".join(_text(v) for v in (name, version) if v is not None) or "?"


def _with_ci(series: str) -> Callable[[object, dict], str]:
    """A median in ms with the confidence interval of the stats block at ``series``."""
    def render(value, s) -> str:
        places = ms_decimals(number(value))
        low, high = dig(s, f"{series}.ci_low"), dig(s, f"{series}.ci_high")
        text = f"{value:.{places}f}"
        if low is not None and high is not None:
            text += f" [{number(low):.{places}f}, {number(high):.{places}f}]"
        return text
    return render


def _mean_stdev(value, s) -> str:
    places = ms_decimals(number(value))
    stdev = dig(s, "handshake_ms.stdev")
    return f"{value:.{places}f}" + ("" if stdev is None else f" ± {number(stdev):.{places}f}")


def _min_max(value, s) -> str:
    return f"{_or_dash(fmt_ms, value)} / {_or_dash(fmt_ms, dig(s, 'handshake_ms.max'))}"


def _runs(value, s) -> str:
    warmup = dig(s, "handshake_ms.warmup_samples")
    return _count(value) + (f" (+{len(warmup)})" if isinstance(warmup, list) else "")


def _round_trip(value, s) -> str:
    n = dig(s, "round_trip_ms.n")
    text = f"{_or_dash(fmt_ms, value)} / {_or_dash(fmt_ms, dig(s, 'round_trip_ms.p95'))}"
    return text + ("" if n is None else f" (n={_count(n)})")


START_PARTS = ("runtime and standard library", "SDK", "server code", "other packages",
               "rest of the start")
"""The parts of a profiled start (start_split), in the order they are drawn."""


def start_split(row: dict) -> list[tuple[str, float]] | None:
    """A profiled start (the ``imports`` block, docs/results.md#imports) in START_PARTS, ms:
    the interpreter's own imports and the standard library's (Python; Go's standard library
    package inits); the SDK's distributions or modules (the row's ``sdk``, and a Python
    SDK's ``PACKAGE-*`` companions such as mcp-types, a scoped npm SDK's packages of the
    same scope such as @modelcontextprotocol/core); the server's own code (``installed``
    false: "(not installed)", a Go main module); every other package; and the rest of the
    profiled start (the runtime's own start before any import, the server's code until the
    answer). Self times, so the parts add up to the profiled start. None without a block."""
    imports = row.get("imports")
    if not isinstance(imports, dict) or not is_number(imports.get("instrumented_ms")):
        return None
    sdk = row.get("sdk") or dig(row, "sdk_source.package")
    scope = f"{sdk.split('/')[0]}/" if sdk and sdk.startswith("@") else None
    parts = dict.fromkeys(START_PARTS, 0.0)
    parts[START_PARTS[0]] = number(imports["interpreter_ms"]) \
        if is_number(imports.get("interpreter_ms")) else 0.0
    for dist in imports.get("distributions") or []:
        name = dist.get("name")
        part = (START_PARTS[0] if name == "(standard library)" else
                START_PARTS[2] if not dist.get("installed") else
                START_PARTS[1] if sdk and (name == sdk or str(name).startswith(f"{sdk}-")
                                           or scope and str(name).startswith(scope)) else
                START_PARTS[3])
        parts[part] += number(dist["self_ms"]) if is_number(dist.get("self_ms")) else 0.0
    parts[START_PARTS[4]] = max(number(imports["instrumented_ms"]) - sum(parts.values()), 0.0)
    return list(parts.items())


def start_shares(_value, server: dict) -> str | None:
    """"runtime 12%, SDK 60%, server code 1%, other 20%, rest 7%": start_split's shares."""
    split = start_split(server)
    if split is None:
        return None
    whole = sum(ms for _, ms in split) or 1.0
    words = ("runtime", "SDK", "server code", "other", "rest")
    return ", ".join(f"{word} {ms / whole:.0%}" for word, (_, ms) in zip(words, split))


def _unpinned(settings) -> str:
    """Why a load block pinned no CPU: the portable process layer, or --server-cpus leaving
    the engine none."""
    settings = settings if isinstance(settings, dict) else {}
    if settings.get("process_layer") == "portable":
        return "the portable process layer pins none"
    return (f"--server-cpus {settings.get('server_cpus', 1)} would leave the load engine no "
            "CPU of this machine's")


def top_holder(split) -> tuple[str, int, float] | None:
    """The class of ``memory.idle_split`` (docs/results.md) holding the most RSS: ``(class,
    rss_bytes, share of the split's summed RSS)``; None without a split or RSS."""
    if not isinstance(split, dict):
        return None
    rss = {name: number(value.get("rss_bytes")) for name, value in split.items()
           if isinstance(value, dict) and is_number(value.get("rss_bytes"))}
    whole = sum(rss.values())
    if not whole:
        return None
    name = max(rss, key=rss.get)
    return name, rss[name], rss[name] / whole


def _top_holder(value, _s) -> str:
    """"anon 38.2 (61%)": the class holding most of the idle RSS, its MiB and share."""
    found = top_holder(value)
    if found is None:
        return "?"
    name, size, share = found
    return f"{name} {fmt_mib(size)} ({share:.0%})"


def _processes(value, _s) -> str:
    """"3: npm exec 91.0 + sh 2.0 + node 68.0 MiB": the idle RSS of each process of a tree
    of several, in tree order."""
    count = len(_list(value))
    if count < 2:
        return str(count)
    shares = []
    for proc in value:
        name = proc.get("label") if isinstance(proc.get("label"), str) else proc.get("name")
        if not isinstance(name, str):
            argv = proc.get("cmdline")
            name = (str(argv[0]).rsplit("/", 1)[-1] if isinstance(argv, list) and argv
                    else str(argv or "?"))
        shares.append(f"{name} {_or_dash(fmt_mib, proc.get('idle_rss_bytes'))}")
    return f"{count}: {' + '.join(shares)} MiB"


AGAIN_OVER = 1.1
"""A second large call's sampled peak is shown beside the first's exact one where it is more
than 10% higher: below that, the two readings' own spread (sampling, the allocator)."""


def _peak(value, s) -> str:
    """The headline peak and its method; beside an exact first-call peak, the second call's
    sampled peak where it is more than AGAIN_OVER higher ("266.3 (vmhwm; again: >= 481.0)":
    the same call on the same session can cost more than the first, a runtime keeping the
    first call's memory)."""
    method, again = dig(s, "memory.peak_method"), dig(s, "memory.peak_rss_bytes_sampled")
    if method == "vmhwm" and is_number(again) and is_number(value) \
            and again > AGAIN_OVER * value:
        return f"{fmt_mib(value)} (vmhwm; again: >= {fmt_mib(again)})"
    return fmt_mib(value) + ("" if method is None else f" ({_text(method)})")


def _large_round_trip(value, s) -> str:
    """The large call's round trip; where the server refused the asked size with 413, the
    size it took and the first it refused ("12.3 (at 2.5 MiB: the server refused 5.0 MiB
    with 413)")."""
    refused = dig(s, "payload.refused")
    if not refused:
        return fmt_ms(value)

    def size(n) -> str:
        text = fmt_mib(n)
        return text if text.endswith("B") else f"{text} MiB"
    return (f"{fmt_ms(value)} (at {size(dig(s, 'payload.request_bytes'))}: the server refused "
            f"{size(refused[0]['request_bytes'])} with 413)")


def _verified(value, s) -> str:
    return f"{_or_dash(_yes, value)}, {_or_dash(_yes, dig(s, 'payload.unicode_verified'))}"


def _output_schema(value, s) -> str:
    count, called = dig(s, "tools.count"), dig(s, "tools.output_schema")
    parts = []
    if value is not None:
        parts.append(_count(value) + ("" if count is None else f"/{_count(count)}"))
    if called is not None:
        parts.append(f"called: {_yes(called)}")
    return "; ".join(parts)


def _build(value, s) -> str:
    return f"{number(value):.1f}" + (" (cached)" if dig(s, "footprint.build_cached") is True else "")


def _shutdown(value, _s) -> str:
    return f"{_text(value['how'])} ({fmt_ms(value['ms'])} ms)"


def _page_cache(value, s) -> str:
    resident = dig(s, "page_cache.resident_bytes") or []
    return " / ".join(fmt_mib(summarize(v)["median"]) if v else "-" for v in (value, resident))


def _dual(value, s) -> str:
    path, until = dig(s, "dual_era.path"), dig(s, "dual_era.until")
    ready = isinstance(until, str) and until.startswith("ready")
    return fmt_ms(value) + ("" if path is None else f" ({_text(path)}{'; to ready' * ready})")


def _launcher(value, s) -> str:
    direct, kind = dig(s, "launcher.direct_ms.median"), dig(s, "launcher.kind")
    return (fmt_ms(value) + f" ({_text(kind)}; direct {_or_dash(fmt_ms, direct)})")


def _network(value, s) -> str:
    """"yes: 1245 ms (p = 0.001)" (the network share, median of launched minus offline per
    round), "no: 12.0 ms, within 10% of the offline start", or the verdict as the file words
    it: "inconclusive (p = 0.27)", "inconclusive: the network share ... is more than the whole
    launcher overhead ...", "too few runs". A share is shown only where the test found it."""
    ms = dig(s, "launcher.network_ms.median")
    if value is True:
        return f"yes: {fmt_ms(ms)} ms (p = {number(dig(s, 'launcher.network_p')):.2g})"
    if value is False:
        return f"no: {fmt_ms(ms)} ms, within {THRESHOLD_PCT:g}% of the offline start"
    return _text(dig(s, "launcher.network_verdict"))


def _caching(value, s) -> str:
    ttl = dig(s, "caching.tools_list_ttl_ms")
    first = dig(s, "caching.deferred_first_call_ms")
    text = _yes(value) + (f" (ttl {number(ttl) / 1000:g} s)" if value and ttl else "")
    return text + ("" if first is None else f"; first call {fmt_ms(first)} ms")


SPLIT_MIN_MS = 100.0
"""The least CPU time whose user/system split is shown: 10 clock ticks (/proc/pid/stat counts
them in ticks of 10 ms, USER_HZ 100: proc(5)), so each part is known to about 10%; below it
the split is a tick or two landing on one side."""


def user_system(cpu, user, system, same_runs: bool = True) -> str:
    """": user 1235 + system 95.0" of ``cpu`` ms, or "; user/system under 10 clock ticks"
    where the split cannot be read (``cpu`` under SPLIT_MIN_MS, or the parts not known for
    the runs ``cpu`` counts: ``same_runs`` False), or "" where it is not known at all."""
    if None in (user, system):
        return ""
    if not same_runs or not is_number(cpu) or cpu < SPLIT_MIN_MS:
        return "; user/system under 10 clock ticks"
    return f": user {fmt_ms(user)} + system {fmt_ms(system)}"


def cpu_split(_value, server: dict) -> str | None:
    """"48% CPU, 52% waiting (CPU 1331 ms: user 1235 + system 95.0)": the start's CPU
    against waiting (``user_system``), or None."""
    usage = server.get("start_usage") or {}
    if usage.get("cpu_share") is None:
        return None
    cpu = dig(usage, "cpu_ms.median")
    parts = user_system(cpu, dig(usage, "user_ms.median"), dig(usage, "system_ms.median"),
                        dig(usage, "user_ms.n") == dig(usage, "cpu_ms.n")
                        == dig(usage, "system_ms.n"))
    return (f"{usage['cpu_share'] * 100:.0f}% CPU, {usage['waiting_share'] * 100:.0f}% waiting "
            f"(CPU {fmt_ms(cpu)} ms{parts})")


def top_packages(_value, server: dict, count: int = 3) -> str | None:
    """"mcp 4595, mcp-types 2788, pydantic 486": the installed distributions with the most
    cumulative import time (ms), or None without an ``imports`` block."""
    rows = [d for d in dig(server, "imports.distributions") or []
            if d["installed"]]
    if server.get("imports") is None:
        return None
    return ", ".join(f"{d['name']} {fmt_ms(d['cumulative_ms'])}" for d in rows[:count]) or "none"


def _memory_limit(value, server: dict) -> str:
    """"1024 (0 OOM kills, peak 52.3)": the limit, the OOM killer's count in the server's
    cgroup and the cgroup's high-water mark (page cache included), MiB."""
    peak = dig(server, "memory_limit.peak_bytes")
    return (f"{fmt_mib(value)} ({dig(server, 'memory_limit.oom_kills')} OOM kills"
            + ("" if peak is None else f", peak {fmt_mib(peak)}") + ")")


def top_jars(value, server: dict, count: int = 3) -> str:
    """"3,145 (JDK 1,402; jackson-databind-3.1.4.jar 577, reactor-core-3.7.0.jar 398)": the
    classes loaded before the answer, the JDK's share, and the jars with the most."""
    sources = dig(server, "classes.sources") or []
    jdk = sum(s["classes"] for s in sources if s["jdk"])
    jars = [s for s in sources if not s["jdk"] and not s["name"].startswith("(")][:count]
    return (f"{value:,.0f} (JDK {jdk:,.0f}; "
            + ", ".join(f"{s['name']} {s['classes']:,.0f}" for s in jars) + ")")


def other_transport(_value, server: dict) -> str | None:
    """The transport finding in words: "435 ms (9.8% of the start): sse-starlette, ..." or
    "none"; None where the rule does not apply (no imports block, an HTTP server)."""
    found = dig(server, "imports.other_transport")
    if found is None:
        return None
    if not found["distributions"]:
        return "none"
    share = found["share"]
    return (f"{fmt_ms(found['cumulative_ms'])} ms"
            + ("" if share is None else f" ({share * 100:.1f}% of the profiled start)")
            + ": " + ", ".join(found["distributions"]))


def _plain(render: Callable) -> Callable[[object, dict], str]:
    return lambda value, _s: render(value)


def _http_latency(value, s) -> str:
    parts = [_or_dash(fmt_ms, dig(s, f"http.latency_ms.{k}")) for k in ("p50", "p95", "p99")]
    n = dig(s, "http.latency_ms.n")
    return " / ".join(parts) + ("" if n is None else f" (n={_count(n)})")


def _leak(value, s) -> str:
    before, after = dig(s, "http.sessions_leak.rss_before_bytes"), dig(s, "http.sessions_leak.rss_after_bytes")
    n = dig(s, "http.sessions_leak.sessions")
    return (f"{number(value) / KIB:.1f} KiB ({_or_dash(fmt_mib, before)} -> "
            f"{_or_dash(fmt_mib, after)} MiB over {_or_dash(_count, n)})")


def _load_rows(scenario: str, title: str) -> list[Row]:
    """The rows of one load scenario: RPS beside the ceiling, latency, errors, usage."""
    base = f"http.load.{scenario}"

    def rps(value, s) -> str:
        """"1353 (ceiling 1569)"; engine-bound: ">= 1569 (engine-bound; ceiling 1569)"; a
        missed pace: "40.1 of 100 asked"; a rate above CEILING_OVER of its ceiling: "666
        (ceiling 369 below it: not the engine's maximum)"."""
        ceiling, users = dig(s, f"{base}.ceiling_rps"), dig(s, f"{base}.users")
        bound = dig(s, f"{base}.engine_bound") is True
        asked = dig(s, f"{base}.rate") if dig(s, f"{base}.rate_missed") is True else None
        over = is_number(ratio := dig(s, f"{base}.ceiling_ratio")) and ratio > CEILING_OVER
        notes = (["engine-bound"] if bound else []) + (
            [] if ceiling is None else [f"ceiling {number(ceiling):.0f}"
                                        + (" below it: not the engine's maximum" if over else "")])
        return (">= " * bound + (f"{number(value):.0f}" if asked is None
                                 else f"{number(value):.1f} of {number(asked):g} asked")
                + (f" ({'; '.join(notes)})" if notes else "")
                + ("" if users is None else f", {_count(users)} users"))

    def latency(value, s) -> str:
        return " / ".join(_or_dash(fmt_ms, dig(s, f"{base}.latency_ms.{k}"))
                          for k in ("p50", "p95", "p99"))

    def errors(value, s) -> str:
        by_class = dig(s, f"{base}.errors.by_class") or {}
        shown = ", ".join(f"{k} {_count(v)}" for k, v in by_class.items() if v)
        flight = dig(s, f"{base}.in_flight_at_end")
        return (_count(value) + (f" ({shown})" if shown else "")
                + ("" if not flight else f"; {_count(flight)} in flight at the end"))

    def usage(value, s) -> str:
        rss, engine = dig(s, f"{base}.rss_bytes"), dig(s, f"{base}.engine_cpu_percent")
        return (f"{number(value):.0f}% / {_or_dash(fmt_mib, rss)}; engine "
                f"{_or_dash(lambda v: f'{number(v):.0f}%', engine)}")

    return [
        Row(f"{base}.rps", f"load, {title}: requests/s", rps,
            (f"{base}.ceiling_rps", f"{base}.users", f"{base}.engine_bound",
             f"{base}.rate", f"{base}.rate_missed")),
        Row(f"{base}.latency_ms.p50", f"load, {title}: latency p50 / p95 / p99 (ms)", latency,
            (f"{base}.latency_ms.p95", f"{base}.latency_ms.p99")),
        Row(f"{base}.errors.total", f"load, {title}: errors", errors,
            (f"{base}.in_flight_at_end",)),
        Row(f"{base}.cpu_percent", f"load, {title}: server CPU / peak RSS (MiB); engine CPU",
            usage, (f"{base}.rss_bytes", f"{base}.engine_cpu_percent")),
    ]


HTTP_ROWS: list[Row] = [
    Row("http.start_ms.port.median", "HTTP: port accepting from spawn, median (ms)",
        _plain(fmt_ms)),
    Row("http.start_ms.initialize.median", "HTTP cold start: initialize answered, median (ms)",
        _with_ci("http.start_ms.initialize"),
        ("http.start_ms.initialize.ci_low", "http.start_ms.initialize.ci_high")),
    Row("http.start_ms.tools_list.median", "HTTP: tools/list answered from spawn, median (ms)",
        _plain(fmt_ms)),
    Row("http.start_ms.first_call.median", "HTTP: first tool call answered from spawn, median (ms)",
        _plain(fmt_ms)),
    Row("http.start_ms.discover.median", "HTTP, a 2026 client: discover from spawn, median (ms)",
        _plain(fmt_ms)),
    Row("http.start_ms.modern_first_call.median",
        "HTTP, a 2026 client: stateless first call from spawn, median (ms)", _plain(fmt_ms)),
    Row("http.latency_ms.p50", "HTTP warm latency p50 / p95 / p99 (ms, n)", _http_latency,
        ("http.latency_ms.p95", "http.latency_ms.p99", "http.latency_ms.n")),
    Row("http.session_ms.median", "HTTP full session (initialize .. DELETE), median (ms)",
        _plain(fmt_ms)),
    Row("http.sessions_leak.bytes_per_session", "HTTP memory kept per session (slope fitted to RSS readings; RSS first -> last)",
        _leak, ("http.sessions_leak.rss_before_bytes", "http.sessions_leak.rss_after_bytes")),
    *_load_rows("session", "a full session per iteration"),
    *_load_rows("calls", "calls on a session"),
    *_load_rows("rate", "fixed rate, closed loop"),
    *_load_rows("open", "fixed rate, open loop"),
]


ROWS: list[Row] = [
    Row("status", "status", _plain(_text)),
    Row("server_info", "server name/version", _server_info,
        ("server_info.name", "server_info.version")),
    Row("sdk_version", "SDK version", _plain(_text)),
    Row("protocol.era", "protocol era", _plain(_text)),
    Row("protocol.supported_revisions", "supported revisions", _revisions),
    Row("protocol.probe_wait.s", "revision probe wait", lambda _v, s: probe_wait(
        dig(s, "protocol.probe_wait")), ("protocol.probe_wait.rule",
                                         "protocol.probe_wait.slowest_start_ms")),
    Row("protocol.negotiated_revision", "negotiated revision", _plain(_text)),
    Row("protocol.initialize_modern", "initialize asking 2026-07-28", _initialize_modern),
    Row("handshake_ms.median", "cold start{cache}: median{ci} (ms)", _with_ci("handshake_ms"),
        ("handshake_ms.ci_low", "handshake_ms.ci_high", "handshake_ms.ci_level")),
    Row("handshake_ms.mean", "cold start mean ± stdev (ms)", _mean_stdev, ("handshake_ms.stdev",)),
    Row("handshake_ms.min", "cold start min / max (ms)", _min_max, ("handshake_ms.max",)),
    Row("handshake_ms.n", "cold start runs (+ warm-up)", _runs),
    Row("page_cache.evicted_bytes", "page cache evicted / still resident per run, median (MiB)",
        _page_cache, ("page_cache.resident_bytes",)),
    Row("phases_ms.first_byte.median", "first byte from spawn, median (ms)", _plain(fmt_ms)),
    Row("phases_ms.tools_list.median", "tools/list answered from spawn, median (ms)", _plain(fmt_ms)),
    Row("phases_ms.first_call.median", "first tool call answered from spawn, median (ms)",
        _plain(fmt_ms)),
    Row("modern_ms.discover.median", "cold start a 2026 client sees: discover, median (ms)",
        _plain(fmt_ms)),
    Row("modern_ms.first_call.median", "cold start a 2026 client sees: first call, median (ms)",
        _plain(fmt_ms)),
    Row("dual_era.ms.median", "a dual-era client's first call, median (ms, path)", _dual,
        ("dual_era.path",)),
    Row("launcher.overhead_ms.median", "launcher overhead, median of per-round differences (ms)",
        _launcher, ("launcher.direct_ms.median", "launcher.kind")),
    Row("launcher.overhead_bytes", "launcher overhead, idle PSS (MiB)", _plain(fmt_mib)),
    Row("launcher.network_each_start", "launcher went to the network on every start", _network,
        ("launcher.network_ms.median", "launcher.network_verdict", "launcher.network_p")),
    Row("round_trip_ms.p50", "warm round trip p50 / p95 (ms, n)", _round_trip,
        ("round_trip_ms.p95", "round_trip_ms.n")),
    Row("memory.idle_rss_bytes", "idle RSS (MiB)", _plain(fmt_mib)),
    Row("memory.idle_pss_bytes", "idle PSS (MiB)", _plain(fmt_mib)),
    Row("memory.idle_uss_bytes", "idle USS (MiB)", _plain(fmt_mib)),
    Row("memory.processes", "processes in tree (idle RSS each)", _processes),
    Row("memory.idle_split", "idle RSS's top holder (MiB, share)", _top_holder),
    Row("memory.before_call_rss_bytes", "RSS just before the {payload} call (MiB)",
        _plain(fmt_mib)),
    Row("memory.peak_rss_bytes_payload", "peak RSS, {payload} call (MiB)", _peak,
        ("memory.peak_method",)),
    Row("memory_limit.bytes", "memory limit (MiB; OOM kills, cgroup peak)", _memory_limit,
        ("memory_limit.oom_kills", "memory_limit.peak_bytes")),
    Row("payload.round_trip_ms", "{payload} call round trip (ms)", _large_round_trip),
    Row("payload.response_bytes", "{payload} call's answer (MiB)", _plain(fmt_mib)),
    Row("payload.verified", "result verified ({payload}, Unicode)", _verified,
        ("payload.unicode_verified",)),
    Row("tools.count", "tools listed", _plain(_count)),
    Row("tools.list_bytes", "tools/list result (KiB)", _plain(_kib)),
    Row("tools.definitions_bytes", "tool definitions (KiB)", _plain(_kib)),
    Row("tools.tokens.count", "tool definitions (tokens, o200k_base)", _plain(_count)),
    Row("instructions.tokens", "server instructions (tokens, o200k_base)", _plain(_count)),
    Row("start_usage.cpu_share", "cold start: CPU against waiting, median", cpu_split,
        ("start_usage.waiting_share", "start_usage.user_ms.median",
         "start_usage.system_ms.median")),
    Row("imports.distributions", "imports at start: top three packages (ms, cumulative)",
        top_packages),
    Row("imports.share", "imports' share of a profiled start", lambda v, s: (
        f"{v * 100:.0f}% ({fmt_ms(dig(s, 'imports.import_ms'))} of "
        f"{fmt_ms(dig(s, 'imports.instrumented_ms'))} ms)"),
        ("imports.import_ms", "imports.instrumented_ms")),
    Row("imports.other_transport", "imported at start for another transport (stdio)",
        other_transport),
    Row("imports.instrumented_ms", "profiled start: runtime, SDK, server code, other, rest",
        start_shares, ("imports.distributions", "imports.interpreter_ms")),
    Row("classes.classes", "JVM classes loaded before the answer (top jars)", top_jars,
        ("classes.sources",)),
    Row("caching.may_defer_spawn", "may show cached tools, spawn at the first call", _caching,
        ("caching.tools_list_ttl_ms", "caching.deferred_first_call_ms")),
    Row("tools.with_output_schema", "outputSchema (tools with one; the called tool)",
        _output_schema, ("tools.output_schema",)),
    Row("tools.structured_content", "structuredContent", _plain(_yes)),
    Row("footprint.artifact_bytes", "artifact (MiB)", _plain(fmt_mib)),
    Row("footprint.dev_tree_bytes", "dev tree (MiB)", _plain(fmt_mib)),
    Row("footprint.dependency_count", "dependencies shipped", _plain(_count)),
    Row("footprint.lock_count", "lock file entries", _plain(_count)),
    Row("footprint.tool_lines", "tool source lines", _plain(_count)),
    Row("footprint.build_s", "build time (s)", _build, ("footprint.build_cached",)),
    Row("footprint.debug_info", "debug info in artifact", _plain(_yes)),
    *HTTP_ROWS,
    Row("shutdown", "shutdown", _shutdown, ("shutdown.how", "shutdown.ms")),
]
ROW_BY_PATH = {row.path: row for row in ROWS}
COMPACT_ROWS = [
    ROW_BY_PATH["status"],
    Row("handshake_ms.median", "cold start, median (ms)", _plain(fmt_ms)),
    Row("phases_ms.first_call.median", "first call from spawn (ms)", _plain(fmt_ms)),
    Row("round_trip_ms.p50", "warm round trip p50 (ms)", _plain(fmt_ms)),
    ROW_BY_PATH["memory.idle_rss_bytes"],
    ROW_BY_PATH["memory.idle_pss_bytes"],
    Row("memory.peak_rss_bytes_payload", "peak RSS, {payload} call (MiB)", _plain(fmt_mib)),
    Row("tools.tokens.count", "tool list (tokens)", _plain(_count)),
    ROW_BY_PATH["footprint.artifact_bytes"],
    ROW_BY_PATH["footprint.dependency_count"],
    Row("http.start_ms.first_call.median", "HTTP first call from spawn (ms)", _plain(fmt_ms)),
    Row("http.latency_ms.p50", "HTTP warm latency p50 (ms)", _plain(fmt_ms)),
    Row("http.load.calls.rps", "load, calls on a session (req/s)", lambda value, s: (
        ">= " * (dig(s, "http.load.calls.engine_bound") is True) + f"{number(value):.0f}")),
]
"""The default table on a terminal (``table(compact=True)``): the headline figure of each
family, one short cell each (a median without its interval), so the reference set fits 100
columns (tests/test_views.py), cut to a narrower terminal's width (``table(width=)``);
``--full``, ``--metrics``, files and exports have every row."""
COMPACT_NOTE = "- a compact table: --full (or stdout to a file) shows every row"


def select_rows(metrics=None) -> list[Row]:
    """The rows named by ``metrics`` (key paths, in the order given), or every row.

    Raises:
        UnknownMetric: a path that names no row; the message lists the known paths.
    """
    if not metrics:
        return list(ROWS)
    unknown = [m for m in metrics if m not in ROW_BY_PATH]
    if unknown:
        raise UnknownMetric(f"unknown metric {', '.join(map(repr, unknown))}; known: "
                            f"{', '.join(ROW_BY_PATH)}")
    return [ROW_BY_PATH[m] for m in dict.fromkeys(metrics)]


def present(server: dict, row: Row) -> bool:
    return any(dig(server, p) is not None for p in row.paths)


def visible_rows(docs: list[dict], metrics=None, compact: bool = False) -> list[Row]:
    """The selected rows; without ``metrics``, only those with a value somewhere (and
    status), of COMPACT_ROWS with ``compact``."""
    rows = list(COMPACT_ROWS) if compact and not metrics else select_rows(metrics)
    if metrics:
        return rows
    every = [s for doc in docs for s in servers(doc)]
    return [r for r in rows if r.path == "status" or any(present(s, r) for s in every)]


def one_line(text, markdown: bool) -> str:
    """A table cell's text on one line (tabs and line breaks as spaces: tabulate would split
    a row over several lines, which breaks a Markdown table); in Markdown (``markdown``) its
    pipes escaped, which would open a column."""
    text = " ".join(str(text).replace("\t", " ").splitlines())
    return text.replace("|", "\\|") if markdown else text


def cell(server: dict, row: Row) -> str:
    """The rendered cell: "n/a" when the row's block is in ``not_measured``, "-" when its
    value is otherwise absent, "?" when the value has an unexpected shape."""
    if not present(server, row):
        skipped = server.get("not_measured")
        skipped = skipped if isinstance(skipped, dict) else {}
        prefixes = {".".join(p.split(".")[:i]) for p in row.paths
                    for i in range(1, p.count(".") + 2)}
        return "n/a" if prefixes & skipped.keys() else "-"
    try:
        return row.render(dig(server, row.path), server)
    except (AttributeError, KeyError, TypeError, ValueError, IndexError):
        return "?"


# ---- labels -------------------------------------------------------------------------------

def file_labels(docs: list[dict], labels=None) -> list[str]:
    """A label per file: ``labels`` as given, else each file's environment.hostname, with
    the ``created`` date added where two labels match (the whole timestamp, then the
    file's position, where they still match).

    Raises:
        ValueError: ``labels`` does not hold one label per file.
    """
    if labels is not None:
        if len(labels) != len(docs):
            raise ValueError(f"{len(labels)} label(s) for {len(docs)} file(s): give one per file")
        return [str(label) for label in labels]
    choices = []
    for i, doc in enumerate(docs):
        host = dig(doc, "environment.hostname")
        host = host if isinstance(host, str) and host else f"file {i + 1}"
        created = str(doc.get("created"))
        choices.append([host, f"{host} {created[:10]}", f"{host} {created}",
                        f"{host} {created} #{i + 1}"])
    level = [0] * len(docs)
    for _ in range(3):
        counts = Counter(c[lv] for c, lv in zip(choices, level))
        level = [lv + (counts[c[lv]] > 1) for c, lv in zip(choices, level)]
    out = [c[lv] for c, lv in zip(choices, level)]
    return out


def in_variant_order(rows: list[dict]) -> list[dict]:
    """Server rows in file order, each followed by its SDK variants (rows whose
    ``sdk_source.kind`` is "registry" or "path", named ``BASE@...``) in version order
    (targets.releases.version_key: v1.10 after v1.9), checkouts last. Without variants the
    order is the file's."""
    from ..targets.releases import version_key

    def kind(row: dict) -> str | None:
        source = row.get("sdk_source")
        return source.get("kind") if isinstance(source, dict) else None

    groups: dict[str, list[dict]] = {}
    for row in rows:
        variant = kind(row) in ("registry", "path")
        groups.setdefault(name_of(row).split("@", 1)[0] if variant else name_of(row),
                          []).append(row)

    def rank(row: dict) -> tuple:
        version = row["sdk_source"].get("version") if kind(row) == "registry" else None
        return ({"registry": 1, "path": 2}.get(kind(row), 0),
                version_key(version) if isinstance(version, str) else version_key("0"))

    return [row for group in groups.values() for row in sorted(group, key=rank)]


def columns(docs: list[dict], labels=None, floor: bool = False
            ) -> list[tuple[str, dict, str, dict]]:
    """One (header, doc, file label, server) per column, in_variant_order: the server's
    name (with ``floor``, "c (floor)" for the floor server), or "name (label)" when several
    files or explicit labels are shown."""
    named = labels is not None or len(docs) > 1
    out = []
    for doc, label in zip(docs, file_labels(docs, labels)):
        for server in in_variant_order(servers(doc)):
            name = f"{name_of(server)} (floor)" if floor and is_floor(server) else name_of(server)
            header = f"{name} ({label})" if named else name
            out.append((header, doc, label, server))
    return out


def payload_size(n) -> str:
    """The large call's size for labels: "5 MiB", "100000 B", or "large" when unknown."""
    if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
        return "large"
    return f"{n // MIB} MiB" if n % MIB == 0 else f"{n} B"


def ci_levels(blocks) -> set[float]:
    """The confidence levels of the medians' intervals among stats ``blocks`` (dicts from
    stats.summarize; those without an interval left out)."""
    return {lv for b in blocks if isinstance(b, dict) and is_number(lv := b.get("ci_level"))
            and b.get("ci_low") is not None}


def level_text(blocks) -> str:
    """The confidence level of the medians' intervals among stats ``blocks``: "96.9%",
    "≥ 75%" where they differ, "" where none has an interval."""
    levels = ci_levels(blocks)
    if not levels:
        return ""
    return f"{min(levels) * 100:.3g}%" if len(levels) == 1 else f"≥ {min(levels) * 100:.3g}%"


def _label_context(docs: list[dict]) -> dict[str, str]:
    """What row labels say about the run: the large call's size, the page cache state,
    the confidence level of the median's interval."""
    sizes = {payload_size(dig(d, "settings.payload_bytes")) for d in docs}
    caches = {c for d in docs if isinstance(c := dig(d, "settings.cache_state"), str)}
    levels = ci_levels(dig(s, "handshake_ms") for d in docs for s in servers(d))
    ci = ""
    if len(levels) == 1:
        ci = f" [{next(iter(levels)) * 100:.3g}% CI]"
    elif levels:
        ci = f" [CI ≥ {min(levels) * 100:.3g}%]"
    return {"payload": sizes.pop() if len(sizes) == 1 else "large",
            "cache": (f", {caches.pop()} page cache" if len(caches) == 1
                      else ", mixed page cache" if caches else ""),
            "ci": ci}


# ---- notes under the table ----------------------------------------------------------------

def _machine(doc: dict) -> str:
    env, settings = doc.get("environment"), doc.get("settings")
    env = env if isinstance(env, dict) else {}
    settings = settings if isinstance(settings, dict) else {}
    parts = []
    if env.get("cpu_model") is not None:
        parts.append(str(env["cpu_model"]))
    if env.get("cpu_count") is not None:
        parts.append(f"{env['cpu_count']} cores")
    system = " ".join(str(env[k]) for k in ("os", "kernel") if env.get(k) is not None)
    if system:
        parts.append(system)
    load = env.get("load_average")
    if isinstance(load, list) and load:
        parts.append("load average " + " ".join(f"{v:.2f}" if isinstance(v, float) else str(v)
                                                for v in load))
    run = []
    if settings.get("runs") is not None:
        run.append(f"runs {settings['runs']} after {settings.get('warmup', '?')} warm-up")
    for key, text in (("order", "order {}"), ("pause_ms", "pause {} ms"),
                      ("cache_state", "{} page cache")):
        if settings.get(key) is not None:
            run.append(text.format(settings[key]))
    line = ", ".join(parts) or "machine not recorded"
    line += f"; per server: {', '.join(run)}" if run else ""
    interrupted = doc.get("interrupted")
    return line + (f"\nThis run was {interrupted}." if isinstance(interrupted, str) else "")


def warning_text(warning) -> str:
    if isinstance(warning, dict):
        detail = warning.get("detail")
        if detail is None:
            return str(warning)
        metric = warning.get("metric")
        return f"{metric}: {detail}" if metric else str(detail)
    return str(warning)


PEAK_METHODS = {
    "vmhwm": "vmhwm: the kernel's exact high-water mark (VmHWM, reset before the call) of a "
             "one-process server during the first large call; \"again: >= N\": the sampled "
             "peak of the same call made a second time, where more than 10% higher (a lower "
             "bound)",
    "sampled": "sampled: the largest sum of the tree's RSS, read every {ms} ms during a second "
               "large call (a lower bound: a spike shorter than {ms} ms can be missed)",
}
"""The peak methods' notes; {ms} is the sampler's interval as the results file records it."""


def _server_notes(cols, rows: list[Row] | None) -> list[str]:
    """The notes under the table, each once and only where it applies: failures always (they
    explain a "-"); with ``rows`` (the rows --metrics chose), a warning, a block not
    measured, the settle time, the PSS caveat and the peak method only where a shown row
    reads their part of the file. A note several servers share (the same failure, warning,
    or block not measured for the same reason: the missing tokenizer) is printed once,
    naming them. Processes sharing a server's executable are counted, never named, but for
    mcpstart itself: the others are whatever else the machine runs."""
    paths = [p for row in rows or [] for p in row.paths]

    def shown(key: str | None) -> bool:
        return rows is None or (key is not None and any(
            p == key or p.startswith(key + ".") or key.startswith(p + ".") for p in paths))

    grouped: dict[str, list[str]] = {}  # a note's text after its servers -> the servers
    settled, methods, states, sharing_by = {}, {}, set(), {}
    shared = False
    for header, _doc, _label, s in cols:
        if s.get("status") in ("failed", "skipped", "interrupted") or s.get("reason"):
            grouped.setdefault(f" {s.get('status')}: {s.get('reason')}", []).append(header)
        warnings = s.get("warnings")
        for w in warnings if isinstance(warnings, list) else []:
            if not isinstance(w, dict) or shown(w.get("metric")):
                grouped.setdefault(f" warning: {warning_text(w)}", []).append(header)
        skipped = s.get("not_measured")
        for key, why in skipped.items() if isinstance(skipped, dict) else []:
            if shown(key):
                grouped.setdefault(f" not measured (n/a): {key} ({why})", []).append(header)
        if shown("memory.idle_rss_bytes") and dig(s, "memory.settle_s") is not None:
            settle_s, rule = dig(s, "memory.settle_s"), dig(s, "memory.settle_rule")
            settle = f"{settle_s:.3g}" if isinstance(settle_s, (int, float)) else str(settle_s)
            settled.setdefault(None if rule is None else str(rule), []).append(
                f"{header} {settle} s")
        shared |= any(shown(f"memory.idle_{k}_bytes") and dig(s, f"memory.idle_{k}_bytes")
                      is not None for k in ("pss", "uss"))
        method, interval = dig(s, "memory.peak_method"), dig(s, "memory.sample_interval_ms")
        if shown("memory.peak_rss_bytes_payload") and isinstance(method, str) \
                and method in PEAK_METHODS:
            methods.setdefault(method, set()).add(f"{interval:g}" if is_number(interval) else "?")
            if isinstance(dig(s, "memory.peak_state"), str):
                states.add(dig(s, "memory.peak_state"))
        sharing = dig(s, "memory.sharing")
        if shown("memory.idle_pss_bytes") and isinstance(sharing, list) and sharing:
            own = any(isinstance(p, dict) and p.get("mcpstart") for p in sharing)
            others = len(sharing) - own
            what = " and ".join((["mcpstart itself"] if own else [])
                                + ([f"{others} other process(es), not named"] if others else []))
            sharing_by.setdefault(what, []).append(header)
    notes = [f"- {', '.join(who)}{text}" for text, who in grouped.items()]
    if sharing_by:
        notes.append("- PSS is lower than alone where other processes of this user run the "
                     "server's executable: " + "; ".join(
                         f"{', '.join(who)} ({what})" for what, who in sharing_by.items()))
    notes += [f"- idle memory read after: {', '.join(times)}" + (f" ({rule})" if rule else "")
              for rule, times in settled.items()]
    if shared:
        notes.append("- PSS and USS depend on what else runs: a page shared with other processes "
                     "counts in part (PSS) or not at all (USS) toward the server")
    notes += [f"- peak RSS, {PEAK_METHODS[m].format(ms='/'.join(sorted(methods[m])))}"
              for m in sorted(methods)]
    notes += [f"- peak RSS measured from {state}" for state in sorted(states)]
    return notes


def _http_notes(docs: list[dict], rows: list[Row]) -> list[str]:
    """What the HTTP rows rest on, once, where they are shown: how the port is detected,
    and how load was run (engine, bounds, cores, where latency comes from, the ceiling)."""
    paths = {p for row in rows for p in row.paths}
    notes = []
    if any(p.startswith("http.start_ms.port") for p in paths) and any(
            dig(s, "http.start_ms.port") is not None for d in docs for s in servers(d)):
        notes.append("- HTTP port accepting: the first connect() to it that got through, tried "
                     "again after each refusal at 2% of the time since the spawn (50 us to "
                     "1 ms): late by at most that")
    blocks = [b for d in docs for s in servers(d)
              for b in (dig(s, "http.load") or []) if isinstance(b, dict)]
    if blocks and any(p.startswith("http.load") for p in paths):
        b = blocks[0]
        cpus = b.get("pinned_cpus") if isinstance(b.get("pinned_cpus"), dict) else {}
        ceiling = next((dig(d, "load_ceiling.server") for d in docs
                        if dig(d, "load_ceiling.server")), None)
        notes.append(
            f"- load: {b.get('engine')} in its own process, {b.get('users')} users for "
            f"{b.get('duration_s')} s per scenario, each request at most {b.get('timeout_s')} s "
            "(a stall is a timeout error; requests in flight at the end finish and are counted); "
            f"fixed rate: {dig(docs[0], 'settings.load_rate') or '?'} requests/s in all, as a closed "
            "loop (Locust's constant_throughput: paced users, a late answer delays the next call) "
            "and as an open loop (calls started on a schedule whatever the answers, each timed "
            "from its intended send time, so a stall shows in every call behind it); "
            + (f"server on CPU {cpus['server']}, engine on CPU {cpus.get('engine')} from their "
               "spawn; " if cpus.get("server") else
               f"nothing pinned ({_unpinned(dig(docs[0], 'settings'))}); ")
            + "latency from mcpstart's unrounded time of every request, errors included "
            "(Locust's histogram rounds to whole ms under 100 ms)"
            + (f"; ceiling: the same scenario against {ceiling} in this run answering in the "
               f"server's own answer shape (JSON or event stream), the engine's own "
               f"maximum; engine-bound: a rate at {LOAD_BOUND:.0%} of it or more while the "
               f"server used under {SERVER_BUSY:.0%} of its core, printed as a lower bound of "
               "the server's" if ceiling else "")
            + f"; a fixed rate under {1 - LOAD_PACE_MISS:.0%} of the asked one is "
              "printed as reached of asked")
    return notes


PHASE_PATHS = ("phases_ms.tools_list", "phases_ms.first_call", "http.start_ms.tools_list",
               "http.start_ms.first_call")
"""The phases that settings.phase_rule times (those past the handshake)."""


def _phase_notes(docs: list[dict], rows: list[Row]) -> list[str]:
    """How the phases past the handshake were timed, once per rule, where such a phase is
    shown and the file records its rule (an older file records none and gets no note)."""
    if not any(p.startswith(PHASE_PATHS) for row in rows for p in row.paths):
        return []
    rules = dict.fromkeys(str(dig(d, "settings.phase_rule")) for d in docs
                          if dig(d, "settings.phase_rule") is not None)
    return [f"- tools/list and first call answered: {rule}" for rule in rules]


def _startup(doc: dict, label: str | None) -> list[str]:
    """The startup-budget section: what starting every server at once costs."""
    startup = doc.get("startup")
    if not isinstance(startup, dict) or not set(startup) - {"sessions"}:
        return []
    lines = [f"Startup budget{f' ({label})' if label else ''}: every server spawned at once, "
             "as an editor does at launch"]

    def line(text: str, render: Callable, *values) -> None:
        try:
            lines.append(text.format(*map(render, values)))
        except (KeyError, TypeError, ValueError):
            lines.append(text.format(*["?"] * len(values)))

    if startup.get("error"):
        lines.append(f"- not measured: {startup['error']}")
    if isinstance(startup.get("ready_rule"), str):
        lines.append(f"- ready: {startup['ready_rule']}")
    if startup.get("sequential_sum_ms") is not None:
        line("- one after another: the servers' median times to ready add up to {} ms", fmt_ms,
             startup["sequential_sum_ms"])
    if dig(startup, "concurrent_ms.median") is not None:
        line("- all at once: the last server ready after {} ms (median)", fmt_ms,
             dig(startup, "concurrent_ms.median"))
    if startup.get("idle_rss_bytes") is not None or startup.get("idle_pss_bytes") is not None:
        line("- total idle memory: RSS {} MiB, PSS {} MiB", lambda v: _or_dash(fmt_mib, v),
             startup.get("idle_rss_bytes"), startup.get("idle_pss_bytes"))
    limits = startup.get("limits")
    not_started = startup.get("not_started")
    not_started = not_started if isinstance(not_started, dict) else {}

    def verdict(name, ok) -> str:
        if name in not_started:
            return f"{name} does not start ({not_started[name]})"
        return f"{name} {'fits' if ok is True else 'does not fit' if ok is False else '?'}"

    for limit in limits if isinstance(limits, list) else []:
        if not isinstance(limit, dict):
            continue
        fits = limit.get("fits")
        verdicts = ", ".join(verdict(name, ok)
                             for name, ok in (fits.items() if isinstance(fits, dict) else []))
        lines.append(f"- {limit.get('client', '?')} (limit {limit.get('limit_s', '?')} s): "
                     f"{verdicts or 'no server'}")
    return lines


def _provenance(doc: dict, label: str | None, markdown: bool) -> str:
    argv = doc.get("argv")
    command = (shlex.join(str(a) for a in argv) if isinstance(argv, list) and argv
               else "command not recorded")
    command = f"`{command}`" if markdown else command
    env = doc.get("environment") if isinstance(doc.get("environment"), dict) else {}
    return (f"{f'{label}: ' if label else ''}Measured on {env.get('hostname', '?')} at "
            f"{doc.get('created', '?')} with {command} (mcpstart {doc.get('mcpstart_version', '?')})")


# ---- the table ----------------------------------------------------------------------------

def metric_list() -> str:
    """Every row's key path (what --metrics takes) and its label, tab-separated, one a line."""
    context = _label_context([])
    return "".join(f"{row.path}\t{row.label.format(**context)}\n" for row in ROWS)


FORMAT_ONLY = ("html", "unsafehtml", "latex", "latex_raw", "latex_booktabs",
               "latex_longtable", "tsv")
"""Formats whose output holds the table alone (HTML, LaTeX, TSV): the machine, notes and
sections under it are plain text, which a parser of the format would reject or misread;
``report`` and ``measure`` print them on stderr instead (``table(..., aside=...)``)."""


def _blocks(body: list[list[str]], headers: list[str], width: int, render) -> str:
    """The table ``render(body, headers)`` draws, its columns after the first (servers; with
    --transpose, metrics) cut into blocks of whole columns that each, with the first, are at
    most ``width`` characters wide (one column alone may be wider), one blank line apart:
    how pandas prints a frame wider than the terminal (``display.expand_frame_repr``). One
    block when all fit."""
    def block(first: int, end: int) -> str:
        return render([[line[0], *line[first:end]] for line in body],
                      [headers[0], *headers[first:end]])

    blocks, first = [], 1
    while first < len(headers):
        end = first + 1
        while end < len(headers) and max(map(len, block(first, end + 1).splitlines())) <= width:
            end += 1
        blocks.append(block(first, end))
        first = end
    return "\n\n".join(blocks) if blocks else render(body, headers)


def _wrapped(text: str, width: int) -> str:
    """``text`` with each line longer than ``width`` wrapped at spaces (a word longer than
    the width stays whole), a list item's continuation lines indented under its text: the
    notes under a terminal's table."""
    import textwrap

    lines = []
    for line in text.splitlines():
        body = line.lstrip(" ")
        hang = len(line) - len(body) + (2 if body.startswith("- ") else 0)
        lines += textwrap.wrap(line, width, subsequent_indent=" " * hang,
                               break_long_words=False, break_on_hyphens=False) or [line]
    return "\n".join(lines)


def table(results_list, tablefmt: str = "github", *, labels=None, metrics=None,
          transpose: bool = False, aside=None, compact: bool = False,
          width: int | None = None) -> str:
    """Render results as text: metrics as rows, one column per server (header "name (label)"
    when several files or ``labels`` are given); ``transpose`` puts servers in rows.

    ``results_list``: one results file or a list (``Results`` objects or their JSON dicts).
    ``labels``: one per file (default: each file's hostname, plus the date where two match).
    ``tablefmt``: any tabulate format. ``metrics``: row key paths (see ``ROWS``) to show, in
    order; without it every row that has a value somewhere (of COMPACT_ROWS with
    ``compact``, the notes then only of what those rows read). Under the table: the machine,
    notes (reasons, warnings, what was not measured, idle-memory settle time, PSS/USS
    caveat), the startup budget when measured, and one provenance line per file. For a
    FORMAT_ONLY ``tablefmt`` those go to ``aside(text)`` (None: dropped), the table alone is
    returned. ``width``: a terminal's columns; a table wider than that is printed in blocks
    of columns that fit, the first column repeated (_blocks; not in a FORMAT_ONLY format,
    whose reader wants one table), and the notes under it wrapped to that width.

    Raises:
        UnknownMetric: a ``metrics`` path names no row.
        ValueError: ``labels`` does not hold one label per file.
    """
    from tabulate import tabulate

    docs = documents(results_list)
    cols = columns(docs, labels, floor=True)
    rows = visible_rows(docs, metrics, compact)
    context = _label_context(docs)
    markdown = tablefmt in MARKDOWN_FORMATS

    def clean(text) -> str:
        return one_line(text, markdown)

    body = [[clean(r.label.format(**context)), *[clean(cell(c[3], r)) for c in cols]] for r in rows]
    headers = ["metric", *[clean(c[0]) for c in cols]]
    if transpose:
        body = [list(line) for line in zip(headers, *body)]
        headers, body = body[0], body[1:]
        headers[0] = "server"
    def render(body: list[list[str]], headers: list[str]) -> str:
        return tabulate(body, headers=headers, tablefmt=tablefmt, disable_numparse=True,
                        colalign=("left", *["right"] * (len(headers) - 1)))

    text = (_blocks(body, headers, width, render)
            if width and tablefmt not in FORMAT_ONLY else render(body, headers))
    if tablefmt == "tsv":  # fields as they are, not padded to a column's width
        text = "\n".join("\t".join(f.strip() for f in line.split("\t"))
                         for line in text.splitlines())
    several = len(docs) > 1
    labels_ = file_labels(docs, labels)
    machine = "\n".join((f"{label}: " if several else "") + _machine(doc)
                        for doc, label in zip(docs, labels_))
    chosen = rows if metrics or compact else None
    notes = [note.replace("\n", "\n  ")  # a Markdown list item goes on indented
             for note in _server_notes(cols, chosen)]
    notes += _phase_notes(docs, rows) + _http_notes(docs, rows)
    if not cols:
        notes.append("- this results file holds no servers" if not several
                     else "- these results files hold no servers")
    elif compact and not metrics:
        notes.append(COMPACT_NOTE)
    sections = [text, machine, "\n".join(notes)]
    for doc, label in zip(docs, labels_):
        sections.append("\n".join(_startup(doc, label if several else None)))
        sections.append("\n".join(sessions_section(doc, label if several else None)))
        sections.append("\n".join(caps_section(doc, label if several else None)))
        sections.append("\n".join(workload_section(doc, label if several else None)))
    sections.append("\n".join(_provenance(doc, label if several else None, markdown)
                              for doc, label in zip(docs, labels_)))
    if width and tablefmt not in FORMAT_ONLY:
        sections[1:] = [_wrapped(section, width) for section in sections[1:]]
    if tablefmt in FORMAT_ONLY:
        sections, under = sections[:1], "\n\n".join(s for s in sections[1:] if s)
        if aside and under:
            aside(under.encode("utf-8", "backslashreplace").decode("utf-8"))
    out = "\n\n".join(s for s in sections if s)
    return out.encode("utf-8", "backslashreplace").decode("utf-8")  # lone surrogates
