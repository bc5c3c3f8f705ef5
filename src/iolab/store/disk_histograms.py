"""The store's side of a disk run's sync-latency histograms (the commit test's passes)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from iolab.latency.histogram import Histogram
from iolab.results import RunId, SyncHistogram


def save(conn: sqlite3.Connection, run: RunId, found: Sequence[SyncHistogram]) -> None:
    """Insert a run's sync histograms (inside the caller's transaction)."""
    conn.executemany(
        "INSERT INTO disk_sync_histograms (run_id, test, pass, count, sum_us, min_us, max_us,"
        " buckets) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                run,
                s.test,
                s.pass_no,
                s.histogram.total,
                s.histogram.sum_us,
                s.histogram.min_us,
                s.histogram.max_us,
                s.histogram.pack(),
            )
            for s in found
        ],
    )


def load(conn: sqlite3.Connection, run: RunId) -> list[SyncHistogram]:
    """A run's sync histograms in the order its passes ran (none: it ran no commit test)."""
    rows = conn.execute(
        "SELECT test, pass, count, sum_us, min_us, max_us, buckets FROM disk_sync_histograms"
        " WHERE run_id = ? ORDER BY rowid",
        (run,),
    ).fetchall()
    return [
        SyncHistogram(
            test,
            pass_no,
            Histogram.unpack(blob, total=count, sum_us=sum_us, min_us=min_us, max_us=max_us),
        )
        for test, pass_no, count, sum_us, min_us, max_us, blob in rows
    ]
