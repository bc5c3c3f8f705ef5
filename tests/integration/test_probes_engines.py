"""MariaDB and SQLite probes during real populate runs: their counters, waits and checkpoints."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import make_dirs, requires_mariadb

pytestmark = pytest.mark.integration


def populate(*args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "iolab", "populate", *args, "--json"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def series(doc: dict[str, Any], probe: str, name: str) -> dict[str, Any]:
    return next(s for s in doc["probes"]["series"] if s["probe"] == probe and s["name"] == name)


@requires_mariadb
def test_mariadb_counters_waits_and_log(open_tmp: Path, results_db: Path) -> None:
    (data,) = make_dirs(open_tmp, "data")
    doc = populate(
        "--engine",
        "mariadb",
        "--data-dir",
        str(data),
        "--rows",
        "2000",
        "--connections",
        "4",
        "--sample-interval",
        "0.5s",
    )
    rows = doc["rows"]
    assert series(doc, "workload", "rows_per_s")["total"] == rows
    assert series(doc, "mariadb", "handler_writes_per_s")["total"] >= rows
    # two rows per 16K page: about rows / 2 pages created for the clustered index
    created = series(doc, "mariadb", "pages_allocated_per_s")["total"]
    assert rows / 2 * 0.9 <= created <= rows / 2 * 1.3
    assert series(doc, "mariadb", "log_mbps")["total"] > rows * 16_000 / 2 / 1e6 * 0.5
    assert series(doc, "mariadb", "checkpoint_age_mb")["peak"] >= 0
    waits = doc["probes"]["waits"]
    assert waits and {w["source"] for w in waits} == {"performance_schema"}
    assert sum(w["share"] for w in waits) == pytest.approx(1.0)
    assert all(w["event"] != "idle" for w in waits)
    events = {(w["wait_class"], w["event"]) for w in waits}
    assert ("wait/io/table", "sql/handler") in events  # every insert is a table I/O wait
    assert any(cls == "wait/synch/sxlock" or cls.startswith("wait/synch") for cls, _ in events)
    log = subprocess.run(
        [sys.executable, "-m", "iolab", "results", "log", str(doc["run"])],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "ready for connections" in log.stdout


def test_sqlite_file_sizes_and_pages_allocated(open_tmp: Path, results_db: Path) -> None:
    (data,) = make_dirs(open_tmp, "data")
    doc = populate(
        "--engine",
        "sqlite",
        "--data-dir",
        str(data),
        "--rows",
        "1500",
        "--connections",
        "3",
        "--sample-interval",
        "0.5s",
        "--set",
        "journal_mode=delete",
    )
    assert series(doc, "workload", "rows_per_s")["total"] == 1500
    allocated = series(doc, "sqlite", "pages_allocated_per_s")["total"]
    assert 1500 <= allocated <= 1500 * 1.1  # one row per page, in the file as it commits
    db = series(doc, "sqlite", "db_mb")
    assert db["subject"].endswith(".db") or db["subject"]
    assert db["peak"] * 1e6 >= 1500 * doc["page_size"]
    assert not doc["probes"]["waits"]  # SQLite has no wait events to sample
