"""What an experiment's report says, as one typed value: :class:`ExperimentReport`.

:func:`iolab.report.build` makes it from the results database; the terminal (``cli/``), JSON
(:mod:`iolab.report.document`) and HTML (:mod:`iolab.report.html`) renderers only present it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypeAlias

from iolab.analysis.diagnosis import Why
from iolab.analysis.disk import DiskTestSummary
from iolab.analysis.efficiency import Drift, Efficiency
from iolab.analysis.findings import CellStats, Findings, MatrixValue
from iolab.analysis.queries import QueryTimes
from iolab.metrics import Metric
from iolab.probes.data import ProbeData
from iolab.report.charts import Mark
from iolab.report.spectrum import Spectrum
from iolab.results import CellId, ExperimentId, RunId, RunStatus
from iolab.store.overlaps import Overlap

# A cell's params and a run's environment as stored: JSON
JsonValue: TypeAlias = str | int | float | bool | list["JsonValue"] | dict[str, "JsonValue"] | None


@dataclass(frozen=True)
class RunView:
    """One run shown with its timeline: which cell, which run, what the probes recorded."""

    cell: str
    run_id: int
    probes: ProbeData
    marks: Sequence[Mark] = ()  # where each query began (TPC-H)
    steady: tuple[float, float, float] | None = None  # a populate run's steady part and rate


@dataclass(frozen=True)
class ReportRun:
    """One run of a cell: its status, the metric's value (done runs that recorded it)."""

    id: RunId
    status: RunStatus
    value: float | None
    started_at: str | None
    error: str | None
    core: str = ""  # the driver core that ran its load and why: "native (built)", or ""


@dataclass(frozen=True)
class ReportCell:
    """One cell: its label (its matrix values), params, runs, and its statistics."""

    id: CellId
    label: str
    workload: str
    values: Mapping[str, MatrixValue]
    params: Mapping[str, JsonValue]
    runs: tuple[ReportRun, ...]
    stats: CellStats

    @property
    def failed(self) -> int:
        return sum(1 for r in self.runs if r.status in (RunStatus.FAILED, RunStatus.ABORTED))


@dataclass(frozen=True)
class DiskGrid:
    """A CrystalDiskMark grid: a disk cell's run, or an `iolab disk` run given with --with-disk."""

    title: str
    tests: tuple[DiskTestSummary, ...]


@dataclass(frozen=True)
class ExperimentReport:
    """An experiment's answer: the metric, the findings over its cells, the latency spectra,
    and (when asked for, for HTML) the runs underneath, disk grids and the environment of the
    first run."""

    name: str
    experiment: ExperimentId
    metric: str  # a summary key or a dotted path into its tables
    declaration: Metric  # what the registry says of it: unit, direction, words
    findings: Findings
    cells: tuple[ReportCell, ...]
    timelines: tuple[RunView, ...] = ()
    disks: tuple[DiskGrid, ...] = ()
    environment: Mapping[str, JsonValue] | None = None
    spectra: tuple[Spectrum, ...] = ()  # latency by percentile, per operation kind
    overlaps: tuple[Overlap, ...] = ()  # its runs that ran beside another run on their host
    why: Why | None = None  # what limited each cell, and whether each finding moved it

    @property
    def lower_is_better(self) -> bool:
        return self.declaration.lower_is_better

    @property
    def direction(self) -> str:
        return self.declaration.direction

    @property
    def unit(self) -> str:
        return self.declaration.unit

    @property
    def run_count(self) -> int:
        return sum(len(c.runs) for c in self.cells)

    @property
    def best(self) -> ReportCell | None:
        best = self.findings.best
        return next((c for c in self.cells if c.stats is best), None)

    @property
    def warnings(self) -> tuple[str, ...]:
        return self.findings.warnings

    @property
    def efficiency(self) -> tuple[Efficiency, ...]:
        return self.findings.efficiency

    @property
    def drift(self) -> Drift | None:
        return self.findings.drift

    @property
    def queries(self) -> tuple[QueryTimes, ...]:
        return self.findings.queries
