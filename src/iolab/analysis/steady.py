"""Steady state of a throughput series (seed 003: "after the experiment reached a steady state").

The criterion is fio's ``steady_state=iops:X%`` applied to a run after the fact: a *window* of
``window`` consecutive samples is steady when every sample in it is finite and lies within
``tolerance_pct`` percent of the window's mean (and that mean is above zero). The steady part of
the run begins where the first steady window begins and ends where the last steady window ends;
what lies between them counts too, dips included, so a checkpoint's dip in the middle of a steady
load lowers the steady rate rather than hiding from it. The steady rate is the time-weighted mean
of the samples of the steady part. The ramp-up before it (a log that still grows, a cold cache)
and the tail after it (loaders finishing one by one) are left out, and so is a warm-up the run
declared (``after``): no window holds a sample whose interval began before the warm-up ended, so
the steady part never overlaps what the results leave out.

With fewer samples than the window, or no steady window at all, there is no steady rate, and
the result says why instead of inventing one.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass

from iolab.errors import BadInput

DEFAULT_WINDOW = 10  # samples (10 s at the default 1 s sample interval)
DEFAULT_TOLERANCE_PCT = 10.0
MIN_WINDOW = 3


@dataclass(frozen=True)
class SteadyCriterion:
    """``window`` samples, each within ``tolerance_pct`` percent of their mean."""

    window: int = DEFAULT_WINDOW
    tolerance_pct: float = DEFAULT_TOLERANCE_PCT

    def validate(self) -> None:
        if not isinstance(self.window, int) or self.window < MIN_WINDOW:
            raise BadInput("--steady-window", self.window, f"give {MIN_WINDOW} or more samples")
        if not (0 < self.tolerance_pct <= 100):
            raise BadInput(
                "--steady-tolerance",
                self.tolerance_pct,
                "give a percentage above 0 and at most 100",
            )

    def describe(self) -> str:
        return f"{self.window} samples within ±{self.tolerance_pct:g}% of their mean"


@dataclass(frozen=True)
class SteadyState:
    """The steady part of a series, or why there is none (``rate`` None, ``reason`` set)."""

    criterion: SteadyCriterion
    rate: float | None
    start_s: float | None = None
    end_s: float | None = None
    samples: int = 0  # samples in the steady part
    reason: str = ""

    def as_summary(self) -> dict[str, object]:
        return {
            "window": self.criterion.window,
            "tolerance_pct": self.criterion.tolerance_pct,
            "start_s": self.start_s,
            "end_s": self.end_s,
            "samples": self.samples,
            "reason": self.reason or None,
        }


def _steady(window: Sequence[float], tolerance: float) -> bool:
    if not all(math.isfinite(v) for v in window):
        return False
    mean = sum(window) / len(window)
    return mean > 0 and all(abs(v - mean) <= tolerance * mean for v in window)


def steady_state(
    values: Sequence[float],
    ends: Sequence[float],
    criterion: SteadyCriterion,
    after: float | None = None,
) -> SteadyState:
    """The steady part of a rate series: ``values[i]`` is the rate over the interval that ends
    at ``ends[i]`` seconds (the first begins at 0), as :meth:`iolab.probes.data.Series.times`
    gives them. ``after``: where the run's warm-up ended; the samples whose interval began
    before it are left out."""
    w = criterion.window
    n = len(values)
    if n != len(ends):
        raise ValueError("one end time per value")
    # the first sample whose interval begins at or after the warm-up's end: the one after the
    # first interval to end there (with a tolerance for the float sums of the sample grid)
    skip = bisect_left(ends, after - 1e-9) + 1 if after is not None and after > 1e-9 else 0
    warm = f" after the warm-up's {after:.3g} s" if after else ""
    skip = min(skip, n)
    if n - skip < w:
        return SteadyState(
            criterion,
            None,
            reason=f"{n - skip} samples{warm}, fewer than the steady-state window of {w}",
        )
    tolerance = criterion.tolerance_pct / 100
    steady = [i for i in range(skip, n - w + 1) if _steady(values[i : i + w], tolerance)]
    if not steady:
        return SteadyState(
            criterion,
            None,
            reason=f"no {criterion.describe()} among {n - skip} samples{warm}",
        )
    first, last = steady[0], steady[-1] + w - 1
    weighted = seconds = 0.0
    for i in range(first, last + 1):
        begin = ends[i - 1] if i > 0 else 0.0
        dt = ends[i] - begin
        if math.isfinite(values[i]) and dt > 0:
            weighted += values[i] * dt
            seconds += dt
    start = ends[first - 1] if first > 0 else 0.0
    return SteadyState(
        criterion,
        weighted / seconds if seconds > 0 else None,
        start_s=start,
        end_s=ends[last],
        samples=last - first + 1,
        reason="" if seconds > 0 else "the steady part has no duration",
    )
