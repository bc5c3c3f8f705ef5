"""MariaDB (InnoDB) counters from SHOW GLOBAL STATUS, as rates, plus checkpoint activity.

Series: ``pages_written_per_s`` (Innodb_pages_written), ``pages_allocated_per_s``
(Innodb_pages_created), ``pages_flushed_per_s`` (Innodb_buffer_pool_pages_flushed),
``data_written_mbps`` (Innodb_data_written), ``fsyncs_per_s`` (Innodb_data_fsyncs),
``log_mbps`` (Innodb_os_log_written), ``log_writes_per_s`` (Innodb_log_writes),
``log_waits_per_s`` (Innodb_log_waits: waits for log buffer space), ``redo_lsn_mbps`` (redo
generated, from Innodb_lsn_current), ``handler_writes_per_s`` (Handler_write: rows written by
every storage engine, temporary tables included); gauges
``checkpoint_age_mb`` (Innodb_lsn_current - Innodb_lsn_last_checkpoint) and ``dirty_pages``
(Innodb_buffer_pool_pages_dirty). Checkpoint intervals: see :mod:`iolab.probes.checkpoints`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from iolab.probes.checkpoints import LsnCheckpoints
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

PROBE = "mariadb"
MB = 1e6

_RATES: dict[str, tuple[str, str, float]] = {
    "Innodb_pages_written": ("pages_written_per_s", "pages/s", 1.0),
    "Innodb_pages_created": ("pages_allocated_per_s", "pages/s", 1.0),
    "Innodb_buffer_pool_pages_flushed": ("pages_flushed_per_s", "pages/s", 1.0),
    "Innodb_data_written": ("data_written_mbps", "MB/s", 1 / MB),
    "Innodb_data_fsyncs": ("fsyncs_per_s", "fsyncs/s", 1.0),
    "Innodb_os_log_written": ("log_mbps", "MB/s", 1 / MB),
    "Innodb_log_writes": ("log_writes_per_s", "writes/s", 1.0),
    "Innodb_log_waits": ("log_waits_per_s", "waits/s", 1.0),
    "Innodb_lsn_current": ("redo_lsn_mbps", "MB/s", 1 / MB),
    "Handler_write": ("handler_writes_per_s", "rows/s", 1.0),
}
_GAUGES = ("Innodb_buffer_pool_pages_dirty", "Innodb_lsn_last_checkpoint")
WANTED = (*_RATES, *_GAUGES)


def status_readings(now: dict[str, float], before: dict[str, float], dt: float) -> list[Reading]:
    out = []
    for name, (series, unit, scale) in _RATES.items():
        if name in now and name in before:
            delta = counter_delta(now[name], before[name]) * scale
            out.append(Reading(SeriesKey(PROBE, series, unit, Kind.RATE), delta, dt))
    if "Innodb_lsn_current" in now and "Innodb_lsn_last_checkpoint" in now:
        age = (now["Innodb_lsn_current"] - now["Innodb_lsn_last_checkpoint"]) / MB
        out.append(Reading(SeriesKey(PROBE, "checkpoint_age_mb", "MB", Kind.GAUGE), age))
    if "Innodb_buffer_pool_pages_dirty" in now:
        dirty = now["Innodb_buffer_pool_pages_dirty"]
        out.append(Reading(SeriesKey(PROBE, "dirty_pages", "pages", Kind.GAUGE), dirty))
    return out


class MariaDBProbe:
    name = PROBE
    pace = Pace.INTERVAL
    drop_idle = False

    def __init__(self, connect: Callable[[], Any]) -> None:
        self._connect = connect
        self._conn: Any = None
        self._before: dict[str, float] = {}
        self._checkpoints = LsnCheckpoints()
        self._query = ""

    def open(self, warn: Warn) -> None:
        try:
            self._conn = self._connect()
            self._conn.autocommit(True)
        except Exception as exc:
            raise ProbeUnavailable(f"cannot connect: {exc}") from exc
        names = ", ".join(f"'{n}'" for n in WANTED)
        self._query = f"SHOW GLOBAL STATUS WHERE Variable_name IN ({names})"
        found = self._read()
        if "Innodb_lsn_last_checkpoint" not in found:
            warn("this server has no Innodb_lsn_last_checkpoint status: no checkpoint intervals")

    def _read(self) -> dict[str, float]:
        with self._conn.cursor() as cur:
            cur.execute(self._query)
            rows = cur.fetchall()
        out = {}
        for name, value in rows:
            try:
                out[str(name)] = float(value)
            except (TypeError, ValueError):
                continue
        return out

    def _observe(self, t: float, now: dict[str, float]) -> None:
        if "Innodb_lsn_last_checkpoint" in now:
            self._checkpoints.observe(
                t,
                now["Innodb_lsn_last_checkpoint"],
                now.get("Innodb_buffer_pool_pages_flushed", 0.0),
            )

    def start(self, t0_wall: float) -> None:
        self._before = self._read()
        self._observe(0.0, self._before)

    def sample(self, t: float, dt: float) -> list[Reading]:
        now = self._read()
        out = status_readings(now, self._before, dt)
        self._observe(t, now)
        self._before = now
        return out

    def finish(self, t: float) -> Findings:
        return Findings(checkpoints=tuple(self._checkpoints.finish()))

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()
