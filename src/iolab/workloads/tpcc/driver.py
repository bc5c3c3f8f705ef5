"""The virtual users and the measured window.

Each of ``connections`` users has its own connection and home warehouse (user ``i`` at
warehouse ``i mod W + 1``; with ``all_warehouses`` each transaction picks one at random), draws
transaction types by the mix and inputs as the spec, and runs them back to back (or, with
``think``, with the spec's keying and think times; or, with ``rate``, on an open schedule: the
``j``-th transaction of all users due ``j / rate`` seconds after the start, its latency from
that due time, so a stall counts against every transaction it holds back).

The window: ``rampup`` seconds, then ``duration`` measured seconds. At each edge the users are
held at a :class:`Gate` between two transactions (none is in flight), the database's counts are
read, and the users go on: every transaction lies wholly inside or outside the window, so the
database's New-Order count (``sum(d_next_o_id)``), its count of orders and the client's count
of committed New-Orders measure the same transactions.

A serialization failure or deadlock is rolled back and the transaction run again (counted as a
retry of its type, never hidden); any other error stops the run.

Server mode without ``think`` on PostgreSQL and MariaDB runs in the compiled core
(:mod:`iolab.drivercore`, ``drivercore/c/tpcc.c``) when it is built: the same users, inputs
(each user's generator state handed over), schedule, gate, retries and counts, its threads
outside the interpreter lock; the window's edges stay here. ``IOLAB_DRIVER_CORE`` chooses and
the run's summary records which core ran.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from array import array
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from iolab import drivercore
from iolab.drivercore import Core, Target
from iolab.errors import RunFailed
from iolab.latency.histogram import Histogram
from iolab.latency.recording import Interval, OpKind, merged_by_kind
from iolab.workloads.tpcc import spec
from iolab.workloads.tpcc.dialect import Connect, TpccDialect
from iolab.workloads.tpcc.modes import SERVER
from iolab.workloads.tpcc.spec import Constants, RunRandom
from iolab.workloads.tpcc.transactions import WRITES, UserRollback, draw, run_client

if TYPE_CHECKING:
    from iolab.drivercore._native import Tpcc

INPUTS_AHEAD = 64  # transactions whose inputs a user draws at a time
MAX_RETRIES = 100  # of one transaction; more is a livelock, reported as an error
STOP_TIMEOUT = 60.0
RAMPUP, MEASURED, DONE = "rampup", "measured", "done"
PHASES = (RAMPUP, MEASURED, DONE)  # as the compiled core numbers them (tpcc.c)


@dataclass(frozen=True)
class DriverOptions:
    warehouses: int
    connections: int
    mode: str
    mix: Mapping[str, int] = field(default_factory=lambda: dict(spec.DEFAULT_MIX))
    all_warehouses: bool = False
    rampup: float = 0.0
    duration: float = 60.0
    rate: float | None = None  # transactions per second over all users (open loop)
    think: bool = False
    seed: int = 1
    interval_s: float = 1.0  # latency histograms: one per user, type and interval


@dataclass
class TypeCounts:
    """One transaction type's counts in the measured window (one user's, or merged); its
    latencies are in the run's intervals."""

    commits: int = 0
    rollbacks: int = 0  # the spec's New-Order rollbacks
    retries: int = 0  # attempts rolled back by a serialization failure or deadlock

    def add(self, other: TypeCounts) -> None:
        self.commits += other.commits
        self.rollbacks += other.rollbacks
        self.retries += other.retries


@dataclass(frozen=True)
class Snapshot:
    at: float  # perf_counter seconds
    next_o_ids: int  # sum(d_next_o_id)
    orders: int  # count(*) of orders
    counter: int | None  # the engine's own commits + rollbacks


@dataclass
class DriveResult:
    t0: float  # perf_counter seconds when the users started
    start: Snapshot
    end: Snapshot
    counts: dict[str, TypeCounts]
    flushes: int  # transactions the counter flush itself added inside the window
    intervals: list[Interval]  # each user's histogram per type per interval, rampup marked
    core: Core  # the driver core that ran the users

    @property
    def seconds(self) -> float:
        return self.end.at - self.start.at

    def per_minute(self, n: float) -> float:
        return n * 60.0 / self.seconds if self.seconds > 0 else math.nan

    @property
    def nopm(self) -> float:
        return self.per_minute(self.end.next_o_ids - self.start.next_o_ids)

    @property
    def nopm_orders(self) -> float:
        return self.per_minute(self.end.orders - self.start.orders)

    @property
    def nopm_client(self) -> float:
        return self.per_minute(self.counts["new_order"].commits)

    @property
    def ended_client(self) -> int:
        """Transactions the users ended in the window: commits, rollbacks and retried tries."""
        return sum(c.commits + c.rollbacks + c.retries for c in self.counts.values())

    @property
    def tpm(self) -> float | None:
        if self.start.counter is None or self.end.counter is None:
            return None
        return self.per_minute(self.end.counter - self.start.counter - self.flushes)

    @property
    def tpm_client(self) -> float:
        return self.per_minute(self.ended_client)

    def transactions(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        merged = merged_by_kind(self.intervals)
        for kind in spec.TRANSACTIONS:
            c = self.counts[kind]
            h = merged.get(kind, Histogram())
            ps: dict[float, float | None] = (
                dict(h.percentiles((50.0, 95.0, 99.0, 99.9)))
                if h.total
                else dict.fromkeys((50.0, 95.0, 99.0, 99.9))  # none ran: no latency (not NaN)
            )
            out[kind] = {
                "count": c.commits,
                "rollbacks": c.rollbacks,
                "retries": c.retries,
                "p50_us": ps[50.0],
                "p95_us": ps[95.0],
                "p99_us": ps[99.0],
                "p999_us": ps[99.9],
                "max_us": h.max_us if h.total else None,
            }
        return out


class Gate:
    """Holds users between transactions while the window's edge is read."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._inside = 0
        self._closed = False
        self.stopping = False

    def enter(self) -> bool:
        with self._cond:
            while self._closed and not self.stopping:
                self._cond.wait()
            if self.stopping:
                return False
            self._inside += 1
            return True

    def leave(self) -> None:
        with self._cond:
            self._inside -= 1
            if self._closed:  # only :meth:`close` waits for users to leave
                self._cond.notify_all()

    def close(self) -> None:
        """Return once no user is inside a transaction; none enters until :meth:`open`."""
        with self._cond:
            self._closed = True
            while self._inside:
                self._cond.wait(0.1)

    def open(self) -> None:
        with self._cond:
            self._closed = False
            self._cond.notify_all()

    def stop(self) -> None:
        with self._cond:
            self.stopping = True
            self._cond.notify_all()


class _User:
    def __init__(
        self,
        index: int,
        conn: Any,
        dialect: TpccDialect,
        options: DriverOptions,
        constants: Constants,
        shared: _Shared,
    ) -> None:
        self.index = index
        self.conn = conn
        self.dialect = dialect
        self.options = options
        self.random = RunRandom(f"{options.seed}:user:{index}", constants)
        self.shared = shared
        self.home = index % options.warehouses + 1
        self.counts = {kind: TypeCounts() for kind in spec.TRANSACTIONS}
        self.new_orders = 0  # committed, all phases (the live series)
        self.ended = 0  # transactions ended: commits, rollbacks, retried tries
        # latencies by (interval number, type, in the rampup)
        self.by_interval: dict[tuple[int, str, bool], array[int]] = {}
        self.error: BaseException | None = None
        kinds = [k for k in spec.TRANSACTIONS if options.mix.get(k, 0) > 0]
        self._kinds = kinds
        self._weights = [options.mix[k] for k in kinds]

    def run(self) -> None:
        try:
            self._loop()
        except BaseException as exc:
            self.error = exc
            self.shared.failed.set()

    def _sleep(self, seconds: float) -> None:
        if seconds > 0:
            self.shared.stop.wait(seconds)

    def _loop(self) -> None:
        o, r, shared = self.options, self.random, self.shared
        todo: list[tuple[str, Any]] = []
        while not shared.stop.is_set():
            if not todo:
                todo = self._draw(INPUTS_AHEAD)
            kind, tx = todo.pop()
            if o.think:
                self._sleep(spec.KEYING_SECONDS[kind])
            due: float | None = None
            if o.rate is not None:
                due = shared.t0 + shared.next_due() / o.rate
                self._sleep(due - time.perf_counter())
            if not shared.gate.enter():
                return
            try:
                start = due if due is not None else time.perf_counter()
                outcome, retries = self._attempt(kind, tx)
                now = time.perf_counter()
                micros = int((now - start) * 1e6)
                self.ended += 1 + retries
                self.new_orders += int(outcome and kind == "new_order")
                seq = int((now - shared.t0) / o.interval_s)
                key = (seq, kind, shared.phase == RAMPUP)
                found = self.by_interval.get(key)
                if found is None:
                    found = self.by_interval[key] = array("q")
                found.append(micros)
                if shared.phase == MEASURED:
                    c = self.counts[kind]
                    c.retries += retries
                    if outcome:
                        c.commits += 1
                    else:
                        c.rollbacks += 1
            finally:
                shared.gate.leave()
            if o.think:
                mean = spec.THINK_MEAN_SECONDS[kind]
                self._sleep(min(-math.log(max(r.rng.random(), 1e-12)) * mean, 10 * mean))

    def _draw(self, count: int) -> list[tuple[str, Any]]:
        """The next ``count`` transactions' types and inputs, last first: drawn in one go, the
        code stays in the CPU's caches, while drawn one by one after each wait for the server
        it ran cold and cost ~5 times as much client CPU (measured under load 15)."""
        o, r = self.options, self.random
        kinds = r.rng.choices(self._kinds, self._weights, k=count)
        todo = [
            (
                k,
                draw(
                    k,
                    r,
                    r.uniform(1, o.warehouses) if o.all_warehouses else self.home,
                    o.warehouses,
                ),
            )
            for k in kinds
        ]
        todo.reverse()
        return todo

    def _attempt(self, kind: str, tx: Any) -> tuple[bool, int]:
        """Run ``tx`` until it ends: (committed, retries); False for the spec's rollback."""
        d, conn = self.dialect, self.conn
        retries = 0
        while True:
            try:
                if self.options.mode == SERVER:
                    d.call(conn, tx)
                else:
                    d.begin(conn, kind in WRITES)
                    cur = conn.cursor()
                    try:
                        run_client(d, cur, tx)
                    finally:
                        cur.close()
                    d.commit(conn)
                return True, retries
            except UserRollback:
                d.rollback(conn)
                return False, retries
            except Exception as exc:
                if d.user_rollback(exc):
                    d.rollback(conn)
                    return False, retries
                if d.retryable(exc) and retries < MAX_RETRIES:
                    d.rollback(conn)
                    retries += 1
                    continue
                # the statement's error stops the run: a rollback that fails after it (on a
                # connection the server closed) is its consequence, not what to say
                with contextlib.suppress(Exception):
                    d.rollback(conn)
                raise


class _Shared:
    def __init__(self) -> None:
        self.gate = Gate()
        self.stop = threading.Event()
        self.failed = threading.Event()
        self.phase = RAMPUP
        self.t0 = time.perf_counter()
        self._due = 0
        self._lock = threading.Lock()

    def next_due(self) -> int:
        with self._lock:
            j = self._due
            self._due += 1
            return j


def snapshot(dialect: TpccDialect, conn: Any, sessions: Sequence[Any]) -> Snapshot:
    """The database's counts now (read in one go on the monitor connection); ``sessions``: the
    users' connections, whose transactions the engine's counter counts where it can tell."""
    counter = dialect.counter(conn, sessions)
    cur = conn.cursor()
    try:
        cur.execute("SELECT (SELECT sum(d_next_o_id) FROM district), (SELECT count(*) FROM orders)")
        next_o_ids, orders = cur.fetchone()
    finally:
        cur.close()
    dialect.rollback(conn)
    return Snapshot(time.perf_counter(), int(next_o_ids), int(orders), counter)


def drive(
    dialect: TpccDialect,
    connect: Connect,
    options: DriverOptions,
    constants: Constants,
    on_phase: Callable[[str, float], None] | None = None,
    around: Callable[[list[Any], Live], AbstractContextManager[object]] | None = None,
) -> DriveResult:
    """Run the users through rampup and the measured window; the window's numbers.
    ``around(sessions, live)``: a context (the probes) entered once the users' connections
    are open, left when they have stopped; ``sessions``: the users' connections (Python
    core) or their server-side ids (the compiled core), as ``catalog``'s ``sessions`` reads
    either."""
    core = choose_core(dialect, options)
    if core.name == drivercore.NATIVE:
        return _drive_native(dialect, connect, options, constants, core, on_phase, around)
    shared = _Shared()
    monitor = connect()
    users: list[_User] = []
    threads: list[threading.Thread] = []
    outer = ExitStack()
    try:
        for i in range(options.connections):
            conn = connect()
            dialect.prepare(conn, options.mode)
            users.append(_User(i, conn, dialect, options, constants, shared))
        if around is not None:
            live = Live(lambda: (sum(u.new_orders for u in users), sum(u.ended for u in users)))
            outer.enter_context(around([u.conn for u in users], live))
        shared.t0 = time.perf_counter()
        for u in users:
            t = threading.Thread(target=u.run, name=f"tpcc-user-{u.index}", daemon=True)
            threads.append(t)
            t.start()
        if on_phase is not None:
            on_phase(RAMPUP, options.rampup)
        shared.failed.wait(options.rampup)
        _check(users)
        held = _PythonUsers(dialect, shared, users)
        start, _ = _edge(dialect, held, monitor, [u.conn for u in users], MEASURED)
        if on_phase is not None:
            on_phase(MEASURED, options.duration)
        shared.failed.wait(options.duration)
        _check(users)
        end, flushes = _edge(dialect, held, monitor, [u.conn for u in users], DONE)
    finally:
        shared.stop.set()
        shared.gate.stop()
        shared.gate.open()
        for t in threads:
            t.join(STOP_TIMEOUT)
        outer.close()
        for u in users:
            with contextlib.suppress(Exception):
                u.conn.close()
        monitor.close()
    _check(users)
    counts = {kind: TypeCounts() for kind in spec.TRANSACTIONS}
    for u in users:
        for kind, c in u.counts.items():
            counts[kind].add(c)
    return DriveResult(shared.t0, start, end, counts, flushes, _intervals(users, options), core)


class Live:
    """The users' running totals, read by the probes while they run (cheap, no lock):
    ``totals()`` gives (New-Orders committed, transactions ended) over all users."""

    def __init__(self, totals: Callable[[], tuple[int, int]]) -> None:
        self._totals = totals

    def new_orders(self) -> int:
        return self._totals()[0]

    def ended(self) -> int:
        return self._totals()[1]


def choose_core(dialect: TpccDialect, options: DriverOptions) -> Core:
    """The compiled core runs server mode without think times on the engines whose dialect
    gives it a target (``core``); everything else stays on the Python path."""
    if options.mode != SERVER:
        what = f"TPC-C's {options.mode} mode"
    elif options.think:
        what = "TPC-C with --think"
    else:
        what = f"TPC-C on {dialect.title}"
    runs = options.mode == SERVER and not options.think and dialect.core is not None
    return drivercore.choose(runs, what)


def _drive_native(
    dialect: TpccDialect,
    connect: Connect,
    options: DriverOptions,
    constants: Constants,
    core: Core,
    on_phase: Callable[[str, float], None] | None,
    around: Callable[[list[Any], Live], AbstractContextManager[object]] | None,
) -> DriveResult:
    """:func:`drive` on the compiled core: the users are its threads, each with its own
    connection opened from the engine's target (as populate's loaders) and the generator state
    a Python user of the same index would have; the edges of the window are read here as on
    the Python path."""
    module, target = drivercore.native(), dialect.core
    assert module is not None  # choose() said native
    assert target is not None
    monitor = connect()
    users: Tpcc | None = None
    outer = ExitStack()
    try:
        users = module.Tpcc(
            engine=target.library,
            params=target.params(),
            mix=tuple(options.mix.get(k, 0) for k in spec.TRANSACTIONS),
            warehouses=options.warehouses,
            all_warehouses=options.all_warehouses,
            rate=options.rate or 0.0,
            interval_s=options.interval_s,
            states=[
                RunRandom(f"{options.seed}:user:{i}", constants).rng.getstate()
                for i in range(options.connections)
            ],
            constants=(constants.c_last, constants.c_id, constants.ol_i_id),
        )
        refused = users.connect()
        if refused is not None:
            _, code, text = refused
            raise RunFailed(
                f"{dialect.title} refused a connection during the TPC-C run: "
                f"{target.error(code, text)}"
            )
        sessions: list[int] = users.sessions()
        if around is not None:
            outer.enter_context(around(list(sessions), Live(users.live)))
        t0_ns = time.perf_counter_ns()
        users.start(t0_ns)
        if on_phase is not None:
            on_phase(RAMPUP, options.rampup)
        users.wait(options.rampup)
        _check_native(target, users)
        start, _ = _edge(dialect, users, monitor, sessions, MEASURED)
        if on_phase is not None:
            on_phase(MEASURED, options.duration)
        users.wait(options.duration)
        _check_native(target, users)
        end, flushes = _edge(dialect, users, monitor, sessions, DONE)
    finally:
        if users is not None:
            users.stop()
            users.open()
            users.join()
        outer.close()
        if users is not None:
            users.disconnect()
        monitor.close()
    _check_native(target, users)
    counts = {kind: TypeCounts() for kind in spec.TRANSACTIONS}
    for per_user in users.counts():
        for kind, (commits, rollbacks, retries) in zip(spec.TRANSACTIONS, per_user, strict=True):
            counts[kind].add(TypeCounts(commits, rollbacks, retries))
    step = options.interval_s
    intervals = [
        Interval(
            user,
            OpKind(spec.TRANSACTIONS[kind]),
            seq,
            rampup,
            seq * step,
            (seq + 1) * step,
            Histogram(counts=buckets, total=total, sum_us=sum_us, min_us=low, max_us=high),
        )
        for user, kind, seq, rampup, total, sum_us, low, high, buckets in sorted(
            users.intervals(), key=lambda r: (r[0], r[2], spec.TRANSACTIONS[r[1]], r[3])
        )
    ]
    return DriveResult(t0_ns / 1e9, start, end, counts, flushes, intervals, core)


def _check_native(target: Target, users: Any) -> None:
    """A failed user's error as :func:`_check` words the Python drivers' (the target words it:
    MariaDB's as PyMySQL's, ``(1213, '...')``)."""
    found = users.error()
    if found is not None:
        index, code, text = found
        raise RunFailed(f"virtual user {index + 1}: {target.error(code, text)}")


def _intervals(users: list[_User], options: DriverOptions) -> list[Interval]:
    step = options.interval_s
    out = []
    for u in users:
        for (seq, kind, rampup), values in sorted(u.by_interval.items()):
            h = Histogram()
            h.add_values(values)
            out.append(
                Interval(u.index, OpKind(kind), seq, rampup, seq * step, (seq + 1) * step, h)
            )
    return out


class Held(Protocol):
    """The users as the window's edge holds them, on either core: the Python path's
    (:class:`_PythonUsers`) or the compiled core's (``_native.Tpcc``, which has these calls)."""

    def close(self) -> None:
        """Return once no user is inside a transaction; none enters until :meth:`open`."""
        ...

    def open(self) -> None: ...

    def flush_counter(self) -> int:
        """Make every user's ended transactions visible to the engine's counter; the
        transactions the flushes themselves added."""
        ...

    def set_phase(self, phase: int, /) -> None:
        """The phase (``PHASES.index``) the transactions that start from now on count in."""
        ...


class _PythonUsers:
    """The Python path's users as :class:`Held`: their gate, counter flushes and phase."""

    def __init__(self, dialect: TpccDialect, shared: _Shared, users: list[_User]) -> None:
        self._dialect, self._shared, self._users = dialect, shared, users

    def close(self) -> None:
        self._shared.gate.close()

    def open(self) -> None:
        self._shared.gate.open()

    def flush_counter(self) -> int:
        return sum(self._dialect.flush_counter(u.conn) for u in self._users)

    def set_phase(self, phase: int, /) -> None:
        self._shared.phase = PHASES[phase]


def _edge(
    dialect: TpccDialect, users: Held, monitor: Any, sessions: Sequence[Any], phase: str
) -> tuple[Snapshot, int]:
    """Hold the users between transactions, flush their counts, read the database, go on
    (on either core: ``sessions`` are the users' connections or server-side ids)."""
    users.close()
    try:
        flushes = users.flush_counter()
        found = snapshot(dialect, monitor, sessions)
        users.set_phase(PHASES.index(phase))
    finally:
        if phase != DONE:
            users.open()
    return found, flushes


def _check(users: list[_User]) -> None:
    for u in users:
        if u.error is not None:
            exc = u.error
            text = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
            raise RunFailed(f"virtual user {u.index + 1}: {text}") from exc
