"""Every number a disk profile's tests record (``tests.TEST.FIELD``, declared by FIELD)."""

from __future__ import annotations

from iolab.metrics import L, Metric, R, declare

METRICS: tuple[Metric, ...] = (
    declare("mbps", "MB/s", R, False, "throughput"),
    declare("iops", "IOPS", R, False, "I/O operations per second"),
    declare("lat_p99_us", "µs", L, True, "99th percentile completion latency"),
    declare("commits_per_second", "commits/s", R, False, "8K writes each followed by fdatasync"),
)
