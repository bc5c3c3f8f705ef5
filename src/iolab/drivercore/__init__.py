"""Which driver core runs a load's hot loop: the compiled one or the Python one.

The compiled core (``iolab.drivercore._native``, C over libpq and libmariadb, sources in
``drivercore/c``) runs the inner loops of populate's client mode and TPC-C's server mode on
PostgreSQL and MariaDB with its workers outside the interpreter lock; the Python drivers stay
as the fallback and the reference the core is tested against (docs/architecture.md).

``IOLAB_DRIVER_CORE`` chooses: ``auto`` (the default: the compiled core where it is built and
runs the workload, else Python), ``native`` (the compiled core or a clear error) or ``python``.
Each run records the core that ran (:class:`Core`), which ``results show``, ``report`` and
``serve`` show: pip hides a skipped build, so a user would not know otherwise.

What a workload hands the core of an engine is one :class:`Target`, which the engine gives
(``Engine.core_target()``): the client library that speaks to its server, the parameters the
core's connections are opened with, and a failed statement's message as the Python path's
driver words it. Populate and TPC-C reach the engine through it alone.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Protocol

from iolab.errors import BadInput

ENV = "IOLAB_DRIVER_CORE"
CHOICES = ("auto", "native", "python")
NATIVE, PYTHON = "native", "python"


@dataclass(frozen=True)
class Core:
    """The core that ran a load, and why that one."""

    name: str  # NATIVE or PYTHON
    reason: str  # e.g. "built", "IOLAB_DRIVER_CORE=python", "not built: ..."

    def record(self) -> dict[str, Any]:
        """What the run's environment keeps of it."""
        return {"driver_core": self.name, "driver_core_reason": self.reason}


class Target(Protocol):
    """A server as the compiled core reaches it: what an engine gives the core (its
    ``core_target()``; None for an engine the core does not drive)."""

    @property
    def library(self) -> str:
        """The core's client library for it: ``postgres`` (libpq) or ``mariadb`` (libmariadb)."""
        ...

    def params(self) -> dict[str, str]:
        """What the core's connections are opened with, as the engine's own connections are (a
        password among them, kept in memory only, never shown)."""
        ...

    def error(self, code: int | None, message: str) -> str:
        """A statement's failure in the core (the client library's error number, None where it
        gives none, and its message) worded as the Python path's driver words it, so that a
        run's error line does not depend on the core."""
        ...


def _load() -> tuple[ModuleType | None, str]:
    """The compiled module, or None and the import's own error."""
    try:
        from iolab.drivercore import _native
    except ImportError as exc:
        return None, str(exc)
    return _native, ""


def native() -> ModuleType | None:
    """The compiled module, or None when it was not built (or does not load)."""
    return _load()[0]


def built() -> bool:
    """Whether the compiled module is installed, found without loading it (a run's
    environment records it; loading it would load libpq and libmariadb too)."""
    return importlib.util.find_spec("iolab.drivercore._native") is not None


def ran(summary: Mapping[str, Any]) -> str:
    """``native (built)``: the core a run's summary recorded and why; "" for a run that recorded
    none (a disk run, a SQLite load, a run stored before the core existed)."""
    name = summary.get("driver_core")
    if not name:
        return ""
    reason = summary.get("driver_core_reason")
    return f"{name} ({reason})" if reason else str(name)


def shown(summary: Mapping[str, Any]) -> str:
    """``driver core: native (built)``, as ``results show``, the HTML report and serve's run
    page say it; "" for a run that recorded no core."""
    core = ran(summary)
    return f"driver core: {core}" if core else ""


def missing() -> str:
    """Why the compiled core is not there (the import's own error)."""
    module, error = _load()
    if module is not None:
        return ""
    return (
        f"not built ({error}); scripts/setup.sh installs gcc, python3-dev, libpq-dev and "
        "libmariadb-dev, then reinstalls"
    )


def wanted() -> str:
    """The ``IOLAB_DRIVER_CORE`` choice (auto when unset); bad values are refused."""
    value = os.environ.get(ENV, "auto").strip().lower() or "auto"
    if value not in CHOICES:
        raise BadInput(ENV, value, "give auto, native or python")
    return value


def choose(supported: bool, what: str) -> Core:
    """The core for a load the compiled core can run when ``supported`` (``what`` names the
    load, for the errors: "TPC-C's client mode")."""
    choice = wanted()
    if choice == PYTHON:
        return Core(PYTHON, f"{ENV}=python")
    if not supported:
        if choice == NATIVE:
            raise BadInput(
                ENV, choice, f"the compiled core does not run {what}: unset it or give python"
            )
        return Core(PYTHON, f"the compiled core does not run {what}")
    if native() is None:
        if choice == NATIVE:
            raise BadInput(ENV, choice, f"the compiled core is {missing()}")
        return Core(PYTHON, f"the compiled core is {missing()}")
    return Core(NATIVE, "built" if choice == "auto" else f"{ENV}=native")
