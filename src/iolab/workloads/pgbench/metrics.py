"""Every number a pgbench run records: the drivers' shared ones and pgbench's own (iolab's
percentiles of its transaction log are the common latency.KIND.FIELD, KIND ``transaction`` or
``scriptN``)."""

from __future__ import annotations

from iolab.metrics import C, L, Metric, declare
from iolab.workloads import drivers

METRICS: tuple[Metric, ...] = (
    *drivers.METRICS,
    declare("latency_stddev_ms", "ms", L, True, "standard deviation of pgbench's latency"),
    declare("lag_avg_ms", "ms", L, True, "pgbench's average schedule lag (--rate)"),
    declare("retried", "tx", C, True, "transactions pgbench retried (--max-tries)"),
    declare("initial_connection_ms", "ms", L, True, "pgbench's initial connection time"),
)
