"""DuckDB on a layout: one database file per data file, attached to one database instance.

DuckDB is embedded. :meth:`DuckDBEngine.start` opens the database instance in this process
(file 0, then file ``i`` attached as ``f{i}``) and :meth:`DuckDBEngine.stop` closes it, which
drops DuckDB's buffer pool: a stop and a start is DuckDB's restart. :meth:`DuckDBEngine.connect`
hands out connections (cursors) to that one instance, usable from their own threads.

Data file ``i`` is ``iolab_{i}.duckdb`` in a directory ``.iolab-duckdb-...`` of its
round-robin data directory. Several files spread data over several devices, so a workload puts
its tables (or parts of them) in the attached databases; a view in ``main`` can join them up.

Where things go:

* The WAL (``.wal``) always lies beside its database file; DuckDB has no way to put it
  elsewhere, so a ``wal_dir`` is refused.
* Temporary files (spilled sorts, hash tables and the buffer pool's evicted pages) go to a
  directory ``.iolab-duckdbtmp-...`` in ``temp_dir`` (``temp_directory``); without a temp dir,
  DuckDB's default: ``iolab_0.duckdb.tmp`` beside file 0.

Settings are DuckDB's own (``duckdb_settings()``: ``threads``, ``memory_limit``,
``force_compression``, ...). Names are checked against that list and values by setting them on
a scratch in-memory database, before anything is created.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from iolab.engines.interface import Layout, Placement, Provisioned, check_dirs, plan_files
from iolab.errors import BadInput, IolabError, MissingTool, RunFailed

KIND_DATA = "duckdb"
KIND_TEMP = "duckdbtmp"

HOW_TO_GET = "pip install duckdb (or pip install 'iolab[engines]')"

# Settings iolab sets from the layout: a --set may not move them elsewhere.
ENGINE_CONTROLLED = frozenset({"temp_directory", "extension_directory"})

# Always reported by effective_settings().
INTERESTING = (
    "threads",
    "memory_limit",
    "temp_directory",
    "force_compression",
    "checkpoint_threshold",
    "preserve_insertion_order",
    "max_temp_directory_size",
)


def duckdb_module() -> Any:
    """The ``duckdb`` package, or MissingTool saying how to install it."""
    try:
        import duckdb
    except ImportError as exc:
        raise MissingTool("DuckDB (the duckdb Python package)", HOW_TO_GET) from exc
    return duckdb


def database_file(index: int) -> str:
    return f"iolab_{index}.duckdb"


def catalog_name(index: int) -> str:
    """The catalog data file ``index`` is reached by: ``main``, ``f1``, ``f2``, ..."""
    return "main" if index == 0 else f"f{index}"


def sql_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def known_settings() -> dict[str, str]:
    """Every DuckDB setting name and alias (lowercase) -> its canonical name."""
    duckdb = duckdb_module()
    conn = duckdb.connect(":memory:")
    try:
        rows = conn.execute("SELECT name, aliases FROM duckdb_settings()").fetchall()
    finally:
        conn.close()
    found: dict[str, str] = {}
    for name, aliases in rows:
        found[str(name).lower()] = str(name)
        for alias in aliases or []:
            found[str(alias).lower()] = str(name)
    return found


def parse_settings(settings: Mapping[str, object]) -> dict[str, str]:
    """The settings by DuckDB's canonical names, each one accepted by a scratch database."""
    duckdb = duckdb_module()
    known = known_settings()
    parsed: dict[str, str] = {}
    for raw_name, raw_value in settings.items():
        key = str(raw_name).strip().lower()
        name = known.get(key)
        if name is None:
            raise BadInput(
                "--set",
                raw_name,
                "it is not a DuckDB setting (see SELECT name FROM duckdb_settings())",
            )
        if name in ENGINE_CONTROLLED:
            raise BadInput("--set", raw_name, "iolab sets this DuckDB setting from the layout")
        value = str(raw_value).strip()
        scratch = duckdb.connect(":memory:")
        try:
            scratch.execute(f"SET GLOBAL {name} = {sql_string(value)}")
        except duckdb.Error as exc:
            first = str(exc).strip().splitlines()[0]
            raise BadInput(f"--set {name}", raw_value, f"DuckDB refuses it: {first}") from None
        finally:
            scratch.close()
        parsed[name] = value
    return parsed


class DuckDBEngine(Provisioned):
    """DuckDB database files provisioned on a layout; see the module docstring."""

    name: ClassVar[str] = "duckdb"
    title: ClassVar[str] = "DuckDB"

    def __init__(self, layout: Layout) -> None:
        self._layout = layout
        self._settings: dict[str, str] = {}
        super().__init__()
        self._files: list[Path] = []
        self._temp_dir: Path | None = None
        self._db: Any = None
        self._lock = threading.Lock()
        self._cursors: list[Any] = []

    @property
    def layout(self) -> Layout:
        return self._layout

    @property
    def database_files(self) -> list[Path]:
        return list(self._files)

    @property
    def catalogs(self) -> list[str]:
        """The catalog of each data file, in data-file order (``main``, ``f1``, ...)."""
        return [catalog_name(i) for i in range(len(self._files))]

    def version(self) -> str:
        return f"DuckDB {duckdb_module().__version__}"

    # -- provision -------------------------------------------------------------------------------

    def provision(self) -> Placement:
        self._begin_provision()
        layout = self._layout
        self._validate_layout(layout)
        settings = parse_settings(layout.settings)

        plan = plan_files(layout, KIND_DATA, KIND_TEMP, database_file)
        temp, files = plan.temp, list(plan.files)
        try:
            for target in [*plan.homes, *([temp] if temp is not None else [])]:
                target.mkdir(mode=0o700)
                self._created.append(target)
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

    @staticmethod
    def check(layout: Layout) -> None:
        """Refuse a layout or settings DuckDB cannot use, before anything is created."""
        DuckDBEngine._validate_layout(layout)
        parse_settings(layout.settings)

    @staticmethod
    def _validate_layout(layout: Layout) -> None:
        if not layout.data_dirs:
            raise BadInput("--data-dir", (), "give at least one data directory")
        if isinstance(layout.files, bool) or not isinstance(layout.files, int) or layout.files < 1:
            raise BadInput("--files", layout.files, "give a whole number of data files, 1 or more")
        if layout.wal_dir is not None:
            raise BadInput(
                "--wal-dir",
                str(layout.wal_dir),
                "DuckDB keeps its WAL beside each database file and cannot put it elsewhere; "
                "leave --wal-dir out",
            )
        check_dirs(layout.named_dirs())

    # -- run -------------------------------------------------------------------------------------

    def start(self) -> None:
        """Open the database instance: file 0, the others attached, the settings applied."""
        if self._placement is None:
            raise IolabError("provision() the DuckDB engine before start()")
        if self._db is not None:
            return
        duckdb = duckdb_module()
        config = {"autoinstall_known_extensions": "false", "autoload_known_extensions": "false"}
        try:
            db = duckdb.connect(str(self._files[0]), config=config)
        except duckdb.Error as exc:
            raise RunFailed(f"could not open the DuckDB database {self._files[0]}: {exc}") from exc
        try:
            if self._temp_dir is not None:
                db.execute(f"SET GLOBAL temp_directory = {sql_string(str(self._temp_dir))}")
            for name, value in self._settings.items():
                db.execute(f"SET GLOBAL {name} = {sql_string(value)}")
            for i, path in enumerate(self._files[1:], start=1):
                db.execute(f"ATTACH {sql_string(str(path))} AS {catalog_name(i)}")
        except BaseException as exc:
            db.close()
            if isinstance(exc, duckdb.Error):
                raise RunFailed(f"could not set up DuckDB: {exc}") from exc
            raise
        self._db = db

    def connect(self) -> Any:
        """A new connection to the instance (a DuckDB cursor; its own thread may use it)."""
        with self._lock:
            if self._db is None:
                raise IolabError("start() the DuckDB engine before connect()")
            cursor = self._db.cursor()
            self._cursors.append(cursor)
            return cursor

    def core_target(self) -> None:
        """None: the compiled driver core drives servers, not an embedded engine."""
        return None

    def spaces(self) -> list[str]:
        """The catalogs (attached database files) a workload's tables go to."""
        return self.catalogs

    def effective_settings(self) -> dict[str, str]:
        """The settings set through the layout and a fixed list, as DuckDB reports them."""
        names = sorted({*INTERESTING, *self._settings})
        conn = self.connect()
        try:
            rows = conn.execute(
                "SELECT name, value FROM duckdb_settings() WHERE name IN "
                f"({', '.join(sql_string(n) for n in names)}) ORDER BY name"
            ).fetchall()
        finally:
            conn.close()
        return {str(name): str(value) for name, value in rows}

    def died(self) -> str | None:
        """Never: it is embedded in iolab's own process."""
        return None

    def stop(self) -> None:
        """Close the instance and every connection to it; safe to call twice."""
        with self._lock:
            db, self._db = self._db, None
            cursors, self._cursors = self._cursors, []
        for cursor in cursors:
            with contextlib.suppress(Exception):
                cursor.close()
        if db is not None:
            with contextlib.suppress(Exception):
                db.close()
