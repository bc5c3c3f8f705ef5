"""InnoDB's own SQL that workloads share: where a table's files go, and a full checkpoint.

A MariaDB workload places its tables over the layout's data files with :func:`placement` and
settles the instance before it measures sizes with :func:`checkpoint`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from iolab.engines.rights import may_set_globals
from iolab.errors import IolabError

CHECKPOINT_STALL = 60.0  # seconds a checkpoint may make no progress before it fails
CHECKPOINT_POLL = 0.05
CHECKPOINT_SETTLED_AGE = 4096  # redo bytes past the checkpoint: its own record, a few others
CHECKPOINT_IO_CAPACITY = 1_000_000  # pages a second the page cleaner may write while settling


def sql_string(text: str) -> str:
    """A single-quoted SQL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"


def placement(dirs: list[Path], partitioning: str) -> str:
    """The table options that put a table's data files in ``dirs``: with one directory, its
    ``DATA DIRECTORY``; with several, ``PARTITION BY <partitioning>`` (e.g. ``KEY (id)``) with
    one partition per directory; with none, the server's datadir."""
    if not dirs:
        return ""
    if len(dirs) == 1:
        return f" DATA DIRECTORY = {sql_string(str(dirs[0]))}"
    parts = ", ".join(
        f"PARTITION p{i} DATA DIRECTORY = {sql_string(str(d))}" for i, d in enumerate(dirs)
    )
    return f" PARTITION BY {partitioning} ({parts})"


def checkpoint(conn: Any) -> None:
    """Flush every dirty page of the buffer pool and let InnoDB write a checkpoint.

    ``innodb_max_dirty_pages_pct = 0`` makes the page cleaner flush until no page is dirty
    (MariaDB lowers ``innodb_max_dirty_pages_pct_lwm`` with it), and ``innodb_io_capacity``
    (with ``innodb_io_capacity_max``) raised to :data:`CHECKPOINT_IO_CAPACITY` lets it flush as
    fast as the device goes, not the default 200 pages a second (a 128 MiB buffer pool full of
    dirty pages would take 40 s). All four are restored when the buffer pool has no dirty page,
    purge has caught up (purge rewrites the DB_TRX_ID of freshly inserted rows, dirtying their
    pages again) and the checkpoint is within a few bytes of the current LSN. This settles the
    whole instance, undo and system pages too, where ``FLUSH TABLES ... FOR EXPORT`` flushes
    one table and leaves those dirty. The page cleaner works in one-second rounds, so this
    takes a second or a few.

    Nothing, when the session may not ``SET GLOBAL`` (a server of the user's, ``--dsn``,
    whose user lacks SUPER: :func:`iolab.engines.rights.check` said so before the run).
    """
    conn.commit()  # no read view of ours may hold purge back
    with conn.cursor() as cur:
        if not may_set_globals(cur):
            return
        cur.execute(
            "SELECT @@GLOBAL.innodb_max_dirty_pages_pct, @@GLOBAL.innodb_max_dirty_pages_pct_lwm, "
            "@@GLOBAL.innodb_io_capacity, @@GLOBAL.innodb_io_capacity_max"
        )
        pct, lwm, capacity, capacity_max = cur.fetchone()
        try:
            # the maximum first: innodb_io_capacity may not exceed it
            cur.execute("SET GLOBAL innodb_io_capacity_max = %s", (CHECKPOINT_IO_CAPACITY,))
            cur.execute("SET GLOBAL innodb_io_capacity = %s", (CHECKPOINT_IO_CAPACITY,))
            cur.execute("SET GLOBAL innodb_max_dirty_pages_pct = 0")
            _wait_until_settled(cur)
        finally:
            cur.execute("SET GLOBAL innodb_max_dirty_pages_pct = %s", (pct,))
            cur.execute("SET GLOBAL innodb_max_dirty_pages_pct_lwm = %s", (lwm,))
            cur.execute("SET GLOBAL innodb_io_capacity = %s", (capacity,))
            cur.execute("SET GLOBAL innodb_io_capacity_max = %s", (capacity_max,))
    conn.commit()


def _wait_until_settled(cur: Any) -> None:
    """Poll until nothing is left to flush; fail after CHECKPOINT_STALL s without progress."""
    best: tuple[int, int, int] | None = None
    stalled_since = time.monotonic()
    while True:
        dirty = status(cur, "Innodb_buffer_pool_pages_dirty") or 0
        history = status(cur, "Innodb_history_list_length") or 0
        age = status(cur, "Innodb_checkpoint_age") or 0
        if dirty == 0 and history == 0 and age <= CHECKPOINT_SETTLED_AGE:
            return
        now = (dirty, history, age)
        if best is None or now < best:
            best, stalled_since = now, time.monotonic()
        elif time.monotonic() - stalled_since > CHECKPOINT_STALL:
            raise IolabError(
                f"InnoDB did not settle: {dirty} dirty pages, a purge backlog of {history} "
                f"transactions and a checkpoint age of {age} bytes after "
                f"{CHECKPOINT_STALL:.0f} s without progress; is another session holding "
                "a transaction open?"
            )
        time.sleep(CHECKPOINT_POLL)


def status(cur: Any, name: str) -> int | None:
    """A global status counter of the server (None: the server has no such counter)."""
    cur.execute("SHOW GLOBAL STATUS LIKE %s", (name,))
    row = cur.fetchone()
    return int(row[1]) if row is not None else None
