"""Probe series in chunks while a run records, for live views (``iolab serve``).

A chunk is a block of one series' values from index ``start``; the recorder rewrites a series'
open block at each flush with the values it has so far (the row is replaced: same run, series
and start) and opens the next block once one holds 120 values. A block at 0 replaces every
block of its series: when a run's fine start (10 Hz) is merged into whole intervals, the
recorder sends each series again from its start, on the new grid.

:class:`ChunkWriter` is what the recorder hands each second's values to; it writes them on
its own connection (the recorder's flushing thread owns it), in WAL mode beside the runner's
connection, and never waits long for a lock: a busy database makes it keep the values for the
next flush. :func:`load` reads a run's chunks back as :class:`~iolab.probes.data.ProbeData`
(series only: waits and checkpoints come with the final record). When the run is finished,
:meth:`iolab.store.Store.finish_run` writes the whole series and deletes the chunks in one
transaction, so no sample is ever counted twice.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Sequence
from dataclasses import astuple
from pathlib import Path
from urllib.parse import quote

from iolab.probes.data import Chunk, ProbeData, Series
from iolab.probes.interface import Checkpoint, Findings, Kind, SeriesKey, WaitStat
from iolab.results import RunId
from iolab.store.probes import ENCODING, pack, unpack

NOTHING = Findings()
BUSY_MS = 200  # a flush waits at most this long for the runner's write lock, then tries later


class ChunkWriter:
    """Writes the chunks of run ``run`` into the results database at ``path``.

    Made in any thread; :meth:`write` and :meth:`close` are called from one thread (the
    recorder's flusher), which opens the connection on first use."""

    def __init__(self, path: Path, run: RunId) -> None:
        self.path = path
        self.run = run
        self._conn: sqlite3.Connection | None = None

    def write(self, chunks: Sequence[Chunk], found: Findings = NOTHING) -> None:
        """Store ``chunks`` and the waits and checkpoints ``found`` so far in one transaction;
        raises sqlite3.Error when it could not (the caller keeps the values and tries again)."""
        if not chunks and not found.waits and not found.checkpoints:
            return
        if self._conn is None:
            self._conn = sqlite3.connect(  # mode=rw: never makes a file that is not there
                f"file:{quote(str(self.path.absolute()))}?mode=rw",
                uri=True,
                isolation_level=None,
                timeout=BUSY_MS / 1000,
            )
            self._conn.execute("PRAGMA synchronous=NORMAL")
        conn = self._conn
        with conn:
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(  # a series sent from its start again (its grid changed)
                "DELETE FROM series_chunks WHERE run_id = ? AND series = ?",
                [(self.run, c.series) for c in chunks if c.start == 0],
            )
            conn.executemany(
                "INSERT OR REPLACE INTO series_chunks (run_id, series, start, probe, name,"
                " subject, role, unit, kind, interval, n, encoding, data)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        self.run,
                        c.series,
                        c.start,
                        c.key.probe,
                        c.key.name,
                        c.key.subject,
                        c.key.role,
                        c.key.unit,
                        c.key.kind.value,
                        c.interval,
                        len(c.values),
                        ENCODING,
                        pack(c.values),
                    )
                    for c in chunks
                ],
            )
            if found.waits or found.checkpoints:
                conn.execute(
                    "INSERT OR REPLACE INTO live_findings (run_id, waits, checkpoints)"
                    " VALUES (?, ?, ?)",
                    (
                        self.run,
                        json.dumps([list(astuple(w)) for w in found.waits]),
                        json.dumps([list(astuple(c)) for c in found.checkpoints]),
                    ),
                )

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def delete(conn: sqlite3.Connection, run: RunId) -> None:
    """Inside the transaction that stores a run's whole series: its chunks go."""
    conn.execute("DELETE FROM series_chunks WHERE run_id = ?", (run,))
    conn.execute("DELETE FROM live_findings WHERE run_id = ?", (run,))


def count(conn: sqlite3.Connection, run: int) -> int:
    """How many chunks of ``run`` are stored (0 once the run is finished)."""
    (n,) = conn.execute("SELECT COUNT(*) FROM series_chunks WHERE run_id = ?", (run,)).fetchone()
    return int(n)


def _sampled_every(waits: Sequence[WaitStat], otherwise: float) -> float:
    """Seconds between two wait samples so far: each session-sample stands for the time since
    the previous sample, so session-seconds over session-samples is the interval (it is longer
    for many sessions, iolab.probes.standard.wait_interval); ``otherwise`` without samples."""
    sampled = [w for w in waits if w.source == "pg_stat_activity"]
    samples = sum(w.samples for w in sampled)
    if not samples:
        return otherwise
    return round(sum(w.est_seconds for w in sampled) / samples, 3)


def load(conn: sqlite3.Connection, run: int) -> ProbeData | None:
    """The series a run has flushed so far, with the waits and checkpoints found so far, or
    None when it has flushed nothing. A series' chunks are joined in order; a gap (a chunk
    that never came) ends the series there."""
    rows = conn.execute(
        "SELECT series, start, probe, name, subject, role, unit, kind, interval, n, encoding,"
        " data FROM series_chunks WHERE run_id = ? ORDER BY series, start",
        (run,),
    ).fetchall()
    found = conn.execute(
        "SELECT waits, checkpoints FROM live_findings WHERE run_id = ?", (run,)
    ).fetchone()
    if not rows and found is None:
        return None
    waits = tuple(WaitStat(*w) for w in json.loads(found[0])) if found else ()
    checkpoints = tuple(Checkpoint(*c) for c in json.loads(found[1])) if found else ()
    values: dict[int, list[float]] = {}
    meta: dict[int, tuple[SeriesKey, float]] = {}
    for series, start, probe, name, subject, role, unit, kind, interval, n, enc, data in rows:
        if enc != ENCODING:
            raise ValueError(f"chunk encoded as {enc!r}, this iolab reads {ENCODING!r}")
        got = values.setdefault(series, [])
        if start != len(got):
            continue  # after a gap
        meta.setdefault(series, (SeriesKey(probe, name, unit, Kind(kind), subject, role), interval))
        got.extend(unpack(data, n))
    out = []
    for series, got in values.items():
        key, interval = meta[series]
        finite = [v for v in got if not math.isnan(v)]
        end = interval * len(got)
        out.append(
            Series(
                key=key,
                t0=interval,
                interval=interval,
                end_s=end,
                n=len(got),
                total_num=math.nan,  # whole-run figures come with the final record
                total_den=math.nan,
                peak=max(finite) if finite else None,
                values=tuple(got),
            )
        )
    steps = [s.interval for s in out] or [1.0]
    return ProbeData(
        interval=max(steps),  # the slow probes' step
        wait_interval=_sampled_every(waits, min(steps)),
        duration=max([s.end_s for s in out] + [c.end_s or c.start_s for c in checkpoints] + [0.0]),
        series=tuple(out),
        waits=waits,
        checkpoints=checkpoints,
    )
