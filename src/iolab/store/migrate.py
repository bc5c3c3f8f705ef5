"""Versioned schema migrations, recorded in the table ``schema_migrations``.

Each file ``migrations/NNNN_name.sql`` is applied once, in its own transaction, in order.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
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


def current_version(conn: sqlite3.Connection) -> int:
    row = conn.execute(
        "SELECT name FROM sqlite_master WHERE type='table' AND name='schema_migrations'"
    ).fetchone()
    if row is None:
        return 0
    (version,) = conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").fetchone()
    return int(version)


def apply(conn: sqlite3.Connection, where: str) -> list[int]:
    """Bring the database to the newest schema; returns the versions applied."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations "
        "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )
    have = current_version(conn)
    migrations = available()
    newest = migrations[-1].version if migrations else 0
    if have > newest:
        raise IolabError(
            f"{where} has schema version {have}, newer than this iolab knows ({newest}); "
            "upgrade iolab to read it"
        )
    # Every migration not yet recorded, not only those above the newest recorded: branches
    # developed in parallel add numbers out of order (a database at 3 may still lack 2).
    recorded = {int(v) for (v,) in conn.execute("SELECT version FROM schema_migrations")}
    applied = []
    for mig in migrations:
        if mig.version in recorded:
            continue
        with conn:
            conn.execute("BEGIN")
            for statement in _statements(mig.sql):
                conn.execute(statement)
            conn.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                (mig.version, mig.name, datetime.now(UTC).isoformat(timespec="seconds")),
            )
        applied.append(mig.version)
    return applied


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
