"""Every number TPC-H records."""

from __future__ import annotations

from iolab.metrics import C, Metric, Q, R, S, T, declare

METRICS: tuple[Metric, ...] = (
    declare("load_seconds", "s", T, True, "time to load the TPC-H data"),
    declare("load_mb_per_second", "MB/s", R, False, "CSV bytes loaded per second"),
    declare("index_seconds", "s", T, True, "time for keys, indexes and statistics"),
    declare("on_disk_bytes", "B", S, True, "bytes allocated on disk after the load"),
    declare("compression_ratio", "x", Q, False, "CSV bytes per byte on disk"),
    declare("total_seconds", "s", T, True, "sum of the queries' seconds"),
    declare("geomean_seconds", "s", T, True, "geometric mean of the queries' seconds"),
    declare("queries_ok", "queries", C, False, "queries that ran and gave the right answer"),
)
