"""Every warning mcpstart gives, as a closed set (hyperfine's warnings are one enum too): each
kind is named here, and here its text is built. A warning is stored in the results file as
``{kind, metric, detail}``; views print ``detail`` as stored (a plain string in an older file
is printed as it is), so a reader can redo any report without this code changing its words.

docs/warnings.md lists the kinds (a test checks it lists exactly these).
"""

from __future__ import annotations

import json
from enum import StrEnum


class Kind(StrEnum):
    """The kinds of warning, with what each means."""

    STDOUT_NOISE = "stdout_noise"
    """stdout lines that are not JSON-RPC messages were skipped."""
    CRLF = "crlf"
    """lines ended in CRLF (accepted)."""
    IRREGULAR_ANSWER = "irregular_answer"
    """an answer deviated from JSON-RPC or MCP in a way a tolerant client accepts."""
    SERVER_REQUESTS = "server_requests"
    """the server sent requests to the client."""
    STRAY_RESPONSES = "stray_responses"
    """responses with an id mcpstart was not awaiting."""
    LAUNCHER_EXITED = "launcher_exited"
    """the spawned process exited while its descendants kept serving."""
    UNKNOWN_PROGRESS = "unknown_progress"
    """progress notifications for a progressToken mcpstart never sent."""
    STDERR_MESSAGES = "stderr_messages"
    """JSON-RPC messages written on stderr, where no client reads them."""
    NOTIFICATION_FLOOD = "notification_flood"
    """more notifications than a client shows or can keep up with (counted per method)."""
    NO_TOOLS_CAPABILITY = "no_tools_capability"
    """tools/list answers, but initialize declared no ``tools`` capability."""
    PAGING = "paging"
    """tools/list paging was stopped (a cursor that repeats, or too many pages)."""
    MEMORY = "memory"
    """idle memory did not settle, a peak fell below the idle figure, or the OOM killer ended
    a process of the server at its memory limit (--memory-limit) while its row stood."""
    PROTOCOL = "protocol"
    """about the protocol revision: negotiated otherwise than asked, varying, negotiated yet
    not found supported by the revision matrix, or a discover answer that does not count as
    modern."""
    ORPHANS = "orphans"
    """processes left the server's process group and were killed."""
    FOOTPRINT = "footprint"
    """a footprint figure could not be counted."""
    SDK_VERSION = "sdk_version"
    """the build resolved another SDK version than the recipe names."""
    TARGET = "target"
    """how the server is launched limits what is measured (docker, a reduced environment)."""
    LAUNCHER = "launcher"
    """the server's launcher went to the network on every start."""
    FAILURE = "failure"
    """a further failure of a row that had failed already."""
    FIRST_RUN_OUTLIER = "first_run_outlier"
    """the first counted cold start was an outlier (caches still cold)."""
    OUTLIER = "outlier"
    """counted runs with a modified z-score above the outlier threshold."""
    HIGH_VARIATION = "high_variation"
    """the series' stdev is a large share of its mean."""
    LOAD = "load"
    """the load average exceeded the core count when the run started."""
    LOAD_ERRORS = "load_errors"
    """requests failed under load (counted by class; the row stays ok)."""
    SERIES_ERRORS = "series_errors"
    """calls of a series (round trips, full sessions) failed with an HTTP error status
    (counted by class in the series' ``errors``; the row stays ok)."""
    LOAD_BOUND = "load_bound"
    """the load engine, not the server, set the rate (at its ceiling): a lower bound."""
    DRIFT = "drift"
    """compare: the floor server moved between the two files (the machine drifted)."""
    NO_FLOOR = "no_floor"
    """compare: no floor server in both files, so machine drift cannot be told apart."""
    OTHER_MACHINE = "other_machine"
    """compare: the two files come from different machines."""
    PHASE_RULE = "phase_rule"
    """compare: the two files time the phases past the handshake by different rules."""
    SETTINGS = "settings"
    """compare: the two files were measured with different settings that shape figures (a
    workload, a memory limit, the process layer, the payload ...)."""
    SHARED_FLOOR = "shared_floor"
    """tools doing different work answer in one common time far above initialize (a cost
    common to every call; near 40 ms, likely Nagle's algorithm meeting delayed ACKs)."""
    WARMUP_UNSETTLED = "warmup_unsettled"
    """a per-tool warm series' warm-up ended before the tool's times stopped falling (a bound
    or a failed call: measure/warmup.py); its counted calls may not be warm."""
    WARM_SESSIONS_DISAGREE = "warm_sessions_disagree"
    """a warm series' sessions have medians apart beyond their own noise (measure/
    warm_sessions.py): the figure depends on the session, the machine's or the server's."""
    CLIENTS_DISAGREE = "clients_disagree"
    """a message that some official SDKs' clients refuse and others read (measured as read)."""


def warning(kind: Kind, detail: str, metric: str | None = None) -> dict:
    """The stored form of one warning: ``{kind, metric, detail}``."""
    return {"kind": str(Kind(kind)), "metric": metric, "detail": detail}


# ---- traffic (transports/session.py) ---------------------------------------------------------

def stdout_noise(count: int, example: str | None) -> dict:
    return warning(Kind.STDOUT_NOISE, f"skipped {count} stdout line(s) that are not JSON-RPC "
                                      f"messages; first: {example!r}")


def crlf(count: int) -> dict:
    return warning(Kind.CRLF, f"{count} line(s) ended in CRLF (accepted)")


def irregular_answer(note: str, count: int) -> dict:
    return warning(Kind.IRREGULAR_ANSWER, f"{note} ({count} time(s); accepted)")


def clients_disagree(note: str, count: int) -> dict:
    return warning(Kind.CLIENTS_DISAGREE, f"a message that {note} ({count} time(s); measured "
                                          "as a client that reads it)")


def server_requests(methods) -> dict:
    return warning(Kind.SERVER_REQUESTS, f"server sent requests: {', '.join(sorted(methods))}")


def stray_responses(count: int, example: str | None) -> dict:
    return warning(Kind.STRAY_RESPONSES, f"{count} response(s) with an id mcpstart was not "
                                         f"awaiting; first: {example!r}")


def launcher_exited(code, after_ms: float) -> dict:
    return warning(Kind.LAUNCHER_EXITED, f"the spawned process exited with code {code} after "
                                         f"{after_ms:.0f} ms while its descendants kept stdout "
                                         "open (a launcher); measured on the descendants")


def unknown_progress(count: int) -> dict:
    return warning(Kind.UNKNOWN_PROGRESS, f"{count} notifications/progress with a progressToken "
                                          "mcpstart never sent (no request asked for progress)")


def stderr_messages(count: int) -> dict:
    return warning(Kind.STDERR_MESSAGES, f"{count} JSON-RPC message(s) on stderr; the stdio "
                                         "transport carries messages on stdout only, so no "
                                         "client reads them")


NOTIFICATION_FLOOD = 1000
"""Notifications over a row's sessions from which they are called a flood (a client shows
a handful of log lines; thousands are work it must do before it can serve the user)."""


def notification_flood(counts: dict, total: int) -> dict:
    shown = ", ".join(f"{method} {n}" for method, n in counts.items())
    return warning(Kind.NOTIFICATION_FLOOD, f"{total} notifications in all ({shown})",
                   "traffic.notifications")


def no_tools_capability() -> dict:
    return warning(Kind.NO_TOOLS_CAPABILITY, "initialize declared no tools capability, yet "
                                             "tools/list answered; clients that check "
                                             "capabilities.tools show no tools",
                   "server_capabilities")


# ---- the session's figures (measure/) ----------------------------------------------------

def paging(stop: str) -> dict:
    return warning(Kind.PAGING, f"tools/list paging stopped: {stop}", "tools")


def unsettled(waited_s: float) -> dict:
    return warning(Kind.MEMORY, f"idle memory did not settle within {waited_s:.1f} s",
                   "memory.idle_rss_bytes")


def peak_below_idle(peak_bytes: int, idle_bytes: int, gone: list[str]) -> dict:
    return warning(Kind.MEMORY, f"peak RSS under the call ({peak_bytes / 2**20:.1f} MiB) is "
                                f"below the idle RSS ({idle_bytes / 2**20:.1f} MiB): "
                                f"{', '.join(gone) or 'a process'} exited in between",
                   "memory.peak_rss_bytes_payload")


def memory_limit_hit(said: str) -> dict:
    return warning(Kind.MEMORY, said, "memory_limit")


def discover_not_modern() -> dict:
    return warning(Kind.PROTOCOL, "server/discover was answered without resultType: a server of "
                                  "the initialize era answering an unknown method; not counted "
                                  "as modern", "protocol.era")


def revisions_varied(seen) -> dict:
    return warning(Kind.PROTOCOL, f"negotiated revision varied between runs: {sorted(seen)}",
                   "protocol.negotiated_revision")


def revision_contradicted(negotiated: str, got: str) -> dict:
    return warning(Kind.PROTOCOL, f"the session negotiated {negotiated}, yet the revision "
                                  f"matrix does not list it as supported: {got}",
                   "protocol.supported_revisions")


def negotiated_other(requested: str, negotiated: str) -> dict:
    return warning(Kind.PROTOCOL, f"requested protocol revision {requested!r}, server "
                                  f"negotiated {negotiated!r}", "protocol.negotiated_revision")


def orphans(count: int) -> dict:
    return warning(Kind.ORPHANS, f"{count} process(es) left the process group and were killed")


def footprint_failed(err: Exception) -> dict:
    return warning(Kind.FOOTPRINT, f"footprint not measured: {type(err).__name__}: {err}",
                   "footprint")


def footprint_uncounted(key: str, err: Exception) -> dict:
    return warning(Kind.FOOTPRINT, f"{key} not counted: {err}", f"footprint.{key}")


def sdk_version(sdk: str, recipe_version: str, built: str) -> dict:
    return warning(Kind.SDK_VERSION, f"recipe says {sdk} {recipe_version}, build has {built}",
                   "sdk_version")


def target(note: str) -> dict:
    return warning(Kind.TARGET, note)


def launcher_network(kind: str, ms: float, p: float) -> dict:
    return warning(Kind.LAUNCHER, f"the launcher ({kind}) went to the network on every start: "
                                  f"{ms:.0f} ms (median of launched minus offline, per round; "
                                  f"p = {p:.2g})",
                   "launcher.network_ms")


def failure(reason: str) -> dict:
    return warning(Kind.FAILURE, reason)


# ---- series (stats.py) -------------------------------------------------------------------

def first_run_outlier(metric: str, value: str, score: float, threshold: float,
                      scale: str) -> dict:
    return warning(Kind.FIRST_RUN_OUTLIER, f"the first counted run took {value}, modified "
                                           f"z-score {score:.1f} > {threshold} ({scale}): caches "
                                           "were probably still cold; more warm-up runs "
                                           "(--warmup) would leave it out", metric)


def outlier(metric: str, threshold: float, odd: int, total: int, scale: str, runs: str) -> dict:
    return warning(Kind.OUTLIER, f"modified z-score above {threshold} in {odd} of {total} "
                                 f"counted runs ({scale}): {runs}", metric)


def high_variation(metric: str, stdev: str, percent: float, mean: str, limit: float) -> dict:
    return warning(Kind.HIGH_VARIATION, f"stdev {stdev} is {percent:.1f}% of the mean {mean} "
                                        f"(more than {limit:.0f}%): the machine was noisy or "
                                        "the server varies; compare medians with care", metric)


def load(metric: str, load_average: float, cores: int) -> dict:
    return warning(Kind.LOAD, f"the 1-minute load average was {load_average:.2f} on {cores} "
                              "cores when the run started: other work competed for the CPU",
                   metric)


def busy(metric: str, load_average: float, cores: int,
         floor: tuple[str, float, float] | None) -> dict:
    """``load``'s warning for a run, sized by the floor server's reading in it: ``(name,
    median ms, fastest ms)`` (stats.busy_error), or None when the run holds no floor."""
    if floor is None:
        size = "; measure with --floor to size the error from the floor server's reading"
    else:
        name, median, fastest = floor
        size = (f"; the floor server ({name}) read a median of {median:.2f} ms against "
                f"{fastest:.2f} ms at its fastest in this run ({median / fastest:.2f}x), so "
                f"figures may be inflated by up to ~{100 * (median / fastest - 1):.0f}% "
                f"(+{median - fastest:.2f} ms on a start as short as the floor's)")
    return warning(Kind.LOAD, load(metric, load_average, cores)["detail"] + size, metric)


def series_errors(series: str, failed: int, calls: int, first: str | None) -> dict:
    return warning(Kind.SERIES_ERRORS, f"{failed} of {calls} {series} failed with an HTTP "
                                       f"error status (counted, not a failure: see {series}."
                                       f"errors); the first: {first}", series)


def load_errors(errors: dict[str, int]) -> dict:
    return warning(Kind.LOAD_ERRORS, "requests failed under load (figures, not a failure: see "
                                     "http.load[].errors): " + ", ".join(
                                         f"{n} in {scenario}" for scenario, n in errors.items()),
                   "http.load")


def load_bound(rates: dict[str, float], floor: str) -> dict:
    """``rates``: requests/s of each engine-bound scenario; ``floor``: the ceiling's server."""
    return warning(Kind.LOAD_BOUND, "the rate is the load engine's, not the server's: in "
                                    + ", ".join(f"{scenario} ({rps:.0f}/s)"
                                                for scenario, rps in rates.items())
                                    + " is at or near the engine's own maximum (the same "
                                    f"scenario against {floor} in this run): the server's rate "
                                    "is at least that (Locust's master/worker mode scales the "
                                    "engine out)", "http.load")


def shared_floor(metric: str, hit: dict) -> dict:
    """``hit``: measure/shared_floor.floor's finding on the series ``metric``."""
    detail = (f"{', '.join(hit['tools'])} all answer in about {hit['floor_ms']:.1f} ms (p50) "
              f"whatever each does, against {hit['initialize_ms']:.2f} ms for initialize on "
              "the same server: a cost common to every tool call, not the tools' own work")
    if hit["nagle"]:
        detail += ("; near 40 ms it has the signature of Nagle's algorithm meeting delayed "
                   "ACKs (a likely cause: a response written in more than one small write "
                   "without TCP_NODELAY waits for the client's delayed ACK, 40 ms on Linux)")
    return warning(Kind.SHARED_FLOOR, detail, metric)


def warmup_unsettled(metric: str, warmup: dict, max_calls: int, max_ms: float) -> dict:
    """``warmup``: measure/warmup.warm_up's ``{calls, settled}`` (settled false); its bounds
    ``max_calls`` and ``max_ms`` (ms)."""
    return warning(Kind.WARMUP_UNSETTLED,
                   f"the warm-up ended after {warmup['calls']} uncounted calls before their "
                   f"times stopped falling (its bounds: {max_calls} calls, {max_ms / 1000:g} s "
                   "of answer time, or a failed call): the counted calls may not be warm yet",
                   metric)


def warm_sessions_disagree(metric: str, fast_ms: float, slow_ms: float, sessions: int) -> dict:
    """The medians of the fastest and slowest of a warm series' ``sessions`` sessions (ms),
    whose 95% intervals are apart (measure/warm_sessions.disagreement)."""
    return warning(Kind.WARM_SESSIONS_DISAGREE,
                   f"the warm calls' median was {fast_ms:.3f} ms in one session and "
                   f"{slow_ms:.3f} ms in another of {sessions}, their 95% intervals apart: the "
                   "figure pools them, and depends on the session. A state that lasts a "
                   "session sets it: the machine's (on a VM, client and server on different "
                   "CPUs can make whole sessions slower: a CPU woken from idle) or the "
                   "server's (what a JIT compiled in that process); compare several runs",
                   metric)


# ---- compare (views/compare.py) ----------------------------------------------------------

def drift(metric: str, ratio: float, p: float) -> dict:
    return warning(Kind.DRIFT, f"the floor server moved x{ratio:.3f} (p {p:.3g}) between the "
                               "files: the machine drifted; a server counts as slower only "
                               f"beyond that", metric)


def no_floor() -> dict:
    return warning(Kind.NO_FLOOR, "the files do not both hold the floor server (measure "
                                  "--floor): a change of the machine cannot be told from a "
                                  "server's")


def phase_rule(old: str | None, new: str | None) -> dict:
    def said(rule):
        return (rule if rule is not None else "the wall clock from the spawn (a file written "
                "before the rule was recorded: mcpstart's own time between answers included)")
    return warning(Kind.PHASE_RULE, f"the files time these phases differently (OLD: "
                                    f"{said(old)}; NEW: {said(new)}): part of a difference is "
                                    "the rule's", "phases_ms")


def settings_differ(changes: list[tuple[str, object, object]]) -> dict:
    said = "; ".join(f"{key} {json.dumps(old)} in OLD, {json.dumps(new)} in NEW"
                     for key, old, new in changes)
    return warning(Kind.SETTINGS, f"the files were measured with other settings ({said}): "
                                  "part of a difference is theirs")


def other_machine(old: str, new: str) -> dict:
    return warning(Kind.OTHER_MACHINE, f"the files come from different machines ({old} / "
                                       f"{new}): a difference may be the machine's")
