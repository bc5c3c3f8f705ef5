"""The percentile-spectrum chart's data: fio's json+ bins as a histogram, the step line and its
axes, the exact merge of a cell's runs, the WAL device's commit test found in the results
database (or the caption saying how to add one), and the SVG."""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import pytest

from iolab.fio.parse import bins_histogram, load, summarize
from iolab.latency.data import LatencyData
from iolab.latency.histogram import Histogram
from iolab.latency.recording import Interval, OpKind
from iolab.report import spectrum
from iolab.results import (
    CellId,
    ExperimentId,
    RunId,
    RunOutcome,
    RunStatus,
    SyncHistogram,
    cell_id,
)
from iolab.store import Store, open_store
from iolab.store import experiments as store_experiments

DATA = Path(__file__).parent.parent / "data"


def _hist(n: int, seed: int, scale: float = 6.5) -> Histogram:
    rng = random.Random(seed)
    h = Histogram()
    h.add_values(int(rng.lognormvariate(scale, 1.0)) for _ in range(n))
    return h


# --- fio's bins -------------------------------------------------------------------------------


def test_fio_sync_bins_become_a_histogram_in_microseconds() -> None:
    data = load((DATA / "fio-commit.json").read_text())
    lat_ns = data["jobs"][0]["sync"]["lat_ns"]
    h = summarize(data).sync_histogram
    assert h is not None
    assert h.total == lat_ns["N"] == 6980 == sum(int(n) for n in lat_ns["bins"].values())
    # fio's own percentiles (its bins' middles in ns), to the microsecond
    for p, key in ((50.0, "50.000000"), (99.0, "99.000000"), (99.9, "99.900000")):
        assert h.percentile(p) == pytest.approx(lat_ns["percentile"][key] / 1000, abs=1.0)
    assert h.percentile(50.0) == 62.0
    assert h.min_us == 26  # the lowest bin, 25,728 ns
    assert h.mean_us == pytest.approx(lat_ns["mean"] / 1000, rel=0.01)
    # a write test has no sync section: no histogram
    plain = load((DATA / "fio-randrw70.json").read_text())
    assert summarize(plain).sync_histogram is None


def test_bins_of_several_jobs_add_up() -> None:
    one = {"bins": {"1000": 3, "2400": 1}}
    two = {"bins": {"1200": 2, "900000": 1}}
    h = bins_histogram([one, two])
    assert h is not None
    assert h.total == 7
    assert h.counts == {1: 5, 2: 1, 900: 1}  # ns rounded to whole us; 1.2 us is 1 us
    assert (h.min_us, h.max_us) == (1, 900)
    assert bins_histogram([{"N": 0}]) is None


# --- the line and its axes --------------------------------------------------------------------


def test_x_axis_is_log_of_one_over_one_minus_p() -> None:
    assert [label for _, label in spectrum.X_TICKS] == ["0", "90", "99", "99.9", "99.99", "99.999"]
    for x, label in spectrum.X_TICKS:
        assert spectrum.x_of(float(label)) == pytest.approx(x)
    assert spectrum.x_of(100.0) == spectrum.X_MAX
    assert spectrum.x_of(99.9999) == spectrum.X_MAX


def test_the_step_line_reads_the_histogram_percentiles() -> None:
    h = _hist(1000, 3)
    points = spectrum.steps(h)
    xs = [x for x, _ in points]
    ys = [y for _, y in points]
    assert xs == sorted(xs) and ys == sorted(ys)
    assert points[0] == (0.0, h.percentile(0.0001) / 1000)
    assert points[-1] == (spectrum.X_MAX, h.max_us / 1000)
    for p in (0.0, 12.3, 50.0, 90.0, 99.0, 99.44, 99.46, 99.9, 99.95, 99.99):
        assert spectrum.value_at(points, p) == h.percentile(p) / 1000
    assert len(points) == 2 * len(h.counts)
    odd = _hist(469, 4)  # ranks that round down (99% of 469 is 464.31: rank 464)
    for p in (50.0, 99.0, 99.9):
        assert spectrum.value_at(spectrum.steps(odd), p) == odd.percentile(p) / 1000


def test_log_y_ticks_cover_the_lines_in_round_steps() -> None:
    assert spectrum.y_ticks(0.06, 0.6) == [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0]
    assert spectrum.y_ticks(0.02, 150.0) == [0.01, 0.1, 1.0, 10.0, 100.0, 1000.0]
    assert spectrum.y_ticks(1.0, 1.0) == [1.0, 2.0, 5.0, 10.0]


# --- reading an experiment's cells and the disk runs -----------------------------------------


def _latency(parts: list[tuple[OpKind, bool, Histogram]]) -> LatencyData:
    return LatencyData(
        tuple(Interval(0, kind, i, warm, i, i + 1.0, h) for i, (kind, warm, h) in enumerate(parts)),
        1.0,
        0.0,
    )


def _run(
    store: Store,
    exp: ExperimentId,
    cell: CellId,
    n: int,
    env: dict[str, Any],
    outcome: RunOutcome,
) -> RunId:
    run = store.start_run(exp, cell, n, store.save_environment(env))
    store.finish_run(run, outcome)
    return run


def _disk_run(store: Store, device: str, passes: list[Histogram], *, commit: bool = True) -> RunId:
    exp = store.create_experiment(f"disk {device} {len(passes)}", "disk", {})
    cid = cell_id({"path": device, "n": len(passes)})
    store.ensure_cell(exp, cid, "disk", {"path": device})
    test = "COMMIT8K Q1T1 fdatasync" if commit else "RND8K Q1T1 write"
    found = [SyncHistogram(test, i, h) for i, h in enumerate(passes)] if commit else []
    env = {"storage": {"target": {"device": {"name": device}}}}
    return _run(store, exp, cid, 1, env, RunOutcome(RunStatus.DONE, {}, sync_histograms=found))


def _cells(store: Store, tmp_path: Path) -> tuple[list[Histogram], list[Histogram]]:
    """Two cells of two done runs each (cell a's WAL on vda, b's on vdb) and a failed run."""
    exp = store.create_experiment("two wal", "populate", {})
    made: list[list[Histogram]] = [[], []]
    for k, (name, wal) in enumerate((("a", "vda"), ("b", "vdb"))):
        cid = cell_id({"wal": name})
        store.ensure_cell(exp, cid, "populate", {"wal": name})
        for rep in (1, 2):
            commits = _hist(400, 10 * k + rep, scale=6.5 + k)
            warm = _hist(50, 99, scale=11.0)  # slow warm-up: left out
            made[k].append(commits)
            devices = {"vdx": {"roles": ["data"]}, wal: {"roles": ["wal"]}}
            latency = _latency(
                [
                    (OpKind.COMMIT, True, warm),
                    (OpKind.COMMIT, False, commits),
                    (OpKind.STATEMENT, False, _hist(100, rep)),
                ]
            )
            outcome = RunOutcome(RunStatus.DONE, {"devices": devices}, latency=latency)
            _run(store, exp, cid, rep, {"host": name}, outcome)
        failed = RunOutcome(RunStatus.FAILED, {}, "broke", latency=_latency([]))
        _run(store, exp, cid, 3, {"host": name}, failed)
    return made[0], made[1]


def _read(store: Store, disk_runs: tuple[int, ...] = ()) -> tuple[spectrum.Spectrum, ...]:
    exp = store_experiments.find_any(store, "two wal")
    assert exp is not None
    cells = store_experiments.cells(store, exp)
    return spectrum.read(store, [(f"wal={c.params['wal']}", c) for c in cells], disk_runs)


def test_cells_merge_exactly_and_find_their_wal_devices_commit_tests(tmp_path: Path) -> None:
    with open_store(tmp_path / "r.db") as store:
        a, b = _cells(store, tmp_path)
        old = _disk_run(store, "vda", [_hist(300, 1, 4.0), _hist(300, 2, 4.0)])
        warm, measured = _hist(300, 5, 9.0), [_hist(300, 3, 4.2), _hist(300, 4, 4.2)]
        newest = _disk_run(store, "vda", [warm, *measured])
        plain = _disk_run(store, "vda", [], commit=False)  # newer, but no commit test
        found = _read(store)
        given = _read(store, (plain, old))  # --with-disk: the given run that ran the test
    assert [s.kind for s in found] == ["commit", "statement"]
    commit, statement = found
    assert [line.label for line in commit.lines] == ["wal=a", "wal=b"]
    for line, runs in zip(commit.lines, (a, b), strict=True):
        expected = Histogram.merged(runs)  # the warm-up's slow commits are not in it
        assert line.histogram == expected
        assert line.runs == 2
        assert line.histogram.total == 800
        assert line.points() == spectrum.steps(expected)
        assert line.p99_ms == expected.percentile(99.0) / 1000
    # the newest disk run with a commit test on vda, its warm-up pass left out; none for vdb
    (disk,) = commit.disks
    assert disk.disk_run == newest != old
    assert disk.label == f"fio commit test on vda (run {newest})"
    assert disk.histogram == Histogram.merged(measured)
    assert disk.dashed and disk.runs == 2
    assert commit.missing == ("vdb",)
    assert [d.disk_run for d in given[0].disks] == [old]
    assert statement.disks == () and statement.missing == ()
    assert statement.lines[0].histogram.total == 200
    caption = spectrum.caption(commit)
    assert "dashed line" in caption
    assert "measured the commit test on vdb" in caption
    assert "<code>iolab disk --profile db DIR</code> with DIR on vdb" in caption
    assert "<code>--results</code>" in caption


def test_the_svg_has_title_axes_legend_and_a_dashed_line(tmp_path: Path) -> None:
    with open_store(tmp_path / "r.db") as store:
        a, _ = _cells(store, tmp_path)
        run = _disk_run(store, "vdb", [_hist(300, 1), _hist(300, 2)])
        commit = _read(store)[0]
    text = spectrum.svg(commit)
    assert text.startswith("<svg") and text.endswith("</svg>")
    assert "commit latency by percentile" in text
    assert "latency (ms, log scale)" in text
    for label in ("90", "99", "99.9", "99.99", "99.999"):
        assert f">{label}</text>" in text
    p99 = Histogram.merged(a).percentile(99.0) / 1000
    assert f"wal=a: 2 runs, 800 commits, p99 {p99:.3g} ms" in text
    assert f"fio commit test on vdb (run {run}): 1 pass, 300 fdatasyncs" in text
    assert text.count('stroke-dasharray="6 4"') == 2  # the line and its legend
    assert commit.missing == ("vda",)
    # the lines stay small: at most two points per half-pixel column
    paths = re.findall(r'<path d="(M[^"]+)" fill="none" stroke="#\w+" stroke-width="1.6"', text)
    assert len(paths) == 3
    assert all(len(p) < 12000 for p in paths)
    section = spectrum.section([commit])
    assert section.startswith("<section id='spectrum'><h2>Latency by percentile</h2><svg")
    assert spectrum.section([]) == ""


def test_no_latency_no_chart(tmp_path: Path) -> None:
    with open_store(tmp_path / "r.db") as store:
        exp = store.create_experiment("two wal", "tpch", {})
        cid = cell_id({"wal": "a"})
        store.ensure_cell(exp, cid, "tpch", {"wal": "a"})
        _run(store, exp, cid, 1, {}, RunOutcome(RunStatus.DONE, {"x": 1}))
        assert _read(store) == ()
