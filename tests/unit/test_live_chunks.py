"""Probe series flushed in chunks while a run records (iolab.store.live, the recorder's
flusher): the chunks are a prefix of what was sampled, the final record replaces them (no
sample twice), a killed process keeps what it flushed, and a read-only opening reads them."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from iolab import sampling
from iolab.probes import recorder as recorder_module
from iolab.probes.interface import (
    Checkpoint,
    Findings,
    Kind,
    Pace,
    Reading,
    SeriesKey,
    WaitStat,
    Warn,
)
from iolab.probes.recorder import Recorder, publishing
from iolab.results import CellId, RunId, RunOutcome, RunStatus
from iolab.store import live as live_store
from iolab.store import open_readonly, open_store
from iolab.store.live import ChunkWriter

KEY = SeriesKey("count", "n", "", Kind.GAUGE)


class Counter:
    """A probe whose k-th sample is k; it stops answering (blocks) after ``last`` samples."""

    name = "count"
    pace = Pace.FINE
    drop_idle = False

    def __init__(self, last: int | None = None) -> None:
        self.k = 0
        self.last = last
        self.held = threading.Event()

    def open(self, warn: Warn) -> None:
        pass

    def start(self, t0_wall: float) -> None:
        pass

    def sample(self, t: float, dt: float) -> Sequence[Reading]:
        if self.last is not None and self.k >= self.last:
            self.held.wait()  # the sampler waits here: nothing more is sampled
        self.k += 1
        return [Reading(KEY, float(self.k))]

    def finish(self, t: float) -> Findings:
        return Findings()

    def close(self) -> None:
        self.held.set()


def _run(db: Path) -> RunId:
    with open_store(db) as store:
        exp = store.create_experiment("live", "command", {})
        store.ensure_cell(exp, CellId("c"), "populate", {})
        return store.start_run(exp, CellId("c"), 1, None)


def _chunk_values(db: Path, run: RunId) -> list[float]:
    conn = sqlite3.connect(db)
    try:
        data = live_store.load(conn, run)
    finally:
        conn.close()
    if data is None:
        return []
    (series,) = data.series
    return list(series.values)


def _readings(values: Sequence[float]) -> list[float]:
    """The values with repeats in a row taken out: a tick the sampler missed on a loaded machine
    repeats the next reading (the recorder's grid), so the probe's k-th reading is the k-th of
    these."""
    return [v for i, v in enumerate(values) if i == 0 or v != values[i - 1]]


def _wait_for(check: Callable[[], object], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"{what} never came"
        time.sleep(0.02)


def test_chunks_are_a_prefix_and_the_final_record_replaces_them(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    run = _run(db)
    probe = Counter(last=12)
    recorder = Recorder([probe], interval=0.02, flush_interval=0.05)
    with publishing(ChunkWriter(db, run)), recorder:
        _wait_for(lambda: len(_readings(_chunk_values(db, run))) >= 12, "12 flushed values")
        during = _chunk_values(db, run)
        with open_readonly(db) as reader:  # what `iolab serve` opens
            live = live_store.load(reader.conn, run)
        assert live is not None
        assert [s.key for s in live.series] == [KEY]
        probe.held.set()  # sampling goes on, so the recorder can stop
    assert _readings(during) == [float(k) for k in range(1, 13)]  # in order, none missing
    assert list(live.series[0].values)[: len(during)] == during
    data = recorder.data
    outcome = RunOutcome(RunStatus.DONE, probes=data)
    with open_store(db) as store:
        assert live_store.count(store.conn, run) > 0
        store.finish_run(run, outcome)
        assert live_store.count(store.conn, run) == 0  # the chunks went with the final record
        stored = store.probes(run)
    assert stored is not None
    (series,) = stored.series
    assert list(series.values) == list(data.series[0].values)
    assert list(series.values)[: len(during)] == during
    assert len(series.values) == len(data.series[0].values)  # no sample twice


def test_without_a_sink_nothing_is_flushed(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    run = _run(db)
    with Recorder([Counter()], interval=0.02, flush_interval=0.02):
        time.sleep(0.2)
    assert _chunk_values(db, run) == []


def test_a_busy_database_keeps_the_values_for_the_next_flush(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    run = _run(db)
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer holds the lock for a while
    probe = Counter(last=8)
    with publishing(ChunkWriter(db, run)), Recorder([probe], interval=0.02, flush_interval=0.05):
        time.sleep(0.6)  # several flushes find the database locked
        assert _chunk_values(db, run) == []
        holder.execute("ROLLBACK")
        _wait_for(lambda: len(_readings(_chunk_values(db, run))) >= 8, "8 flushed values")
        assert _readings(_chunk_values(db, run)) == [float(k) for k in range(1, 9)]
        probe.held.set()
    holder.close()


CHILD = textwrap.dedent(
    """
    import sys, threading
    from pathlib import Path
    sys.path.insert(0, sys.argv[3])
    from test_live_chunks import Counter
    from iolab.probes.recorder import Recorder, publishing
    from iolab.results import RunId
    from iolab.store.live import ChunkWriter
    probe = Counter(last=int(sys.argv[2]))
    with publishing(ChunkWriter(Path(sys.argv[1]), RunId(1))), Recorder(
        [probe], interval=0.02, flush_interval=0.05
    ):
        threading.Event().wait()  # until killed
    """
)


def test_a_killed_run_keeps_every_value_flushed_before(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    run = _run(db)
    assert run == 1
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(db), "10", str(Path(__file__).parent)],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    try:
        _wait_for(lambda: len(_readings(_chunk_values(db, run))) >= 10, "10 flushed values")
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    flushed = _chunk_values(db, run)
    assert _readings(flushed) == [float(k) for k in range(1, 11)]
    with open_readonly(db) as reader:  # what a live view reads after the crash
        live = live_store.load(reader.conn, run)
    assert live is not None
    assert list(live.series[0].values) == flushed


@pytest.mark.parametrize("bad", [0.0, -1.0])
def test_the_flush_interval_must_be_positive(bad: float) -> None:
    with pytest.raises(ValueError, match="intervals must be positive"):
        Recorder([], flush_interval=bad)


def test_flushes_rewrite_a_block_until_it_is_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(recorder_module._Flusher, "BLOCK", 4)
    db = tmp_path / "r.db"
    run = _run(db)
    probe = Counter(last=10)
    with publishing(ChunkWriter(db, run)), Recorder([probe], interval=0.02, flush_interval=0.03):
        _wait_for(lambda: len(_readings(_chunk_values(db, run))) >= 10, "10 flushed values")
        probe.held.set()
    assert _readings(_chunk_values(db, run))[:10] == [float(k) for k in range(1, 11)]
    with sqlite3.connect(db) as conn:
        blocks = conn.execute(
            "SELECT start, n FROM series_chunks WHERE run_id = ? ORDER BY start", (run,)
        ).fetchall()
    starts = [start for start, _ in blocks]
    assert starts[0] == 0
    for (start, n), following in zip(blocks, starts[1:], strict=False):
        assert following == start + n  # closed blocks, each where the previous ended
        assert n >= 4  # a block is closed only once it holds a whole block
    assert len(blocks) <= 1 + len(_chunk_values(db, run)) // 4  # not one row per flush


class Waiting(Counter):
    """A Counter that also tells, while it runs, a wait event seen at each sample and a
    checkpoint still running since its first sample (as PostgreSQL's probes do)."""

    def so_far(self) -> Findings:
        k = self.k
        return Findings(
            waits=(WaitStat("pg_stat_activity", "IO", "WalSync", k, 1.0, k * 0.02),),
            checkpoints=(Checkpoint(0.02, None, None, "time", "still running"),),
        )


def test_waits_and_checkpoints_so_far_go_with_the_chunks(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    run = _run(db)
    probe = Waiting(last=6)
    with publishing(ChunkWriter(db, run)), Recorder([probe], interval=0.02, flush_interval=0.05):
        _wait_for(lambda: len(_chunk_values(db, run)) >= 6, "6 flushed values")
        time.sleep(0.15)  # one more flush after the sixth sample
        with open_readonly(db) as reader:
            live = live_store.load(reader.conn, run)
        probe.held.set()
    assert live is not None
    (wait,) = live.waits
    assert (wait.wait_class, wait.event, wait.samples) == ("IO", "WalSync", 6)
    assert live.wait_interval == 0.02  # session-seconds over session-samples
    (checkpoint,) = live.checkpoints
    assert (checkpoint.start_s, checkpoint.end_s, checkpoint.detail) == (
        0.02,
        None,
        "still running",
    )
    with open_store(db) as store:
        store.finish_run(run, RunOutcome(RunStatus.DONE))
        assert live_store.load(store.conn, run) is None  # chunks and findings went together


def test_a_merged_fine_start_is_sent_again_on_the_new_grid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sampling, "FINE_FOR_S", 0.5)  # 10 Hz for 0.6 s, then every 0.2 s
    db = tmp_path / "r.db"
    run = _run(db)
    probe = Counter(last=14)  # 6 fine samples, then 8 at 0.2 s
    recorder = Recorder([probe], interval=0.2, flush_interval=0.05)
    with publishing(ChunkWriter(db, run)), recorder:
        _wait_for(lambda: len(_chunk_values(db, run)) >= 11, "the merged start and 8 values")
        conn = sqlite3.connect(db)
        live = live_store.load(conn, run)
        rows = conn.execute(
            "SELECT start, n, interval FROM series_chunks WHERE run_id = ?", (run,)
        ).fetchall()
        conn.close()
        probe.held.set()
    assert live is not None
    (series,) = live.series
    assert series.interval == pytest.approx(0.2)
    # a gauge keeps the last of each pair of fine values: 2, 4, 6; then 7 to 14 at 0.2 s
    assert list(series.values)[:11] == [2.0, 4.0, 6.0, *(float(k) for k in range(7, 15))]
    assert [(start, interval) for start, _, interval in rows] == [(0, pytest.approx(0.2))]
    final = recorder.data.series[0]  # its last value may take the closing sample (a fold)
    assert list(final.values)[:10] == list(series.values)[:10]


def test_a_missing_database_is_never_made_and_the_recording_goes_on(tmp_path: Path) -> None:
    gone = tmp_path / "r.db"  # e.g. the store's path, on another host where it is not
    probe = Counter()
    recorder = Recorder([probe], interval=0.02, flush_interval=0.02)
    with publishing(ChunkWriter(gone, RunId(1))), recorder:
        time.sleep(0.2)
    assert list(tmp_path.iterdir()) == []
    assert len(recorder.data.series[0].values) >= 3  # the recording itself is whole
    assert any("live view stopped" in n for n in recorder.data.notes), recorder.data.notes
