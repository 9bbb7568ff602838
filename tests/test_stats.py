import statistics

import pytest

from mcpstart.measure.stats import P95_MIN_SAMPLES, summarize


def test_summary_of_known_values():
    block = summarize([10.0, 12.0, 11.0, 30.0, 13.0], warmup_samples=[99.0])
    assert block["n"] == 5
    assert block["median"] == 12.0
    assert block["mean"] == pytest.approx(15.2)
    assert block["stdev"] == pytest.approx(statistics.stdev([10, 12, 11, 30, 13]))
    assert block["stdev"] == pytest.approx(8.3487, abs=1e-4)
    assert (block["min"], block["max"]) == (10.0, 30.0)
    # deviations from 12: 2, 0, 1, 18, 1 -> median 1
    assert block["mad"] == 1.0
    assert block["p95"] is None  # too few samples
    assert block["samples"] == [10.0, 12.0, 11.0, 30.0, 13.0]
    assert block["warmup_samples"] == [99.0]


def test_warmup_values_do_not_enter_figures():
    block = summarize([5.0, 5.0], warmup_samples=[1000.0, 2000.0])
    assert block["mean"] == 5.0 and block["max"] == 5.0 and block["stdev"] == 0.0


def test_p95_with_enough_samples():
    values = [float(v) for v in range(1, P95_MIN_SAMPLES + 1)]  # 1..20
    block = summarize(values)
    # Hyndman & Fan type 7: position 1 + 0.95 * 19 = 19.05 -> 19 + 0.05 * (20 - 19)
    assert block["p95"] == pytest.approx(19.05)


def test_single_and_empty():
    one = summarize([7.0])
    assert one["median"] == 7.0 and one["stdev"] is None and one["mad"] == 0.0
    empty = summarize([], [3.0])
    assert empty["n"] == 0 and empty["median"] is None and empty["warmup_samples"] == [3.0]
