"""The caps on the engine under test (``--memory``, ``--cpus``): the options, what is refused
before a run is recorded, and the cgroup the run runs in (docs/caps.md).

**The options**: :class:`Caps`, a mixin of the workloads that run an engine (populate, tpch):
``--memory 256MiB``, ``--cpus 0.5``; ``memory = "256MiB"`` in a file or a matrix. The model
checks only the values (a size above zero, CPUs above zero, or ``"off"``: no cap, so that a
matrix can set capped cells beside uncapped ones); :func:`check` what the machine and the
engine say of them. A cap left out is not in a cell's parameters, so that files without caps
keep their cells' names; ``"off"`` is kept, so that a matrix's cell is labelled as its file
says.

**Servers** (PostgreSQL's postmaster and backends, mariadbd) run in the run's cgroup: they join
it as they start (:mod:`iolab.system.cgroups`). iolab's own process, its loaders and its probes
stay outside: the caps hold the engine, not the client that drives it.

**Embedded engines** (SQLite, DuckDB) run inside iolab's process, so iolab's process enters the
cgroup for the run and leaves it after: the cap holds the engine together with iolab's loaders
and probes.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from iolab.errors import BadInput, IolabError, RunFailed
from iolab.results import RunOutcome
from iolab.system.cgroups import CPU_PERIOD_US, MIN_CPUS, MIN_QUOTA_US
from iolab.units import parse_size
from iolab.workloads.interface import OFF, settings_of

if TYPE_CHECKING:
    from iolab.engines.catalog import EngineKind
    from iolab.system.cgroups import Group

MEMORY_HELP = 'give a size above zero with its unit, e.g. 256MiB or 2GiB, or "off"'
CPUS_HELP = (
    f"give {MIN_CPUS:g} CPUs or more (the kernel's least quota: {MIN_QUOTA_US // 1000} ms "
    f'per {CPU_PERIOD_US // 1000} ms period), fractions allowed, e.g. 0.5, 1 or 1.5, or "off"'
)


def _absent(value: Any) -> bool:
    return value is None


class Caps(BaseModel):
    """``memory``: the engine and the page cache its files fill are held to this size;
    ``cpus``: its processes get this many CPUs' time (a quota per period)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    memory: str | None = Field(default=None, exclude_if=_absent)
    cpus: float | Literal["off"] | None = Field(default=None, exclude_if=_absent)

    @field_validator("memory", mode="before")
    @classmethod
    def _memory(cls, v: object) -> object:
        if v is None or v == OFF:
            return v
        if isinstance(v, bool) or not isinstance(v, str | int):
            raise ValueError(MEMORY_HELP)
        try:
            parse_size(str(v).strip(), "memory")
        except BadInput:
            raise ValueError(MEMORY_HELP) from None
        return str(v).strip()

    @field_validator("cpus", mode="before")
    @classmethod
    def _cpus(cls, v: object) -> object:
        if v is None or v == OFF:
            return v
        if isinstance(v, bool) or not isinstance(v, int | float | str):
            raise ValueError(CPUS_HELP)
        try:
            cpus = float(v)
        except ValueError:
            raise ValueError(CPUS_HELP) from None
        if not math.isfinite(cpus) or cpus < MIN_CPUS:
            raise ValueError(CPUS_HELP)
        return cpus


def memory_bytes(value: str | None) -> int | None:
    """The memory cap in bytes (None: no cap)."""
    return None if value in (None, OFF) else parse_size(str(value), "--memory")


def caps_of(params: Mapping[str, Any]) -> dict[str, Any]:
    """The caps a cell's parameters hold (only those given, and not "off")."""
    return {k: params[k] for k in ("memory", "cpus") if params.get(k) not in (None, OFF)}


_SETTING = re.compile(r"^\s*(\d+)\s*([kKmMgGtT]?)[bB]?\s*$")
_UNITS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4}
Body = Callable[[RunOutcome], None]


def _flag(key: str) -> str:
    return f"--{key}"


def setting_bytes(text: str, bare: int) -> int | None:
    """Bytes of a buffer size as the engines write it (128MB, 128M, 1GB; a bare number counts
    ``bare`` bytes: PostgreSQL's 8 kB pages); None when it is not one of those."""
    m = _SETTING.match(str(text))
    if m is None:
        return None
    number, unit = int(m.group(1)), m.group(2).lower()
    return number * (1024 ** _UNITS[unit] if unit else bare)


def _machine_memory() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    return 0


def _machine_cpus() -> int:
    return len(os.sched_getaffinity(0))


def check(params: Mapping[str, Any]) -> None:
    """Refuse caps this run cannot have, before anything is recorded: a cap with ``--dsn``
    (iolab does not own that server), a cap above the machine, a machine without the
    controller (or not root), a memory cap below what the engine needs to start."""
    from iolab.engines import catalog
    from iolab.system import cgroups

    caps = caps_of(params)
    if not caps:
        return
    key, value = next(iter(caps.items()))
    if params.get("dsn"):
        raise BadInput(
            _flag(key),
            value,
            "a cap holds a server iolab starts, not one named by --dsn; leave out the cap or "
            "the DSN",
        )
    memory = memory_bytes(caps.get("memory"))
    if memory is not None and memory > (total := _machine_memory()):
        raise BadInput(
            "--memory", caps["memory"], f"this machine has {total / 2**20:,.0f} MiB; give less"
        )
    cpus = caps.get("cpus")
    if cpus is not None and cpus > (count := _machine_cpus()):
        raise BadInput("--cpus", cpus, f"this machine has {count} CPUs; give at most {count}")
    refused = cgroups.missing(memory is not None, cpus is not None)
    if refused is not None:
        which = "memory" if "memory" in caps and "memory cgroup" in refused else key
        raise BadInput(_flag(which), caps[which], refused)
    engine = catalog.KINDS.get(str(params.get("engine")))
    if memory is None or engine is None:
        return
    need = least_memory(engine, params)
    if need is not None and memory < need.cap:
        raise BadInput("--memory", caps["memory"], need.advice())


@dataclass(frozen=True)
class LeastMemory:
    """The smallest memory cap an engine is let run under (whole MiB): what it needs beside
    its buffer pool, and the pool as the cap fits it or as given."""

    cap: int  # bytes
    title: str
    beside: int  # bytes the engine (and, embedded, iolab's process) needs beside the pool
    pool: tuple[str, int, bool] | None  # (setting, bytes under ``cap``, fitted to it) or None

    def advice(self) -> str:
        least = f"give at least {self.cap >> 20}MiB"
        if self.pool is None:
            return (
                f"{self.title} runs in iolab's process, which the cap holds too: a small load "
                f"needs {self.beside >> 20} MiB (measured, docs/caps.md); {least}"
            )
        name, pool, fitted = self.pool
        how = f", fitted to {self.cap >> 20}MiB" if fitted else ""
        return (
            f"{self.title} needs its {name} ({pool / 2**20:,.0f} MiB{how}) and "
            f"{self.beside >> 20} MiB beside it; {least}, or a smaller {name} with --set"
        )


def least_memory(engine: EngineKind, params: Mapping[str, Any]) -> LeastMemory | None:
    """The smallest ``--memory`` ``engine`` is let run under with the cell's settings (None:
    a pool setting the engine's own check names). With a pool fitted to the cap (a share of
    it), the least cap is the smallest whole MiB that holds its own fitted pool and what the
    engine needs beside it, so that the figure the refusal states is taken when given back."""
    if engine.buffers is None:
        return LeastMemory(engine.least_memory, engine.title, engine.least_memory, None)
    name, default, bare = engine.buffers
    given = (params.get("settings") or {}).get(name)

    def pool_under(cap: int) -> int | None:
        setting = given if given is not None else engine.fitted({}, cap).get(name)
        return default if setting is None else setting_bytes(str(setting), bare)

    cap = 1 << 20
    while True:  # the pool grows with the cap by a share under 1: this ends within a few steps
        pool = pool_under(cap)
        if pool is None:
            return None
        need = -(-(pool + engine.beside_buffers) // (1 << 20)) << 20  # whole MiB, up
        if need <= cap:
            fitted = given is None and name in engine.fitted({}, cap)
            return LeastMemory(cap, engine.title, engine.beside_buffers, (name, pool, fitted))
        cap = need


def recorded(params: Mapping[str, Any]) -> dict[str, str]:
    """The caps as the run's environment keeps them (beside the tools' versions)."""
    caps = caps_of(params)
    out: dict[str, str] = {}
    if "memory" in caps:
        out["memory cap"] = f"{caps['memory']} ({memory_bytes(caps['memory'])} bytes)"
        given = params.get("settings") or {}
        fitted = {k: v for k, v in settings_of(params).items() if k not in given}
        if fitted:
            out["fitted to the memory cap"] = " ".join(f"{k}={v}" for k, v in fitted.items())
    if "cpus" in caps:
        out["cpus cap"] = f"{caps['cpus']:g}"
    return out


def capped(params: Mapping[str, Any], body: Body) -> Body:
    """``body`` run under the cell's caps: in a cgroup of its own, made before and removed
    after (with no caps, ``body`` itself; the cgroups killed runs left are removed either
    way)."""
    from iolab.engines import catalog

    caps = caps_of(params)
    kind = catalog.KINDS.get(str(params.get("engine")))
    embedded = kind is not None and not kind.server

    def run(outcome: RunOutcome) -> None:
        with _held(caps, embedded, busy_processes(params)) as group:
            try:
                body(outcome)
            except IolabError as exc:
                raise _killed_at_the_cap(group, caps, exc) from exc

    return run


def busy_processes(params: Mapping[str, Any]) -> int:
    """How many of the engine's processes a run keeps busy at once: one per session it opens
    (connections, clients, threads, loaders), else one per CPU of its ``cpus`` cap, at least
    1. The cgroup weighs as that many (:func:`iolab.system.cgroups.make`)."""
    for key in ("connections", "clients", "threads", "loaders"):
        value = params.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    cpus = params.get("cpus")
    return max(1, math.ceil(float(cpus))) if isinstance(cpus, int | float) else 1


def _killed_at_the_cap(group: Group | None, caps: Mapping[str, Any], exc: IolabError) -> Exception:
    """``exc``, or when the kernel's OOM killer ended processes of the run at its memory cap
    (a server's "stopped (signal 9)" says only that it was killed), a failure that says so
    first."""
    from iolab.system import cgroups

    killed = cgroups.oom_kills(group) if group is not None else 0
    if not killed:
        return exc
    what = "a process" if killed == 1 else f"{killed} processes"
    return RunFailed(
        f"the kernel's OOM killer ended {what} of the run at its memory cap "
        f"(--memory {caps.get('memory')}): give a larger cap, or smaller buffers with --set; "
        f"{exc}"
    )


@contextmanager
def _held(caps: Mapping[str, Any], embedded: bool, processes: int = 1) -> Iterator[Group | None]:
    """The run's cgroup, made and entered for the block (None: no caps)."""
    from iolab.system import cgroups

    if not caps:
        if cgroups.find("memory") is not None and os.geteuid() == 0:
            cgroups.reap()
        yield None
        return
    with (
        cgroups.held(memory_bytes(caps.get("memory")), caps.get("cpus"), processes) as group,
        cgroups.entered(group) if embedded else nullcontext(),
    ):
        yield group
