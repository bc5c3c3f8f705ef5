"""The population workload's SQL for SQLite.

SQLite's clustered index is the rowid: the table is ``id INTEGER PRIMARY KEY, payload BLOB``,
so rows live in the table b-tree in key order, as in a clustered index. A UUID key would make a
WITHOUT ROWID table whose leaf cells overflow at about a quarter page, so random and ordered keys
are 64-bit integers drawn the way UUID v4 (random) and v7 (time-ordered) are drawn. Rows are
routed to the layout's database files by key (key modulo the number of files).

Server mode is the in-process loop: ``executemany`` over a generator, with no Python code per
statement; client mode runs one ``execute`` per statement from Python.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from iolab.engines.external import Objects
from iolab.engines.interface import Engine
from iolab.latency.recording import LoaderClock, OpKind
from iolab.workloads.populate.loading import (
    TABLE,
    KeyKind,
    LoadMethod,
    LoadMode,
    LoadSpec,
    Progress,
    TableStats,
)

_MS_SHIFT = 20  # ordered keys: milliseconds, then a 20-bit sequence


class SQLitePopulate:
    rows_per_page = 1
    methods = frozenset({LoadMethod.INSERT, LoadMethod.MULTIROW})
    modes = frozenset({LoadMode.CLIENT, LoadMode.SERVER})

    def __init__(self, schemas: list[str], page_size: int) -> None:
        self.schemas = schemas
        self.page_size = page_size
        self._lock = threading.Lock()
        self._sequence = itertools.count(1)

    def payload_bytes(self) -> int:
        # A table-leaf page holds an 8-byte header, a 2-byte pointer per cell, and cells of
        # (payload-length varint, rowid varint, record header, blob). Half a page plus a few bytes
        # makes a second row impossible, and stays far below the overflow limit (page - 35).
        return self.page_size // 2 + 4

    # --- keys ------------------------------------------------------------------------------

    def _key_source(self, key: KeyKind) -> Callable[[], int]:
        def sequential() -> int:
            with self._lock:
                return next(self._sequence)

        def random() -> int:
            return int.from_bytes(os.urandom(8), "big") >> 1  # 63 bits: positive rowids

        def ordered() -> int:
            with self._lock:
                seq = next(self._sequence) & ((1 << _MS_SHIFT) - 1)
            return (time.time_ns() // 1_000_000) << _MS_SHIFT | seq

        return {
            KeyKind.SEQUENTIAL: sequential,
            KeyKind.RANDOM: random,
            KeyKind.ORDERED_UUID: ordered,
        }[key]

    def _schema(self, key: int) -> str:
        return self.schemas[key % len(self.schemas)]

    # --- the protocol ----------------------------------------------------------------------

    def create_table(self, conn: Any, spec: LoadSpec) -> None:
        for schema in self.schemas:
            conn.execute(
                f"CREATE TABLE {schema}.{TABLE} (id INTEGER PRIMARY KEY, payload BLOB NOT NULL)"
            )

    def _rows(self, spec: LoadSpec, count: int) -> Iterator[tuple[str, int, bytes]]:
        next_key = self._key_source(spec.key)
        payload = b"\xa5" * spec.payload_bytes
        for _ in range(count):
            k = next_key()
            yield self._schema(k), k, payload

    def ready(self, conn: Any, spec: LoadSpec) -> None:
        """Nothing to ready: SQLite compiles a statement on its first use, in-process."""

    def load(
        self,
        conn: Any,
        spec: LoadSpec,
        count: int,
        progress: Progress,
        clock: LoaderClock | None = None,
    ) -> None:
        clock = clock or LoaderClock.untimed()
        if spec.mode is LoadMode.SERVER:
            self._load_server(conn, spec, count, progress)
            return
        rows = self._rows(spec, count)
        per_statement = spec.batch if spec.method is LoadMethod.MULTIROW else 1
        implicit = spec.commit_every <= per_statement  # each statement commits itself
        done = pending = 0
        try:
            while done < count:
                k = min(per_statement, count - done)
                started = clock.begin(k, can_stop=pending == 0)
                if started is None:
                    break  # the duration is up, at a transaction boundary
                part = list(itertools.islice(rows, k))
                if implicit:
                    self._write(conn, spec, part, per_statement)
                    clock.record(OpKind.TRANSACTION, started)
                    done += k
                    progress(k)
                    continue
                if pending == 0:
                    conn.execute("BEGIN IMMEDIATE")
                self._write(conn, spec, part, per_statement)
                clock.record(OpKind.STATEMENT, started)
                done += k
                pending += k
                if pending >= spec.commit_every or done == count:
                    started = time.perf_counter_ns()
                    conn.execute("COMMIT")
                    clock.record(OpKind.COMMIT, started)
                    committed, pending = pending, 0
                    progress(committed)
        except BaseException:
            if conn.in_transaction:  # SQLite rolls back by itself on some errors
                conn.execute("ROLLBACK")
            raise

    def _load_server(self, conn: Any, spec: LoadSpec, count: int, progress: Progress) -> None:
        """The in-process loop: ``executemany`` over whole chunks of rows, progress per chunk
        (transactions of ``commit_every`` rows; a chunk of 1,000 single-row transactions)."""
        rows = self._rows(spec, count)
        per_commit = spec.commit_every
        implicit = per_commit == 1 and spec.method is LoadMethod.INSERT
        batch = spec.batch if spec.method is LoadMethod.MULTIROW else 1
        # server mode hands SQLite whole chunks; progress is reported per chunk (100 rows when
        # each row commits itself: a timeline sampled at 10 Hz sees the rows go in)
        chunk = max(per_commit, 100 if implicit else per_commit)
        done = 0
        while done < count:
            take = min(chunk, count - done)
            part = list(itertools.islice(rows, take))
            if implicit:
                self._write(conn, spec, part, batch)  # each statement commits itself
            else:
                for start in range(0, take, per_commit):
                    conn.execute("BEGIN IMMEDIATE")
                    try:
                        self._write(conn, spec, part[start : start + per_commit], batch)
                        conn.execute("COMMIT")
                    except BaseException:
                        if conn.in_transaction:  # SQLite rolls back by itself on some errors
                            conn.execute("ROLLBACK")
                        raise
            progress(take)
            done += take

    def _write(
        self, conn: Any, spec: LoadSpec, part: list[tuple[str, int, bytes]], batch: int
    ) -> None:
        if spec.mode is LoadMode.SERVER and batch == 1:
            by_schema: dict[str, list[tuple[int, bytes]]] = {}
            for schema, k, payload in part:
                by_schema.setdefault(schema, []).append((k, payload))
            for schema, values in by_schema.items():
                conn.executemany(f"INSERT INTO {schema}.{TABLE} VALUES (?, ?)", values)
            return
        if batch == 1:
            for schema, k, payload in part:
                conn.execute(f"INSERT INTO {schema}.{TABLE} VALUES (?, ?)", (k, payload))
            return
        by_schema = {}
        for schema, k, payload in part:
            by_schema.setdefault(schema, []).append((k, payload))
        for schema, values in by_schema.items():
            for start in range(0, len(values), batch):
                group = values[start : start + batch]
                marks = ", ".join(["(?, ?)"] * len(group))
                flat = [x for row in group for x in row]
                conn.execute(f"INSERT INTO {schema}.{TABLE} VALUES {marks}", flat)

    def checkpoint(self, conn: Any) -> None:
        for schema in self.schemas:
            conn.execute(f"PRAGMA {schema}.wal_checkpoint(TRUNCATE)")

    def log_bytes(self, conn: Any) -> int | None:
        return None  # SQLite keeps no cumulative WAL counter; the devices' bytes tell instead

    def table_stats(self, conn: Any) -> TableStats:
        rows = distinct = table_bytes = total_bytes = pages = 0
        for schema in self.schemas:
            r, d = conn.execute(
                f"SELECT COUNT(*), COUNT(DISTINCT id) FROM {schema}.{TABLE}"
            ).fetchone()
            rows += r
            distinct += d
            size, leaf = conn.execute(
                "SELECT SUM(pgsize), COUNT(*) FROM dbstat(?) WHERE name = ?", (schema, TABLE)
            ).fetchone()
            table_bytes += size or 0
            pages += leaf or 0
            (count,) = conn.execute(f"PRAGMA {schema}.page_count").fetchone()
            total_bytes += count * self.page_size
        return TableStats(rows, distinct, table_bytes, total_bytes, pages, self.page_size)


OBJECTS = Objects(tables=(TABLE,))  # (no server: never reached through --dsn)


def dialect(engine: Engine) -> SQLitePopulate:
    """The population workload's SQL for a started engine: its schemas and page size."""
    page_size = int(engine.effective_settings().get("page_size", "8192"))
    return SQLitePopulate(engine.spaces(), page_size)
