"""Summary statistics of repeated measurements. Knows nothing about processes."""

from __future__ import annotations

import statistics

P95_MIN_SAMPLES = 20
"""Fewest counted samples for which a p95 is reported. Below 20 samples the 95th percentile
falls between the two largest values, so it says no more than the max does."""


def summarize(samples: list[float], warmup_samples: list[float] | None = None) -> dict:
    """Summarize counted samples; warm-up samples are stored but left out of every figure.

    Args:
        samples: counted values (any unit; mcpstart uses milliseconds), in run order.
        warmup_samples: values of the warm-up runs, in run order.

    Returns:
        ``{n, median, mean, stdev, min, max, mad, p95, samples, warmup_samples}``: ``stdev`` is the
        sample standard deviation (n - 1; null when n < 2), ``mad`` the median absolute deviation
        from the median, unscaled, and ``p95`` the 95th percentile by linear interpolation
        between order statistics (Hyndman & Fan 1996, definition 7: ``statistics.quantiles``
        with ``method="inclusive"``), null when n < ``P95_MIN_SAMPLES``. Every figure is null
        when there are no counted samples.
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
    return block
