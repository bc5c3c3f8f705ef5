"""What the user of a server iolab does not manage (``--dsn``) may do there.

A workload's :class:`~iolab.engines.external.Objects` say what it creates and what else it
needs: on PostgreSQL, CREATE on the schema its tables go to (the first of ``search_path`` that
exists) and USAGE on PL/pgSQL for its routines; on MariaDB, CREATE, DROP, INSERT and SELECT on
the database (CREATE ROUTINE for its routines, and ALTER ROUTINE and EXECUTE when the server
does not grant them to a routine's creator), the database privileges it names
(``Objects.privileges``) and SELECT on the tables of other schemas it reads
(``Objects.reads``). :func:`check` reads the user's rights before anything is recorded and
refuses a missing one in one line that names the grant (exit 2).

Two rights a run can do without, said once as a warning with what is lost: the checkpoint that
settles the load before the measured part (PostgreSQL's ``CHECKPOINT``: a superuser's, or
``pg_checkpoint``'s; InnoDB's needs ``SET GLOBAL``: SUPER), skipped without it
(:func:`may_checkpoint`, :func:`may_set_globals`), and SELECT on MariaDB's
performance_schema (the sessions' wait events, TPC-C's per-session TPM). ``--checkpoint-every``
needs the checkpoint's right: refused without it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from iolab.engines.external import ExternalTarget, Objects, create
from iolab.errors import BadInput, IolabError

CHECKPOINT_LOST = (
    "no checkpoint settles the load before the measured part, so the server's own "
    "checkpoints write the load's pages during it"
)


def check(
    target: ExternalTarget, objects: Objects, checkpoint_every: float | None = None
) -> list[str]:
    """Refuse (BadInput) a right the workload needs that the DSN's user lacks; the warnings
    for the optional rights it lacks. ``checkpoint_every``: the run requests checkpoints
    (``--checkpoint-every``), which then need their right. A server that cannot be reached
    is left to the run, which says so."""
    try:
        conn = create(target, objects).connect()
    except IolabError:
        return []
    try:
        if target.engine == "postgres":
            return _postgres(conn, target, objects, checkpoint_every)
        return _mariadb(conn, target, objects, checkpoint_every)
    finally:
        conn.close()


# --- PostgreSQL ----------------------------------------------------------------------------

_PG_CHECKPOINT = (
    "(SELECT rolsuper FROM pg_roles WHERE rolname = current_user) OR "
    "CASE WHEN to_regrole('pg_checkpoint') IS NULL THEN false "
    "ELSE pg_has_role(to_regrole('pg_checkpoint')::oid, 'USAGE') END"
)


def may_checkpoint(conn: Any) -> bool:
    """Whether this PostgreSQL session may run ``CHECKPOINT`` (a superuser, or a member of
    ``pg_checkpoint``, PostgreSQL 15+)."""
    row = conn.execute(f"SELECT {_PG_CHECKPOINT}").fetchone()
    return bool(row and row[0])


def _postgres(
    conn: Any, target: ExternalTarget, objects: Objects, checkpoint_every: float | None
) -> list[str]:
    row = conn.execute(
        "SELECT quote_ident(current_user), current_schema(), "
        "quote_ident(coalesce(current_schema(), '')), current_setting('search_path'), "
        "coalesce(has_schema_privilege(current_schema(), 'CREATE'), false), "
        "coalesce((SELECT has_language_privilege(oid, 'USAGE') FROM pg_language "
        "WHERE lanname = 'plpgsql'), false), "
        f"{_PG_CHECKPOINT}"
    ).fetchone()
    user, schema, quoted, path, create_ok, plpgsql_ok, checkpoint_ok = row
    if schema is None:
        _refuse(
            target,
            f"user {user} has no schema to create in: no schema of its search_path ({path}) "
            f"exists (CREATE SCHEMA {user} AUTHORIZATION {user}, or give it a search_path)",
        )
    if objects.tables and not create_ok:
        _refuse(
            target,
            f"user {user} lacks CREATE on schema {quoted} "
            f"(GRANT CREATE ON SCHEMA {quoted} TO {user})",
        )
    if objects.routines and not plpgsql_ok:
        _refuse(
            target,
            f"user {user} lacks USAGE on language plpgsql "
            f"(GRANT USAGE ON LANGUAGE plpgsql TO {user})",
        )
    if checkpoint_ok:
        return []
    lacks = (
        f"user {user} may not run CHECKPOINT (a superuser may, or GRANT pg_checkpoint TO {user})"
    )
    if checkpoint_every is not None:
        raise BadInput(
            "--checkpoint-every", f"{checkpoint_every:g}s", f"with --dsn {target.redacted}: {lacks}"
        )
    return [f"--dsn: {lacks}: {CHECKPOINT_LOST}"]


# --- MariaDB -------------------------------------------------------------------------------

# one line of SHOW GRANTS: its privileges, then the database and table (each quoted or *)
_GRANT = re.compile(
    r"^GRANT (?P<privs>.+?) ON (?P<db>`(?:[^`]|``)*`|\*)\.(?P<table>`(?:[^`]|``)*`|\*) TO ",
    re.S,
)
_SPLIT = re.compile(r",\s*(?![^()]*\))")  # commas outside a column list
ALL = "ALL PRIVILEGES"
SET_GLOBALS = ("SUPER", "SYSTEM_VARIABLES_ADMIN")  # MariaDB's; MySQL 8's dynamic privilege


@dataclass
class Grants:
    """The privileges of SHOW GRANTS (the user's and its enabled roles'), by level."""

    server: set[str] = field(default_factory=set)
    databases: list[tuple[str, set[str]]] = field(default_factory=list)  # (LIKE pattern, privs)
    tables: list[tuple[str, str, set[str]]] = field(default_factory=list)

    def on_database(self, privilege: str, database: str) -> bool:
        if privilege in self.server or ALL in self.server:
            return True
        return any(
            (privilege in privs or ALL in privs) and _like(pattern, database)
            for pattern, privs in self.databases
        )

    def on_table(self, privilege: str, database: str, table: str) -> bool:
        if self.on_database(privilege, database):
            return True
        return any(
            (privilege in privs or ALL in privs) and (db, name) == (database, table)
            for db, name, privs in self.tables
        )


def grants(cur: Any) -> Grants | None:
    """The current user's privileges (None: SHOW GRANTS said nothing iolab can read)."""
    cur.execute("SHOW GRANTS")
    found = Grants()
    read = False
    for (line,) in cur.fetchall():
        m = _GRANT.match(str(line))
        if m is None:
            continue
        read = True
        privs = {p.strip().upper() for p in _SPLIT.split(m["privs"]) if "(" not in p}
        db, table = _unquote(m["db"]), _unquote(m["table"])
        if db == "*":
            found.server |= privs
        elif table == "*":
            found.databases.append((db, privs))
        else:
            found.tables.append((db, table, privs))
    return found if read else None


def may_set_globals(cur: Any) -> bool:
    """Whether this MariaDB session may ``SET GLOBAL`` (SUPER), as InnoDB's checkpoint does."""
    found = grants(cur)
    return found is None or any(p in found.server for p in (*SET_GLOBALS, ALL))


def _mariadb(
    conn: Any, target: ExternalTarget, objects: Objects, checkpoint_every: float | None
) -> list[str]:
    with conn.cursor() as cur:
        cur.execute(
            "SELECT CURRENT_USER(), DATABASE(), @@automatic_sp_privileges, @@performance_schema"
        )
        current, database, automatic, performance_schema = cur.fetchone()
        found = grants(cur)
    conn.rollback()
    if found is None:  # not a form iolab reads: the run says what it is refused
        return []
    name, _, host = str(current).rpartition("@")
    user = f"'{name}'@'{host}'"
    need = ["SELECT", "INSERT", "CREATE", "DROP"] if objects.tables else []
    if objects.routines:
        need.append("CREATE ROUTINE")
        if not int(automatic):  # a routine's creator is not granted its ALTER and EXECUTE
            need += ["ALTER ROUTINE", "EXECUTE"]
    need += [p for p in objects.privileges if p not in need]
    missing = [p for p in need if not found.on_database(p, database)]
    if missing:
        privs = ", ".join(missing)
        _refuse(
            target,
            f"user {user} lacks {privs} on database {database} "
            f"(GRANT {privs} ON `{database}`.* TO {user})",
        )
    for read in objects.reads:
        db, _, table = read.partition(".")
        if not found.on_table("SELECT", db, table):
            _refuse(
                target, f"user {user} lacks SELECT on {read} (GRANT SELECT ON {read} TO {user})"
            )
    warnings = []
    if not any(p in found.server for p in (*SET_GLOBALS, ALL)):
        lacks = (
            f"user {user} lacks SUPER, which InnoDB's checkpoint needs to SET GLOBAL "
            f"innodb_max_dirty_pages_pct (GRANT SUPER ON *.* TO {user})"
        )
        if checkpoint_every is not None:
            raise BadInput(
                "--checkpoint-every",
                f"{checkpoint_every:g}s",
                f"with --dsn {target.redacted}: {lacks}",
            )
        warnings.append(f"--dsn: {lacks}: {CHECKPOINT_LOST}")
    if int(performance_schema) and not found.on_database("SELECT", "performance_schema"):
        warnings.append(
            f"--dsn: user {user} lacks SELECT on performance_schema (GRANT SELECT ON "
            f"performance_schema.* TO {user}): the run records no wait events of its sessions, "
            "and TPC-C's TPM is the client's count"
        )
    return warnings


def _refuse(target: ExternalTarget, why: str) -> None:
    raise BadInput("--dsn", target.redacted, why)


def _unquote(name: str) -> str:
    return name if name == "*" else name[1:-1].replace("``", "`")


def _like(pattern: str, name: str) -> bool:
    """Whether ``name`` matches a grant's database pattern (SQL LIKE: ``%``, ``_``, ``\\``)."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        out.append(".*" if c == "%" else "." if c == "_" else re.escape(c))
        i += 1
    return re.fullmatch("".join(out), name, re.S) is not None
