"""SQLite on a layout: one database file per data file, attached to one connection.

SQLite is embedded: there is no server, so :meth:`SQLiteEngine.start` and
:meth:`SQLiteEngine.stop` only track state, and :meth:`SQLiteEngine.connect` hands out in-process
:mod:`sqlite3` connections. Data file ``i`` is ``iolab_{i}.db`` in a directory
``.iolab-sqlite-...`` of its round-robin data directory (one such directory per data directory,
shared by its files). A connection opens file 0 as ``main`` and attaches file ``i`` as ``f{i}``.

Where things go:

* The WAL (``-wal`` and ``-shm``) always lies beside its database file; SQLite has no way to put
  it elsewhere, so a ``wal_dir`` is refused.
* Temporary files (sorts, temp tables, statement journals) go to a directory
  ``.iolab-sqlitetmp-...`` in ``temp_dir``. SQLite looks for that directory per process: first the
  global set by ``PRAGMA temp_store_directory``, then ``SQLITE_TMPDIR`` and ``TMPDIR`` (each read
  once and then cached by SQLite), then ``/var/tmp``, ``/usr/tmp``, ``/tmp``. The environment
  variables cannot be changed reliably once SQLite has looked, so the engine sets the pragma once
  in :meth:`SQLiteEngine.start` (before it hands out connections: the global must not change
  while another thread uses SQLite) and puts the previous value back in
  :meth:`SQLiteEngine.stop`. Being per process, only one engine with a ``temp_dir`` can run at a
  time in a process. SQLite unlinks its temp files as soon as it opens them, so they are visible
  only as open descriptors (``/proc/<pid>/fd``), never in a directory listing.

Settings are SQLite pragmas (see :data:`PRAGMAS`), applied to every schema where they are
per-database and to the connection otherwise; ``page_size`` is fixed when a file is created.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal

from iolab.engines.interface import Layout, Placement, Provisioned, check_dirs, plan_files
from iolab.errors import BadInput, IolabError, RunFailed

# Kinds of what this engine creates (see iolab.ownership).
KIND_DATA = "sqlite"
KIND_TEMP = "sqlitetmp"

DEFAULT_BUSY_TIMEOUT_MS = 60000

_SYNCHRONOUS = ("off", "normal", "full", "extra")  # by PRAGMA synchronous number
_TEMP_STORE = ("default", "file", "memory")  # by PRAGMA temp_store number
_JOURNAL_MODES = ("delete", "truncate", "persist", "memory", "wal", "off")
_LOCKING_MODES = ("normal", "exclusive")

Scope = Literal["create", "schema", "connection"]


def _integer(text: str, minimum: int | None = None) -> int | None:
    body = text[1:] if text[:1] in "+-" else text
    if not body.isascii() or not body.isdigit():
        return None
    value = int(text)
    return None if minimum is not None and value < minimum else value


def _keyword(choices: tuple[str, ...]) -> Callable[[str], str | None]:
    def parse(text: str) -> str | None:
        value = text.lower()
        if value in choices:
            return value
        number = _integer(text, 0)
        return choices[number] if number is not None and number < len(choices) else None

    return parse


def _modes(choices: tuple[str, ...]) -> Callable[[str], str | None]:
    def parse(text: str) -> str | None:
        return text.lower() if text.lower() in choices else None

    return parse


def _whole(minimum: int | None) -> Callable[[str], str | None]:
    def parse(text: str) -> str | None:
        value = _integer(text, minimum)
        return None if value is None else str(value)

    return parse


def _page_size(text: str) -> str | None:
    value = _integer(text, 512)
    if value is None or value > 65536 or value & (value - 1):
        return None
    return str(value)


@dataclass(frozen=True)
class Pragma:
    """A setting iolab accepts: where it applies, how its value is checked, what it reads as."""

    name: str
    scope: Scope
    allowed: str
    parse: Callable[[str], str | None]  # the value as written into the PRAGMA, or None: invalid
    names: tuple[str, ...] = ()  # PRAGMA reads back a number; these are its names, by number


PRAGMAS: dict[str, Pragma] = {
    p.name: p
    for p in (
        Pragma(
            "journal_mode",
            "schema",
            "choose one of: " + ", ".join(_JOURNAL_MODES),
            _modes(_JOURNAL_MODES),
        ),
        Pragma(
            "synchronous",
            "schema",
            "choose one of: off, normal, full, extra (or 0-3)",
            _keyword(_SYNCHRONOUS),
            _SYNCHRONOUS,
        ),
        Pragma(
            "cache_size", "schema", "give a whole number: pages, or KiB when negative", _whole(None)
        ),
        Pragma("page_size", "create", "give a power of two from 512 to 65536 (bytes)", _page_size),
        Pragma("mmap_size", "schema", "give a whole number of bytes, 0 or more", _whole(0)),
        Pragma(
            "wal_autocheckpoint",
            "connection",
            "give a whole number of pages, 0 or more (0 turns it off)",
            _whole(0),
        ),
        Pragma(
            "temp_store",
            "connection",
            "choose one of: default, file, memory (or 0-2)",
            _keyword(_TEMP_STORE),
            _TEMP_STORE,
        ),
        Pragma(
            "locking_mode",
            "schema",
            "choose one of: " + ", ".join(_LOCKING_MODES),
            _modes(_LOCKING_MODES),
        ),
        Pragma(
            "busy_timeout",
            "connection",
            "give a whole number of milliseconds, 0 or more",
            _whole(0),
        ),
        Pragma(
            "journal_size_limit",
            "schema",
            "give a whole number of bytes, or -1 for no limit",
            _whole(-1),
        ),
    )
}

DEFAULTS: dict[str, str] = {
    "journal_mode": "wal",
    "synchronous": "full",
    "page_size": "8192",
    "busy_timeout": str(DEFAULT_BUSY_TIMEOUT_MS),
}

# The order in which a connection applies them: the busy timeout first so that the others wait
# for locks, the locking mode before the journal mode (exclusive WAL then needs no -shm).
_APPLY_ORDER = (
    "busy_timeout",
    "temp_store",
    "locking_mode",
    "journal_mode",
    "synchronous",
    "cache_size",
    "mmap_size",
    "journal_size_limit",
    "wal_autocheckpoint",
)


def parse_settings(settings: Mapping[str, object]) -> dict[str, str]:
    """The defaults overlaid with ``settings``, checked and normalised; BadInput when wrong."""
    parsed = dict(DEFAULTS)
    for raw_name, raw_value in settings.items():
        name = str(raw_name).strip().lower()
        pragma = PRAGMAS.get(name)
        if pragma is None:
            raise BadInput(
                "--set",
                raw_name,
                "it is not a SQLite setting iolab accepts; choose one of: " + ", ".join(PRAGMAS),
            )
        value = pragma.parse(str(raw_value).strip())
        if value is None:
            raise BadInput(f"--set {name}", raw_value, pragma.allowed)
        parsed[name] = value
    return parsed


def sql_string(value: str) -> str:
    """``value`` as an SQL string literal."""
    return "'" + value.replace("'", "''") + "'"


def database_file(index: int) -> str:
    return f"iolab_{index}.db"


def schema_name(index: int) -> str:
    """The schema data file ``index`` is reached by on a connection: ``main``, ``f1``, ..."""
    return "main" if index == 0 else f"f{index}"


class SQLiteConnection(sqlite3.Connection):
    """A connection to all data files: ``main`` is file 0, ``f{i}`` is file ``i``."""

    schemas: list[str]
    database_files: list[Path]


class _TempDirectory:
    """SQLite's per-process temp directory (the ``temp_store_directory`` global) and its holder."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.holder: SQLiteEngine | None = None
        self.previous: str = ""

    @staticmethod
    def current() -> str:
        conn = sqlite3.connect(":memory:")
        try:
            row = conn.execute("PRAGMA temp_store_directory").fetchone()
        finally:
            conn.close()
        return "" if row is None or row[0] is None else str(row[0])

    @staticmethod
    def set(directory: str) -> None:
        conn = sqlite3.connect(":memory:")
        try:
            conn.execute(f"PRAGMA temp_store_directory = {sql_string(directory)}")
        finally:
            conn.close()

    @staticmethod
    def supported() -> bool:
        conn = sqlite3.connect(":memory:")
        try:
            names = {str(row[0]) for row in conn.execute("PRAGMA pragma_list")}
        except sqlite3.Error:
            return False
        finally:
            conn.close()
        return "temp_store_directory" in names


_TEMP = _TempDirectory()


class SQLiteEngine(Provisioned):
    """SQLite database files provisioned on a layout; see the module docstring."""

    name: ClassVar[str] = "sqlite"
    title: ClassVar[str] = "SQLite"

    def __init__(self, layout: Layout) -> None:
        self._layout = layout
        self._settings: dict[str, str] = {}
        super().__init__()
        self._files: list[Path] = []
        self._temp_dir: Path | None = None
        self._started = False
        self._own: list[sqlite3.Connection] = []
        self._own_lock = threading.Lock()

    # -- what it is --------------------------------------------------------------------------

    @property
    def layout(self) -> Layout:
        return self._layout

    @property
    def database_files(self) -> list[Path]:
        """The database files, in data-file order, once provisioned."""
        return list(self._files)

    @property
    def schemas(self) -> list[str]:
        """The schema of each data file on a connection (``main``, ``f1``, ...)."""
        return [schema_name(i) for i in range(len(self._files))]

    @property
    def temp_dir(self) -> Path | None:
        """The directory SQLite's temp files go to while the engine runs (None: the default)."""
        return self._temp_dir

    @property
    def settings(self) -> dict[str, str]:
        """The pragmas the engine applies (defaults and ``--set``), once provisioned."""
        return dict(self._settings)

    def version(self) -> str:
        """The SQLite library's version, e.g. ``3.40.1``."""
        return sqlite3.sqlite_version

    # -- provision -----------------------------------------------------------------------------

    def provision(self) -> Placement:
        self._begin_provision()
        layout = self._layout
        self._validate_layout(layout)
        settings = parse_settings(layout.settings)
        if layout.temp_dir is not None and not _TEMP.supported():
            raise BadInput(
                "--temp-dir",
                str(layout.temp_dir),
                f"this SQLite ({self.version()}) has no temp_store_directory pragma, so iolab "
                "cannot choose where its temp files go; leave --temp-dir out",
            )

        plan = plan_files(layout, KIND_DATA, KIND_TEMP, database_file)
        temp, files = plan.temp, list(plan.files)

        try:
            for target in [*plan.homes, *([temp] if temp is not None else [])]:
                target.mkdir(mode=0o700)
                self._created.append(target)
            for path in files:
                self._create_database(path, settings)
        except BaseException:
            self.destroy()
            raise
        self._settings = settings
        self._files = files
        self._temp_dir = temp
        self._placement = Placement(
            data=tuple(files), wal=None, temp=temp, log=None, created=tuple(self._created)
        )
        return self._placement

    @classmethod
    def check(cls, layout: Layout) -> None:
        """Refuse settings or a layout SQLite cannot use (a WAL dir, too many files), before
        anything is created; the directories themselves are checked at provision."""
        parse_settings(layout.settings)
        cls._check_shape(layout)

    def _validate_layout(self, layout: Layout) -> None:
        self._check_shape(layout)
        dirs: list[tuple[str, Path]] = [("--data-dir", d) for d in layout.data_dirs]
        if layout.temp_dir is not None:
            dirs.append(("--temp-dir", layout.temp_dir))
        check_dirs(dirs)

    @classmethod
    def _check_shape(cls, layout: Layout) -> None:
        if not layout.data_dirs:
            raise BadInput("--data-dir", (), "give at least one data directory")
        if isinstance(layout.files, bool) or not isinstance(layout.files, int) or layout.files < 1:
            raise BadInput("--files", layout.files, "give a whole number of data files, 1 or more")
        most = 1 + cls._attach_limit()
        if layout.files > most:
            raise BadInput(
                "--files",
                layout.files,
                f"this SQLite attaches at most {most - 1} databases to the first; give 1 to {most}",
            )
        if layout.wal_dir is not None:
            raise BadInput(
                "--wal-dir",
                str(layout.wal_dir),
                "SQLite keeps its WAL beside each database file and cannot put it elsewhere; "
                "leave the WAL dir out",
            )

    @staticmethod
    def _attach_limit() -> int:
        conn = sqlite3.connect(":memory:")
        try:
            return conn.getlimit(sqlite3.SQLITE_LIMIT_ATTACHED)
        finally:
            conn.close()

    @staticmethod
    def _create_database(path: Path, settings: Mapping[str, str]) -> None:
        """A new database file with its page size fixed, then its journal mode."""
        page_size = settings["page_size"]
        journal_mode = settings["journal_mode"]
        try:
            conn = sqlite3.connect(path, isolation_level=None)
            try:
                # The page size holds only until the first write; it must come first.
                conn.execute(f"PRAGMA page_size = {page_size}")
                (mode,) = conn.execute(f"PRAGMA journal_mode = {journal_mode}").fetchone()
                if path.stat().st_size == 0:  # all but WAL write nothing yet: write the header
                    conn.execute("PRAGMA user_version = 0")
                (actual,) = conn.execute("PRAGMA page_size").fetchone()
            finally:
                conn.close()
        except sqlite3.Error as exc:
            raise RunFailed(f"could not create the SQLite database {path}: {exc}") from exc
        if str(mode).lower() != journal_mode:
            raise RunFailed(
                f"SQLite would not use journal_mode {journal_mode} for {path} (it uses {mode})"
            )
        if str(actual) != page_size:
            raise RunFailed(f"SQLite would not use page_size {page_size} for {path} ({actual})")

    # -- run -------------------------------------------------------------------------------------

    def start(self) -> None:
        """Nothing runs; checks the files are there and takes SQLite's temp directory."""
        if self._placement is None:
            raise IolabError("provision() the SQLite engine before start()")
        if self._started:
            return
        missing = [str(p) for p in self._files if not p.is_file()]
        if missing:
            raise RunFailed("the SQLite database files are gone: " + ", ".join(missing))
        if self._temp_dir is not None:
            self._take_temp_dir(self._temp_dir)
        self._started = True

    def _take_temp_dir(self, directory: Path) -> None:
        with _TEMP.lock:
            holder = _TEMP.holder
            if holder is not None and holder is not self:
                raise IolabError(
                    "another SQLite engine in this process places temp files in "
                    f"{holder.temp_dir}; SQLite has one temp directory per process, so stop "
                    "that engine first"
                )
            try:
                previous = _TEMP.current()
                _TEMP.set(str(directory))
                now = _TEMP.current()
            except sqlite3.Error as exc:
                raise RunFailed(f"SQLite would not put temp files in {directory}: {exc}") from exc
            if now != str(directory):
                raise RunFailed(
                    f"SQLite would not put temp files in {directory} (it uses {now or 'default'})"
                )
            if holder is None:
                _TEMP.previous = previous
            _TEMP.holder = self

    def _release_temp_dir(self) -> None:
        with _TEMP.lock:
            if _TEMP.holder is not self:
                return
            previous, _TEMP.holder, _TEMP.previous = _TEMP.previous, None, ""
            try:
                _TEMP.set(previous)
            except sqlite3.Error:  # the previous directory is gone: back to SQLite's search
                _TEMP.set("")

    def connect(self) -> SQLiteConnection:
        """A new connection: file 0 as ``main``, file ``i`` attached as ``f{i}``.

        Autocommit (``isolation_level=None``): the caller issues BEGIN and COMMIT. Usable from
        any thread; waits up to ``busy_timeout`` ms for locks held by other connections.
        """
        if self._placement is None:
            raise IolabError("the SQLite engine is not provisioned")
        if not self._started:
            raise IolabError("start() the SQLite engine before connect()")
        settings = self._settings
        timeout = int(settings["busy_timeout"]) / 1000
        try:
            conn = sqlite3.connect(
                self._files[0],
                timeout=timeout,
                isolation_level=None,
                check_same_thread=False,
                factory=SQLiteConnection,
            )
        except sqlite3.Error as exc:
            raise RunFailed(f"could not open the SQLite database {self._files[0]}: {exc}") from exc
        try:
            for i, path in enumerate(self._files[1:], start=1):
                conn.execute(f"ATTACH DATABASE ? AS {schema_name(i)}", (str(path),))
            conn.schemas = self.schemas
            conn.database_files = self.database_files
            self._apply(conn, settings)
        except BaseException as exc:
            conn.close()
            if isinstance(exc, sqlite3.Error):
                raise RunFailed(f"could not set up a SQLite connection: {exc}") from exc
            raise
        return conn

    def _apply(self, conn: sqlite3.Connection, settings: Mapping[str, str]) -> None:
        for name in _APPLY_ORDER:
            value = settings.get(name)
            if value is None:
                continue
            if PRAGMAS[name].scope == "connection":
                conn.execute(f"PRAGMA {name} = {value}")
                continue
            for schema in self.schemas:
                row = conn.execute(f"PRAGMA {schema}.{name} = {value}").fetchone()
                if name == "journal_mode" and (row is None or str(row[0]).lower() != value):
                    got = None if row is None else row[0]
                    raise RunFailed(
                        f"SQLite would not use journal_mode {value} on {schema} (it uses {got})"
                    )

    def core_target(self) -> None:
        """None: the compiled driver core drives servers, not an embedded engine."""
        return None

    def spaces(self) -> list[str]:
        """The schemas (attached database files) a workload's tables go to."""
        return self.schemas

    def effective_settings(self) -> dict[str, str]:
        """Each pragma as SQLite reports it on a connection of this engine.

        Per-database pragmas are read from ``main``; a schema whose value differs is reported
        too, as ``f{i}.<name>``. ``temp_store_directory`` is SQLite's temp directory in force.
        """
        conn = self.connect()
        with self._own_lock:
            self._own.append(conn)
        try:
            found: dict[str, str] = {}
            for name, pragma in PRAGMAS.items():
                schemas = ["main"] if pragma.scope == "connection" else self.schemas
                for schema in schemas:
                    prefix = "" if pragma.scope == "connection" else f"{schema}."
                    row = conn.execute(f"PRAGMA {prefix}{name}").fetchone()
                    value = _reading(pragma, None if row is None else row[0])
                    if schema == "main":
                        found[name] = value
                    elif value != found[name]:
                        found[f"{schema}.{name}"] = value
            if self._temp_dir is not None:
                row = conn.execute("PRAGMA temp_store_directory").fetchone()
                found["temp_store_directory"] = "" if row is None else str(row[0])
            return found
        finally:
            with self._own_lock:
                if conn in self._own:
                    self._own.remove(conn)
            conn.close()

    def died(self) -> str | None:
        """Never: it is embedded in iolab's own process."""
        return None

    def stop(self) -> None:
        """Close the connections the engine opened itself and give back the temp directory.

        Connections handed out by :meth:`connect` are the caller's to close. Safe to call twice.
        """
        with self._own_lock:
            own, self._own = self._own, []
        for conn in own:
            with contextlib.suppress(sqlite3.Error):
                conn.close()
        try:
            self._release_temp_dir()
        finally:
            self._started = False


def _reading(pragma: Pragma, value: object) -> str:
    """A pragma's value as read back, by name where SQLite answers with a number."""
    if value is None:
        return ""
    if pragma.names and isinstance(value, int) and 0 <= value < len(pragma.names):
        return pragma.names[value]
    return str(value).lower() if isinstance(value, str) else str(value)
