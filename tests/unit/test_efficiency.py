"""Efficiency against the device's sequential write, and the baseline's drift."""

from __future__ import annotations

import pytest

from iolab.analysis.disk import DiskMetrics, DiskTestSummary
from iolab.analysis.efficiency import (
    Limit,
    baseline_drift,
    disk_device,
    drift_sentence,
    efficiency_sentence,
    populate_efficiency,
    seq_write_limit,
)
from iolab.results import Latency


def _test(name: str, rw: str, mbps: float) -> DiskTestSummary:
    m = DiskMetrics(mbps, mbps, Latency(1, 1, 1, 1), None)
    return DiskTestSummary(name, rw, 1 << 20, 8, 1, 2, m, m, 0.0, 1.0)


def test_the_limit_is_the_fastest_sequential_write() -> None:
    tests = [
        _test("SEQ1M Q8T1 read", "read", 900.0),
        _test("SEQ1M Q8T1 write", "write", 400.0),
        _test("SEQ1M Q1T1 write", "write", 300.0),
        _test("RND4K Q32T1 write", "randwrite", 80.0),
    ]
    assert seq_write_limit(7, "vda", tests) == Limit("vda", 400.0, "SEQ1M Q8T1 write", 7)
    assert seq_write_limit(7, "vda", tests[:1]) is None


def test_devices_match_by_name_or_testbed_name() -> None:
    env = {"storage": {"target": {"device": {"name": "loop7"}, "testbed": {"name": "sata"}}}}
    assert disk_device(env) == "device:sata"
    assert disk_device({"storage": {"target": {"device": {"name": "vda"}}}}) == "vda"
    assert disk_device({"storage": {}}) is None
    limits = {
        "vda": Limit("vda", 200.0, "SEQ1M Q8T1 write", 1),
        "device:sata": Limit("device:sata", 50.0, "SEQ1M Q8T1 write", 2),
    }
    run = {
        "elapsed_seconds": 2.0,
        "devices": {
            "vda": {"roles": ["data"], "write_bytes": 100e6},
            "loop3": {"roles": ["wal"], "write_bytes": 60e6, "testbed": "sata"},
            "sdz": {"roles": ["temp"], "write_bytes": 1e6},  # no limit known: left out
        },
    }
    slower = {**run, "elapsed_seconds": 4.0}
    failed_shape = {"elapsed_seconds": None, "devices": run["devices"]}
    out = populate_efficiency([("cell A", [run, slower, run, failed_shape])], limits)
    by_device = {e.device: e for e in out}
    assert set(by_device) == {"vda", "device:sata"}
    assert by_device["vda"].mbps == pytest.approx(50.0)  # median of 50, 25, 50
    assert by_device["vda"].runs == 3
    assert by_device["vda"].share == pytest.approx(0.25)
    assert by_device["device:sata"].share == pytest.approx(30.0 / 50.0)
    assert efficiency_sentence(by_device["device:sata"]) == (
        "cell A: wrote 30.0 MB/s to device:sata (wal), 60% of its sequential write "
        "(50 MB/s, SEQ1M Q8T1 write, disk run 2)"
    )


def test_drift_over_time() -> None:
    runs = [
        ("2026-11-22T10:00:00", 10.0),
        ("2026-11-22T10:20:00", 10.6),
        ("2026-11-22T10:10:00", 10.3),
        ("2026-11-22T10:30:00", 11.0),
    ]
    d = baseline_drift("base", runs)
    assert d is not None
    assert d.hours == pytest.approx((0.0, 1 / 6, 1 / 3, 0.5))
    assert d.values == (10.0, 10.3, 10.6, 11.0)
    assert d.trend.significant
    text = drift_sentence(d, "elapsed_seconds")
    assert text.startswith("baseline base: elapsed_seconds drifted +9.5% over 4 runs in 30 min")
    assert baseline_drift("base", runs[:2]) is None
    flat = baseline_drift("base", [("2026-11-22T10:00:00", 1.0)] * 3)
    assert flat is None
