"""SQLite's side of TPC-C (``--mode client`` only: SQLite runs in iolab's process).

Tables: each in one of the layout's database files round-robin (``main``, ``f1``, ...; SQLite
finds an unqualified table in whichever attached file holds it), with its primary key from the
start (``WITHOUT ROWID``: the table is its key's B-tree, as InnoDB's); ``history`` keeps a rowid.
Load: each table in one transaction of ``executemany`` over its CSV file; then the two indexes
and ``ANALYZE``.

A writing transaction begins with ``BEGIN IMMEDIATE`` (it takes the write lock at once, so two
writers never deadlock upgrading a read lock); reads with ``BEGIN``. A writer waits for the lock
up to ``busy_timeout``; a transaction that still finds the database locked is retried. SQLite
keeps no count of transactions: TPM is the client's count.
"""

from __future__ import annotations

import csv
import sqlite3
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

from iolab.drivercore import Target
from iolab.engines.interface import Engine
from iolab.workloads.tpcc import spec
from iolab.workloads.tpcc.dialect import Connect, Progress, distribute
from iolab.workloads.tpcc.modes import CLIENT
from iolab.workloads.tpcc.transactions import Input

TITLE = "SQLite"


class SQLiteTpcc:
    title = TITLE
    modes: tuple[str, ...] = (CLIENT,)
    for_update = ""
    core: Target | None = None  # the compiled core drives servers only

    def __init__(self, schemas: list[str]) -> None:
        self.places: dict[str, str] = distribute(list(spec.TABLES), schemas or ["main"])

    def q(self, sql: str) -> str:
        return sql.replace("%s", "?")

    def arg(self, value: Any) -> Any:
        return float(value) if isinstance(value, Decimal) else value

    def create_tables(self, conn: Any) -> None:
        for table in spec.TABLES:
            columns = [
                f"{name} {spec.column_type(t)}{'' if t.endswith(' NULL') else ' NOT NULL'}"
                for name, t in spec.COLUMNS[table]
            ]
            tail = ""
            if table in spec.PRIMARY_KEYS:
                columns.append(f"PRIMARY KEY ({', '.join(spec.PRIMARY_KEYS[table])})")
                tail = " WITHOUT ROWID"
            conn.execute(f"CREATE TABLE {self.places[table]}.{table} ({', '.join(columns)}){tail}")

    def load(self, connect: Connect, directory: Path, progress: Progress) -> None:
        conn = connect()
        try:
            for table in spec.TABLES:
                path = directory / f"{table}.csv"
                nulls = spec.nullable(table)
                marks = ", ".join("?" * len(nulls))
                conn.execute("BEGIN")
                with path.open(newline="") as f:
                    rows = (
                        [None if n and v == "" else v for v, n in zip(row, nulls, strict=True)]
                        for row in csv.reader(f)
                    )
                    conn.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)
                conn.execute("COMMIT")
                progress(path.stat().st_size)
        finally:
            conn.close()

    def finish_load(self, connect: Connect) -> None:
        conn = connect()
        try:
            for table, (name, cols) in spec.INDEXES.items():
                conn.execute(
                    f"CREATE INDEX {self.places[table]}.{name} ON {table} ({', '.join(cols)})"
                )
            conn.execute("ANALYZE")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            conn.close()

    def install_routines(self, conn: Any) -> None:
        raise AssertionError("SQLite has no server-side routines")

    def prepare(self, conn: Any, mode: str) -> None:
        pass

    def begin(self, conn: Any, write: bool) -> None:
        conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")

    def call(self, conn: Any, tx: Input) -> None:
        raise AssertionError("SQLite has no server-side routines")

    def commit(self, conn: Any) -> None:
        conn.execute("COMMIT")

    def rollback(self, conn: Any) -> None:
        if conn.in_transaction:
            conn.execute("ROLLBACK")

    def retryable(self, exc: BaseException) -> bool:
        return isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc)

    def user_rollback(self, exc: BaseException) -> bool:
        return False

    def counter(self, conn: Any, sessions: Sequence[Any]) -> int | None:
        return None

    def flush_counter(self, conn: Any) -> int:
        return 0


def dialect(engine: Engine, loaders: int) -> SQLiteTpcc:
    """TPC-C's SQL for an engine's database files (one connection loads)."""
    return SQLiteTpcc(engine.spaces())
