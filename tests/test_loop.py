"""The one run loop (measure/run.py) for both transports, on scripted servers and a virtual
clock: a stdio server and a Streamable HTTP server go through the same rounds, warm-ups,
revision matrix, modern-era series and tool session, each on its own transport's spawner,
and each row holds its transport's blocks."""

import os

from mcpstart.command import Command
from mcpstart.measure import run
from mcpstart.measure.server import Server
from mcpstart.results import ServerResult, validate

from conftest import fast
from scripted import ScriptedTransport, Spawner, Timed


class Slow(Timed):
    """Answers every message 40 ms (virtual) after it."""

    def __init__(self):
        super().__init__(0.040)


def test_one_loop_runs_a_stdio_and_an_http_server_each_on_its_own_spawner(monkeypatch):
    stdio = Spawner({"slow": Slow})
    made = []

    def http_spawner(command=None, *, url=None, headers=None, cpus=None, path="/mcp"):
        made.append((command.argv if command else url, path))
        return ScriptedTransport(Slow())

    settings = fast(spawner=stdio, http_spawner=http_spawner, runs=3, warmup=1, round_trips=2,
                    payload_bytes=2000, http_sessions=0, load_s=0, order="interleave")
    servers = [Server(ServerResult("s"), Command(["slow"])),
               Server(ServerResult("h", "http"), Command(["slow", "{port}"]), transport="http",
                      endpoint_path="/rpc")]
    monkeypatch.setattr(os, "getloadavg", lambda: (3.0, 3.0, 3.0))  # a busy 2-core machine
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    results = run.measure(servers, settings, ["mcpstart", "measure"], {})
    validate(results.to_dict())  # the results schema holds for both transports' rows
    s, h = results.servers
    assert (s.status, h.status) == ("ok", "ok"), (s.reason, h.reason)
    assert s.handshake_ms["n"] == 3 and s.handshake_ms["warmup_samples"] == [40.0]
    assert s.handshake_ms["median"] == 40.0 and s.http is None
    start = h.http["start_ms"]
    assert start["initialize"]["n"] == 3 and start["initialize"]["median"] == 40.0
    assert h.handshake_ms is None and "handshake_ms" in h.not_measured
    sequence = [(r["series"], r["server"]) for r in results.run_sequence]
    assert sequence.count(("handshake", "s")) == sequence.count(("http_handshake", "h")) == 4
    assert [(p["requested"], p["verdict"]) for p in s.protocol["matrix"]] == \
        [(p["requested"], p["verdict"]) for p in h.protocol["matrix"]]
    assert s.round_trip_ms["n"] == h.round_trip_ms["n"] == 2
    assert made and all(path == "/rpc" for _, path in made)
    assert [name for name, _ in stdio.made] and all(name == "slow" for name, _ in stdio.made)
    assert s.modern_ms["discover"]["n"] == start["discover"]["n"] == 3
    assert sequence.count(("modern", "s")) == sequence.count(("http_modern", "h")) == 4
    assert sequence.count(("dual", "s")) == 4 and ("http_dual", "h") not in sequence
    # each row's statistics warnings name its own cold start
    assert [w["metric"] for w in s.warnings if w["kind"] == "load"] == ["handshake_ms"]
    assert [w["metric"] for w in h.warnings if w["kind"] == "load"] == [
        "http.start_ms.initialize"]


class Instructed(Slow):
    """Its initialize answer holds instructions (MCP 2025-03-26)."""

    TEXT = "Reverse texts with reverse_text; é counts two bytes."

    def result(self, method, params):
        result = super().result(method, params)
        return {**result, "instructions": self.TEXT} if method == "initialize" else result

    def fresh(self):
        return Instructed()


def test_a_metric_of_both_transports_comes_through_the_one_loop():
    """The initialize answer's instructions: bytes and tokens on a stdio and an HTTP row."""
    settings = fast(spawner=Spawner({"i": Instructed}),
                    http_spawner=lambda command=None, **_: ScriptedTransport(Instructed()),
                    runs=1, warmup=0, round_trips=0, http_sessions=0, load_s=0)
    servers = [Server(ServerResult("s"), Command(["i"])),
               Server(ServerResult("h", "http"), Command(["i", "{port}"]), transport="http")]
    results = run.measure(servers, settings, ["mcpstart", "measure"], {})
    validate(results.to_dict())
    rows = results.servers
    size = len(Instructed.TEXT.encode())
    assert size == len(Instructed.TEXT) + 1
    try:
        from mcpstart.measure.tokens import encode_length
        tokens = encode_length(Instructed.TEXT)
    except Exception:
        tokens = None
    for row in rows:
        assert row.instructions == {"bytes": size, "tokens": tokens}, row.name
        if tokens is None:
            assert "tokenizer" in row.not_measured["instructions.tokens"]


def test_a_method_that_fails_in_a_run_is_said_at_once_and_fails_the_row_at_the_end():
    """--call of a tool the server does not list: said after the first cold start (not
    after every series), the handshakes still measured, the row failed with the cause."""
    from mcpstart.wire import ToolCall

    said = []
    settings = fast(spawner=Spawner({"slow": Slow}), runs=3, warmup=1, round_trips=2,
                    payload_bytes=2000, call=ToolCall("nosuch"))
    results = run.measure([Server(ServerResult("s"), Command(["slow"]))], settings,
                          ["mcpstart", "measure"], {}, progress=said.append)
    texts = [str(getattr(s, "text", s)) for s in said]
    cause = "tools/call nosuch: the server lists no such tool (it lists: reverse_text)"
    at = texts.index(f"s: {cause} (not asked again; the row fails with it once its figures "
                     "are measured)")
    assert texts[at - 1] == "s: cold start warm-up 1/1" and texts.count(texts[at]) == 1
    row = results.servers[0]
    assert row.status == "failed" and row.reason == cause and row.handshake_ms["n"] == 3
