import statistics

import pytest

from mcpstart.stats import P95_MIN_SAMPLES, summarize


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


# --- the median's confidence interval --------------------------------------------------------

from fractions import Fraction
from itertools import combinations
from math import comb

from mcpstart.stats import mann_whitney_greater, median_ci, series_warnings, smallest_p


def shuffled(n: int) -> list[float]:
    """Values 101..100+n in a scrambled order: x(k) is 100 + k."""
    return [float(100 + (7 * i) % n + 1) for i in range(n)]  # 7 is coprime with 3, 6, 10, 20


@pytest.mark.parametrize("n, k, level", [
    (3, 1, Fraction(6, 8)),                 # 1 - 2·P(Bin(3,½) <= 0) = 1 - 2/8
    (6, 1, Fraction(62, 64)),               # 1 - 2/64; k = 2 would give 1 - 2·7/64 = 0.78
    (10, 2, Fraction(1024 - 22, 1024)),     # 1 - 2·(1 + 10)/1024; k = 3: 1 - 2·56/1024 = 0.89
    (20, 6, Fraction(2**20 - 2 * 21700, 2**20)),  # 1+20+190+1140+4845+15504 = 21700; k = 7: 0.885
])
def test_median_ci_order_statistics(n, k, level):
    values = shuffled(n)
    assert sorted(values) == [100.0 + i for i in range(1, n + 1)]
    low, high, got = median_ci(values)
    assert (low, high) == (100.0 + k, 100.0 + n - k + 1)
    assert got == float(level)
    block = summarize(values)
    assert (block["ci_low"], block["ci_high"], block["ci_level"]) == (low, high, got)


def test_median_ci_small_n():
    assert median_ci([4.0, 2.0]) == (2.0, 4.0, 0.5)
    assert median_ci([7.0]) is None and median_ci([]) is None
    one = summarize([7.0])
    assert one["ci_low"] is None and one["ci_high"] is None and one["ci_level"] is None


# --- warnings ------------------------------------------------------------------------------

CLEAN = [10.0, 10.2, 9.9, 10.1, 10.3, 9.8, 10.0, 10.1]


def kinds(samples, **machine):
    return [w["kind"] for w in series_warnings("handshake_ms", summarize(samples), **machine)]


def test_clean_series_has_no_warning():
    assert kinds(CLEAN) == []
    assert kinds(CLEAN, load_average=[1.5, 1.0, 0.5], cpu_count=2) == []
    assert kinds([5.0, 5.0, 5.0, 5.0]) == []  # MAD 0 and mean absolute deviation 0
    assert series_warnings("handshake_ms", None) == []


def test_first_run_outlier():
    # median 10.1, deviations 0 0 .1 .1 .2 .2 .3 .9 so MAD 0.15: z of 11 = 0.6745·0.9/0.15
    # = 4.05; stdev/mean 3.6%
    warnings = series_warnings("handshake_ms", summarize([11.0] + CLEAN[1:]))
    assert [w["kind"] for w in warnings] == ["first_run_outlier"]
    assert warnings[0]["metric"] == "handshake_ms"
    assert "11.00" in warnings[0]["detail"] and "z-score 4.0" in warnings[0]["detail"]
    assert "MAD 0.15" in warnings[0]["detail"]


def test_outlier_names_runs_and_values():
    # run 5; median 10.05, deviations .05 .05 .05 .05 .15 .15 .25 1.45 so MAD 0.1:
    # z = 0.6745·1.45/0.1 = 9.78; stdev/mean 5.3%
    samples = CLEAN[:4] + [11.5] + CLEAN[5:]
    warnings = series_warnings("phases_ms.first_call", summarize(samples))
    assert [w["kind"] for w in warnings] == ["outlier"]
    assert "run 5 (11.50, z 9.8)" in warnings[0]["detail"]
    assert "MAD 0.10" in warnings[0]["detail"]
    # a fast first run is an outlier, not a cold-cache one
    # median 10.05, MAD 0.15: z of 9 = 0.6745·(-1.05)/0.15 = -4.72
    fast = series_warnings("handshake_ms", summarize([9.0] + CLEAN[1:]))
    assert [w["kind"] for w in fast] == ["outlier"]
    assert "run 1 (9.00, z -4.7)" in fast[0]["detail"]


def test_outlier_when_mad_is_zero():
    # median 5, MAD 0; mean absolute deviation 1: z of 10 = 5 / 1.253314 = 3.99 > 3.5
    warnings = series_warnings("handshake_ms", summarize([5.0, 5.0, 5.0, 5.0, 10.0]))
    assert [w["kind"] for w in warnings] == ["outlier", "high_variation"]
    assert "run 5 (10.00, z 4.0)" in warnings[0]["detail"]
    assert "MAD 0" in warnings[0]["detail"]
    # 5, 5, 6: mean absolute deviation 1/3, z of 6 = 1 / (1.253314 / 3) = 2.39: no outlier
    assert "outlier" not in kinds([5.0, 5.0, 6.0])


def test_high_variation():
    # median 10, MAD 2: largest z = 0.6745·3/2 = 1.0, no outlier; stdev 2.16 = 22% of 10
    warnings = series_warnings("handshake_ms", summarize([8.0, 12.0, 9.0, 11.0, 10.0, 13.0, 7.0]))
    assert [w["kind"] for w in warnings] == ["high_variation"]
    assert "21.6%" in warnings[0]["detail"] and "2.16" in warnings[0]["detail"]


def test_load_warning():
    warnings = series_warnings("handshake_ms", summarize(CLEAN), load_average=[3.5, 2.0, 1.0],
                               cpu_count=2)
    assert [w["kind"] for w in warnings] == ["load"]
    assert "3.50" in warnings[0]["detail"] and "2 cores" in warnings[0]["detail"]
    assert kinds(CLEAN, load_average=2.5, cpu_count=2) == ["load"]
    # a row that failed before its series was measured gets no load warning on it
    assert series_warnings("http.latency_ms", None, load_average=[3.5], cpu_count=2) == []
    assert series_warnings("handshake_ms", {"samples": []}, load_average=3.5, cpu_count=2) == []
    assert kinds(CLEAN, load_average=2.0, cpu_count=2) == []  # equal is not above
    assert kinds(CLEAN, load_average=3.5) == []  # no core count: no judgement


# --- Mann-Whitney U ------------------------------------------------------------------------

def test_complete_separation():
    old = [10.0, 10.1, 10.2, 10.3, 10.4, 10.5]
    assert mann_whitney_greater(old, [v + 1 for v in old]) == (36, 1 / 924)
    assert mann_whitney_greater([1.0, 2.0, 3.0], [4.0, 5.0, 6.0]) == (9, 0.05)
    assert mann_whitney_greater([1.0, 2.0], [3.0, 4.0, 5.0]) == (6, 0.1)  # 1 / C(5, 2)
    # NEW faster: nothing suggests slower
    assert mann_whitney_greater([4.0, 5.0, 6.0], [1.0, 2.0, 3.0]) == (0, 1.0)


def test_hand_computed_cases():
    # 2 vs 2: U over the 6 orderings is 0, 1, 2, 2, 3, 4
    assert mann_whitney_greater([1.0, 2.0], [1.5, 3.0]) == (3, pytest.approx(2 / 6))
    # 3 vs 3: counts of U = 0..9 are 1 1 2 3 3 3 3 2 1 1 (of 20); U = 8 -> 2/20
    assert mann_whitney_greater([1.0, 2.0, 4.0], [3.0, 5.0, 6.0]) == (8, pytest.approx(0.1))
    assert mann_whitney_greater([1.0, 2.0, 5.0], [3.0, 4.0, 6.0]) == (7, pytest.approx(0.2))


def test_ties_are_conservative():
    assert mann_whitney_greater([5.0, 5.0, 5.0], [5.0, 5.0, 5.0]) == (0, 1.0)
    # the tie 3 = 3 counts 0: U = 8, p = 0.1, where breaking it toward "slower" gives 0.05
    u, p = mann_whitney_greater([1.0, 2.0, 3.0], [3.0, 4.0, 5.0])
    assert (u, p) == (8, pytest.approx(0.1))
    assert p > mann_whitney_greater([1.0, 2.0, 3.0], [3.5, 4.0, 5.0])[1]


def test_exact_distribution_matches_enumeration():
    m, n = 4, 5
    new = [1.0, 4.0, 6.0, 7.0, 9.0]
    old = [2.0, 3.0, 5.0, 8.0]
    u, p = mann_whitney_greater(old, new)
    assert u == 0 + 2 + 3 + 3 + 4  # pairs where a NEW value beats an OLD one
    # every way of choosing which 4 of the 9 ranks are OLD, equally likely under no change
    us = [sum(r > o for r in set(range(9)) - set(pos) for o in pos)
          for pos in combinations(range(9), m)]
    assert len(us) == comb(m + n, m)
    assert p == pytest.approx(sum(x >= u for x in us) / len(us))


def test_smallest_p():
    assert smallest_p(6, 6) == 1 / 924
    assert smallest_p(3, 3) == 0.05
    assert smallest_p(10, 5) == 1 / comb(15, 5)
    assert smallest_p(0, 6) == 1.0


def test_no_outlier_within_the_machines_noise():
    """A series with a 2.5% spread and a MAD near zero: every z-score is large, yet no
    deviation passes the 5% noise of the machine: no warning."""
    tight = [2.000, 2.001, 2.000, 2.050, 2.000, 2.001]
    kinds = {w["kind"] for w in series_warnings("handshake_ms", summarize(tight))}
    assert kinds.isdisjoint({"outlier", "first_run_outlier"})
    wide = [2.000, 2.001, 2.000, 2.400, 2.000, 2.001]  # 20% off: an outlier
    assert "outlier" in {w["kind"] for w in series_warnings("handshake_ms", summarize(wide))}


def test_the_reference_servers_own_series_fire_only_beyond_the_noise():
    import json
    from pathlib import Path

    fixture = Path(__file__).parent / "fixtures" / "v0_2_0" / "reference.json"
    for row in json.loads(fixture.read_text())["servers"]:
        samples = row["handshake_ms"]["samples"]
        median = summarize(samples)["median"]
        fired = series_warnings("handshake_ms", row["handshake_ms"])
        tight = max(abs(v - median) for v in samples) <= 0.05 * median
        assert not (tight and any(w["kind"].endswith("outlier") for w in fired)), row["name"]
