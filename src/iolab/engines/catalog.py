"""The engines iolab can provision, by name: the one place that maps a name to a class."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from iolab.engines.interface import Layout
from iolab.errors import BadInput

ENGINES = ("sqlite", "postgres", "mariadb", "duckdb")
DEFAULT_ENGINE = "sqlite"  # embedded: nothing to install


def create(name: str, layout: Layout, *, pg_bin: Path | None = None) -> Any:
    """A fresh, unprovisioned engine of kind ``name`` on ``layout``."""
    if pg_bin is not None and name != "postgres":
        raise BadInput("--pg-bin", str(pg_bin), "--pg-bin goes with --engine postgres")
    if name == "postgres":
        from iolab.engines.postgres import PostgresEngine

        return PostgresEngine(layout, bin_dir=pg_bin)
    if name == "mariadb":
        from iolab.engines.mariadb import MariaDBEngine

        return MariaDBEngine(layout)
    if name == "duckdb":
        from iolab.engines.duckdb import DuckDBEngine

        return DuckDBEngine(layout)
    if name == "sqlite":
        from iolab.engines.sqlite import SQLiteEngine

        return SQLiteEngine(layout)
    raise BadInput.choice("--engine", name, ENGINES)


def check(name: str, layout: Layout, *, pg_bin: Path | None = None) -> None:
    """Refuse, before anything is created or recorded, settings the engine would not take
    (names, types, units, ranges and enum values, read by the engine's own binary) and a layout
    it cannot use (SQLite: a WAL dir, too many files). Directories are not looked at here.
    BadInput names ``--set NAME``, ``--wal-dir`` or ``--files``."""
    if pg_bin is not None and name != "postgres":
        raise BadInput("--pg-bin", str(pg_bin), "--pg-bin goes with --engine postgres")
    if name == "postgres":
        from iolab.engines.postgres import PostgresEngine

        PostgresEngine(layout, bin_dir=pg_bin).check_settings()
    elif name == "mariadb":
        from iolab.engines.mariadb import check_settings

        check_settings(layout.settings)
    elif name == "duckdb":
        from iolab.engines.duckdb import parse_settings as duckdb_settings

        duckdb_settings(layout.settings)
    elif name == "sqlite":
        from iolab.engines.sqlite import SQLiteEngine

        SQLiteEngine.check(layout)
    else:
        raise BadInput.choice("--engine", name, ENGINES)


def is_server(name: str) -> bool:
    return name in {"postgres", "mariadb"}
