"""Where a start goes, on real processes (docs/startup.md): a fake that burns CPU reads as
CPU within loose bounds of getrusage, one that sleeps reads as waiting, a shell in front is
its own part of the chain, and a fake stdio server whose environment holds an HTTP package
under a name no list holds is named by the transport finding."""

import sys

import pytest

from mcpstart.command import Command
from mcpstart.measure import imports, usage
from mcpstart.measure.profiled import profiled_start
from mcpstart.measure.client import Skips
from mcpstart.measure.cold import cold_start
from mcpstart.transports.tree import child_subreaper

from conftest import FAKE, fast

pytestmark = pytest.mark.e2e


def _usage(argv, env=None):
    with child_subreaper():
        sample = cold_start(Command(argv, env=env or {}), fast(timeout_s=30), Skips())
    return sample["usage"], sample["handshake"]


def test_burning_fake_reads_as_cpu_and_sleeping_fake_as_waiting():
    burned, _ = _usage([sys.executable, str(FAKE), "--burn-user", "0.3", "--burn-system", "0.1"])
    assert 300 <= burned["user_ms"] <= 600  # the interpreter's own start adds ~100 ms
    assert 100 <= burned["system_ms"] <= 200
    slept, handshake = _usage([sys.executable, str(FAKE), "--slow-start", "0.3"])
    assert slept["cpu_ms"] < handshake / 2


def test_a_shell_in_front_is_its_own_part_of_the_chain():
    found, handshake = _usage(["sh", "-c", f"{sys.executable} {FAKE} --burn-user 0.2; :"])
    names = [p["name"] for p in found["processes"]]
    assert names[0] == "sh" and any(imports.PYTHON.fullmatch(n) for n in names[1:])
    python = next(p for p in found["processes"] if imports.PYTHON.fullmatch(p["name"]))
    assert python["user_ms"] >= 200 > found["processes"][0]["cpu_ms"]
    assert sum(p["cpu_ms"] for p in found["processes"]) == pytest.approx(found["cpu_ms"])
    parts = usage.line_parts(found["processes"], handshake)  # wall: sh until python started
    assert list(parts) == [found["processes"][0]["pid"], python["pid"]]
    assert sum(parts.values()) == pytest.approx(handshake)
    assert parts[python["pid"]] >= 200 and parts[found["processes"][0]["pid"]] <= 50


@pytest.mark.untimed  # a package named, not a timing
def test_an_http_package_never_seen_is_named_on_a_stdio_server(tmp_path):
    (tmp_path / "zqwire").mkdir()
    (tmp_path / "zqwire" / "__init__.py").write_text("import json\n")
    info = tmp_path / "zq_wire-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: zq-wire\nVersion: 1.0\n"
                                   "Classifier: Topic :: Internet :: WWW/HTTP :: HTTP Servers\n")
    (info / "top_level.txt").write_text("zqwire\n")
    command = Command([sys.executable, str(FAKE), "--import", "zqwire"],
                      env={"PYTHONPATH": str(tmp_path)})
    with child_subreaper():
        ms, text, interpreter = profiled_start(command, fast(timeout_s=30), imports.ENV,
                                                imports.python_interpreter)
    env = imports.environment_of(interpreter, 30)
    block = imports.block([(ms, imports.attribute(imports.parse(text), env))], env, None, "stdio")
    assert block["other_transport"]["distributions"] == ["zq-wire"]
    assert block["other_transport"]["cumulative_ms"] > 0


def test_a_process_gone_before_the_answer_counts_through_its_reaping():
    found, _ = _usage([sys.executable, str(FAKE), "--burn-user", "0.2", "--launcher"])
    gone = [p for p in found["processes"] if p["exited"]]
    assert len(gone) == 1 and gone[0]["user_ms"] >= 200  # it burned, forked and exited
    assert found["user_ms"] >= gone[0]["user_ms"]
    assert found["cpu_ms"] == pytest.approx(sum(p["cpu_ms"] for p in found["processes"]))
