"""sysbench's options: one model for ``iolab sysbench``'s flags and an experiment file's
``[workload]`` table alike. The script and the named keys (threads, duration, rate, tables,
table_size) become sysbench's arguments before ``args``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, ClassVar, Literal

from pydantic import AfterValidator, Field

from iolab.workloads.drivers import DriverWorkload
from iolab.workloads.interface import one_of

# The engines sysbench drives, by the protocol they speak (its --db-driver mysql or pgsql).
ENGINES = ("mariadb", "postgres")


class SysbenchWorkload(DriverWorkload):
    hints: ClassVar[Mapping[str, str]] = {
        "tables": "give 1 or more tables",
        "table_size": "give 1 or more rows per table",
    }
    kind: Literal["sysbench"]
    engine: Annotated[str, AfterValidator(one_of(ENGINES))] = "mariadb"
    script: str  # one of sysbench's own (oltp_read_write) or a Lua file
    tables: int | None = Field(default=None, ge=1)
    table_size: int | None = Field(default=None, ge=1)

    @classmethod
    def offered_rate(cls, rate: float | None, args: Sequence[str]) -> float | None:
        """sysbench takes its deprecated ``--tx-rate`` when not 0, else the last ``--rate``
        (the named ``rate`` comes first); 0 is unlimited."""
        from iolab.workloads.sysbench.arguments import args_rate

        found = args_rate(args)
        return rate if found is None else found or None
