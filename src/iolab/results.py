"""What runs produce: the typed records the workloads return and the store keeps.

Experiment -> Cell (resolved parameters, named by a hash) -> Run (one repetition). Only runs whose
status is ``done`` enter statistics.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, NewType

from iolab.latency.data import LatencyData
from iolab.latency.histogram import Histogram
from iolab.probes.data import ProbeData

RunId = NewType("RunId", int)
MAX_ID = 2**63 - 1  # SQLite's integers; a larger id names no row
ExperimentId = NewType("ExperimentId", int)
CellId = NewType("CellId", str)
EnvId = NewType("EnvId", str)


class RunStatus(StrEnum):
    PLANNED = "planned"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    ABORTED = "aborted"


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no spaces: the same value always gives the same text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def content_hash(value: Any, length: int = 16) -> str:
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()[:length]


def cell_id(params: dict[str, Any]) -> CellId:
    """A cell is named by a hash of its resolved configuration, each renamed key under the
    name it was first stored under (:func:`iolab.vocabulary.first_named`)."""
    from iolab.vocabulary import first_named

    return CellId(content_hash(first_named(params), 12))


@dataclass(frozen=True)
class Latency:
    """Latency of one kind of operation, in microseconds."""

    mean: float
    p50: float
    p99: float
    p999: float


@dataclass(frozen=True)
class DiskPass:
    """One fio invocation of one disk test.

    ``mbps`` is decimal megabytes per second (10^6 bytes/s), as CrystalDiskMark prints.
    ``sync`` is the fdatasync latency for tests that sync after each write (commit latency).
    ``device_bytes`` is what /proc/diskstats saw reach the device during the pass (None where
    there is no block device).
    """

    test: str
    rw: str
    bs: int
    qd: int
    threads: int
    pass_no: int  # 0 is the discarded warm-up pass
    seconds: float
    mbps: float
    iops: float
    lat: Latency
    sync: Latency | None = None
    io_bytes: int = 0
    device_bytes: int | None = None

    @property
    def discarded(self) -> bool:
        return self.pass_no == 0


@dataclass(frozen=True)
class SyncHistogram:
    """The fdatasync latencies of one pass of a disk test that syncs after each write (the
    commit test), as a histogram in microseconds from fio's json+ bins: what a report draws
    beside a database's commit latency."""

    test: str
    pass_no: int  # 0 is the discarded warm-up pass
    histogram: Histogram

    @property
    def discarded(self) -> bool:
        return self.pass_no == 0


@dataclass(frozen=True)
class QueryResult:
    """One query of a query workload (TPC-H's power run).

    ``seconds`` and ``rows`` are None when the query did not finish (``error`` says why);
    ``answer_ok`` is None when there was no reference answer to check it against.
    """

    query: int
    seconds: float | None
    rows: int | None
    answer_ok: bool | None
    error: str | None = None
    # what each block device behind the layout did during the timed query: device name ->
    # roles, read/write bytes, I/Os and milliseconds (iolab.probes.standard.device_deltas)
    io: Mapping[str, Mapping[str, Any]] | None = None
    start_s: float | None = None  # when the timed query began, seconds on the probes' time axis


@dataclass
class RunOutcome:
    """Everything a finished (or interrupted) run hands to the store in one transaction."""

    status: RunStatus
    summary: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    disk_passes: list[DiskPass] = field(default_factory=list)
    sync_histograms: list[SyncHistogram] = field(default_factory=list)  # commit test's passes
    query_results: list[QueryResult] = field(default_factory=list)
    probes: ProbeData | None = None  # what the probes recorded (None: probes were off)
    logs: dict[str, str] = field(default_factory=dict)  # e.g. the server log, by name
    latency: LatencyData | None = None  # each operation's latency (populate's client loops)
