"""Parsing and arithmetic of the probes: /proc files, deltas with counter resets, checkpoint log
lines, the recorder's time grid and whole-run sums, wait tables."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Sequence

import pytest

from iolab.events import Collect
from iolab.probes.checkpoints import LsnCheckpoints, intervals, line_time, parse_line
from iolab.probes.devices import delta, readings
from iolab.probes.host import cpu_readings, parse_meminfo, parse_stat
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
from iolab.probes.recorder import Recorder
from iolab.probes.standard import wait_interval
from iolab.probes.waits import WaitTally, classify, split_event, summary_waits
from iolab.system import diskstats

STAT = """cpu  1000 50 300 5000 200 10 40 5 0 0
cpu0 600 20 200 2400 150 5 20 5 0 0
cpu1 400 30 100 2600 50 5 20 0 0 0
intr 12345 0 0
ctxt 999
procs_running 3
procs_blocked 2
"""
STAT_LATER = """cpu  1100 50 350 5100 220 10 50 5 0 0
cpu0 660 20 230 2440 165 5 25 5 0 0
cpu1 440 30 120 2660 55 5 25 0 0 0
procs_blocked 1
"""
MEMINFO = """MemTotal:       24000000 kB
Dirty:             20480 kB
Writeback:          1024 kB
HugePages_Total:       0
"""


def test_proc_stat_and_cpu_shares() -> None:
    before, after = parse_stat(STAT), parse_stat(STAT_LATER)
    assert set(before.cpus) == {"all", "cpu0", "cpu1"}
    assert before.procs_blocked == 2 and after.procs_blocked == 1
    assert before.cpus["all"].total == 1000 + 50 + 300 + 5000 + 200 + 10 + 40 + 5
    got = {r.key.name: r.value for r in cpu_readings("all", after.cpus["all"], before.cpus["all"])}
    # the interval: 100 user, 50 system, 10 softirq, 100 idle, 20 iowait: 280 jiffies
    assert got["cpu_user_pct"] == pytest.approx(100 * 100 / 280)
    assert got["cpu_system_pct"] == pytest.approx(100 * 60 / 280)
    assert got["cpu_iowait_pct"] == pytest.approx(100 * 20 / 280)
    assert got["cpu_steal_pct"] == 0


def test_meminfo_in_bytes() -> None:
    mem = parse_meminfo(MEMINFO)
    assert mem["Dirty"] == 20480 * 1024
    assert mem["Writeback"] == 1024 * 1024
    assert mem["HugePages_Total"] == 0


def test_counter_reset_counts_from_zero() -> None:
    assert counter_delta(150, 100) == 50
    assert counter_delta(30, 100) == 30  # reset to 0, then 30 more
    assert counter_delta(7, 7) == 0


def test_device_readings_iostat_arithmetic() -> None:
    line = "   8       1 sda1 {} 0 {} {} {} 0 {} {} {} {} {}"
    before = diskstats.parse(line.format(100, 800, 50, 200, 1600, 300, 0, 1000, 2000))["sda1"]
    after = diskstats.parse(line.format(150, 1200, 100, 400, 5696, 700, 2, 1500, 4000))["sda1"]
    got = {r.key.name: r for r in readings("sda1", "data+wal", delta(after, before), 0.5)}
    assert {r.key.role for r in got.values()} == {"data+wal"}
    assert got["read_mbps"].value == pytest.approx(400 * 512 / 1e6 / 0.5)
    assert got["write_mbps"].num == pytest.approx(4096 * 512 / 1e6)  # MB in the interval
    assert got["write_iops"].value == pytest.approx(200 / 0.5)
    assert got["read_await_ms"].value == pytest.approx(50 / 50)
    assert got["write_await_ms"].value == pytest.approx(400 / 200)
    assert got["aqu_sz"].value == pytest.approx(2000 / 500)  # weighted ms over elapsed ms
    assert got["util_pct"].value == pytest.approx(100.0)  # 500 busy ms of 500
    # a device that was reset (counters went back) counts from zero, never negative
    reset = delta(before, after)
    assert reset.writes == before.writes and reset.write_sectors == before.write_sectors


PG18_COMPLETE = (
    "2026-11-22 08:35:32.083 UTC [27483] LOG:  checkpoint complete: wrote 1093 buffers (6.7%), "
    "wrote 8 SLRU buffers; 1 WAL file(s) added, 0 removed, 0 recycled; write=0.011 s, "
    "sync=0.020 s, total=0.046 s; sync files=313, longest=0.001 s, average=0.001 s; "
    "distance=6716 kB, estimate=6716 kB; lsn=0/1D7E560, redo lsn=0/1D7E508"
)
PG15_COMPLETE = (
    "1763800532.500 [99] LOG:  checkpoint complete: wrote 42 buffers (0.3%); 0 WAL file(s) "
    "added, 0 removed, 0 recycled; write=4.012 s, sync=0.002 s, total=4.020 s; sync files=3"
)


def test_checkpoint_log_lines() -> None:
    start = parse_line(
        "2026-11-22 08:35:32.037 UTC [27483] LOG:  checkpoint starting: immediate force wait"
    )
    assert start is not None and start.starting and start.text == "immediate force wait"
    assert start.epoch == pytest.approx(line_time("2026-11-22 08:35:32.037 UTC x") or 0)
    done = parse_line(PG18_COMPLETE)
    assert done is not None and not done.starting
    assert done.pages == 1093 and done.total_seconds == pytest.approx(0.046)
    assert done.epoch is not None and done.epoch - start.epoch == pytest.approx(0.046, abs=1e-6)
    old = parse_line(PG15_COMPLETE)
    assert old is not None and old.epoch == 1763800532.5 and old.pages == 42
    assert parse_line("2026-11-22 08:35:28.828 UTC [1] LOG:  database system is ready") is None
    assert line_time("08:35:28 CET some text") is None  # a zone we cannot place


def test_checkpoint_intervals_pair_and_clip() -> None:
    first = parse_line(PG15_COMPLETE)  # began before recording: start = end - total
    begin = parse_line("1763800540.0 [9] LOG:  checkpoint starting: wal")
    end = parse_line(
        "1763800542.0 [9] LOG:  checkpoint complete: wrote 7 buffers (0.1%); total=2.0 s"
    )
    pending = parse_line("1763800550.0 [9] LOG:  checkpoint starting: time")
    assert first and begin and end and pending
    found = intervals([(2.5, first), (10.0, begin), (12.0, end), (20.0, pending)])
    assert [(c.start_s, c.end_s, c.pages, c.kind) for c in found] == [
        (pytest.approx(2.5 - 4.02), 2.5, 42, "begun before recording"),
        (10.0, 12.0, 7, "wal"),
        (20.0, None, None, "time"),
    ]


def test_innodb_checkpoint_activity_from_lsn_samples() -> None:
    lsn = LsnCheckpoints()
    # t, checkpoint LSN, pages flushed: quiet, then two seconds of flushing, then quiet again
    samples = [
        (0, 1000, 0),
        (1, 1000, 0),
        (2, 3_000_000, 500),
        (3, 6_000_000, 900),
        (4, 6_000_000, 900),
        (5, 6_000_010, 900),
    ]
    for t, cp, flushed in samples:
        lsn.observe(t, cp, flushed)
    found = lsn.finish()
    assert [(c.start_s, c.end_s, c.pages) for c in found] == [(1, 3, 900)]  # +10 bytes: no


def test_wait_tables() -> None:
    assert classify("active", None, None) == ("CPU", "running")
    assert classify("active", "Lock", "relation") == ("Lock", "relation")
    assert classify("idle", "Client", "ClientRead") == ("Client", "ClientRead")
    tally = WaitTally("pg_stat_activity")
    tally.add([("Lock", "relation"), ("CPU", "running")], 0.1)
    tally.add([("Lock", "relation"), ("Lock", "relation")], 0.2)
    stats = {(w.wait_class, w.event): w for w in tally.stats()}
    assert stats["Lock", "relation"].samples == 3
    assert stats["Lock", "relation"].share == pytest.approx(0.75)
    assert stats["Lock", "relation"].est_seconds == pytest.approx(0.5)
    assert split_event("wait/io/file/innodb/innodb_log_file") == (
        "wait/io/file",
        "innodb/innodb_log_file",
    )
    assert split_event("idle") == ("idle", "idle")
    before = {"wait/io/file/a": (10, 1_000_000_000_000), "wait/synch/mutex/b": (5, 100)}
    after = {
        "wait/io/file/a": (30, 4_000_000_000_000),
        "wait/synch/mutex/b": (2, 1_000_000_000_000),  # reset in between: counts from zero
        "wait/lock/table/c": (1, 0),
    }
    got = {w.event: w for w in summary_waits(before, after, "performance_schema")}
    assert got["a"].samples == 20 and got["a"].est_seconds == pytest.approx(3.0)
    assert got["b"].samples == 2 and got["b"].est_seconds == pytest.approx(1.0)
    assert got["a"].share == pytest.approx(0.75)
    assert got["c"].share == 0


def test_waits_of_many_sessions_are_sampled_less_often() -> None:
    # 10 Hz up to 16 sessions; then at least 160 session-samples a second; never below 1 Hz
    assert [wait_interval(n) for n in (1, 16, 17, 32, 64, 100, 160, 1000)] == [
        0.1,
        0.1,
        0.2,
        0.2,
        0.4,
        0.7,
        1.0,
        1.0,
    ]


class Ticker:
    """A counter that grows by ``rate`` per second, as a probe; for the recorder's arithmetic."""

    pace = Pace.FINE
    drop_idle = False

    def __init__(self, name: str, rate: float, fail_at: float | None = None) -> None:
        self.name = name
        self.rate = rate
        self.fail_at = fail_at
        self.start_time = 0.0
        self.last = 0.0
        self.key = SeriesKey(name, "ticks_per_s", "ticks/s", Kind.RATE)
        self.closed = False

    def open(self, warn: Warn) -> None:
        pass

    def start(self, t0_wall: float) -> None:
        self.start_time = time.perf_counter()
        self.last = 0.0

    def sample(self, t: float, dt: float) -> Sequence[Reading]:
        if self.fail_at is not None and t >= self.fail_at:
            raise OSError("the source went away")
        now = (time.perf_counter() - self.start_time) * self.rate
        reading = Reading(self.key, now - self.last, dt)
        self.last = now
        return [reading]

    def finish(self, t: float) -> Findings:
        return Findings()

    def close(self) -> None:
        self.closed = True


class Unavailable(Ticker):
    def open(self, warn: Warn) -> None:
        raise ProbeUnavailable("no such view")


def test_recorder_grid_totals_and_failing_probes() -> None:
    events = Collect()
    good = Ticker("good", 1000.0)
    failing = Ticker("failing", 10.0, fail_at=0.25)
    missing = Unavailable("missing", 1.0)
    with Recorder([good, failing, missing], interval=0.1, events=events) as rec:
        time.sleep(0.57)
    data = rec.data
    assert good.closed and failing.closed and missing.closed
    warnings = events.warnings()
    assert warnings.count("missing: no such view; the run goes on without it") == 1
    assert sum("probe failing stopped" in w and "the source went away" in w for w in warnings) == 1
    series = data.one("good", "ticks_per_s")
    assert series is not None
    assert series.interval == 0.1 and series.t0 == 0.1
    assert series.n == len(series.values) >= 5
    times = series.times()
    assert times[-1] == data.duration and times[0] == pytest.approx(0.1)
    # the total is exact whatever the sampling jitter: rate x the recorded time
    assert series.total == pytest.approx(1000.0 * data.duration, rel=0.02)
    assert series.mean == pytest.approx(1000.0, rel=0.02)
    assert all(v == pytest.approx(1000.0, rel=0.25) for v in series.values)
    # the failing probe's series stops (NaN) where it failed; the run went on
    broken = data.one("failing", "ticks_per_s")
    assert broken is not None and broken.n == series.n
    assert math.isnan(broken.values[-1]) and not math.isnan(broken.values[0])
    assert len(data.notes) == 2


def test_recorder_samples_on_its_own_threads() -> None:
    seen: list[str] = []

    class Watcher(Ticker):
        def sample(self, t: float, dt: float) -> Sequence[Reading]:
            seen.append(threading.current_thread().name)
            return super().sample(t, dt)

    with Recorder([Watcher("w", 1.0)], interval=0.05):
        time.sleep(0.2)
    assert "iolab-probes-fine" in seen


def test_a_requested_checkpoint_takes_the_pages_of_the_engines_record_of_it() -> None:
    from iolab.probes.checkpoints import merge_requested
    from iolab.probes.interface import Checkpoint

    own = [
        Checkpoint(0.5, 3.0, 900, "time", "wrote 900 buffers"),
        Checkpoint(10.2, 10.9, 3202, "immediate force wait", "wrote 3202 buffers"),
        Checkpoint(30.0, None, None, "wal", "still running"),
    ]
    requested = [
        Checkpoint(10.0, 11.0, None, "requested", "CHECKPOINT"),
        Checkpoint(20.0, 20.4, 55, "requested", "wal_checkpoint(TRUNCATE)"),
    ]
    merged = merge_requested(own, requested)
    assert [(c.start_s, c.end_s, c.pages, c.kind) for c in merged] == [
        (0.5, 3.0, 900, "time"),
        (10.0, 11.0, 3202, "requested"),
        (20.0, 20.4, 55, "requested"),
        (30.0, None, None, "wal"),
    ]
    assert merged[1].detail == "CHECKPOINT; wrote 3202 buffers"


class Scripted:
    """A probe whose readings follow its sample times: a rate of ``t`` per second (so each
    interval's count is known exactly), a gauge equal to ``t``, and a ratio that has nothing to
    say (0 / 0) in the second half of each second."""

    pace = Pace.FINE
    drop_idle = False
    name = "scripted"
    rate = SeriesKey("scripted", "rate", "1/s", Kind.RATE)
    gauge = SeriesKey("scripted", "gauge", "s", Kind.GAUGE)
    ratio = SeriesKey("scripted", "ratio", "ms", Kind.RATIO)

    def open(self, warn: Warn) -> None:
        pass

    def start(self, t0_wall: float) -> None:
        pass

    def sample(self, t: float, dt: float) -> Sequence[Reading]:
        busy = (t % 1.0) <= 0.5 + 1e-9 and t % 1.0 > 1e-9
        return [
            Reading(self.rate, t * dt, dt),  # rate t over dt seconds
            Reading(self.gauge, t),
            Reading(self.ratio, 2.0 * dt if busy else 0.0, dt if busy else 0.0),
        ]

    def finish(self, t: float) -> Findings:
        return Findings()

    def close(self) -> None:
        pass


def test_the_sampling_grid_is_fine_at_first_and_divides_the_interval() -> None:
    from iolab.sampling import Grid

    g = Grid.adaptive(1.0)
    assert (g.fine, g.ratio, g.fine_until, g.fine_steps) == (pytest.approx(0.1), 10, 10.0, 100)
    assert g.step_for(1.0) == pytest.approx(0.1) and g.step_for(11.0) == 1.0
    g7 = Grid.adaptive(7.0)  # the fine start ends on an interval boundary: 14 s
    assert (g7.ratio, g7.fine_until) == (70, 14.0)
    g25 = Grid.adaptive(0.25)  # the fine step divides the interval: 0.125 s, not 0.1
    assert (g25.ratio, g25.fine) == (3, pytest.approx(0.25 / 3))
    assert Grid.adaptive(0.1).fine_steps == 0  # no finer than 10 Hz
    assert Grid.adaptive(0.1).step_for(100.0) == 0.1


def test_a_run_longer_than_the_fine_start_keeps_exact_totals_on_the_set_interval() -> None:
    from iolab.probes.recorder import _Group, _Notes
    from iolab.sampling import Grid

    group = _Group(Grid(1.0, 0.1, 30.0), [Scripted()])  # a 30-s fine start
    notes = _Notes()
    # the thread's ticks, driven by hand: 300 fine ticks, one late by half a step (t = 12.35)
    # and one missed (12.4 and 12.5 read at once at 12.5), then whole seconds
    ticks = [round(0.1 * k, 10) for k in range(1, 301) if k not in (123, 124)]
    ticks.insert(122, 12.35)
    tick = 1
    for t in ticks:
        passed = min(max(tick, math.floor(t / 0.1 + 1e-9)), 300)
        group.sample(t, passed - tick + 1, notes)
        tick = passed + 1
    assert group.fine and group.slots == 300
    fine_rate = group.tracks[Scripted.rate]
    fine_total = fine_rate.total_num
    assert fine_total == pytest.approx(30.0**2 / 2, rel=0.01)  # integral of t dt
    assert group._coarsen() == 30 and not group.fine and group.interval == 1.0
    assert fine_rate.peak == pytest.approx(29.55, abs=1e-3)  # the merged values' peak
    for t in (31.0, 32.0, 32.5):
        group.sample(t, 1, notes)
    series = {s.key.name: s for s in group.series(32.5)}
    rate, gauge, ratio = series["rate"], series["gauge"], series["ratio"]
    assert (rate.t0, rate.interval, rate.n) == (1.0, 1.0, 33)
    assert rate.total_num == pytest.approx(fine_total + 31.0 + 32.0 + 32.5 * 0.5)
    # second k's rate is the mean of t over it: about k - 0.5 (the fine samples' right ends)
    assert rate.values[9] == pytest.approx(9.55, abs=1e-3)
    assert gauge.values[9] == pytest.approx(10.0) and gauge.values[29] == pytest.approx(30.0)
    assert gauge.mean == pytest.approx(sum(gauge.values) / 33, rel=1e-6)
    # a ratio: sum(num) / sum(den) over the busy half of each second, never a mean of means
    assert ratio.values[3] == pytest.approx(2.0) and ratio.mean == pytest.approx(2.0)
    assert rate.peak == pytest.approx(32.5)  # the last, half-interval reading


def test_a_short_run_keeps_ten_points_a_second_of_its_cheap_probes() -> None:
    class Engine(Ticker):  # engine counters: a query per sample, at the interval throughout
        pace = Pace.INTERVAL

    with Recorder([Ticker("t", 100.0), Engine("e", 10.0)], interval=1.0) as rec:
        time.sleep(1.05)
    series = rec.data.one("t", "ticks_per_s")
    assert series is not None and series.interval == pytest.approx(0.1)
    assert rec.data.interval == pytest.approx(0.1)
    assert series.n >= 10 and series.total == pytest.approx(100.0 * rec.data.duration, rel=0.02)
    engine = rec.data.one("e", "ticks_per_s")
    assert engine is not None and engine.interval == 1.0  # one value: the last 0.05 s folded in
    assert engine.n == 1
    assert engine.total == pytest.approx(10.0 * rec.data.duration, rel=0.02)


def test_a_run_that_ends_past_the_fine_start_before_its_last_fine_tick_is_merged_too() -> None:
    from iolab.probes.recorder import _Group, _Notes
    from iolab.sampling import Grid

    group = _Group(Grid(1.0, 0.1, 2.0), [Scripted()])  # a 2-s fine start
    notes = _Notes()
    for k in range(1, 19):  # ticks up to 1.8 s; the thread is late for 1.9 and 2.0
        group.sample(round(0.1 * k, 10), 1, notes)
    group.finish(2.05, notes)
    assert not group.fine and group.interval == 1.0
    rate = next(s for s in group.series(2.05) if s.key.name == "rate")
    assert rate.n == 2 and rate.values[0] == pytest.approx(0.55, abs=1e-3)
    assert rate.total_num == pytest.approx(sum(0.1 * k * 0.1 for k in range(1, 19)) + 2.05 * 0.25)


def test_a_last_reading_folded_into_the_fine_start_counts_when_it_is_merged() -> None:
    from iolab.probes.recorder import _Group, _Notes
    from iolab.sampling import Grid

    group = _Group(Grid(1.0, 0.1, 1.0), [Scripted()])  # a 1-s fine start
    notes = _Notes()
    for k in range(1, 9):  # ticks up to 0.8 s, then the 0.9 tick woken late, at 0.999 s
        group.sample(round(0.1 * k, 10), 1, notes)
    group.sample(0.999, 1, notes)
    group.finish(1.01, notes)  # 0.011 s later: folded into the last value, then merged
    rate = next(s for s in group.series(1.01) if s.key.name == "rate")
    assert not group.fine and rate.n == 1
    assert rate.values[0] == pytest.approx(rate.total_num / 1.01, rel=1e-5)
