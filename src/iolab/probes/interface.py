"""What a probe is: a sampler that runs beside a workload and reports what happened underneath.

A probe is opened (it finds and checks its source: a /proc file, a database view, a log file),
started (it reads its baseline), sampled every ``interval`` seconds (it returns readings for the
interval since its previous sample) and finished (it hands over what it found besides series:
wait statistics, checkpoints, which device stands behind which role). A probe that cannot read
its source raises :class:`ProbeUnavailable` from ``open``; the recorder says so once and the run
goes on without it.

Every reading is a fraction ``num / den``, so that whole-run figures are exact sums:

- a ``rate`` (MB/s, IOPS, rows/s): ``num`` is the counter's increase over the interval, ``den``
  the interval in seconds; summed over the run, ``num`` is the total (MB written, rows);
- a ``ratio`` (latency per I/O, queue depth, CPU %): ``num`` and ``den`` are the increases of two
  counters (ms spent in writes, writes done); the run's figure is sum(num) / sum(den), the mean
  weighted as the kernel or the engine counts it, not a mean of per-second means;
- a ``gauge`` (dirty memory, file size, checkpoint age): ``num`` is the value now, ``den`` 1.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import NamedTuple, Protocol, runtime_checkable

Warn = Callable[[str], None]  # how a probe tells the user something, once


class Kind(StrEnum):
    RATE = "rate"
    RATIO = "ratio"
    GAUGE = "gauge"


class SeriesKey(NamedTuple):
    """Names one series of a run (a named tuple: probes make hundreds of keys and readings per
    sample, ten times a second at a run's start, on the thread that shares the GIL with the
    loaders).

    ``probe`` is the sampler (device, host, postgres, ...), ``name`` the quantity
    (``write_mbps``), ``subject`` what it is about (a device, a CPU core, a backend type and
    object, a file), ``role`` what the device holds in the run (data, wal, temp, target; several
    joined with ``+``).
    """

    probe: str
    name: str
    unit: str
    kind: Kind
    subject: str = ""
    role: str = ""


class Reading(NamedTuple):
    """One sample of one series: ``num / den`` (see the module docstring)."""

    key: SeriesKey
    num: float
    den: float = 1.0

    @property
    def value(self) -> float:
        return self.num / self.den if self.den else math.nan


@dataclass(frozen=True)
class WaitStat:
    """How much of the run the watched sessions spent in one wait event.

    ``samples``: for sampled sources (PostgreSQL's pg_stat_activity at 10 Hz) the number of
    session-samples that found the event; for summed sources (MariaDB's performance_schema) the
    number of waits. ``share``: the event's part of all samples (or of all timed wait time).
    ``est_seconds``: session-seconds spent in it (samples x the sampling period, or the timer).
    """

    source: str
    wait_class: str
    event: str
    samples: int
    share: float
    est_seconds: float


@dataclass(frozen=True)
class Checkpoint:
    """One checkpoint as an interval of the run's time axis (seconds from t0).

    ``end_s`` is None for a checkpoint still running when recording stopped; ``pages`` is None
    where the source does not say. ``kind`` is what started it (``time``, ``wal``, ``immediate
    force wait``) or ``flush`` for InnoDB's fuzzy checkpoint activity.
    """

    start_s: float
    end_s: float | None
    pages: int | None
    kind: str
    detail: str = ""


@dataclass(frozen=True)
class RoleDevice:
    """What stands behind one role's path: a block device, or memory (tmpfs)."""

    role: str
    path: str
    device: str | None  # the /proc/diskstats name (sda1, loop3, dm-0, md0), None for memory
    kind: str  # disk | partition | loop | dm | md | memory | unknown
    disk: str | None = None  # the whole disk a partition belongs to
    filesystem: str = ""


@dataclass(frozen=True)
class Findings:
    """What a probe hands over at the end besides its readings."""

    waits: Sequence[WaitStat] = ()
    checkpoints: Sequence[Checkpoint] = ()
    roles: Sequence[RoleDevice] = ()
    notes: Sequence[str] = field(default_factory=tuple)


@runtime_checkable
class SoFar(Protocol):
    """A probe that can tell its waits or checkpoints while the run goes on (for live views):
    called from another thread than its sampling one, so it only reads copies of its state."""

    def so_far(self) -> Findings: ...


class ProbeUnavailable(Exception):
    """The probe cannot read its source (missing file or view, no permission, no device)."""


class Pace(StrEnum):
    """How often a probe is sampled, on one thread per pace."""

    WAITS = "waits"  # the wait interval throughout (10 Hz): wait events, a snapshot per sample
    FINE = "fine"  # 10 Hz for a run's first 10 s, then the interval (iolab.sampling.Grid): cheap
    # samplers (a /proc file, a counter in this process, a log's new lines)
    INTERVAL = "interval"  # the interval from the start: engine counters, a query per sample
    # that costs the server and the GIL a millisecond, too dear ten times a second


class Probe(Protocol):
    """A sampler, sampled at its ``pace``. ``drop_idle``: series that never moved are dropped
    at the end (a probe with dozens of mostly idle series, such as pg_stat_io's backend
    types)."""

    name: str
    pace: Pace
    drop_idle: bool

    def open(self, warn: Warn) -> None:
        """Find and check the source; raise ProbeUnavailable when it cannot be read."""
        ...

    def start(self, t0_wall: float) -> None:
        """Read the baseline; ``t0_wall`` is the run's t0 as Unix time (for log timestamps)."""
        ...

    def sample(self, t: float, dt: float) -> Sequence[Reading]:
        """The readings for the ``dt`` seconds ending at ``t`` (seconds from t0)."""
        ...

    def finish(self, t: float) -> Findings:
        """What was found besides series; called once, after the last sample."""
        ...

    def close(self) -> None:
        """Release the source (connections, files); safe to call twice."""
        ...


def counter_delta(now: float, before: float) -> float:
    """The increase of a cumulative counter; a counter that went back was reset (a server
    restart, pg_stat_reset, a wrapped 32-bit field) and counted up from zero since."""
    return now - before if now >= before else now
