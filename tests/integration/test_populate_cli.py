"""`iolab populate` end to end on real engines: numbers, placement, faults, clean-up."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from iolab import drivercore
from tests.conftest import interruptible, make_dirs, small_tmpfs

pytestmark = pytest.mark.integration
IOLAB = [sys.executable, "-m", "iolab"]


def iolab(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*IOLAB, *args], capture_output=True, text=True, timeout=600, cwd=cwd, check=False
    )


def servers_of(under: Path) -> list[str]:
    """Database server processes whose command line names a path under ``under``."""
    done = subprocess.run(
        ["pgrep", "-a", "-f", "postgres|mariadbd"], capture_output=True, text=True, check=False
    )
    return [line for line in done.stdout.splitlines() if str(under) in line]


def test_sqlite_two_files_on_two_dirs(open_tmp: Path, results_db: Path) -> None:
    a, b = make_dirs(open_tmp, "a", "b")
    done = iolab(
        "populate",
        "--engine",
        "sqlite",
        "--data-dir",
        str(a),
        "--data-dir",
        str(b),
        "--files",
        "2",
        "--rows",
        "600",
        "--connections",
        "3",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["status"] == "done"
    assert doc["rows"] == 600
    assert doc["pages_per_row"] == pytest.approx(1.0, abs=0.02)
    assert doc["fill_ok"] is True
    assert len(doc["loader_seconds"]) == 3
    assert doc["elapsed_seconds"] >= doc["first_finished_seconds"] > 0
    assert doc["rows_per_second"] == pytest.approx(600 / doc["elapsed_seconds"])
    assert doc["table_bytes"] >= 600 * 8192
    data = doc["placement"]["data"]
    assert Path(data[0]).parent.parent == a
    assert Path(data[1]).parent.parent == b
    assert list(a.iterdir()) == []
    assert list(b.iterdir()) == []
    (run,) = json.loads(iolab("results", "list", "--json").stdout)
    assert run["workload"] == "populate"
    assert run["summary"]["rows"] == 600
    assert run["params"]["files"] == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--engine", "oracle"], "--engine: 'oracle' is not allowed; choose one of: sqlite"),
        (["--connections", "0"], "--connections: 0 is not allowed"),
        (["--rows", "3", "--connections", "4"], "at least one row per connection"),
        (["--method", "copy"], "--method (with sqlite): 'copy' is not allowed"),
        (["--key", "guid"], "--key: 'guid' is not allowed"),
        (["--set", "journal_mode"], "--set: 'journal_mode' is not allowed; write NAME=VALUE"),
        (["--set", "fsync_everything=1"], "fsync_everything"),
        (["--commit-every", "0"], "--commit-every: 0 is not allowed"),
        (["--bytes", "lots"], "--bytes: 'lots' is not allowed"),
        (["--pg-bin", "/usr/lib"], "--pg-bin goes with --engine postgres"),
    ],
)
def test_bad_input(open_tmp: Path, results_db: Path, args: list[str], message: str) -> None:
    done = iolab("populate", "--data-dir", str(open_tmp), "--rows", "100", *args)
    assert done.returncode == 2, done.stdout
    assert message in done.stderr.replace("\n", " ")
    assert "Traceback" not in done.stderr
    assert list(open_tmp.iterdir()) == []


def test_missing_data_dir(open_tmp: Path, results_db: Path) -> None:
    done = iolab(
        "populate", "--data-dir", str(open_tmp / "nope"), "--rows", "10", "--connections", "2"
    )
    assert done.returncode == 2
    assert "--data-dir" in done.stderr
    assert "nope" in done.stderr


@pytest.fixture
def tiny_tmpfs(open_tmp: Path) -> Iterator[Path]:
    with small_tmpfs(open_tmp / "iolab-full", "3m") as mnt:
        yield mnt


def test_disk_full_fails_the_run_and_touches_nothing_else(
    tiny_tmpfs: Path, results_db: Path
) -> None:
    foreign = tiny_tmpfs / "keep.txt"
    foreign.write_text("mine")
    data = tiny_tmpfs / "data"
    data.mkdir(mode=0o755)
    # 380 pages fit the 3 MiB (the size check lets the run start); with the WAL they do not
    done = iolab(
        "populate",
        "--engine",
        "sqlite",
        "--data-dir",
        str(data),
        "--rows",
        "380",
        "--connections",
        "2",
        "--commit-every",
        "100",
    )
    assert done.returncode == 1
    assert "disk full" in done.stderr
    assert "Traceback" not in done.stderr
    assert foreign.read_text() == "mine"
    assert sorted(p.name for p in tiny_tmpfs.iterdir()) == ["data", "keep.txt"]
    assert list(data.iterdir()) == []
    (run,) = json.loads(iolab("results", "list", "--json").stdout)
    assert run["status"] == "failed"
    assert "disk full" in run["error"]


@pytest.mark.parametrize("core", ["python", "native"])
def test_postgres_disk_full_names_the_loader_and_stops(
    tiny_tmpfs: Path, open_tmp: Path, results_db: Path, core: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tablespace on a full device: the multiplexed client loader (or the compiled core's)
    fails the run with the server's error, names the loader, and leaves no server and no
    file of its own."""
    if core == "native" and drivercore.native() is None:
        pytest.skip("the compiled core is not built")
    monkeypatch.setenv("IOLAB_DRIVER_CORE", core)
    d0 = open_tmp / "d0"
    d0.mkdir(mode=0o755)
    full = tiny_tmpfs / "data"
    full.mkdir(mode=0o755)
    done = iolab(
        "populate",
        "--engine",
        "postgres",
        "--data-dir",
        str(d0),
        "--data-dir",
        str(full),
        "--files",
        "2",
        "--bytes",  # counted as a page per 8 KiB by the size check: the run starts, then fills
        "6MB",
        "--connections",
        "4",
    )
    assert done.returncode == 1, done.stderr
    assert "disk full: loader " in done.stderr
    assert "No space left on device" in done.stderr
    assert "Traceback" not in done.stderr
    assert servers_of(open_tmp) == []
    assert list(full.iterdir()) == []
    assert list(d0.iterdir()) == []
    (run,) = json.loads(iolab("results", "list", "--json").stdout)
    assert run["status"] == "failed"
    assert "No space left on device" in run["error"]


def test_postgres_layout_wal_and_tablespaces(open_tmp: Path, results_db: Path) -> None:
    d0, d1, wal = make_dirs(open_tmp, "d0", "d1", "wal")
    done = iolab(
        "populate",
        "--engine",
        "postgres",
        "--data-dir",
        str(d0),
        "--data-dir",
        str(d1),
        "--files",
        "2",
        "--wal-dir",
        str(wal),
        "--rows",
        "800",
        "--connections",
        "4",
        "--set",
        "max_wal_size=2GB",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["rows"] == 800
    assert doc["pages_per_row"] == pytest.approx(1.0, abs=0.05)
    assert doc["wal_bytes"] >= 800 * doc["payload_bytes"]  # every row's page went to the WAL
    assert doc["settings"]["max_wal_size"] == "2GB"
    assert Path(doc["placement"]["wal"]).parent == wal
    assert [Path(p).parent for p in doc["placement"]["data"]] == [d0, d1]
    assert doc["engine_version"].startswith("PostgreSQL 18")
    for d in (d0, d1, wal):
        assert list(d.iterdir()) == []
    assert servers_of(open_tmp) == []


def test_a_bad_postgres_setting_is_refused_before_a_run_is_recorded(
    open_tmp: Path, results_db: Path
) -> None:
    """The value is read by PostgreSQL itself (postgres -C) before anything starts: one line
    naming the setting and the value, exit 2, no run (it was a server log dump, exit 1)."""
    done = iolab(
        "populate",
        "--engine",
        "postgres",
        "--data-dir",
        str(open_tmp),
        "--rows",
        "10",
        "--set",
        "shared_buffers=lots",
        "--connections",
        "2",
    )
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("error: --set shared_buffers: 'lots' is not allowed")
    assert 'invalid value for parameter "shared_buffers"' in line
    assert list(open_tmp.iterdir()) == []
    assert not results_db.exists()


@pytest.mark.parametrize("core", ["python", "native"])
def test_ctrl_c_leaves_no_server(
    open_tmp: Path, results_db: Path, core: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if core == "native" and drivercore.native() is None:
        pytest.skip("the compiled core is not built")
    monkeypatch.setenv("IOLAB_DRIVER_CORE", core)
    proc = subprocess.Popen(
        interruptible(
            [
                *IOLAB,
                *["populate", "--engine", "postgres", "--data-dir", str(open_tmp)],
                *["--rows", "200000", "--connections", "4"],
            ]
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while not servers_of(open_tmp) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert servers_of(open_tmp), "the server never started"
    time.sleep(3)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert servers_of(open_tmp) == []
    assert list(open_tmp.iterdir()) == []
    (run,) = json.loads(iolab("results", "list", "--json").stdout)
    assert run["status"] == "aborted"


def test_data_dir_with_foreign_files_is_refused(open_tmp: Path, results_db: Path) -> None:
    (open_tmp / "customers.dat").write_text("someone's data")
    done = iolab("populate", "--data-dir", str(open_tmp), "--rows", "10", "--connections", "2")
    assert done.returncode == 2
    assert "--data-dir" in done.stderr
    assert "customers.dat" in done.stderr
    assert (open_tmp / "customers.dat").read_text() == "someone's data"
    assert not results_db.exists() or json.loads(iolab("results", "list", "--json").stdout) == []


def scratch_dirs() -> set[str]:
    return {p.name for p in Path("/var/tmp").iterdir() if p.name.startswith(".iolab-populate-")}


def test_default_data_dir_is_a_scratch_dir(results_db: Path) -> None:
    before = scratch_dirs()
    done = iolab("populate", "--rows", "200", "--connections", "2", "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["rows"] == 200
    assert doc["placement"]["data"][0].startswith("/var/tmp/.iolab-populate-")
    assert scratch_dirs() == before  # removed again


def test_a_killed_populates_default_data_dir_goes_with_the_next_run(results_db: Path) -> None:
    """kill -9 leaves the scratch directory (a PostgreSQL cluster in it); the next populate
    without --data-dir removes it, and keeps one a live process owns and one iolab did not
    name."""
    boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip().replace("-", "")[:8]
    live = Path("/var/tmp") / f".iolab-populate-{os.getpid()}-{boot}-0badcafe"  # this test's
    foreign = Path("/var/tmp") / f"iolab-populate-test-{os.getpid()}"
    proc = subprocess.Popen(
        [*IOLAB, "populate", "--engine", "postgres", "--rows", "400000", "--connections", "2"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    mine = f".iolab-populate-{proc.pid}-"
    try:
        live.mkdir()
        foreign.mkdir()
        deadline = time.monotonic() + 180
        left: list[Path] = []
        while time.monotonic() < deadline:
            left = [Path("/var/tmp", n) for n in scratch_dirs() if n.startswith(mine)]
            if left and servers_of(left[0]):
                break
            assert proc.poll() is None, proc.communicate()[1]
            time.sleep(0.2)
        assert left and servers_of(left[0]), "the server never started"
        proc.kill()
        proc.wait()
        (scratch,) = left
        deadline = time.monotonic() + 60
        while servers_of(scratch) and time.monotonic() < deadline:
            time.sleep(0.2)  # the server follows iolab (its parent-death signal)
        assert servers_of(scratch) == []
        assert any(scratch.iterdir())  # the cluster stayed
        done = iolab("populate", "--rows", "200", "--connections", "2", "--json")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["rows"] == 200
        assert not scratch.exists()
        assert live.is_dir() and foreign.is_dir()
        assert [n for n in scratch_dirs() if n.startswith(mine)] == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for path in (live, foreign):
            if path.is_dir():
                path.rmdir()
        for name in scratch_dirs():
            if name.startswith(mine):  # the test failed before the next run removed it
                shutil.rmtree(Path("/var/tmp", name), ignore_errors=True)


def test_postgres_takes_relative_directories(open_tmp: Path, results_db: Path) -> None:
    make_dirs(open_tmp, "data", "wal")
    done = iolab(
        "populate",
        "--engine",
        "postgres",
        "--data-dir",
        "data",
        "--wal-dir",
        "wal",
        "--rows",
        "100",
        "--connections",
        "2",
        "--json",
        cwd=open_tmp,
    )
    assert done.returncode == 0, done.stderr
    placement = json.loads(done.stdout)["placement"]
    assert Path(placement["wal"]).parent == open_tmp / "wal"  # initdb got an absolute path
    assert [Path(p).parent for p in placement["data"]] == [open_tmp / "data"]
