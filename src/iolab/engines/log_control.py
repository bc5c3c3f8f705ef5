"""What seed 003's variations ask of an engine's log: a checkpoint on request, and a log grown
to a size before the load (``iolab populate --checkpoint-every``, ``--presize-wal``).

Requested checkpoint, on a connection of its own while the loaders run:

- PostgreSQL: ``CHECKPOINT`` (it returns when the checkpoint is complete). What it wrote comes
  from the server log's ``checkpoint complete`` line (see :func:`merge_requested`).
- MariaDB: InnoDB has no CHECKPOINT statement outside debug builds. iolab sets
  ``innodb_max_dirty_pages_pct = 0`` (and raises ``innodb_io_capacity``) until the checkpoint LSN
  has passed the LSN current when the request began, so that every change made before it is on
  disk, then puts the four settings back; what it wrote is the increase of
  ``Innodb_buffer_pool_pages_flushed`` meanwhile (the loaders' own flushing counts too).
- SQLite: ``PRAGMA wal_checkpoint(TRUNCATE)`` on every database file, or ``RESTART`` when the
  WAL was pre-sized (TRUNCATE would undo the pre-sizing); what it wrote is the frames copied
  back into the database files.

Pre-sized log, in place before the first row:

- PostgreSQL: ``min_wal_size`` (and ``max_wal_size`` when the default is smaller) set to the
  size, then segments made up front: a WAL switch after a tiny WAL record, repeated until the
  segments hold the size, and a CHECKPOINT, which recycles them as the segments to come.
- MariaDB: ``innodb_log_file_size`` set to the size: InnoDB creates the redo log at that size.
- SQLite (WAL mode): each database file's ``-wal`` file grown to its share of the size by a
  transaction that writes that much into a scratch table and is rolled back: the frames stay
  in the file, which later writes overwrite from its start.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from iolab.engines.connection import Connection
from iolab.engines.interface import Layout
from iolab.errors import BadInput, IolabError
from iolab.units import format_bytes

MIB = 1 << 20
FLUSH_IO_CAPACITY = 20000  # pages/s the page cleaner may write during a requested flush
FLUSH_POLL = 0.1  # seconds between checks of the checkpoint LSN
FLUSH_LIMIT = 600.0  # seconds a requested MariaDB checkpoint may take before it gives up
PRESIZE_TABLE = "iolab_presize"


class LogControl(Protocol):
    name: str  # how a requested checkpoint is made, for its interval's detail

    def settings(self, size: int, given: Mapping[str, str]) -> dict[str, str]:
        """Settings that make the log ``size`` bytes, added to ``given`` before the start; a
        conflicting setting in ``given`` is bad input."""
        ...

    def presize(self, conn: Connection, size: int) -> None:
        """Grow the log to ``size`` bytes on a running, settled instance, before the load."""
        ...

    def log_files(self, wal: Path | None, data: Sequence[Path]) -> list[Path]:
        """The files that hold the log (to measure its size)."""
        ...

    def log_dirs(self, layout: Layout, size: int) -> dict[Path, int]:
        """The layout's directories a log of ``size`` bytes goes to, with the bytes in each."""
        ...

    def request_checkpoint(
        self, conn: Connection, keep_size: bool, stopping: Callable[[], bool]
    ) -> tuple[int | None, str]:
        """Make a checkpoint now and wait for it (or until ``stopping()``, where the engine
        waits in iolab); (pages written or None, what was done)."""
        ...


def _conflict(given: Mapping[str, str], name: str, size: int) -> None:
    if name in given:
        raise BadInput(
            f"--set {name}",
            given[name],
            f"leave it out with --presize-wal {format_bytes(size)}, which sets it",
        )


def _mib(size: int) -> int:
    return max(1, math.ceil(size / MIB))


def allocated_bytes(paths: Sequence[Path]) -> int:
    """Bytes the files take on disk (blocks allocated), directories walked; missing ones: 0."""
    total = 0
    for path in paths:
        if path.is_dir():
            total += allocated_bytes(sorted(path.iterdir()))
        elif path.is_file():
            total += path.stat().st_blocks * 512
    return total


def _wal_dir(layout: Layout, size: int) -> dict[Path, int]:
    """The WAL dir, or the (first) data dir the log lies in without one."""
    return {layout.wal_dir or layout.data_dirs[0]: size}


class PostgresLog:
    name = "CHECKPOINT"
    log_dirs = staticmethod(_wal_dir)

    def settings(self, size: int, given: Mapping[str, str]) -> dict[str, str]:
        _conflict(given, "min_wal_size", size)
        out = {"min_wal_size": f"{_mib(size)}MB"}
        if "max_wal_size" not in given:
            out["max_wal_size"] = f"{max(_mib(size), 1024)}MB"  # PostgreSQL's default: 1GB
        elif _wal_size_mib(str(given["max_wal_size"])) < _mib(size):
            raise BadInput(
                "--set max_wal_size",
                given["max_wal_size"],
                f"at least the --presize-wal of {format_bytes(size)}: PostgreSQL keeps no more "
                "WAL than max_wal_size",
            )
        return out

    def presize(self, conn: Any, size: int) -> None:
        row = conn.execute("SELECT current_setting('wal_segment_size')").fetchone()
        segment = _size_setting(str(row[0]))
        for _ in range(math.ceil(size / segment) + 1):
            conn.execute("SELECT pg_logical_emit_message(false, 'iolab', 'presize')")
            conn.execute("SELECT pg_switch_wal()")
            conn.commit()
        conn.execute("CHECKPOINT")
        conn.commit()

    def log_files(self, wal: Path | None, data: Sequence[Path]) -> list[Path]:
        return [wal] if wal is not None else []

    def request_checkpoint(
        self, conn: Any, keep_size: bool, stopping: Callable[[], bool]
    ) -> tuple[int | None, str]:
        conn.execute("CHECKPOINT")
        conn.commit()
        return None, "CHECKPOINT"


def _wal_size_mib(text: str) -> float:
    """MiB of a ``max_wal_size`` as written (``4GB``, ``512MB``, ``2048``: MB without a unit);
    infinity for what does not parse (PostgreSQL's own check of --set refuses it)."""
    text = text.strip()
    try:
        if text.isdigit():
            return float(text)
        return _size_setting(text.replace(" ", "")) / MIB
    except ValueError:
        return math.inf


def _size_setting(text: str) -> int:
    """Bytes of a size setting as PostgreSQL shows it (``16MB``, ``8kB``, ``16777216``)."""
    units = {"kB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40, "B": 1}
    for unit, factor in units.items():
        if text.endswith(unit):
            return int(text.removesuffix(unit)) * factor
    return int(text)


class MariaDBLog:
    name = "flush to the LSN of the request"
    log_dirs = staticmethod(_wal_dir)

    def settings(self, size: int, given: Mapping[str, str]) -> dict[str, str]:
        _conflict(given, "innodb_log_file_size", size)
        return {"innodb_log_file_size": str(_mib(size) * MIB)}

    def presize(self, conn: Any, size: int) -> None:
        pass  # InnoDB made the redo log at innodb_log_file_size when it started

    def log_files(self, wal: Path | None, data: Sequence[Path]) -> list[Path]:
        if wal is None:
            return []
        return sorted(wal.glob("ib_logfile*"))

    def request_checkpoint(
        self, conn: Any, keep_size: bool, stopping: Callable[[], bool]
    ) -> tuple[int | None, str]:
        conn.commit()
        with conn.cursor() as cur:
            target = _status(cur, "Innodb_lsn_current") or 0
            flushed = _status(cur, "Innodb_buffer_pool_pages_flushed")
            cur.execute(
                "SELECT @@GLOBAL.innodb_max_dirty_pages_pct, "
                "@@GLOBAL.innodb_max_dirty_pages_pct_lwm, "
                "@@GLOBAL.innodb_io_capacity, @@GLOBAL.innodb_io_capacity_max"
            )
            pct, lwm, capacity, capacity_max = cur.fetchone()
            try:
                cur.execute("SET GLOBAL innodb_io_capacity_max = %s", (FLUSH_IO_CAPACITY,))
                cur.execute("SET GLOBAL innodb_io_capacity = %s", (FLUSH_IO_CAPACITY,))
                cur.execute("SET GLOBAL innodb_max_dirty_pages_pct = 0")
                began = time.monotonic()
                reached = True
                while (_status(cur, "Innodb_lsn_last_checkpoint") or 0) < target:
                    if stopping():  # the load ended or was interrupted: settings back now
                        reached = False
                        break
                    if time.monotonic() - began > FLUSH_LIMIT:
                        raise IolabError(
                            f"InnoDB's checkpoint did not reach LSN {target} within "
                            f"{FLUSH_LIMIT:.0f} s of the requested checkpoint"
                        )
                    time.sleep(FLUSH_POLL)
            finally:
                cur.execute("SET GLOBAL innodb_max_dirty_pages_pct = %s", (pct,))
                cur.execute("SET GLOBAL innodb_max_dirty_pages_pct_lwm = %s", (lwm,))
                cur.execute("SET GLOBAL innodb_io_capacity = %s", (capacity,))
                cur.execute("SET GLOBAL innodb_io_capacity_max = %s", (capacity_max,))
            after = _status(cur, "Innodb_buffer_pool_pages_flushed")
        conn.commit()
        pages = after - flushed if after is not None and flushed is not None else None
        how = "reached" if reached else "stopped before it reached"
        return pages, f"checkpoint LSN {how} {target}"


def _status(cur: Any, name: str) -> int | None:
    cur.execute("SHOW GLOBAL STATUS LIKE %s", (name,))
    row = cur.fetchone()
    return int(row[1]) if row is not None else None


class SQLiteLog:
    name = "PRAGMA wal_checkpoint"

    def __init__(self, schemas: Sequence[str], page_size: int) -> None:
        self._schemas = list(schemas)
        self._page_size = page_size

    def settings(self, size: int, given: Mapping[str, str]) -> dict[str, str]:
        mode = str(given.get("journal_mode", "wal")).lower()
        if mode != "wal":
            raise BadInput(
                "--set journal_mode", mode, "wal: --presize-wal grows the WAL, which only it has"
            )
        return {}

    def presize(self, conn: Any, size: int) -> None:
        share = math.ceil(size / len(self._schemas))
        # rows of one page-sized blob each: one overflow chain of about a page per row
        rows = math.ceil((share + 2 * MIB) / self._page_size)  # and what the cache holds back
        conn.execute("PRAGMA cache_size = -1024")  # 1 MiB: the transaction spills into the WAL
        try:
            conn.execute("BEGIN")
            try:
                for schema in self._schemas:
                    conn.execute(f"CREATE TABLE {schema}.{PRESIZE_TABLE} (b BLOB)")
                    conn.execute(
                        f"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n "
                        f"WHERE i < ?) INSERT INTO {schema}.{PRESIZE_TABLE} "
                        f"SELECT zeroblob(?) FROM n",
                        (rows, self._page_size - 64),
                    )
            finally:
                conn.execute("ROLLBACK")
        finally:
            conn.execute("PRAGMA cache_size = -2000")  # SQLite's default

    def log_files(self, wal: Path | None, data: Sequence[Path]) -> list[Path]:
        return [p.with_name(p.name + "-wal") for p in data]

    def log_dirs(self, layout: Layout, size: int) -> dict[Path, int]:
        """Each database file's WAL lies beside it, with an even share of the size."""
        out: dict[Path, int] = {}
        for i in range(layout.files):
            d = layout.data_dir_for(i)
            out[d] = out.get(d, 0) + math.ceil(size / layout.files)
        return out

    def request_checkpoint(
        self, conn: Any, keep_size: bool, stopping: Callable[[], bool]
    ) -> tuple[int | None, str]:
        how = "RESTART" if keep_size else "TRUNCATE"
        pages = 0
        busy = 0
        for schema in self._schemas:
            row = conn.execute(f"PRAGMA {schema}.wal_checkpoint({how})").fetchone()
            busy += int(row[0])
            pages += max(0, int(row[2]))
        detail = f"wal_checkpoint({how})" + (
            f", busy on {busy} of {len(self._schemas)} files" if busy else ""
        )
        return pages, detail


def log_control(engine: str, dialect: object) -> LogControl | None:
    """The log control of a populate engine (by its catalog name), None if it has none."""
    if engine == "postgres":
        return PostgresLog()
    if engine == "mariadb":
        return MariaDBLog()
    if engine == "sqlite":
        schemas = getattr(dialect, "schemas", None) or ["main"]
        return SQLiteLog(schemas, int(getattr(dialect, "page_size", 8192)))
    return None


def settings_control(engine: str) -> LogControl | None:
    """The log control for settings only (before an instance exists)."""
    return log_control(engine, None)
