"""DuckDB's side of the TPC-H workload; see engines/tpch.py.

With one data file the eight tables are plain tables in ``main``. With several, each table is
split by its first key column (``key % files``): part ``i`` is the table ``<table>_p{i}`` in
data file ``i`` (catalog ``main``, ``f1``, ...), and a view ``<table>`` in ``main`` is their
``UNION ALL``, so every scan reads every file, as SQL Server reads every file of a filegroup.
(Whole tables dealt round-robin to the files would put lineitem, most of the data, on one.)

Loading is DuckDB's CSV reader, one ``INSERT ... SELECT FROM read_csv(...)`` per table part,
with the column types given (no sniffing). Without compression (``compression=False``) DuckDB
is told to store every column uncompressed (``force_compression = 'uncompressed'``) before the
load. DuckDB needs no indexes or statistics; after the load every file is checkpointed so the
data is in the database files and the WAL is empty.
"""

from __future__ import annotations

import threading
from typing import Any

from iolab.engines.duckdb import duckdb_module, sql_string
from iolab.engines.interface import Engine
from iolab.errors import RunFailed
from iolab.workloads.tpch.dialect import (
    COLUMNS,
    TABLES,
    Connect,
    Progress,
    QueryTimeout,
    TpchFiles,
    partition_key,
)


def _duck_type(sql_type: str) -> str:
    return "VARCHAR" if sql_type.startswith(("CHAR", "VARCHAR")) else sql_type


class DuckDBTpch:
    def __init__(self, catalogs: list[str], *, compression: bool = True) -> None:
        self.catalogs = list(catalogs)
        self.compression = compression

    @property
    def parts(self) -> int:
        return len(self.catalogs)

    def part_table(self, table: str, index: int) -> str:
        """Where part ``index`` of ``table`` lives, qualified by its catalog."""
        if self.parts == 1:
            return f"main.{table}"
        return f"{self.catalogs[index]}.{table}_p{index}"

    def create_tables(self, conn: Any) -> None:
        if not self.compression:
            conn.execute("SET GLOBAL force_compression = 'uncompressed'")
        for table in TABLES:
            columns = ", ".join(f"{name} {_duck_type(t)} NOT NULL" for name, t in COLUMNS[table])
            for i in range(self.parts):
                conn.execute(f"CREATE TABLE {self.part_table(table, i)} ({columns})")
            if self.parts > 1:
                union = " UNION ALL ".join(
                    f"SELECT * FROM {self.part_table(table, i)}" for i in range(self.parts)
                )
                conn.execute(f"CREATE VIEW main.{table} AS {union}")

    def load(self, connect: Connect, files: TpchFiles, progress: Progress) -> None:
        conn: Any = connect()  # the driver's own connection
        table = TABLES[0]
        try:
            for table in TABLES:
                types = ", ".join(
                    f"{sql_string(name)}: {sql_string(_duck_type(t))}" for name, t in COLUMNS[table]
                )
                source = (
                    f"read_csv({sql_string(str(files.path(table)))}, header = true, "
                    f"auto_detect = false, delim = ',', quote = '\"', columns = {{{types}}})"
                )
                size = files.bytes(table)
                for i in range(self.parts):
                    where = (
                        ""
                        if self.parts == 1
                        else f" WHERE {partition_key(table)} % {self.parts} = {i}"
                    )
                    conn.execute(
                        f"INSERT INTO {self.part_table(table, i)} SELECT * FROM {source}{where}"
                    )
                    progress(size // self.parts + (size % self.parts if i == 0 else 0))
        except duckdb_module().Error as exc:  # out of memory, a full disk: the run failed
            raise RunFailed(f"DuckDB could not load {table}: {_first_line(exc)}") from exc
        finally:
            conn.close()

    def finish_load(self, connect: Connect) -> None:
        conn: Any = connect()  # the driver's own connection
        try:
            conn.execute("FORCE CHECKPOINT")  # file 0, the default database
            for catalog in self.catalogs[1:]:
                conn.execute(f"FORCE CHECKPOINT {catalog}")
        except duckdb_module().Error as exc:
            raise RunFailed(f"DuckDB could not write its checkpoint: {_first_line(exc)}") from exc
        finally:
            conn.close()

    def query(self, number: int, text: str) -> str:
        return text

    def execute(
        self, conn: Any, sql: str, timeout: float
    ) -> tuple[list[str], list[tuple[Any, ...]]]:
        duckdb = duckdb_module()
        timer = threading.Timer(timeout, conn.interrupt)
        timer.daemon = True
        timer.start()
        try:
            conn.execute(sql)
            names = [d[0] for d in conn.description or []]
            rows = conn.fetchall()
        except duckdb.InterruptException as exc:
            raise QueryTimeout(f"stopped after {timeout:g} s") from exc
        finally:
            timer.cancel()
        return names, [tuple(r) for r in rows]

    def row_counts(self, conn: Any) -> dict[str, int]:
        counts = {}
        for table in TABLES:
            row = conn.execute(f"SELECT count(*) FROM main.{table}").fetchone()
            counts[table] = int(row[0])
        return counts


def dialect(engine: Engine, *, compression: bool, loaders: int) -> DuckDBTpch:
    """The TPC-H SQL for an instance's catalogs (DuckDB loads over one connection)."""
    return DuckDBTpch(engine.spaces(), compression=compression)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
