"""Every number a workload records, declared once: its unit, which way is better, how to show it.

Findings, ``--metric``, charts and exports ask this registry; nothing guesses from a name. A
metric of a table inside a summary (``tests.SEQ1M Q8T1 read.mbps`` of a disk run) is declared by
its last part (``mbps``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Quantity(StrEnum):
    """What a metric measures; it decides the words of a comparison."""

    TIME = "time"  # seconds: faster / slower
    RATE = "rate"  # per second: faster / slower
    LATENCY = "latency"  # microseconds or milliseconds per I/O: faster / slower
    SIZE = "size"  # bytes, pages: better / worse
    COUNT = "count"  # how many succeeded: better / worse
    RATIO = "ratio"  # a ratio: better / worse


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str
    quantity: Quantity
    lower_is_better: bool
    description: str

    @property
    def speed(self) -> bool:
        """A comparison of it reads "faster/slower" (else "better/worse")."""
        return self.quantity in (Quantity.TIME, Quantity.RATE, Quantity.LATENCY)

    def format(self, value: float) -> str:
        return f"{_number(value)} {self.unit}".rstrip()


def _number(value: float) -> str:
    if value != 0 and abs(value) < 0.01:
        return f"{value:.3g}"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def _m(name: str, unit: str, quantity: Quantity, lower: bool, description: str) -> Metric:
    return Metric(name, unit, quantity, lower, description)


T, R, L, S, C, Q = (
    Quantity.TIME,
    Quantity.RATE,
    Quantity.LATENCY,
    Quantity.SIZE,
    Quantity.COUNT,
    Quantity.RATIO,
)
METRICS: dict[str, Metric] = {
    m.name: m
    for m in (
        # populate
        _m("elapsed_seconds", "s", T, True, "time until the last loader finished"),
        _m("first_finished_seconds", "s", T, True, "time until the first loader finished"),
        _m("wall_seconds", "s", T, True, "wall time of the load, start to end"),
        _m("rows_per_second", "rows/s", R, False, "rows committed per second"),
        _m("rows_per_second_with_warmup", "rows/s", R, False, "rows/s, the warm-up included"),
        _m("payload_mb_per_second", "MB/s", R, False, "payload bytes loaded per second"),
        _m("steady_rows_per_second", "rows/s", R, False, "rows/s once the load was steady"),
        _m("table_bytes", "B", S, True, "bytes of the table"),
        _m("total_bytes", "B", S, True, "bytes of the table with its indexes"),
        _m("pages", "pages", S, True, "pages of the table"),
        _m("pages_per_row", "pages", S, True, "table pages per row loaded"),
        _m("wal_bytes", "B", S, True, "WAL / redo bytes the load generated"),
        _m("wal_bytes_per_row", "B", S, True, "WAL / redo bytes per row"),
        # populate: latency.KIND.FIELD, KIND one of transaction, statement, commit
        _m("mean_us", "us", L, True, "mean latency of an operation"),
        _m("p50_us", "us", L, True, "median latency of an operation"),
        _m("p90_us", "us", L, True, "90th percentile latency of an operation"),
        _m("p99_us", "us", L, True, "99th percentile latency of an operation"),
        _m("p999_us", "us", L, True, "99.9th percentile latency of an operation"),
        _m("p9999_us", "us", L, True, "99.99th percentile latency of an operation"),
        _m("max_us", "us", L, True, "longest operation"),
        # TPC-H
        _m("load_seconds", "s", T, True, "time to load the TPC-H data"),
        _m("load_mb_per_second", "MB/s", R, False, "CSV bytes loaded per second"),
        _m("index_seconds", "s", T, True, "time for keys, indexes and statistics"),
        _m("on_disk_bytes", "B", S, True, "bytes allocated on disk after the load"),
        _m("compression_ratio", "x", Q, False, "CSV bytes per byte on disk"),
        _m("total_seconds", "s", T, True, "sum of the queries' seconds"),
        _m("geomean_seconds", "s", T, True, "geometric mean of the queries' seconds"),
        _m("queries_ok", "queries", C, False, "queries that ran and gave the right answer"),
        # pgbench and sysbench (the tool's own numbers; latency.KIND.FIELD above: iolab's)
        _m("tps", "tx/s", R, False, "transactions per second, as the tool printed it"),
        _m("qps", "queries/s", R, False, "queries per second, as sysbench printed it"),
        _m("latency_avg_ms", "ms", L, True, "average transaction latency, as the tool printed it"),
        _m("latency_stddev_ms", "ms", L, True, "standard deviation of pgbench's latency"),
        _m("latency_pct_ms", "ms", L, True, "sysbench's latency percentile (95th by default)"),
        _m("lag_avg_ms", "ms", L, True, "pgbench's average schedule lag (--rate)"),
        _m("failed", "tx", C, True, "transactions that failed"),
        _m("retried", "tx", C, True, "transactions pgbench retried (--max-tries)"),
        _m("errors", "errors", C, True, "errors sysbench ignored"),
        _m("init_seconds", "s", T, True, "time of pgbench -i / sysbench prepare"),
        # disk tests (tests.TEST.FIELD)
        _m("mbps", "MB/s", R, False, "throughput"),
        _m("iops", "IOPS", R, False, "I/O operations per second"),
        _m("lat_p99_us", "us", L, True, "99th percentile completion latency"),
        _m("commits_per_second", "commits/s", R, False, "8K writes each followed by fdatasync"),
    )
}


def find(name: str) -> Metric | None:
    """The declaration of ``name`` (a summary key, or a dotted path declared by its last part),
    or None for a number no workload declared (a count of rows, a page size: not a measurement
    to compare)."""
    return METRICS.get(name) or METRICS.get(name.rsplit(".", 1)[-1])


def lookup(name: str) -> Metric:
    """The declaration of ``name``; KeyError for a number no workload declared."""
    found = find(name)
    if found is None:
        raise KeyError(f"{name} is not declared in iolab.metrics")
    return found


def lower_is_better(name: str) -> bool:
    return lookup(name).lower_is_better
