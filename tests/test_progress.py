"""The progress display (views/progress.py) on fake streams: plain lines, quiet, the live line
of a terminal (carriage returns, the bar, the build spinner), NO_COLOR, masking."""

import io
import re
import threading
import time

import pytest

from mcpstart import Step
from mcpstart.redact import redact
from mcpstart.views.progress import Display, bar, elapsed, last_line


class Terminal(io.StringIO):
    """A stream that says it is a terminal (and has no file descriptor: the width comes
    from $COLUMNS)."""

    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


STEPS = [Step("recipes from /x (--recipes)"),
         Step("go: building (log: /x/build.log)", "build", "go", log="/nonexistent/build.log"),
         Step("go: built in 1.5 s", "build", "go"),
         Step("[1/1] go: revision matrix", "matrix", "go"),
         *[Step(f"go: cold start run {k + 1}/3", "cold start", "go", k, 3) for k in range(3)],
         Step("[1/1] go: tools/list", "session", "go")]


@pytest.fixture(autouse=True)
def terminal_env(monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.delenv("NO_COLOR", raising=False)


def visible(text: str) -> str:
    """``text`` without the colour escapes the display writes."""
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def wait_for(stream, text: str, timeout_s: float = 5) -> bool:
    """Wait until ``text`` shows in ``stream`` (colours left out)."""
    deadline = time.monotonic() + timeout_s
    while text not in visible(stream.getvalue()):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def spinners() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "mcpstart-spinner"]


def test_plain_lines_one_per_step_exactly_the_texts():
    stream = io.StringIO()
    with Display(stream) as display:
        for step in STEPS:
            display(step)
            assert not spinners()  # no spinner without a terminal, not even for a build
        display("a plain note")
    assert display.mode == "plain"
    assert stream.getvalue().splitlines() == [f"mcpstart: {s.text}" for s in STEPS] + [
        "mcpstart: a plain note"]
    assert "\r" not in stream.getvalue() and "\x1b" not in stream.getvalue()


def test_quiet_writes_nothing_even_on_a_terminal():
    stream = Terminal()
    with Display(stream, quiet=True) as display:
        for step in STEPS:
            display(step)
        display.line("go: ok")
        display.outcomes([{"name": "go", "status": "failed", "reason": "boom"}])
    assert stream.getvalue() == ""
    assert not spinners()


def test_the_live_line_is_one_line_rewritten_with_a_bar():
    stream, clock = Terminal(), Clock()
    display = Display(stream, clock=clock)
    assert display.mode == "live" and display.color
    display(Step("[1/2] go: revision matrix", "matrix", "go"))
    assert stream.getvalue() == "\r[1/2] go: revision matrix (0:00)"
    clock.now += 75
    display(Step("go: cold start run 5/10", "cold start", "go", 5, 10))
    out = stream.getvalue()
    assert "\n" not in out and out.count("\r") == 2  # transient steps never scroll
    assert out.rsplit("\r", 1)[1] == (
        "[\x1b[32m##########\x1b[0m----------] 5/10 go: cold start run 5/10 (1:15)")
    display(Step("go: short", "cold start", "go", 10, 10))  # shorter: the rest rubbed out
    assert visible(stream.getvalue().rsplit("\r", 1)[1]) == (
        "[####################] 10/10 go: short (1:15)" + " " * 13)
    display.close()
    assert stream.getvalue().endswith("\r" + " " * 45 + "\r")


def test_no_color_means_no_escape_at_all_on_a_terminal(monkeypatch, tmp_path):
    monkeypatch.setenv("NO_COLOR", "1")
    log = tmp_path / "build.log"
    log.write_text("\x1b[1mcompiling\x1b[0m foo\n")
    stream = Terminal()
    with Display(stream) as display:
        display(Step("go: building", "build", "go", log=log))
        assert wait_for(stream, "/ go: building 0:00 | compiling foo")  # a redraw
        for step in STEPS:
            display(step)
        display.outcomes([{"name": "go", "status": "ok", "reason": None,
                           "warnings": [{"kind": "noise", "metric": "handshake_ms",
                                         "detail": "noisy"}]},
                          {"name": "py", "status": "failed", "reason": "exited"}])
    out = stream.getvalue()
    assert display.mode == "live" and not display.color
    assert "\x1b" not in out
    assert "[#############-------] 2/3" in out
    assert out.endswith("mcpstart: go: ok\nmcpstart: go warning: handshake_ms: noisy\n"
                        "mcpstart: py: failed: exited\n")


def test_colors_on_a_terminal_without_no_color():
    stream = Terminal()
    with Display(stream) as display:
        display.outcomes([{"name": "py", "status": "failed", "reason": "exited\ncode 1"}])
    assert stream.getvalue() == "mcpstart: \x1b[31mpy: failed: exited\n  code 1\x1b[0m\n"


def test_permanent_lines_scroll_above_the_live_line():
    stream = Terminal()
    with Display(stream) as display:
        display(Step("go: cold start run 1/2", "cold start", "go", 0, 2))
        display("cannot write out.json (measuring goes on)")
    out = stream.getvalue()
    note = "mcpstart: cannot write out.json (measuring goes on)\n"
    before, after = out.split(note)
    live = "[--------------------] 0/2 go: cold start run 1/2 (0:00)"
    assert before == "\r" + live + "\r" + " " * len(live) + "\r"  # rubbed out, then the note
    assert after.startswith("\r" + live)  # and the live line again below it


def test_a_build_spinner_shows_the_log_and_stops_at_the_next_step(tmp_path):
    log = tmp_path / "build.log"
    log.write_text("$ go build\n")
    stream = Terminal()
    with Display(stream) as display:
        display(Step("go: building (log: ...)", "build", "go", log=log))
        assert "mcpstart: go: building (log: ...)\n" in stream.getvalue()  # kept in scrollback
        assert len(spinners()) == 1
        assert wait_for(stream, "\r/ go: building 0:00 | $ go build")  # the spinner redrew
        with open(log, "a") as handle:
            handle.write("downloading 10%\rdownloading 60%\r\n")
        assert wait_for(stream, " go: building 0:00 | downloading 60%")
        display(Step("[1/1] go: revision matrix", "matrix", "go"))
        assert not spinners()  # stopped and joined before the callback returned
        frozen = stream.getvalue()
        display(Step("go: cold start run 1/2", "cold start", "go", 0, 2))
        assert stream.getvalue().startswith(frozen)
        drawn = stream.getvalue()
        time.sleep(0.3)  # nothing draws between callbacks during the series
        assert stream.getvalue() == drawn


def test_close_stops_a_spinner_that_no_step_ended(tmp_path):
    stream = Terminal()
    with Display(stream) as display:
        display(Step("go: building", "build", "go", log=tmp_path / "none.log"))
        assert len(spinners()) == 1
    assert not spinners()


def test_the_live_line_fits_the_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "30")
    stream = Terminal()
    Display(stream)(Step("python: cold start warm-up 1/1 and much more", "cold start",
                         "python", 0, 4))
    shown = visible(stream.getvalue().rsplit("\r", 1)[1])
    assert shown == "[--------------------] 0/4 py"  # 29 columns: the cursor stays on the line


def test_mask_applies_to_steps_lines_and_the_build_log(tmp_path):
    log = tmp_path / "build.log"
    log.write_text("token hunter2 used\n")
    plain, live = io.StringIO(), Terminal()
    for stream in (plain, live):
        with Display(stream, mask=lambda text: redact(text, ("hunter2",))) as display:
            display(Step("x: HUNTER hunter2", "note"))
            display(Step("x: building", "build", "x", log=log))
            assert display.mode == "plain" or wait_for(stream, "| token *** used")
            display.line("reason: hunter2")
    assert "hunter2" not in plain.getvalue() + live.getvalue()
    assert "mcpstart: x: HUNTER ***\n" in plain.getvalue()
    assert "| token *** used" in live.getvalue()


def test_dumb_terminal_gets_plain_lines(monkeypatch):
    monkeypatch.setenv("TERM", "dumb")
    stream = Terminal()
    Display(stream)(Step("go: cold start run 1/2", "cold start", "go", 0, 2))
    assert stream.getvalue() == "mcpstart: go: cold start run 1/2\n"


def test_helpers(tmp_path):
    assert bar(0, 3) == ("", "-" * 20)
    assert bar(3, 3) == ("#" * 20, "")
    assert bar(1, 3) == ("#" * 6, "-" * 14)
    assert bar(5, 0) == ("", "-" * 20)
    assert elapsed(0.9) == "0:00" and elapsed(75) == "1:15" and elapsed(3725) == "1:02:05"
    log = tmp_path / "log"
    assert last_line(log) == ""
    log.write_bytes(b"first\n\x1b[32m  Compiling\x1b[0m serde v1\r\n\n\n")
    assert last_line(log) == "Compiling serde v1"
    log.write_bytes(b"x" * 10000 + b"\nend \x07bell\xff\n")
    assert last_line(log) == "end bell\ufffd"


def heartbeats() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "mcpstart-heartbeat"]


def test_off_a_terminal_a_long_step_prints_a_heartbeat_until_the_next_step(tmp_path):
    """A build (or the load) off a terminal says it is alive every HEARTBEAT_S seconds, at
    most 30 (issue 31); the interval is injected and the elapsed time read off a scripted
    clock, so the test waits on no wall clock of the build's."""
    from mcpstart.views.progress import HEARTBEAT_S

    assert 0 < HEARTBEAT_S <= 30 and Display(io.StringIO()).heartbeat_s == HEARTBEAT_S
    stream, clock = io.StringIO(), Clock()
    with Display(stream, clock=clock, heartbeat_s=0.01) as display:
        display(Step("rust: building (log: x)", "build", "rust", log=tmp_path / "build.log"))
        clock.now += 150
        assert wait_for(stream, "mcpstart: still building rust (2:30)\n")
        display(Step("rust: built in 151.0 s", "build", "rust"))
        assert not heartbeats()  # stopped and joined before the callback returned
        display(Step("go-http: load, 3 scenarios of 10 s", "load", "go-http"))
        clock.now += 40
        assert wait_for(stream, "mcpstart: still on: go-http: load, 3 scenarios of 10 s (0:40)")
        display(Step("[1/1] go: revision matrix", "matrix", "go"))
        clock.now += 20
        assert wait_for(stream, "mcpstart: still on: [1/1] go: revision matrix (0:20)")
        display(Step("go: cold start run 1/2", "cold start", "go", 0, 2))
        assert not heartbeats()
        after = stream.getvalue()
        time.sleep(0.05)  # five intervals: a short Step has no heartbeat
        assert stream.getvalue() == after
    assert "\r" not in stream.getvalue()


def test_the_idle_memory_wait_has_a_heartbeat_and_the_timed_calls_after_it_none():
    """The wait for idle memory to settle may last the settle rule's max_s (30 s), and the
    line before it is the last for that long: off a terminal it has the heartbeat; the large
    call that follows, timed with nothing else of mcpstart running, stops it first."""
    stream, clock = io.StringIO(), Clock()
    with Display(stream, clock=clock, heartbeat_s=0.01) as display:
        display(Step("[1/1] go: idle memory", "settle", "go"))
        clock.now += 20
        assert wait_for(stream, "mcpstart: still on: [1/1] go: idle memory (0:20)")
        display(Step("[1/1] go: tools/call reverse_text with 5242880 bytes", "session", "go"))
        assert not heartbeats()
        after = stream.getvalue()
        time.sleep(0.05)  # five intervals
        assert stream.getvalue() == after


def test_a_run_names_its_idle_memory_wait_as_the_settle_phase():
    """What the display keys the heartbeat on, from a real run (the fake server, fast
    settings): the idle-memory step is the one "settle" Step, the other session steps
    "session"."""
    from conftest import FAKE, PYTHON, fast
    from mcpstart.command import Command
    from mcpstart.measure import run
    from mcpstart.results import ServerResult

    said = []
    server = run.Server(ServerResult("fake"), Command([*PYTHON, str(FAKE)]))
    results = run.measure([server], fast(runs=1, warmup=0, round_trips=1, payload_bytes=1000),
                          ["mcpstart", "measure"], {}, progress=said.append)
    assert results.servers[0].status == "ok", results.servers[0].reason
    assert [s.text for s in said if s.phase == "settle"] == ["[1/1] fake: idle memory"]
    assert "[1/1] fake: tools/list" in [s.text for s in said if s.phase == "session"]
