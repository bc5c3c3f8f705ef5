"""Per-test statistics of disk passes: the median and the best, as CrystalDiskMark reports."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from iolab.results import DiskPass, Latency


@dataclass(frozen=True)
class DiskMetrics:
    mbps: float
    iops: float
    lat: Latency
    sync: Latency | None


@dataclass(frozen=True)
class DiskTestSummary:
    """One test over its measured passes (the warm-up pass excluded).

    ``best`` takes each metric's best value over the passes (highest MB/s and IOPS, lowest
    latencies), as CrystalDiskMark shows the best run; ``median`` is the median of each metric.
    """

    test: str
    rw: str
    bs: int
    qd: int
    threads: int
    passes: int
    median: DiskMetrics
    best: DiskMetrics
    spread: float  # (max - min) / median of MB/s: how much the passes disagree
    device_share: float | None  # device bytes / fio bytes over the passes; < 0.5 means cache

    @property
    def commits_per_second(self) -> float | None:
        return self.median.iops if self.median.sync is not None else None


def _latency(values: list[Latency], pick: str) -> Latency:
    def agg(xs: list[float]) -> float:
        return statistics.median(xs) if pick == "median" else min(xs)

    return Latency(
        mean=agg([v.mean for v in values]),
        p50=agg([v.p50 for v in values]),
        p99=agg([v.p99 for v in values]),
        p999=agg([v.p999 for v in values]),
    )


def _metrics(passes: list[DiskPass], pick: str) -> DiskMetrics:
    agg_up = statistics.median if pick == "median" else max
    syncs = [p.sync for p in passes if p.sync is not None]
    return DiskMetrics(
        mbps=agg_up([p.mbps for p in passes]),
        iops=agg_up([p.iops for p in passes]),
        lat=_latency([p.lat for p in passes], pick),
        sync=_latency(syncs, pick) if syncs else None,
    )


def summarize(passes: list[DiskPass]) -> list[DiskTestSummary]:
    """One summary per test, in the order the tests ran; warm-up passes are left out."""
    order: list[str] = []
    by_test: dict[str, list[DiskPass]] = {}
    for p in passes:
        if p.test not in by_test:
            order.append(p.test)
            by_test[p.test] = []
        if not p.discarded:
            by_test[p.test].append(p)
    out = []
    for test in order:
        measured = by_test[test]
        if not measured:
            continue
        first = measured[0]
        median = _metrics(measured, "median")
        mbps = [p.mbps for p in measured]
        spread = (max(mbps) - min(mbps)) / median.mbps if median.mbps else 0.0
        seen = [p for p in measured if p.device_bytes is not None]
        fio_bytes = sum(p.io_bytes for p in seen)
        share = sum(p.device_bytes or 0 for p in seen) / fio_bytes if seen and fio_bytes else None
        out.append(
            DiskTestSummary(
                test=test,
                rw=first.rw,
                bs=first.bs,
                qd=first.qd,
                threads=first.threads,
                passes=len(measured),
                median=median,
                best=_metrics(measured, "best"),
                spread=spread,
                device_share=share,
            )
        )
    return out


SPREAD_LIMIT = 0.10


def test_medians(passes: list[DiskPass]) -> dict[str, dict[str, float]]:
    """Each test's median MB/s, IOPS and p99 latency: the numbers a disk run's summary gives
    reports and comparisons (``tests.<test>.mbps``)."""
    return {
        s.test: {"mbps": s.median.mbps, "iops": s.median.iops, "lat_p99_us": s.median.lat.p99}
        for s in summarize(passes)
    }


def spread_warnings(summaries: list[DiskTestSummary]) -> list[str]:
    """Tests whose passes disagree too much to trust one number, with what to do about it."""
    wide = [s for s in summaries if s.passes > 1 and s.spread > SPREAD_LIMIT]
    if not wide:
        return []
    worst = max(wide, key=lambda s: s.spread)
    return [
        f"{len(wide)} test(s) vary by more than {SPREAD_LIMIT:.0%} between passes (worst: "
        f"{worst.test}, {worst.spread:.0%}); try more --runs, a longer --duration or a quieter "
        "machine before trusting small differences"
    ]
