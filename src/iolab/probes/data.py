"""What a recording produces: series on a regular time grid, wait statistics, checkpoints."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from iolab.probes.interface import Checkpoint, Kind, RoleDevice, SeriesKey, WaitStat


@dataclass(frozen=True)
class Series:
    """One quantity over the run.

    Value ``i`` covers the interval ending at ``t0 + i * interval`` seconds from the run's t0,
    except the last one, which ends at ``end_s`` (recording stops between two ticks). A value is
    NaN where the probe had nothing to say (no I/O to take a latency from, a missed sample).
    ``total_num`` / ``total_den`` are the exact sums of the readings' fractions (see
    :mod:`iolab.probes.interface`): for a rate ``total_num`` is the run's total (MB, rows) and
    ``mean`` the run's average rate; for a ratio ``mean`` is the run's weighted mean.
    """

    key: SeriesKey
    t0: float
    interval: float
    end_s: float
    n: int
    total_num: float
    total_den: float
    peak: float | None
    values: Sequence[float] = ()  # empty when read back without values

    @property
    def mean(self) -> float:
        return self.total_num / self.total_den if self.total_den else math.nan

    @property
    def total(self) -> float:
        """A rate's total over the run (its unit without ``/s``); NaN for other kinds."""
        return self.total_num if self.key.kind is Kind.RATE else math.nan

    def times(self) -> list[float]:
        """The end of each value's interval, seconds from t0."""
        t0, step = self.t0, self.interval  # locals: 36,000 samples of a 10-hour run
        out = [t0 + i * step for i in range(len(self.values))]
        if out:
            out[-1] = self.end_s
        return out


@dataclass(frozen=True)
class Chunk:
    """New values of one series, flushed while the run records (live views): ``values[0]`` is
    value number ``start`` of the recording's series number ``series``."""

    series: int
    key: SeriesKey
    interval: float
    start: int
    values: Sequence[float]


@dataclass(frozen=True)
class ProbeData:
    """Everything the probes recorded during one run."""

    interval: float
    wait_interval: float
    duration: float  # seconds from t0 to the end of recording
    series: tuple[Series, ...] = ()
    waits: tuple[WaitStat, ...] = ()
    checkpoints: tuple[Checkpoint, ...] = ()
    roles: tuple[RoleDevice, ...] = ()
    notes: tuple[str, ...] = ()
    warmup_end_s: float | None = None  # where the workload's warm-up ended (shaded)

    def find(
        self, probe: str, name: str, *, subject: str | None = None, role: str | None = None
    ) -> list[Series]:
        return [
            s
            for s in self.series
            if s.key.probe == probe
            and s.key.name == name
            and (subject is None or s.key.subject == subject)
            and (role is None or s.key.role == role)
        ]

    def one(self, probe: str, name: str, *, subject: str | None = None) -> Series | None:
        found = self.find(probe, name, subject=subject)
        return found[0] if found else None


def ordered_waits(waits: Sequence[WaitStat]) -> list[WaitStat]:
    """Largest first, as a wait-statistics table is read."""
    return sorted(waits, key=lambda w: (-w.est_seconds, -w.samples, w.wait_class, w.event))
