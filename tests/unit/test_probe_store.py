"""Probe data in the results database: exact round trip, compact for multi-hour runs."""

from __future__ import annotations

import math
import random
from array import array
from dataclasses import replace
from pathlib import Path

from iolab.probes.data import ProbeData, Series
from iolab.probes.interface import Checkpoint, Kind, RoleDevice, SeriesKey, WaitStat
from iolab.report import timeline
from iolab.results import RunOutcome, RunStatus, cell_id
from iolab.store import open_store
from iolab.store.probes import pack, unpack

TEN_HOURS = 36_000  # samples at 1 s


def _run(store_path: Path, outcome: RunOutcome) -> int:
    with open_store(store_path) as store:
        exp = store.create_experiment("populate x", "command", {})
        store.ensure_cell(exp, cell_id({}), "populate", {})
        run = store.start_run(exp, cell_id({}), 1, None)
        store.finish_run(run, outcome)
        return int(run)


def _noisy(n: int, seed: int) -> list[float]:
    """A write rate as a disk gives it: a level, noise, checkpoint spikes, idle gaps."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        value = 180.0 + rng.gauss(0, 25) + (400.0 if i % 300 < 20 else 0.0)
        out.append(math.nan if i % 5000 == 4999 else max(0.0, value))
    return out


def _series(name: str, values: list[float], kind: Kind = Kind.RATE) -> Series:
    rounded = tuple(array("f", values))  # what float32 storage keeps
    finite = [v for v in rounded if not math.isnan(v)]
    return Series(
        key=SeriesKey("device", name, "MB/s", kind, subject="vda1", role="data+wal"),
        t0=1.0,
        interval=1.0,
        end_s=len(values) - 0.5,
        n=len(values),
        total_num=sum(finite),
        total_den=float(len(finite)),
        peak=max(finite),
        values=rounded,
    )


def test_pack_round_trip_is_exact() -> None:
    values = [0.0, 1.5, -2.25, math.nan, 1e-30, 3.4e38, 123456.789]
    got = unpack(pack(values), len(values))
    want = tuple(array("f", values))
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert (math.isnan(g) and math.isnan(w)) or g == w


def test_ten_hour_run_stays_compact_and_reads_back_exactly(tmp_path: Path) -> None:
    noisy = [_series(f"write_mbps_{i}", _noisy(TEN_HOURS, i)) for i in range(3)]
    flat = _series("read_mbps", [0.0] * TEN_HOURS)
    data = ProbeData(
        interval=1.0,
        wait_interval=0.1,
        duration=TEN_HOURS - 0.5,
        series=(*noisy, flat),
        waits=(WaitStat("pg_stat_activity", "IO", "WalSync", 1200, 0.4, 120.0),),
        checkpoints=(Checkpoint(10.0, 40.0, 5000, "time"), Checkpoint(35990.0, None, None, "wal")),
        roles=(RoleDevice("data", "/mnt/a", "vda1", "partition", "vda", "ext4"),),
        notes=("PostgreSQL 15 has no pg_stat_io",),
    )
    path = tmp_path / "r.db"
    run = _run(path, RunOutcome(RunStatus.DONE, probes=data, logs={"server": "LOG: hello\n"}))
    with open_store(path) as store:
        blobs = dict(store.conn.execute("SELECT name, length(data) FROM series"))
        back = store.probes(run)
        summary_only = store.probes(run, values=False)
        logs = store.logs(run)
    # noisy float32 samples: under 3.5 bytes each after shuffling and zlib; a flat one: nothing
    for s in noisy:
        assert blobs[s.key.name] / TEN_HOURS < 3.5, blobs
    assert blobs["read_mbps"] < 1000
    assert back is not None
    assert [replace(s, values=()) for s in back.series] == [
        replace(s, values=()) for s in data.series
    ]
    for mine, theirs in zip(data.series, back.series, strict=True):
        same = [
            (math.isnan(a) and math.isnan(b)) or a == b
            for a, b in zip(mine.values, theirs.values, strict=True)
        ]
        assert all(same)
    assert back.waits == data.waits
    assert back.checkpoints == data.checkpoints
    assert back.roles == data.roles and back.notes == data.notes
    assert logs == {"server": "LOG: hello\n"}
    assert summary_only is not None
    first = summary_only.series[0]
    assert first.values == () and first.n == TEN_HOURS
    assert first.mean == noisy[0].mean and first.peak == noisy[0].peak


def test_run_without_probes_has_none(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    run = _run(path, RunOutcome(RunStatus.DONE))
    with open_store(path) as store:
        assert store.probes(run) is None
        assert store.logs(run) == {}


def test_a_report_reads_only_the_series_its_timeline_draws(tmp_path: Path) -> None:
    def series(probe: str, name: str, seed: int, subject: str = "") -> Series:
        values = tuple(array("f", _noisy(600, seed)))
        return Series(
            SeriesKey(probe, name, "x", Kind.RATE, subject=subject),
            1.0,
            1.0,
            600.0,
            600,
            sum(values),
            600.0,
            max(values),
            values,
        )

    drawn = [
        series("workload", "rows_per_s", 1),
        series("postgres", "pages_allocated_per_s", 2),
        *(series("device", n, 3 + i, "vda") for i, n in enumerate(timeline.DEVICE)),
        *(series("host", n, 10 + i, "all") for i, n in enumerate(timeline.CPU)),
    ]
    others = [
        series("postgres", "wal_mbps", 20),
        series("host", "dirty_mb", 21),
        series("device", "util_pct", 22, "vda"),
    ]
    data = ProbeData(
        interval=1.0,
        wait_interval=0.1,
        duration=600.0,
        series=(*others[:1], *drawn, *others[1:]),
        checkpoints=(Checkpoint(100.0, 130.0, 800, "wal"),),
    )
    path = tmp_path / "r.db"
    run = _run(path, RunOutcome(RunStatus.DONE, probes=data))
    with open_store(path) as store:
        full = store.probes(run)
        some = store.probes(run, names=timeline.SERIES)
        none = store.probes(run, names=[])
    assert full is not None and some is not None and none is not None
    assert [s.key for s in some.series] == [s.key for s in drawn]
    assert none.series == () and none.checkpoints == data.checkpoints
    assert timeline.svg(some, "run 1") == timeline.svg(full, "run 1")
