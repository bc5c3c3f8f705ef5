"""PostgreSQL's side of the TPC-H workload; see engines/tpch.py.

Tables: with one tablespace, plain tables in it. With several, each table is hash-partitioned
on its first key column, one partition per tablespace (``<table>_p{i}`` in ``iolab_ts_{i}``),
so the layout's data directories each hold a share of every table, as the files of a SQL
Server filegroup do. Temporary files (sorts and hashes that spill) go to the temp tablespace
when the layout has a temp dir (the engine sets ``temp_tablespaces``).

Load: the CSV files are cut into chunks of about 16 MiB at line ends
(:func:`iolab.workloads.tpch.dialect.chunks`), and ``loaders`` connections, each in its own
thread, take
chunks off one queue and send each in one ``COPY <table> FROM STDIN (FORMAT csv)``; the
server routes rows to partitions. The largest tables go first so the loaders finish together.

After the load, also in parallel on ``loaders`` connections: primary keys and the secondary
indexes of :data:`iolab.workloads.tpch.dialect.INDEXES`, built per partition in the partition's
tablespace and then attached to the partitioned table's key and indexes; ``VACUUM (ANALYZE)``
per partition (sets hint bits and the visibility map, so the queries do not write them), then
``ANALYZE`` of each partitioned table; then a ``CHECKPOINT``.

PostgreSQL has no compression for rows as short as TPC-H's (TOAST compresses values over
about 2 KB only), so ``compression=True`` is refused.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

from iolab.engines.interface import Engine
from iolab.errors import BadInput
from iolab.workloads.parallel import Chunk, run_parallel
from iolab.workloads.tpch.dialect import (
    COLUMNS,
    INDEXES,
    PRIMARY_KEYS,
    TABLES,
    Connect,
    Progress,
    QueryTimeout,
    TpchFiles,
    chunks,
    partition_key,
)

ENGINE = "PostgreSQL"
NO_COMPRESSION = (
    "PostgreSQL cannot compress TPC-H's rows (TOAST compresses only values over about 2 KB); "
    "use --compression off"
)


def send_chunk(conn: Any, chunk: Chunk, stop: threading.Event | None = None) -> int:
    """One ``COPY ... FROM STDIN`` of ``chunk``; returns the bytes sent."""
    sent = 0
    with conn.cursor() as cur, cur.copy(f"COPY {chunk.table} FROM STDIN (FORMAT csv)") as copy:
        for block in chunk.blocks(stop):
            copy.write(block)
            sent += len(block)
    return sent


def _autocommit(connect: Connect) -> Connect:
    """Connections from ``connect`` with autocommit on: each statement its own transaction."""

    def make() -> Any:
        conn: Any = connect()  # the driver's own connection
        conn.autocommit = True
        return conn

    return make


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

        run_parallel(ENGINE, _autocommit(connect), self.loaders, chunks(files), work)

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
        run_parallel(ENGINE, _autocommit(connect), self.loaders, builds, run)
        vacuums = [[f"VACUUM (ANALYZE) {part}"] for t in TABLES for part, _ in self.partitions(t)]
        run_parallel(ENGINE, _autocommit(connect), self.loaders, vacuums, run)
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
            run_parallel(ENGINE, _autocommit(connect), self.loaders, attach, run)
        conn: Any = connect()  # the driver's own connection
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


def dialect(engine: Engine, *, compression: bool, loaders: int) -> PostgresTpch:
    """The TPC-H SQL for a running server's tablespaces."""
    return PostgresTpch(engine.spaces(), compression=compression, loaders=loaders)
