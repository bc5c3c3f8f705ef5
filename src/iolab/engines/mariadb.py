"""MariaDB with InnoDB, provisioned on a layout and run on a private unix socket.

Every instance is fresh: a data directory made by mariadb-install-db, the redo log
(``innodb_log_group_home_dir``) and ``tmpdir`` where the layout puts them, and one directory per
data file for the partitions of benchmark tables (``PARTITION ... DATA DIRECTORY = '<dir>'``).
The server reads only the option file iolab writes (``--defaults-file``), never the system's
configuration, and listens on no TCP port.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

from iolab import ownership
from iolab.engines.core_target import MariaDBTarget
from iolab.engines.interface import Layout, Placement, Provisioned, check_dirs
from iolab.engines.server_process import (
    ServerUser,
    check_reachable,
    how_it_ended,
    make_owned_dir,
    run_as,
    server_user,
    spawn,
)
from iolab.errors import BadInput, IolabError, MissingTool, RunFailed
from iolab.process import run, tail

PACKAGE = "mariadb-server"
HOW = "install it: apt-get install mariadb-server"
SEARCH_DIRS = (Path("/usr/sbin"), Path("/usr/bin"))

# Owned-name kinds of what an instance creates, one per role.
KIND_DATA = "mariadb"
KIND_REDO = "mariadbredo"
KIND_PART = "mariadbpart"
KIND_TEMP = "mariadbtmp"
KIND_RUN = "mariadbrun"
KINDS = (KIND_DATA, KIND_REDO, KIND_PART, KIND_TEMP, KIND_RUN)

DATABASE = "iolab"
START_TIMEOUT = 60.0
STOP_TIMEOUT = 60.0
INSTALL_TIMEOUT = 300.0
SOCKET_PATH_MAX = 107  # sun_path holds 108 bytes including the terminating NUL

# Variables iolab sets from the layout; a --set may not move them elsewhere, or destroy() would
# not find what the server wrote.
LAYOUT_VARIABLES = frozenset(
    {
        "basedir",
        "bind_address",
        "datadir",
        "innodb_data_home_dir",
        "innodb_log_group_home_dir",
        "innodb_tmpdir",
        "innodb_undo_directory",
        "log_error",
        "pid_file",
        "port",
        "skip_networking",
        "socket",
        "tmpdir",
        "user",
    }
)

# Reported by effective_settings() besides every variable named in the layout's settings.
REPORTED_VARIABLES = (
    "innodb_buffer_pool_size",
    "innodb_log_file_size",
    "innodb_flush_log_at_trx_commit",
    "innodb_flush_method",
    "innodb_doublewrite",
    "innodb_page_size",
    "innodb_log_group_home_dir",
    "innodb_file_per_table",
    "innodb_compression_algorithm",
    "innodb_compression_level",
    "tmpdir",
)

# Characters an option file and mariadb-install-db's shell parsing cannot carry in a path.
_UNSAFE_PATH = re.compile(r"[\s\"'\\#]")
_LOG_PREFIX = re.compile(r"^.*?\[(?:ERROR|Warning|Note)\]\s*(?:Buffered error:\s*)?")
# What ``mariadbd --verbose --help`` says of a --name=value it will not take.
_REFUSED = re.compile(
    r"Error while setting value|Unknown suffix|Incorrect \w+ value|due to invalid value|"
    r"Invalid value|unknown variable|unknown option"
)


def _find_binary(names: Sequence[str]) -> str:
    for name in names:
        found = shutil.which(name)
        if found:
            return found
        for directory in SEARCH_DIRS:
            candidate = directory / name
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(candidate)
    raise MissingTool(PACKAGE, HOW)


def check_installed() -> None:
    """Refuse a MariaDB without its server, its install script or its driver (MissingTool,
    saying how to get them), before anything is made or recorded."""
    _find_binary(("mariadbd", "mysqld"))
    _find_binary(("mariadb-install-db", "mysql_install_db"))
    _pymysql()


def _variable_name(name: str) -> str:
    """The canonical spelling of a server variable: lower case, underscores."""
    return name.strip().lower().replace("-", "_")


@cache
def server_variables(mariadbd: str) -> frozenset[str]:
    """Every variable the server accepts, as listed by ``mariadbd --verbose --help``."""
    out = run([mariadbd, "--no-defaults", "--verbose", "--help"], timeout=60).stdout
    names: set[str] = set()
    in_table = False
    for line in out.splitlines():
        if not in_table:
            in_table = line.startswith("-----")  # the rule under the "Variables" heading
            continue
        if not line.strip():
            break
        names.add(_variable_name(line.split()[0]))
    if not names:
        raise IolabError(f"could not read the list of server variables from {mariadbd} --help")
    return frozenset(names)


def check_settings(settings: Mapping[str, str], mariadbd: str | None = None) -> None:
    """Refuse a variable MariaDB does not know, one iolab sets itself, or a value the server
    would not take, before anything is created: BadInput naming ``--set NAME``.

    Values are checked by the server itself: ``mariadbd --no-defaults --NAME=VALUE ...
    --verbose --help`` parses them as a start would and says which it refuses.
    """
    if not settings:
        return
    mariadbd = mariadbd or _find_binary(("mariadbd", "mysqld"))
    known = server_variables(mariadbd)
    for name, value in settings.items():
        canonical = _variable_name(name)
        bare = canonical.removeprefix("skip_")
        if canonical not in known and bare not in known:
            raise BadInput(
                "--set",
                name,
                f"{name!r} is not a MariaDB server variable (see `mariadbd --verbose --help`)",
            )
        if canonical in LAYOUT_VARIABLES or bare in LAYOUT_VARIABLES:
            raise BadInput(
                "--set",
                name,
                f"iolab sets {canonical} itself from the layout "
                "(--data-dir, --wal-dir, --temp-dir); set those instead",
            )
        if any(c in str(value) for c in "\n\r#\\"):
            raise BadInput(
                "--set",
                f"{name}={value}",
                "MariaDB option files cannot carry this value; use one line without '#' "
                "or backslashes",
            )
    _check_values(mariadbd, dict(settings))


@cache
def _refused_values(mariadbd: str, options: tuple[str, ...]) -> tuple[str, ...]:
    """What ``mariadbd --verbose --help`` says it refused of ``options`` (--name=value)."""
    said = run(
        [mariadbd, "--no-defaults", *options, "--verbose", "--help"], check=False, timeout=60
    ).stderr
    return tuple(line for line in said.splitlines() if _REFUSED.search(line))


def _check_values(mariadbd: str, settings: dict[str, str]) -> None:
    options = tuple(f"--{_variable_name(k).replace('_', '-')}={v}" for k, v in settings.items())
    for line in _refused_values(mariadbd, options):
        for name, value in settings.items():
            dashed = _variable_name(name).replace("_", "-")
            if dashed in line.replace("_", "-"):
                said = _LOG_PREFIX.sub("", line).strip()
                raise BadInput(f"--set {name}", value, f"MariaDB refuses it: {said}")
        raise BadInput("--set", settings, f"MariaDB refuses it: {_LOG_PREFIX.sub('', line)}")


def _pymysql() -> Any:
    try:
        import pymysql
    except ImportError as exc:
        raise MissingTool(
            "pymysql", "install iolab's engines extra: pip install 'iolab[engines]'"
        ) from exc
    return pymysql


def _alive(proc: subprocess.Popen[bytes] | None) -> bool:
    return proc is not None and proc.poll() is None


class MariaDBEngine(Provisioned):
    """A MariaDB server on a layout; see :mod:`iolab.engines.interface` for the lifecycle."""

    name: ClassVar[str] = "mariadb"
    title: ClassVar[str] = "MariaDB"

    def __init__(self, layout: Layout, *, workdir: Path | None = None) -> None:
        self._layout = layout
        self._workdir = workdir
        self._user: ServerUser | None = None
        self._mariadbd: str | None = None
        self._run_dir: Path | None = None
        self._datadir: Path | None = None
        self._log: Path | None = None
        super().__init__()
        self.partition_dirs: list[Path] = []
        self._proc: subprocess.Popen[bytes] | None = None

    # -- what the instance is made of -------------------------------------------------------

    @property
    def layout(self) -> Layout:
        return self._layout

    @property
    def log_path(self) -> Path | None:
        """The server's error log (None before provision())."""
        return self._log

    @property
    def datadir(self) -> Path | None:
        """The server's data directory (None before provision())."""
        return self._datadir

    @property
    def server_pid(self) -> int | None:
        """The server's process id while it runs."""
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    @property
    def option_file(self) -> Path:
        return self._private("option file") / "my.cnf"

    @property
    def socket(self) -> Path:
        return self._private("socket") / "mysqld.sock"

    def _private(self, what: str) -> Path:
        if self._run_dir is None:
            raise IolabError(f"the MariaDB instance has no {what} yet: provision() it first")
        return self._run_dir

    def log_tail(self, lines: int = 20) -> str:
        """The last ``lines`` non-empty lines of the error log ('' when there is none)."""
        if self._log is None:
            return ""
        try:
            text = self._log.read_text(errors="replace")
        except OSError:
            return ""
        kept = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
        return "\n".join(kept[-lines:])

    def _log_summary(self) -> str:
        """The end of the log for an error message: its errors if it has any, else its tail."""
        lines = self.log_tail(30).splitlines()
        errors = [ln for ln in lines if "[ERROR]" in ln]
        where = f" ({self._log})" if self._log is not None else ""
        if errors:
            return f"the server log{where} says: " + tail("\n".join(errors), 6)
        return f"the server log{where} ends: " + tail("\n".join(lines), 6)

    # -- provision ---------------------------------------------------------------------------

    @staticmethod
    def check(layout: Layout) -> None:
        """Refuse a layout or settings MariaDB cannot use, before anything is created."""
        MariaDBEngine(layout)._validate(_find_binary(("mariadbd", "mysqld")))

    def _validate(self, mariadbd: str) -> None:
        layout = self._layout
        if not layout.data_dirs:
            raise BadInput("--data-dir", "", "give at least one data directory")
        if layout.files < 1:
            raise BadInput("--files", layout.files, "give one data file or more")
        dirs: list[tuple[str, Path]] = [("--data-dir", d) for d in layout.data_dirs]
        if layout.wal_dir is not None:
            dirs.append(("--wal-dir", layout.wal_dir))
        if layout.temp_dir is not None:
            dirs.append(("--temp-dir", layout.temp_dir))
        if self._workdir is not None:
            dirs.append(("workdir", self._workdir))
        check_dirs(dirs)
        for field_name, path in dirs:
            if _UNSAFE_PATH.search(str(path.resolve())):
                raise BadInput(
                    field_name,
                    str(path),
                    "MariaDB option files cannot carry this path; use one without "
                    "whitespace, quotes, backslashes or '#'",
                )
        check_settings(layout.settings, mariadbd)

    def provision(self) -> Placement:
        self._begin_provision()
        mariadbd = _find_binary(("mariadbd", "mysqld"))
        install_db = _find_binary(("mariadb-install-db", "mysql_install_db"))
        self._validate(mariadbd)
        self._mariadbd = mariadbd
        user = server_user()
        self._user = user

        layout = self._layout
        data_dirs = [d.resolve() for d in layout.data_dirs]
        wal_dir = layout.wal_dir.resolve() if layout.wal_dir is not None else None
        temp_dir = layout.temp_dir.resolve() if layout.temp_dir is not None else None
        run_parent = (self._workdir or Path(tempfile.gettempdir())).resolve()
        run_name = ownership.owned_name(KIND_RUN)
        socket_path = run_parent / run_name / "mysqld.sock"
        if len(os.fsencode(socket_path)) > SOCKET_PATH_MAX:
            raise BadInput(
                "workdir",
                str(run_parent),
                f"the server socket path {socket_path} would exceed {SOCKET_PATH_MAX} bytes; "
                "use a shorter directory",
            )

        used = {*data_dirs, run_parent}
        used.update(d for d in (wal_dir, temp_dir) if d is not None)
        check_reachable([d / run_name for d in used], user)  # refuse before creating anything
        for directory in used:
            for kind in KINDS:
                ownership.reap(directory, kind, (user.uid,))  # made for the server user

        try:
            return self._create(
                install_db, user, data_dirs, wal_dir, temp_dir, run_parent / run_name
            )
        except BaseException:
            self.destroy()
            raise

    def _make(self, path: Path, user: ServerUser) -> Path:
        """Create ``path`` for the server user and record it for destroy()."""
        try:
            make_owned_dir(path, user, 0o700)
        except FileExistsError:
            raise  # not ours: never record it
        except BaseException:
            if path.exists():  # made, then found unreachable: ours to remove
                self._created.append(path)
            raise
        self._created.append(path)
        return path

    def _make_in(self, parent: Path, kind: str, user: ServerUser) -> Path:
        return self._make(parent / ownership.owned_name(kind), user)

    def _create(
        self,
        install_db: str,
        user: ServerUser,
        data_dirs: list[Path],
        wal_dir: Path | None,
        temp_dir: Path | None,
        run_dir: Path,
    ) -> Placement:
        layout = self._layout
        self._run_dir = self._make(run_dir, user)
        self._datadir = self._make_in(data_dirs[0], KIND_DATA, user)
        redo = self._make_in(wal_dir, KIND_REDO, user) if wal_dir is not None else None
        self.partition_dirs = [
            self._make_in(data_dirs[i % len(data_dirs)], KIND_PART, user)
            for i in range(layout.files)
        ]
        temp = self._make_in(temp_dir, KIND_TEMP, user) if temp_dir is not None else None

        self._log = run_dir / "mariadbd.log"
        self._write_owned(self._log, "", user, 0o640)
        lines = [
            "# written by iolab; the server reads no other option file",
            "[mysqld]",
            "skip-networking",
            f'socket="{self.socket}"',
            f'pid-file="{run_dir / "mysqld.pid"}"',
            f'datadir="{self._datadir}"',
            f'innodb_log_group_home_dir="{redo or self._datadir}"',
            *([f'tmpdir="{temp}"'] if temp is not None else []),
            "innodb_file_per_table=ON",
            "# a restart starts with an empty buffer pool (a cold run), not the pages of the last",
            "innodb_buffer_pool_dump_at_shutdown=OFF",
            "innodb_buffer_pool_load_at_startup=OFF",
            "performance_schema=ON",
            "# waits for iolab's wait statistics (iolab.probes.waits); --set may turn them off",
            "performance_schema_instrument='wait/synch/%=ON'",
            "# transactions per session, TPC-C's TPM (iolab.workloads.tpcc.mariadb)",
            "performance_schema_instrument='transaction=ON'",
            f'log-error="{self._log}"',
            "# settings given with --set",
            *(f"{_variable_name(k)}={v}" for k, v in layout.settings.items()),
        ]
        self._write_owned(self.option_file, "\n".join(lines) + "\n", user, 0o600)

        try:
            run_as(
                [
                    install_db,
                    f"--defaults-file={self.option_file}",
                    "--auth-root-authentication-method=normal",
                    "--skip-test-db",
                ],
                user,
                reach=self._created,
                timeout=INSTALL_TIMEOUT,
            )
        except subprocess.TimeoutExpired as exc:
            raise RunFailed(
                f"mariadb-install-db did not finish within {INSTALL_TIMEOUT:.0f} s; "
                + self._log_summary()
            ) from exc
        except IolabError as exc:
            raise RunFailed(
                f"mariadb-install-db could not create the data directory {self._datadir}; "
                + self._log_summary()
            ) from exc

        return Placement(
            data=tuple(self.partition_dirs),
            wal=redo or self._datadir,
            temp=temp,
            log=self._log,
            created=tuple(self._created),
        )

    @staticmethod
    def _write_owned(path: Path, text: str, user: ServerUser, mode: int) -> None:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        with os.fdopen(fd, "w") as out:
            out.write(text)
        if not user.is_current:
            os.chown(path, user.uid, user.gid)

    # -- run ---------------------------------------------------------------------------------

    def start(self) -> None:
        if self._mariadbd is None or self._user is None or self._log is None:
            raise IolabError("the MariaDB instance is not provisioned: provision() it first")
        if _alive(self._proc):
            raise IolabError("the MariaDB server is already running")
        proc = spawn(
            [self._mariadbd, f"--defaults-file={self.option_file}"],
            self._user,
            self._log,
            reach=self._created,
        )
        self._proc = proc
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            status = proc.poll()
            if status is not None:
                self._proc = None
                raise RunFailed(
                    f"mariadbd exited with status {status} before accepting connections; "
                    + self._log_summary()
                )
            conn = self._try_connect()
            if conn is not None:
                break
            if time.monotonic() > deadline:
                self.stop()
                raise RunFailed(
                    f"mariadbd did not accept connections within {START_TIMEOUT:.0f} s; "
                    + self._log_summary()
                )
            time.sleep(0.1)
        try:
            with conn.cursor() as cur:
                cur.execute(f"CREATE DATABASE IF NOT EXISTS {DATABASE}")
            conn.commit()
        finally:
            conn.close()

    def _try_connect(self) -> Any:
        pymysql = _pymysql()
        if not self.socket.exists():
            return None
        try:
            return pymysql.connect(
                unix_socket=str(self.socket),
                user="root",
                connect_timeout=5,
                autocommit=True,
                ssl_disabled=True,  # see connect()
            )
        except pymysql.MySQLError:
            return None

    def connect(self, *, local_infile: bool = False) -> Any:
        """A connection to the benchmark database; ``local_infile``: it may send files of
        this process to the server (``LOAD DATA LOCAL INFILE``)."""
        pymysql = _pymysql()
        if not _alive(self._proc):
            raise IolabError("the MariaDB server is not running: start() it first")
        return pymysql.connect(
            unix_socket=str(self.socket),
            user="root",
            database=DATABASE,
            autocommit=False,
            local_infile=local_infile,
            # the private socket carries no TLS; PyMySQL's default (TLS if offered) builds an
            # SSL context and reads the system's CA bundle for every connection: 60 ms of
            # client CPU each here (a failed connect, 20 tries), 3 ms without
            ssl_disabled=True,
        )

    def core_target(self) -> MariaDBTarget:
        """What the compiled driver core (iolab.drivercore) connects with, as :meth:`connect`
        does: the private socket, root, no password."""
        return MariaDBTarget(
            {"unix_socket": str(self.socket), "user": "root", "database": DATABASE}
        )

    def load_connect(self) -> Any:
        """A connection that may send the client's files (``LOAD DATA LOCAL INFILE``)."""
        return self.connect(local_infile=True)

    def spaces(self) -> list[str]:
        """The directories a workload's table partitions go to, one per data file."""
        return [str(d) for d in self.partition_dirs]

    def version(self) -> str:
        if _alive(self._proc):
            return str(self._query(["SELECT VERSION()"])[0][0])
        mariadbd = self._mariadbd or _find_binary(("mariadbd", "mysqld"))
        out = run([mariadbd, "--version"], timeout=30).stdout
        found = re.search(r"\bVer\s+(\S+)", out)
        return found.group(1) if found else out.strip()

    def effective_settings(self) -> dict[str, str]:
        wanted = {*REPORTED_VARIABLES}
        for name in self._layout.settings:
            canonical = _variable_name(name)
            wanted.add(canonical)
            wanted.add(canonical.removeprefix("skip_"))
        rows = self._query(["SHOW GLOBAL VARIABLES"])
        return {str(k): str(v) for k, v in rows if str(k) in wanted}

    def _query(self, statements: Iterable[str]) -> list[tuple[Any, ...]]:
        conn = self.connect()
        try:
            with conn.cursor() as cur:
                for statement in statements:
                    cur.execute(statement)
                return [tuple(row) for row in cur.fetchall()]
        finally:
            conn.close()

    def died(self, grace: float = 1.0) -> str | None:
        """How the server ended when it was not stopped ("signal 9"), else None."""
        return how_it_ended(self._proc, grace)

    def stop(self) -> None:
        """SIGTERM, on which mariadbd shuts down cleanly; SIGKILL after STOP_TIMEOUT."""
        self._end(clean=True)

    def _halt(self) -> None:
        """SIGKILL: the data directory is removed next, so InnoDB needs no clean shutdown (its
        flush of the buffer pool and the log), which a device failing its writes can hold up."""
        self._end(clean=False)

    def _end(self, clean: bool) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        if clean:
            proc.terminate()
            try:
                proc.wait(timeout=STOP_TIMEOUT)
                return
            except subprocess.TimeoutExpired:
                pass
        proc.kill()
        proc.wait()
