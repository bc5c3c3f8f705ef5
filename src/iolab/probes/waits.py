"""Wait statistics: what the database sessions were waiting for during the run.

PostgreSQL (sampled at 10 Hz, less often beyond 16 sessions: see
:func:`iolab.probes.standard.wait_interval`): ``pg_stat_activity`` of the watched sessions (the
workload's loaders; by default every client backend of the database except the probe's own). Each
sample counts every session once under its wait event (``IO: WALSync``, ``LWLock: WALWrite``,
``Lock: relation``), under ``CPU: running`` when it is active and waits for nothing, and under
``Client: ClientRead`` when it waits for the client's next statement. A wait's share is its part
of all session-samples; its estimated seconds are session-seconds: each sample stands for the
time since the previous one.

MariaDB (summed): performance_schema keeps exact counts and times of every instrumented wait per
thread (``events_waits_summary_by_thread_by_event_name``), so no sampling is needed: the
difference between the start and the end of the run, summed over the watched sessions (the
loaders; by default every foreground thread but the probe's own), is the wait table. Background
threads (page cleaner, timers) are left out: their sleeping would swamp what the sessions waited
for. ``idle`` (a session waiting for its client) is left out: performance_schema counts a wait
when it ends, so a session idle since before the run would bring that time in. Redo log writes
and syncs of MariaDB 10.8 and newer are not instrumented at all. A wait's share is its part
of all timed wait time; estimated seconds are its timer total (sessions waiting in parallel add
up). Only instruments enabled at server start count: iolab's MariaDB enables the file, table
and synchronisation (mutex, rwlock, condition) waits (see iolab.engines.mariadb).
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from iolab.probes.interface import Findings, Pace, ProbeUnavailable, Reading, WaitStat, Warn

CPU = ("CPU", "running")

# The watched pids are written into the statement: passed as a parameter, a list of 64 cost the
# client 70 us per sample to adapt and the server 15 us more to read (bench/README.md).
PG_QUERY_SESSIONS = (
    "SELECT state, wait_event_type, wait_event FROM pg_stat_activity WHERE pid = ANY('{{{pids}}}')"
)
PG_QUERY_DATABASE = (
    "SELECT state, wait_event_type, wait_event FROM pg_stat_activity "
    "WHERE backend_type = 'client backend' AND datname = current_database() "
    "AND pid <> pg_backend_pid()"
)


def classify(state: str | None, wait_type: str | None, event: str | None) -> tuple[str, str]:
    """The (class, event) a pg_stat_activity row counts under."""
    if wait_type is not None:
        return wait_type, event or ""
    if state == "active":
        return CPU
    return "Idle", state or "unknown"


class WaitTally:
    """Session-samples per (class, event), each standing for the time since the last sample."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.samples: Counter[tuple[str, str]] = Counter()
        self.seconds: dict[tuple[str, str], float] = {}

    def add(self, found: Sequence[tuple[str, str]], dt: float) -> None:
        for key in found:
            self.samples[key] += 1
            self.seconds[key] = self.seconds.get(key, 0.0) + dt

    def stats(self) -> list[WaitStat]:
        """The tally as wait statistics; safe beside :meth:`add` on another thread (it reads
        copies, each made in one step)."""
        samples, seconds = dict(self.samples), dict(self.seconds)
        total = sum(samples.values())
        return [
            WaitStat(self.source, cls, event, n, n / total, seconds.get((cls, event), 0.0))
            for (cls, event), n in samples.items()
        ]


class PostgresWaits:
    """Samples the wait events of ``sessions`` (backend pids), or of every other client backend
    of the database when None."""

    name = "postgres waits"
    pace = Pace.WAITS
    drop_idle = False

    def __init__(self, connect: Callable[[], Any], sessions: Sequence[int] | None = None) -> None:
        self._connect = connect
        self._query = (
            PG_QUERY_DATABASE
            if sessions is None
            else PG_QUERY_SESSIONS.format(pids=",".join(str(int(s)) for s in sessions))
        )
        self._conn: Any = None
        self.tally = WaitTally("pg_stat_activity")

    def open(self, warn: Warn) -> None:
        try:
            conn = self._connect()
            conn.autocommit = True
        except Exception as exc:
            raise ProbeUnavailable(f"cannot connect: {exc}") from exc
        self._conn = conn

    def start(self, t0_wall: float) -> None:
        pass

    def sample(self, t: float, dt: float) -> list[Reading]:
        rows = self._conn.execute(self._query, prepare=True).fetchall()
        self.tally.add([classify(*row) for row in rows], dt)
        return []

    def finish(self, t: float) -> Findings:
        return Findings(waits=tuple(self.tally.stats()))

    def so_far(self) -> Findings:
        return Findings(waits=tuple(self.tally.stats()))

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()


PS_BY_THREAD = (
    "SELECT w.EVENT_NAME, SUM(w.COUNT_STAR), SUM(w.SUM_TIMER_WAIT) "
    "FROM performance_schema.events_waits_summary_by_thread_by_event_name w "
    "JOIN performance_schema.threads t ON t.THREAD_ID = w.THREAD_ID "
    "WHERE t.TYPE = 'FOREGROUND' AND t.PROCESSLIST_ID <> CONNECTION_ID() "
    "AND w.COUNT_STAR > 0 AND w.EVENT_NAME <> 'idle' {sessions}GROUP BY w.EVENT_NAME"
)
PICOSECONDS = 1e12


def split_event(name: str) -> tuple[str, str]:
    """``wait/io/file/innodb/innodb_log_file`` -> (``wait/io/file``, ``innodb/innodb_log_file``);
    ``idle`` -> (``idle``, ``idle``)."""
    parts = name.split("/")
    if len(parts) <= 3:
        return name, parts[-1]
    return "/".join(parts[:3]), "/".join(parts[3:])


def summary_waits(
    before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]], source: str
) -> list[WaitStat]:
    """Wait statistics from two reads of a (count, picoseconds) summary per event name."""
    deltas: list[tuple[str, int, int]] = []
    for name, (count, timer) in after.items():
        c0, t0 = before.get(name, (0, 0))
        dc = count - c0 if count >= c0 else count
        dt = timer - t0 if timer >= t0 else timer
        if dc > 0:
            deltas.append((name, dc, dt))
    total = sum(d[2] for d in deltas)
    out = []
    for name, count, timer in deltas:
        cls, event = split_event(name)
        share = timer / total if total else 0.0
        out.append(WaitStat(source, cls, event, count, share, timer / PICOSECONDS))
    return out


class MariaDBWaits:
    """performance_schema's per-thread wait summaries of ``sessions`` (connection ids, or every
    foreground thread but the probe's own when None), read at the start and at the end."""

    name = "mariadb waits"
    pace = Pace.INTERVAL  # read at the start and the end: never sampled in between
    drop_idle = False

    def __init__(self, connect: Callable[[], Any], sessions: Sequence[int] | None = None) -> None:
        self._connect = connect
        self._conn: Any = None
        self._before: dict[str, tuple[int, int]] = {}
        ids = ", ".join(str(int(s)) for s in sessions) if sessions else ""
        self._query = PS_BY_THREAD.format(
            sessions=f"AND t.PROCESSLIST_ID IN ({ids}) " if sessions else ""
        )

    def _read(self) -> dict[str, tuple[int, int]]:
        with self._conn.cursor() as cur:
            cur.execute(self._query)
            return {str(n): (int(c or 0), int(t or 0)) for n, c, t in cur.fetchall()}

    def open(self, warn: Warn) -> None:
        try:
            self._conn = self._connect()
            self._conn.autocommit(True)
        except Exception as exc:
            raise ProbeUnavailable(f"cannot connect: {exc}") from exc
        with self._conn.cursor() as cur:
            cur.execute("SELECT @@performance_schema")
            (on,) = cur.fetchone()
            if not int(on):
                raise ProbeUnavailable("performance_schema is off in this server: no wait table")
            cur.execute(
                "SELECT COUNT(*) FROM performance_schema.setup_instruments "
                "WHERE NAME LIKE 'wait/%' AND ENABLED = 'YES' AND TIMED = 'YES'"
            )
            (enabled,) = cur.fetchone()
        if not enabled:
            raise ProbeUnavailable("no wait instrument of performance_schema is enabled and timed")

    def start(self, t0_wall: float) -> None:
        self._before = self._read()

    def sample(self, t: float, dt: float) -> list[Reading]:
        return []

    def finish(self, t: float) -> Findings:
        after = self._read()
        return Findings(waits=tuple(summary_waits(self._before, after, "performance_schema")))

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()
