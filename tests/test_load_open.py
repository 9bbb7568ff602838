"""The open loop's logic on a virtual clock (mcpstart/measure/arrivals.py): the schedule, sends
that never wait for an answer, and latency from the intended send time, so a stall shows in
every request behind it; the real timing is tests/test_load_open_e2e.py's."""

from mcpstart.measure import arrivals, load


def test_the_schedule_deals_rate_times_duration_slots_evenly_round_the_users():
    every = sorted(t for i in range(10) for t in arrivals.slots(1000.0, 10.0, 100.0, 10, i))
    assert len(every) == 1000
    assert every[0] == 1000.0 and every[-1] == 1000.0 + 999 / 100
    gaps = {round(b - a, 9) for a, b in zip(every, every[1:])}
    assert gaps == {0.01}
    mine = list(arrivals.slots(1000.0, 10.0, 100.0, 10, 3))
    assert mine[:2] == [1000.03, 1000.13] and len(mine) == 100
    assert len(list(arrivals.slots(0.0, 1.0, 3.0, 2, 0))) + len(
        list(arrivals.slots(0.0, 1.0, 3.0, 2, 1))) == 3  # 0, 1/3, 2/3


class Clock:
    """A virtual clock: ``sleep`` moves it on."""

    def __init__(self, now: float):
        self.now = now

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds > 0
        self.now += seconds


def stalled_run(begins: float, ends: float) -> tuple[dict, list]:
    """The open loop at 100/s for 10 s on the virtual clock against a server that answers in
    2 ms, except that it holds every request arriving in [begins, ends) until ``ends``:
    the engine's records as locust_mcp.py writes them (start: the intended time) and
    (intended, sent) per request."""
    clock, records, sent = Clock(0.0), [], []

    def begin(intended: float) -> None:  # starts the request; the answer comes later
        send = clock()
        answered = (ends if begins <= send < ends else send) + 0.002
        sent.append((intended, send))
        records.append(["tools/call", intended, arrivals.late_ms(intended, answered), None,
                        None])

    times = sorted(t for i in range(10) for t in arrivals.slots(0.0, 10.0, 100.0, 10, i))
    assert arrivals.open_loop(times, clock, clock.sleep, begin) == 1000
    data = {"window": {"start": 0.0, "deadline": 10.0}, "records": records, "unfinished": [],
            "histogram": {}}
    return data, sent


def test_a_stall_delays_no_send_and_shows_in_every_request_scheduled_behind_it():
    data, sent = stalled_run(5.0, 6.0)
    assert all(send == intended for intended, send in sent)  # none waited for an answer
    block = load.summarize(data, [], 100.0)
    behind = [r for r in data["records"] if 5.0 <= r[1] < 6.0]
    assert len(behind) == 100
    assert all(r[2] >= (6.0 - r[1]) * 1000 for r in behind)
    assert block["latency_ms"]["p95"] >= 400 and block["latency_ms"]["p50"] < 3
    assert block["requests"] == 1000 and block["rate_missed"] is False


def test_a_send_behind_its_time_goes_at_once_and_counts_its_lateness():
    clock, begun = Clock(5.0), []  # the engine woke 5 s into a schedule begun at 0
    arrivals.open_loop([1.0, 2.0, 7.0], clock, clock.sleep,
                       lambda intended: begun.append((intended, clock())))
    assert begun == [(1.0, 5.0), (2.0, 5.0), (7.0, 7.0)]
    assert arrivals.late_ms(1.0, 5.0) == 4000.0
