"""Where a client program of the user's (pgbench, sysbench) reaches an engine iolab started.

A server iolab provisions listens on a private unix socket only, trusts local connections and
holds one benchmark database; :func:`endpoint` says where that socket is and whom to connect as,
in the words each wire protocol's clients take (an embedded engine has no endpoint). Which
engines a driver drives is the driver's to say (``workloads/<driver>/run.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from iolab.errors import IolabError

POSTGRES = "postgres"  # PostgreSQL's wire protocol (libpq clients)
MYSQL = "mysql"  # MySQL's (MariaDB's) wire protocol


@dataclass(frozen=True)
class Endpoint:
    """A running server's private socket, its user and its benchmark database (no password:
    local connections are trusted)."""

    protocol: str  # POSTGRES or MYSQL
    socket: Path  # PostgreSQL: the socket's directory; MySQL: the socket file
    port: int  # PostgreSQL names its socket file by the port; MySQL ignores it on a socket
    user: str
    database: str


def endpoint(engine: object) -> Endpoint:
    """The endpoint of a provisioned, running engine of iolab's."""
    from iolab.engines.mariadb import DATABASE as MARIADB_DATABASE
    from iolab.engines.mariadb import MariaDBEngine
    from iolab.engines.postgres import DATABASE as POSTGRES_DATABASE
    from iolab.engines.postgres import PORT, PostgresEngine

    if isinstance(engine, PostgresEngine) and engine.socket_dir is not None:
        return Endpoint(POSTGRES, engine.socket_dir, PORT, engine.user.name, POSTGRES_DATABASE)
    if isinstance(engine, MariaDBEngine) and engine.datadir is not None:
        return Endpoint(MYSQL, engine.socket, 3306, "root", MARIADB_DATABASE)
    raise IolabError(f"{type(engine).__name__} has no socket a client program can reach")


def bundled(engine: object, program: str) -> Path | None:
    """A client program that comes with the engine's own binaries (PostgreSQL's pgbench beside
    its postgres), or None when the engine brings none."""
    from iolab.engines.postgres import PostgresEngine

    if isinstance(engine, PostgresEngine):
        return engine.bin_dir / program
    return None
