"""A server iolab does not manage, reached through ``--dsn``: PostgreSQL or MariaDB/MySQL.

iolab neither provisions, starts nor stops it, so the layout is the server's own: layout options
are refused by :func:`check_external_layout`. What the workload creates in the target database
(its :class:`Objects`: the population table, its procedure and function) must not exist
beforehand, since iolab never drops what it did not create; ``destroy()`` drops exactly those
objects. The password of the DSN is
used to connect and nowhere else: :attr:`ExternalTarget.redacted` (built by the rules of
:func:`iolab.redaction.redact`) is what reaches messages, results, logs and the driver's URL.
"""

from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import parse_qs, unquote, urlsplit, urlunsplit

from iolab.engines.core_target import LibpqTarget, MariaDBTarget
from iolab.engines.interface import Layout, Placement
from iolab.errors import BadInput, IolabError, MissingTool
from iolab.redaction import is_secret_key, redact

SCHEMES = {
    "postgresql": "postgres",
    "postgres": "postgres",
    "mysql": "mariadb",
    "mariadb": "mariadb",
}
HOW_TO_GET_DRIVERS = "pip install 'iolab[engines]' (psycopg and pymysql)"


@dataclass(frozen=True)
class Objects:
    """What a workload creates in a server's database, by name: refused when found before the
    run (iolab never drops what it did not create), dropped after it. And what else its user
    must be granted there (:mod:`iolab.engines.rights`): MariaDB's database privileges beyond
    creating, filling and dropping these (``privileges``), SELECT on tables of other schemas
    (``reads``, ``schema.table``)."""

    tables: tuple[str, ...] = ()
    procedures: tuple[str, ...] = ()
    functions: tuple[str, ...] = ()
    privileges: tuple[str, ...] = ()
    reads: tuple[str, ...] = ()

    @property
    def routines(self) -> tuple[str, ...]:
        return (*self.procedures, *self.functions)


@dataclass(frozen=True)
class ExternalTarget:
    """A parsed DSN. ``redacted`` is the DSN without any password: the only form ever shown,
    stored, or handed to the driver; the passwords travel apart, as connection arguments."""

    engine: str  # postgres | mariadb
    redacted: str
    user: str | None = None
    host: str | None = None
    port: int | None = None
    database: str | None = None
    password: str | None = field(default=None, repr=False)
    ssl_password: str | None = field(default=None, repr=False)  # libpq's sslpassword
    unix_socket: str | None = None

    @property
    def words(self) -> str:
        """The server as a run's name says it, without a password or a ':': ``server=USER@HOST
        port=PORT db=DB`` (a socket's directory for its host, libpq's ``?host=`` too)."""
        options = parse_qs(urlsplit(self.redacted).query)
        where = self.unix_socket or self.host or next(iter(options.get("host", [])), "")
        port = self.port or next(iter(options.get("port", [])), None)
        out = f"server={self.user + '@' if self.user else ''}{where or 'localhost'}"
        out += f" port={port}" if port else ""
        return out + (f" db={self.database}" if self.database else "")


URL_FORMS = "postgresql://USER@HOST:PORT/DB or mysql://USER@HOST:PORT/DB"
PASSWORD_HELP = (
    "keep the password out of the command line: PGPASSWORD, PGPASSFILE or ~/.pgpass "
    "(PostgreSQL), MYSQL_PWD or ~/.my.cnf (MariaDB)"
)
_BAD_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")


def parse_dsn(text: str) -> ExternalTarget:
    """``postgresql://user:pw@host:port/db`` or ``mysql://user:pw@host:port/db``.

    A unix socket: ``postgresql:///db?host=/run/postgresql`` (libpq's form) or
    ``mysql://user@localhost/db?unix_socket=/run/mysqld/mysqld.sock``. A password may come in
    the userinfo or as ``?password=`` (``passwd``, ``pwd``; ``sslpassword`` for libpq); it is
    taken out of the DSN here, and every error names the DSN without it.
    """
    text = text.strip()
    shown = redact(text)
    if "://" not in text:
        raise BadInput(
            "--dsn",
            shown,
            f"a URL: {URL_FORMS} (libpq's key=value form is not taken)",
        )
    if _BAD_PERCENT.search(text):
        raise BadInput(
            "--dsn", shown, "percent-encode special characters as %XX (a '%' itself is %25)"
        )
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:  # the reason may quote a piece of the password: not shown
        raise BadInput(
            "--dsn",
            shown,
            f"a URL: {URL_FORMS}, a numeric port, and '@', '/', '?', '#' in the user and "
            "password percent-encoded (%40, %2F, %3F, %23)",
        ) from None
    if "@" in parts.path + parts.query + parts.fragment:
        raise BadInput(
            "--dsn",
            shown,
            "a URL whose user and password percent-encode '@', '/', '?' and '#' "
            "(%40, %2F, %3F, %23)",
        )
    engine = SCHEMES.get(parts.scheme.lower())
    if engine is None:
        raise BadInput(
            "--dsn",
            shown,
            f"{URL_FORMS} (schemes: " + ", ".join(sorted(SCHEMES)) + ")",
        )
    kept: list[str] = []
    secrets: dict[str, str] = {}
    for item in parts.query.split("&") if parts.query else []:
        key, _, value = item.partition("=")
        if is_secret_key(key):
            secrets[key.strip().lower()] = unquote(value)
        else:
            kept.append(item)
    query = "&".join(kept)
    netloc = parts.hostname or ""
    if ":" in netloc:  # an IPv6 address
        netloc = f"[{netloc}]"
    if parts.username:
        netloc = f"{parts.username}@{netloc}"
    if port is not None:
        netloc = f"{netloc}:{port}"
    redacted = urlunsplit((parts.scheme, netloc, parts.path, query, ""))
    database = unquote(parts.path.lstrip("/")) or None
    if engine == "mariadb" and not database:
        raise BadInput("--dsn", redacted, "name the database: mysql://user@host/DATABASE")
    password = unquote(parts.password) if parts.password is not None else None
    for key in ("password", "passwd", "pwd"):
        password = password if password is not None else secrets.get(key)
    options = parse_qs(query)
    return ExternalTarget(
        engine=engine,
        redacted=redacted,
        user=unquote(parts.username) if parts.username else None,
        host=parts.hostname,
        port=port,
        database=database,
        password=password,
        ssl_password=secrets.get("sslpassword"),
        unix_socket=options["unix_socket"][0] if "unix_socket" in options else None,
    )


def check_external_layout(layout: Layout, pg_bin: Path | None) -> None:
    """With ``--dsn`` the server's layout is its own: refuse every layout option given."""
    given: list[tuple[str, object]] = []
    if layout.data_dirs:
        given.append(("--data-dir", ", ".join(str(d) for d in layout.data_dirs)))
    if layout.files != 1:
        given.append(("--files", layout.files))
    if layout.wal_dir is not None:
        given.append(("--wal-dir", layout.wal_dir))
    if layout.temp_dir is not None:
        given.append(("--temp-dir", layout.temp_dir))
    if layout.settings:
        given.append(("--set", ", ".join(f"{k}={v}" for k, v in layout.settings.items())))
    if pg_bin is not None:
        given.append(("--pg-bin", pg_bin))
    if given:
        name, value = given[0]
        raise BadInput(
            name,
            str(value),
            "nothing: with --dsn iolab does not manage the server, so its layout and settings "
            "are the server's own (configure them on the server)",
        )


class _Unmanaged:
    """What a server reached through a DSN shares: iolab neither starts nor stops it, and its
    layout is the server's own."""

    def __init__(self, target: ExternalTarget, objects: Objects) -> None:
        self.target = target
        self.objects = objects
        self._layout = Layout(data_dirs=())
        self._made = False
        # the server runs on this machine (a unix socket, a loopback address): its host and
        # devices are this one's; set by provision() from the connection it made
        self.local = False

    @property
    def layout(self) -> Layout:
        return self._layout

    def start(self) -> None:
        """The server runs already."""

    def load_connect(self) -> Any:
        return self.connect()  # type: ignore[attr-defined]

    def stop(self) -> None:
        """iolab does not stop a server it did not start."""

    def died(self) -> str | None:
        """Not known: iolab did not start it (a lost connection says what happened)."""
        return None


# which of a workload's objects the database holds (visible in the search path)
_PG_FOUND = (
    "SELECT c.relname FROM pg_class c WHERE c.relname = ANY(%(t)s) "
    "AND pg_table_is_visible(c.oid) UNION ALL "
    "SELECT p.proname FROM pg_proc p WHERE p.proname = ANY(%(r)s) "
    "AND pg_function_is_visible(p.oid)"
)


class ExternalPostgres(_Unmanaged):
    """A PostgreSQL server reached through a DSN; the Engine protocol without provisioning."""

    name: ClassVar[str] = "postgres"
    title: ClassVar[str] = "PostgreSQL"

    def __init__(self, target: ExternalTarget, objects: Objects) -> None:
        super().__init__(target, objects)
        self._tablespace = "pg_default"
        self._version: str | None = None  # read by provision(): a server keeps its version

    def connect(self) -> Any:
        try:
            import psycopg
        except ImportError:
            raise MissingTool("psycopg", HOW_TO_GET_DRIVERS) from None
        t = self.target
        secrets: dict[str, Any] = {"password": t.password, "sslpassword": t.ssl_password}
        try:
            return psycopg.connect(
                t.redacted,
                connect_timeout=10,
                **{k: v for k, v in secrets.items() if v is not None},
            )
        except psycopg.Error as exc:
            raise IolabError(f"cannot connect to {t.redacted}: {_first_line(exc)}") from None

    def core_target(self) -> LibpqTarget:
        """libpq's keywords for a connection as :meth:`connect` makes, for the compiled driver
        core (iolab.drivercore): the DSN without its password, the passwords apart (kept in
        memory only, never shown)."""
        t = self.target
        secrets = {"password": t.password, "sslpassword": t.ssl_password}
        return LibpqTarget(
            {
                "dbname": t.redacted,
                "connect_timeout": "10",
                **{k: v for k, v in secrets.items() if v is not None},
            }
        )

    def provision(self) -> Placement:
        """Check that the server takes us and holds none of iolab's objects; create nothing."""
        with self.connect() as conn:
            found = conn.execute(_PG_FOUND, self._names()).fetchall()
            _refuse_existing([str(r[0]) for r in found], self.target)
            row = conn.execute(
                "SELECT coalesce(t.spcname, 'pg_default'), current_setting('server_version') "
                "FROM pg_database d LEFT JOIN pg_tablespace t ON t.oid = d.dattablespace "
                "WHERE d.datname = current_database()"
            ).fetchone()
            self._tablespace = str(row[0]) if row else "pg_default"
            self._version = f"PostgreSQL {row[1]}" if row else None
            self.local = _pg_local(conn)
            data, wal = _local_pg_dirs(conn) if self.local else ((), None)
        self._made = True
        return Placement(data=data, wal=wal, temp=None, log=None, created=())

    def _names(self) -> dict[str, list[str]]:
        return {"t": list(self.objects.tables), "r": list(self.objects.routines)}

    def destroy(self) -> None:
        """Drop what the workload created, and only when provision() found none of it before:
        those of its objects that exist now (a run that failed early made fewer)."""
        if not self._made:
            return
        self._made = False
        with self.connect() as conn:
            made = {str(r[0]) for r in conn.execute(_PG_FOUND, self._names()).fetchall()}
            for name in self.objects.procedures:
                if name in made:
                    conn.execute(f"DROP PROCEDURE IF EXISTS {name}")
            for name in self.objects.tables:
                if name in made:
                    conn.execute(f"DROP TABLE IF EXISTS {name} CASCADE")
            for name in self.objects.functions:
                if name in made:
                    conn.execute(f"DROP FUNCTION IF EXISTS {name}")

    def spaces(self) -> list[str]:
        """The database's own tablespace (read by provision())."""
        return [self._tablespace]

    def version(self) -> str:
        """The server's version, as provision() read it (one connection fewer per run)."""
        if self._version is not None:
            return self._version
        with self.connect() as conn:
            row = conn.execute("SELECT current_setting('server_version')").fetchone()
        return f"PostgreSQL {row[0]}" if row else "PostgreSQL"

    def effective_settings(self) -> dict[str, str]:
        from iolab.engines.postgres import INTERESTING

        with self.connect() as conn:
            rows = conn.execute(
                "SELECT name, current_setting(name) FROM pg_settings WHERE name = ANY(%s) "
                "ORDER BY name",
                (list(INTERESTING),),
            ).fetchall()
        return {str(k): str(v) for k, v in rows}


class ExternalMariaDB(_Unmanaged):
    """A MariaDB/MySQL server reached through a DSN; the Engine protocol without provisioning."""

    name: ClassVar[str] = "mariadb"
    title: ClassVar[str] = "MariaDB"

    def connect(self, *, local_infile: bool = False) -> Any:
        """A connection to the server's database; ``local_infile``: it may send files of this
        process to the server (``LOAD DATA LOCAL INFILE``, the loads of TPC-C and TPC-H)."""
        try:
            import pymysql
        except ImportError:
            raise MissingTool("pymysql", HOW_TO_GET_DRIVERS) from None
        t = self.target
        kwargs: dict[str, Any] = {
            "user": t.user or os.environ.get("USER", "root"),
            "database": t.database,
            "autocommit": False,
            "connect_timeout": 10,
            "local_infile": local_infile,
        }
        password = t.password if t.password is not None else os.environ.get("MYSQL_PWD")
        if password is not None:
            kwargs["password"] = password
        my_cnf = Path.home() / ".my.cnf"
        if my_cnf.is_file():  # its [client] section fills in what the DSN leaves out
            kwargs["read_default_file"] = str(my_cnf)
        if t.unix_socket:
            kwargs["unix_socket"] = t.unix_socket
        else:
            kwargs["host"] = t.host or "localhost"
            kwargs["port"] = t.port or 3306
        try:
            return pymysql.connect(**kwargs)
        except pymysql.MySQLError as exc:
            raise IolabError(f"cannot connect to {t.redacted}: {_first_line(exc)}") from None

    def core_target(self) -> MariaDBTarget:
        """What the compiled driver core (iolab.drivercore) connects with, as :meth:`connect`
        does (the password kept in memory only, never shown)."""
        t = self.target
        out = {"user": t.user or os.environ.get("USER", "root")}
        if t.database:
            out["database"] = t.database
        password = t.password if t.password is not None else os.environ.get("MYSQL_PWD")
        if password is not None:
            out["password"] = password
        my_cnf = Path.home() / ".my.cnf"
        if my_cnf.is_file():
            out["read_default_file"] = str(my_cnf)
        if t.unix_socket:
            out["unix_socket"] = t.unix_socket
        else:
            out["host"] = t.host or "localhost"
            out["port"] = str(t.port or 3306)
        return MariaDBTarget(out)

    def load_connect(self) -> Any:
        """A connection that may send the client's files (``LOAD DATA LOCAL INFILE``)."""
        return self.connect(local_infile=True)

    def _query(self, statement: str, args: Any = None) -> list[tuple[Any, ...]]:
        conn = self.connect()
        try:
            with conn.cursor() as cur:
                cur.execute(statement, args)
                return [tuple(r) for r in cur.fetchall()]
        finally:
            conn.close()

    def _found(self) -> set[str]:
        """Which of the workload's objects the database holds."""
        tables, routines = self.objects.tables, self.objects.routines
        found = self._query(
            "SELECT table_name FROM information_schema.tables "
            f"WHERE table_schema = DATABASE() AND table_name IN ({_marks(tables)}) UNION ALL "
            "SELECT routine_name FROM information_schema.routines "
            f"WHERE routine_schema = DATABASE() AND routine_name IN ({_marks(routines)})",
            (*tables, *routines),
        )
        return {str(r[0]) for r in found}

    def provision(self) -> Placement:
        _refuse_existing(sorted(self._found()), self.target)
        self.local = self._reached_locally()
        rows = self._query("SELECT @@datadir, @@innodb_log_group_home_dir")
        datadir, logdir = rows[0] if rows and self.local else (None, None)
        data = tuple(p for p in [_existing(datadir)] if p is not None)
        wal = _existing(logdir) if logdir not in (None, "", "./") else (data[0] if data else None)
        self._made = True
        return Placement(data=data, wal=wal, temp=None, log=None, created=())

    def _reached_locally(self) -> bool:
        """Through a unix socket or a loopback address (as the connection made it: ~/.my.cnf
        may name them)."""
        conn = self.connect()
        try:
            return local_host(conn.unix_socket) or local_host(conn.host)
        finally:
            conn.close()

    def destroy(self) -> None:
        if not self._made:
            return
        self._made = False
        made = self._found()  # those the run made: it may have failed before the rest
        conn = self.connect()
        try:
            with conn.cursor() as cur:
                for name in self.objects.procedures:
                    if name in made:
                        cur.execute(f"DROP PROCEDURE IF EXISTS {name}")
                for name in self.objects.functions:
                    if name in made:
                        cur.execute(f"DROP FUNCTION IF EXISTS {name}")
                for name in self.objects.tables:
                    if name in made:
                        cur.execute(f"DROP TABLE IF EXISTS {name}")
        finally:
            conn.close()

    def spaces(self) -> list[str]:
        """None: the tables stay where the server puts them."""
        return []

    def version(self) -> str:
        return str(self._query("SELECT VERSION()")[0][0])

    def effective_settings(self) -> dict[str, str]:
        from iolab.engines.mariadb import REPORTED_VARIABLES

        rows = self._query("SHOW GLOBAL VARIABLES")
        return {str(k): str(v) for k, v in rows if str(k) in REPORTED_VARIABLES}


def create(target: ExternalTarget, objects: Objects) -> ExternalPostgres | ExternalMariaDB:
    """The server of ``target``, where a workload makes ``objects``."""
    if target.engine == "postgres":
        return ExternalPostgres(target, objects)
    return ExternalMariaDB(target, objects)


def _marks(names: tuple[str, ...]) -> str:
    """As many placeholders as names (a list no name matches when there are none)."""
    return ", ".join(["%s"] * len(names)) or "NULL"


def _refuse_existing(names: list[str], target: ExternalTarget) -> None:
    if names:
        raise IolabError(
            f"{target.redacted} already holds {', '.join(sorted(set(names)))}; iolab never drops "
            "what it did not create: drop them yourself (a run killed before it cleaned up "
            "leaves them) or use another database"
        )


def local_host(host: str | None) -> bool:
    """A server this machine reaches on itself: a unix socket (a path, or libpq's abstract
    ``@name``), ``localhost``, or a loopback address. Another name is not resolved here: remote."""
    if not host:
        return False
    if host.startswith(("/", "@")):
        return True
    name = host.strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name.partition("%")[0]).is_loopback
    except ValueError:
        return False


def dsn_is_local(target: ExternalTarget) -> bool:
    """What the DSN alone says of where its server runs (a run records what its connection
    found: provision() sets ``local``); libpq's ``?host=`` counts, a DSN naming no host not
    (libpq's defaults, PGHOST, are the connecting process's)."""
    if target.unix_socket:  # MariaDB's: taken over the host
        return local_host(target.unix_socket)
    hosts = parse_qs(urlsplit(target.redacted).query).get("host", [])
    named = [h for h in [target.host and unquote(target.host), *hosts] if h]
    return bool(named) and all(local_host(h) for part in named for h in part.split(","))


def _pg_local(conn: Any) -> bool:
    """The connection went through a unix socket or to a loopback address (libpq's own
    answer: a DSN naming no host takes its defaults, PGHOST or the socket directory)."""
    import psycopg

    info = conn.info
    try:
        addr = info.hostaddr  # the address connected to (libpq 12+); "" over a socket
    except psycopg.NotSupportedError:
        addr = ""
    return local_host(info.host) or local_host(addr)


def _existing(path: object) -> Path | None:
    """A server directory, when this machine can see it (the server is local)."""
    if not isinstance(path, str) or not path:
        return None
    p = Path(path)
    try:
        return p.resolve() if p.is_dir() else None
    except OSError:
        return None


def _local_pg_dirs(conn: Any) -> tuple[tuple[Path, ...], Path | None]:
    """The data directory and pg_wal of a local server, when we may read data_directory."""
    try:
        row = conn.execute("SELECT current_setting('data_directory')").fetchone()
    except Exception:
        conn.rollback()
        return (), None
    data = _existing(row[0]) if row else None
    if data is None:
        return (), None
    wal = _existing(str(data / "pg_wal"))
    return (data,), wal


def _first_line(exc: BaseException) -> str:
    text = redact(str(exc)).strip()
    return text.splitlines()[0] if text else type(exc).__name__
