"""What a run's latency recording hands over: its intervals, the summary, the probe series."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from iolab.latency.histogram import Histogram
from iolab.latency.recording import Interval, merged_by_kind, series_points
from iolab.probes.data import Series
from iolab.probes.interface import Kind, SeriesKey

SERIES = (("p50_ms", 50.0), ("p99_ms", 99.0), ("max_ms", 100.0))


@dataclass(frozen=True)
class LatencyData:
    """Every loader's histograms of one run, by operation kind and interval.

    ``intervals``' times are seconds from the start of the load; ``probe_offset_s`` is where
    that start falls on the probes' time axis, ``start_unix`` the same moment as Unix time (the
    interval log's StartTime). ``warmup_s`` is where the warm-up ended, if there was one.
    """

    intervals: tuple[Interval, ...]
    interval_s: float
    start_unix: float
    probe_offset_s: float = 0.0
    warmup_s: float | None = None
    _merged: dict[bool, dict[str, Histogram]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def merged(self, *, warmup: bool = False) -> dict[str, Histogram]:
        """Each operation kind's histogram over the run (warm-up left out unless asked). Merged
        once: the summary and the store both ask (a run's thousand intervals take tens of ms);
        the histograms are shared, not to be changed."""
        found = self._merged.get(warmup)
        if found is None:
            found = self._merged[warmup] = merged_by_kind(self.intervals, warmup=warmup)
        return found


def summary(data: LatencyData, timed: bool) -> dict[str, Any] | None:
    """The run summary's ``latency`` block: per operation kind, count, mean, p50 .. p99.99 and
    max in microseconds, over the measured part; None when operations were not timed."""
    if not timed:
        return None
    return {kind: h.stats() for kind, h in data.merged().items()}


def series(data: LatencyData) -> list[Series]:
    """p50, p99 and max of each operation kind per interval, on the probes' time axis (warm-up
    included: the timeline shades it)."""
    out: list[Series] = []
    kinds = sorted({i.kind.value for i in data.intervals})
    step = data.interval_s
    for kind in kinds:
        points = series_points(data.intervals, kind)
        if not points:
            continue
        last = points[-1][0]
        by_seq = dict(points)
        end = max(i.end_s for i in data.intervals if i.kind.value == kind)
        for name, p in SERIES:
            values = [
                by_seq[k].percentile(p) / 1000 if k in by_seq else math.nan for k in range(last + 1)
            ]
            finite = [v for v in values if not math.isnan(v)]
            out.append(
                Series(
                    key=SeriesKey("latency", name, "ms", Kind.GAUGE, subject=kind),
                    t0=data.probe_offset_s + step,
                    interval=step,
                    end_s=data.probe_offset_s + end,
                    n=len(values),
                    total_num=sum(finite),
                    total_den=float(len(finite)),
                    peak=max(finite) if finite else None,
                    values=values,
                )
            )
    return out
