"""The probes a run gets without asking: its devices, the host, its engine, its progress."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from iolab.engines import catalog
from iolab.engines.connection import Connection
from iolab.engines.interface import Engine, Placement
from iolab.events import EventSink
from iolab.probes.cgroup import cgroup_probes
from iolab.probes.checkpoints import PostgresLogCheckpoints
from iolab.probes.devices import DeviceProbe
from iolab.probes.host import HostProbe
from iolab.probes.interface import Probe
from iolab.probes.mariadb import MariaDBProbe
from iolab.probes.postgres import PostgresProbe
from iolab.probes.recorder import WAIT_INTERVAL, Recorder
from iolab.probes.sqlite import SQLiteProbe
from iolab.probes.waits import MariaDBWaits, PostgresWaits
from iolab.probes.workload import rows_probe
from iolab.system.devices import describe
from iolab.system.diskstats import DiskCounters
from iolab.testbed import block_names


def placement_roles(placement: Placement) -> list[tuple[str, Path]]:
    """(role, path) for every data file, the WAL and temp of an engine's placement."""
    roles: list[tuple[str, Path]] = [("data", p) for p in placement.data]
    if placement.wal is not None:
        roles.append(("wal", placement.wal))
    if placement.temp is not None:
        roles.append(("temp", placement.temp))
    return roles


def role_devices(placement: Placement) -> dict[str, list[str]]:
    """Block device name (as in /proc/diskstats) -> the roles whose files it holds."""
    roles: dict[str, list[str]] = {}
    for role, path in placement_roles(placement):
        dev = describe(path if path.is_dir() else path.parent).device
        if dev is None:
            continue
        kept = roles.setdefault(dev.name, [])
        if role not in kept:
            kept.append(role)
    return roles


def device_deltas(
    before: Mapping[str, DiskCounters],
    after: Mapping[str, DiskCounters],
    roles: Mapping[str, Sequence[str]],
) -> dict[str, dict[str, Any]]:
    """What each device of ``roles`` did between two /proc/diskstats readings: bytes, I/Os and
    the milliseconds they took (read_ms / reads = mean read latency), with its roles and, for
    an emulated device, its testbed name."""
    testbed = block_names()
    out: dict[str, dict[str, Any]] = {}
    for name, kept in roles.items():
        if name not in before or name not in after:
            continue
        d = after[name] - before[name]
        out[name] = {
            "roles": list(kept),
            "read_bytes": d.read_bytes,
            "write_bytes": d.write_bytes,
            "reads": d.reads,
            "writes": d.writes,
            "read_ms": d.read_ms,
            "write_ms": d.write_ms,
            "testbed": testbed.get(name),
        }
    return out


def session_ids(engine: Engine, connections: Sequence[Connection]) -> list[int] | None:
    """The server-side ids of the workload's connections: PostgreSQL backend pids, MariaDB
    connection ids (None for other engines, or when there are none)."""
    kind = catalog.kind_of(engine)
    if kind is None or kind.sessions is None:
        return None
    try:
        return kind.sessions(connections) or None
    except AttributeError:
        return None


def _postgres(engine: Engine, placement: Placement, sessions: Sequence[int] | None) -> list[Probe]:
    probes: list[Probe] = [PostgresProbe(engine.connect), PostgresWaits(engine.connect, sessions)]
    if placement.log is not None:
        probes.append(PostgresLogCheckpoints(placement.log))
    return probes


def _mariadb(engine: Engine, placement: Placement, sessions: Sequence[int] | None) -> list[Probe]:
    return [MariaDBProbe(engine.connect), MariaDBWaits(engine.connect, sessions)]


def _sqlite(engine: Engine, placement: Placement, sessions: Sequence[int] | None) -> list[Probe]:
    return [SQLiteProbe(list(placement.data))]


# The probe families an engine's descriptor names (iolab.engines.catalog.EngineKind.probes).
FAMILIES: dict[str, Callable[[Engine, Placement, Sequence[int] | None], list[Probe]]] = {
    "postgres": _postgres,
    "mariadb": _mariadb,
    "sqlite": _sqlite,
}


def engine_probes(
    engine: Engine, placement: Placement, sessions: Sequence[int] | None = None
) -> list[Probe]:
    """Counters, waits and checkpoints of the engine (nothing for engines iolab does not know)."""
    kind = catalog.kind_of(engine)
    family = None if kind is None else kind.probes
    return [] if family is None else FAMILIES[family](engine, placement, sessions)


def populate_probes(
    engine: Engine,
    placement: Placement,
    connections: Sequence[Connection],
    committed: Callable[[], float],
    sessions: Sequence[int] | None = None,
) -> list[Probe]:
    """Everything a populate run records; ``committed`` reads the rows committed so far;
    ``sessions``: the loaders' server-side ids when they are not ``connections`` (the
    compiled driver core's own connections)."""
    if sessions is None:
        sessions = session_ids(engine, connections)
    return [
        DeviceProbe(placement_roles(placement)),
        HostProbe(),
        *engine_probes(engine, placement, sessions),
        rows_probe(committed),
        *cgroup_probes(),
    ]


def disk_probes(path: Path) -> list[Probe]:
    """What a disk profile records: the test file's device and the host."""
    return [DeviceProbe([("target", path)]), HostProbe()]


SESSIONS_PER_WAIT_SAMPLE = 16  # session-samples a wait sample may bring at the full rate
SLOWEST_WAIT_INTERVAL = 1.0


def wait_interval(sessions: int) -> float:
    """Seconds between two samples of the waits of ``sessions`` sessions: 0.1 s up to 16
    sessions, then longer so that a second still brings 160 session-samples (0.4 s at 64
    sessions), at most 1 s. Each sample reads every backend's status on the server and every
    watched session's row in the client, beside a workload that may need every CPU: at 64
    sessions on 2 cores, sampling at 10 Hz cost about 1 % of the load's speed
    (bench/README.md)."""
    steps = max(1, -(-sessions // SESSIONS_PER_WAIT_SAMPLE))
    return min(SLOWEST_WAIT_INTERVAL, round(WAIT_INTERVAL * steps, 6))


def populate_recorder(
    engine: Engine,
    placement: Placement,
    connections: Sequence[Connection],
    committed: Callable[[], float],
    interval: float | None,
    events: EventSink,
    sessions: Sequence[int] | None = None,
) -> Recorder | None:
    """The recorder of a populate run, or None when probes are off (``interval`` None);
    ``sessions`` as :func:`populate_probes` takes them."""
    if interval is None:
        return None
    probes = populate_probes(engine, placement, connections, committed, sessions)
    watched = len(sessions) if sessions is not None else len(connections)
    return Recorder(probes, interval=interval, wait_interval=wait_interval(watched), events=events)


def disk_recorder(path: Path, interval: float | None, events: EventSink) -> Recorder | None:
    """The recorder of a disk profile, or None when probes are off (``interval`` None)."""
    if interval is None:
        return None
    return Recorder(disk_probes(path), interval=interval, events=events)


def tpch_recorder(
    engine: Engine,
    placement: Placement,
    connection: Connection,
    interval: float | None,
    events: EventSink,
) -> Recorder | None:
    """The recorder of a TPC-H power run (its devices by role, the host, the engine's counters
    and the waits of the query connection), or None when probes are off."""
    if interval is None:
        return None
    probes: list[Probe] = [
        DeviceProbe(placement_roles(placement)),
        HostProbe(),
        *engine_probes(engine, placement, session_ids(engine, [connection])),
        *cgroup_probes(),
    ]
    return Recorder(probes, interval=interval, events=events)
