"""The host: CPU time (total and per core) from /proc/stat, dirty and writeback memory from
/proc/meminfo.

CPU series are shares of the interval's CPU time in percent (100 = every core busy; per core,
100 = that core busy): ``cpu_user_pct`` (user + nice), ``cpu_system_pct`` (system + irq +
softirq), ``cpu_iowait_pct`` (idle with I/O outstanding), ``cpu_steal_pct`` (taken by the
hypervisor), subject ``all`` or the core (``cpu0``). ``procs_blocked`` is the number of tasks in
uninterruptible sleep (mostly waiting for I/O), ``dirty_mb`` and ``writeback_mb`` the page cache
waiting to be written and being written (MB, 10^6 bytes).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from iolab.probes.interface import (
    Findings,
    Kind,
    Pace,
    ProbeUnavailable,
    Reading,
    SeriesKey,
    Warn,
    counter_delta,
)

PROBE = "host"


@dataclass(frozen=True)
class CpuTimes:
    """Cumulative jiffies of one CPU line of /proc/stat."""

    user: int
    nice: int
    system: int
    idle: int
    iowait: int
    irq: int
    softirq: int
    steal: int

    @property
    def total(self) -> int:
        return (
            self.user
            + self.nice
            + self.system
            + self.idle
            + self.iowait
            + self.irq
            + self.softirq
            + self.steal
        )


@dataclass(frozen=True)
class Stat:
    cpus: dict[str, CpuTimes]  # "all", "cpu0", "cpu1", ...
    procs_blocked: int


def parse_stat(text: str) -> Stat:
    cpus: dict[str, CpuTimes] = {}
    blocked = 0
    for line in text.splitlines():
        fields = line.split()
        if not fields:
            continue
        if fields[0].startswith("cpu"):
            n = [int(x) for x in fields[1:9]] + [0] * max(0, 8 - len(fields[1:9]))
            name = "all" if fields[0] == "cpu" else fields[0]
            cpus[name] = CpuTimes(*n[:8])
        elif fields[0] == "procs_blocked":
            blocked = int(fields[1])
    return Stat(cpus, blocked)


def parse_meminfo(text: str) -> dict[str, int]:
    """Fields of /proc/meminfo in bytes (the file counts kB = 1024 bytes)."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        name, sep, rest = line.partition(":")
        parts = rest.split()
        if not sep or not parts or not parts[0].isdigit():
            continue
        scale = 1024 if len(parts) > 1 and parts[1] == "kB" else 1
        out[name.strip()] = int(parts[0]) * scale
    return out


def cpu_readings(name: str, now: CpuTimes, before: CpuTimes) -> list[Reading]:
    def d(a: int, b: int) -> float:
        return counter_delta(a, b)

    total = d(now.total, before.total)

    def key(series: str) -> SeriesKey:
        return SeriesKey(PROBE, series, "%", Kind.RATIO, subject=name)

    user = d(now.user, before.user) + d(now.nice, before.nice)
    system = d(now.system, before.system) + d(now.irq, before.irq) + d(now.softirq, before.softirq)
    return [
        Reading(key("cpu_user_pct"), 100.0 * user, total),
        Reading(key("cpu_system_pct"), 100.0 * system, total),
        Reading(key("cpu_iowait_pct"), 100.0 * d(now.iowait, before.iowait), total),
        Reading(key("cpu_steal_pct"), 100.0 * d(now.steal, before.steal), total),
    ]


class HostProbe:
    name = PROBE
    pace = Pace.INTERVAL  # CPU time counts in jiffies (100 a second): at 10 Hz a share would
    # move in steps of 10 %, and /proc/stat with /proc/meminfo cost 0.17 ms a sample
    drop_idle = False

    def __init__(self, proc: Path = Path("/proc"), per_core: bool = True) -> None:
        self._stat = proc / "stat"
        self._meminfo = proc / "meminfo"
        self._per_core = per_core
        self._before: Stat | None = None
        self._memory = True

    def open(self, warn: Warn) -> None:
        try:
            parse_stat(self._stat.read_text())
        except OSError as exc:
            raise ProbeUnavailable(f"cannot read {self._stat}: {exc.strerror}") from exc
        try:
            self._meminfo.read_text()
        except OSError as exc:
            warn(f"cannot read {self._meminfo} ({exc.strerror}): no dirty/writeback series")
            self._memory = False

    def start(self, t0_wall: float) -> None:
        self._before = parse_stat(self._stat.read_text())

    def sample(self, t: float, dt: float) -> list[Reading]:
        now = parse_stat(self._stat.read_text())
        before = self._before or now
        out: list[Reading] = []
        for name, times in now.cpus.items():
            if (name == "all" or self._per_core) and name in before.cpus:
                out += cpu_readings(name, times, before.cpus[name])
        out.append(
            Reading(SeriesKey(PROBE, "procs_blocked", "tasks", Kind.GAUGE), now.procs_blocked)
        )
        self._before = now
        if self._memory:
            mem = parse_meminfo(self._meminfo.read_text())
            for field, series in (("Dirty", "dirty_mb"), ("Writeback", "writeback_mb")):
                if field in mem:
                    key = SeriesKey(PROBE, series, "MB", Kind.GAUGE)
                    out.append(Reading(key, mem[field] / 1e6))
        return out

    def finish(self, t: float) -> Findings:
        return Findings()

    def close(self) -> None:
        pass
