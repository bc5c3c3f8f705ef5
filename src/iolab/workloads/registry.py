"""The workloads iolab runs: one line each. The runner, experiment files, ``iolab plan``, the
fleet and the report find a workload here and nowhere else (docs/architecture.md)."""

from __future__ import annotations

from functools import cache

from iolab.metrics import COMMON, Metric
from iolab.workloads.disk.workload import WORKLOAD as DISK
from iolab.workloads.interface import Section, Workload
from iolab.workloads.pgbench.workload import WORKLOAD as PGBENCH
from iolab.workloads.populate.workload import WORKLOAD as POPULATE
from iolab.workloads.sysbench.workload import WORKLOAD as SYSBENCH
from iolab.workloads.tpcc.workload import WORKLOAD as TPCC
from iolab.workloads.tpch.workload import WORKLOAD as TPCH

WORKLOADS: dict[str, Workload] = {
    w.name: w for w in (POPULATE, DISK, TPCH, TPCC, PGBENCH, SYSBENCH)
}
MODELS: dict[str, type[Section]] = {name: w.model for name, w in WORKLOADS.items()}


@cache
def declared_metrics() -> dict[str, Metric]:
    """Every declared number: the common ones and each workload's."""
    every = [*COMMON, *(m for w in WORKLOADS.values() for m in w.metrics)]
    return {m.name: m for m in every}


def find_metric(name: str) -> Metric | None:
    """The declaration of ``name`` (a summary key, or a dotted path declared by its last part:
    ``tests.SEQ1M Q8T1 read.mbps`` by ``mbps``), or None for a number no workload declared (a
    count of rows, a page size: not a measurement to compare)."""
    found = declared_metrics()
    return found.get(name) or found.get(name.rsplit(".", 1)[-1])


def lookup_metric(name: str) -> Metric:
    """The declaration of ``name``; KeyError for a number no workload declared."""
    found = find_metric(name)
    if found is None:
        raise KeyError(f"{name} is not declared by any workload (workloads/<name>/metrics.py)")
    return found
