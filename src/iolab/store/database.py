"""The results database: one SQLite file, WAL mode, one transaction per finished run."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any
from urllib.parse import quote

from iolab.errors import BadInput, RunFailed
from iolab.latency.data import LatencyData
from iolab.latency.histogram import Histogram
from iolab.ownership import boot_id, process_alive
from iolab.probes.data import ProbeData
from iolab.results import (
    MAX_ID,
    CellId,
    DiskPass,
    EnvId,
    ExperimentId,
    Latency,
    QueryResult,
    RunId,
    RunOutcome,
    RunStatus,
    SyncHistogram,
    canonical_json,
    content_hash,
)
from iolab.store import disk_histograms, identify, migrate, query_results
from iolab.store import latency as latency_store
from iolab.store import live as live_store
from iolab.store import probes as probe_store
from iolab.system import cgroups
from iolab.units import format_bytes

DEFAULT_PATH = Path("iolab.db")
ENV_VAR = "IOLAB_RESULTS"


def default_path() -> Path:
    return Path(os.environ.get(ENV_VAR) or DEFAULT_PATH)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class RunRecord:
    id: RunId
    experiment_id: ExperimentId
    experiment: str
    cell_id: CellId
    workload: str
    params: dict[str, Any]
    repetition: int
    status: RunStatus
    started_at: str | None
    ended_at: str | None
    env_id: EnvId | None
    error: str | None
    summary: dict[str, Any]


class Store:
    """Access to one results database. Open with :func:`open_store`."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self.conn = conn
        self.path = path
        # runs this process found killed at their memory cap (reap_stale): (run, error)
        self.killed_runs: list[tuple[int, str]] = []

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One exclusive write transaction; an SQLite error (a full disk, a trigger that
        refuses a row, a file turned read-only) rolls it back and becomes one line naming the
        file (:class:`StoreFailed`)."""
        try:
            with self.conn:
                self.conn.execute("BEGIN IMMEDIATE")
                yield self.conn
        except sqlite3.Error as exc:
            raise StoreFailed(self.path, exc) from exc

    # --- writing -------------------------------------------------------------------------------

    def save_environment(self, snapshot: dict[str, Any]) -> EnvId:
        env_id = EnvId(content_hash(snapshot))
        with self.transaction() as c:
            c.execute(
                "INSERT OR IGNORE INTO environments (id, captured_at, data) VALUES (?, ?, ?)",
                (env_id, _now(), canonical_json(snapshot)),
            )
        return env_id

    def create_experiment(self, name: str, kind: str, config: dict[str, Any]) -> ExperimentId:
        with self.transaction() as c:
            cur = c.execute(
                "INSERT INTO experiments (name, kind, config, created_at) VALUES (?, ?, ?, ?)",
                (name, kind, canonical_json(config), _now()),
            )
        return ExperimentId(int(cur.lastrowid or 0))

    def ensure_cell(
        self, experiment: ExperimentId, cell: CellId, workload: str, params: dict[str, Any]
    ) -> None:
        with self.transaction() as c:
            c.execute(
                "INSERT OR IGNORE INTO cells (experiment_id, id, workload, params) "
                "VALUES (?, ?, ?, ?)",
                (experiment, cell, workload, canonical_json(params)),
            )

    def start_run(
        self, experiment: ExperimentId, cell: CellId, repetition: int, env: EnvId | None
    ) -> RunId:
        """Record a run as running, committed at once, so a crash leaves a trace to reap."""
        with self.transaction() as c:
            cur = c.execute(
                "INSERT INTO runs (experiment_id, cell_id, repetition, status, started_at, env_id,"
                " pid, boot_id) VALUES (?, ?, ?, 'running', ?, ?, ?, ?)",
                (experiment, cell, repetition, _now(), env, os.getpid(), boot_id()),
            )
        return RunId(int(cur.lastrowid or 0))

    def finish_run(self, run: RunId, outcome: RunOutcome, ended_at: str | None = None) -> None:
        """Store a run's results and final status in one transaction, which a Ctrl-C or
        SIGTERM does not cut: they wait until it is committed (:func:`signals_held`).
        ``ended_at``: when it ended where it ran (a fleet host), else now.

        When the database refuses them (:class:`StoreFailed`: a full disk, a trigger), the run
        is recorded as failed with its summary and the reason, if the database takes that, and
        the error says where the run stands."""
        try:
            self._finish(run, outcome, ended_at)
        except StoreFailed as exc:
            error = f"its results could not be stored: {exc.reason}"
            error = f"{outcome.error}; {error}" if outcome.error else error
            try:
                with signals_held(), self.transaction() as c:
                    c.execute(
                        "UPDATE runs SET status = 'failed', ended_at = ?, error = ?, summary = ?"
                        " WHERE id = ?",
                        (ended_at or _now(), error, canonical_json(outcome.summary), run),
                    )
                stands = (
                    f"run {run} (it ended {outcome.status.value}) is recorded as failed, with "
                    "its summary and this reason, without its series and histograms"
                )
            except StoreFailed:
                stands = (
                    f"run {run} stays 'running' there without its results, and the next "
                    "command marks it aborted"
                )
            raise StoreFailed(self.path, exc.error, stands) from exc

    def _finish(self, run: RunId, outcome: RunOutcome, ended_at: str | None) -> None:
        with signals_held(), self.transaction() as c:
            c.executemany(
                "INSERT INTO disk_passes (run_id, test, rw, bs, qd, threads, pass, seconds, mbps,"
                " iops, lat_mean_us, lat_p50_us, lat_p99_us, lat_p999_us, sync_mean_us,"
                " sync_p50_us, sync_p99_us, sync_p999_us, io_bytes, device_bytes)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [_disk_row(run, p) for p in outcome.disk_passes],
            )
            disk_histograms.save(c, run, outcome.sync_histograms)
            query_results.insert(c, run, outcome.query_results)
            probe_store.save(c, run, outcome.probes, outcome.logs)
            live_store.delete(c, run)  # the whole series replace what was flushed live
            latency_store.save(c, run, outcome.latency)
            c.execute(
                "UPDATE runs SET status = ?, ended_at = ?, error = ?, summary = ? WHERE id = ?",
                (
                    outcome.status.value,
                    ended_at or _now(),
                    outcome.error,
                    canonical_json(outcome.summary),
                    run,
                ),
            )

    def claim_run(
        self, experiment: ExperimentId, cell: CellId, wanted: int | None
    ) -> tuple[RunId, int] | None:
        """Take the next run of a cell for this process, before it starts: (run id, repetition).

        In one exclusive transaction: runs of the cell left 'running' by a process that is gone
        are marked aborted (so they are taken again), then, unless the cell already has
        ``wanted`` runs done or taken by a live process, a run row is inserted as 'running'
        with this process's pid and boot. None when there is nothing left to take (``wanted``
        None: always take one, e.g. an extra baseline run). Two drivers of one experiment so
        share its runs: each run is done once.
        """
        with self.transaction() as c:
            _abort_stale(c, "experiment_id = ? AND cell_id = ?", (experiment, cell))
            if wanted is not None:
                (taken,) = c.execute(
                    "SELECT COUNT(*) FROM runs WHERE experiment_id = ? AND cell_id = ? "
                    "AND status IN ('done', 'running')",
                    (experiment, cell),
                ).fetchone()
                if int(taken) >= wanted:
                    return None
            (top,) = c.execute(
                "SELECT COALESCE(MAX(repetition), 0) FROM runs "
                "WHERE experiment_id = ? AND cell_id = ?",
                (experiment, cell),
            ).fetchone()
            repetition = int(top) + 1
            cur = c.execute(
                "INSERT INTO runs (experiment_id, cell_id, repetition, status, started_at, pid,"
                " boot_id) VALUES (?, ?, ?, 'running', ?, ?, ?)",
                (experiment, cell, repetition, _now(), os.getpid(), boot_id()),
            )
        return RunId(int(cur.lastrowid or 0)), repetition

    def start_claimed(self, run: RunId, env: EnvId | None, started_at: str | None = None) -> None:
        """A claimed run starts now (or started at ``started_at``, on a fleet host), in this
        environment."""
        with self.transaction() as c:
            c.execute(
                "UPDATE runs SET started_at = ?, env_id = ? WHERE id = ?",
                (started_at or _now(), env, run),
            )

    def release(self, run: RunId) -> None:
        """Give back a run this process claimed and did not start (nothing of it was run)."""
        with self.transaction() as c:
            c.execute(
                "DELETE FROM runs WHERE id = ? AND status = 'running' AND pid = ?",
                (run, os.getpid()),
            )

    def reap_stale(self) -> int:
        """Mark runs left 'running' by a process that is gone as aborted; returns how many."""
        if self.conn.execute("SELECT 1 FROM runs WHERE status = 'running' LIMIT 1").fetchone():
            with self.transaction() as c:
                marked = _abort_stale(c, "1", ())
            self.killed_runs += [(r, error) for r, error in marked if error != GONE]
            return len(marked)
        return 0

    # --- reading -------------------------------------------------------------------------------

    _RUN_SELECT = (
        "SELECT r.id, r.experiment_id, e.name, r.cell_id, c.workload, c.params, r.repetition,"
        " r.status, r.started_at, r.ended_at, r.env_id, r.error, r.summary"
        " FROM runs r JOIN experiments e ON e.id = r.experiment_id"
        " JOIN cells c ON c.experiment_id = r.experiment_id AND c.id = r.cell_id"
    )

    def runs(
        self, limit: int | None = None, experiments: Sequence[ExperimentId] | None = None
    ) -> list[RunRecord]:
        """The runs, newest first (at most ``limit``; of ``experiments`` only, when given)."""
        sql, args = self._RUN_SELECT, list[int]()
        if experiments is not None:
            sql += f" WHERE r.experiment_id IN ({','.join('?' * len(experiments))})"
            args += list(experiments)
        sql += " ORDER BY r.id DESC"
        if limit is not None:
            sql += " LIMIT ?"
            args.append(limit)
        return [_run_record(row) for row in self.conn.execute(sql, args)]

    def run(self, run_id: int) -> RunRecord:
        row = None  # an id beyond SQLite's integers names no run
        if 1 <= run_id <= MAX_ID:
            row = self.conn.execute(self._RUN_SELECT + " WHERE r.id = ?", (run_id,)).fetchone()
        if row is None:
            (count,) = self.conn.execute("SELECT COUNT(*) FROM runs").fetchone()
            allowed = f"runs are numbered 1 to {count}" if count else "the database has no runs yet"
            raise BadInput("RUN", run_id, f"{allowed} in {self.path} (see `iolab results list`)")
        return _run_record(row)

    def environment(self, env_id: EnvId) -> dict[str, Any]:
        row = self.conn.execute("SELECT data FROM environments WHERE id = ?", (env_id,)).fetchone()
        return dict(json.loads(row[0])) if row else {}

    def disk_passes(self, run_id: RunId) -> list[DiskPass]:
        rows = self.conn.execute(
            "SELECT test, rw, bs, qd, threads, pass, seconds, mbps, iops, lat_mean_us, lat_p50_us,"
            " lat_p99_us, lat_p999_us, sync_mean_us, sync_p50_us, sync_p99_us, sync_p999_us,"
            " io_bytes, device_bytes FROM disk_passes WHERE run_id = ? ORDER BY rowid",
            (run_id,),
        )
        out = []
        for r in rows:
            sync = None if r[13] is None else Latency(r[13], r[14], r[15], r[16])
            out.append(
                DiskPass(
                    test=r[0],
                    rw=r[1],
                    bs=r[2],
                    qd=r[3],
                    threads=r[4],
                    pass_no=r[5],
                    seconds=r[6],
                    mbps=r[7],
                    iops=r[8],
                    lat=Latency(r[9], r[10], r[11], r[12]),
                    sync=sync,
                    io_bytes=r[17],
                    device_bytes=r[18],
                )
            )
        return out

    def sync_histograms(self, run_id: RunId) -> list[SyncHistogram]:
        """The fdatasync latencies of each pass of a disk run's commit test (fio's bins)."""
        return disk_histograms.load(self.conn, run_id)

    def query_results(self, run_id: RunId) -> list[QueryResult]:
        return query_results.read(self.conn, run_id)

    def probes(
        self,
        run_id: RunId,
        *,
        values: bool = True,
        names: Sequence[tuple[str, str]] | None = None,
    ) -> ProbeData | None:
        """What the probes recorded in a run (None if they did not run); see store/probes.py."""
        return probe_store.load(self.conn, run_id, values=values, names=names)

    def latency(self, run_id: RunId) -> LatencyData | None:
        """A run's per-operation latency histograms (None: it timed no operation)."""
        return latency_store.load(self.conn, run_id)

    def latency_totals(self, run_id: RunId) -> dict[str, Histogram]:
        """A run's histogram per operation kind, warm-up left out: one row each, for reports
        (:meth:`latency` reads every loader's every interval)."""
        return latency_store.totals(self.conn, run_id)

    def logs(self, run_id: RunId) -> dict[str, str]:
        """The logs kept with a run (``server``: the engine's server log), by name."""
        return probe_store.logs(self.conn, run_id)


class StoreFailed(RunFailed):
    """The results database refused a write: one line naming the file and SQLite's error (a
    full filesystem named as full), and ``stands`` (where what was being stored stands)."""

    def __init__(self, path: Path, error: sqlite3.Error, stands: str = "") -> None:
        self.path = path
        self.error = error
        directory = path.absolute().parent
        code = int(getattr(error, "sqlite_errorcode", 0) or 0) & 0xFF
        if code == sqlite3.SQLITE_FULL or (
            code == sqlite3.SQLITE_IOERR and identify.full(directory)
        ):
            self.reason = identify.full_reason(directory)
        else:
            name = getattr(error, "sqlite_errorname", None)
            self.reason = f"{error} ({name})" if name else str(error)
        said = f"cannot write the results database {path}: {self.reason}"
        super().__init__(f"{said}; {stands}" if stands else said)


@contextmanager
def signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM wait while the block runs (in the main thread; elsewhere nothing
    changes): a run's results are written whole, and the signal's own handler then ends iolab
    as usual. Python runs signal handlers in the main thread whichever thread the kernel
    delivered to, so the handlers are swapped, not the signal mask."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []

    def hold(signum: int, _frame: FrameType | None) -> None:
        caught.append(signum)

    before = {int(s): signal.signal(s, hold) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)
    if caught:  # now, as it would have been
        handler = before[caught[0]]
        if callable(handler):
            handler(caught[0], None)
        else:
            os.kill(os.getpid(), caught[0])


# a reaped run: its end is unknown (its error starts so; it may say why it is gone)
GONE = "interrupted: the iolab process running it is gone"


def _abort_stale(
    conn: sqlite3.Connection, where: str, args: tuple[Any, ...]
) -> list[tuple[int, str]]:
    """Inside a write transaction: mark the 'running' runs matching ``where`` whose process is
    gone (its pid dead, or another boot) as aborted; returns them with their error. A run
    whose process left a capped cgroup in which the kernel's OOM killer ended processes says
    so, and the group is removed (:func:`iolab.system.cgroups.killed_at_cap`)."""
    boot = boot_id()
    stale = [
        (run_id, pid if run_boot == boot else None)
        for run_id, pid, run_boot in conn.execute(
            f"SELECT id, pid, boot_id FROM runs WHERE status = 'running' AND {where}", args
        )
        if not (run_boot == boot and pid is not None and process_alive(int(pid)))
    ]
    errors = [(r, _gone_why(cgroups.killed_at_cap(int(pid)) if pid else None)) for r, pid in stale]
    conn.executemany(
        "UPDATE runs SET status = 'aborted', ended_at = ?, error = ? WHERE id = ?",
        [(_now(), error, r) for r, error in errors],
    )
    if any(error != GONE for _, error in errors) and os.geteuid() == 0:
        cgroups.reap()  # the groups just read: iolab's own, their process gone
    return errors


def _gone_why(killed: cgroups.Killed | None) -> str:
    """A reaped run's error: GONE, and what the kernel did at its memory cap when it did."""
    if killed is None:
        return GONE
    cap = "" if killed.cap is None else f" ({format_bytes(killed.cap)})"
    if killed.itself:
        what = "ended it"
    else:
        what = "ended a process" if killed.kills == 1 else f"ended {killed.kills} processes"
        what += " of its cgroup"
    return (
        f"{GONE}: the kernel's OOM killer {what} at its memory cap{cap}; SQLite and DuckDB run "
        "in iolab's process, which the cap holds too: give a larger --memory"
    )


def _disk_row(run: RunId, p: DiskPass) -> tuple[Any, ...]:
    s = p.sync
    return (
        run,
        p.test,
        p.rw,
        p.bs,
        p.qd,
        p.threads,
        p.pass_no,
        p.seconds,
        p.mbps,
        p.iops,
        p.lat.mean,
        p.lat.p50,
        p.lat.p99,
        p.lat.p999,
        s.mean if s else None,
        s.p50 if s else None,
        s.p99 if s else None,
        s.p999 if s else None,
        p.io_bytes,
        p.device_bytes,
    )


def _run_record(row: tuple[Any, ...]) -> RunRecord:
    return RunRecord(
        id=RunId(row[0]),
        experiment_id=ExperimentId(row[1]),
        experiment=row[2],
        cell_id=CellId(row[3]),
        workload=row[4],
        params=json.loads(row[5]),
        repetition=row[6],
        status=RunStatus(row[7]),
        started_at=row[8],
        ended_at=row[9],
        env_id=EnvId(row[10]) if row[10] else None,
        error=row[11],
        summary=json.loads(row[12]),
    )


WAL_SWITCH_SECONDS = 30.0


def _wal(conn: sqlite3.Connection) -> None:
    """Switch to WAL mode. Two connections switching a new file at once can find each other
    holding the lock the switch needs; SQLite then answers "database is locked" at once, without
    waiting (it would deadlock), so the switch is tried again for a while."""
    deadline = time.monotonic() + WAL_SWITCH_SECONDS
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode & 0xFF != sqlite3.SQLITE_BUSY or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def open_store(path: Path | None = None, *, create: bool = True) -> Store:
    """Open (and create or migrate) the results database at ``path``.

    Only iolab's own results databases are opened: a file holding anything else is refused
    before a byte of it is written (see :mod:`iolab.store.identify`); with ``create`` False (the
    reading commands) a new or empty file is refused too; with ``create`` True (the commands that
    record) a file this process cannot write (or its ``-wal``, ``-shm`` or directory) is refused
    before anything starts, and a reading command opens such a file read-only
    (:func:`open_readonly`). A database without every table and column of the newest schema
    (one dropped, damaged) is refused naming what is missing. Runs left 'running' by a process
    that is gone are marked aborted, so every command that can write the file, reading ones
    too, shows them as they are.
    """
    path = path or default_path()
    identify.check_path(path, create, ENV_VAR)
    if create:
        identify.check_writable(path)
    elif identify.unwritable(path) is not None:
        return open_readonly(path)  # a reading command reads what it cannot write
    if not path.exists():  # a new database is its owner's alone; -wal and -shm take its mode
        try:
            os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600))
        except FileExistsError:
            pass  # another command made it just now
        except OSError as exc:
            raise BadInput(
                "--results", str(path), f"name a file you can create ({exc.strerror})"
            ) from None
    conn: sqlite3.Connection | None = None
    try:
        conn = sqlite3.connect(path, isolation_level=None, timeout=30)
        identify.identify(conn, path, create, migrate.known())
        _wal(conn)
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA synchronous=NORMAL")
        migrate.apply(conn, str(path))
        identify.check_whole(conn, path, migrate.check_schema(conn))
        store = Store(conn, path)
        try:
            store.reap_stale()
        except StoreFailed as exc:
            if create or exc.error.sqlite_errorcode & 0xFF != sqlite3.SQLITE_READONLY:
                raise  # a reading command still reads a database it cannot write
    except BaseException as exc:
        if conn is not None:
            conn.close()
        if isinstance(exc, sqlite3.Error):
            raise identify.explain(exc, path) from exc
        raise
    return store


def open_readonly(path: Path) -> Store:
    """Open the results database at ``path`` for reading only: nothing is migrated, reaped or
    written, and nothing is made beside it (``iolab serve``, and the reading commands where
    this process cannot write the file, its ``-wal`` or ``-shm``, or its directory). Runs
    another process is writing are read as far as it has committed. A database of an older
    schema is refused, naming the command that upgrades it.

    With a ``-wal`` beside it (a writer has it open, or was killed) SQLite's ``mode=ro`` reads
    through it; without one the file is whole, and ``immutable=1`` reads it without making the
    ``-wal`` and ``-shm`` a read-only connection would otherwise leave behind (of the file's
    mode: a file of mode 444 left them 444, and the next writer failed) or fail to make (in a
    read-only directory)."""
    identify.check_path(path, False, ENV_VAR)
    wal = Path(f"{path}-wal").exists()
    uri = f"file:{quote(str(path.absolute()))}?{'mode=ro' if wal else 'immutable=1'}"
    conn: sqlite3.Connection | None = None
    try:
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=30)
        identify.identify(conn, path, False, migrate.known())
        have, newest = migrate.current_version(conn), migrate.available()[-1].version
        if have < newest:
            raise BadInput(
                "--results",
                str(path),
                f"it has schema version {have} and this iolab reads {newest}: upgrade it once "
                f"with `iolab results list --results {path}`, as a user who can write it and "
                "its directory",
            )
        if have > newest:
            raise BadInput(
                "--results",
                str(path),
                f"it has schema version {have}, newer than this iolab knows ({newest}); "
                "upgrade iolab to read it",
            )
        identify.check_whole(conn, path, migrate.check_schema(conn))
    except BaseException as exc:
        if conn is not None:
            conn.close()
        if isinstance(exc, sqlite3.Error):
            raise identify.explain(exc, path) from exc
        raise
    return Store(conn, path)
