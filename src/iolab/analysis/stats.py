"""Statistics of repeated runs: per-cell summaries and comparisons with confidence intervals.

Student's t distribution is scipy's (``scipy.special.stdtr``/``stdtrit``, what scipy.stats.t
computes), imported only when a statistic is computed (0.7 s); the rest is arithmetic on the
runs' values.

Conventions (docs/statistics.md says the same for users):

- A cell's 95% confidence interval is Student's t interval; it needs n >= 2. For a positive
  quantity (every run's value > 0: seconds, rows/s, MB/s) it is taken on the logarithms and
  back-transformed, ``exp(mean(log) +/- t(0.975, n-1) * sd(log) / sqrt(n))``: the interval of
  the geometric mean (the centre the ratios compare), never below zero. A quantity with a zero
  among its runs has the t interval of the mean, ``mean +/- t * sd / sqrt(n)``, cut at zero when
  no run is negative (the mean of such a quantity cannot be below zero).
- Outliers are flagged with Tukey's fences (below Q1 - 1.5 IQR or above Q3 + 1.5 IQR, n >= 4),
  never dropped.
- Two cells are compared on the logarithm of the metric (Welch's t-test, unequal variances):
  the ratio is that of geometric means, its 95% interval is ``exp(diff +/- t * se)``, and the
  p-value is the test's. The interval contains 1.0 exactly when p >= 0.05, so "significant"
  and "the interval excludes 1" never disagree.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

CONFIDENCE = 0.95
WIDE_CV = 0.10  # a coefficient of variation above this is too wide to trust


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with ``df`` degrees of freedom (scipy's ``stdtr``: what
    ``scipy.stats.t.cdf`` computes, without the 1 s import of scipy.stats)."""
    from scipy.special import stdtr  # imported by what computes statistics, not at start

    return float(stdtr(df, t))


@lru_cache(maxsize=1024)
def t_ppf(p: float, df: float) -> float:
    """The quantile of Student's t: the t with P(T <= t) = p (scipy.stats). Remembered: every
    cell of an experiment with n runs asks for the same one."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p}")
    from scipy.special import stdtrit  # scipy.stats.t.ppf's own computation

    return float(stdtrit(df, p))


def _quantile(ordered: Sequence[float], q: float) -> float:
    """Linear interpolation between order statistics (numpy's default, 'type 7')."""
    pos = (len(ordered) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


@dataclass(frozen=True)
class Summary:
    """One cell's runs of one metric. Interval fields are None below two runs."""

    n: int
    mean: float
    median: float
    sd: float | None
    cv: float | None  # sd / mean
    min: float
    max: float
    ci_low: float | None
    ci_high: float | None
    outliers: tuple[int, ...]  # indices into the values given, by Tukey's fences
    geomean: float | None = None  # every value > 0: exp(mean of the logs), the interval's centre

    @property
    def centre(self) -> float:
        """What the interval is of: the geometric mean of a positive quantity, else the mean."""
        return self.geomean if self.geomean is not None else self.mean

    @property
    def half_width(self) -> float | None:
        """The 95% interval's half-width relative to its centre (0.02 = +/- 2%)."""
        if self.ci_low is None or self.ci_high is None or self.centre == 0:
            return None
        return (self.ci_high - self.ci_low) / 2.0 / abs(self.centre)

    @property
    def too_wide(self) -> bool:
        return self.cv is not None and self.cv > WIDE_CV


def _sd(values: Sequence[float], mean: float) -> float:
    return math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1))


def summarize(values: Sequence[float]) -> Summary:
    """n, mean, median, sd, CV, min, max, the 95% interval (of the geometric mean for a
    positive quantity: see the module's docstring), and flagged outliers."""
    if not values:
        raise ValueError("no values to summarize")
    n = len(values)
    ordered = sorted(values)
    mean = math.fsum(values) / n
    median = _quantile(ordered, 0.5)
    sd = cv = low = high = geomean = None
    if ordered[0] > 0:
        logs = [math.log(v) for v in values]
        log_mean = math.fsum(logs) / n
        geomean = math.exp(log_mean)
    if n >= 2:
        sd = _sd(values, mean)
        cv = sd / abs(mean) if mean else None
        t = t_ppf(0.5 + CONFIDENCE / 2, n - 1)
        if geomean is not None:
            half = t * _sd(logs, log_mean) / math.sqrt(n)
            low, high = math.exp(log_mean - half), math.exp(log_mean + half)
        else:
            half = t * sd / math.sqrt(n)
            low, high = mean - half, mean + half
            if ordered[0] >= 0:
                low = max(low, 0.0)
    outliers: tuple[int, ...] = ()
    if n >= 4:
        q1, q3 = _quantile(ordered, 0.25), _quantile(ordered, 0.75)
        fence = 1.5 * (q3 - q1)
        outliers = tuple(i for i, v in enumerate(values) if v < q1 - fence or v > q3 + fence)
    return Summary(n, mean, median, sd, cv, ordered[0], ordered[-1], low, high, outliers, geomean)


@dataclass(frozen=True)
class Comparison:
    """``a`` against ``b``: ratio of geometric means with its 95% interval, Welch's test."""

    ratio: float
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    n_a: int
    n_b: int

    @property
    def significant(self) -> bool:
        """True when the interval excludes 1.0 (p < 0.05); False when unknown."""
        return self.p_value is not None and self.p_value < 1.0 - CONFIDENCE


def _welch(a: Sequence[float], b: Sequence[float]) -> tuple[float, float, float, float | None]:
    """Welch's test on the logarithms: (difference of log means, its standard error, the
    degrees of freedom, the p-value); the p-value is None below two runs on a side."""
    if not a or not b:
        raise ValueError("both samples need values")
    if min(a) <= 0 or min(b) <= 0:
        raise ValueError("the metric must be positive to compare ratios")
    la, lb = [math.log(v) for v in a], [math.log(v) for v in b]
    ma, mb = math.fsum(la) / len(la), math.fsum(lb) / len(lb)
    diff = ma - mb
    if len(la) < 2 or len(lb) < 2:
        return diff, math.nan, math.nan, None
    va = math.fsum((x - ma) ** 2 for x in la) / (len(la) - 1) / len(la)
    vb = math.fsum((x - mb) ** 2 for x in lb) / (len(lb) - 1) / len(lb)
    se = math.sqrt(va + vb)
    if se == 0:
        return diff, 0.0, math.nan, 0.0 if diff != 0 else 1.0
    df = (va + vb) ** 2 / (va**2 / (len(la) - 1) + vb**2 / (len(lb) - 1))
    return diff, se, df, 2.0 * (1.0 - t_cdf(abs(diff) / se, df))


def compare(a: Sequence[float], b: Sequence[float]) -> Comparison:
    """Compare two samples of a positive metric (seconds, rows/s); see the module docstring.

    With fewer than two runs on a side, or no spread on both, only the ratio is known.
    """
    diff, se, df, p = _welch(a, b)
    ratio = math.exp(diff)
    if p is None:
        return Comparison(ratio, None, None, None, len(a), len(b))
    if se == 0:
        return Comparison(ratio, ratio, ratio, p, len(a), len(b))
    t = t_ppf(0.5 + CONFIDENCE / 2, df)
    return Comparison(ratio, math.exp(diff - t * se), math.exp(diff + t * se), p, len(a), len(b))


def p_value(a: Sequence[float], b: Sequence[float]) -> float | None:
    """The p-value of :func:`compare` alone (no interval: no quantile to search), for the many
    pairs a family of comparisons holds."""
    return _welch(a, b)[3]


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of a family of p-values, in the order given: the k-th
    smallest is multiplied by (m - k + 1), made no smaller than the one before it, and capped
    at 1. Rejecting where the adjusted p < 0.05 keeps the chance of any false "significant" in
    the family at 5% or less, whatever the dependence between the tests."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [1.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


@dataclass(frozen=True)
class Trend:
    """A least-squares line through (x, y), and whether its slope differs from zero."""

    n: int
    slope: float  # y units per x unit
    intercept: float
    p_value: float | None  # t-test of slope = 0 with n - 2 degrees of freedom; None below n = 3
    change: float  # the line's change over the x span, relative to the mean of y

    @property
    def significant(self) -> bool:
        return self.p_value is not None and self.p_value < 1.0 - CONFIDENCE


def trend(xs: Sequence[float], ys: Sequence[float]) -> Trend:
    """Ordinary least squares of ``ys`` on ``xs`` (e.g. a baseline's metric over time)."""
    n = len(xs)
    if n != len(ys) or n < 2:
        raise ValueError("a trend needs two or more (x, y) pairs")
    mx, my = math.fsum(xs) / n, math.fsum(ys) / n
    sxx = math.fsum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        raise ValueError("a trend needs two or more distinct x values")
    slope = math.fsum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    intercept = my - slope * mx
    change = slope * (max(xs) - min(xs)) / my if my else 0.0
    p: float | None = None
    if n >= 3:
        residual = math.fsum((y - intercept - slope * x) ** 2 for x, y in zip(xs, ys, strict=True))
        se = math.sqrt(residual / (n - 2) / sxx)
        p = 2.0 * (1.0 - t_cdf(abs(slope) / se, n - 2)) if se > 0 else (0.0 if slope else 1.0)
    return Trend(n, slope, intercept, p, change)
