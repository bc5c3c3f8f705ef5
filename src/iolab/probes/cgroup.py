"""The run's cgroup, when the engine runs under caps (``--memory``, ``--cpus``): whether the cap
was what limited the run.

Series (probe ``cgroup``): ``memory_mb`` (everything charged to the group: the engine's memory
and the page cache its files fill) beside ``memory_limit_mb`` (the cap), ``cache_mb`` (the page
cache part), ``major_faults_per_s`` (the engine's page faults that read from a device),
``cpu_cores`` (CPU time used per second: 0.5 is half a core) beside ``cpu_limit_cores``,
``throttled_periods_per_s`` (cpu.stat's ``nr_throttled``: quota periods in which the group ran
out of its quota) and ``throttled_s_per_s`` (``throttled_time``: seconds its tasks waited for the
next period, per second; summed over the run, the time lost to the cap). Memory in MB (10^6
bytes), as the host's series.
"""

from __future__ import annotations

from pathlib import Path

from iolab.probes.interface import (
    Findings,
    Kind,
    Pace,
    Probe,
    ProbeUnavailable,
    Reading,
    SeriesKey,
    Warn,
    counter_delta,
)
from iolab.system import cgroups

PROBE = "cgroup"


def _key(name: str, unit: str, kind: Kind) -> SeriesKey:
    return SeriesKey(PROBE, name, unit, kind, subject="engine")


MEMORY = _key("memory_mb", "MB", Kind.GAUGE)
LIMIT = _key("memory_limit_mb", "MB", Kind.GAUGE)
CACHE = _key("cache_mb", "MB", Kind.GAUGE)
FAULTS = _key("major_faults_per_s", "faults/s", Kind.RATE)
CPU = _key("cpu_cores", "cores", Kind.RATE)
CPU_LIMIT = _key("cpu_limit_cores", "cores", Kind.GAUGE)
THROTTLED = _key("throttled_periods_per_s", "periods/s", Kind.RATE)
THROTTLED_TIME = _key("throttled_s_per_s", "s/s", Kind.RATE)


class CgroupProbe:
    name = PROBE
    pace = Pace.FINE  # a few small files of the cgroup filesystem
    drop_idle = False

    def __init__(self, group: cgroups.Group) -> None:
        self._group = group
        self._before = cgroups.usage(group)
        self._limits = cgroups.limits(group)

    def open(self, warn: Warn) -> None:
        for path in self._group.paths:
            if not Path(path, "cgroup.procs").exists():
                raise ProbeUnavailable(f"the run's cgroup {path} is gone")

    def start(self, t0_wall: float) -> None:
        self._before = cgroups.usage(self._group)

    def sample(self, t: float, dt: float) -> list[Reading]:
        now = cgroups.usage(self._group)
        before = self._before
        out: list[Reading] = []
        memory, cpus = self._limits
        if now.memory_bytes is not None:
            out.append(Reading(MEMORY, now.memory_bytes / 1e6))
        if memory is not None:
            out.append(Reading(LIMIT, memory / 1e6))
        if now.cache_bytes is not None:
            out.append(Reading(CACHE, now.cache_bytes / 1e6))
        for key, a, b in (
            (FAULTS, now.major_faults, before.major_faults),
            (CPU, now.cpu_seconds, before.cpu_seconds),
            (THROTTLED, now.throttled, before.throttled),
            (THROTTLED_TIME, now.throttled_seconds, before.throttled_seconds),
        ):
            if a is not None and b is not None:
                out.append(Reading(key, counter_delta(a, b), dt))
        if cpus is not None:
            out.append(Reading(CPU_LIMIT, cpus))
        self._before = now
        return out

    def finish(self, t: float) -> Findings:
        return Findings()

    def close(self) -> None:
        pass


def cgroup_probes() -> list[Probe]:
    """The run's cgroup probe while a capped run is in progress (nothing otherwise)."""
    group = cgroups.active()
    return [] if group is None else [CgroupProbe(group)]
