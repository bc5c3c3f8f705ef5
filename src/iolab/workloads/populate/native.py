"""Populate's client mode in the compiled driver core (iolab.drivercore, ``c/populate.c``).

What the core runs: one row per INSERT (``--method insert``, ``--mode client``) on PostgreSQL
and MariaDB, any ``--commit-every``, every key kind, paced, stopped and timed by a C port of
:class:`~iolab.latency.recording.LoaderClock` (``c/clock.c``). Every other spec stays Python.

What crosses the boundary: in, the connection parameters the engine gives (its
``core_target()``, a :class:`~iolab.drivercore.Target`, as TPC-C's core takes them), the INSERT
the Python path prepares (the dialect's ``core_insert``), the key kind, commit_every, each
loader's rows and the clocks' grid, deadline, warm-up and rate (:func:`clock_config`); out,
rows committed per loader, where a warm-up of rows ended, each loader's closed intervals as
bucketed histograms, its seconds and its error. The core opens its own connections (one per
loader) and sets them up as the Python path does: autocommit on, explicit BEGIN/COMMIT when
``commit_every`` > 1. MariaDB's loaders run a thread each; PostgreSQL's are driven 32 to a
thread (at most one a CPU), each thread multiplexing its loaders' connections with epoll and
libpq's asynchronous calls, as pgbench's threads do: fewer wake-ups and context switches a row.
"""

from __future__ import annotations

from typing import Any

from iolab import drivercore
from iolab.drivercore import Target
from iolab.engines.interface import Engine
from iolab.errors import RunFailed
from iolab.latency.histogram import Histogram
from iolab.latency.recording import KIND_ORDER, LatencyRecording, Pacing, _grid_ns
from iolab.workloads.populate.loading import (
    CoreInsert,
    KeyKind,
    LoadMethod,
    LoadMode,
    LoadSpec,
    PopulateDialect,
)

KEYS = {KeyKind.SEQUENTIAL: 0, KeyKind.RANDOM: 1, KeyKind.ORDERED_UUID: 2}  # populate.c's
# How often the driver thread reads the core's counters and intervals: each read costs the
# client's CPU (on two shared CPUs, the server's); what needs an exact count reads committed()
POLL_S = 0.1


def supported(dialect: PopulateDialect, spec: LoadSpec) -> bool:
    """Whether the core runs this load: client-mode INSERTs of one row, on an engine whose part
    of the workload gives the core its statement (a :class:`CoreInsert`: PostgreSQL, MariaDB;
    their engines give the core a target)."""
    return (
        isinstance(dialect, CoreInsert)
        and spec.mode is LoadMode.CLIENT
        and spec.method is LoadMethod.INSERT
    )


ClockConfig = tuple[int, int, int, int, int, bool, float, int, bool]


def clock_config(pacing: Pacing, loaders: int, timed: bool) -> ClockConfig:
    """The clocks' parameters as LoaderClock computes them from ``pacing`` (the integers here,
    in Python, so that a rounding is Python's): grid step, fine steps, ratio, the deadline and
    the time warm-up in ns from t0 (-1: none), a warm-up of rows, the rate (0: none)."""
    step, fine_steps, ratio = _grid_ns(pacing.interval_s)
    deadline = round(pacing.duration_s * 1e9) if pacing.duration_s is not None else -1
    warm = round(pacing.warmup_s * 1e9) if pacing.warmup_s else -1
    rate = pacing.rate or 0.0
    return (step, fine_steps, ratio, deadline, warm, bool(pacing.warmup_rows), rate, loaders, timed)


class CoreError(Exception):
    """A loader's statement failed in the core: the message the Python path's driver gives
    (PyMySQL's ``(code, 'message')``, psycopg's message), as the engine's target words it."""

    def __init__(self, target: Target, code: int, message: str) -> None:
        super().__init__(target.error(code, message))


class NativeLoad:
    """One load's loaders in the core: :meth:`open` (connect, prepare), :meth:`start`, then a
    driver thread polls :meth:`progress` and :meth:`collect` until :meth:`wait` says all ended;
    :meth:`join` gives each loader's seconds and error; :meth:`close` always."""

    def __init__(self, engine: Engine, dialect: PopulateDialect, spec: LoadSpec, counts: list[int],
                 latency: LatencyRecording, warmup_rows: int | None) -> None:  # fmt: skip
        module = drivercore.native()
        if module is None:
            raise RunFailed(f"the compiled driver core is {drivercore.missing()}")
        target = engine.core_target()
        if target is None or not isinstance(dialect, CoreInsert):
            raise RunFailed(f"the compiled driver core does not load {engine.title}")
        self.target = target
        self.core: Any = module.Populate(
            target.library,
            target.params(),
            dialect.core_insert(spec.key),
            KEYS[spec.key],
            spec.commit_every,
            list(counts),
            clock_config(latency.pacing, len(counts), latency.timed),
            warmup_rows or 0,
        )

    def open(self) -> None:
        """Every loader connected, its session set and its INSERT prepared (else RunFailed)."""
        failed = self.core.open()
        if failed is not None:
            index, code, message = failed
            error = CoreError(self.target, code, message)
            raise RunFailed(f"loader {index} could not connect: {error}")

    def sessions(self) -> list[int]:
        """The loaders' server-side ids (backend pids, MariaDB connection ids), for the probes."""
        return list(self.core.sessions())

    def start(self, t0_ns: int) -> None:
        self.core.start(t0_ns)

    def wait(self, seconds: float) -> bool:
        return bool(self.core.wait(seconds))

    def progress(self) -> tuple[int, tuple[int, int] | None]:
        """Rows committed by the loaders so far; (ns, rows) where a warm-up of rows ended."""
        rows, warm = self.core.progress()
        return int(rows), warm

    def committed(self) -> int:
        """Rows committed by the loaders so far (read from their counters now)."""
        return int(self.core.committed())

    def collect(self, latency: LatencyRecording) -> None:
        """The intervals the loaders closed since the last call, into ``latency``."""
        for (
            loader,
            kind,
            seq,
            warm,
            start,
            end,
            counts,
            total,
            sum_us,
            lo,
            hi,
        ) in self.core.collect():
            h = Histogram(counts, total, sum_us, lo, hi)
            latency.add_histogram(loader, KIND_ORDER[kind], seq, warm, start, end, h)

    def stop(self, cancel: bool) -> None:
        """Stop at the next transaction boundary (``cancel``: PostgreSQL's statements in flight
        are cancelled, as cancel_statements does on the Python path)."""
        self.core.stop(cancel)

    def join(self) -> list[tuple[float | None, CoreError | None]]:
        """Each loader's seconds from t0 to its last row (None: stopped) and its error."""
        return [
            (seconds, None if error is None else CoreError(self.target, *error))
            for seconds, error in self.core.join()
        ]

    def finish(self, end_ns: int) -> None:
        """Close each clock's last interval (after :meth:`join`)."""
        self.core.finish(end_ns)

    def warm_rows(self) -> int:
        """The rows the schedule had due before a time warm-up ended (LoaderClock.warm_rows)."""
        return int(self.core.warm_rows())

    def close(self) -> None:
        """Stop and join every loader thread (their connections are closed by then)."""
        self.core.close()
