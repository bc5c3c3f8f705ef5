"""What an engine must provide for the TPC-H workload, and the TPC-H schema they all share.

The workload (workloads/tpch.py) owns the data files, timing, the answer check and results; an
engine's ``TpchDialect`` owns the SQL: the tables spread over the layout's data files, the bulk
load from the generated CSV files, keys/indexes/statistics after the load, the queries in its
dialect and how a query is stopped at its timeout.

Server engines load in parallel: :func:`chunks` cuts the CSV files at line ends into pieces of
about :data:`CHUNK_BYTES`, and :func:`iolab.workloads.parallel.run_parallel` hands tasks
(chunks, index builds) to a number of connections, each in its own thread.

The schema is TPC-H's (specification 1.4): fixed text as ``CHAR(n)``, variable text as
``VARCHAR(n)``, money and quantities as ``DECIMAL(15,2)``, dates as ``DATE``. Each table is
split over the data files by its first key column (``PARTITION_KEY``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from iolab.engines.connection import Connection
from iolab.workloads.parallel import Chunk

CHUNK_BYTES = 16 * 2**20  # CSV bytes per chunk of a parallel load

# Load order: small tables first does not matter for the load; the largest go first so that
# parallel loaders finish together.
TABLES = ("lineitem", "orders", "partsupp", "part", "customer", "supplier", "nation", "region")

COLUMNS: Mapping[str, tuple[tuple[str, str], ...]] = {
    "region": (
        ("r_regionkey", "INTEGER"),
        ("r_name", "CHAR(25)"),
        ("r_comment", "VARCHAR(152)"),
    ),
    "nation": (
        ("n_nationkey", "INTEGER"),
        ("n_name", "CHAR(25)"),
        ("n_regionkey", "INTEGER"),
        ("n_comment", "VARCHAR(152)"),
    ),
    "supplier": (
        ("s_suppkey", "BIGINT"),
        ("s_name", "CHAR(25)"),
        ("s_address", "VARCHAR(40)"),
        ("s_nationkey", "INTEGER"),
        ("s_phone", "CHAR(15)"),
        ("s_acctbal", "DECIMAL(15,2)"),
        ("s_comment", "VARCHAR(101)"),
    ),
    "customer": (
        ("c_custkey", "BIGINT"),
        ("c_name", "VARCHAR(25)"),
        ("c_address", "VARCHAR(40)"),
        ("c_nationkey", "INTEGER"),
        ("c_phone", "CHAR(15)"),
        ("c_acctbal", "DECIMAL(15,2)"),
        ("c_mktsegment", "CHAR(10)"),
        ("c_comment", "VARCHAR(117)"),
    ),
    "part": (
        ("p_partkey", "BIGINT"),
        ("p_name", "VARCHAR(55)"),
        ("p_mfgr", "CHAR(25)"),
        ("p_brand", "CHAR(10)"),
        ("p_type", "VARCHAR(25)"),
        ("p_size", "INTEGER"),
        ("p_container", "CHAR(10)"),
        ("p_retailprice", "DECIMAL(15,2)"),
        ("p_comment", "VARCHAR(23)"),
    ),
    "partsupp": (
        ("ps_partkey", "BIGINT"),
        ("ps_suppkey", "BIGINT"),
        ("ps_availqty", "INTEGER"),
        ("ps_supplycost", "DECIMAL(15,2)"),
        ("ps_comment", "VARCHAR(199)"),
    ),
    "orders": (
        ("o_orderkey", "BIGINT"),
        ("o_custkey", "BIGINT"),
        ("o_orderstatus", "CHAR(1)"),
        ("o_totalprice", "DECIMAL(15,2)"),
        ("o_orderdate", "DATE"),
        ("o_orderpriority", "CHAR(15)"),
        ("o_clerk", "CHAR(15)"),
        ("o_shippriority", "INTEGER"),
        ("o_comment", "VARCHAR(79)"),
    ),
    "lineitem": (
        ("l_orderkey", "BIGINT"),
        ("l_partkey", "BIGINT"),
        ("l_suppkey", "BIGINT"),
        ("l_linenumber", "INTEGER"),
        ("l_quantity", "DECIMAL(15,2)"),
        ("l_extendedprice", "DECIMAL(15,2)"),
        ("l_discount", "DECIMAL(15,2)"),
        ("l_tax", "DECIMAL(15,2)"),
        ("l_returnflag", "CHAR(1)"),
        ("l_linestatus", "CHAR(1)"),
        ("l_shipdate", "DATE"),
        ("l_commitdate", "DATE"),
        ("l_receiptdate", "DATE"),
        ("l_shipinstruct", "CHAR(25)"),
        ("l_shipmode", "CHAR(10)"),
        ("l_comment", "VARCHAR(44)"),
    ),
}

PRIMARY_KEYS: Mapping[str, tuple[str, ...]] = {
    "region": ("r_regionkey",),
    "nation": ("n_nationkey",),
    "supplier": ("s_suppkey",),
    "customer": ("c_custkey",),
    "part": ("p_partkey",),
    "partsupp": ("ps_partkey", "ps_suppkey"),
    "orders": ("o_orderkey",),
    "lineitem": ("l_orderkey", "l_linenumber"),
}

# Secondary indexes for engines that need them (row stores): the correlated subqueries of Q17
# and Q20 look lineitem up by part (and supplier), Q22 and Q13 orders by customer.
INDEXES: Mapping[str, tuple[tuple[str, ...], ...]] = {
    "lineitem": (("l_partkey", "l_suppkey"),),
    "orders": (("o_custkey",),),
}


def partition_key(table: str) -> str:
    """The column a table is split over the data files by: its first key column."""
    return PRIMARY_KEYS[table][0]


def column_names(table: str) -> list[str]:
    return [name for name, _ in COLUMNS[table]]


@dataclass(frozen=True)
class TpchFiles:
    """The generated data of one scale factor: a CSV file with a header line per table."""

    scale_factor: float
    directory: Path

    def path(self, table: str) -> Path:
        return self.directory / f"{table}.csv"

    def bytes(self, table: str) -> int:
        return self.path(table).stat().st_size

    @property
    def total_bytes(self) -> int:
        return sum(self.bytes(t) for t in TABLES)


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


class QueryTimeout(Exception):
    """A query ran into its timeout and was stopped by the engine."""


Progress = Callable[[int], None]  # called with the number of CSV bytes just loaded
Connect = Callable[[], Connection]  # a new connection to the engine's benchmark database


class TpchDialect(Protocol):
    """An engine's TPC-H SQL. Connections come from the engine; every method commits."""

    compression: bool

    def create_tables(self, conn: Connection) -> None:
        """Create the eight tables spread over the layout's data files (keys and indexes may
        wait for :meth:`finish_load`)."""
        ...

    def load(self, connect: Connect, files: TpchFiles, progress: Progress) -> None:
        """Load every table from ``files``, reporting CSV bytes loaded as it goes."""
        ...

    def finish_load(self, connect: Connect) -> None:
        """Primary keys, indexes and statistics after the load; data flushed to the files."""
        ...

    def query(self, number: int, text: str) -> str:
        """TPC-H query ``number`` (DuckDB's text) in this engine's dialect."""
        ...

    def execute(
        self, conn: Connection, sql: str, timeout: float
    ) -> tuple[list[str], list[tuple[object, ...]]]:
        """Run a query: column names and rows. Raises QueryTimeout after ``timeout`` seconds."""
        ...

    def row_counts(self, conn: Connection) -> dict[str, int]:
        """Rows in each table."""
        ...
