"""May a client cache the tools? The caching hints of a server's ``server/discover`` and
``tools/list`` answers and, by one rule, whether an editor may show cached tools and defer the
spawn until the first call.

Source: MCP specification 2026-07-28, server/utilities/caching. Servers MUST put ``ttlMs`` (ms
the client MAY consider the result fresh; 0: immediately stale, re-fetch; absent: assume 0) and
``cacheScope`` ("public": any client may share it; "private": reusable within the same
authorization context) on complete results of server/discover and tools/list, among others;
each page of a list carries its own; a notification (tools/list_changed) invalidates a fresh
entry. The era is cached per server configuration (basic/versioning: "MAY persist it across
restarts of the same server configuration").

The rule (docs/configs.md, "May a client cache the tools?"): an editor may show a server's tools from a
cache and spawn it only at the first call when the server is modern (its discover answer is a
DiscoverResult), and both the discover answer and every tools/list page carry a ``cacheScope``
and a ``ttlMs`` above 0: then, for up to the smallest of those ttlMs after it last fetched
them, the cached answers are fresh. A legacy server gives no hints (the handshake era has
none); ttlMs 0 or absent means the client should re-fetch, which needs the process.
"""

from __future__ import annotations

from ..command import Command
from ..transports.session import Traffic
from ..wire import modern_meta, modern_request, paging_stop
from . import spawn
from .client import result_of
from .settings import Settings

NOT_MODERN = ("legacy server: the initialize era has no caching hints, so a client must spawn "
              "it to list its tools")


def hints(command: Command, settings: Settings, wait_s: float,
          traffic: Traffic | None = None) -> dict:
    """One untimed start with the modern envelope: ``server/discover``, then ``tools/list``
    followed through its pages, each answer awaited ``wait_s`` (the revision matrix's probe
    wait); the hints of each answer. What the start saw is added to ``traffic`` (the row's),
    as spawn.started does.

    Returns:
        ``{discover_ttl_ms, discover_cache_scope, tools_list_ttl_ms, tools_list_cache_scope,
        pages}``: for tools/list the smallest ttlMs over its pages (None when a page has
        none) and its cacheScope ("mixed" when the pages disagree, which the spec forbids).

    Raises:
        SessionError: an answer no client can use.
    """
    with spawn.started([(command, modern_request("server/discover"))], settings,
                       timed=False, traffic=traffic) as (session,):
        discover = result_of(session.wait(1, wait_s), "server/discover")
        ttls, scopes, seen, pages, cursor = [], set(), set(), 0, None
        while True:
            params = {"_meta": modern_meta()} | ({"cursor": cursor} if cursor else {})
            page = result_of(session.request("tools/list", params, wait_s),
                             "tools/list")
            pages += 1
            ttls.append(_ttl(page))
            scopes.add(page.get("cacheScope"))
            tools = page.get("tools")
            cursor = page.get("nextCursor")
            if cursor is None or paging_stop(cursor, seen, pages,
                                             len(tools) if isinstance(tools, list) else 0):
                break
            seen.add(cursor)
    return {"discover_ttl_ms": _ttl(discover), "discover_cache_scope": discover.get("cacheScope"),
            "tools_list_ttl_ms": None if None in ttls else min(ttls),
            "tools_list_cache_scope": scopes.pop() if len(scopes) == 1 else "mixed",
            "pages": pages}


def _ttl(result: dict):
    ttl = result.get("ttlMs")
    return ttl if isinstance(ttl, (int, float)) and not isinstance(ttl, bool) else None


def decide(found: dict | None) -> tuple[bool, str]:
    """The rule (module doc) on ``hints``' answer (None: a legacy server). Returns
    ``(may_defer_spawn, reason)``."""
    if found is None:
        return False, NOT_MODERN
    for what in ("discover", "tools_list"):
        ttl, scope = found[f"{what}_ttl_ms"], found[f"{what}_cache_scope"]
        name = what.replace("_", "/")
        if scope not in ("public", "private"):
            return False, f"{name} gives no cacheScope ({scope!r}), so no cache may keep it"
        if not ttl or ttl <= 0:
            return False, (f"{name} says ttlMs {ttl}: immediately stale, so a client re-fetches "
                           "it, which needs the process")
    fresh_s = min(found["discover_ttl_ms"], found["tools_list_ttl_ms"]) / 1000
    scope = ("public" if {found["discover_cache_scope"], found["tools_list_cache_scope"]}
             == {"public"} else "private (reusable within the same authorization context)")
    return True, (f"fresh for {fresh_s:g} s after a client last fetched them, cacheScope "
                  f"{scope}: an editor may show the cached tools and spawn at the first call")


def block(found: dict | None, error: str | None, modern: bool, first_call: dict | None,
          legacy_first_call: dict | None) -> dict:
    """The row's ``caching`` block: the hints, the rule's answer and what the deferred first
    call costs (``first_call``: the modern first-call cold start, modern_ms.first_call;
    ``legacy_first_call``: handshake + tools/list + call, phases_ms.first_call).

    Returns:
        ``{discover_ttl_ms, discover_cache_scope, tools_list_ttl_ms, tools_list_cache_scope,
        may_defer_spawn, reason, deferred_first_call_ms, deferred_first_call_from}``.
    """
    out = {"discover_ttl_ms": None, "discover_cache_scope": None, "tools_list_ttl_ms": None,
           "tools_list_cache_scope": None, **(found or {})}
    if error is not None:
        out.update(may_defer_spawn=None, reason=f"the hints could not be read: {error}")
    else:
        may, reason = decide(found if modern else None)
        out.update(may_defer_spawn=may, reason=reason)
    stats, source = ((first_call, "modern_ms.first_call") if modern and first_call
                     else (legacy_first_call, "phases_ms.first_call"))
    out.update(deferred_first_call_ms=(stats or {}).get("median"),
               deferred_first_call_from=source if (stats or {}).get("median") is not None
               else None)
    return out
