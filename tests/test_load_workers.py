"""Locust's master and workers without Locust (mcpstart/measure/load_workers.py): the merge of
the workers' records onto the master's clock, each worker's share of the open loop's one
schedule, the master's address and the options that ask for workers; the real processes are
tests/test_load_workers_e2e.py's."""

import pytest
from click.testing import CliRunner

from mcpstart.cli import main
from mcpstart.measure import arrivals, load, load_workers
from mcpstart.measure.settings import Settings


def worker(index: int, start: float, records: list, unfinished: list, cpu_s: float,
           wall_s: float) -> dict:
    """One worker's message (load_workers.MESSAGE) with its window 2 s long from ``start``."""
    return {"index": index, "host": f"h{index}", "pid": 100 + index,
            "window": {"start": start, "deadline": start + 2.0}, "records": records,
            "unfinished": unfinished, "cpu_s": cpu_s, "wall_s": wall_s}


def master_output() -> dict:
    """The master's output for two workers: worker 1's clock 50 s behind the master's
    (another machine), worker 0's 3 ms ahead; times unrounded."""
    return {"window": {"start": 1000.0, "deadline": 1002.0}, "records": [], "unfinished": [],
            "histogram": {"1": 4}, "locust_requests": 5, "locust_failures": 1,
            "workers": [
                worker(1, 950.0, [["tools/call", 950.5, 1.234567891, None, None],
                                  ["tools/call", 951.99, 20.000000007, "timeout", "no answer"]],
                       [["tools/call", 951.5]], 0.75, 2.5),
                worker(0, 1000.003, [["tools/call", 1000.103, 0.987654321, None, None],
                                     ["initialize", 1000.004, 3.3, None, None]], [], 1.0, 2.0)]}


def test_the_merge_keeps_every_record_unrounded_on_the_masters_clock():
    merged = load_workers.merge(master_output(), 2)
    assert merged["workers_missing"] == 0
    assert load_workers.merge(master_output(), 3)["workers_missing"] == 1
    assert [w["index"] for w in merged["workers"]] == [0, 1]
    assert [w["requests"] for w in merged["workers"]] == [2, 3]
    assert [w["host"] for w in merged["workers"]] == ["h0", "h1"]
    assert [w["cpu_percent"] for w in merged["workers"]] == [50.0, 30.0]
    assert [r[2] for r in merged["records"]] == [0.987654321, 3.3, 1.234567891, 20.000000007]
    assert [r[1] for r in merged["records"]] == pytest.approx([1000.1, 1000.001, 1000.5,
                                                              1001.99], abs=1e-9)
    assert merged["unfinished"] == [["tools/call", pytest.approx(1001.5, abs=1e-9)]]
    block = load.summarize(merged, [])
    assert block["requests"] == sum(w["requests"] for w in merged["workers"]) == 5
    # the window is the master's: the late record of worker 1 ends past it
    assert block["rps"] == 3 / 2.0 and block["in_flight_at_end"] == 2
    assert block["errors"]["by_class"]["timeout"] == 2
    assert block["latency_ms"]["n"] == 4 and block["latency_ms"]["histogram"] == {"1": 4}


def test_the_workers_users_take_every_slot_of_the_schedule_once():
    start, seconds, rate = 500.0, 3.0, 100.0
    for workers, users in ((1, [10]), (2, [5, 5]), (3, [4, 3, 3]), (2, [1, 7])):
        taken = []
        for w, count in enumerate(users):
            for user in range(count):
                index, stride = load_workers.share(w, workers, user, count)
                taken += arrivals.slots(start, seconds, rate, stride, index)
        assert sorted(taken) == [start + j / rate for j in range(int(rate * seconds))], \
            (workers, users)
    assert load_workers.share(0, 1, 3, 10) == (3, 10)  # one process: as before workers


def test_the_master_listens_where_it_is_told_and_local_workers_reach_it():
    assert load_workers.master("0.0.0.0:5557") == load_workers.Master("0.0.0.0", 5557,
                                                                       "127.0.0.1")
    assert load_workers.master("10.1.2.3:6000").host == "10.1.2.3"
    assert load_workers.address("[::1]:5557") == ("::1", 5557)
    mine = load_workers.master(None)
    assert mine.bind_host == mine.host == "127.0.0.1" and 0 < mine.port < 65536
    for bad in ("host", "host:", "host:0", "host:70000", "host:x"):
        with pytest.raises(ValueError):
            load_workers.address(bad)


def test_one_local_worker_and_no_remote_one_is_one_process():
    assert not load_workers.distributed(Settings())
    assert load_workers.distributed(Settings(load_workers=2))
    assert load_workers.distributed(Settings(load_remote_workers=1, load_master="h:1"))
    record = Settings(load_workers=3).record("interleave")
    assert (record["load_workers"], record["load_remote_workers"], record["load_master"]) == (
        3, 0, None)


@pytest.mark.parametrize("argv, said", [
    (["--load-remote-workers", "1"], "needs --load-master"),
    (["--load-workers", "4", "--load-users", "3"], "at least the load workers"),
    (["--load-master", "nowhere"], "is not HOST:PORT"),
])
def test_workers_the_run_cannot_have_are_refused_before_anything_runs(argv, said, tmp_path):
    """(An empty recipe folder: were the options let through, the run would end at once.)"""
    result = CliRunner().invoke(main, ["measure", "--transport", "http", "--recipes",
                                       str(tmp_path), "-o", str(tmp_path / "out.json"), *argv])
    assert result.exit_code == 2 and said in result.output


def test_the_worker_command_refuses_an_address_without_a_port():
    result = CliRunner().invoke(main, ["load-worker", "somewhere"])
    assert result.exit_code == 2 and "is not HOST:PORT" in result.output
