"""Latency histograms (HdrHistogram's buckets, checked against the ``hdrhistogram`` package),
the loaders' clocks (rate schedule, duration, warm-up intervals) and the interval log export,
read back by ``hdrhistogram``'s own log reader."""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader

from iolab.latency import histogram as hist
from iolab.latency.data import LatencyData, series, summary
from iolab.latency.export import interval_log
from iolab.latency.histogram import Histogram
from iolab.latency.recording import (
    Interval,
    LatencyRecording,
    LoaderClock,
    OpKind,
    Pacing,
    merged_by_kind,
    rows_due,
)
from iolab.report.comparison import compare
from iolab.results import RunId, RunOutcome
from iolab.runner.single import CommandRun, execute
from iolab.store import open_store


def _values(n: int, seed: int = 7) -> list[int]:
    rng = random.Random(seed)
    out = [int(rng.lognormvariate(6.5, 1.2)) for _ in range(n)]  # ~700 us median, long tail
    return [*out, 0, 1, 2047, 2048, 2049, 4095, 4096, 123_456_789, hist.HIGHEST_US]


def _hdr(values: list[int]) -> HdrHistogram:
    h = HdrHistogram(hist.LOWEST_US, hist.HIGHEST_US, hist.SIGNIFICANT_DIGITS)
    for v in values:
        h.record_value(v)
    return h


def test_buckets_are_hdrhistograms() -> None:
    ref = HdrHistogram(hist.LOWEST_US, hist.HIGHEST_US, hist.SIGNIFICANT_DIGITS)
    for v in _values(3000):
        i = hist.bucket(v)
        assert i == ref.get_counts_array_index(v)
        assert hist.lowest(i) == ref.get_lowest_equivalent_value(v)
        assert hist.highest(i) == ref.get_highest_equivalent_value(v)


def test_bulk_filling_puts_each_value_in_its_bucket() -> None:
    """add_values inlines bucket()'s arithmetic: the same bucket for every value, also above
    the hour it clamps to and below zero."""
    values = [*_values(3000), -5, hist.HIGHEST_US + 10]
    bulk = Histogram()
    bulk.add_values(values)
    clamped = [min(max(v, 0), hist.HIGHEST_US) for v in values]
    one_by_one: dict[int, int] = {}
    for v in clamped:
        one_by_one[hist.bucket(v)] = one_by_one.get(hist.bucket(v), 0) + 1
    assert bulk.counts == one_by_one
    assert (bulk.min_us, bulk.max_us, bulk.total) == (0, hist.HIGHEST_US, len(values))
    assert bulk.sum_us == sum(clamped)


def test_percentiles_equal_hdrhistograms() -> None:
    values = _values(20_000)
    ours = Histogram()
    ours.add_values(values)
    ref = _hdr(values)
    for p in (1.0, 25.0, 50.0, 90.0, 99.0, 99.9, 99.99, 100.0):
        # HdrHistogram's value, except that ours never passes the largest value recorded
        assert ours.percentile(p) == min(ref.get_value_at_percentile(p), max(values)), p
    assert ours.total == ref.get_total_count() == len(values)
    assert ours.max_us == max(values)
    assert ours.min_us == 0
    assert ours.mean_us == pytest.approx(sum(values) / len(values))  # exact, not bucket midpoints


def test_stats_names_every_percentile() -> None:
    h = Histogram()
    h.add_values(range(1, 10_001))  # 1 .. 10,000 us
    st = h.stats()
    assert st["count"] == 10_000
    assert st["mean_us"] == 5000.5
    assert st["p50_us"] == 5003  # the bucket of the 5,000th value: 5000-5003 (width 4)
    assert st["p99_us"] == 9903
    assert st["max_us"] == 10_000
    assert st["p9999_us"] <= st["max_us"]


def test_merging_is_exact() -> None:
    values = _values(5000)
    parts = [values[i::3] for i in range(3)]
    merged = Histogram.merged(_filled(p) for p in parts)
    whole = _filled(values)
    assert merged == whole  # bucket by bucket, with count, sum, min and max


def test_pack_round_trip() -> None:
    h = _filled(_values(4000))
    back = Histogram.unpack(h.pack(), total=h.total, sum_us=h.sum_us, min_us=h.min_us,
                            max_us=h.max_us)  # fmt: skip
    assert back == h
    assert len(h.pack()) < 4 * len(h.counts)  # varints, compressed


def test_to_hdr_keeps_every_count() -> None:
    values = _values(3000)
    h = _filled(values)
    ref = h.to_hdr()
    assert ref.get_total_count() == len(values)
    assert ref.get_value_at_percentile(99.9) == h.percentile(99.9)


def test_empty_histogram_says_nan() -> None:
    h = Histogram()
    assert math.isnan(h.percentile(99))
    assert math.isnan(h.mean_us)


def test_rate_schedule_spaces_loaders_evenly() -> None:
    t0 = time.perf_counter_ns() + 10**12  # far ahead: nothing is due yet
    pacing = Pacing(1.0, rate=1000.0)  # 1,000 rows/s over 4 loaders
    clocks = [LoaderClock(i, 4, pacing, t0, timed=True) for i in range(4)]
    dues = sorted((c.due(1) or 0) - t0 for c in clocks for _ in range(3))
    assert dues == [i * 1_000_000 for i in range(12)]  # a row every 1 ms, loaders in turn
    batch = LoaderClock(0, 1, pacing, t0, timed=True)
    assert [(batch.due(10) or 0) - t0 for _ in range(3)] == [0, 10_000_000, 20_000_000]


def test_duration_stops_new_work_at_a_boundary_only() -> None:
    t0 = time.perf_counter_ns() - 2 * 10**9  # started 2 s ago
    clock = LoaderClock(0, 1, Pacing(1.0, duration_s=1.0), t0, timed=True)
    assert clock.begin(1) is None  # time is up
    assert clock.begin(1, can_stop=False) is not None  # inside a transaction: go on
    now = time.perf_counter_ns()
    paced = LoaderClock(0, 1, Pacing(1.0, duration_s=60.0, rate=1 / 20), now, timed=True)
    assert paced.due(1) == now  # due at 0 s
    assert paced.due(1) == now + 20 * 10**9  # due at 20 s
    assert paced.due(1) == now + 40 * 10**9  # due at 40 s
    assert paced.due(1) is None  # due at 60 s: the run is over
    behind = LoaderClock(0, 1, Pacing(1.0, duration_s=1.0, rate=1000.0), t0, timed=True)
    assert behind.due(1) is None  # due long ago, but the deadline has passed: it stops


def test_latency_counts_from_the_intended_start() -> None:
    rec = LatencyRecording(1, Pacing(1.0))
    rec.begin(time.perf_counter_ns())
    clock = rec.clocks[0]
    clock.record(OpKind.COMMIT, time.perf_counter_ns() - 5_000_000)  # due 5 ms ago
    (interval,) = rec.finish(time.perf_counter_ns())
    assert interval.kind is OpKind.COMMIT
    assert 5000 <= interval.histogram.min_us < 1_000_000


def test_rows_warmup_splits_the_interval() -> None:
    rec = LatencyRecording(2, Pacing(60.0, warmup_rows=100))
    rec.begin(time.perf_counter_ns())
    for c in rec.clocks:
        c.record(OpKind.TRANSACTION, time.perf_counter_ns())
    rec.end_warmup(time.perf_counter_ns())
    for c in rec.clocks:
        for _ in range(3):
            c.record(OpKind.TRANSACTION, time.perf_counter_ns())
    intervals = rec.finish(time.perf_counter_ns())
    warm = [i for i in intervals if i.warmup]
    measured = [i for i in intervals if not i.warmup]
    assert sum(i.histogram.total for i in warm) == 2
    assert sum(i.histogram.total for i in measured) == 6
    assert {i.seq for i in intervals} == {0}
    assert all(w.end_s <= m.start_s for w in warm for m in measured)
    assert merged_by_kind(intervals)["transaction"].total == 6
    assert merged_by_kind(intervals, warmup=True)["transaction"].total == 8


def test_time_warmup_is_a_boundary() -> None:
    t0 = time.perf_counter_ns() - 3 * 10**9  # 3 s ago, on a 1 s grid, warm-up 1.5 s
    rec = LatencyRecording(1, Pacing(1.0, warmup_s=1.5))
    rec.begin(t0)
    rec.clocks[0].record(OpKind.TRANSACTION, time.perf_counter_ns())
    (only,) = rec.finish(time.perf_counter_ns())
    assert not only.warmup
    assert only.seq == 30  # a 3-s load keeps the fine start's grid: 0.1 s
    assert rec.interval_s == pytest.approx(0.1)


def test_a_load_past_the_fine_start_lands_on_whole_intervals() -> None:
    from iolab.latency.recording import Interval, _widen

    t0 = time.perf_counter_ns() - 45 * 10**9  # 45 s ago; the fine start ended at 10 s
    rec = LatencyRecording(1, Pacing(1.0))
    rec.begin(t0)
    rec.clocks[0].record(OpKind.COMMIT, time.perf_counter_ns())
    (only,) = rec.finish(time.perf_counter_ns())
    assert only.seq == 45 and rec.interval_s == 1.0
    # the fine start's histograms merge bucket by bucket into whole intervals
    fine = []
    for seq in range(20):
        h = Histogram()
        h.add_values([100 + seq] * (seq + 1))
        fine.append(Interval(0, OpKind.COMMIT, seq, False, seq / 10, (seq + 1) / 10, h))
    wide = sorted(_widen(fine, 300, 10), key=lambda i: i.seq)
    assert [(i.seq, i.histogram.total) for i in wide] == [(0, 55), (1, 155)]
    assert (wide[1].start_s, wide[1].end_s) == (1.0, 2.0)
    assert wide[0].histogram.max_us == 109 and wide[1].histogram.min_us == 110


def test_summary_and_series() -> None:
    intervals = _intervals()
    run = LatencyData(tuple(intervals), 1.0, 1_700_000_000.0)
    block = summary(run, True)
    assert block is not None
    assert list(block) == ["transaction"]
    assert block["transaction"]["count"] == 300  # the warm-up's 100 left out
    assert summary(run, False) is None
    assert run.merged() is run.merged()  # merged once, for the summary and the store alike
    data = LatencyData(tuple(intervals), 1.0, 1_700_000_000.0, probe_offset_s=0.25)
    found = {s.key.name: s for s in series(data)}
    assert set(found) == {"p50_ms", "p99_ms", "max_ms"}
    p99 = found["p99_ms"]
    assert p99.key.subject == "transaction"
    assert p99.t0 == 1.25  # the first interval ends 1 s after the load's start
    assert len(p99.values) == 3
    assert math.isnan(p99.values[1])  # nothing ended in the second interval
    assert p99.values[2] == pytest.approx(3.0)  # 3,000 us


def test_interval_log_reads_back(tmp_path: Path) -> None:
    intervals = _intervals()
    data = LatencyData(tuple(intervals), 1.0, 1_700_000_000.0, warmup_s=0.5)
    path = tmp_path / "run.hlog"
    path.write_text(interval_log(data, "transaction", "iolab run 1"))
    total = HdrHistogram(hist.LOWEST_US, hist.HIGHEST_US, hist.SIGNIFICANT_DIGITS)
    reader = HistogramLogReader(str(path), total)
    tags = []
    while (h := reader.get_next_interval_histogram()) is not None:
        tags.append(h.get_tag())
        if h.get_tag() is None:
            total.add(h)
    assert total.get_total_count() == 400  # every interval, the warm-up's too
    assert tags.count(None) == 3  # warm-up, then two measured intervals
    assert "loader-1" in tags
    assert total.get_max_value() == 3001  # HdrHistogram's highest equivalent of 3,000
    assert reader.start_time_sec == pytest.approx(1_700_000_000.0)
    text = path.read_text()
    assert "#[warm-up: the first 0.500 s" in text
    assert "values in microseconds" in text


def _filled(values: list[int]) -> Histogram:
    h = Histogram()
    h.add_values(values)
    return h


def _intervals() -> list[Interval]:
    """Two loaders: a warm-up of 100 ops at 100 us, then 200 ops at 1 ms (interval 0) and 100
    at 3 ms (interval 2)."""

    def one(
        loader: int, seq: int, warm: bool, start: float, end: float, v: int, n: int
    ) -> Interval:
        return Interval(loader, OpKind.TRANSACTION, seq, warm, start, end, _filled([v] * n))

    return [
        one(0, 0, True, 0.0, 0.5, 100, 100),
        one(0, 0, False, 0.5, 1.0, 1000, 100),
        one(1, 0, False, 0.5, 1.0, 1000, 100),
        one(1, 2, False, 2.0, 2.4, 3000, 100),
    ]


def test_stored_histograms_round_trip_and_compare(tmp_path: Path) -> None:
    def body(n: int) -> Callable[[RunOutcome], None]:
        def fill(outcome: RunOutcome) -> None:
            outcome.summary.update({"elapsed_seconds": float(n), "rows": 300})
            intervals = [
                Interval(
                    i.loader,
                    i.kind,
                    i.seq,
                    i.warmup,
                    i.start_s,
                    i.end_s,
                    _filled([n * 1000] * i.histogram.total),
                )
                for i in _intervals()
            ]
            outcome.latency = LatencyData(tuple(intervals), 1.0, 1.7e9, 0.5, 0.5)

        return fill

    spec = CommandRun("populate sqlite", "populate", {"engine": "sqlite"}, {}, {})
    with open_store(tmp_path / "r.db") as store:
        for n in (1, 2):
            execute(store, spec, body(n))
        back = store.latency(RunId(1))
        assert back is not None
        assert back.warmup_s == 0.5
        assert back.probe_offset_s == 0.5
        assert [(i.loader, i.seq, i.warmup, i.histogram.total) for i in back.intervals] == [
            (0, 0, True, 100),
            (0, 0, False, 100),
            (1, 0, False, 100),
            (1, 2, False, 100),
        ]
        c = compare(store, "1", "2", "elapsed_seconds")
    a, b = c.latency["transaction"]
    assert (a.total, b.total) == (300, 300)  # the warm-up's 100 left out on each side
    assert (a.percentile(99), b.percentile(99)) == (1000, 2000)


@pytest.mark.parametrize(
    ("rate", "start", "end", "due"),
    [
        (10.0, 0.0, 3.0, 30),  # 3 * 10 within rounding of 30: not 31
        (0.1, 0.0, 30.0, 3),
        (10.0, 1.0, 3.0, 20),
        (1e-9, 0.0, 3.0, 1),  # row 0, due at 0
        (1e-300, 0.0, 1.0, 1),  # so small that 1 s of it rounds to nothing: row 0 all the same
        (1e-300, 0.5, 1.0, 0),
        (0.5, 0.0, 3.0, 2),
    ],
)
def test_rows_due_counts_each_row_of_the_schedule_once(
    rate: float, start: float, end: float, due: int
) -> None:
    assert rows_due(rate, start, end) == due


@pytest.mark.parametrize(
    ("target", "duration", "rows", "held"),
    [
        (0.5, 3.0, 2, False),  # 0.667 rows/s: held before (2 of the 2 rows due)
        (0.01, 2.0, 1, False),  # 0.5 rows/s: held before (row 0 is due at 0)
        (1e-9, 3.0, 1, False),
        (10.0, 3.0, 30, True),
        (10.0, 3.0, 29, True),  # 9.67: within 5 %
        (10.0, 3.0, 28, False),  # 9.33: behind
        (0.5, 4.0, 2, True),  # rows at 0 and 2 s: 0.5 rows/s
    ],
)
def test_a_rate_is_held_when_the_achieved_one_is_within_five_percent_either_way(
    target: float, duration: float, rows: int, held: bool
) -> None:
    from iolab.latency.recording import rate_judged

    judged = rate_judged(target, rows / duration, rows_due(target, 0.0, duration))
    assert judged == {
        "target": target,
        "achieved": rows / duration,
        "tolerance": 0.05,
        "held": held,
        "due_rows": rows_due(target, 0.0, duration),
    }
    # a load of a count of rows (or TPC-C's transactions): no rows due, the same judgement
    assert rate_judged(target, rows / duration)["held"] is held


def test_a_missed_rate_says_why() -> None:
    from iolab.latency.recording import rate_judged, rate_missed

    few = rate_missed(rate_judged(0.5, 2 / 3, 2), 2, "rows")
    assert few == (
        "the load did not hold --rate 0.5 rows/s within 5%: it achieved 0.667 rows/s (133%); "
        "its measured part did 2 rows, so one more or fewer is 50% of them: give a longer load "
        "or a higher --rate"
    )
    behind = rate_missed(rate_judged(1000.0, 500.0), 1500, "rows")
    assert behind == (
        "the load did not hold --rate 1,000 rows/s within 5%: it achieved 500 rows/s (50%); "
        "latencies count from each operation's intended start, so they include the backlog"
    )
