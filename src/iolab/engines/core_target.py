"""What a server engine gives the compiled driver core (iolab.drivercore), which is a client of
its own: the ``drivercore.Target`` an engine's ``core_target()`` returns. The parameters the
core's connections take, as the engine's own ``connect()`` opens them, and the wording of a
failed statement, as the Python path's psycopg and PyMySQL word it (so that a run's error line
does not depend on the core). Client programs (pgbench, sysbench) reach an engine through
:mod:`iolab.engines.clients` instead."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class LibpqTarget:
    """A PostgreSQL server for the compiled core: libpq's connection keywords (``dbname`` may be
    a whole DSN, as libpq takes it)."""

    keywords: dict[str, str] = field(repr=False)  # a password among them: never shown
    library = "postgres"

    def params(self) -> dict[str, str]:
        return dict(self.keywords)

    def error(self, code: int | None, message: str) -> str:
        """As psycopg words it: the server's message."""
        return message


@dataclass(frozen=True)
class MariaDBTarget:
    """A MariaDB (or MySQL) server for the compiled core: libmariadb's connection parameters
    (``unix_socket`` or ``host`` and ``port``, ``user``, ``password``, ``database``, and
    ``read_default_file``: a ``~/.my.cnf`` whose ``[client]`` section fills in the rest, as
    PyMySQL reads it)."""

    keywords: dict[str, str] = field(repr=False)  # a password among them: never shown
    library = "mariadb"

    def params(self) -> dict[str, str]:
        return dict(self.keywords)

    def error(self, code: int | None, message: str) -> str:
        """As PyMySQL words it: ``(code, 'message')``; the bare message where the core has no
        error number (its own failures)."""
        return message if code is None else str((code, message))
