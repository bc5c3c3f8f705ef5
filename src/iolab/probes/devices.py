"""Per-device I/O behind the roles of a run, from /proc/diskstats deltas (what iostat -x shows).

Each role's path (data directories, the WAL directory, temp, a disk test file) is resolved to
the block device whose /proc/diskstats line counts its filesystem's I/O: a partition (``vda1``),
a loop device, a device-mapper or md device, or a whole disk (see
:func:`iolab.system.devices.describe`). Roles on one device share its series (role
``data+wal``). A role on tmpfs or ramfs is memory: it is listed, without series.

Series per device (rates over each interval):

- ``read_mbps`` / ``write_mbps``: MB/s (10^6 bytes), sectors x 512;
- ``read_iops`` / ``write_iops``: completed requests per second;
- ``read_await_ms`` / ``write_await_ms``: ms per completed request, queueing included (the
  increase of the time-spent counter over the increase of completed requests);
- ``aqu_sz``: average requests in flight (weighted time-in-queue over elapsed time);
- ``util_pct``: share of time with at least one request in flight.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from iolab.probes.interface import (
    Findings,
    Kind,
    Pace,
    ProbeUnavailable,
    Reading,
    RoleDevice,
    SeriesKey,
    Warn,
    counter_delta,
)
from iolab.system import diskstats
from iolab.system.devices import describe

PROBE = "device"
DISKSTATS = Path("/proc/diskstats")


def existing(path: Path) -> Path:
    """The path itself, or its nearest existing parent (a file not yet created)."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def resolve_roles(roles: Sequence[tuple[str, Path]]) -> list[RoleDevice]:
    """What stands behind each role's path; the same role and device are listed once."""
    out: list[RoleDevice] = []
    seen: set[tuple[str, str | None]] = set()
    for role, path in roles:
        try:
            pd = describe(existing(path))
        except (OSError, FileNotFoundError):
            out.append(RoleDevice(role, str(path), None, "unknown"))
            continue
        if pd.memory_backed:
            found = RoleDevice(role, pd.path, None, "memory", filesystem=pd.mount.fstype)
        elif pd.device is None:
            found = RoleDevice(role, pd.path, None, "unknown", filesystem=pd.mount.fstype)
        else:
            dev = pd.device
            disk = dev.disk if dev.disk != dev.name else None
            found = RoleDevice(role, pd.path, dev.name, dev.kind, disk, pd.mount.fstype)
        if (found.role, found.device) not in seen or found.device is None:
            seen.add((found.role, found.device))
            out.append(found)
    return out


def device_roles(resolved: Sequence[RoleDevice]) -> dict[str, str]:
    """Device name -> its roles joined with ``+`` in the order first seen."""
    roles: dict[str, list[str]] = {}
    for r in resolved:
        if r.device is not None:
            kept = roles.setdefault(r.device, [])
            if r.role not in kept:
                kept.append(r.role)
    return {dev: "+".join(names) for dev, names in roles.items()}


def readings(device: str, role: str, d: diskstats.DiskCounters, dt: float) -> list[Reading]:
    """The series of one device for an interval of ``dt`` seconds with counter deltas ``d``."""

    def key(name: str, unit: str, kind: Kind) -> SeriesKey:
        return SeriesKey(PROBE, name, unit, kind, subject=device, role=role)

    ms = dt * 1000.0
    return [
        Reading(key("read_mbps", "MB/s", Kind.RATE), d.read_bytes / 1e6, dt),
        Reading(key("write_mbps", "MB/s", Kind.RATE), d.write_bytes / 1e6, dt),
        Reading(key("read_iops", "IO/s", Kind.RATE), d.reads, dt),
        Reading(key("write_iops", "IO/s", Kind.RATE), d.writes, dt),
        Reading(key("read_await_ms", "ms", Kind.RATIO), d.read_ms, d.reads),
        Reading(key("write_await_ms", "ms", Kind.RATIO), d.write_ms, d.writes),
        Reading(key("aqu_sz", "requests", Kind.RATIO), d.weighted_ms, ms),
        Reading(key("util_pct", "%", Kind.RATIO), 100.0 * min(d.io_ms, ms), ms),
    ]


def delta(now: diskstats.DiskCounters, before: diskstats.DiskCounters) -> diskstats.DiskCounters:
    """Counter increases, each reset-safe (see :func:`counter_delta`)."""
    return diskstats.DiskCounters(
        reads=int(counter_delta(now.reads, before.reads)),
        read_sectors=int(counter_delta(now.read_sectors, before.read_sectors)),
        read_ms=int(counter_delta(now.read_ms, before.read_ms)),
        writes=int(counter_delta(now.writes, before.writes)),
        write_sectors=int(counter_delta(now.write_sectors, before.write_sectors)),
        write_ms=int(counter_delta(now.write_ms, before.write_ms)),
        in_flight=now.in_flight,
        io_ms=int(counter_delta(now.io_ms, before.io_ms)),
        weighted_ms=int(counter_delta(now.weighted_ms, before.weighted_ms)),
    )


class DeviceProbe:
    """Samples /proc/diskstats for the devices behind ``roles`` (role, path) pairs."""

    name = PROBE
    pace = Pace.FINE
    drop_idle = False

    def __init__(self, roles: Sequence[tuple[str, Path]], source: Path = DISKSTATS) -> None:
        self._roles = list(roles)
        self._source = source
        self._resolved: list[RoleDevice] = []
        self._devices: dict[str, str] = {}
        self._before: dict[str, diskstats.DiskCounters] = {}

    def open(self, warn: Warn) -> None:
        self._resolved = resolve_roles(self._roles)
        for r in self._resolved:
            if r.kind == "memory":
                warn(
                    f"{r.role} ({r.path}) is on {r.filesystem}: memory, not a disk; "
                    "no device series"
                )
            elif r.device is None:
                warn(f"no block device found behind {r.role} ({r.path}); no device series for it")
        self._devices = device_roles(self._resolved)
        if not self._devices:
            raise ProbeUnavailable("no role of this run is on a block device")
        try:
            stats = diskstats.read(self._source)
        except OSError as exc:
            raise ProbeUnavailable(f"cannot read {self._source}: {exc.strerror}") from exc
        missing = [d for d in self._devices if d not in stats]
        for name in missing:
            warn(f"{name} has no line in {self._source}; no device series for it")
            del self._devices[name]
        if not self._devices:
            raise ProbeUnavailable(f"none of the run's devices appears in {self._source}")

    def start(self, t0_wall: float) -> None:
        self._before = diskstats.read(self._source, self._devices)

    def sample(self, t: float, dt: float) -> list[Reading]:
        now = diskstats.read(self._source, self._devices)
        out: list[Reading] = []
        for name, role in self._devices.items():
            if name in now and name in self._before:
                out += readings(name, role, delta(now[name], self._before[name]), dt)
        self._before = now
        return out

    def finish(self, t: float) -> Findings:
        return Findings(roles=tuple(self._resolved))

    def close(self) -> None:
        pass
