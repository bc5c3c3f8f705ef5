"""The compiled driver core's populate parts against the Python path, without a server: its HDR
bucket index against ``histogram.bucket`` (every value from 1 ns to an hour), and its loader
clock (c/clock.c) against :class:`~iolab.latency.recording.LoaderClock` under one synthetic
clock: the same starts, the same intervals, the same histograms."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from iolab import drivercore
from iolab.latency import histogram
from iolab.latency import recording as rec
from iolab.latency.histogram import Histogram
from iolab.latency.recording import KIND_ORDER, LoaderClock, OpKind, Pacing
from iolab.workloads.populate.loading import KeyKind, LoadMethod, LoadMode, LoadSpec
from iolab.workloads.populate.mariadb import MariaDBPopulate
from iolab.workloads.populate.native import clock_config, supported
from iolab.workloads.populate.postgres import PostgresPopulate
from iolab.workloads.populate.sqlite import SQLitePopulate

native = drivercore.native()
pytestmark = pytest.mark.skipif(native is None, reason="the compiled core is not built")
T0 = 1_000_000_000_000  # a perf_counter_ns reading: the load's start


def test_bucket_equals_histogram_bucket_from_1_ns_to_an_hour() -> None:
    """Every value 0 .. 2**21 us one by one, then each bucket's edges up to an hour: its lowest
    and highest value and the values just outside them. That covers every value from 1 ns
    (0 us: latencies are whole microseconds, so 1 ns to 999 ns are 0) to an hour: above
    2**21 a bucket holds 2**k values that share their bits above the k-th, and both
    formulas read only those bits (the bit length of ``v | 2047`` and ``v >> b``), so a
    value inside a bucket is indexed as its edges are."""
    assert native is not None
    for v in range(2**21 + 1):
        assert native.bucket(v) == histogram.bucket(v), v
    top = histogram.bucket(histogram.HIGHEST_US)
    assert top + 1 == native.HDR_BUCKETS
    for i in range(histogram.bucket(2**21), top + 1):
        lo, hi = histogram.lowest(i), histogram.highest(i)
        for v in (lo - 1, lo, hi, hi + 1):
            if 0 <= v <= histogram.HIGHEST_US:
                assert native.bucket(v) == histogram.bucket(v), v
    # outside 0 .. 1 h the core clamps, as Histogram.add_values does before bucketing
    assert native.bucket(-5) == 0
    assert native.bucket(histogram.HIGHEST_US + 10**9) == top


@dataclass(frozen=True)
class Scenario:
    pacing: Pacing
    loaders: int
    index: int
    seconds: float  # how long the synthetic load runs
    commit_every: int = 1
    end_warmup_at: float | None = None  # a warm-up of rows ends here (seconds from t0)


SCENARIOS = {
    # a time warm-up, a fine start then whole intervals, one autocommitted row per operation
    "warmup-time": Scenario(Pacing(1.0, warmup_s=2.5), 1, 0, 14.0),
    # a warm-up of rows ended from outside, explicit transactions (statements and commits)
    "warmup-rows": Scenario(Pacing(0.3, warmup_rows=100), 4, 2, 13.0, 5, end_warmup_at=3.7),
    # a rate over 3 loaders with a deadline and a time warm-up (the schedule's warm rows)
    "rate-deadline": Scenario(Pacing(0.5, warmup_s=1.5, duration_s=11.0, rate=60.0), 3, 1, 20.0),
    # a rate the loader cannot hold (latency counts from the due time), commits of 3
    "rate-behind": Scenario(Pacing(2.0, duration_s=12.0, rate=200.0), 2, 0, 20.0, 3),
    # no fine start (interval at the fine step), a deadline
    "no-fine-start": Scenario(Pacing(0.1, duration_s=3.0), 1, 0, 5.0),
}


def _durations(seed: int) -> Iterator[int]:
    """Operation latencies in ns: mostly short, some long (several buckets wide), some
    stalls across intervals, a few under 1 us."""
    r = random.Random(seed)
    while True:
        x = r.random()
        if x < 0.05:
            yield r.randrange(0, 1000)
        elif x < 0.9:
            yield r.randrange(20_000, 40_000_000)
        elif x < 0.98:
            yield r.randrange(40_000_000, 400_000_000)
        else:
            yield r.randrange(400_000_000, 3_000_000_000)


def _python_intervals(clock: LoaderClock) -> list[tuple[int, int, bool, int, int, Histogram]]:
    out = []
    while clock.closed:
        seq, warm, start, end, values = clock.closed.popleft()
        for kind, raw in values.items():
            if raw:
                h = Histogram()
                h.add_values(raw)
                out.append((KIND_ORDER.index(kind), seq, warm, start, end, h))
    return out


def _core_intervals(found: list[tuple]) -> list[tuple[int, int, bool, int, int, Histogram]]:  # type: ignore[type-arg]
    return [
        (kind, seq, warm, start, end, Histogram(counts, total, s, lo, hi))
        for _, kind, seq, warm, start, end, counts, total, s, lo, hi in found
    ]


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_the_core_clock_closes_the_intervals_loaderclock_closes(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both clocks get the same times: LoaderClock reads them from a patched perf_counter_ns
    (its sleeps return at once; the loop then moves the time to the due start), the core's
    Clock takes them as arguments. Every start, every interval and every histogram agree."""
    assert native is not None
    s = SCENARIOS[name]
    now = [T0]
    monkeypatch.setattr(rec.time, "perf_counter_ns", lambda: now[0])
    monkeypatch.setattr(rec.time, "sleep", lambda _s: None)
    py = LoaderClock(s.index, s.loaders, s.pacing, T0, True)
    core = native.Clock(s.index, T0, clock_config(s.pacing, s.loaders, True))
    explicit = s.commit_every > 1
    kind = OpKind.STATEMENT if explicit else OpKind.TRANSACTION
    durations = _durations(hash(name) & 0xFFFF)
    end = T0 + round(s.seconds * 1e9)
    pending, ended_warmup, ops = 0, False, 0
    while now[0] < end:
        if (
            s.end_warmup_at is not None
            and not ended_warmup
            and now[0] >= T0 + s.end_warmup_at * 1e9
        ):
            py.end_warmup(now[0])
            core.end_warmup(now[0])
            ended_warmup = True
        can_stop = pending == 0
        started = py.begin(1, can_stop=can_stop)
        assert core.next(now[0], 1, can_stop) == started
        if started is None:
            break
        now[0] = max(now[0], started) + next(durations)
        py.record(kind, started)
        core.record(KIND_ORDER.index(kind), started, now[0])
        pending += 1
        ops += 1
        if explicit and pending == s.commit_every:
            begun = now[0]
            now[0] += next(durations) // 4
            py.record(OpKind.COMMIT, begun)
            core.record(KIND_ORDER.index(OpKind.COMMIT), begun, now[0])
            pending = 0
        if ops % 7 == 0:  # the main thread collects while the loader runs
            assert _core_intervals(core.collect()) == _python_intervals(py)
        now[0] += random.Random(ops).randrange(0, 30_000_000)  # the client's own time
    assert ops > 10
    py.finish(now[0])
    core.finish(now[0])
    assert _core_intervals(core.collect()) == _python_intervals(py)
    assert core.warm_rows() == py.warm_rows


def test_a_finished_clock_holds_every_operation_once() -> None:
    """What the core's clock closed sums to what it recorded: no value lost or counted twice
    across the fine start, the warm-up's end and the last interval."""
    assert native is not None
    core = native.Clock(0, T0, clock_config(Pacing(1.0, warmup_s=0.35), 1, True))
    t = T0
    for i in range(5000):
        core.record(0, t, t + 1000 * (i % 3000))
        t += 3_000_000
    core.finish(t)
    found = _core_intervals(core.collect())
    assert sum(h.total for *_, h in found) == 5000
    assert sum(h.sum_us for *_, h in found) == sum(i % 3000 for i in range(5000))
    warm = [f for f in found if f[2]]
    assert warm and warm[-1][4] == T0 + 350_000_000  # the warm-up's interval ends at 0.35 s


def test_an_untimed_clock_paces_and_stops_but_records_nothing() -> None:
    assert native is not None
    core = native.Clock(0, T0, clock_config(Pacing(1.0, duration_s=1.0, rate=10.0), 1, False))
    starts = []
    while (start := core.next(T0, 1, True)) is not None:
        starts.append(start)
        core.record(0, start, start + 5000)
    assert starts == [T0 + i * 100_000_000 for i in range(10)]  # row j due at j / rate
    core.finish(T0 + 10**9)
    assert core.collect() == []


def test_what_the_core_runs() -> None:
    """Client-mode INSERTs of one row on PostgreSQL and MariaDB, the statements the Python
    path prepares; multirow, COPY, server mode and SQLite stay Python."""
    spec = LoadSpec(KeyKind.RANDOM, LoadMethod.INSERT, LoadMode.CLIENT, 1, 4045)
    pg, my = PostgresPopulate(["pg_default"], 170000), MariaDBPopulate([], 16384)
    assert supported(pg, spec) and supported(my, spec)
    assert not supported(SQLitePopulate(["main"], 4096), spec)
    for method in (LoadMethod.MULTIROW, LoadMethod.COPY):
        assert not supported(pg, LoadSpec(spec.key, method, LoadMode.CLIENT, 1, 4045))
    assert not supported(pg, LoadSpec(spec.key, spec.method, LoadMode.SERVER, 1, 4045))
    assert pg.core_insert(KeyKind.RANDOM) == "INSERT INTO iolab_populate (id) VALUES ($1)"
    assert pg.core_insert(KeyKind.SEQUENTIAL) == (
        "INSERT INTO iolab_populate (payload) VALUES (DEFAULT)"
    )
    assert my.core_insert(KeyKind.ORDERED_UUID) == "INSERT INTO iolab_populate (id) VALUES (?)"
    assert my.core_insert(KeyKind.SEQUENTIAL) == "INSERT INTO iolab_populate () VALUES ()"


def test_a_server_that_is_not_there_is_one_line_per_loader() -> None:
    """open() on a socket with no server: each loader's connection error, never a crash."""
    assert native is not None
    cfg = clock_config(Pacing(1.0), 2, True)
    for engine, params in (
        ("postgres", {"host": "/nonexistent-iolab", "dbname": "x", "connect_timeout": "2"}),
        ("mariadb", {"unix_socket": "/nonexistent-iolab/s.sock", "user": "root"}),
    ):
        core = native.Populate(engine, params, "INSERT INTO t () VALUES ()", 0, 1, [5, 5], cfg, 0)
        failed = core.open()
        assert failed is not None
        index, _code, message = failed
        assert index in (0, 1) and message and "\n" not in message
        core.close()
