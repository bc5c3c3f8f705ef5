"""The time grid that probes and latency histograms share: fine at first, then the set interval.

A run's first 10 s are sampled at 10 Hz (:data:`FINE_S`) and the rest at the interval the
user set, so a one-second run has ten points on its timeline and a ten-hour run keeps one point
per interval. A run that ends within :attr:`Grid.fine_until` keeps the fine grid; a longer one
has its fine start merged into whole intervals when the fine part ends, so every run's series sit
on one regular grid either way. The fine step divides the interval exactly (its ``ratio``), and
the fine part ends on an interval boundary, so merging is exact: rates and ratios add their
fractions, gauges keep the last value, histograms add their buckets.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

FINE_S = 0.1  # seconds between samples at the start of a run
FINE_FOR_S = 10.0  # how long the start is sampled finely (rounded up to whole intervals): a
# run this long has ten values at the default 1 s without it


@dataclass(frozen=True)
class Grid:
    interval: float  # the set interval, in seconds
    fine: float  # the interval of the run's start (equal to ``interval``: no fine start)
    fine_until: float  # seconds from t0 where the fine start ends (0: none)

    @classmethod
    def adaptive(cls, interval: float) -> Grid:
        """The grid of a run sampled every ``interval`` seconds, with a fine start where the
        interval is coarser than :data:`FINE_S`."""
        ratio = math.ceil(interval / FINE_S - 1e-9)
        if ratio <= 1:
            return cls.fixed(interval)
        until = math.ceil(FINE_FOR_S / interval - 1e-9) * interval
        return cls(interval, interval / ratio, until)

    @classmethod
    def fixed(cls, interval: float) -> Grid:
        return cls(interval, interval, 0.0)

    @property
    def ratio(self) -> int:
        """Fine steps in one interval."""
        return round(self.interval / self.fine)

    @property
    def fine_steps(self) -> int:
        """Fine steps in the fine start."""
        return round(self.fine_until / self.fine)

    def step_for(self, end_s: float) -> float:
        """The step of the series of a run that ended at ``end_s`` seconds."""
        return self.fine if end_s <= self.fine_until else self.interval
