"""Every number the population workload records (its latency percentiles are iolab.metrics'
common ones)."""

from __future__ import annotations

from iolab.metrics import Metric, R, S, T, declare

METRICS: tuple[Metric, ...] = (
    declare("elapsed_seconds", "s", T, True, "time until the last loader finished"),
    declare("first_finished_seconds", "s", T, True, "time until the first loader finished"),
    declare("wall_seconds", "s", T, True, "wall time of the load, start to end"),
    declare("rows_per_second", "rows/s", R, False, "rows committed per second"),
    declare("rows_per_second_with_warmup", "rows/s", R, False, "rows/s, the warm-up included"),
    declare("payload_mb_per_second", "MB/s", R, False, "payload bytes loaded per second"),
    declare("steady_rows_per_second", "rows/s", R, False, "rows/s once the load was steady"),
    declare("table_bytes", "B", S, True, "bytes of the table"),
    declare("total_bytes", "B", S, True, "bytes of the table with its indexes"),
    declare("pages", "pages", S, True, "pages of the table"),
    declare("pages_per_row", "pages", S, True, "table pages per row loaded"),
    declare("wal_bytes", "B", S, True, "WAL / redo bytes the load generated"),
    declare("wal_bytes_per_row", "B", S, True, "WAL / redo bytes per row"),
)
