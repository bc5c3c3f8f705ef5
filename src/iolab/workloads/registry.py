"""The workloads iolab runs: one line each. The runner, experiment files, ``iolab plan``, the
fleet and the report find a workload here and nowhere else (docs/architecture.md)."""

from __future__ import annotations

from iolab.workloads.disk.workload import WORKLOAD as DISK
from iolab.workloads.interface import Section, Workload
from iolab.workloads.populate.workload import WORKLOAD as POPULATE
from iolab.workloads.tpch.workload import WORKLOAD as TPCH

WORKLOADS: dict[str, Workload] = {w.name: w for w in (POPULATE, DISK, TPCH)}
MODELS: dict[str, type[Section]] = {name: w.model for name, w in WORKLOADS.items()}
