"""Every number a sysbench run records: the drivers' shared ones and sysbench's own (iolab's
percentiles of its histogram are the common latency.transaction.FIELD)."""

from __future__ import annotations

from iolab.metrics import C, L, Metric, R, declare
from iolab.workloads import drivers

METRICS: tuple[Metric, ...] = (
    *drivers.METRICS,
    declare("qps", "queries/s", R, False, "queries per second, as sysbench printed it"),
    declare("latency_pct_ms", "ms", L, True, "sysbench's latency percentile (95th by default)"),
    declare("errors", "errors", C, True, "errors sysbench ignored"),
)
