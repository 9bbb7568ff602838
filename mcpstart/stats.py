"""Statistics of repeated measurements: summaries, the median's confidence interval, warnings
about a series a reader should not trust blindly, and the exact Mann-Whitney U test that
``mcpstart compare`` uses. Knows nothing about processes."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction

from . import warnings as warn

P95_MIN_SAMPLES = 20
"""Fewest counted samples for which a p95 is reported. Below 20 samples the 95th percentile
falls between the two largest values, so it says no more than the max does."""

CI_TARGET = 0.95
"""The confidence level the median's interval aims for (at least this, when n allows it)."""

OUTLIER_Z = 3.5
"""Modified z-score above which a value is an outlier (Iglewicz & Hoaglin 1993)."""

NOISE = 0.05
"""Deviations from the median within this fraction of it are the machine's noise, never an
outlier, whatever their z-score: a tight series (MAD near 0) makes any wobble a large z. 5%
is how far the same binary moves between batches on a quiet machine (docs/figures.md,
"Noise between batches")."""

HIGH_VARIATION = 0.10
"""Coefficient of variation (stdev / mean) above which a series is flagged."""


def summarize(samples: list[float], warmup_samples: list[float] | None = None) -> dict:
    """Summarize counted samples; warm-up samples are stored but left out of every figure.

    Args:
        samples: counted values (any unit; mcpstart uses milliseconds), in run order.
        warmup_samples: values of the warm-up runs, in run order.

    Returns:
        ``{n, median, mean, stdev, min, max, mad, p95, samples, warmup_samples, ci_low,
        ci_high, ci_level}``: ``stdev`` is the sample standard deviation (n - 1; null when
        n < 2), ``mad`` the median absolute deviation from the median, unscaled, and ``p95``
        the 95th percentile by linear interpolation between order statistics (Hyndman & Fan
        1996, definition 7: ``statistics.quantiles`` with ``method="inclusive"``), null when
        n < ``P95_MIN_SAMPLES``. ``ci_*`` is the median's confidence interval from
        ``median_ci`` (all three null when n < 2). Every figure is null when there are no
        counted samples.
    """
    values = list(samples)
    block = {
        "n": len(values),
        "median": None,
        "mean": None,
        "stdev": None,
        "min": None,
        "max": None,
        "mad": None,
        "p95": None,
        "samples": values,
        "warmup_samples": list(warmup_samples or []),
        "ci_low": None,
        "ci_high": None,
        "ci_level": None,
    }
    if not values:
        return block
    median = statistics.median(values)
    block.update(
        median=median,
        mean=statistics.fmean(values),
        stdev=statistics.stdev(values) if len(values) >= 2 else None,
        min=min(values),
        max=max(values),
        mad=statistics.median(abs(v - median) for v in values),
    )
    if len(values) >= P95_MIN_SAMPLES:
        block["p95"] = statistics.quantiles(values, n=20, method="inclusive")[18]
    ci = median_ci(values)
    if ci is not None:
        block["ci_low"], block["ci_high"], block["ci_level"] = ci
    return block


P99_MIN_SAMPLES = 100
"""Fewest samples for which a latency series' p99 is reported (below, it is the max)."""


def latency(samples: list[float]) -> dict:
    """A latency series as ``{n, p50, p95, p99, mean, samples}`` (ms in, ms out): ``summarize``'s
    median and p95 (null under P95_MIN_SAMPLES), the p99 by the same inclusive interpolation
    (null under P99_MIN_SAMPLES), every sample as given."""
    stats = summarize(samples)
    p99 = (statistics.quantiles(samples, n=100, method="inclusive")[98]
           if len(samples) >= P99_MIN_SAMPLES else None)
    return {"n": stats["n"], "p50": stats["median"], "p95": stats["p95"], "p99": p99,
            "mean": stats["mean"], "samples": samples}


def summarize_runs(runs: Iterable[tuple[float | None, bool]]) -> dict:
    """``summarize`` of a series' runs as ``(value, warmup)`` pairs in run order; a run
    without a value (it got no answer) is left out."""
    runs = list(runs)
    return summarize([v for v, warmup in runs if v is not None and not warmup],
                     [v for v, warmup in runs if v is not None and warmup])


def median_ci(values: Sequence[float], target: float = CI_TARGET
              ) -> tuple[float, float, float] | None:
    """The median's distribution-free confidence interval from order statistics.

    With the values sorted as x(1) <= ... <= x(n), the interval [x(k), x(n-k+1)] holds the
    population median with probability 1 - 2·P(Bin(n, 1/2) <= k - 1), whatever the
    distribution (continuous); this returns the narrowest such interval (largest k) whose
    level is at least ``target``. When even k = 1 (min..max) falls short, min..max is
    returned with the level it really has: n = 6 gives min..max at 0.96875 (= 1 - 2/64),
    n = 5 gives 0.9375, n = 3 gives 0.75, n = 2 gives 0.5. Examples at 95%: n = 10 gives
    [x(2), x(9)] at 0.978515625, n = 20 gives [x(6), x(15)] at 0.95861 (= 1 - 2·21700/2^20).

    Source: W. J. Conover, Practical Nonparametric Statistics, 3rd ed. (Wiley 1999), ch. 3,
    the confidence interval for a quantile (here the 0.5 quantile), and Hollander & Wolfe,
    Nonparametric Statistical Methods (the interval that inverts the sign test).

    Returns:
        ``(low, high, level)`` with ``level`` a fraction in [0, 1]; None when n < 2. With one
        value the interval would be [x, x] at level 0: it claims nothing, so mcpstart reports
        no interval rather than one that looks precise.
    """
    xs = sorted(values)
    n = len(xs)
    if n < 2:
        return None
    total = 2 ** n
    k, below = 1, 1  # below = 2**n · P(Bin(n, 1/2) <= k - 1) = sum of C(n, i), i < k
    while True:  # try k + 1 while the interval stays non-empty and reaches the target
        next_below = below + math.comb(n, k)
        if k + 1 > n - k or 1 - Fraction(2 * next_below, total) < target:
            break
        k, below = k + 1, next_below
    level = 1 - Fraction(2 * below, total)
    return xs[k - 1], xs[n - k], float(level)


def _fmt(value: float) -> str:
    return f"{value:.2f}"


def _robust_scores(values: Sequence[float]) -> tuple[list[float], str]:
    """Modified z-scores of ``values`` and a phrase naming the scale used.

    M = 0.6745·(x - median) / MAD (Iglewicz & Hoaglin 1993). When MAD is 0 (more than half
    the values are equal) the scale falls back to 1.253314·MeanAD, the mean absolute
    deviation from the median scaled to estimate a normal standard deviation, as IBM's
    Cognos Analytics documentation of the modified z score does; when that is 0 too every
    value is equal and every score is 0.
    """
    median = statistics.median(values)
    mad = statistics.median(abs(v - median) for v in values)
    if mad > 0:
        return ([0.6745 * (v - median) / mad for v in values],
                f"median {_fmt(median)}, MAD {_fmt(mad)}")
    mean_ad = statistics.fmean(abs(v - median) for v in values)
    if mean_ad == 0:
        return [0.0] * len(values), f"median {_fmt(median)}, every run equal"
    return ([(v - median) / (1.253314 * mean_ad) for v in values],
            f"median {_fmt(median)}, MAD 0 so scaled by 1.2533 x mean absolute deviation "
            f"{_fmt(mean_ad)}")


def busy_error(floor: dict | None) -> tuple[float, float] | None:
    """How far a busy machine may have moved this run's figures, read on the floor server's
    own series in the same run (a ``summarize`` block of its cold starts, ms): ``(median,
    fastest)``, None without two counted samples.

    The rule: the floor does the least work any server can (a spawn and one answer), so the
    spread of its starts is the machine's, not its own; competing work only ever delays a
    start, never speeds one up, so its fastest start is the nearest this run came to a quiet
    machine, and its median (the figure every table reports) against that fastest start is
    how far competing work moved a median: up to median - fastest ms on a start as short as
    the floor's, and median / fastest as a fraction of a longer one (a start that needs more
    CPU time waits for more of it). On a quiet machine the two are within ``NOISE`` of each
    other (its note gives the floor's quiet range), so anything beyond that is the load's.
    """
    samples = [v for v in (floor or {}).get("samples") or [] if is_number(v)]
    if len(samples) < 2 or min(samples) <= 0:
        return None
    return statistics.median(samples), min(samples)


def series_warnings(metric: str, block: dict | None, load_average=None,
                    cpu_count: int | None = None,
                    floor: tuple[str, dict | None] | None = None) -> list[dict]:
    """Warnings about one measured series, each ``{kind, metric, detail}``.

    Kinds:
        "first_run_outlier": the first counted run is slower than the median with a modified
            z-score above ``OUTLIER_Z`` (caches were probably still cold).
        "outlier": other runs (or a fast first run) with a modified z-score above
            ``OUTLIER_Z``: |M| = 0.6745·|x - median| / MAD > 3.5 (B. Iglewicz and D. C.
            Hoaglin, How to Detect and Handle Outliers, ASQC 1993). When MAD is 0 the scale
            is 1.253314·MeanAD instead (see ``_robust_scores``); if every run is equal none
            is an outlier. Either outlier also deviates from the median by more than
            ``NOISE`` of it.
        "high_variation": stdev / mean above ``HIGH_VARIATION`` (10%).
        "load": the 1-minute load average when the run started exceeded the number of
            cores; only when both ``load_average`` and ``cpu_count`` are given. It says how
            large the error can be from ``floor`` (the floor server's name and its series in
            this run: ``busy_error``), or that --floor would size it.

    Args:
        metric: the series' name as it appears in the results file, e.g. "handshake_ms".
        block: a ``summarize`` block (only ``samples`` is read); None or empty gives none
            (not even the load warning: a series never measured has no error to size).
        load_average: the 1-minute load average, or the ``[1m, 5m, 15m]`` list of
            ``os.getloadavg()`` / the results file's ``environment.load_average``.
        cpu_count: logical cores.
        floor: ``(name, summarize block)`` of the floor server in the same run, or None.
    """
    warnings = []
    samples = [v for v in (block or {}).get("samples") or [] if is_number(v)]
    if samples:
        scores, scale = _robust_scores(samples)
        median = statistics.median(samples)
        scores = [z if abs(v - median) > NOISE * abs(median) else 0.0
                  for v, z in zip(samples, scores)]
        first_slow = scores[0] > OUTLIER_Z
        if first_slow:
            warnings.append(warn.first_run_outlier(metric, _fmt(samples[0]), scores[0],
                                                   OUTLIER_Z, scale))
        odd = [(i, v, z) for i, (v, z) in enumerate(zip(samples, scores))
               if abs(z) > OUTLIER_Z and not (i == 0 and first_slow)]
        if odd:
            runs = ", ".join(f"run {i + 1} ({_fmt(v)}, z {z:.1f})" for i, v, z in odd)
            warnings.append(warn.outlier(metric, OUTLIER_Z, len(odd), len(samples), scale, runs))
        if len(samples) >= 2:
            mean = statistics.fmean(samples)
            stdev = statistics.stdev(samples)
            if mean > 0 and stdev / mean > HIGH_VARIATION:
                warnings.append(warn.high_variation(metric, _fmt(stdev), 100 * stdev / mean,
                                                    _fmt(mean), 100 * HIGH_VARIATION))
    if isinstance(load_average, Sequence) and load_average:
        load_average = load_average[0]
    if samples and is_number(load_average) and is_number(cpu_count) \
            and load_average > cpu_count:  # a series never measured has no error to size
        name, series = floor or (None, None)
        error = busy_error(series)
        warnings.append(warn.busy(metric, load_average, cpu_count,
                                  None if error is None else (name, *error)))
    return warnings


def is_number(value) -> bool:
    """True for a finite JSON number that is not a bool (the one such check)."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))


def _u_counts(m: int, n: int) -> list[int]:
    """How many of the C(m + n, m) orderings of m + n distinct values give each U = 0..m·n:
    the coefficients of the Gaussian binomial [m + n, m]_q = prod_{i=1..m} (1 - q^(n+i)) /
    (1 - q^i), built one factor at a time in exact integers (the generating function of Mann
    and Whitney's 1947 recurrence). Costs about min(m, n)^2 · max(m, n) steps."""
    m, n = min(m, n), max(m, n)
    counts = [1] + [0] * (m * n)
    for i in range(1, m + 1):
        top = i * n  # degree after this factor
        for k in range(top, n + i - 1, -1):  # multiply by (1 - q^(n+i))
            counts[k] -= counts[k - n - i]
        for k in range(i, top + 1):  # divide by (1 - q^i)
            counts[k] += counts[k - i]
    return counts


def mann_whitney_greater(old: Sequence[float], new: Sequence[float]) -> tuple[int, float]:
    """Exact one-sided Mann-Whitney U test that NEW tends to be larger (slower) than OLD.

    ``u`` is the number of pairs (o, x), o from ``old`` and x from ``new``, with x > o; ``p``
    is P(U >= u) when both samples come from one continuous distribution, counted exactly
    over all C(m + n, m) equally likely orderings (H. B. Mann and D. R. Whitney, "On a test
    of whether one of two random variables is stochastically larger than the other", Annals
    of Mathematical Statistics 18 (1947) 50-60).

    Ties: a tied pair counts 0, as if the tie had broken against "NEW is slower". Every way
    of breaking the ties gives a U at least this large, so ``p`` is the largest p of them:
    a tie never makes "slower" more significant. All values tied gives u = 0, p = 1.

    Returns:
        ``(u, p)``; ``(0, 1.0)`` when either sample is empty. The smallest p possible is
        ``smallest_p(len(old), len(new))`` (complete separation).
    """
    m, n = len(old), len(new)
    if m == 0 or n == 0:
        return 0, 1.0
    u = sum(1 for x in new for o in old if x > o)
    counts = _u_counts(m, n)
    return u, float(Fraction(sum(counts[u:]), math.comb(m + n, m)))


def smallest_p(n_old: int, n_new: int) -> float:
    """The smallest p ``mann_whitney_greater`` can give with these sample sizes:
    1 / C(n_old + n_new, n_old) (6 vs 6: 1/924 = 0.00108; 3 vs 3: 1/20 = 0.05); 1.0 when
    either is 0. A test whose smallest p is above alpha can never find a regression."""
    if n_old <= 0 or n_new <= 0:
        return 1.0
    return 1 / math.comb(n_old + n_new, n_old)


def holm(ps: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of a family of p values (same order): the i-th smallest
    times the number not yet passed, never below the one before it, at most 1; naming every
    figure whose adjusted p is at most alpha keeps the chance of naming any unchanged one at
    most alpha (S. Holm, "A simple sequentially rejective multiple test procedure",
    Scandinavian Journal of Statistics 6 (1979) 65-70)."""
    out, floor = [1.0] * len(ps), 0.0
    for rank, index in enumerate(sorted(range(len(ps)), key=lambda i: ps[i])):
        floor = max(floor, min(1.0, (len(ps) - rank) * ps[index]))
        out[index] = floor
    return out


@dataclass(frozen=True)
class Slower:
    """The verdict of ``slower``: the two medians, their ratio (new / old; None when the old
    median is 0), the U statistic and p of ``mann_whitney_greater``, the verdict and whether
    it is a regression."""

    old_median: float | None
    new_median: float | None
    ratio: float | None
    u: int
    p: float
    verdict: str
    regression: bool


def slower(old: list[float], new: list[float], alpha: float, threshold_pct: float) -> Slower:
    """Whether NEW is slower than OLD (any two samples, ms): the medians and the exact
    one-sided Mann-Whitney U test (``mann_whitney_greater``). ``verdict``: "regression" (p
    at most ``alpha`` and NEW's median more than ``threshold_pct`` percent above OLD's),
    "slower, within N%" (p at most alpha, the median within the threshold), "inconclusive
    (p = P)" (the median above the threshold, p above alpha), "too few runs" (p can never
    reach alpha with these sizes: ``smallest_p``) or "ok" (the median within the threshold,
    p above alpha). ``mcpstart compare`` and the launcher's network verdict use it."""
    old_median, new_median = summarize(old)["median"], summarize(new)["median"]
    u, p = mann_whitney_greater(old, new)
    above = new_median > old_median * (1 + threshold_pct / 100)
    verdict = "ok"
    if smallest_p(len(old), len(new)) > alpha:
        verdict = "too few runs"
    elif p <= alpha:
        verdict = "regression" if above else f"slower, within {threshold_pct:g}%"
    elif above:  # the medians would make it a finding the test does not confirm
        verdict = f"inconclusive (p = {p:.2g})"
    return Slower(old_median, new_median, new_median / old_median if old_median else None,
                  u, p, verdict, verdict == "regression")
