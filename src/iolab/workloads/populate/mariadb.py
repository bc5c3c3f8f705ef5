"""The population workload's SQL for MariaDB / InnoDB.

The table is InnoDB's clustered index on ``id`` (``BIGINT AUTO_INCREMENT`` for sequential keys,
``BINARY(16)`` for UUID keys) and a payload column sized so that **two** rows fill one leaf page:
InnoDB requires every clustered-index leaf page to hold at least two records (a record of half a
page or more has its long columns moved off-page), so one row per page, as in the seeds' SQL
Server table, cannot be had; two rows per page is the nearest equivalent.

The payload is ``VARCHAR(N) CHARACTER SET latin1`` (one byte per character), filled by the
server from the column's default, as the seed's ``CHAR(4100) DEFAULT 'a'`` is: MariaDB's ``CHAR``
and ``BINARY`` stop at 255 bytes, so a page-sized fixed-width column is not available. Every row
stores exactly N payload bytes, so the column is fixed-width in effect. The redo log still carries
every payload byte: InnoDB logs an insert as the record minus the prefix it shares with the
preceding record on the page, and that prefix ends inside the key, which differs from row to row.

Page arithmetic (``payload_bytes``), for a page of P bytes (P = 16384 by default):

- fixed page overhead: FIL header 38 + index page header 36 + two file-segment headers 20 +
  the infimum and supremum records 2 x 13 + FIL trailer 8 = 128 bytes; the page directory holds
  two 2-byte slots while a page has fewer than 8 records: 4 bytes. Free for records:
  F = P - 132 (16252 for 16K pages);
- a record (ROW_FORMAT=DYNAMIC, all columns NOT NULL, so no null bitmap): 5-byte record header
  + 2-byte length of the payload (a column longer than 255 bytes holding more than 127) + the key
  (8 or 16 bytes) + DB_TRX_ID 6 + DB_ROLL_PTR 7 + N payload bytes: R = N + 36 with a UUID key,
  N + 28 with a bigint;
- two records fit when 2R + 1 <= F (the second insert also reserves a byte towards a further
  page-directory slot), and a record that long still stays in-line (InnoDB moves long columns
  off-page from a record of about half the free space): R <= (F - 1) // 2 = 8125 on 16K pages,
  so N = 8125 - 36 = 8089 for both key types (a bigint row is 8 bytes shorter: 8117);
- a third record does not fit: it would need 3R + 2 <= F, that is R <= 5416 on 16K pages, far
  below either row size. InnoDB also reserves 1/16 of a page (1024 bytes on 16K pages) on leaf
  pages of a clustered index filled in ascending (or descending) order, refusing an insert that
  would leave less free: that rule only applies once a page already holds two records, so it
  cannot stop the second row, and the third one does not fit anyway.

Measured with 600 rows on 16K pages: N = 8089 gives 301 leaf pages for both key types (two rows
per page; the leftmost page keeps one row after the root split), N = 8090 gives 603 (one row per
page) with UUID keys, and N = 8098 does with bigint keys. On 4K and 8K pages too the computed N
is the last width with two rows per page; on 32K pages one byte more moves the payload off-page.
64K pages cannot hold a record of half a page in-line (records stop at 16383 bytes) and are
refused.

Loading: client mode runs one ``INSERT`` per statement from Python (pymysql interpolates the
parameters on the client: there are no server-side prepared statements, and the statement text is
built once per shape); server mode runs the loop in the stored procedure ``iolab_load``.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from iolab.engines.external import Objects
from iolab.engines.innodb import checkpoint, placement, status
from iolab.engines.interface import Engine
from iolab.errors import BadInput
from iolab.latency.recording import LoaderClock, OpKind
from iolab.workloads.populate.loading import (
    TABLE,
    KeyKind,
    LoadMethod,
    LoadMode,
    LoadSpec,
    Progress,
    TableStats,
    key_factory,
)

PROCEDURE = "iolab_load"
UUID7_FUNCTION = "iolab_uuid7"

# InnoDB page layout (storage/innobase/include/page0page.h, fil0fil.h), ROW_FORMAT=DYNAMIC.
FIL_HEADER = 38
PAGE_HEADER = 36
FSEG_HEADERS = 20  # two file-segment headers, reserved on every index page
INFIMUM_SUPREMUM = 26  # two 13-byte records (5-byte header + 8 bytes each)
FIL_TRAILER = 8
DIR_SLOTS = 4  # two 2-byte directory slots (infimum's, supremum's) for up to 8 records
PAGE_OVERHEAD = (
    FIL_HEADER + PAGE_HEADER + FSEG_HEADERS + INFIMUM_SUPREMUM + FIL_TRAILER + DIR_SLOTS
)  # 132
RECORD_HEADER = 5
PAYLOAD_LENGTH = 2  # length bytes of a VARCHAR longer than 255 bytes holding more than 127
SYSTEM_COLUMNS = 6 + 7  # DB_TRX_ID, DB_ROLL_PTR
WIDEST_KEY = 16  # BINARY(16); a BIGINT is 8
RECORD_OVERHEAD = RECORD_HEADER + PAYLOAD_LENGTH + WIDEST_KEY + SYSTEM_COLUMNS  # 36
REC_MAX_DATA_SIZE = 16383  # no record is longer in-line, whatever the page size

SERVER_CHUNK = 1000  # rows per CALL in server mode, so that progress is reported as it goes
_LSN = re.compile(r"Log sequence number\s+(\d+)")


class MariaDBPopulate:
    """The population workload on InnoDB: two rows per leaf page (InnoDB's minimum).

    ``partition_dirs`` are the DATA DIRECTORY of each data file: with several, the table is
    ``PARTITION BY KEY (id)`` with one partition per directory; with one, the table's own
    tablespace lives there.
    """

    rows_per_page = 2  # InnoDB needs at least two records per clustered-index leaf page
    methods = frozenset({LoadMethod.INSERT, LoadMethod.MULTIROW})  # no LOAD DATA (COPY)
    modes = frozenset({LoadMode.CLIENT, LoadMode.SERVER})

    def __init__(self, partition_dirs: list[Path], page_size: int) -> None:
        if page_size not in (4096, 8192, 16384, 32768):
            raise BadInput(
                "innodb_page_size",
                page_size,
                "the population table needs 4K, 8K, 16K or 32K pages: on 64K pages a record "
                "cannot be half a page long",
            )
        self.partition_dirs = list(partition_dirs)
        self.page_size = page_size

    def core_insert(self, key: KeyKind) -> str:
        """The INSERT of one row the compiled driver core prepares (libmariadb's ``?``
        placeholders): the Python path's statement for one row."""
        return _insert_sql(key, 1).replace("%s", "?")

    # --- the table -------------------------------------------------------------------------

    def payload_bytes(self) -> int:
        """Payload width so that two rows, and not three, fit on a clustered-index leaf page.

        The largest record that lets a second one fit is R = (F - 1) // 2 with F = page - 132
        the free space of an empty page; the payload is R minus the 36 bytes a record with a
        UUID key adds (see the module docstring): 8089 bytes on 16K pages, 1945 on 4K pages.
        """
        free = self.page_size - PAGE_OVERHEAD
        record = min((free - 1) // 2, REC_MAX_DATA_SIZE)
        return record - RECORD_OVERHEAD

    def create_table(self, conn: Any, spec: LoadSpec) -> None:
        if spec.key is KeyKind.SEQUENTIAL:
            key = "id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY"
        else:
            key = "id BINARY(16) NOT NULL PRIMARY KEY"
        n = spec.payload_bytes
        # STATS_PERSISTENT: table_stats() reads mysql.innodb_index_stats after ANALYZE TABLE;
        # STATS_AUTO_RECALC=0: no statistics recalculation in the background during the load.
        ddl = (
            f"CREATE TABLE {TABLE} ({key}, "
            f"payload VARCHAR({n}) CHARACTER SET latin1 NOT NULL DEFAULT (REPEAT('a', {n}))) "
            "ENGINE=InnoDB ROW_FORMAT=DYNAMIC STATS_PERSISTENT=1 STATS_AUTO_RECALC=0"
            + placement(self.partition_dirs, "KEY (id)")
        )
        with conn.cursor() as cur:
            cur.execute(f"DROP PROCEDURE IF EXISTS {PROCEDURE}")
            cur.execute(f"DROP FUNCTION IF EXISTS {UUID7_FUNCTION}")
            cur.execute(f"DROP TABLE IF EXISTS {TABLE}")
            cur.execute(ddl)
            random = self._random_bytes(cur)
            cur.execute(_uuid7_function(random))
            cur.execute(_load_procedure(random(16)))
        conn.commit()

    @staticmethod
    def _random_bytes(cur: Any) -> Callable[[int], str]:
        """SQL for n random bytes: RANDOM_BYTES() (MariaDB 10.10+), else MD5 of RAND()."""
        try:
            cur.execute("SELECT RANDOM_BYTES(1)")
            cur.fetchall()
        except Exception:  # an older server: no RANDOM_BYTES
            return lambda n: f"LEFT(UNHEX(MD5(RAND())), {n})"
        return lambda n: f"RANDOM_BYTES({n})"

    # --- loading ---------------------------------------------------------------------------

    def ready(self, conn: Any, spec: LoadSpec) -> None:
        """Server mode: a CALL of no row, so that this session parses the procedure into its
        cache before the clock starts. Client mode has nothing to ready."""
        if spec.mode is not LoadMode.SERVER:
            return
        with conn.cursor() as cur:
            cur.execute(f"CALL {PROCEDURE}(0, 1, %s, 1)", (spec.key.value,))
            while cur.nextset():  # a CALL returns a final status result
                pass

    def load(
        self,
        conn: Any,
        spec: LoadSpec,
        count: int,
        progress: Progress,
        clock: LoaderClock | None = None,
    ) -> None:
        per_statement = spec.batch if spec.method is LoadMethod.MULTIROW else 1
        if per_statement < 1 or spec.commit_every < 1:
            raise BadInput("--batch/--commit-every", (spec.batch, spec.commit_every),
                           "give 1 or more rows")  # fmt: skip
        was_autocommit = bool(conn.get_autocommit())
        conn.autocommit(True)
        try:
            if spec.mode is LoadMode.SERVER:
                self._load_server(conn, spec, count, per_statement, progress)
            else:
                self._load_client(
                    conn, spec, count, per_statement, progress, clock or LoaderClock.untimed()
                )
        finally:
            conn.autocommit(was_autocommit)

    def _load_client(self, conn: Any, spec: LoadSpec, count: int, per_statement: int,
                     progress: Progress, clock: LoaderClock) -> None:  # fmt: skip
        """One statement per row (insert) or per ``batch`` rows (multirow), from Python.

        When every statement reaches ``commit_every`` (commit_every 1, or a multirow batch at
        least as large), each statement is its own autocommitted transaction, as in the seeds;
        otherwise explicit transactions, committed after the statement that reaches it.
        """
        keys = key_factory(spec.key)
        statements: dict[int, str] = {}
        implicit = spec.commit_every <= per_statement
        kind = OpKind.TRANSACTION if implicit else OpKind.STATEMENT
        done = pending = 0
        with conn.cursor() as cur:
            try:
                while done < count:
                    rows = min(per_statement, count - done)
                    started = clock.begin(rows, can_stop=pending == 0)
                    if started is None:
                        break  # the duration is up, at a transaction boundary
                    sql = statements.get(rows)
                    if sql is None:
                        sql = statements[rows] = _insert_sql(spec.key, rows)
                    args = [keys() for _ in range(rows)] if keys is not None else None
                    if not implicit and pending == 0:
                        conn.begin()
                    cur.execute(sql, args)
                    clock.record(kind, started)
                    done += rows
                    pending += rows
                    if implicit:
                        pending = 0
                        progress(rows)
                    elif pending >= spec.commit_every or done == count:
                        started = time.perf_counter_ns()
                        conn.commit()
                        clock.record(OpKind.COMMIT, started)
                        committed, pending = pending, 0
                        progress(committed)
            except BaseException:
                if pending:
                    _rollback(conn)
                raise

    def _load_server(self, conn: Any, spec: LoadSpec, count: int, per_statement: int,
                     progress: Progress) -> None:  # fmt: skip
        """``CALL iolab_load`` in chunks of about SERVER_CHUNK rows, reporting each chunk.

        One CALL for all rows would report progress only at the end; a CALL per ~1000 rows
        costs one round trip per 1000 rows and keeps progress live. Chunks hold whole
        transactions, so commits fall where one long CALL would put them.
        """
        if spec.commit_every <= per_statement:
            per_transaction = per_statement
        else:
            per_transaction = -(-spec.commit_every // per_statement) * per_statement
        chunk = per_transaction * max(1, SERVER_CHUNK // per_transaction)
        done = 0
        with conn.cursor() as cur:
            try:
                while done < count:
                    rows = min(chunk, count - done)
                    cur.execute(
                        f"CALL {PROCEDURE}(%s, %s, %s, %s)",
                        (rows, spec.commit_every, spec.key.value, per_statement),
                    )
                    while cur.nextset():  # a CALL returns a final status result
                        pass
                    done += rows
                    progress(rows)
            except BaseException:
                _rollback(conn)  # a failed CALL may leave its transaction open
                raise

    # --- measuring -------------------------------------------------------------------------

    def checkpoint(self, conn: Any) -> None:
        """Every dirty page flushed and a checkpoint written: see :func:`checkpoint`."""
        checkpoint(conn)

    def log_bytes(self, conn: Any) -> int | None:
        """The redo log sequence number: ``Innodb_lsn_current``, else SHOW ENGINE INNODB STATUS."""
        with conn.cursor() as cur:
            lsn = status(cur, "Innodb_lsn_current")
            if lsn is not None:
                return lsn
            cur.execute("SHOW ENGINE INNODB STATUS")
            row = cur.fetchone()
        found = _LSN.search(str(row[-1])) if row else None
        return int(found.group(1)) if found else None

    def table_stats(self, conn: Any) -> TableStats:
        """Rows, keys, and the clustered index's size over all partitions.

        ``pages`` is the number of leaf pages of PRIMARY (``n_leaf_pages`` in
        ``mysql.innodb_index_stats``, written by ANALYZE TABLE): the pages in use in the leaf
        segment, counted exactly, not sampled. ``table_bytes`` is DATA_LENGTH, the pages the
        clustered index has reserved (leaf and non-leaf, including unused pages of its extents),
        so it is larger than ``pages * page_size``; ``total_bytes`` adds INDEX_LENGTH.
        """
        conn.commit()  # a fresh snapshot for the counts
        with conn.cursor() as cur:
            cur.execute(f"ANALYZE TABLE {TABLE}")
            cur.fetchall()
            cur.execute(f"SELECT COUNT(*), COUNT(DISTINCT id) FROM {TABLE}")
            rows, distinct = cur.fetchone()
            cur.execute(
                "SELECT COALESCE(SUM(DATA_LENGTH), 0), COALESCE(SUM(INDEX_LENGTH), 0) "
                "FROM information_schema.PARTITIONS "
                "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s",
                (TABLE,),
            )
            data_length, index_length = cur.fetchone()
            cur.execute(
                "SELECT COALESCE(SUM(stat_value), 0) FROM mysql.innodb_index_stats "
                "WHERE database_name = DATABASE() AND index_name = 'PRIMARY' "
                "AND stat_name = 'n_leaf_pages' AND (table_name = %s OR table_name LIKE %s)",
                (TABLE, TABLE.replace("_", "\\_") + "#P#%"),
            )
            (leaf_pages,) = cur.fetchone()
        conn.commit()
        return TableStats(
            rows=int(rows),
            distinct_keys=int(distinct),
            table_bytes=int(data_length),
            total_bytes=int(data_length) + int(index_length),
            pages=int(leaf_pages),
            page_size=self.page_size,
        )


def _rollback(conn: Any) -> None:
    """Roll back after a failure, keeping the failure's own error if the connection is gone."""
    with contextlib.suppress(Exception):
        conn.rollback()


def _insert_sql(key: KeyKind, rows: int) -> str:
    """The client's INSERT for ``rows`` rows; the payload comes from the column default."""
    if key is KeyKind.SEQUENTIAL:
        return f"INSERT INTO {TABLE} () VALUES " + ", ".join(["()"] * rows)
    return f"INSERT INTO {TABLE} (id) VALUES " + ", ".join(["(%s)"] * rows)


def _uuid7_function(random: Callable[[int], str]) -> str:
    """``iolab_uuid7()``: 48-bit Unix milliseconds, version 7, variant 10, random bits."""
    return f"""
CREATE FUNCTION {UUID7_FUNCTION}() RETURNS BINARY(16) NOT DETERMINISTIC NO SQL
BEGIN
  DECLARE r CHAR(20) DEFAULT HEX({random(10)});
  RETURN UNHEX(CONCAT(
    LPAD(HEX(FLOOR(UNIX_TIMESTAMP(NOW(6)) * 1000)), 12, '0'),
    '7', SUBSTR(r, 2, 3),
    SUBSTR('89AB', 1 + CONV(SUBSTR(r, 5, 1), 16, 10) % 4, 1), SUBSTR(r, 6, 15)));
END"""


def _load_procedure(random16: str) -> str:
    """``iolab_load(n, commit_every, key_kind, batch)``: the seed's loop, inside the server.

    ``batch`` 1 runs one static INSERT per row; a larger batch runs a prepared multirow INSERT.
    With ``commit_every`` at most the rows of one statement, each statement is its own
    autocommitted transaction (the caller's session has autocommit on); otherwise START
    TRANSACTION ... COMMIT after the statement that reaches ``commit_every`` rows.

    The seed's case (one row per statement, each its own transaction) has loops of its own, one
    per key kind, that run nothing per row but the INSERT and the count: the general loop's
    per-row LEAST, CASE and IFs cost several percent of the rows on a CPU-bound server
    (bench/README.md).
    """
    return f"""
CREATE PROCEDURE {PROCEDURE}(IN n BIGINT, IN commit_every INT, IN key_kind VARCHAR(16),
                             IN batch INT)
MODIFIES SQL DATA
BEGIN
  DECLARE done BIGINT DEFAULT 0;
  DECLARE pending BIGINT DEFAULT 0;
  DECLARE take INT;
  DECLARE prepared INT DEFAULT 0;
  DECLARE explicit BOOLEAN DEFAULT commit_every > batch;
  DECLARE cols VARCHAR(8) DEFAULT IF(key_kind = 'sequential', '', 'id');
  DECLARE val VARCHAR(64) DEFAULT CASE key_kind
    WHEN 'sequential' THEN '()'
    WHEN 'random' THEN '({random16})'
    ELSE '({UUID7_FUNCTION}())' END;
  IF batch = 1 AND NOT explicit THEN
    CASE key_kind
      WHEN 'sequential' THEN
        WHILE done < n DO
          INSERT INTO {TABLE} () VALUES ();
          SET done = done + 1;
        END WHILE;
      WHEN 'random' THEN
        WHILE done < n DO
          INSERT INTO {TABLE} (id) VALUES ({random16});
          SET done = done + 1;
        END WHILE;
      ELSE
        WHILE done < n DO
          INSERT INTO {TABLE} (id) VALUES ({UUID7_FUNCTION}());
          SET done = done + 1;
        END WHILE;
    END CASE;
  END IF;
  WHILE done < n DO
    SET take = LEAST(batch, n - done);
    IF explicit AND pending = 0 THEN
      START TRANSACTION;
    END IF;
    IF take = 1 THEN
      CASE key_kind
        WHEN 'sequential' THEN INSERT INTO {TABLE} () VALUES ();
        WHEN 'random' THEN INSERT INTO {TABLE} (id) VALUES ({random16});
        ELSE INSERT INTO {TABLE} (id) VALUES ({UUID7_FUNCTION}());
      END CASE;
    ELSE
      IF take <> prepared THEN
        IF prepared > 0 THEN
          DEALLOCATE PREPARE iolab_rows;
        END IF;
        PREPARE iolab_rows FROM CONCAT('INSERT INTO {TABLE} (', cols, ') VALUES ', val,
                                       REPEAT(CONCAT(', ', val), take - 1));
        SET prepared = take;
      END IF;
      EXECUTE iolab_rows;
    END IF;
    SET done = done + take;
    SET pending = pending + take;
    IF explicit AND (pending >= commit_every OR done >= n) THEN
      COMMIT;
      SET pending = 0;
    ELSEIF NOT explicit THEN
      SET pending = 0;
    END IF;
  END WHILE;
  IF prepared > 0 THEN
    DEALLOCATE PREPARE iolab_rows;
  END IF;
END"""


OBJECTS = Objects(
    tables=(TABLE,),
    procedures=(PROCEDURE,),
    functions=(UUID7_FUNCTION,),
    reads=("mysql.innodb_index_stats",),  # table_stats(): the clustered index's leaf pages
)


def dialect(engine: Engine) -> MariaDBPopulate:
    """The population workload's SQL for a running server: its page size, its directories."""
    conn: Any = engine.connect()
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT @@innodb_page_size")
            page_size = int(cur.fetchone()[0])
    finally:
        conn.close()
    return MariaDBPopulate([Path(d) for d in engine.spaces()], page_size)
