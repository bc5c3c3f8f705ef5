"""The engines TPC-C runs on, the modes each runs, and each one's part of it.

Each engine's TPC-C SQL, loader and routines are a module of this package named as the engine
(``postgres.py``, ``mariadb.py``, ``sqlite.py``): its ``dialect(engine, loaders)`` reads what it
needs of a running engine through the Engine protocol. Adding an engine to TPC-C is one such
module and one line of :data:`ENGINES`. DuckDB is not among them: it is no OLTP engine.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from iolab.workloads.tpcc.modes import CLIENT, SERVER

if TYPE_CHECKING:
    from iolab.engines.external import Objects
    from iolab.engines.interface import Engine
    from iolab.workloads.tpcc.dialect import TpccDialect

# the modes each engine runs, its default first
ENGINES: dict[str, tuple[str, ...]] = {
    "postgres": (SERVER, CLIENT),
    "mariadb": (SERVER, CLIENT),
    "sqlite": (CLIENT,),
}
NAMES = tuple(ENGINES)
DEFAULT = "postgres"


def default_mode(engine: str) -> str:
    return ENGINES.get(engine, (CLIENT,))[0]


def objects(name: str) -> Objects:
    """What the workload creates in a server's database on engine ``name`` (``--dsn``)."""
    found: Objects = importlib.import_module(f"{__package__}.{name}").OBJECTS
    return found


def dialect(engine: Engine, loaders: int) -> TpccDialect:
    """TPC-C's SQL for a running engine; ``loaders``: parallel connections for the load."""
    module = importlib.import_module(f"{__package__}.{engine.name}")
    found: TpccDialect = module.dialect(engine, loaders)
    return found
