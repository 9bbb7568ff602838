"""What a dual-era client pays before its first call (dual_era.py), and whether a client may
cache the tools (caching_hints.py), on scripted servers and a virtual clock: the fallback after an
error of any code, after an exit (a respawn), after silence (exactly the fallback timeout)."""

import json

import pytest

from mcpstart.command import Command
from mcpstart.measure import caching_hints, run
from mcpstart.results import ServerResult
from mcpstart.views.table import table

from conftest import fast, require_modules
from scripted import GoodServer, Out, Spawner


class Legacy(GoodServer):
    """Answers server/discover with -32601, as the TypeScript SDK's legacy servers do."""

    def result(self, method, params):
        return KeyError(method) if method == "server/discover" else super().result(method, params)


class InvalidParams(GoodServer):
    """Answers server/discover with -32602, as the Python SDK's legacy servers do."""

    def reply(self, message):
        if isinstance(message, dict) and message.get("method") == "server/discover":
            return {"jsonrpc": "2.0", "id": message["id"],
                    "error": {"code": -32602, "message": "Invalid request parameters"}}
        return super().reply(message)


class ExitsOnProbe(GoodServer):
    """Exits when its first message is not initialize, as servers built on rmcp do."""

    def __init__(self):
        self.first = None

    def answer(self, message):
        if isinstance(message, dict) and self.first is None:
            self.first = message.get("method")
            if self.first != "initialize":
                return [Out("exit", code=1, after_s=0.002)]
        return super().answer(message)


class Silent(GoodServer):
    """Never answers server/discover; answers initialize on the same process."""

    def result(self, method, params):
        return None if method == "server/discover" else super().result(method, params)


class Cached(GoodServer):
    """A modern server with caching hints (ttl_ms on discover and each tools/list page)."""

    ttl_ms = 300_000

    def result(self, method, params):
        result = super().result(method, params)
        if method in ("server/discover", "tools/list"):
            result.update(resultType="complete", ttlMs=self.ttl_ms, cacheScope="public")
        return result


class Stale(Cached):
    ttl_ms = 0


def cells(results, label: str) -> dict:
    """The table's row ``label``, per server."""
    lines = table(results.to_dict()).split("\n\n")[0].splitlines()
    split = lambda line: [c.strip() for c in line.strip("|").split("|")]
    names = split(lines[0])[1:]
    row = next(split(l) for l in lines[2:] if split(l)[0] == label)
    return dict(zip(names, row[1:]))


def measure(scripts: dict, **settings):
    settings.setdefault("payload_bytes", 1000)
    spawner = Spawner(scripts)
    servers = [run.Server(ServerResult(name), Command([name])) for name in scripts]
    results = run.measure(servers, fast(spawner=spawner, runs=3, warmup=1, round_trips=0,
                                        **settings), ["mcpstart", "measure"], {})
    json.dumps(results.to_dict())
    measure.results = results
    return {row.name: row for row in results.servers}, spawner


def test_each_path_of_the_stdio_fallback_rule():
    rows, spawner = measure({"modern": GoodServer, "e32601": Legacy, "e32602": InvalidParams,
                             "exits": ExitsOnProbe, "silent": Silent}, fallback_timeout_s=2.5)
    paths = {name: row.dual_era["path"] for name, row in rows.items()}
    assert paths == {"modern": "modern", "e32601": "after_error", "e32602": "after_error",
                     "exits": "after_exit", "silent": "after_timeout"}
    for row in rows.values():
        assert row.status == "ok", row.reason
        block = row.dual_era
        assert block["paths"] == {block["path"]: 3} and block["ms"]["n"] == 3
        assert block["ms"]["warmup_samples"] and block["error"] is None
        assert (block["fallback_timeout_s"], block["fallback_timeout_source"]) == \
            (2.5, "--fallback-timeout")
    shown = cells(measure.results, "a dual-era client's first call, median (ms, path)")
    assert shown["silent"] == "2500 (after_timeout)" and shown["exits"].endswith("(after_exit)")
    assert rows["e32601"].dual_era["probe"] == "error -32601"
    assert rows["e32602"].dual_era["probe"] == "error -32602"
    assert "exited with code 1" in rows["exits"].dual_era["probe"]
    # silence costs exactly the fallback timeout (a virtual clock); an answer costs nothing
    assert rows["silent"].dual_era["ms"]["median"] == pytest.approx(2500)
    assert rows["modern"].dual_era["ms"]["median"] == pytest.approx(0)
    # the exit is followed by a fresh process that gets initialize first
    exits = [t for name, t in spawner.made if name == "exits"]
    firsts = [t.sent[0]["method"] for t in exits if t.sent]
    assert "server/discover" in firsts and "initialize" in firsts
    after = [t.sent for t in exits if t.sent and t.sent[0]["method"] == "initialize"
             and any(m and m.get("method") == "tools/call" for m in t.sent)]
    assert after, "the respawned process was asked the call"
    # on the same process: discover, then initialize, notifications/initialized, the call
    silent = next(t for name, t in spawner.made if name == "silent"
                  and t.sent and t.sent[0]["method"] == "server/discover"
                  and len(t.sent) > 1)
    assert [m["method"] for m in silent.sent[:4]] == ["server/discover", "initialize",
                                                     "notifications/initialized", "tools/call"]


def test_the_default_fallback_timeout_is_the_named_clients():
    rows, _ = measure({"silent": Silent})
    block = rows["silent"].dual_era
    assert block["fallback_timeout_s"] == 10.0
    assert "DISCOVER_TIMEOUT_SECONDS" in block["fallback_timeout_source"]
    assert block["ms"]["median"] == pytest.approx(10_000)


def test_a_client_may_defer_the_spawn_only_for_fresh_hints():
    rows, _ = measure({"cached": Cached, "stale": Stale, "legacy": Legacy})
    cached, stale, legacy = rows["cached"].caching, rows["stale"].caching, rows["legacy"].caching
    assert (cached["discover_ttl_ms"], cached["tools_list_ttl_ms"]) == (300_000, 300_000)
    assert cached["tools_list_cache_scope"] == "public" and cached["may_defer_spawn"] is True
    assert "fresh for 300 s" in cached["reason"]
    assert cached["deferred_first_call_from"] == "modern_ms.first_call"
    assert cached["deferred_first_call_ms"] == rows["cached"].modern_ms["first_call"]["median"]
    assert stale["may_defer_spawn"] is False and "ttlMs 0" in stale["reason"]
    assert legacy["may_defer_spawn"] is False and legacy["reason"] == caching_hints.NOT_MODERN
    assert legacy["deferred_first_call_from"] == "phases_ms.first_call"
    assert legacy["deferred_first_call_ms"] == rows["legacy"].phases_ms["first_call"]["median"]
    shown = cells(measure.results, "may show cached tools, spawn at the first call")
    assert shown["cached"] == "yes (ttl 300 s); first call 0.00 ms"
    assert shown["legacy"] == "no; first call 0.00 ms"


@pytest.mark.tokenizer
def test_the_tool_caps_note_counts_the_servers_tools_together():
    require_modules("bpe_openai", extra="tokens")  # the note counts tokens
    measure({"cached": Cached, "stale": Stale, "legacy": Legacy})
    text = table(measure.results.to_dict())
    assert "Tool caps: 3 server(s) list 3 tool(s) together, 120 tokens" in text
    assert "- Cursor (cap 40 tools): together they fit" in text
    reference = measure.results.to_dict()
    for row in reference["servers"]:
        row["language"] = "python"  # as if each were a reference server: no one's setup
    assert "Tool caps" not in table(reference)


class NoReverse(Silent):
    """Lists only a tool mcpstart does not call: the series runs to ready."""

    def result(self, method, params):
        if method == "tools/list":
            return {"tools": [{"name": "other", "inputSchema": {"type": "object"}}]}
        return super().result(method, params)


def test_without_a_tool_to_call_the_series_runs_to_ready():
    rows, _ = measure({"quiet": NoReverse}, fallback_timeout_s=1.5)
    block = rows["quiet"].dual_era
    assert block["until"] == "ready (no tool to call)" and block["path"] == "after_timeout"
    assert block["ms"]["median"] == pytest.approx(1500)
    assert cells(measure.results, "a dual-era client's first call, median (ms, path)") == {
        "quiet": "1500 (after_timeout; to ready)"}
