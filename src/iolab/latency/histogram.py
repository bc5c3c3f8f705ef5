"""Latency histograms: HdrHistogram's log-linear buckets, in microseconds, 3 significant digits.

A value lands in the bucket HdrHistogram (with lowest trackable value 1 us, highest 1 h and 3
significant digits) would put it in, so a :class:`Histogram` converts to and from an
``hdrh.histogram.HdrHistogram`` without loss and gives the same percentiles. It is iolab's own
class for two reasons measured on this project's machines (docs/latency.md): recording through
``HdrHistogram.record_value`` costs ~1.3 us a value in Python, while a loader appends its raw
microseconds to an array (~0.05 us) and the values are bucketed later in bulk, off the hot path
(:meth:`Histogram.add_values`); and the store keeps only the non-empty buckets (a few hundred
for a loader's second, unpacked at C speed), not HdrHistogram's 23,552-slot array.

Merging adds counts bucket by bucket: exact, never an average of percentiles. The sum of the
raw values is kept too, so the mean is exact (HdrHistogram's own mean uses bucket midpoints).
"""

from __future__ import annotations

import math
import zlib
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

LOWEST_US = 1  # values are whole microseconds; 0 means "under 1 us"
HIGHEST_US = 3_600_000_000  # one hour
SIGNIFICANT_DIGITS = 3
_HALF_MAGNITUDE = 10  # sub-bucket half count 1024: 2048 sub-buckets hold 3 significant digits
_HALF = 1 << _HALF_MAGNITUDE
_MASK = (1 << (_HALF_MAGNITUDE + 1)) - 1  # 2047

PERCENTILES = (50.0, 90.0, 95.0, 99.0, 99.9, 99.99)
# the summary's names for them: p50_us, p90_us, p95_us, p99_us, p999_us, p9999_us; the tables
# show p50, p95, p99 and p99.9 in every command (docs/vocabulary.md), p90 and p99.99 are kept
PERCENTILE_NAMES = {
    50.0: "p50",
    90.0: "p90",
    95.0: "p95",
    99.0: "p99",
    99.9: "p999",
    99.99: "p9999",
}


def bucket(value: int) -> int:
    """HdrHistogram's counts index of ``value`` microseconds (its ``counts_index_for``)."""
    b = (value | _MASK).bit_length() - (_HALF_MAGNITUDE + 1)
    return ((b + 1) << _HALF_MAGNITUDE) + (value >> b) - _HALF


def lowest(index: int) -> int:
    """The smallest value of bucket ``index`` (HdrHistogram's ``value_from_index``)."""
    b = (index >> _HALF_MAGNITUDE) - 1
    sub = (index & (_HALF - 1)) + _HALF
    if b < 0:
        sub -= _HALF
        b = 0
    return sub << b


def width(index: int) -> int:
    """How many microsecond values share bucket ``index``."""
    return 1 << max(0, (index >> _HALF_MAGNITUDE) - 1)


def highest(index: int) -> int:
    """The largest value of bucket ``index`` (HdrHistogram's highest equivalent value)."""
    return lowest(index) + width(index) - 1


@dataclass
class Histogram:
    """Counts by bucket of latencies in microseconds, with the exact count, sum, min and max."""

    counts: dict[int, int] = field(default_factory=dict)
    total: int = 0
    sum_us: int = 0
    min_us: int = 0
    max_us: int = 0

    # --- filling ----------------------------------------------------------------------------

    def add_values(self, values: Iterable[int]) -> None:
        """Record raw microsecond values (clamped to 0..1 h), in bulk.

        The main thread buckets every operation of a load here while the loaders run: the
        bucket arithmetic of :func:`bucket` is inlined and the sum, minimum and maximum are
        taken in C, ~0.4 us a value against ~1 us with a call per distinct value."""
        raw = values if isinstance(values, (array, list)) else list(values)
        if not raw:
            return
        lo, hi = min(raw), max(raw)
        if lo < 0 or hi > HIGHEST_US:
            raw = [min(max(v, 0), HIGHEST_US) for v in raw]
            lo, hi = min(raw), max(raw)
        if hi <= _MASK:  # below 2048 us every value is its own bucket
            seen = Counter(raw)
        else:
            seen = Counter(
                ((b + 1) << _HALF_MAGNITUDE) + (v >> b) - _HALF
                for v in raw
                for b in ((v | _MASK).bit_length() - (_HALF_MAGNITUDE + 1),)
            )
        counts = self.counts
        for i, c in seen.items():
            counts[i] = counts.get(i, 0) + c
        self.min_us = min(self.min_us, lo) if self.total else lo
        self.max_us = max(self.max_us, hi)
        self.total += len(raw)
        self.sum_us += sum(raw)

    def add(self, other: Histogram) -> None:
        """Merge ``other`` into this one, bucket by bucket (exact)."""
        if not other.total:
            return
        counts = self.counts
        for i, c in other.counts.items():
            counts[i] = counts.get(i, 0) + c
        self.min_us = min(self.min_us, other.min_us) if self.total else other.min_us
        self.max_us = max(self.max_us, other.max_us)
        self.total += other.total
        self.sum_us += other.sum_us

    @classmethod
    def merged(cls, parts: Iterable[Histogram]) -> Histogram:
        out = cls()
        for p in parts:
            out.add(p)
        return out

    @classmethod
    def from_buckets(cls, pairs: Iterable[tuple[int, int]]) -> Histogram:
        """A histogram of ``(value_us, count)`` pairs whose exact values are not known (fio's
        latency bins): each value counts as itself; the sum is then approximate."""
        out = cls()
        for value, c in pairs:
            if c <= 0:
                continue
            v = min(max(int(value), 0), HIGHEST_US)
            i = bucket(v)
            out.counts[i] = out.counts.get(i, 0) + c
            out.min_us = min(out.min_us, v) if out.total else v
            out.max_us = max(out.max_us, v)
            out.total += c
            out.sum_us += v * c
        return out

    # --- reading ----------------------------------------------------------------------------

    @property
    def mean_us(self) -> float:
        return self.sum_us / self.total if self.total else math.nan

    def percentile(self, p: float) -> float:
        """The value at percentile ``p`` (0..100) as HdrHistogram reports it: the highest value
        of the bucket holding the ``round(p% * count)``-th value (never above the maximum)."""
        if not self.total:
            return math.nan
        return self.percentiles([p])[p]

    def percentiles(self, ps: Iterable[float]) -> dict[float, float]:
        """Several percentiles in one pass over the buckets."""
        wanted = sorted(set(ps))
        out: dict[float, float] = {}
        if not self.total:
            return dict.fromkeys(wanted, math.nan)
        targets = [(p, max(1, int(min(p, 100.0) * self.total / 100 + 0.5))) for p in wanted]
        seen = 0
        it = iter(targets)
        p, target = next(it)
        for i in sorted(self.counts):
            seen += self.counts[i]
            while seen >= target:
                value = highest(i) if p > 0 else lowest(i)
                out[p] = float(min(value, self.max_us) if p > 0 else max(value, self.min_us))
                nxt = next(it, None)
                if nxt is None:
                    return out
                p, target = nxt
        for p, _ in targets:  # rounding: the rest are the maximum
            out.setdefault(p, float(self.max_us))
        return out

    def spectrum(self) -> Iterator[tuple[float, float]]:
        """(percentile, value) at each bucket's upper edge: the points of a percentile-spectrum
        chart, the last one the maximum."""
        seen = 0
        for i in sorted(self.counts):
            seen += self.counts[i]
            yield 100.0 * seen / self.total, float(min(highest(i), self.max_us))

    def stats(self) -> dict[str, float | int]:
        """The summary's numbers: count, mean, p50 .. p99.99 and max, in microseconds."""
        found = self.percentiles(PERCENTILES)
        out: dict[str, float | int] = {"count": self.total, "mean_us": round(self.mean_us, 1)}
        for p in PERCENTILES:
            out[f"{PERCENTILE_NAMES[p]}_us"] = found[p]
        out["max_us"] = self.max_us
        return out

    # --- storing ----------------------------------------------------------------------------

    def pack(self) -> bytes:
        """The non-empty buckets as zlib-compressed 64-bit (index, count) pairs, by index."""
        pairs = array("q", chain.from_iterable(sorted(self.counts.items())))
        return zlib.compress(pairs.tobytes(), 1)

    @classmethod
    def unpack(cls, blob: bytes, *, total: int, sum_us: int, min_us: int, max_us: int) -> Histogram:
        pairs = array("q")
        pairs.frombytes(zlib.decompress(blob))
        return cls(dict(zip(pairs[::2], pairs[1::2], strict=True)), total, sum_us, min_us, max_us)

    def to_hdr(self) -> Any:
        """The same histogram as an ``hdrh.histogram.HdrHistogram`` (1 us .. 1 h, 3 digits)."""
        from hdrh.histogram import HdrHistogram

        hdr = HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_DIGITS)
        for i, c in self.counts.items():
            hdr.record_value(lowest(i), c)
        return hdr
