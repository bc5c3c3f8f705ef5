"""A result at a glance (issue 47 item 5): ``iolab results list`` and serve's index show each
run's engine, its layout in a few words and its workload's headline number with the unit;
a run that did not finish shows its status and no number. Every run is written through the
results database's own API, as the runner writes it, and read back by the command."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from starlette.requests import Request

from iolab.report.glance import Glance, glances, runs_table
from iolab.results import CellId, RunOutcome, RunStatus
from iolab.serve import app as serve_app
from iolab.store import open_readonly, open_store
from iolab.workloads.registry import WORKLOADS
from tests.unit.cli import iolab

# a command's layout parameters: one data directory, no WAL or temp directory of its own
ONE_DIR = {"data_dirs": ["/srv/a"], "files": 1, "wal_dir": None, "temp_dir": None, "dsn": None}
STORAGE = {"storage": {"data0": {"device": {"name": "vda"}, "testbed": None}}}
ON_TESTBED = {  # a command given --data-dir device:hdd --wal-dir device:nvme: resolved paths
    "storage": {
        "data0": {"device": {"name": "nbd0"}, "testbed": {"name": "hdd", "limits_text": "x"}},
        "wal": {"device": {"name": "nbd1"}, "testbed": {"name": "nvme", "limits_text": "y"}},
    }
}
TPCH_QUERIES = [{"query": q, "seconds": 0.5} for q in range(1, 23)]

# (workload, experiment, parameters, summary, environment, status, error), stored in this
# order: run ids 1, 2, ...
RUNS: list[tuple[str, str, dict[str, Any], dict[str, Any], dict[str, Any], RunStatus, str]] = [
    (
        "populate",
        "populate postgres",
        {"engine": "postgres", **ONE_DIR, "data_dirs": ["/a", "/b"], "files": 4, "wal_dir": "/w"},
        {"rows_per_second": 12345.6, "elapsed_seconds": 0.81},
        STORAGE,
        RunStatus.DONE,
        "",
    ),
    (
        "tpcc",
        "tpcc postgres w 1",
        {"engine": "postgres", **ONE_DIR, "wal_dir": "/mnt/nvme/wal", "warehouses": 1},
        {"nopm": 1234.4, "tpm": 2700.0},
        ON_TESTBED,
        RunStatus.DONE,
        "",
    ),
    (
        "tpch",
        "tpch duckdb sf 0.01",
        {"engine": "duckdb", **ONE_DIR, "temp_dir": "/t", "scale_factor": 0.01},
        {"total_seconds": 12.34, "geomean_seconds": 0.41, "queries": TPCH_QUERIES},
        STORAGE,
        RunStatus.DONE,
        "",
    ),
    (
        "disk",
        "disk /var/tmp",
        {"path": "/var/tmp", "profile": "default", "runs": 1},
        {
            "tests": {
                "RND4K Q1T1 read": {"mbps": 40.0},  # not the report's first row
                "SEQ1M Q8T1 read": {"mbps": 1234.0, "iops": 1234.0},
                "SEQ1M Q8T1 write": {"mbps": 900.0},
            }
        },
        {"storage": {"target": {"device": {"name": "vda"}, "testbed": None}}},
        RunStatus.DONE,
        "",
    ),
    (
        "pgbench",
        "pgbench postgres",
        {"kind": "pgbench", "engine": "postgres", **ONE_DIR},
        {"tps": 456.7},
        STORAGE,
        RunStatus.DONE,
        "",
    ),
    (
        "sysbench",
        "sysbench mariadb",
        {"kind": "sysbench", "engine": "mariadb", **ONE_DIR},
        {"tps": 88.04, "qps": 1760.8},
        STORAGE,
        RunStatus.DONE,
        "",
    ),
    (
        "populate",
        "populate sqlite rate 500",
        {"engine": "sqlite", **ONE_DIR, "rate": 500.0, "method": "insert", "commit_every": 1},
        {"rows_per_second": 499.0, "latency": {"transaction": {"p99_us": 850.2}}},
        STORAGE,
        RunStatus.DONE,
        "",
    ),
    (
        "populate",
        "populate postgres postgresql://bench@/iolab?host=/tmp/pg&port=5433",
        {"engine": "postgres", **ONE_DIR, "data_dirs": [], "dsn": "postgresql://bench@/iolab"},
        {"rows_per_second": 3000.0},
        {},
        RunStatus.DONE,
        "",
    ),
    (
        "tpcc",
        "tpcc mariadb w 2",
        {"engine": "mariadb", **ONE_DIR, "warehouses": 2},
        {"nopm": 999.0},  # a number recorded before it failed is no result
        STORAGE,
        RunStatus.FAILED,
        "mariadbd exited with code 1 before it took connections",
    ),
    (
        "populate",
        "populate sqlite",
        {"engine": "sqlite", **ONE_DIR},
        {},
        STORAGE,
        RunStatus.ABORTED,
        "",
    ),
    (  # an experiment file's cell, its directories on testbed devices as it names them
        "populate",
        "wal apart",
        {"engine": "postgres", **ONE_DIR, "data_dirs": ["device:hdd/d"], "wal_dir": "device:ssd"},
        {"rows_per_second": 2500.0},
        {},
        RunStatus.DONE,
        "",
    ),
]

# what each run shows: (engine, layout, result)
SHOWN = [
    ("postgres", "4 files in 2 dirs, wal apart", "12,346 rows/s"),
    ("postgres", "1 dir on hdd, wal on nvme", "1,234 NOPM"),
    ("duckdb", "1 dir, temp apart", "12.3 s for 22 queries"),
    ("", "vda", "1,234 MB/s SEQ1M Q8T1 read"),
    ("postgres", "1 dir", "457 tx/s"),
    ("mariadb", "1 dir", "88 tx/s"),
    ("sqlite", "1 dir", "850 µs p99 tx"),
    ("postgres", "--dsn server", "3,000 rows/s"),
    ("mariadb", "1 dir", None),
    ("sqlite", "1 dir", None),
    ("postgres", "1 dir on hdd, wal on ssd", "2,500 rows/s"),
]


@pytest.fixture
def stored(tmp_path: Path) -> Path:
    path = tmp_path / "results.db"
    write_runs(path)
    return path


def write_runs(path: Path) -> None:
    """:data:`RUNS` into a new results database, as the runner writes them."""
    with open_store(path) as store:
        for workload, name, params, summary, env, status, error in RUNS:
            exp = store.create_experiment(name, "command", {"workload": workload})
            cell = CellId(workload.ljust(16, "0")[:16])
            store.ensure_cell(exp, cell, workload, {"kind": workload, **params})
            run = store.start_run(exp, cell, 1, store.save_environment(env) if env else None)
            store.finish_run(run, RunOutcome(status, summary, error=error or None))


def _by_id(path: Path) -> dict[int, Glance]:
    with open_store(path, create=False) as store:
        return {int(g.run.id): g for g in glances(store)}


def test_each_workload_names_its_headline() -> None:
    assert {name: w.headline is not None for name, w in WORKLOADS.items()} == {
        name: True for name in WORKLOADS
    }


def test_each_run_shows_its_engine_layout_and_headline(stored: Path) -> None:
    found = _by_id(stored)
    shown = [
        (g.engine, g.layout, g.figure.text if g.figure else None) for _, g in sorted(found.items())
    ]
    assert shown == SHOWN
    assert found[10].run.status is RunStatus.ABORTED


def test_results_list_prints_each_runs_row(stored: Path) -> None:
    done = iolab("results", "list", "--results", str(stored))
    assert done.code == 0, done.stderr
    lines = done.stdout.splitlines()
    rows = {int(m[1]): line for line in lines if (m := re.match(r"^\s*(\d+)\s", line))}
    assert sorted(rows) == list(range(1, len(RUNS) + 1))
    for run_id, (engine, _layout, result) in enumerate(SHOWN, 1):
        workload = RUNS[run_id - 1][0]
        start = rf"^\s*{run_id}\s+\d\d-\d\d \d\d:\d\dZ\s+{workload}\s+{engine or '-'}\s"
        assert re.match(start, rows[run_id]), rows[run_id]
        if result is not None:
            assert result.split()[0] in rows[run_id]
    assert "12,346 rows/s" in rows[1] and "4 files in 2 dirs" in rows[1]
    assert "1 dir on hdd, wal on nvme" in rows[2] and "1,234 NOPM" in rows[2]
    assert "12.3 s for 22 queries" in rows[3]
    assert "1,234 MB/s SEQ1M Q8T1 read" in rows[4]
    assert "457 tx/s" in rows[5] and "88 tx/s" in rows[6]
    assert "850 µs p99 tx" in rows[7] and "--dsn server" in rows[8]
    # a failed or aborted run: its status (and why), no number
    assert "failed: mariadbd exited" in rows[9] and "999" not in rows[9]
    assert re.search(r"\baborted\b", rows[10])


def test_results_list_json_adds_engine_layout_and_headline(stored: Path) -> None:
    done = iolab("results", "list", "--json", "--results", str(stored))
    runs = {r["id"]: r for r in json.loads(done.stdout)}
    assert runs[4]["engine"] is None and runs[4]["layout"] == "vda"
    assert runs[4]["headline"] == {
        "metric": "tests.SEQ1M Q8T1 read.mbps",
        "value": 1234.0,
        "unit": "MB/s",
        "text": "1,234 MB/s SEQ1M Q8T1 read",
    }
    assert runs[2]["headline"] == {
        "metric": "nopm",
        "value": 1234.4,
        "unit": "NOPM",
        "text": "1,234 NOPM",
    }
    assert runs[3]["headline"]["metric"] == "total_seconds"
    assert runs[1]["layout"] == "4 files in 2 dirs, wal apart"
    assert runs[9]["status"] == "failed" and runs[9]["headline"] is None
    assert runs[10]["status"] == "aborted" and runs[10]["headline"] is None


def test_the_table_keeps_to_100_columns(stored: Path) -> None:
    console = Console(width=100, file=io.StringIO(), record=True, color_system=None)
    console.print(runs_table(list(_by_id(stored).values())))
    text = console.export_text()
    assert max(len(line.rstrip()) for line in text.splitlines()) == 100
    for result in ("12,346 rows/s", "1,234 NOPM", "457 tx/s", "850 µs p99 tx", "wal apart"):
        assert result in text
    # a long name folds within its column, every character kept (not cut at the edge)
    assert "postgresql://bench@/iolab?host=/tmp/pg&port=5433" in "".join(text.split())


def test_serve_index_shows_each_run_at_a_glance(stored: Path) -> None:
    request = Request({"type": "http", "method": "GET", "path": "/", "query_string": b""})
    with open_readonly(stored) as store:
        page = bytes(serve_app._experiments(store, request).body).decode()
    table = page[page.index("<table id='run-glance'>") :]
    cells = re.findall(r"<tr>(.*?)</tr>", table)
    rows = {
        int(m[1]): [re.sub("<[^>]+>", "", c) for c in re.findall(r"<td>(.*?)</td>", row)]
        for row in cells
        if (m := re.search(r"<a href='/runs/(\d+)'>", row))
    }
    assert sorted(rows) == list(range(1, len(RUNS) + 1))
    for run_id, (engine, layout, result) in enumerate(SHOWN, 1):
        _, _, workload, shown_engine, shown_layout, shown_result, _, _ = rows[run_id]
        assert (workload, shown_engine) == (RUNS[run_id - 1][0], engine or "-")
        assert shown_layout == layout.replace("&", "&amp;")
        assert shown_result == (result or "-")
    assert rows[9][6] == "failed mariadbd exited with code 1 before it took connections"
    assert rows[10][6] == "aborted"
    assert "<a href='/experiments/3'>tpch duckdb sf 0.01</a>" in table
