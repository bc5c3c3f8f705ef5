"""Versioned schema migrations, recorded in the table ``schema_migrations``.

Each file ``migrations/NNNN_name.sql`` is applied once, in order. Everything missing is applied
in one exclusive transaction (``BEGIN IMMEDIATE``) that first re-reads what is recorded, so
commands started at once on a new database make the schema once: the others wait for the lock,
then find nothing left to do.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from importlib import resources

from iolab.errors import IolabError

_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


def available() -> list[Migration]:
    found = []
    for entry in resources.files("iolab.store").joinpath("migrations").iterdir():
        m = _NAME.match(entry.name)
        if m:
            found.append(Migration(int(m.group(1)), m.group(2), entry.read_text()))
    return sorted(found, key=lambda mig: mig.version)


def known() -> set[tuple[int, str]]:
    """(version, name) of every migration this iolab has: how its databases are recognised."""
    return {(m.version, m.name) for m in available()}


def current_version(conn: sqlite3.Connection) -> int:
    row = conn.execute(
        "SELECT name FROM sqlite_master WHERE type='table' AND name='schema_migrations'"
    ).fetchone()
    if row is None:
        return 0
    (version,) = conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").fetchone()
    return int(version)


CREATE_TABLE = (
    "CREATE TABLE IF NOT EXISTS schema_migrations "
    "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
)


def _recorded(conn: sqlite3.Connection) -> set[int]:
    if current_version(conn) == 0:
        return set()
    return {int(v) for (v,) in conn.execute("SELECT version FROM schema_migrations")}


def apply(conn: sqlite3.Connection, where: str) -> list[int]:
    """Bring the database to the newest schema; returns the versions applied.

    A database that has them all is only read. Otherwise every migration not yet recorded is
    applied in one ``BEGIN IMMEDIATE`` transaction, re-checked once the lock is held.
    """
    migrations = available()
    newest = migrations[-1].version if migrations else 0
    # Every migration not yet recorded, not only those above the newest recorded: branches
    # developed in parallel add numbers out of order (a database at 3 may still lack 2).
    if not _missing(conn, migrations, newest, where):
        return []
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(CREATE_TABLE)
        applied = []
        for mig in _missing(conn, migrations, newest, where):
            for statement in _statements(mig.sql):
                conn.execute(statement)
            conn.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                (mig.version, mig.name, datetime.now(UTC).isoformat(timespec="seconds")),
            )
            applied.append(mig.version)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return applied


@cache
def expected_schema() -> dict[str, tuple[str, ...]]:
    """Every table of the newest schema and its columns, as the migrations make them (applied
    once per process to a database in memory)."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        apply(conn, ":memory:")
        return tables(conn)
    finally:
        conn.close()


def tables(conn: sqlite3.Connection) -> dict[str, tuple[str, ...]]:
    """The tables of a database (SQLite's own left out) and their columns."""
    names = [
        str(name)
        for (name,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )
    ]
    return {
        name: tuple(str(r[1]) for r in conn.execute(f'PRAGMA table_info("{name}")'))
        for name in names
    }


def check_schema(conn: sqlite3.Connection) -> str | None:
    """What the database lacks of the newest schema, in words ("the table cells is missing");
    None when it has every table and column (more is allowed)."""
    have = tables(conn)
    lacking_tables: list[str] = []
    lacking_columns: list[str] = []
    for table, columns in expected_schema().items():
        if table not in have:
            lacking_tables.append(table)
            continue
        lacking_columns += [f"{table}.{c}" for c in columns if c not in have[table]]
    parts = []
    if lacking_tables:
        noun = "table" if len(lacking_tables) == 1 else "tables"
        parts.append(f"the {noun} {', '.join(lacking_tables)}")
    if lacking_columns:
        noun = "column" if len(lacking_columns) == 1 else "columns"
        parts.append(f"the {noun} {', '.join(lacking_columns)}")
    if not parts:
        return None
    verb = "is" if len(lacking_tables) + len(lacking_columns) == 1 else "are"
    return f"{' and '.join(parts)} {verb} missing"


def _missing(
    conn: sqlite3.Connection, migrations: list[Migration], newest: int, where: str
) -> list[Migration]:
    recorded = _recorded(conn)
    have = max(recorded, default=0)
    if have > newest:
        raise IolabError(
            f"{where} has schema version {have}, newer than this iolab knows ({newest}); "
            "upgrade iolab to read it"
        )
    return [mig for mig in migrations if mig.version not in recorded]


def _statements(sql: str) -> list[str]:
    """Split a migration into statements; sqlite3.complete_statement handles quoted semicolons."""
    out, buf = [], ""
    for line in sql.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            if buf.strip():
                out.append(buf.strip())
            buf = ""
    if buf.strip() and not buf.strip().startswith("--"):
        out.append(buf.strip())
    return out
