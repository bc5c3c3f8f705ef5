"""`iolab.report.build` on a results database seeded through the Store API: what the report
value and its JSON say (best cell, ratios with intervals, warnings, efficiency, disk grids,
per-query times). No program runs: the runs are stored as the runner stores them."""

from __future__ import annotations

import dataclasses
import io
import json
import math
from collections.abc import Sequence
from typing import Any

import pytest

from iolab import report
from iolab.analysis.findings import sentence
from iolab.errors import BadInput
from iolab.report import document
from iolab.report.comparison import compare
from iolab.report.export import csv_text, run_table
from iolab.results import CellId, DiskPass, EnvId, Latency, QueryResult, RunOutcome, RunStatus
from iolab.store import Store

POPULATE = {
    "experiment": {"name": "layouts", "baseline": {"engine": "sqlite"}},
    "workload": {"kind": "populate", "rows": 1000},
    "matrix": {"engine": ["sqlite", "postgres"]},
    "matrix_keys": ["engine"],
}
SQLITE = (10.0, 10.2, 9.9)  # elapsed seconds of the done runs
POSTGRES = (5.0, 5.1, 4.9)
SPEEDUP = math.prod(SQLITE) ** (1 / 3) / math.prod(POSTGRES) ** (1 / 3)  # of geometric means
DISK_ENV = {"storage": {"target": {"device": {"name": "vda"}}}}


def _populate_summary(elapsed: float, engine: str) -> dict[str, Any]:
    return {
        "elapsed_seconds": elapsed,
        "rows": 1000,
        "rows_per_second": 1000 / elapsed,
        "engine": engine,
        "devices": {
            "vda": {"roles": ["data", "wal"], "testbed": None, "write_bytes": elapsed * 2e8}
        },
    }


def _pass(test: str, rw: str, n: int, mbps: float) -> DiskPass:
    return DiskPass(
        test=test,
        rw=rw,
        bs=1 << 20,
        qd=1,
        threads=1,
        pass_no=n,
        seconds=5.0,
        mbps=mbps,
        iops=mbps,
        lat=Latency(900.0, 850.0, 2000.0, 4000.0),
        io_bytes=int(mbps * 5e6),
        device_bytes=int(mbps * 5e6),
    )


def _runs(
    store: Store,
    exp: Any,
    cell: CellId,
    outcomes: Sequence[RunOutcome],
    env: EnvId | None = None,
) -> list[int]:
    ids = []
    for i, outcome in enumerate(outcomes, 1):
        run = store.start_run(exp, cell, i, env)
        store.finish_run(run, outcome)
        ids.append(int(run))
    return ids


@pytest.fixture
def seeded(store: Store) -> Store:
    return seed(store)


def seed(store: Store) -> Store:
    """A populate experiment of two cells (one failed run in postgres) and one `iolab disk` run
    of the device the populate runs wrote to (sequential write 500 MB/s)."""
    env = store.save_environment(DISK_ENV)
    disk = store.create_experiment("disk /x", "command", {"workload": "disk", "profile": "real"})
    disk_cell = CellId("d" * 16)
    store.ensure_cell(disk, disk_cell, "disk", {"kind": "disk", "profile": "real", "path": "/x"})
    passes = [
        _pass("SEQ1M Q1T1 read", "read", 1, 900.0),
        _pass("SEQ1M Q1T1 read", "read", 2, 1000.0),
        _pass("SEQ1M Q1T1 write", "write", 1, 500.0),
        _pass("SEQ1M Q1T1 write", "write", 2, 500.0),
    ]
    _runs(store, disk, disk_cell, [RunOutcome(RunStatus.DONE, {}, None, passes)], env)

    exp = store.create_experiment("layouts", "experiment", POPULATE)
    for engine, times in (("sqlite", SQLITE), ("postgres", POSTGRES)):
        cell = CellId(engine.ljust(16, "0"))
        store.ensure_cell(exp, cell, "populate", {"kind": "populate", "engine": engine})
        outcomes = [RunOutcome(RunStatus.DONE, _populate_summary(t, engine)) for t in times]
        if engine == "postgres":
            outcomes.append(RunOutcome(RunStatus.FAILED, {}, "the server died"))
        _runs(store, exp, cell, outcomes)
    return store


def test_the_best_cell_its_ratio_and_interval(seeded: Store) -> None:
    r = report.build(seeded, "layouts")
    assert (r.name, r.metric, r.lower_is_better, r.unit) == (
        "layouts",
        "elapsed_seconds",
        True,
        "s",
    )
    assert r.direction == "lower is better"
    assert [c.label for c in r.cells] == ["engine=sqlite", "engine=postgres"]
    assert r.run_count == 7
    best = r.best
    assert best is not None and best.label == "engine=postgres"
    assert [run.value for run in best.runs] == [5.0, 5.1, 4.9, None]
    assert [run.status for run in best.runs][-1] is RunStatus.FAILED
    assert best.failed == 1 and best.runs[-1].error == "the server died"
    s = best.stats.summary
    assert s is not None and s.n == 3 and s.mean == pytest.approx(5.0)
    assert s.ci_low is not None and s.ci_high is not None and s.ci_low < 5.0 < s.ci_high
    (vs,) = r.findings.best_vs
    assert (vs.a, vs.b) == ("engine=postgres", "engine=sqlite")
    assert vs.better == pytest.approx(SPEEDUP)
    assert vs.better_low is not None and vs.better_high is not None
    assert vs.better_low < vs.better < vs.better_high and vs.significant
    assert "engine=postgres was 2.01x faster than engine=sqlite" in sentence(vs)


def test_failed_runs_are_a_warning_with_their_reason(seeded: Store) -> None:
    r = report.build(seeded, "layouts")
    assert r.warnings == ("engine=postgres: 1 run(s) failed: the server died",)
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.findings.warnings = ()  # type: ignore[misc]
    assert r.drift is None  # every run started in the same second: no time to drift over


def test_efficiency_against_the_devices_disk_run(seeded: Store) -> None:
    r = report.build(seeded, "layouts")
    by_cell = {e.cell: e for e in r.efficiency}
    assert set(by_cell) == {"engine=sqlite", "engine=postgres"}
    e = by_cell["engine=postgres"]
    assert (e.device, e.roles, e.runs) == ("vda", ("data", "wal"), 3)
    assert e.mbps == pytest.approx(200.0) and e.limit.mbps == pytest.approx(500.0)
    assert e.share == pytest.approx(0.4) and e.limit.test == "SEQ1M Q1T1 write"


def test_the_json_document(seeded: Store) -> None:
    doc = json.loads(document.report_json(report.build(seeded, "layouts")))
    assert doc["metric"] == "elapsed_seconds" and doc["lower_is_better"] is True
    assert doc["best"] == "engine=postgres"
    assert doc["best_vs"][0]["speedup"] == pytest.approx(SPEEDUP)
    assert doc["best_vs"][0]["significant"] is True
    cells = {c["label"]: c for c in doc["cells"]}
    assert cells["engine=postgres"]["runs"] == [5.0, 5.1, 4.9]
    assert cells["engine=postgres"]["failed"] == 1
    assert cells["engine=sqlite"]["values"] == {"engine": "sqlite"}
    assert cells["engine=sqlite"]["mean"] == pytest.approx(sum(SQLITE) / 3)
    assert doc["efficiency"][0]["share"] == pytest.approx(0.4)
    assert doc["dimensions"][0]["key"] == "engine"
    assert doc["dimensions"][0]["mean_speedup"] == pytest.approx(SPEEDUP)
    assert doc["drift"] is None and doc["queries"] == []


def test_another_metric_takes_its_direction_from_the_registry(seeded: Store) -> None:
    r = report.build(seeded, "layouts", "rows_per_second")
    assert r.lower_is_better is False and r.unit == "rows/s"
    assert r.best is not None and r.best.label == "engine=postgres"
    with pytest.raises(BadInput) as raised:
        report.build(seeded, "layouts", "rows")  # a number, but not a declared measurement
    assert raised.value.field == "--metric"
    assert "rows_per_second" in str(raised.value.allowed)
    with pytest.raises(BadInput, match="layouts"):
        report.build(seeded, "nope")


def test_a_disk_run_has_its_grid_and_its_first_test_as_metric(seeded: Store) -> None:
    r = report.build(seeded, "disk /x", timelines="median")
    assert r.metric == "tests.SEQ1M Q1T1 read.mbps" and r.unit == "MB/s"
    (cell,) = r.cells
    assert [run.value for run in cell.runs] == [pytest.approx(950.0)]  # median of the passes
    (grid,) = r.disks
    assert cell.label == "dddddddd"  # a single command has no matrix: its cell id
    assert grid.title == "dddddddd · run 1"
    assert r.timelines == ()  # the run recorded no probes
    assert [t.test for t in grid.tests] == ["SEQ1M Q1T1 read", "SEQ1M Q1T1 write"]
    assert grid.tests[1].median.mbps == pytest.approx(500.0)
    assert r.environment == DISK_ENV
    without = report.build(seeded, "disk /x")
    assert without.disks == () and without.environment is None


def test_with_disk_adds_the_runs_grid_and_refuses_other_runs(seeded: Store) -> None:
    r = report.build(seeded, "layouts", with_disk=[1], timelines="median")
    assert [g.title for g in r.disks] == ["/x"]
    with pytest.raises(BadInput) as raised:
        report.build(seeded, "layouts", with_disk=[2])
    assert raised.value.field == "--with-disk"


def seed_tpch(store: Store) -> Store:
    """A TPC-H experiment of two cells, three runs each; query 6 never finishes."""
    exp = store.create_experiment(
        "tpch", "experiment", {"workload": {"kind": "tpch"}, "matrix_keys": ["engine"]}
    )
    for engine, scale in (("duckdb", 1.0), ("postgres", 3.0)):
        cell = CellId(engine.ljust(16, "0"))
        store.ensure_cell(exp, cell, "tpch", {"kind": "tpch", "engine": engine})
        outcomes = []
        for rep in (1.0, 1.1, 0.9):
            queries = [
                {"query": 1, "seconds": 2.0 * scale * rep, "error": None},
                {"query": 6, "seconds": None, "error": "timeout"},
            ]
            results = [QueryResult(1, 2.0 * scale * rep, 4, True), QueryResult(6, None, None, None)]
            summary = {"total_seconds": 2.0 * scale * rep, "queries": queries}
            outcomes.append(RunOutcome(RunStatus.DONE, summary, query_results=results))
        _runs(store, exp, cell, outcomes)
    return store


def test_tpch_cells_have_their_per_query_times(store: Store) -> None:
    seed_tpch(store)
    r = report.build(store, "tpch")
    assert r.metric == "total_seconds" and r.lower_is_better
    assert r.best is not None and r.best.label == "engine=duckdb"
    times = {q.cell: q for q in r.queries}
    assert times["engine=duckdb"].seconds == {1: pytest.approx(2.0), 6: None}
    assert times["engine=postgres"].seconds[1] == pytest.approx(6.0)
    assert times["engine=postgres"].runs == 3
    doc = document.report_document(r)
    assert doc["queries"] == [
        {"cell": "engine=duckdb", "runs": 3, "median_seconds": {"1": 2.0, "6": None}},
        {"cell": "engine=postgres", "runs": 3, "median_seconds": {"1": 6.0, "6": None}},
    ]


def test_compare_and_export(seeded: Store) -> None:
    c = compare(seeded, "layouts:engine=postgres", "layouts:engine=sqlite")
    assert c.metric == "elapsed_seconds" and c.a.values == POSTGRES
    assert c.ratio.better == pytest.approx(SPEEDUP)
    doc = document.comparison_document(c)
    assert doc["a_values"] == list(POSTGRES) and doc["significant"] is True
    runs = compare(seeded, "5-7", "2-4")  # the same runs by id
    assert runs.a.label == "runs 5-7" and runs.ratio.better == pytest.approx(c.ratio.better)
    with pytest.raises(BadInput) as raised:
        compare(seeded, "1-9", "2")
    assert "from 1 to 8" in str(raised.value.allowed)
    table = run_table(seeded, "layouts")
    assert [row["run"] for row in table.rows] == [2, 3, 4, 5, 6, 7, 8]
    assert table.columns[:5] == ("run", "cell", "status", "engine", "elapsed_seconds")
    assert table.rows[-1]["status"] == "failed" and "elapsed_seconds" not in table.rows[-1]
    lines = csv_text(table).splitlines()
    assert lines[0].startswith("run,cell,status,engine,elapsed_seconds,rows,rows_per_second")
    assert lines[1].startswith("2,sqlite0000000000,done,sqlite,10.0,1000,")


def test_the_terminal_rendering(seeded: Store) -> None:
    from rich.console import Console

    from iolab.report.findings import report_text

    console = Console(width=200, record=True, file=io.StringIO())
    console.print(report_text(report.build(seeded, "layouts")))
    text = console.export_text()
    assert text.startswith("layouts · elapsed_seconds (lower is better)\n")
    assert "best: engine=postgres: elapsed_seconds 5 (95% CI " in text
    assert "engine=postgres was 2.01x faster than engine=sqlite" in text
    assert "warning: engine=postgres: 1 run(s) failed: the server died" in text


def test_the_driver_core_of_a_run_is_shown_by_results_show_and_the_html_report(
    store: Store,
) -> None:
    """Issue 44: pip hides a skipped build, so which driver core ran a load is said where a
    run is read. A run whose summary recorded none (here the SQLite cell's) shows nothing."""
    from iolab.report import html as html_report
    from tests.unit.cli import iolab

    exp = store.create_experiment("layouts", "experiment", POPULATE)
    cores = {
        "sqlite": [{}, {}, {}],
        "postgres": [
            {"driver_core": "native", "driver_core_reason": "built"},
            {"driver_core": "native", "driver_core_reason": "built"},
            {"driver_core": "python", "driver_core_reason": "IOLAB_DRIVER_CORE=python"},
        ],
    }
    ids: dict[str, list[int]] = {}
    for engine, times in (("sqlite", SQLITE), ("postgres", POSTGRES)):
        cell = CellId(engine.ljust(16, "0"))
        store.ensure_cell(exp, cell, "populate", {"kind": "populate", "engine": engine})
        outcomes = [
            RunOutcome(RunStatus.DONE, _populate_summary(t, engine) | {"devices": {}} | core)
            for t, core in zip(times, cores[engine], strict=True)
        ]
        ids[engine] = _runs(store, exp, cell, outcomes)

    page = html_report.report_page(report.build(store, "layouts", timelines="median"), "now")
    a, b, c = ids["postgres"]
    assert page.count("driver core:") == 1  # the postgres cell's line alone
    assert (
        f"<p class='caption driver-core'>driver core: native (built) in runs {a}, {b}; "
        f"python (IOLAB_DRIVER_CORE=python) in run {c}</p>"
    ) in page

    db = str(store.path)
    native = iolab("results", "show", str(a), "--results", db)
    assert native.code == 0
    assert "driver core: native (built)\n" in native.stdout
    python = iolab("results", "show", str(c), "--results", db)
    assert "driver core: python (IOLAB_DRIVER_CORE=python)\n" in python.stdout
    older = iolab("results", "show", str(ids["sqlite"][0]), "--results", db)
    assert older.code == 0
    assert "driver core" not in older.stdout


def test_a_summarys_count_of_queries_is_no_table_of_query_times() -> None:
    """sysbench's summary counts its statements under ``queries`` (an int): not TPC-H's
    per-query list, so no table of query times and no crash (`iolab run` of a sysbench
    experiment ended in a TypeError once its answer built the report)."""
    from iolab.analysis.queries import query_times

    sysbench = {"tps": 100.0, "queries": 2000}
    tpch = {"queries": [{"query": 1, "seconds": 2.0}]}
    assert query_times([("a", [sysbench]), ("b", [sysbench, {"queries": None}])]) == []
    (times,) = query_times([("c", [tpch])])
    assert (times.cell, times.seconds) == ("c", {1: 2.0})
