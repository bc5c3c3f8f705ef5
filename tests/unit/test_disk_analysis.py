from __future__ import annotations

import pytest

from iolab.analysis.disk import spread_warnings, summarize
from iolab.results import DiskPass, Latency


def _p(n: int, mbps: float, p99: float, test: str = "SEQ1M Q8T1 read") -> DiskPass:
    return DiskPass(
        test=test,
        rw="read",
        bs=1 << 20,
        qd=8,
        threads=1,
        pass_no=n,
        seconds=5,
        mbps=mbps,
        iops=mbps / 1.048576,
        lat=Latency(100, 90, p99, 2 * p99),
        io_bytes=1000,
        device_bytes=1000,
    )


def test_median_and_best_leave_out_the_warmup() -> None:
    passes = [_p(0, 9999.0, 1.0), _p(1, 500.0, 300.0), _p(2, 520.0, 250.0), _p(3, 480.0, 400.0)]
    (s,) = summarize(passes)
    assert s.passes == 3
    assert s.median.mbps == 500.0
    assert s.best.mbps == 520.0  # the warm-up's 9999 is not counted
    assert s.best.lat.p99 == 250.0  # best latency is the lowest
    assert s.median.lat.p99 == 300.0
    assert s.spread == pytest.approx((520 - 480) / 500)
    assert s.device_share == pytest.approx(1.0)
    assert spread_warnings([s]) == []


def test_wide_spread_warns_with_advice() -> None:
    passes = [_p(1, 100.0, 1), _p(2, 200.0, 1), _p(3, 150.0, 1)]
    (warning,) = spread_warnings(summarize(passes))
    assert "SEQ1M Q8T1 read" in warning
    assert "67%" in warning
    assert "--runs" in warning


def test_order_follows_the_run() -> None:
    passes = [_p(1, 1, 1, "B"), _p(1, 1, 1, "A")]
    assert [s.test for s in summarize(passes)] == ["B", "A"]
