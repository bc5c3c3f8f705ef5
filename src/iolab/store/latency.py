"""The store's side of per-operation latency: a run's interval histograms in and out."""

from __future__ import annotations

import sqlite3

from iolab.latency.data import LatencyData
from iolab.latency.histogram import Histogram
from iolab.latency.recording import Interval, OpKind
from iolab.results import RunId


def save(conn: sqlite3.Connection, run: RunId, data: LatencyData | None) -> None:
    """Insert a run's latency histograms (inside the caller's transaction)."""
    if data is None:
        return
    conn.execute(
        "INSERT INTO latency_runs (run_id, interval, start_unix, probe_offset, warmup_s)"
        " VALUES (?, ?, ?, ?, ?)",
        (run, data.interval_s, data.start_unix, data.probe_offset_s, data.warmup_s),
    )
    conn.executemany(
        "INSERT INTO latency_intervals (run_id, loader, kind, seq, warmup, start_s, end_s,"
        " count, sum_us, min_us, max_us, buckets) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                run,
                i.loader,
                i.kind.value,
                i.seq,
                int(i.warmup),
                i.start_s,
                i.end_s,
                i.histogram.total,
                i.histogram.sum_us,
                i.histogram.min_us,
                i.histogram.max_us,
                i.histogram.pack(),
            )
            for i in data.intervals
        ],
    )
    conn.executemany(
        "INSERT INTO latency_totals (run_id, kind, count, sum_us, min_us, max_us, buckets)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (run, kind, h.total, h.sum_us, h.min_us, h.max_us, h.pack())
            for kind, h in data.merged().items()
        ],
    )


def totals(conn: sqlite3.Connection, run: RunId) -> dict[str, Histogram]:
    """A run's histogram per operation kind over its measured part (one row each)."""
    return {
        kind: Histogram.unpack(blob, total=count, sum_us=sum_us, min_us=min_us, max_us=max_us)
        for kind, count, sum_us, min_us, max_us, blob in conn.execute(
            "SELECT kind, count, sum_us, min_us, max_us, buckets FROM latency_totals"
            " WHERE run_id = ? ORDER BY kind",
            (run,),
        )
    }


def load(conn: sqlite3.Connection, run: RunId) -> LatencyData | None:
    """A run's latency histograms, or None when it recorded none."""
    head = conn.execute(
        "SELECT interval, start_unix, probe_offset, warmup_s FROM latency_runs WHERE run_id = ?",
        (run,),
    ).fetchone()
    if head is None:
        return None
    rows = conn.execute(
        "SELECT loader, kind, seq, warmup, start_s, end_s, count, sum_us, min_us, max_us, buckets"
        " FROM latency_intervals WHERE run_id = ? ORDER BY seq, warmup DESC, kind, loader",
        (run,),
    ).fetchall()
    intervals = tuple(
        Interval(
            loader,
            OpKind(kind),
            seq,
            bool(warmup),
            start_s,
            end_s,
            Histogram.unpack(blob, total=count, sum_us=sum_us, min_us=min_us, max_us=max_us),
        )
        for loader, kind, seq, warmup, start_s, end_s, count, sum_us, min_us, max_us, blob in rows
    )
    interval, start_unix, offset, warmup_s = head
    return LatencyData(intervals, interval, start_unix, offset, warmup_s)
