"""TPC-H's options: one model for ``iolab tpch``'s flags and an experiment file's
``[workload]`` table alike."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, ClassVar, Literal

from pydantic import AfterValidator, BeforeValidator, Field

from iolab.workloads.caps import Caps
from iolab.workloads.interface import Section, duration_check, one_of
from iolab.workloads.tpch import dialects


class TpchWorkload(Section, Caps):
    hints: ClassVar[Mapping[str, str]] = {
        "loaders": "give 1 or more loader connections",
        "scale_factor": "give a positive scale factor, e.g. 1 or 0.01",
    }
    kind: Literal["tpch"]
    engine: Annotated[str, AfterValidator(one_of(dialects.NAMES))] = dialects.DEFAULT
    scale_factor: float = Field(default=1.0, gt=0)
    compression: Literal["on", "off", "default"] = "default"
    cold: bool = True
    # seconds per query, or as on the command line ("10m")
    timeout: Annotated[float, BeforeValidator(duration_check(0.0, strict=True))] = 600.0
    queries: list[int] | None = None  # a subset of 1..22; all when left out
    loaders: int | None = Field(default=None, ge=1)
    pg_bin: str | None = None
