"""Every number a workload records, declared once: its unit, which way is better, how to show it.

Each workload declares its own numbers beside it (``workloads/<name>/metrics.py``); what every
workload's latency module records is declared here (:data:`COMMON`). Findings, ``--metric``,
charts and exports find a declaration through the registry (:func:`iolab.workloads.registry.
find_metric`); nothing guesses from a name.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Quantity(StrEnum):
    """What a metric measures; it decides the words of a comparison."""

    TIME = "time"  # seconds: faster / slower
    RATE = "rate"  # per second: faster / slower
    LATENCY = "latency"  # microseconds or milliseconds per I/O: lower / higher
    SIZE = "size"  # bytes, pages: better / worse
    COUNT = "count"  # how many succeeded: better / worse
    RATIO = "ratio"  # a ratio: better / worse


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str
    quantity: Quantity
    lower_is_better: bool
    description: str

    @property
    def direction(self) -> str:
        return "lower is better" if self.lower_is_better else "higher is better"

    @property
    def words(self) -> tuple[str, str]:
        """How a comparison of it reads, the better side's word first: "faster/slower" for
        times and rates; "lower/higher" for latencies (two runs held at one offered rate have
        the same speed, and a lower p99 is not "faster"); "better/worse" for sizes, counts
        and ratios. docs/statistics.md states the rule."""
        if self.quantity in (Quantity.TIME, Quantity.RATE):
            return "faster", "slower"
        if self.quantity is Quantity.LATENCY:
            return ("lower", "higher") if self.lower_is_better else ("higher", "lower")
        return "better", "worse"

    def format(self, value: float) -> str:
        return f"{_number(value)} {self.unit}".rstrip()


def _number(value: float) -> str:
    if value != 0 and abs(value) < 0.01:
        return f"{value:.3g}"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def _m(name: str, unit: str, quantity: Quantity, lower: bool, description: str) -> Metric:
    return Metric(name, unit, quantity, lower, description)


T, R, L, S, C, Q = (
    Quantity.TIME,
    Quantity.RATE,
    Quantity.LATENCY,
    Quantity.SIZE,
    Quantity.COUNT,
    Quantity.RATIO,
)
# What every workload's latency module records (latency.KIND.FIELD): declared once here.
COMMON: tuple[Metric, ...] = (
    _m("mean_us", "µs", L, True, "mean latency of an operation"),
    _m("p50_us", "µs", L, True, "median latency of an operation"),
    _m("p90_us", "µs", L, True, "90th percentile latency of an operation"),
    _m("p95_us", "µs", L, True, "95th percentile latency of an operation"),
    _m("p99_us", "µs", L, True, "99th percentile latency of an operation"),
    _m("p999_us", "µs", L, True, "99.9th percentile latency of an operation"),
    _m("p9999_us", "µs", L, True, "99.99th percentile latency of an operation"),
    _m("max_us", "µs", L, True, "longest operation"),
)


def declare(name: str, unit: str, quantity: Quantity, lower: bool, description: str) -> Metric:
    """One number a workload records (a workload's ``metrics.py`` lists its own)."""
    return Metric(name, unit, quantity, lower, description)
