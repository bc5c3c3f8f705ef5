"""PostgreSQL's side of the TPC-H workload; see engines/tpch.py.

Tables: with one tablespace, plain tables in it. With several, each table is hash-partitioned
on its first key column, one partition per tablespace (``<table>_p{i}`` in ``iolab_ts_{i}``),
so the layout's data directories each hold a share of every table, as the files of a SQL
Server filegroup do. Temporary files (sorts and hashes that spill) go to the temp tablespace
when the layout has a temp dir (the engine sets ``temp_tablespaces``).

Load: the CSV files are cut into chunks of about :data:`CHUNK_BYTES` at line ends, and
``loaders`` connections, each in its own thread, take chunks off one queue and send each in one
``COPY <table> FROM STDIN (FORMAT csv)``; the server routes rows to partitions. The largest
tables go first so the loaders finish together.

After the load, also in parallel on ``loaders`` connections: primary keys and the secondary
indexes of :data:`iolab.engines.tpch.INDEXES`, built per partition in the partition's
tablespace and then attached to the partitioned table's key and indexes; ``VACUUM (ANALYZE)``
per partition (sets hint bits and the visibility map, so the queries do not write them), then
``ANALYZE`` of each partitioned table; then a ``CHECKPOINT``.

PostgreSQL has no compression for rows as short as TPC-H's (TOAST compresses values over
about 2 KB only), so ``compression=True`` is refused.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from iolab.engines.tpch import (
    COLUMNS,
    INDEXES,
    PRIMARY_KEYS,
    TABLES,
    Connect,
    Progress,
    QueryTimeout,
    TpchFiles,
    partition_key,
)
from iolab.errors import BadInput, RunFailed

CHUNK_BYTES = 16 * 2**20  # CSV bytes per COPY
BLOCK_BYTES = 1 * 2**20  # bytes per write to the COPY stream
NO_COMPRESSION = (
    "PostgreSQL cannot compress TPC-H's rows (TOAST compresses only values over about 2 KB); "
    "use --compression off"
)


@dataclass(frozen=True)
class Chunk:
    """Bytes ``start`` to ``end`` of a table's CSV file: whole lines, no header."""

    table: str
    path: Path
    start: int
    end: int


def chunks(files: TpchFiles, size: int = CHUNK_BYTES) -> list[Chunk]:
    """Every table's CSV cut at line ends into chunks of about ``size`` bytes, largest first."""
    found: list[Chunk] = []
    for table in TABLES:
        path = files.path(table)
        total = path.stat().st_size
        with path.open("rb") as f:
            start = len(f.readline())  # the header line
            while start < total:
                end = min(total, start + size)
                if end < total:
                    f.seek(end)
                    end += len(f.readline())  # to the end of the line cut
                found.append(Chunk(table, path, start, end))
                start = end
    return found


def send_chunk(conn: Any, chunk: Chunk, stop: threading.Event | None = None) -> int:
    """One ``COPY ... FROM STDIN`` of ``chunk``; returns the bytes sent."""
    sent = 0
    with (
        conn.cursor() as cur,
        cur.copy(f"COPY {chunk.table} FROM STDIN (FORMAT csv)") as copy,
        chunk.path.open("rb") as f,
    ):
        f.seek(chunk.start)
        while sent < chunk.end - chunk.start:
            if stop is not None and stop.is_set():
                raise _Stopped
            block = f.read(min(BLOCK_BYTES, chunk.end - chunk.start - sent))
            if not block:
                raise RunFailed(f"{chunk.path} is shorter than when the load began")
            copy.write(block)
            sent += len(block)
    return sent


class _Stopped(Exception):
    """A worker stopped because another failed or the run was interrupted."""


def run_parallel(
    connect: Connect,
    workers: int,
    tasks: list[Any],
    work: Callable[[Any, Any, threading.Event], None],
) -> None:
    """``work(conn, task, stop)`` for every task, on ``workers`` connections (autocommit) each
    in its own thread; the first error stops the others and is raised."""
    pending: queue.SimpleQueue[Any] = queue.SimpleQueue()
    for task in tasks:
        pending.put(task)
    stop = threading.Event()
    errors: list[BaseException] = []
    conns = []
    try:
        for _ in range(max(1, min(workers, len(tasks)))):
            conn = connect()
            conn.autocommit = True
            conns.append(conn)

        def worker(conn: Any) -> None:
            while not stop.is_set():
                try:
                    task = pending.get_nowait()
                except queue.Empty:
                    return
                try:
                    work(conn, task, stop)
                except _Stopped:
                    return
                except BaseException as exc:
                    errors.append(exc)
                    stop.set()
                    return

        threads = [
            threading.Thread(target=worker, args=(c,), name=f"tpch-{i}", daemon=True)
            for i, c in enumerate(conns)
        ]
        for t in threads:
            t.start()
        try:
            for t in threads:
                while t.is_alive():
                    t.join(0.2)
        except BaseException:
            stop.set()
            raise
    finally:
        for conn in conns:
            with contextlib.suppress(Exception):
                conn.close()
    if errors:
        first = errors[0]
        text = str(first).strip().splitlines()[0] if str(first).strip() else repr(first)
        raise RunFailed(f"PostgreSQL: {text}") from first


class PostgresTpch:
    def __init__(
        self, tablespaces: list[str], *, compression: bool = False, loaders: int = 2
    ) -> None:
        if not tablespaces:
            raise BadInput("tablespaces", tablespaces, "give at least one tablespace")
        if compression:
            raise BadInput("--compression", "on", NO_COMPRESSION)
        if loaders < 1:
            raise BadInput("--loaders", loaders, "give 1 or more loader connections")
        self.tablespaces = list(tablespaces)
        self.compression = compression
        self.loaders = loaders

    @property
    def partitioned(self) -> bool:
        return len(self.tablespaces) > 1

    def partitions(self, table: str) -> list[tuple[str, str]]:
        """(relation, tablespace) holding the rows of ``table``: its partitions, or itself."""
        if not self.partitioned:
            return [(table, self.tablespaces[0])]
        return [(f"{table}_p{i}", ts) for i, ts in enumerate(self.tablespaces)]

    def create_tables(self, conn: Any) -> None:
        n = len(self.tablespaces)
        for table in TABLES:
            columns = ", ".join(f"{name} {t} NOT NULL" for name, t in COLUMNS[table])
            if not self.partitioned:
                conn.execute(f"CREATE TABLE {table} ({columns}) TABLESPACE {self.tablespaces[0]}")
                continue
            conn.execute(
                f"CREATE TABLE {table} ({columns}) PARTITION BY HASH ({partition_key(table)})"
            )
            for i, (part, space) in enumerate(self.partitions(table)):
                conn.execute(
                    f"CREATE TABLE {part} PARTITION OF {table} "
                    f"FOR VALUES WITH (MODULUS {n}, REMAINDER {i}) TABLESPACE {space}"
                )
        conn.commit()

    def load(self, connect: Connect, files: TpchFiles, progress: Progress) -> None:
        def work(conn: Any, chunk: Chunk, stop: threading.Event) -> None:
            progress(send_chunk(conn, chunk, stop))

        run_parallel(connect, self.loaders, chunks(files), work)

    def finish_load(self, connect: Connect) -> None:
        def run(conn: Any, statements: list[str], _stop: threading.Event) -> None:
            for statement in statements:
                conn.execute(statement)

        # per partition: its key and indexes in its tablespace, largest tables first
        builds: list[list[str]] = []
        for table in TABLES:
            for part, space in self.partitions(table):
                todo = [
                    f"ALTER TABLE {part} ADD PRIMARY KEY ({', '.join(PRIMARY_KEYS[table])}) "
                    f"USING INDEX TABLESPACE {space}"
                ]
                for cols in INDEXES.get(table, ()):
                    todo.append(
                        f"CREATE INDEX {_index_name(part, cols)} ON {part} "
                        f"({', '.join(cols)}) TABLESPACE {space}"
                    )
                builds.append(todo)
        run_parallel(connect, self.loaders, builds, run)
        vacuums = [[f"VACUUM (ANALYZE) {part}"] for t in TABLES for part, _ in self.partitions(t)]
        run_parallel(connect, self.loaders, vacuums, run)
        if self.partitioned:
            attach: list[list[str]] = []
            for table in TABLES:
                todo = [f"ALTER TABLE {table} ADD PRIMARY KEY ({', '.join(PRIMARY_KEYS[table])})"]
                for cols in INDEXES.get(table, ()):
                    parent = _index_name(table, cols)
                    todo.append(f"CREATE INDEX {parent} ON ONLY {table} ({', '.join(cols)})")
                    todo += [
                        f"ALTER INDEX {parent} ATTACH PARTITION {_index_name(part, cols)}"
                        for part, _ in self.partitions(table)
                    ]
                todo.append(f"ANALYZE {table}")
                attach.append(todo)
            run_parallel(connect, self.loaders, attach, run)
        conn = connect()
        try:
            conn.autocommit = True
            conn.execute("CHECKPOINT")
        finally:
            conn.close()

    def query(self, number: int, text: str) -> str:
        return text

    def execute(
        self, conn: Any, sql: str, timeout: float
    ) -> tuple[list[str], list[tuple[Any, ...]]]:
        from psycopg import errors as pg_errors

        conn.autocommit = True
        conn.execute(f"SET statement_timeout = {max(1, round(timeout * 1000))}")
        try:
            cur = conn.execute(sql)
            names = [d.name for d in cur.description or []]
            rows = cur.fetchall()
        except pg_errors.QueryCanceled as exc:
            raise QueryTimeout(f"stopped after {timeout:g} s") from exc
        finally:
            with contextlib.suppress(Exception):
                conn.execute("SET statement_timeout = 0")
        return names, [tuple(r) for r in rows]

    def row_counts(self, conn: Any) -> dict[str, int]:
        counts = {}
        for table in TABLES:
            row = conn.execute(f"SELECT count(*) FROM {table}").fetchone()
            counts[table] = int(row[0])
        conn.commit()
        return counts


def _index_name(relation: str, columns: tuple[str, ...]) -> str:
    return f"{relation}_{'_'.join(columns)}_idx"
