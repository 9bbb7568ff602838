"""The misbehaving servers of tests/test_http_faults.py once more as real processes (the
fakes' switches), measured through the engine as a user's run is: the same row for each,
in wall-clock time well short of the timeout, and no process left behind."""

import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from conftest import FAKE as STDIO_FAKE, fast
from mcpstart.engine import job_for, measure

from test_http import FAKE, no_children

pytestmark = pytest.mark.e2e
TIMEOUT_S = 20.0


def rows(tmp_path, specs: tuple[str, ...], transport: str) -> dict:
    """One run of the ``--server`` ``specs``; their rows by name."""
    options = {"server_specs": specs, "configs": (), "client": None, "cwd": None,
               "recipes_dir": None, "output": tmp_path / "r.json", "load_seconds": 0.0,
               "endpoint": None}
    settings = fast(runs=1, warmup=0, round_trips=3, http_sessions=2, timeout_s=TIMEOUT_S,
                    probe_timeout_s=5.0, transport=transport, order="sequential")
    job = job_for((), options, settings, ["mcpstart"], lambda _: None)
    job.plan.ceiling = None
    outcome = measure(job)
    return {r["name"]: r for r in outcome.results.to_dict()["servers"]}


def said(row: dict) -> str:
    return "\n".join([row["reason"] or ""] + [w["detail"] for w in row["warnings"]])


def test_the_http_fault_servers_as_real_processes(tmp_path):
    """The gzip, endless-cursor and notification-error faults in one server (each is an ok
    row with a warning of its own), the HTTP+SSE and ignored-port servers on their own, and
    one that sends elicitation/create on its standalone GET stream during each call."""
    fake = f"{sys.executable} {FAKE} --port {{port}}"
    began = time.monotonic()
    got = rows(tmp_path, (f"ok={fake} --gzip --endless-cursor --notification-error",
                          f"old_sse={fake} --old-sse", f"own_port={fake} --own-port",
                          f"elicit={fake} --elicit-on-get"), "http")
    assert time.monotonic() - began < 2 * TIMEOUT_S  # no row sat out its timeout
    ok, old, own, elicit = got["ok"], got["old_sse"], got["own_port"], got["elicit"]
    assert elicit["status"] == "ok", elicit["reason"]
    assert elicit["http"]["latency_ms"]["n"] == 3
    assert elicit["traffic"]["server_requests"]["elicitation/create"] >= 3
    assert elicit["traffic"]["streams"]["standalone_opened"] >= 1
    assert ok["status"] == "ok", ok["reason"]
    assert ok["tools"]["count"] == 1 and ok["http"]["latency_ms"]["n"] == 3
    for evidence in ("Content-Encoding: gzip", "nextCursor", "notifications/initialized"):
        assert evidence in said(ok), evidence
    assert old["status"] == "failed" and "HTTP+SSE" in old["reason"]
    assert "endpoint" in old["reason"] and "/messages/?session_id=" in old["reason"]
    assert own["status"] == "failed" and "the server listens on 127.0.0.1:" in own["reason"]
    assert not no_children()


def test_a_header_on_the_command_line_measures_a_url_that_needs_it_and_shows_it_nowhere(
        tmp_path, capsys):
    """``measure --url URL --header 'Authorization: Bearer ...'`` against the fake as a
    real process answering 401 without the token: an ok row, the token in no output."""
    from mcpstart.redact import redact_argv
    from mcpstart.transports.http import free_port

    token, port = "e2e-s3cret-token", free_port()
    server = subprocess.Popen([sys.executable, str(FAKE), "--port", str(port), "--bearer",
                               token], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              text=True)
    try:
        assert "running on" in server.stdout.readline()  # listening
        url = f"http://127.0.0.1:{port}/mcp"
        try:  # the fake refuses a request without the token (an independent client)
            urllib.request.urlopen(urllib.request.Request(url, b"{}", method="POST"), timeout=5)
            raise AssertionError("answered without the token")
        except urllib.error.HTTPError as err:
            assert err.code == 401
        header = f"Authorization: Bearer {token}"
        options = {"server_specs": (), "configs": (), "client": None, "cwd": None,
                   "recipes_dir": None, "output": tmp_path / "r.json", "load_seconds": 0.0,
                   "url": url, "headers": (header,)}
        settings = fast(runs=1, warmup=0, round_trips=3, http_sessions=2, timeout_s=TIMEOUT_S,
                        transport="http")
        began = time.monotonic()
        job = job_for((), options, settings, redact_argv(["mcpstart", "measure", "--url", url,
                                                          "--header", header]), print)
        outcome = measure(job)
        assert time.monotonic() - began < TIMEOUT_S
    finally:
        server.kill()
        server.wait()
    [row] = outcome.results.to_dict()["servers"]
    assert row["status"] == "ok", row["reason"]
    assert row["command"]["header_keys"] == ["Authorization"]
    assert row["http"]["latency_ms"]["n"] == 3
    said = capsys.readouterr()
    outputs = [said.out, said.err, str(outcome.shown().to_dict())] + [
        p.read_text() for p in tmp_path.iterdir()]
    assert len(outputs) >= 5 and not any(token in text for text in outputs), outputs[-2:]
    assert not no_children()


def test_an_error_answering_a_notification_over_stdio_as_a_real_process(tmp_path):
    began = time.monotonic()
    row = rows(tmp_path, (f"note_error={sys.executable} {STDIO_FAKE} --notification-error",),
               "stdio")["note_error"]
    assert time.monotonic() - began < TIMEOUT_S
    assert row["status"] == "ok", row["reason"]
    assert row["tools"]["count"] == 1 and row["round_trip_ms"]["n"] == 3
    assert "notifications/initialized" in said(row)
    assert not no_children()


def test_load_counts_a_closed_connection_as_connection_and_ends_the_session_it_leaves():
    """A server that closes the connection instead of answering every 7th call: under load
    each close is a ``connection`` error (never ``protocol``), nothing is resent unseen,
    and a user that starts over DELETEs the session the error left."""
    from mcpstart.measure import load

    if load.engine_version() is None:
        from conftest import unavailable
        unavailable("Locust is not installed (pip install 'mcpstart[http]')")
    import tempfile
    from pathlib import Path
    options = {"server_specs": (), "configs": (), "client": None, "cwd": None,
               "recipes_dir": None, "output": Path(tempfile.mkdtemp()) / "r.json",
               "load_seconds": 1.0}
    settings = fast(runs=1, warmup=0, round_trips=3, payload_bytes=1000, http_sessions=2,
                    load_s=1.0, load_users=2, load_timeout_s=2.0, load_rate=20.0,
                    transport="http")
    command = (sys.executable, str(FAKE), "--port", "{port}", "--close-every", "7")
    job = job_for(command, options, settings, ["mcpstart"], lambda _: None, name="closes")
    job.plan.ceiling = None
    [row] = measure(job).results.to_dict()["servers"]
    assert row["status"] == "ok", row["reason"]
    blocks = {b["scenario"]: b for b in row["http"]["load"]}
    for block in blocks.values():
        classes = block["errors"]["by_class"]
        assert classes["connection"] >= 1 and classes["protocol"] == 0, (block["scenario"],
                                                                          classes)
    assert blocks["calls"]["by_request"]["DELETE"]["n"] >= 1  # the stale sessions ended
    assert not no_children()
