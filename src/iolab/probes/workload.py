"""The workload's own progress as a series on the probes' time axis (rows committed per second)."""

from __future__ import annotations

from collections.abc import Callable

from iolab.probes.interface import Findings, Kind, Pace, Reading, SeriesKey, Warn, counter_delta

PROBE = "workload"


class CounterProbe:
    """A cumulative counter the workload keeps in memory (``read`` must be cheap and
    thread-safe to call: reading an int is), sampled as a rate."""

    name = PROBE
    pace = Pace.FINE
    drop_idle = False

    def __init__(self, series: str, unit: str, read: Callable[[], float]) -> None:
        self._key = SeriesKey(PROBE, series, unit, Kind.RATE)
        self._read = read
        self._before = 0.0

    def open(self, warn: Warn) -> None:
        pass

    def start(self, t0_wall: float) -> None:
        self._before = float(self._read())

    def sample(self, t: float, dt: float) -> list[Reading]:
        now = float(self._read())
        reading = Reading(self._key, counter_delta(now, self._before), dt)
        self._before = now
        return [reading]

    def finish(self, t: float) -> Findings:
        return Findings()

    def close(self) -> None:
        pass


def rows_probe(read: Callable[[], float]) -> CounterProbe:
    """Rows committed per second: the workload's throughput."""
    return CounterProbe("rows_per_s", "rows/s", read)
