"""PostgreSQL's cumulative statistics as rates, on the probe's own connection.

Sources (each read once per sample, the differences taken between samples):

- ``pg_stat_database`` (this database): commits, rows inserted, blocks read and hit, temp bytes;
- ``pg_current_wal_insert_lsn()``: WAL generated, exact and without delay (``wal_lsn_mbps``);
- ``pg_stat_wal``: WAL bytes, records, full-page images, waits for WAL buffers, and up to 17 its
  writes and syncs with their times (``track_wal_io_timing``);
- ``pg_stat_io`` (16+, ``track_io_timing``): reads, writes, extends and fsyncs per second and ms
  per operation, per backend type and object (``subject`` ``client backend/relation``,
  ``checkpointer/relation``, from 18 ``walwriter/wal``): the per-file I/O latency view;
- ``pg_stat_checkpointer`` (17+) or ``pg_stat_bgwriter``: pages written by checkpoints, by the
  background writer, buffers allocated;
- ``pages_allocated_per_s``: relation pages added, from pg_stat_io's extends of relations, or
  (15 and older) from the growth of the database's relation sizes.

Backends report their counters to the shared statistics at most once a second and when they go
idle, so a sample can lag the work by up to a second; the LSN-based WAL rate does not lag.
A view the server lacks (15 has no pg_stat_io nor pg_stat_checkpointer) is said once, and the
probe goes on with the rest.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from typing import Any

from iolab.probes.interface import (
    Findings,
    Kind,
    Pace,
    ProbeUnavailable,
    Reading,
    SeriesKey,
    Warn,
    counter_delta,
)

PROBE = "postgres"
MB = 1e6

Counters = dict[tuple[str, ...], float]

# (source, column) -> series name, unit, scale
_RATES: dict[tuple[str, str], tuple[str, str, float]] = {
    ("db", "xact_commit"): ("commits_per_s", "commits/s", 1.0),
    ("db", "xact_rollback"): ("rollbacks_per_s", "rollbacks/s", 1.0),
    ("db", "tup_inserted"): ("tuples_inserted_per_s", "rows/s", 1.0),
    ("db", "blks_read"): ("blocks_read_per_s", "blocks/s", 1.0),
    ("db", "blks_hit"): ("blocks_hit_per_s", "blocks/s", 1.0),
    ("db", "temp_bytes"): ("temp_mbps", "MB/s", 1 / MB),
    ("db", "lsn"): ("wal_lsn_mbps", "MB/s", 1 / MB),
    ("wal", "wal_bytes"): ("wal_mbps", "MB/s", 1 / MB),
    ("wal", "wal_records"): ("wal_records_per_s", "records/s", 1.0),
    ("wal", "wal_fpi"): ("wal_fpi_per_s", "images/s", 1.0),
    ("wal", "wal_buffers_full"): ("wal_buffers_full_per_s", "events/s", 1.0),
    ("wal", "wal_write"): ("wal_writes_per_s", "writes/s", 1.0),
    ("wal", "wal_sync"): ("wal_syncs_per_s", "syncs/s", 1.0),
    ("ckpt", "buffers_written"): ("checkpoint_pages_per_s", "pages/s", 1.0),
    ("bgw", "buffers_checkpoint"): ("checkpoint_pages_per_s", "pages/s", 1.0),
    ("bgw", "buffers_clean"): ("bgwriter_pages_per_s", "pages/s", 1.0),
    ("bgw", "buffers_backend"): ("backend_pages_written_per_s", "pages/s", 1.0),
    ("bgw", "buffers_alloc"): ("buffers_alloc_per_s", "buffers/s", 1.0),
    ("alloc", "pages"): ("pages_allocated_per_s", "pages/s", 1.0),
}
# ratio series: name -> (numerator, denominator), both (source, column)
_RATIOS: dict[str, tuple[tuple[str, str], tuple[str, str]]] = {
    "wal_write_ms": (("wal", "wal_write_time"), ("wal", "wal_write")),
    "wal_sync_ms": (("wal", "wal_sync_time"), ("wal", "wal_sync")),
}
IO_OPS = ("reads", "writes", "extends", "fsyncs")
IO_TIMES = {
    "reads": "read_time",
    "writes": "write_time",
    "extends": "extend_time",
    "fsyncs": "fsync_time",
}

_VIEWS = ("pg_stat_io", "pg_stat_checkpointer", "pg_stat_wal", "pg_stat_bgwriter")


def _number(value: Any) -> float | None:
    return None if value is None else float(value)


def row_dict(cursor: Any) -> dict[str, Any]:
    """The first row of a cursor as column -> value (empty when there is none)."""
    row = cursor.fetchone()
    if row is None:
        return {}
    return {d.name: v for d, v in zip(cursor.description, row, strict=True)}


def rate_readings(now: Counters, before: Counters, dt: float) -> list[Reading]:
    """Rates and ratios from two reads of the flat counters (missing ones give no series)."""
    out: list[Reading] = []
    done: set[str] = set()
    for source, (name, unit, scale) in _RATES.items():
        if source in now and source in before and name not in done:
            done.add(name)  # checkpoint pages come from one view or the other, never both
            delta = counter_delta(now[source], before[source]) * scale
            out.append(Reading(SeriesKey(PROBE, name, unit, Kind.RATE), delta, dt))
    for name, (num, den) in _RATIOS.items():
        if num in now and den in now and num in before and den in before:
            out.append(
                Reading(
                    SeriesKey(PROBE, name, "ms", Kind.RATIO),
                    counter_delta(now[num], before[num]),
                    counter_delta(now[den], before[den]),
                )
            )
    for key in now:
        io = _io_series(key)
        if io is None or key not in before:
            continue
        series, latency, tkey = io
        ops = counter_delta(now[key], before[key])
        out.append(Reading(series, ops, dt))
        if tkey in now and tkey in before:
            out.append(Reading(latency, counter_delta(now[tkey], before[tkey]), ops))
    return out


_IO_SERIES: dict[tuple[str, ...], tuple[SeriesKey, SeriesKey, tuple[str, ...]] | None] = {}


def _io_series(key: tuple[str, ...]) -> tuple[SeriesKey, SeriesKey, tuple[str, ...]] | None:
    """The series of a pg_stat_io operation counter (ops/s, and ms per op with the key of its
    time counter), None for any other counter; made once per counter, not once per sample."""
    try:
        return _IO_SERIES[key]
    except KeyError:
        pass
    found = None
    if key[0] == "io" and key[3] in IO_OPS:
        _, backend, obj, op = key
        subject = f"{backend}/{obj}"
        found = (
            SeriesKey(PROBE, f"io_{op}_per_s", "ops/s", Kind.RATE, subject=subject),
            SeriesKey(PROBE, f"io_{op[:-1]}_ms", "ms", Kind.RATIO, subject=subject),
            ("io", backend, obj, IO_TIMES[op]),
        )
    _IO_SERIES[key] = found
    return found


class PostgresProbe:
    """Counters of one PostgreSQL server; ``connect`` gives a new connection (engine.connect)."""

    name = PROBE
    pace = Pace.INTERVAL
    drop_idle = True

    def __init__(self, connect: Callable[[], Any]) -> None:
        self._connect = connect
        self._conn: Any = None
        self._views: set[str] = set()
        self._block_size = 8192
        self._before: Counters = {}
        self._parts: list[tuple[str, str]] = []
        self._sql = ""

    def open(self, warn: Warn) -> None:
        try:
            conn = self._connect()
            conn.autocommit = True
        except Exception as exc:
            raise ProbeUnavailable(f"cannot connect: {exc}") from exc
        self._conn = conn
        version = conn.execute("SELECT current_setting('server_version')").fetchone()[0]
        self._block_size = int(conn.execute("SELECT current_setting('block_size')").fetchone()[0])
        rows = conn.execute(
            "SELECT viewname FROM pg_views WHERE schemaname = 'pg_catalog' AND viewname = ANY(%s)",
            (list(_VIEWS),),
        ).fetchall()
        self._views = {r[0] for r in rows}
        self._parts = self._queries()
        self._sql = "; ".join(q for _, q in self._parts)
        if "pg_stat_io" not in self._views:
            warn(
                f"PostgreSQL {version} has no pg_stat_io (16 and newer): no per-backend I/O "
                "series; pages allocated/s comes from relation sizes instead"
            )
        if "pg_stat_checkpointer" not in self._views:
            warn(
                f"PostgreSQL {version} has no pg_stat_checkpointer (17 and newer): checkpoint "
                "pages come from pg_stat_bgwriter"
            )
        if "pg_stat_wal" not in self._views:
            warn(f"PostgreSQL {version} has no pg_stat_wal (14 and newer): WAL from the LSN only")
        timing = conn.execute("SELECT current_setting('track_io_timing')").fetchone()[0]
        if timing != "on" and "pg_stat_io" in self._views:
            warn("track_io_timing is off: pg_stat_io has no I/O times (no ms per operation)")

    def _queries(self) -> list[tuple[str, str]]:
        """(source, query) of one read, in the order of their result sets."""
        queries = [
            (
                "db",
                "SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn AS lsn, xact_commit, "
                "xact_rollback, tup_inserted, blks_read, blks_hit, temp_bytes "
                "FROM pg_stat_database WHERE datname = current_database()",
            )
        ]
        for source, view in (
            ("wal", "pg_stat_wal"),
            ("ckpt", "pg_stat_checkpointer"),
            ("bgw", "pg_stat_bgwriter"),
        ):
            if view in self._views:
                queries.append((source, f"SELECT * FROM {view}"))
        if "pg_stat_io" in self._views:
            queries.append(
                (
                    "io",
                    "SELECT backend_type, object, sum(reads), sum(writes), sum(extends), "
                    "sum(fsyncs), sum(read_time), sum(write_time), sum(extend_time), "
                    "sum(fsync_time) FROM pg_stat_io GROUP BY 1, 2",
                )
            )
        else:
            queries.append(
                (
                    "size",
                    "SELECT coalesce(sum(pg_relation_size(oid)), 0) FROM pg_class "
                    "WHERE relkind IN ('r', 'i', 't', 'm')",
                )
            )
        return queries

    def _read(self) -> Counters:
        """Every counter, read in one round trip (the queries as one simple-protocol string:
        each sample costs the server and this thread less)."""
        out: Counters = {}
        cur = self._conn.execute(self._sql)
        for source, _ in self._parts:
            if source == "io":
                extends = 0.0
                names = (*IO_OPS, *IO_TIMES.values())
                for backend, obj, *values in cur.fetchall():
                    for name, value in zip(names, values, strict=True):
                        number = _number(value)
                        if number is not None:
                            out["io", backend, obj, name] = number
                    if obj == "relation" and values[2] is not None:
                        extends += float(values[2])
                out["alloc", "pages"] = extends
            elif source == "size":
                (size,) = cur.fetchone()
                out["alloc", "pages"] = float(size) / self._block_size
            else:
                _put(out, source, row_dict(cur).items())
            cur.nextset()
        return out

    def start(self, t0_wall: float) -> None:
        self._before = self._read()

    def sample(self, t: float, dt: float) -> list[Reading]:
        now = self._read()
        out = rate_readings(now, self._before, dt)
        self._before = now
        return out

    def finish(self, t: float) -> Findings:
        return Findings()

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):  # already closed by the server
                conn.close()


def _put(out: Counters, source: str, items: Iterable[tuple[str, Any]]) -> None:
    for name, value in items:
        if isinstance(value, bool):
            continue
        try:
            number = _number(value)
        except (TypeError, ValueError):
            continue  # timestamps (stats_reset) and text
        if number is not None:
            out[source, name] = number
