"""pgbench's options: one model for ``iolab pgbench``'s flags and an experiment file's
``[workload]`` table alike. The named keys (clients, threads, scale, duration, rate, script)
become pgbench's arguments before ``args``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, ClassVar, Literal

from pydantic import AfterValidator, Field

from iolab.workloads.drivers import DriverWorkload
from iolab.workloads.interface import one_of

ENGINES = ("postgres",)  # the engines pgbench drives: those that speak PostgreSQL's protocol


class PgbenchWorkload(DriverWorkload):
    hints: ClassVar[Mapping[str, str]] = {
        "clients": "give 1 or more clients",
        "scale": "give a scale of 1 or more",
    }
    kind: Literal["pgbench"]
    engine: Annotated[str, AfterValidator(one_of(ENGINES))] = "postgres"
    clients: int | None = Field(default=None, ge=1)
    scale: int | None = Field(default=None, ge=1)
    # builtin names (tpcb-like, simple-update, select-only) or script files, each NAME[@WEIGHT]
    script: list[str] = Field(default_factory=list)
    init_args: str = "-i"

    @classmethod
    def offered_rate(cls, rate: float | None, args: Sequence[str]) -> float | None:
        """pgbench takes the last -R (the named ``rate`` comes first)."""
        from iolab.workloads.pgbench.arguments import args_rate

        found = args_rate(args)
        return rate if found is None else found
