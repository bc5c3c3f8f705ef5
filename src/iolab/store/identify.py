"""Which file ``--results`` names, before iolab writes a byte to it, and why it cannot be used.

iolab writes only to its own results databases: a file that already holds something else (another
application's SQLite tables, a text file) is refused by every command, reading or writing, and
left exactly as it was. An empty or new file is taken by commands that record runs; commands that
only read refuse it too (there is nothing to read). Errors name ``--results``, the path and what
is wrong, in one line (exit 2): a directory, a place that takes no files (``/proc``), a full
filesystem.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from enum import Enum
from pathlib import Path

from iolab.errors import BadInput, IolabError
from iolab.ownership import can_write
from iolab.units import format_bytes

FIELD = "--results"
FULL_BELOW = 64 * 1024  # bytes free under which a failed write is put down to a full disk
MIGRATIONS_COLUMNS = ["version", "name", "applied_at"]
SIDE_FILES = ("-wal", "-shm")  # what SQLite keeps beside a database in WAL mode


class Kind(Enum):
    NEW = "new"  # no file yet, an empty file, or an SQLite file without tables
    IOLAB = "iolab"  # iolab's schema_migrations, with its first migration recorded


def check_path(path: Path, create: bool, env_var: str) -> None:
    """Refuse, before anything is opened, a path that cannot be a results database."""
    if path.is_dir():
        raise BadInput(FIELD, str(path), "name a file, not a directory")
    if path.exists():
        if not path.is_file():
            raise BadInput(FIELD, str(path), "name a regular file (not a device, pipe or socket)")
        return
    if not create:
        raise BadInput(
            FIELD,
            str(path),
            "no results database there; run a benchmark first or name an existing file with "
            f"--results or {env_var}",
        )
    parent = path.parent
    if not parent.is_dir():
        raise BadInput(FIELD, str(path), f"the directory {parent} does not exist")
    reason = can_write(parent)
    if reason is not None:
        if full(parent):
            raise BadInput(FIELD, str(path), full_reason(parent))
        raise BadInput(FIELD, str(path), f"cannot create a file in {parent} ({reason})")


def check_writable(path: Path) -> None:
    """Refuse an existing file this process cannot write (its mode, a read-only filesystem),
    a ``-wal`` or ``-shm`` beside it that it cannot write, or a directory that takes no new
    files (SQLite makes its ``-wal`` and ``-shm`` there), before a command that records runs
    starts anything: SQLite would open it read-only and fail at the first write, after the
    work."""
    why = unwritable(path)
    if why is not None:
        raise BadInput(FIELD, str(path), why)


def unwritable(path: Path) -> str | None:
    """Why this process cannot write the existing results database ``path`` as SQLite does,
    the file and what it keeps beside it (None: it can). Said after "--results: 'PATH' is not
    allowed; "."""
    if not path.exists():
        return None
    beside = [Path(f"{path}{suffix}") for suffix in SIDE_FILES]
    for file in (path, *beside):
        try:
            os.close(os.open(file, os.O_RDWR | os.O_NONBLOCK | os.O_NOCTTY))
        except FileNotFoundError:
            continue
        except OSError as exc:
            why = exc.strerror or errno.errorcode.get(exc.errno or 0, str(exc))
            if file == path:
                return f"it cannot be written ({why}); name a results file you can write"
            return (
                f"{file} beside it cannot be written ({why}), as a command that could only "
                "read the database once left it: give it the database's owner and mode, or name "
                "another file"
            )
    directory = path.absolute().parent
    refused = can_write(directory)
    if refused is not None:
        return (
            f"its directory {directory} takes no new files ({refused}), and SQLite writes the "
            "database's -wal and -shm there; name a results file in a directory you can write"
        )
    return None


def identify(
    conn: sqlite3.Connection, path: Path, create: bool, known: set[tuple[int, str]]
) -> Kind:
    """What the file is, read without writing; refuses a file that is not iolab's.

    iolab's own: a ``schema_migrations`` table of iolab's columns recording at least one of
    iolab's migrations (``known``: version and name) by its number and name.
    """
    try:
        tables = {
            str(name)
            for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
    except sqlite3.DatabaseError as exc:
        if _code(exc) == sqlite3.SQLITE_NOTADB:
            raise BadInput(
                FIELD,
                str(path),
                "it is not an iolab results database (not an SQLite file); name another file, "
                "or a new one",
            ) from None
        raise
    if "schema_migrations" in tables:
        columns = [str(r[1]) for r in conn.execute("PRAGMA table_info(schema_migrations)")]
        if columns == MIGRATIONS_COLUMNS:
            recorded = {
                (int(v), str(n))
                for v, n in conn.execute("SELECT version, name FROM schema_migrations")
            }
            if recorded & known:
                return Kind.IOLAB
            if not recorded and tables == {"schema_migrations"}:
                tables = set()  # the start of a schema an old iolab was killed making
    if tables:
        shown = ", ".join(sorted(tables)[:5]) + (", ..." if len(tables) > 5 else "")
        raise BadInput(
            FIELD,
            str(path),
            f"it is not an iolab results database (it holds the tables {shown} and no iolab "
            "schema_migrations); iolab leaves it as it is: name another file, or a new one",
        )
    if not create:
        raise BadInput(
            FIELD,
            str(path),
            "the file is empty and holds no results yet; run a benchmark with it first",
        )
    return Kind.NEW


def check_whole(conn: sqlite3.Connection, path: Path, lacking: str | None) -> None:
    """Refuse an iolab results database that lacks part of its schema (``lacking``: what, as
    :func:`iolab.store.migrate.check_schema` says), before a command reads or records."""
    if lacking is not None:
        raise BadInput(
            FIELD,
            str(path),
            f"it is not a whole iolab results database: {lacking} (dropped or damaged); "
            "restore it from a copy, or name another file",
        )


def full(directory: Path) -> bool:
    """True when the filesystem of ``directory`` has (almost) no space left for this user."""
    try:
        st = os.statvfs(directory)
    except OSError:
        return False
    if st.f_blocks == 0:
        return False  # /proc, /sys: no capacity at all, so not full either
    free = (st.f_bfree if os.geteuid() == 0 else st.f_bavail) * st.f_frsize
    return free < FULL_BELOW or st.f_favail == 0


def full_reason(directory: Path) -> str:
    try:
        st = os.statvfs(directory)
        free = format_bytes((st.f_bfree if os.geteuid() == 0 else st.f_bavail) * st.f_frsize)
    except OSError:
        free = "no space"
    return (
        f"the filesystem of {directory} is full ({free} free); free some space, or name a "
        "file on another filesystem"
    )


def _code(exc: sqlite3.Error) -> int:
    return int(getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF  # the primary result code


def explain(exc: sqlite3.Error, path: Path) -> IolabError:
    """The error to show for an SQLite error while opening or writing ``path``."""
    code = _code(exc)
    directory = path.absolute().parent
    if code == sqlite3.SQLITE_FULL or (code == sqlite3.SQLITE_IOERR and full(directory)):
        return BadInput(FIELD, str(path), full_reason(directory))
    if code == sqlite3.SQLITE_CANTOPEN:
        why = _open_error(path)
        return BadInput(FIELD, str(path), f"SQLite cannot open it ({why})")
    if code == sqlite3.SQLITE_READONLY:
        return BadInput(FIELD, str(path), "it cannot be written (a read-only file or filesystem)")
    return IolabError(f"{path} is not a usable iolab results database: {exc}")


def _open_error(path: Path) -> str:
    """Why the file cannot be opened (or created), as the system says it."""
    if not path.exists():
        return can_write(path.absolute().parent) or "its directory takes no new files"
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError as exc:
        return exc.strerror or errno.errorcode.get(exc.errno or 0, str(exc))
    os.close(fd)
    return "its directory takes no journal files"
