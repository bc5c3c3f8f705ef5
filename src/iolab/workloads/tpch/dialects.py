"""The engines TPC-H runs on, and each one's part of it.

Each engine's TPC-H SQL and loader is a module of this package named as the engine
(``duckdb.py``, ``postgres.py``, ``mariadb.py``): its ``dialect(engine, compression=, loaders=)``
reads what it needs of a running engine through the Engine protocol. Adding an engine to TPC-H
is one such module and one line of :data:`ENGINES`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from iolab.engines.interface import Engine
    from iolab.workloads.tpch.dialect import TpchDialect


@dataclass(frozen=True)
class Support:
    """What an engine's part of TPC-H offers."""

    compression: bool | None  # --compression's default; None: no compression option
    parallel_loaders: bool  # --loaders: tables loaded over several connections


ENGINES: dict[str, Support] = {
    "duckdb": Support(compression=True, parallel_loaders=False),
    "postgres": Support(compression=None, parallel_loaders=True),
    "mariadb": Support(compression=False, parallel_loaders=True),
}
NAMES = tuple(ENGINES)
DEFAULT = "duckdb"  # embedded, and TPC-H's own engine


def dialect(engine: Engine, *, compression: bool, loaders: int) -> TpchDialect:
    """TPC-H's SQL for a running engine; ``loaders``: parallel connections for the load, where
    the engine loads in parallel."""
    module = importlib.import_module(f"{__package__}.{engine.name}")
    found: TpchDialect = module.dialect(engine, compression=compression, loaders=loaders)
    return found
