"""Seed 003's variations on real engines (issue 20): requested checkpoints are intervals in
`iolab results show`, a pre-sized log is at its size before the first row, and the steady rate
is the mean of the steady part of the stored rows/s series."""

from __future__ import annotations

import json
import math
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from iolab.store import open_store
from tests.conftest import interruptible, make_dirs

pytestmark = pytest.mark.integration
IOLAB = [sys.executable, "-m", "iolab"]
MIB = 1 << 20


def iolab(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*IOLAB, *args], capture_output=True, text=True, timeout=600, check=False)


def populate(*args: str) -> dict[str, Any]:
    done = iolab("populate", *args, "--json")
    assert done.returncode == 0, done.stderr
    doc: dict[str, Any] = json.loads(done.stdout)
    assert doc["status"] == "done"
    return doc


def servers_of(under: Path) -> list[str]:
    """Database server processes whose command line names a path under ``under``."""
    done = subprocess.run(
        ["pgrep", "-a", "-f", "postgres|mariadbd"], capture_output=True, text=True, check=False
    )
    return [line for line in done.stdout.splitlines() if str(under) in line]


def requested(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in doc["probes"]["checkpoints"] if c["kind"] == "requested"]


def shown_checkpoints(run: int) -> list[list[str]]:
    """The rows of the checkpoints table `iolab results show RUN` prints."""
    done = iolab("results", "show", str(run))
    assert done.returncode == 0, done.stderr
    text = done.stdout.split("checkpoints (seconds from the start)", 1)[1]
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip("│ ").split("│")]
        if len(cells) == 6 and cells[0].isdigit():
            rows.append(cells)
    return rows


def test_postgres_requested_checkpoints_and_a_presized_wal_dir(
    open_tmp: Path, results_db: Path
) -> None:
    data, wal = make_dirs(open_tmp, "data", "wal")
    doc = populate(
        *["--engine", "postgres", "--data-dir", str(data), "--wal-dir", str(wal)],
        *["--rows", "3000", "--connections", "2"],
        *["--checkpoint-every", "0.2s", "--presize-wal", "64MiB"],
    )
    # the WAL dir held the pre-sized segments before the first row
    assert doc["presize_wal_bytes"] == 64 * MIB
    assert doc["log_bytes_before_load"] >= 64 * MIB
    assert doc["settings"]["min_wal_size"] == "64MB"
    # each request is an interval marked requested, with the pages the server log says
    made = requested(doc)
    assert len(made) == doc["requested_checkpoints"] >= 1
    for c in made:
        assert c["start_s"] >= 0.2 - 0.05 and c["end_s"] >= c["start_s"]
        assert c["pages"] is not None and c["pages"] >= 0
        assert c["detail"].startswith("CHECKPOINT; wrote ")
    # the server's record of each requested checkpoint was folded into it
    assert not [c for c in doc["probes"]["checkpoints"] if "immediate" in c["kind"]]
    rows = shown_checkpoints(doc["run"])
    shown = [r for r in rows if r[5] == "requested"]
    assert len(shown) == min(len(made), 20)
    first = made[0]
    assert shown[0][1:3] == [f"{first['start_s']:.1f}", f"{first['end_s']:.1f}"]
    assert shown[0][4] == f"{first['pages']:,}"
    assert list(data.iterdir()) == [] and list(wal.iterdir()) == []


def test_mariadb_requested_checkpoints_and_a_presized_redo_log(
    open_tmp: Path, results_db: Path
) -> None:
    (data,) = make_dirs(open_tmp, "data")
    doc = populate(
        *["--engine", "mariadb", "--data-dir", str(data), "--rows", "2000"],
        *["--connections", "2", "--checkpoint-every", "0.3s", "--presize-wal", "64MiB"],
    )
    assert doc["settings"]["innodb_log_file_size"] == str(64 * MIB)
    assert doc["log_bytes_before_load"] >= 64 * MIB  # ib_logfile0, allocated at its size
    made = requested(doc)
    assert len(made) == doc["requested_checkpoints"] >= 1
    for c in made:
        assert c["end_s"] >= c["start_s"] >= 0.3 - 0.05
        assert c["pages"] is not None and c["pages"] >= 0
        assert c["detail"].startswith("checkpoint LSN reached ")
    assert [r[5] for r in shown_checkpoints(doc["run"])].count("requested") == min(len(made), 20)


def test_sqlite_presized_wal_files_keep_their_size_through_requested_checkpoints(
    open_tmp: Path, results_db: Path
) -> None:
    (data,) = make_dirs(open_tmp, "data")
    doc = populate(
        *["--data-dir", str(data), "--files", "2", "--rows", "4000", "--connections", "2"],
        *["--checkpoint-every", "0.2s", "--presize-wal", "16MiB"],
    )
    assert doc["log_bytes_before_load"] >= 16 * MIB  # two -wal files of 8 MiB each
    made = requested(doc)
    assert len(made) == doc["requested_checkpoints"] >= 1
    assert all(c["detail"].startswith("wal_checkpoint(RESTART)") for c in made)
    assert sum(c["pages"] for c in made) > 0  # frames copied back into the database files
    # RESTART keeps the pre-sized files: the probe's WAL size never falls below the share
    with open_store(results_db, create=False) as store:
        probes = store.probes(doc["run"])
    assert probes is not None
    wal = probes.find("sqlite", "wal_mb")
    assert len(wal) == 2
    for s in wal:
        assert min(v for v in s.values if math.isfinite(v)) >= 8 * MIB / 1e6


def test_the_steady_rate_is_the_mean_of_the_steady_part_of_the_stored_series(
    open_tmp: Path, results_db: Path
) -> None:
    (data,) = make_dirs(open_tmp, "data")
    doc = populate(  # PostgreSQL counts every commit (SQLite's loaders count in chunks)
        *["--engine", "postgres", "--data-dir", str(data), "--rows", "3000"],
        *["--connections", "1", "--sample-interval", "0.1s"],
        *["--steady-window", "3", "--steady-tolerance", "100"],
    )
    steady = doc["steady_state"]
    assert (steady["window"], steady["tolerance_pct"]) == (3, 100.0)
    with open_store(results_db, create=False) as store:
        probes = store.probes(doc["run"])
    assert probes is not None
    (rows,) = probes.find("workload", "rows_per_s")
    values, ends = list(rows.values), rows.times()
    assert len(values) >= 3
    starts = [0.0, *ends[:-1]]
    part = [
        (v, e - s)
        for v, s, e in zip(values, starts, ends, strict=True)
        if steady["start_s"] - 1e-6 <= s and e <= steady["end_s"] + 1e-6
    ]
    assert len(part) == steady["samples"] >= 3
    mean = sum(v * dt for v, dt in part) / sum(dt for _, dt in part)
    assert doc["steady_rows_per_second"] == pytest.approx(mean, rel=1e-4)
    shown = iolab("results", "show", str(doc["run"]))
    assert f"{doc['steady_rows_per_second']:,.0f}" in shown.stdout
    assert "steady rows/s" in shown.stdout
    page = open_tmp / "t.svg"
    assert iolab("timeline", str(doc["run"]), "-o", str(page)).returncode == 0
    assert f"steady {doc['steady_rows_per_second']:,.0f} rows/s" in page.read_text()


def test_the_steady_part_starts_after_the_warm_up(open_tmp: Path, results_db: Path) -> None:
    """Issue 47: the steady band overlapped the warm-up the results leave out (run 35: steady
    0-5 s over a 1 s warm-up). A load steady from its start (any sample within 100 % of its
    window's mean): its steady part begins after the warm-up ended, on the probes' clock."""
    (data,) = make_dirs(open_tmp, "data")
    doc = populate(
        *["--data-dir", str(data), "--duration", "3s", "--warmup", "1s", "--connections", "1"],
        *["--sample-interval", "0.1s", "--steady-window", "3", "--steady-tolerance", "100"],
    )
    with open_store(results_db, create=False) as store:
        probes = store.probes(doc["run"])
    assert probes is not None and probes.warmup_end_s is not None
    steady = doc["steady_state"]
    assert doc["steady_rows_per_second"] is not None, steady
    assert steady["start_s"] >= probes.warmup_end_s - 1e-6, (steady, probes.warmup_end_s)


def test_a_load_shorter_than_the_window_has_no_steady_rate(
    open_tmp: Path, results_db: Path
) -> None:
    (data,) = make_dirs(open_tmp, "data")
    doc = populate("--data-dir", str(data), "--rows", "200", "--connections", "1")
    assert doc["steady_rows_per_second"] is None
    assert doc["steady_state"]["reason"].endswith("fewer than the steady-state window of 10")
    shown = iolab("results", "show", str(doc["run"]))
    assert "fewer than the steady-state window of 10" in shown.stdout


def test_ctrl_c_during_requested_checkpoints_stops_cleanly_and_keeps_them(
    open_tmp: Path, results_db: Path
) -> None:
    (data,) = make_dirs(open_tmp, "data")
    proc = subprocess.Popen(
        interruptible(
            [
                *IOLAB,
                *["populate", "--engine", "postgres", "--data-dir", str(data)],
                *["--rows", "1000000", "--connections", "4", "--checkpoint-every", "0.1s"],
            ]
        ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while not servers_of(open_tmp):
        assert proc.poll() is None, proc.communicate()[1]
        assert time.monotonic() < deadline, "the server never started"
        time.sleep(0.2)
    time.sleep(5)  # the load runs, with a checkpoint requested every 0.1 s
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert servers_of(open_tmp) == []
    assert list(data.iterdir()) == []
    (run,) = json.loads(iolab("results", "list", "--json").stdout)
    assert run["status"] == "aborted"
    with open_store(results_db, create=False) as store:
        probes = store.probes(run["id"])
    assert probes is not None
    assert [c for c in probes.checkpoints if c.kind == "requested"]
