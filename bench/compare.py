"""Arithmetic shared by the benchmarks: ratios, spread, geometric mean, verdict marks."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence


def ratio(a: float, b: float) -> float:
    return a / b if b > 0 else math.nan


def round_ratios(ours: Sequence[float], theirs: Sequence[float]) -> list[float]:
    """Round by round, ours / theirs: the ratios a side-by-side bench judges by their median
    (the two sides of a round ran in the same minute, so the machine's drift cancels)."""
    return [ratio(a, b) for a, b in zip(ours, theirs, strict=True)]


def spread(values: Sequence[float]) -> float:
    """(max - min) / median: how much the rounds of one side disagree."""
    mid = statistics.median(values)
    return (max(values) - min(values)) / mid if mid > 0 else math.nan


def json_number(value: float) -> float | None:
    """JSON has no NaN: an undefined ratio (a side that moved nothing) becomes null."""
    return value if math.isfinite(value) else None


def geometric_mean(values: Sequence[float]) -> float:
    usable = [v for v in values if v > 0 and math.isfinite(v)]
    if not usable or len(usable) != len(values):
        return math.nan
    return math.exp(statistics.fmean(math.log(v) for v in usable))


def mark(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def median_interval(values: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """A distribution-free confidence interval of the median: the order statistics k and n-k+1
    with k the largest such that a binomial(n, 1/2) count falls below k with probability at most
    (1 - level) / 2; (nan, nan) for fewer than 6 values, which cannot reach 95 %."""
    n = len(values)
    ordered = sorted(values)
    tail = (1.0 - level) / 2.0
    k = 0  # how many order statistics to cut from each end
    cumulative = 0.0
    for i in range(n + 1):
        cumulative += math.comb(n, i) / 2.0**n
        if cumulative > tail:
            break
        k = i + 1
    if k == 0:
        return math.nan, math.nan
    return ordered[k - 1], ordered[n - k]
