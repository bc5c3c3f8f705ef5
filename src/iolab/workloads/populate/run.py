"""The table-population workload of seeds 000 and 003.

N loaders, each on its own connection, insert their share of the rows into a table with a
clustered key and a payload sized to fill one page per row, committing every K rows. Measured:
elapsed time until the last and the first loader finished, each loader's time, rows/s, payload
MB/s, table size and pages per row, WAL bytes, and the bytes each device of the layout wrote per
row inserted (write amplification). The run fails unless the table holds exactly the rows
inserted, with no duplicate key.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from iolab import drivercore
from iolab.analysis.steady import SteadyCriterion, steady_state
from iolab.engines import catalog, external
from iolab.engines.connection import Connection, cancel_statements
from iolab.engines.external import ExternalTarget, check_external_layout
from iolab.engines.interface import (
    Engine,
    Layout,
    Placement,
    check_layout,
    running,
)
from iolab.engines.log_control import allocated_bytes, log_control, settings_control
from iolab.errors import BadInput, RunFailed
from iolab.events import EventSink, Phase, Step, Warning
from iolab.latency.data import LatencyData
from iolab.latency.data import series as latency_series
from iolab.latency.data import summary as latency_summary
from iolab.latency.recording import (
    Interval,
    LatencyRecording,
    Pacing,
    check_duration,
    check_rate,
    rate_judged,
    rate_missed,
    rows_due,
)
from iolab.probes.checkpoints import merge_requested
from iolab.probes.data import ProbeData
from iolab.probes.interface import Checkpoint
from iolab.probes.recorder import recording
from iolab.probes.serverlog import read_log
from iolab.probes.standard import device_deltas, populate_recorder, role_devices
from iolab.results import RunOutcome
from iolab.system import diskstats
from iolab.system.open_files import check_connections
from iolab.units import format_bytes
from iolab.workers import Worker, wait_all
from iolab.workloads.populate import dialects
from iolab.workloads.populate import native as core_populate
from iolab.workloads.populate.checkpoints import CheckpointSchedule
from iolab.workloads.populate.loading import (
    KeyKind,
    LoaderError,
    LoadMethod,
    LoadMode,
    LoadSpec,
    MultiplexedLoad,
    PopulateDialect,
    TableStats,
)
from iolab.workloads.populate.options import RATE_UNIT, VARIATION_DEFAULTS

PROGRESS_EVERY = 0.5  # seconds between progress events
UNLIMITED = 1 << 62  # a loader's share under --duration: it stops when time is up
STOP_TIMEOUT = 10.0  # seconds to wait for loaders to stop before their connections close
FILL_TOLERANCE = 0.10  # pages per row may exceed the target by this much before it is flagged


class LoadCancelled(Exception):
    """Raised inside a loader's progress callback to stop it (another loader failed, Ctrl-C)."""


@dataclass(frozen=True)
class PopulateOptions:
    engine: str
    layout: Layout
    rows: int | None = None  # either rows or size_bytes
    size_bytes: int | None = None  # payload bytes in total: rows = size / payload width
    connections: int = 16
    commit_every: int = 1
    method: LoadMethod = LoadMethod.INSERT
    mode: LoadMode = LoadMode.CLIENT
    key: KeyKind = KeyKind.SEQUENTIAL
    batch: int = 100
    pg_bin: Path | None = None
    dsn: ExternalTarget | None = None  # a server iolab does not manage, instead of a layout
    sample_interval: float | None = 1.0  # seconds between probe samples; None: probes off
    duration: float | None = None  # seconds: insert until time is up, instead of rows
    warmup_seconds: float | None = None  # left out of rates, latencies and bytes per row
    warmup_rows: int | None = None  # the same, counted in rows
    rate: float | None = None  # rows per second over all loaders, each on a fixed schedule
    record_latency: bool = True  # time each operation (off only to measure what timing costs)

    @property
    def warmup(self) -> bool:
        return bool(self.warmup_seconds) or bool(self.warmup_rows)

    # seed 003's variations: a requested checkpoint every so many seconds (None: the engine's
    # own only), the log grown to this many bytes before the load, the steady-state criterion
    checkpoint_every: float | None = None
    presize_wal: int | None = None
    steady: SteadyCriterion = field(default_factory=SteadyCriterion)

    def validate(self) -> None:
        """Refuse what cannot run, before any server starts."""
        drivercore.wanted()  # IOLAB_DRIVER_CORE
        kind = catalog.kind(self.engine, among=dialects.NAMES)
        if self.dsn is not None:
            if self.engine != self.dsn.engine:
                raise BadInput(
                    "--engine", self.engine, f"{self.dsn.engine}, the engine of the --dsn given"
                )
            check_external_layout(self.layout, self.pg_bin)
        if self.connections < 1:
            raise BadInput("--connections", self.connections, "give at least 1 loader connection")
        per_connection = 1 if self.dsn is not None else kind.open_files(self.layout)
        check_connections("--connections", self.connections, per_connection)
        if self.duration is not None:
            if self.rows is not None or self.size_bytes is not None:
                raise BadInput("--duration", self.duration, "give --rows/--bytes or --duration")
            if not self.duration > 0:
                raise BadInput("--duration", self.duration, "give more than 0 s")
            check_duration("--duration", self.duration)
            if self.mode is LoadMode.SERVER:
                raise BadInput("--duration", self.duration, "a duration needs --mode client")
        elif (self.rows is None) == (self.size_bytes is None):
            raise BadInput("--rows", self.rows, "give either --rows or --bytes, not both")
        check_rate("--rate", self.rate, RATE_UNIT)
        if self.rate is not None and self.mode is LoadMode.SERVER:
            raise BadInput("--rate", self.rate, "a rate needs --mode client")
        if self.warmup_seconds is not None and (
            self.warmup_seconds < 0
            or (self.duration is not None and self.warmup_seconds >= self.duration)
        ):
            raise BadInput("--warmup", self.warmup_seconds, "give a warm-up shorter than the run")
        if self.warmup_rows is not None and (
            self.warmup_rows < 0 or (self.rows is not None and self.warmup_rows >= self.rows)
        ):
            raise BadInput("--warmup", self.warmup_rows, "give a warm-up shorter than the run")
        if self.rows is not None and self.rows < self.connections:
            raise BadInput(
                "--rows", self.rows, f"give at least one row per connection (>= {self.connections})"
            )
        if self.commit_every < 1:
            raise BadInput("--commit-every", self.commit_every, "give 1 or more rows per commit")
        if self.batch < 1:
            raise BadInput("--batch", self.batch, "give 1 or more rows per statement")
        allowed = dialects.ENGINES[self.engine].methods
        if self.method not in allowed:
            raise BadInput.choice(
                f"--method (with {self.engine})",
                self.method.value,
                sorted(allowed),
            )
        if self.sample_interval is not None and not self.sample_interval >= 0.1:
            raise BadInput("--sample-interval", self.sample_interval, "give 0.1 s or more")
        if self.mode is LoadMode.SERVER and self.method is LoadMethod.COPY:
            raise BadInput("--method", "copy", "COPY is a client path; use --mode client")
        if self.checkpoint_every is not None and not self.checkpoint_every > 0:
            raise BadInput("--checkpoint-every", self.checkpoint_every, "give more than 0 s")
        self.steady.validate()
        if self.presize_wal is not None:
            check_presize_options(self)

    def params(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "data_dirs": [str(d.resolve()) for d in self.layout.data_dirs],
            "files": self.layout.files,
            "wal_dir": str(self.layout.wal_dir.resolve()) if self.layout.wal_dir else None,
            "temp_dir": str(self.layout.temp_dir.resolve()) if self.layout.temp_dir else None,
            "settings": dict(self.layout.settings),
            "rows": self.rows,
            "size_bytes": self.size_bytes,
            "connections": self.connections,
            "commit_every": self.commit_every,
            "method": self.method.value,
            "mode": self.mode.value,
            "key": self.key.value,
            "batch": self.batch,
            "pg_bin": str(self.pg_bin) if self.pg_bin else None,
            "dsn": self.dsn.redacted if self.dsn else None,  # never the password
            **self._variations(),
            **({"duration": self.duration} if self.duration is not None else {}),
            **({"warmup_seconds": self.warmup_seconds} if self.warmup_seconds else {}),
            **({"warmup_rows": self.warmup_rows} if self.warmup_rows else {}),
            **({"rate": self.rate} if self.rate is not None else {}),
        }

    def _variations(self) -> dict[str, Any]:
        """Seed 003's variation options, where not at their defaults (as a cell leaves them)."""
        given = {
            "checkpoint_every": self.checkpoint_every,
            "presize_wal": self.presize_wal,
            "steady_window": self.steady.window,
            "steady_tolerance": self.steady.tolerance_pct,
        }
        return {k: v for k, v in given.items() if VARIATION_DEFAULTS.get(k, ...) != v}


DEFAULT_ROW_BYTES = 8192  # one row fills one 8 KiB page (PostgreSQL, SQLite's default)
WAL_FLOOR = 64 << 20  # the WAL dir holds at least this much of a large load (or half its data)


def row_bytes(settings: Mapping[str, str]) -> int:
    """Bytes one row takes on disk: the page it fills (InnoDB puts two rows in a page)."""
    if not settings:
        return DEFAULT_ROW_BYTES
    for name, per_page in (("page_size", 1), ("innodb_page_size", 2)):
        text = str(settings.get(name, "")).strip().lower()
        number = text.removesuffix("k")
        if number.isdigit() and int(number) > 0:
            size = int(number) * (1024 if text.endswith("k") else 1)
            return max(1, size // per_page)
    return DEFAULT_ROW_BYTES


def rows_offered(options: PopulateOptions) -> int:
    """The rows a load will at least insert: --rows, or --bytes over a page each; 0 for a
    --duration (even under --rate, a server that cannot keep up inserts fewer)."""
    if options.rows is not None:
        return options.rows
    return (options.size_bytes or 0) // row_bytes(options.layout.settings)


def space_needed(options: PopulateOptions) -> dict[tuple[str, Path], int]:
    """Bytes the load will at least write into each directory of the layout, by option and
    directory: the rows, one page each, spread evenly over the data files; in a WAL dir, half
    of that (each row's WAL record carries its payload), up to WAL_FLOOR. A lower bound, so
    that a refusal is certain: ``--bytes`` counts as if the payload filled the whole page, and
    indexes, free-space maps and a WAL beside the data are left out. A ``--duration`` load
    counts no row: how many it inserts is not known in advance (a disk that fills fails the
    run with "disk full")."""
    layout = options.layout
    per_row = row_bytes(layout.settings)
    data = rows_offered(options) * per_row
    need: dict[tuple[str, Path], int] = {}
    for i in range(layout.files):
        key = ("--data-dir", layout.data_dir_for(i))
        need[key] = need.get(key, 0) + data // layout.files
    if layout.wal_dir is not None:
        key = ("--wal-dir", layout.wal_dir)
        need[key] = need.get(key, 0) + min(data // 2, WAL_FLOOR)
    return need


def free_space(path: Path) -> tuple[int, int] | None:
    """(filesystem id, bytes free to an unprivileged writer) of a directory; None if unreadable."""
    try:
        st = os.statvfs(path)
        return os.stat(path).st_dev, st.f_bavail * st.f_frsize
    except OSError:
        return None  # the directory checks say what is wrong with it


def check_space(
    options: PopulateOptions,
    free_of: Callable[[Path], tuple[int, int] | None] = free_space,
) -> None:
    """Refuse a load that cannot fit: each filesystem of the layout must have free space for
    what :func:`space_needed` puts on it (directories on one filesystem share it)."""
    if options.dsn is not None or not options.layout.data_dirs:
        return
    needs = [(name, path, n) for (name, path), n in space_needed(options).items()]
    found = overfull(needs, free_of)
    if found is not None:
        field_name, path, need, free = found
        per_row = row_bytes(options.layout.settings)
        rows = rows_offered(options)
        raise BadInput(
            field_name,
            str(path),
            f"the load needs at least {format_bytes(need)} on its filesystem "
            f"({rows:,} rows of {format_bytes(per_row)} each) and it has "
            f"{format_bytes(free)} free; load fewer rows or give a larger directory",
        )


def overfull(
    needs: Sequence[tuple[str, Path, int]],
    free_of: Callable[[Path], tuple[int, int] | None],
) -> tuple[str, Path, int, int] | None:
    """The first ``(what, directory, bytes)`` whose filesystem, with what the earlier ones put
    on it, has less free space than they need: ``(what, directory, bytes needed on that
    filesystem, bytes free)``; None when everything fits (an unreadable directory counts as
    fitting: the directory checks say what is wrong with it)."""
    by_fs: dict[int, int] = {}
    for what, path, nbytes in needs:
        found = free_of(path)
        if found is None:
            continue
        dev, free = found
        by_fs[dev] = by_fs.get(dev, 0) + nbytes
        if by_fs[dev] > free:
            return what, path, by_fs[dev], free
    return None


def preflight(options: PopulateOptions) -> None:
    """Everything checked before a run is recorded, by the command and by ``iolab plan`` and
    ``iolab run`` alike: the options, the directories (existing, empty), the engine's settings
    and layout (read by the engine's own binary), and the free space for the load."""
    options.validate()
    if options.dsn is not None:
        return
    check_layout(options.layout)
    catalog.check(options.engine, options.layout, pg_bin=options.pg_bin)
    check_space(options)
    check_presize_space(options)


def check_presize_options(options: PopulateOptions) -> None:
    """``--presize-wal`` needs an instance iolab starts, an engine that can grow its log, and
    none of the settings it makes given otherwise."""
    size = options.presize_wal
    assert size is not None
    if options.dsn is not None:
        raise BadInput(
            "--presize-wal",
            format_bytes(size),
            "leave it out with --dsn: the log's size is set when iolab starts the server",
        )
    control = settings_control(options.engine)
    if control is None:
        raise BadInput(
            "--presize-wal", format_bytes(size), "give it with postgres, mariadb or sqlite"
        )
    control.settings(size, options.layout.settings)


def check_presize_space(
    options: PopulateOptions,
    free_of: Callable[[Path], tuple[int, int] | None] = free_space,
) -> None:
    """Refuse a ``--presize-wal`` larger than the free space of the directory the log goes to."""
    if options.presize_wal is None or options.dsn is not None or not options.layout.data_dirs:
        return
    control = settings_control(options.engine)
    if control is None:
        return
    needs = [
        ("--presize-wal", path, n)
        for path, n in control.log_dirs(options.layout, options.presize_wal).items()
    ]
    found = overfull(needs, free_of)
    if found is not None:
        _, path, _, free = found
        raise BadInput(
            "--presize-wal",
            format_bytes(options.presize_wal),
            f"the log's directory {path} has {format_bytes(free)} free; "
            "give a size that fits in it",
        )


def split(rows: int, parts: int) -> list[int]:
    """Rows per loader: as even as possible, the first ones taking the remainder."""
    base, extra = divmod(rows, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


@dataclass
class _Loader:
    index: int
    rows: int
    conn: Connection | None  # None: the compiled core's loader (it holds the connection)
    elapsed: float | None = None
    error: BaseException | None = None


@dataclass
class _Shared:
    latency: LatencyRecording
    warmup_rows: int | None = None
    stop: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    committed: int = 0
    warm_end_ns: int | None = None  # when a warm-up counted in rows ended
    warm_rows: int = 0  # the rows committed then
    warmed: threading.Event = field(default_factory=threading.Event)
    # the rows committed this instant (the compiled core's count: ``committed`` lags it by up
    # to a poll); None: ``committed`` is exact (the Python loaders count each commit)
    source: Callable[[], int] | None = None

    def rows_now(self) -> int:
        """The rows committed so far, exact now (the probes' samples, a time warm-up's end)."""
        return self.source() if self.source is not None else self.committed

    def count(self, n: int) -> None:
        """A loader committed ``n`` rows; raises LoadCancelled once the load must stop."""
        with self.lock:
            self.committed += n
            if (
                self.warmup_rows is not None
                and self.warm_end_ns is None
                and self.committed >= self.warmup_rows
            ):
                self.warm_end_ns = time.perf_counter_ns()
                self.warm_rows = self.committed
                self.latency.end_warmup(self.warm_end_ns)
                self.warmed.set()
        if self.stop.is_set():
            raise LoadCancelled

    def warm_ended(self, at_ns: int, rows: int) -> None:
        """The compiled core's commit that reached a warm-up of rows (``rows`` in all) ended
        it at ``at_ns``; the core ended its clocks' warm-up then (as :meth:`count` does)."""
        if self.warm_end_ns is None:
            self.warm_end_ns, self.warm_rows = at_ns, rows
            self.warmed.set()


def _run_loader(
    dialect: PopulateDialect,
    spec: LoadSpec,
    loader: _Loader,
    shared: _Shared,
    start: threading.Barrier,
) -> None:
    def progress(n: int) -> None:
        shared.count(n)

    try:
        start.wait()
        t0 = shared.latency.t0_ns / 1e9  # the load's start, on which the schedule is laid
        clock = shared.latency.clocks[loader.index]
        assert loader.conn is not None  # a Python loader holds its connection
        dialect.load(loader.conn, spec, loader.rows, progress, clock)
        loader.elapsed = time.perf_counter() - t0
    except LoadCancelled:
        pass
    except BaseException as exc:
        loader.error = exc
        shared.stop.set()


def _run_multiplexed(
    dialect: MultiplexedLoad,
    spec: LoadSpec,
    loaders: list[_Loader],
    shared: _Shared,
    start: threading.Barrier,
) -> None:
    """Every loader's connection driven from this one thread (see MultiplexedLoad)."""

    def progress(i: int, n: int) -> None:
        shared.count(n)

    try:
        start.wait()
        t0 = shared.latency.t0_ns / 1e9
        elapsed = dialect.load_multiplexed(
            [ld.conn for ld in loaders if ld.conn is not None],
            spec,
            [ld.rows for ld in loaders],
            progress,
            shared.latency.clocks,
        )
        if any([c.wait_out() for c in shared.latency.clocks]):  # a timed load under a rate
            elapsed = [max(seconds, time.perf_counter() - t0) for seconds in elapsed]
        for ld, seconds in zip(loaders, elapsed, strict=True):
            ld.elapsed = seconds
    except LoadCancelled:
        pass
    except LoaderError as exc:
        loaders[exc.index].error = exc.error
        shared.stop.set()
    except BaseException as exc:
        loaders[0].error = exc
        shared.stop.set()


def _run_native(
    load: core_populate.NativeLoad,
    loaders: list[_Loader],
    shared: _Shared,
    start: threading.Barrier,
) -> None:
    """The compiled core's loaders, released at t0 and read every POLL_S from this thread:
    the rows they committed (to ``shared``, as the loaders' progress callbacks do), the end of
    a warm-up of rows, the intervals closed; then each loader's seconds and error. What must be
    exact at a given time reads the core itself (:meth:`_Shared.rows_now`)."""
    latency = shared.latency
    seen = 0
    try:
        start.wait()
        load.start(latency.t0_ns)
        ended = False
        while not ended:
            ended = load.wait(core_populate.POLL_S)
            if shared.stop.is_set():
                raise LoadCancelled
            rows, warm = load.progress()
            if warm is not None:
                shared.warm_ended(*warm)
            if rows != seen:
                shared.count(rows - seen)
                seen = rows
            load.collect(latency)
        for ld, (seconds, error) in zip(loaders, load.join(), strict=True):
            ld.elapsed, ld.error = seconds, error
        if any(ld.error is not None for ld in loaders):
            shared.stop.set()
    except LoadCancelled:
        load.stop(cancel=True)
    except BaseException as exc:
        loaders[0].error = exc
        shared.stop.set()
        load.stop(cancel=True)
    # the loaders' connections stay open until _load closes the core, after the probes' last
    # sample: MariaDB's performance_schema drops a session's waits when it disconnects


def _stop_loaders(
    loaders: list[_Loader],
    workers: list[Worker],
    barrier: threading.Barrier,
    shared: _Shared,
) -> None:
    """Stop the loaders (Ctrl-C, a failure) and wait for them before their connections close.

    A loader stops at its next commit; a statement in flight (a server-mode CALL holds a whole
    share) is cancelled through its connection: psycopg's ``cancel()``, sqlite3's
    ``interrupt()``. MariaDB's loaders end when the server stops.
    """
    shared.stop.set()
    barrier.abort()
    cancel_statements(ld.conn for ld in loaders if ld.conn is not None)
    wait_all(workers, STOP_TIMEOUT)  # not Thread.join: see iolab.workers


def _failure(loaders: list[_Loader]) -> str:
    errors = [ld for ld in loaders if ld.error is not None]
    first = errors[0]
    text = (
        str(first.error).strip().splitlines()[0] if str(first.error).strip() else repr(first.error)
    )
    if "No space left" in text or "disk full" in text.lower() or "database or disk is full" in text:
        return f"disk full: loader {first.index} stopped: {text}"
    return f"loader {first.index} failed: {text} ({len(errors)} of {len(loaders)} loaders failed)"


def run_populate(options: PopulateOptions, outcome: RunOutcome, events: EventSink) -> None:
    """Provision the engine on the layout, load, measure, check, and remove the instance."""
    options.validate()  # callers check the directories first (check_layout), before recording a run
    if options.dsn is not None:
        target = external.create(options.dsn, dialects.objects(options.engine))
        events(Phase(f"connecting to {options.dsn.redacted}"))
        with running(target) as placement:
            outcome.summary["server_local"] = target.local  # its host and devices: this one's
            load_and_measure(target, placement, options, outcome, events)
        return
    layout = options.layout
    if catalog.kind(options.engine).server and "max_connections" not in layout.settings:
        # every loader needs a connection, plus the monitor and some headroom
        settings = dict(layout.settings)
        settings["max_connections"] = str(max(100, options.connections + 10))
        layout = replace(layout, settings=settings)
    control = settings_control(options.engine) if options.presize_wal is not None else None
    if control is not None and options.presize_wal is not None:
        extra = control.settings(options.presize_wal, layout.settings)
        layout = replace(layout, settings={**layout.settings, **extra})
    engine = catalog.create(options.engine, layout, pg_bin=options.pg_bin)
    events(Phase(f"provisioning {options.engine}"))
    with running(engine, "the load") as placement:
        try:
            load_and_measure(engine, placement, options, outcome, events)
        finally:
            log = read_log(placement.log)  # kept with the run (iolab.probes.serverlog)
            if log is not None:
                outcome.logs["server"] = log


def load_and_measure(
    engine: Engine,
    placement: Placement,
    options: PopulateOptions,
    outcome: RunOutcome,
    events: EventSink,
) -> None:
    """The measured part on an engine that runs: create the table, load, measure, check.

    The table is created afresh, so a benchmark may call this repeatedly on one server.
    """
    dialect = dialects.dialect(engine)
    if options.method not in dialect.methods or options.mode not in dialect.modes:
        raise BadInput(
            "--method/--mode",
            f"{options.method}/{options.mode}",
            f"{options.engine} supports methods "
            f"{sorted(m.value for m in dialect.methods)} in modes "
            f"{sorted(m.value for m in dialect.modes)}",
        )
    payload = dialect.payload_bytes()
    rows = (
        options.rows
        if options.rows is not None
        else max(options.connections, (options.size_bytes or 0) // payload)
    )
    spec = LoadSpec(
        options.key, options.method, options.mode, options.commit_every, payload, options.batch
    )
    pacing = Pacing(
        options.sample_interval or 1.0,
        options.warmup_seconds,
        options.warmup_rows,
        options.duration,
        options.rate,
    )
    timed = options.record_latency and options.mode is LoadMode.CLIENT
    latency = LatencyRecording(options.connections, pacing, timed=timed)
    core = drivercore.choose(
        core_populate.supported(dialect, spec),
        "populate's client mode with --method insert on postgres or mariadb",
    )
    outcome.summary.update(core.record())
    measured = _load(
        engine, placement, dialect, spec, rows, latency, options, outcome, events, core
    )
    _summarise(engine, placement, dialect, options, latency, measured, outcome, events)


@dataclass
class _Measured:
    """What the measured part left behind: the loaders' times, the counters before and after
    it, the table's statistics; ``rows`` as committed."""

    rows: int
    elapsed_each: list[float]
    wall: float
    t0: float  # perf_counter seconds when the loaders were released
    probe_t0: float | None  # the recorder's start on the same clock, when probes ran
    warm: _Mark | None
    intervals: list[Interval]
    requested: list[Checkpoint]
    log_presized: int | None
    devices: dict[str, list[str]]
    disk_before: dict[str, diskstats.DiskCounters]
    disk_after: dict[str, diskstats.DiskCounters]
    log_before: int | None
    log_after: int | None
    stats: TableStats
    due_warm_rows: int  # under --rate with a time warm-up: the rows its schedule had due


def _load(
    engine: Engine,
    placement: Placement,
    dialect: PopulateDialect,
    spec: LoadSpec,
    rows: int,
    latency: LatencyRecording,
    options: PopulateOptions,
    outcome: RunOutcome,
    events: EventSink,
    core: drivercore.Core,
) -> _Measured:
    """Create the table, open and ready the loaders, then release them together under the
    probes; what the run measured once every loader has ended (raises RunFailed if one
    failed). ``core``: the loaders are Python threads, or the compiled core's (native.py)."""
    fixed = options.duration is None
    admin = engine.connect()
    loaders: list[_Loader] = []
    extra: list[Connection] = []  # the requested checkpoints' connection
    native: core_populate.NativeLoad | None = None
    try:
        dialect.create_table(admin, spec)
        devices = role_devices(placement)
        events(Phase(f"opening {options.connections} loader connections"))
        shares = split(rows, options.connections) if fixed else [UNLIMITED] * options.connections
        if core.name == drivercore.NATIVE:
            native = core_populate.NativeLoad(
                engine, dialect, spec, shares, latency, options.warmup_rows
            )
            native.open()  # each loader's connection, session and INSERT, in the core
            loaders = [_Loader(i, n, None) for i, n in enumerate(shares)]
        for i, n in enumerate(shares if native is None else []):
            conn = engine.connect()
            loaders.append(_Loader(i, n, conn))
            dialect.ready(conn, spec)
        dialect.checkpoint(admin)
        log_presized = _presize(options, dialect, admin, placement, events)
        schedule = _schedule(options, dialect, engine, extra)
        # the core ends a warm-up of rows itself, at the commit that reaches it
        shared = _Shared(
            latency,
            options.warmup_rows if native is None else None,
            source=native.committed if native is not None else None,
        )
        if native is not None:
            barrier = threading.Barrier(2)  # one thread reads the core's loaders
            workers = [Worker(_run_native, (native, loaders, shared, barrier), "loaders")]
        elif isinstance(dialect, MultiplexedLoad) and dialect.multiplexes(spec):
            barrier = threading.Barrier(2)  # one driver thread for every loader's connection
            workers = [
                Worker(_run_multiplexed, (dialect, spec, loaders, shared, barrier), "loaders")
            ]
        else:
            barrier = threading.Barrier(len(loaders) + 1)
            workers = [
                Worker(_run_loader, (dialect, spec, ld, shared, barrier), f"loader-{ld.index}")
                for ld in loaders
            ]
        try:
            for w in workers:
                w.start()
            recorder = populate_recorder(
                engine,
                placement,
                [ld.conn for ld in loaders if ld.conn is not None],
                shared.rows_now,
                options.sample_interval,
                events,
                sessions=native.sessions() if native is not None else None,
            )
            log_before = dialect.log_bytes(admin)
            disk_before = diskstats.read()
            with recording(recorder, outcome):  # the probes sample the measured part
                t0_ns = time.perf_counter_ns()
                latency.begin(t0_ns)
                barrier.wait()
                if schedule is not None:
                    schedule.start(recorder.t0 if recorder is not None else t0_ns / 1e9)
                warm = _watch(workers, shared, t0_ns, rows, dialect, admin, options, events)
                wall = time.perf_counter() - t0_ns / 1e9
                end_ns = time.perf_counter_ns()
                if native is not None:  # its loaders have ended: their last intervals
                    native.finish(end_ns)
                    native.collect(latency)
                intervals = latency.finish(end_ns)
                requested = schedule.stop() if schedule is not None else []
        except BaseException:
            if schedule is not None:  # the requests made so far are kept with the run too
                _keep_requested(outcome, schedule.stop(cancel=True))
            _stop_loaders(loaders, workers, barrier, shared)
            raise
        _keep_requested(outcome, requested)
        if schedule is not None and schedule.error is not None:
            raise RunFailed(f"a requested checkpoint failed: {_first_line(schedule.error)}")
        disk_after = diskstats.read()
        if any(ld.error is not None for ld in loaders):  # before asking a server that may be gone
            raise RunFailed(_failure(loaders))
        log_after = dialect.log_bytes(admin)
        stats = dialect.table_stats(admin)
    finally:
        if native is not None:
            native.close()
        for conn in [*(ld.conn for ld in loaders if ld.conn is not None), *extra]:
            _close(conn)
        _close(admin)
    return _Measured(
        rows=rows if fixed else shared.committed,
        elapsed_each=[ld.elapsed or 0.0 for ld in loaders],
        wall=wall,
        t0=t0_ns / 1e9,
        probe_t0=recorder.t0 if recorder is not None else None,
        warm=warm,
        intervals=intervals,
        requested=requested,
        log_presized=log_presized,
        devices=devices,
        disk_before=disk_before,
        disk_after=disk_after,
        log_before=log_before,
        log_after=log_after,
        stats=stats,
        due_warm_rows=native.warm_rows()
        if native is not None
        else sum(c.warm_rows for c in latency.clocks),
    )


def _watch(
    workers: Sequence[Worker],
    shared: _Shared,
    t0_ns: int,
    rows: int,
    dialect: PopulateDialect,
    admin: Connection,
    options: PopulateOptions,
    events: EventSink,
) -> _Mark | None:
    """Wait for the loaders to end, sending progress and collecting latencies as they go, and
    mark where the warm-up ended (None without a warm-up)."""
    warm: _Mark | None = None
    warm_due = t0_ns + round(options.warmup_seconds * 1e9) if options.warmup_seconds else None
    latency = shared.latency
    shown = 0.0  # when progress was last sent, in seconds from the start
    while (running := next((w for w in workers if not w.ended.is_set()), None)) is not None:
        if warm is None and options.warmup:  # wake when the warm-up ends
            pause = PROGRESS_EVERY
            if warm_due is not None:
                left = (warm_due - time.perf_counter_ns()) / 1e9
                pause = min(pause, max(0.0, left))
            shared.warmed.wait(pause)  # set by the commit that ends a warm-up of rows
        else:  # one wake-up per interval, or when a loader ends: this thread shares the CPUs
            running.ended.wait(PROGRESS_EVERY)
        latency.collect()
        if warm is None and options.warmup:
            warm = _warm_mark(shared, warm_due, t0_ns, dialect, admin)
        elapsed = (time.perf_counter_ns() - t0_ns) / 1e9
        if elapsed - shown >= PROGRESS_EVERY:
            shown = elapsed
            events(_progress(shared.committed, elapsed, rows, options))
    if warm is None and options.warmup:  # it ended as the loaders did
        warm = _warm_mark(shared, warm_due, t0_ns, dialect, admin)
    elapsed = (time.perf_counter_ns() - t0_ns) / 1e9
    events(_progress(shared.committed, elapsed, rows, options))  # where the load ended
    return warm


def _summarise(
    engine: Engine,
    placement: Placement,
    dialect: PopulateDialect,
    options: PopulateOptions,
    latency: LatencyRecording,
    m: _Measured,
    outcome: RunOutcome,
    events: EventSink,
) -> None:
    """The run's summary, latencies and probe series from what was measured, then the checks:
    the warm-up ended before the load did, every row is there once, rows fill pages."""
    rows, warm, stats = m.rows, m.warm, m.stats
    payload = dialect.payload_bytes()
    elapsed = max(m.elapsed_each)
    if options.warmup and (warm is None or warm.seconds >= elapsed):
        given = (
            f"{options.warmup_seconds:g} s"
            if options.warmup_seconds
            else f"{options.warmup_rows:,} rows"
        )
        raise RunFailed(
            f"the warm-up ({given}) did not end before the load did ({elapsed:.1f} s, "
            f"{rows:,} rows): give a shorter --warmup or a longer load"
        )
    if warm is not None and options.rate is not None and options.warmup_seconds:
        # the rows the schedule had due before the warm-up ended are its rows (docs/latency.md)
        warm = replace(warm, rows=m.due_warm_rows)
    measured_rows = rows - (warm.rows if warm else 0)
    measured_seconds = elapsed - (warm.seconds if warm else 0.0)
    device_io = device_deltas(warm.disk if warm else m.disk_before, m.disk_after, m.devices)
    for d in device_io.values():
        d["write_bytes_per_row"] = d["write_bytes"] / max(1, measured_rows)
    target_ppr = 1.0 / dialect.rows_per_page
    fill_ok = abs(stats.pages_per_row - target_ppr) <= FILL_TOLERANCE * target_ppr
    log_start = warm.log_bytes if warm else m.log_before
    wal_bytes = (m.log_after - log_start) if log_start is not None and m.log_after else None
    rate = measured_rows / measured_seconds if measured_seconds > 0 else 0.0
    outcome.latency = LatencyData(
        intervals=tuple(m.intervals),
        interval_s=latency.interval_s,
        start_unix=time.time() - (time.perf_counter() - m.t0),
        probe_offset_s=m.t0 - m.probe_t0 if m.probe_t0 is not None else 0.0,
        warmup_s=warm.seconds if warm else None,
    )
    outcome.summary.update(
        {
            "engine": options.engine,
            "engine_version": engine.version(),
            "rows": rows,
            "connections": options.connections,
            "payload_bytes": payload,
            "elapsed_seconds": elapsed,
            "first_finished_seconds": min(m.elapsed_each),
            "wall_seconds": m.wall,
            "loader_seconds": m.elapsed_each,
            "rows_per_second": rate,
            "payload_mb_per_second": rate * payload / 1e6,
            "table_bytes": stats.table_bytes,
            "total_bytes": stats.total_bytes,
            "pages": stats.pages,
            "page_size": stats.page_size,
            "pages_per_row": stats.pages_per_row,
            "pages_per_row_target": target_ppr,
            "fill_ok": fill_ok,
            "wal_bytes": wal_bytes,
            "wal_bytes_per_row": wal_bytes / measured_rows
            if wal_bytes is not None and measured_rows
            else None,
            "devices": device_io,
            "placement": {
                "data": [str(p) for p in placement.data],
                "wal": str(placement.wal) if placement.wal else None,
                "temp": str(placement.temp) if placement.temp else None,
            },
            "settings": engine.effective_settings(),
            "latency": latency_summary(outcome.latency, latency.timed),
        }
    )
    if warm is not None:
        outcome.summary["warmup"] = {
            "seconds": warm.seconds,
            "rows": warm.rows,
            "rows_per_second_with_warmup": rows / elapsed if elapsed > 0 else 0.0,
        }
    if options.duration is not None:
        outcome.summary["duration_seconds"] = options.duration
    if options.rate is not None:
        warm_s = warm.seconds if warm else 0.0
        due = rows_due(options.rate, warm_s, options.duration) if options.duration else None
        judged = rate_judged(options.rate, rate, due)
        outcome.summary["rate"] = judged
        if not judged["held"]:
            events(Warning(rate_missed(judged, measured_rows, "rows")))
    if outcome.probes is not None:
        outcome.probes = dataclasses.replace(
            outcome.probes,
            series=outcome.probes.series + tuple(latency_series(outcome.latency)),
            warmup_end_s=outcome.latency.probe_offset_s + warm.seconds if warm else None,
        )
    outcome.summary.update(
        _variations_summary(options, m.requested, m.log_presized, outcome.probes)
    )
    if stats.rows != rows or stats.distinct_keys != rows:
        raise RunFailed(
            f"correctness check failed: expected {rows:,} rows with distinct keys, the table "
            f"has {stats.rows:,} rows and {stats.distinct_keys:,} distinct keys"
        )
    if not fill_ok:
        events(
            Warning(
                f"rows do not fill pages as intended: {stats.pages_per_row:.2f} pages per row, "
                f"expected {target_ppr:.2f}; this run does not measure the seeds' table"
            )
        )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _presize(
    options: PopulateOptions,
    dialect: PopulateDialect,
    admin: Connection,
    placement: Placement,
    events: EventSink,
) -> int | None:
    """Grow the log to ``--presize-wal`` before the first row; the bytes its files then take
    on disk (None without the option)."""
    if options.presize_wal is None:
        return None
    control = log_control(options.engine, dialect)
    if control is None:
        return None
    events(Phase(f"growing the log to {format_bytes(options.presize_wal)}"))
    control.presize(admin, options.presize_wal)
    return allocated_bytes(control.log_files(placement.wal, placement.data))


def _keep_requested(outcome: RunOutcome, requested: list[Checkpoint]) -> None:
    """The requested checkpoints among the probes' intervals (none without probes)."""
    if outcome.probes is not None and requested:
        merged = merge_requested(outcome.probes.checkpoints, requested)
        outcome.probes = replace(outcome.probes, checkpoints=merged)


def _schedule(
    options: PopulateOptions,
    dialect: PopulateDialect,
    engine: Engine,
    conns: list[Connection],
) -> CheckpointSchedule | None:
    """The ``--checkpoint-every`` schedule on a connection of its own (added to ``conns``,
    which the caller closes), or None."""
    if options.checkpoint_every is None:
        return None
    control = log_control(options.engine, dialect)
    if control is None:
        return None
    conn = engine.connect()
    conns.append(conn)
    return CheckpointSchedule(
        control, conn, options.checkpoint_every, keep_size=options.presize_wal is not None
    )


def _variations_summary(
    options: PopulateOptions,
    requested: list[Checkpoint],
    log_presized: int | None,
    probes: ProbeData | None,
) -> dict[str, Any]:
    """Seed 003's variations in a run's summary: the requested checkpoints, the log's size
    before the first row, and the steady state of the rows/s series after the warm-up."""
    out: dict[str, Any] = {}
    if options.checkpoint_every is not None:
        out["checkpoint_every_seconds"] = options.checkpoint_every
        out["requested_checkpoints"] = len(requested)
    if options.presize_wal is not None:
        out["presize_wal_bytes"] = options.presize_wal
        out["log_bytes_before_load"] = log_presized
    rows = probes.find("workload", "rows_per_s") if probes is not None else []
    series = rows[0] if rows else None
    found = (
        steady_state(list(series.values), series.times(), options.steady, probes.warmup_end_s)
        if series is not None and probes is not None
        else None
    )
    out["steady_rows_per_second"] = found.rate if found is not None else None
    out["steady_state"] = (
        found.as_summary()
        if found is not None
        else {
            "window": options.steady.window,
            "tolerance_pct": options.steady.tolerance_pct,
            "reason": "no rows/s series: the probes were off",
        }
    )
    return out


@dataclass(frozen=True)
class _Mark:
    """Where the warm-up ended: seconds from the start, rows committed, the devices' and the
    log's counters then (the measured part starts from these)."""

    seconds: float
    rows: int
    disk: dict[str, diskstats.DiskCounters]
    log_bytes: int | None


def _warm_mark(
    shared: _Shared, due: int | None, t0_ns: int, dialect: PopulateDialect, admin: Connection
) -> _Mark | None:
    """Where the warm-up ended, once it has: a time warm-up at its due time with the rows
    committed by then, a warm-up of rows when the loader that reached the count committed
    (the devices' and the log's counters are read now, a few ms later at most)."""
    if due is not None:
        if time.perf_counter_ns() < due:
            return None
        rows = shared.rows_now()
        return _Mark((due - t0_ns) / 1e9, rows, diskstats.read(), dialect.log_bytes(admin))
    if shared.warm_end_ns is None:
        return None
    seconds = (shared.warm_end_ns - t0_ns) / 1e9
    return _Mark(seconds, shared.warm_rows, diskstats.read(), dialect.log_bytes(admin))


def _progress(done: int, elapsed: float, rows: int, options: PopulateOptions) -> Step:
    """The progress line: rows of the rows asked for, or seconds of the duration."""
    rate = done / elapsed if elapsed > 0 else 0.0
    if options.duration is not None:
        left = max(0.0, options.duration - elapsed)
        text = f"{done:,} rows, {rate:,.0f} rows/s, {elapsed:,.0f} of {options.duration:g} s"
        return Step(text, max(1, round(elapsed * 10)), max(1, round(options.duration * 10)), left)
    left = (rows - done) / rate if rate > 0 else 0.0
    return Step(f"{done:,} of {rows:,} rows, {rate:,.0f} rows/s", max(1, done), rows, left)


def _close(conn: Connection) -> None:
    with contextlib.suppress(Exception):  # a connection the server already dropped
        conn.close()
