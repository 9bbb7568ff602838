"""A busy machine's error, sized by the floor server's reading in the same run (stats.busy_error),
on the scripted virtual clock: the floor's starts are slowed by construction."""

import os

import pytest

from mcpstart.command import Command
from mcpstart.measure import run
from mcpstart.results import ServerResult

from conftest import fast
from scripted import GoodServer, Spawner, Timed

FLOOR_MS = [1.0, 2.5, 1.0, 2.0, 2.4, 2.2, 1.2]
"""The floor's initialize answers, warm-up first: a median of 2.1 ms against 1.0 at its
fastest over the six counted starts."""


class Floor(Timed):
    starts = 0

    def __init__(self):
        super().__init__(FLOOR_MS[Floor.starts % len(FLOOR_MS)] / 1000)
        Floor.starts += 1


def measure(monkeypatch, names: list[str], load: float):
    monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    Floor.starts = 0
    servers = [run.Server(ServerResult(n, language=n), Command([n])) for n in names]
    return run.measure(servers, fast(spawner=Spawner({"c": Floor, "python": GoodServer}),
                                     runs=6, warmup=1, round_trips=0, payload_bytes=1000,
                                     order="sequential"), ["mcpstart", "measure"], {})


def load_warning(row) -> str:
    (warning,) = [w for w in row.warnings if w["kind"] == "load"]
    return warning["detail"]


def test_the_floor_sizes_a_busy_machines_error(monkeypatch):
    results = measure(monkeypatch, ["c", "python"], load=3.1)
    floor, other = results.servers
    assert floor.handshake_ms["samples"] == pytest.approx(FLOOR_MS[1:])
    assert floor.handshake_ms["median"] == pytest.approx(2.1)
    expected = ("the floor server (c) read a median of 2.10 ms against 1.00 ms at its fastest "
                "in this run (2.10x), so figures may be inflated by up to ~110% (+1.10 ms on "
                "a start as short as the floor's)")
    for row in (floor, other):
        assert "load average was 3.10 on 2 cores" in load_warning(row)
        assert load_warning(row).endswith(expected)


def test_without_the_floor_the_warning_says_how_to_size_it(monkeypatch):
    (row,) = measure(monkeypatch, ["python"], load=3.1).servers
    assert load_warning(row).endswith("measure with --floor to size the error from the floor "
                                      "server's reading")


def test_a_quiet_machine_gets_no_load_warning(monkeypatch):
    results = measure(monkeypatch, ["c", "python"], load=1.5)
    assert not [w for r in results.servers for w in r.warnings if w["kind"] == "load"]
