"""The engines the population workload runs on, and each one's part of it.

Each engine's SQL, loaders and statistics are a module of this package named as the engine
(``postgres.py``, ``mariadb.py``, ``sqlite.py``): its ``dialect(engine)`` reads what it needs of
a running engine through the Engine protocol, and its ``OBJECTS`` name what it creates in a
server's database (refused beforehand and dropped after a run on a ``--dsn`` server). Adding an
engine to this workload is one such module and one line of :data:`ENGINES`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from iolab.engines.external import Objects
    from iolab.engines.interface import Engine
    from iolab.workloads.populate.loading import PopulateDialect


@dataclass(frozen=True)
class Support:
    """What an engine's part of the workload offers."""

    methods: frozenset[str]  # what ``--method`` takes (LoadMethod values)


_ROWS = frozenset({"insert", "multirow"})
ENGINES: dict[str, Support] = {
    "sqlite": Support(_ROWS),
    "postgres": Support(frozenset({"insert", "multirow", "copy"})),
    "mariadb": Support(_ROWS),
}
NAMES = tuple(ENGINES)
DEFAULT = "sqlite"  # embedded: nothing to install


def _module(name: str) -> Any:
    return importlib.import_module(f"{__package__}.{name}")


def dialect(engine: Engine) -> PopulateDialect:
    """The population workload's SQL for a running engine (its spaces, page size, version)."""
    found: PopulateDialect = _module(engine.name).dialect(engine)
    return found


def objects(name: str) -> Objects:
    """What the workload creates in a server's database on engine ``name``."""
    found: Objects = _module(name).OBJECTS
    return found
