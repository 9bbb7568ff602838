"""What a dual-era client pays before its first call: the time from the spawn until a client
that follows the 2026-07-28 stdio rule has its first ``tools/call`` answered.

The rule (MCP specification 2026-07-28, basic/transports/stdio, "Backward Compatibility"): a
client that speaks both eras sends ``server/discover`` first, with its modern version in
``_meta``. A ``DiscoverResult`` means a modern server: the call follows with the modern
envelope. A recognised modern error (one whose ``data.supported`` lists revisions, such as
UnsupportedProtocolVersionError) means a modern server too: the call uses a listed version.
Any other error, or no answer within a reasonable timeout, means a legacy server: fall back to
``initialize``, then ``notifications/initialized`` and the call, on the same process. The
fallback "MUST NOT be keyed to one specific error code" (legacy servers answer -32601, -32602,
or nothing). A process that exits on the probe (servers built on rmcp do) is respawned for the
fallback, as the spec's "Unexpected Termination" says, and so is one whose answer cannot be
read at all (an unterminated or malformed line leaves its stream unusable); the clock runs on
from the first spawn.

The fallback timeout is ``--fallback-timeout``, else DEFAULT_FALLBACK.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from ..command import Command
from ..stats import summarize
from ..transports.base import elapsed_ms
from ..transports.session import Exited, NoAnswer, Response, Session, SessionError, Traffic
from ..wire import (MODERN_REVISION, SMALL_TEXT, ToolCall, initialize_request, modern_meta,
                    modern_request)
from . import spawn
from .client import ProbeError, call_tool, initialize_result, tool_error
from .settings import Settings

PATHS = ("modern", "after_error", "after_exit", "after_timeout")
DEFAULT_FALLBACK = (10.0, "10 s: the server/discover timeout of the official Python SDK's "
                          "client (src/mcp/client/session.py DISCOVER_TIMEOUT_SECONDS) and of "
                          "rmcp's (crates/rmcp/src/service/client.rs "
                          "DEFAULT_AUTO_DISCOVER_TIMEOUT)")
"""The named clients' fallback timeout, where they document one (python-sdk and rust-sdk, Aug
2026; the TypeScript SDK's probe inherits its 60 s request timeout)."""


def fallback_timeout(settings: Settings) -> tuple[float, str]:
    """The fallback timeout in seconds and where it comes from."""
    if settings.fallback_timeout_s is not None:
        return settings.fallback_timeout_s, "--fallback-timeout"
    return DEFAULT_FALLBACK


def classify(response: Response) -> tuple[str, str | None, str]:
    """What the probe's answer says: ``(path, version, probe)``: "modern" with the version to
    use, or "after_error" (a legacy server); ``probe`` says what came ("DiscoverResult",
    "error -32601", "a result without resultType").

    Raises:
        ProbeError: a modern server that lists no revision mcpstart speaks.
    """
    error, result = response.message.get("error"), response.message.get("result")
    if isinstance(error, dict):
        data = error.get("data")
        supported = data.get("supported") if isinstance(data, dict) else None
        code = f"error {error.get('code')}"
        if not isinstance(supported, list):
            return "after_error", None, code
        modern = sorted(v for v in supported if isinstance(v, str) and v >= MODERN_REVISION)
        if not modern:
            raise ProbeError(f"server/discover: a modern rejection ({code}) that lists no "
                             f"revision from {MODERN_REVISION} on: {supported}")
        return "modern", modern[-1], f"{code} with supported {supported}"
    if not isinstance(result, dict) or "resultType" not in result:
        return "after_error", None, "a result without resultType"
    versions = result.get("supportedVersions")
    if not isinstance(versions, list) or MODERN_REVISION not in versions:
        raise ProbeError(f"server/discover: a DiscoverResult without {MODERN_REVISION} in "
                         f"supportedVersions: {versions}")
    return "modern", MODERN_REVISION, "DiscoverResult"


def dual_start(command: Command, settings: Settings, call: ToolCall | None,
               before_spawn: Callable[[], None] = lambda: None,
               traffic: Traffic | None = None) -> dict:
    """One timed cold start as a dual-era client makes it (module doc), through the one
    timed-start primitive; without ``call`` (the server lists no tool to call) it ends where
    the client could call: the DiscoverResult, or the fallback's initialize answer. What
    its processes sent is added to ``traffic`` (the row's), as spawn.started does.

    Returns:
        ``{path, ms, probe}``: the path taken (PATHS), ms from just before the spawn to the
        call's answer (or to ready), what the probe got.

    Raises:
        SessionError: the fallback or the call got no usable answer, or the tool reported an
            error (the cause says which step).
    """
    timeout_s, _ = fallback_timeout(settings)
    with spawn.started([(command, modern_request("server/discover"))], settings, timed=True,
                       before_spawn=before_spawn, traffic=traffic) as (session,):
        respawn = False
        try:
            response = session.wait(1, timeout_s, diagnose=False)
        except NoAnswer:
            path, version, probe = "after_timeout", None, f"no answer within {timeout_s:g} s"
        except Exited as err:
            path, version, probe, respawn = "after_exit", None, str(err), True
        except SessionError as err:  # an answer no client can read: the stream is unusable
            path, version, probe, respawn = "after_error", None, str(err), True
        else:
            path, version, probe = classify(response)
        if path == "modern":
            answer = _call(session, call, settings.timeout_s, response, modern_meta(version))
        elif respawn:
            first = initialize_request(settings.requested_revision)
            with spawn.started([(command, first)], settings, timed=False,
                               traffic=traffic) as (again,):
                ready = again.wait(1, settings.timeout_s)
                initialize_result(ready)
                again.notify("notifications/initialized")
                answer = _call(again, call, settings.timeout_s, ready)
        else:
            params = initialize_request(settings.requested_revision)["params"]
            ready = session.request("initialize", params, settings.timeout_s)
            initialize_result(ready)
            session.notify("notifications/initialized")
            answer = _call(session, call, settings.timeout_s, ready)
        return {"path": path, "ms": elapsed_ms(session.t0_ns, answer.at_ns), "probe": probe}


def _call(session: Session, call: ToolCall | None, timeout_s: float, ready: Response,
          meta: dict | None = None) -> Response:
    """The call's answer; without a call, ``ready`` (the answer after which a client could
    call: discover's or initialize's)."""
    if call is None:
        return ready
    outcome = call_tool(session, call, SMALL_TEXT, timeout_s, meta)
    if outcome.is_error:
        raise tool_error(call, outcome)
    return outcome.response


def block(samples: list[tuple[dict, bool]], settings: Settings, error: str | None,
          call: ToolCall | None) -> dict:
    """The row's ``dual_era`` block from the runs (``(sample, warmup)``) of ``call``.

    Returns:
        ``{fallback_timeout_s, fallback_timeout_source, until, path, paths: {path: counted
        runs}, probe, ms: <stats>, error}``: ``until`` what ``ms`` runs to ("tools/call
        NAME", or "ready (no tool to call)"), ``path`` the one most counted runs took,
        ``probe`` what the last probe got, ``error`` why the series stopped (None when it
        did not).
    """
    timeout_s, source = fallback_timeout(settings)
    counted = [s for s, warmup in samples if not warmup]
    paths = Counter(s["path"] for s in counted)
    return {"fallback_timeout_s": timeout_s, "fallback_timeout_source": source,
            "until": f"tools/call {call.name}" if call else "ready (no tool to call)",
            "path": paths.most_common(1)[0][0] if paths else None,
            "paths": {p: paths[p] for p in PATHS if paths[p]},
            "probe": samples[-1][0]["probe"] if samples else None,
            "ms": summarize([s["ms"] for s in counted],
                            [s["ms"] for s, warmup in samples if warmup]),
            "error": error}
