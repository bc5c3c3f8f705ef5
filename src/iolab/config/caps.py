"""The caps on the engine under test: ``memory`` and ``cpus``, one mixin of the workloads that
run an engine (``--memory 256MiB``, ``--cpus 0.5``; ``memory = "256MiB"`` in a file or a matrix).

Only the values are checked here (a size above zero, a number of CPUs above zero); what the
machine and the engine say of them (the controller, the machine's size, the engine's buffers) is
checked before a run is recorded (:mod:`iolab.runner.caps`). A cap left out is not in a cell's
parameters, so that files without caps keep their cells' names.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from iolab.errors import BadInput
from iolab.units import parse_size

MEMORY_HELP = "give a size above zero with its unit, e.g. 256MiB or 2GiB"
CPUS_HELP = "give CPUs above zero, fractions allowed, e.g. 0.5, 1 or 1.5"


def _absent(value: Any) -> bool:
    return value is None


class Caps(BaseModel):
    """``memory``: the engine and the page cache its files fill are held to this size;
    ``cpus``: its processes get this many CPUs' time (a quota per period)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    memory: str | None = Field(default=None, exclude_if=_absent)
    cpus: float | None = Field(default=None, exclude_if=_absent, allow_inf_nan=False)

    @field_validator("memory", mode="before")
    @classmethod
    def _memory(cls, v: object) -> object:
        if v is None:
            return v
        if isinstance(v, bool) or not isinstance(v, str | int):
            raise ValueError(MEMORY_HELP)
        try:
            parse_size(str(v).strip(), "memory")
        except BadInput:
            raise ValueError(MEMORY_HELP) from None
        return str(v).strip()

    @field_validator("cpus")
    @classmethod
    def _cpus(cls, v: float | None) -> float | None:
        if v is not None and v <= 0:
            raise ValueError(CPUS_HELP)
        return v


def memory_bytes(value: str | None) -> int | None:
    """The memory cap in bytes (None: no cap)."""
    return None if value is None else parse_size(value, "--memory")


def caps_of(params: dict[str, Any] | Any) -> dict[str, Any]:
    """The caps a cell's parameters hold (only those given)."""
    return {k: params[k] for k in ("memory", "cpus") if params.get(k) is not None}
