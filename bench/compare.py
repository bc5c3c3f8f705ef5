"""Arithmetic shared by the benchmarks: ratios, spread, geometric mean, verdict marks."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence


def ratio(a: float, b: float) -> float:
    return a / b if b > 0 else math.nan


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
