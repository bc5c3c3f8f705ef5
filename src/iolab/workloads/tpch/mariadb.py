"""MariaDB's (InnoDB's) side of the TPC-H workload; see engines/tpch.py.

Tables: InnoDB, ``ROW_FORMAT=DYNAMIC``, text in ``latin1`` with its binary collation (TPC-H's
text is ASCII; a binary collation compares and sorts bytes and makes ``LIKE`` case-sensitive,
as DuckDB does). Each table is created with its primary key: an InnoDB table *is* a B-tree on
its primary key, so a key added after the load would copy the whole table again. The generated
files are in key order, so rows arrive at the right end of the tree. With one data file, each
table's tablespace (``<table>.ibd``) lives in it (``DATA DIRECTORY``); with several, each table
is ``PARTITION BY HASH`` on its first key column, one partition per data file (key mod N, the
split DuckDB's dialect makes), so every data directory holds a share of every table.

Compression: ``PAGE_COMPRESSED=1``. InnoDB compresses each page with
``innodb_compression_algorithm`` when it writes it to the file and punches a hole for the rest
of the page, so the saving shows in allocated blocks, not in the file's length, and only on a
filesystem that can punch holes. The algorithm is the server's default, zlib (mariadbd reads
only iolab's option file, which loads no compression provider plugin; ``--set
plugin_load_add=provider_lz4 --set innodb_compression_algorithm=lz4`` picks another whose
plugin is installed).

Load: the CSV files are cut into chunks at line ends
(:func:`iolab.workloads.tpch.dialect.chunks`) and
``loaders`` connections, each in its own thread, take chunks off one queue and load each with
one ``LOAD DATA LOCAL INFILE`` (autocommit: a transaction per chunk). The client reads a LOCAL
file by name, so a chunk is handed over through a pipe: the connection reads
``/proc/self/fd/<read end>`` while a thread writes the chunk into the other end; no copy of the
data is written to disk.

After the load, in parallel on ``loaders`` connections: the secondary indexes of
:data:`iolab.workloads.tpch.dialect.INDEXES` (``ALTER TABLE ... ADD INDEX``, built by sorting), then
``ANALYZE TABLE ... PERSISTENT FOR ALL`` of every table (InnoDB's statistics and MariaDB's
engine-independent column statistics and histograms, which its optimizer uses for conditions on
columns without an index), then every dirty page is written (see
:func:`iolab.engines.innodb.checkpoint`), so
compressed pages are in the files when their
size is measured.

Queries: DuckDB's text, with one change: Q13 names its derived table's columns in the select
list (MariaDB has no ``AS t (a, b)``). A query is stopped at its timeout by
``max_statement_time``.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from pathlib import Path
from typing import Any

from iolab.engines.innodb import checkpoint, placement, sql_string
from iolab.engines.interface import Engine
from iolab.errors import BadInput, RunFailed
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
    column_names,
    partition_key,
)

ENGINE = "MariaDB"
ER_STATEMENT_TIMEOUT = 1969  # "Query execution was interrupted (max_statement_time exceeded)"

# DuckDB's query text -> MariaDB's: (pattern, replacement), each must match exactly once.
REWRITES: dict[int, tuple[tuple[str, str], ...]] = {
    13: (
        (r"count\(o_orderkey\)(\s+FROM)", r"count(o_orderkey) AS c_count\1"),
        (r"AS c_orders\s*\(\s*c_custkey,\s*c_count\s*\)", "AS c_orders"),
    ),
}


def _column_type(sql_type: str) -> str:
    return f"{sql_type} CHARACTER SET latin1 COLLATE latin1_bin" if "CHAR" in sql_type else sql_type


class MariaDBTpch:
    """TPC-H on InnoDB over ``partition_dirs`` (the data files' directories).

    ``loader_connect``: connections that may send LOCAL files (the engine's connect with
    ``local_infile``); the load uses them instead of the workload's ``connect``.
    """

    def __init__(
        self,
        partition_dirs: list[Path],
        loader_connect: Connect,
        *,
        compression: bool = False,
        loaders: int = 2,
    ) -> None:
        if not partition_dirs:
            raise BadInput("--files", 0, "give one data file or more")
        if loaders < 1:
            raise BadInput("--loaders", loaders, "give 1 or more loader connections")
        self.partition_dirs = list(partition_dirs)
        self.loader_connect = loader_connect
        self.compression = compression
        self.loaders = loaders

    def create_table_sql(self, table: str) -> str:
        columns = [f"{name} {_column_type(t)} NOT NULL" for name, t in COLUMNS[table]]
        columns.append(f"PRIMARY KEY ({', '.join(PRIMARY_KEYS[table])})")
        options = "ENGINE=InnoDB ROW_FORMAT=DYNAMIC STATS_PERSISTENT=1"
        if self.compression:
            options += " PAGE_COMPRESSED=1"
        spread = placement(self.partition_dirs, f"HASH ({partition_key(table)})")
        return f"CREATE TABLE {table} ({', '.join(columns)}) {options}{spread}"

    def create_tables(self, conn: Any) -> None:
        with conn.cursor() as cur:
            for table in TABLES:
                cur.execute(self.create_table_sql(table))
        conn.commit()

    def load(self, connect: Connect, files: TpchFiles, progress: Progress) -> None:
        def work(conn: Any, chunk: Chunk, stop: threading.Event) -> None:
            progress(load_chunk(conn, chunk, stop))

        run_parallel(ENGINE, _autocommit(self.loader_connect), self.loaders, chunks(files), work)

    def finish_load(self, connect: Connect) -> None:
        def run(conn: Any, statements: list[str], _stop: threading.Event) -> None:
            with conn.cursor() as cur:
                for statement in statements:
                    cur.execute(statement)
                    cur.fetchall()  # ANALYZE TABLE answers with a status table

        builds = [
            [
                f"ALTER TABLE {table} "
                + ", ".join(
                    f"ADD INDEX {_index_name(table, cols)} ({', '.join(cols)})" for cols in indexes
                )
            ]
            for table, indexes in INDEXES.items()
        ]
        run_parallel(ENGINE, _autocommit(connect), self.loaders, builds, run)
        analyze = [[f"ANALYZE TABLE {table} PERSISTENT FOR ALL"] for table in TABLES]
        run_parallel(ENGINE, _autocommit(connect), self.loaders, analyze, run)
        conn: Any = connect()  # the driver's own connection
        try:
            checkpoint(conn)
        finally:
            conn.close()

    def query(self, number: int, text: str) -> str:
        for pattern, replacement in REWRITES.get(number, ()):
            text, found = re.subn(pattern, replacement, text)
            if found != 1:
                raise RunFailed(
                    f"query {number} of the tpch extension is not the text iolab adapts for "
                    f"MariaDB (looked for {pattern!r} once, found it {found} times)"
                )
        return text

    def execute(
        self, conn: Any, sql: str, timeout: float
    ) -> tuple[list[str], list[tuple[Any, ...]]]:
        conn.autocommit(True)
        with conn.cursor() as cur:
            # in microseconds, at least one (0 would mean no limit)
            cur.execute(f"SET SESSION max_statement_time = {max(timeout, 1e-6):.6f}")
            try:
                cur.execute(sql)
                names = [d[0] for d in cur.description or []]
                rows = [tuple(r) for r in cur.fetchall()]
            except Exception as exc:  # pymysql's OperationalError, with the server's code
                if exc.args and exc.args[0] == ER_STATEMENT_TIMEOUT:
                    raise QueryTimeout(f"stopped after {timeout:g} s") from exc
                raise
            finally:
                with contextlib.suppress(Exception):
                    cur.execute("SET SESSION max_statement_time = 0")
        return names, rows

    def row_counts(self, conn: Any) -> dict[str, int]:
        counts = {}
        with conn.cursor() as cur:
            for table in TABLES:
                cur.execute(f"SELECT count(*) FROM {table}")
                counts[table] = int(cur.fetchone()[0])
        conn.commit()
        return counts


def load_chunk(conn: Any, chunk: Chunk, stop: threading.Event | None = None) -> int:
    """One ``LOAD DATA LOCAL INFILE`` of ``chunk``, streamed through a pipe; the bytes sent."""
    read_end, write_end = os.pipe()
    sent = 0
    failed: list[BaseException] = []

    def feed() -> None:
        nonlocal sent
        try:
            with os.fdopen(write_end, "wb", buffering=0) as out:
                for block in chunk.blocks(stop):
                    out.write(block)
                    sent += len(block)
        except BrokenPipeError:
            pass  # the server stopped reading: its error is the one to report
        except BaseException as exc:
            failed.append(exc)

    feeder = threading.Thread(target=feed, name=f"tpch-feed-{chunk.table}", daemon=True)
    feeder.start()
    try:
        with conn.cursor() as cur:
            cur.execute(
                f"LOAD DATA LOCAL INFILE {sql_string(f'/proc/self/fd/{read_end}')} "
                f"INTO TABLE {chunk.table} CHARACTER SET latin1 "
                "FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"' ESCAPED BY '' "
                f"LINES TERMINATED BY '\\n' ({', '.join(column_names(chunk.table))})"
            )
    finally:
        os.close(read_end)  # a feeder still writing (the server never read) stops
        feeder.join()
    if failed:
        raise failed[0]
    return sent


def _autocommit(connect: Connect) -> Connect:
    """Connections from ``connect`` with autocommit on: each statement its own transaction."""

    def make() -> Any:
        conn: Any = connect()  # the driver's own connection
        conn.autocommit(True)
        return conn

    return make


def _index_name(table: str, columns: tuple[str, ...]) -> str:
    return f"{table}_{'_'.join(columns)}_idx"


def dialect(engine: Engine, *, compression: bool, loaders: int) -> MariaDBTpch:
    """The TPC-H SQL for a running server's data directories."""
    return MariaDBTpch(
        [Path(d) for d in engine.spaces()],
        engine.load_connect,
        compression=compression,
        loaders=loaders,
    )
