"""Per-operation latency on real engines: every statement and commit timed, a warm-up left out,
a time-based and a rate-limited load, the histograms stored, shown, exported and read back by
HdrHistogram's own log reader, and a latency percentile as a report's metric."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader

from iolab import drivercore
from tests.conftest import make_dirs, requires_mariadb

pytestmark = pytest.mark.integration
IOLAB = [sys.executable, "-m", "iolab"]
# the driver cores a populate test runs on (IOLAB_DRIVER_CORE): the compiled one where built
CORES = [
    "python",
    pytest.param(
        "native",
        marks=pytest.mark.skipif(drivercore.native() is None, reason="the core is not built"),
    ),
]
FIELDS = (
    "count",
    "mean_us",
    "p50_us",
    "p90_us",
    "p95_us",
    "p99_us",
    "p999_us",
    "p9999_us",
    "max_us",
)


def iolab(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*IOLAB, *args], capture_output=True, text=True, timeout=600, check=False)


def populate(*args: str) -> dict[str, object]:
    done = iolab("populate", *args, "--json")
    assert done.returncode == 0, done.stderr
    doc: dict[str, object] = json.loads(done.stdout)
    assert doc["status"] == "done", doc
    return doc


def latency(doc: dict[str, object]) -> dict[str, dict[str, float]]:
    block = doc["latency"]
    assert isinstance(block, dict)
    for stats in block.values():
        assert list(stats) == list(FIELDS)
        assert (
            0
            < stats["p50_us"]
            <= stats["p90_us"]
            <= stats["p95_us"]
            <= stats["p99_us"]
            <= stats["max_us"]
        )
        assert stats["p999_us"] <= stats["p9999_us"] <= stats["max_us"]
        assert stats["mean_us"] > 0
    return block


@pytest.fixture(params=CORES)
def core(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The driver core the test's commands run on (and check they said so)."""
    name: str = request.param
    monkeypatch.setenv("IOLAB_DRIVER_CORE", name)
    return name


def test_postgres_times_every_transaction(open_tmp: Path, results_db: Path, core: str) -> None:
    (data,) = make_dirs(open_tmp, "data")
    doc = populate(
        "--engine", "postgres", "--data-dir", str(data), "--rows", "3000", "--connections", "4"
    )
    assert doc["driver_core"] == core
    block = latency(doc)
    assert list(block) == ["transaction"]  # one row per implicit transaction: one operation each
    assert block["transaction"]["count"] == 3000
    assert doc["rows"] == 3000 and doc["pages_per_row"] == pytest.approx(1.0, abs=0.1)
    probes = doc["probes"]
    assert isinstance(probes, dict)
    names = {(s["probe"], s["name"], s["subject"]) for s in probes["series"]}
    assert {("latency", n, "transaction") for n in ("p50_ms", "p99_ms", "max_ms")} <= names
    shown = iolab("results", "show", str(doc["run"]))
    assert shown.returncode == 0, shown.stderr
    assert "latency per operation" in shown.stdout
    assert "3,000" in shown.stdout


def test_postgres_duration_warmup_rate_and_export(
    open_tmp: Path, results_db: Path, tmp_path: Path, core: str
) -> None:
    (data,) = make_dirs(open_tmp, "data")
    doc = populate(
        "--engine", "postgres", "--data-dir", str(data), "--connections", "4",
        "--duration", "6s", "--warmup", "2s", "--rate", "600",
    )  # fmt: skip
    assert doc["driver_core"] == core
    rows = doc["rows"]
    assert isinstance(rows, int)
    assert doc["duration_seconds"] == 6.0
    elapsed = doc["elapsed_seconds"]
    assert isinstance(elapsed, float)
    assert elapsed >= 5.9  # it ran for the duration, not for a row count
    assert rows <= 600 * 6 + 4  # the schedule never offers more than the rate
    warm = doc["warmup"]
    assert isinstance(warm, dict)
    assert warm["seconds"] == pytest.approx(2.0, abs=0.01)
    assert 0 < warm["rows"] < rows
    rate = doc["rate"]
    assert isinstance(rate, dict)
    assert rate["target"] == 600.0
    assert rate["achieved"] == pytest.approx(
        (rows - warm["rows"]) / (elapsed - warm["seconds"]), rel=1e-9
    )
    assert rate["held"] is True  # 600 rows/s is far below what 4 connections do
    count = latency(doc)["transaction"]["count"]
    assert abs(count - (rows - warm["rows"])) <= 0.05 * rows  # the warm-up's operations left out

    out = tmp_path / "hist"
    run = doc["run"]
    listed = json.loads(iolab("results", "list", "--json").stdout)
    (experiment,) = (str(r["experiment_id"]) for r in listed if r["id"] == run)
    # named by what ran: the engine and the data directory given; exported by its id
    assert f"populate postgres data={data}" in [r["experiment"] for r in listed]
    done = iolab("export", experiment, "--histograms", str(out))
    assert done.returncode == 0, done.stderr
    log = out / f"run-{run}-transaction.hlog"
    assert sorted(p.name for p in out.iterdir()) == [log.name]
    total = HdrHistogram(1, 3_600_000_000, 3)
    reader = HistogramLogReader(str(log), total)
    while (h := reader.get_next_interval_histogram()) is not None:
        if h.get_tag() is None:  # the untagged lines: every loader merged
            total.add(h)
    assert total.get_total_count() == rows  # the warm-up is in the log (marked), not left out
    assert "#[warm-up: the first 2.000 s" in log.read_text()
    again = iolab("export", experiment, "--histograms", str(out))
    assert again.returncode == 2
    assert f"it already holds {log.name}" in again.stderr


def test_sqlite_times_statements_and_commits(open_tmp: Path, results_db: Path) -> None:
    (data,) = make_dirs(open_tmp, "data")
    doc = populate(
        "--data-dir", str(data), "--rows", "1000", "--connections", "2", "--commit-every", "10",
        "--warmup", "200",
    )  # fmt: skip
    block = latency(doc)
    assert list(block) == ["statement", "commit"]
    warm = doc["warmup"]
    assert isinstance(warm, dict)
    assert warm["rows"] >= 200
    measured = 1000 - warm["rows"]
    assert abs(block["statement"]["count"] - measured) <= 20  # a commit's rows at the edge
    assert abs(block["commit"]["count"] - measured / 10) <= 2
    db = sqlite3.connect(results_db)
    stored = db.execute(
        "SELECT kind, SUM(count) FROM latency_intervals GROUP BY kind ORDER BY kind"
    ).fetchall()
    assert stored == [("commit", 100), ("statement", 1000)]  # the warm-up is stored too


@pytest.mark.parametrize(
    ("engine", "key"),
    [("postgres", "ordered-uuid"), pytest.param("mariadb", "random", marks=requires_mariadb)],
)
def test_commits_every_k_rows_with_a_warm_up_of_rows(
    open_tmp: Path, results_db: Path, core: str, engine: str, key: str
) -> None:
    """Explicit transactions of 10 rows: every statement and every commit timed, the
    warm-up's left out, all of them stored; the table holds each row once."""
    (data,) = make_dirs(open_tmp, "data")
    doc = populate(
        "--engine", engine, "--data-dir", str(data), "--rows", "2000", "--connections", "3",
        "--commit-every", "10", "--warmup", "300", "--key", key,
    )  # fmt: skip
    assert doc["driver_core"] == core
    assert doc["rows"] == 2000
    block = latency(doc)
    assert list(block) == ["statement", "commit"]
    warm = doc["warmup"]
    assert isinstance(warm, dict)
    assert 300 <= warm["rows"] < 300 + 3 * 10  # the commit that reached it
    measured = 2000 - warm["rows"]
    assert abs(block["statement"]["count"] - measured) <= 3 * 10  # transactions at the edge
    assert abs(block["commit"]["count"] - measured / 10) <= 3
    db = sqlite3.connect(results_db)
    stored = db.execute(
        "SELECT kind, SUM(count) FROM latency_intervals GROUP BY kind ORDER BY kind"
    ).fetchall()
    # every loader's last transaction is shorter: 667, 667, 666 rows
    assert stored == [("commit", 67 + 67 + 67), ("statement", 2000)]


@requires_mariadb
def test_mariadb_duration_random_keys(open_tmp: Path, results_db: Path, core: str) -> None:
    (data,) = make_dirs(open_tmp, "data")
    doc = populate(
        "--engine", "mariadb", "--data-dir", str(data), "--connections", "3",
        "--duration", "3s", "--key", "random",
    )  # fmt: skip
    assert doc["driver_core"] == core
    rows = doc["rows"]
    assert isinstance(rows, int)
    assert rows > 0
    assert latency(doc)["transaction"]["count"] == rows  # no warm-up: every operation


def test_latency_percentile_is_a_report_metric(open_tmp: Path, results_db: Path) -> None:
    (a,) = make_dirs(open_tmp, "a")
    exp = open_tmp / "exp.toml"
    exp.write_text(
        f"""[experiment]
name = "latency-metric"
repetitions = 2
[workload]
kind = "populate"
engine = "sqlite"
rows = 400
connections = 2
commit_every = 10
[layouts.one]
data_dirs = ["{a}"]
[matrix]
batch = [1, 5]
"""
    )
    done = iolab("run", str(exp))
    assert done.returncode == 0, done.stderr
    report = iolab("report", "latency-metric", "--metric", "latency.commit.p99_us")
    assert report.returncode == 0, report.stderr
    assert "latency.commit.p99_us" in report.stdout
    assert "us" in report.stdout
    wrong = iolab("report", "latency-metric", "--metric", "latency.commit.p42_us")
    assert wrong.returncode == 2
    assert "latency.KIND.max_us|mean_us|p50_us" in wrong.stderr
