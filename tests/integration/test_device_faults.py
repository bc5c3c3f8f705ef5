"""A device that starts failing in the middle of a run, on the real stack: nbdkit's error filter
in front of iolab's model plugin, nbdfuse, a loop device, ext4, a real SQLite load with its
database on the failing device, and a real PostgreSQL load with its WAL there (its PANIC and
crash restart; the server is halted with SIGQUIT before its files are removed, where a fast
shutdown after the PANIC waited 60 s).

The run on the failing device is recorded failed with one line that names the engine's error
and the device (not a traceback), the experiment goes on to its next run, and when it ends
no server, nbdkit, nbdfuse, loop device, mount or file of the testbed is left.

The stack under a model device failing too: a run whose nbdkit is killed names the device and
what is gone; a device whose nbdfuse was killed or stopped is ``broken`` in ``testbed status``
(which answers in seconds, not hanging on the stopped FUSE file), and ``up`` makes it afresh.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from iolab import testbed
from iolab.testbed import nbd
from tests.conftest import make_dirs, signal_when
from tests.integration.test_faults import commands
from tests.integration.test_populate_cli import servers_of

pytestmark = pytest.mark.integration
NO_STACK = testbed.unavailable_reason(limits=False) or nbd.unavailable_reason()

EXPERIMENT = """
[experiment]
name = "failing device"
repetitions = 1
order = "sequential"
on_failure = "skip"
[workload]
kind = "populate"
engine = "{engine}"
rows = {rows}
connections = {connections}
[devices.bad]
size = "128MiB"
backing_dir = "{files}"
model = "null"
fault = {{ op = "write", error = "EIO", on = false }}
[devices.good]
size = "128MiB"
backing_dir = "{files}"
model = "null"
[layouts.bad]
{bad}
[layouts.good]
{good}
[isolation]
settle_seconds = 0
drop_caches = false
[matrix]
layout = ["bad", "good"]
"""
SQLITE = 'settings = {{ synchronous = "full", journal_mode = "wal" }}'


def runs(db: Path) -> list[tuple[str, str | None]]:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            rows = conn.execute("SELECT status, error FROM runs ORDER BY id").fetchall()
    except sqlite3.OperationalError:
        return []
    return [(str(s), e) for s, e in rows]


def sqlite_loading(mount: Path) -> bool:
    """The load has written its first rows to the device (a database of 256 KiB or more)."""
    try:
        return any(p.stat().st_size >= 256 * 1024 for p in mount.rglob("*") if p.is_file())
    except OSError:
        return False


def postgres_loading(mount: Path) -> bool:
    """The load has filled a WAL segment on the device (more than the one initdb made)."""
    try:
        return len([p for p in mount.rglob("0000000*") if p.is_file()]) >= 2
    except OSError:
        return False


CASES = {
    # engine: (rows, connections, layout bad, layout good, ready, the engine's words: one of)
    "sqlite": (
        3000,
        1,
        f'data_dirs = ["device:bad"]\n{SQLITE}',
        f'data_dirs = ["device:good"]\n{SQLITE}',
        sqlite_loading,
        ("disk I/O error",),
    ),
    "postgres": (
        6_000,
        2,
        'data_dirs = ["{data}"]\nwal_dir = "device:bad"',
        'data_dirs = ["{data}"]\nwal_dir = "device:good"',
        postgres_loading,
        # the loader whose backend hit the error, or one the crash restart cut off first; or
        # the server's own log when its recovery could not write either and it shut down
        (
            "Input/output error",
            "server closed the connection unexpectedly",
            "crash of another server process",
            "Read-only file system",
        ),
    ),
}


@pytest.mark.skipif(NO_STACK is not None, reason=str(NO_STACK))
@pytest.mark.parametrize("engine", list(CASES))
def test_a_device_failing_writes_mid_run_fails_that_run_and_the_next_one_runs(
    engine: str, open_tmp: Path, results_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows, connections, bad, good, ready, words = CASES[engine]
    ready_on: Callable[[Path], bool] = ready  # type: ignore[assignment]
    state = open_tmp / "testbed"
    (files, data) = make_dirs(open_tmp, "files", "data")
    monkeypatch.setenv("IOLAB_TESTBED_DIR", str(state))
    exp = open_tmp / "exp.toml"
    exp.write_text(
        EXPERIMENT.format(
            engine=engine,
            rows=rows,
            connections=connections,
            files=files,
            bad=str(bad).format(data=data),
            good=str(good).format(data=data),
        )
    )
    out_file, err_file = open_tmp / "out", open_tmp / "err"
    with out_file.open("w") as out, err_file.open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "iolab", "run", str(exp)], stdout=out, stderr=err, text=True
        )
    # switch the fault on while the first run (on device bad) is loading (signal 0: none)
    signal_when(
        proc,
        lambda: [s for s, _ in runs(results_db)] == ["running"] and ready_on(state / "mnt" / "bad"),
        0,
        what="the load on the device",
        timeout=120,
    )
    nbd.fault_file(state, "bad").touch()
    proc.wait(timeout=300)
    out, err = out_file.read_text(), err_file.read_text()
    assert proc.returncode == 1, err  # a cell gave up
    assert "Traceback" not in out + err
    (failed, done) = runs(results_db)
    assert failed[0] == "failed"
    assert done == ("done", None)
    error = failed[1] or ""
    assert any(w in error for w in words), error  # the engine's own
    assert "device:bad failed" in error and "injecting EIO error into pwrite" in error
    assert "\n" not in error
    assert f"run 1 of layout=bad failed: {error[:40]}" in " ".join(err.split())
    # nothing of the run or the testbed is left: servers, processes, loop devices, mounts, files
    assert servers_of(open_tmp) == []
    assert [c for c in commands() if str(state) in c and "nbd" in c] == []
    loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True, check=True).stdout
    assert str(files) not in loops
    assert str(state) not in Path("/proc/self/mountinfo").read_text()
    assert list(files.iterdir()) == []
    assert list(data.iterdir()) == []
    assert not state.exists() or list(state.iterdir()) == []


def iolab(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "iolab", *args],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    except OSError:
        return True


@pytest.fixture
def k2(open_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private testbed with one model device, k2 (no cost); its state directory. Taken down
    afterwards, and nothing of it may be left."""
    if NO_STACK is not None:
        pytest.skip(NO_STACK)
    state = open_tmp / "testbed"
    (files,) = make_dirs(open_tmp, "files")
    monkeypatch.setenv("IOLAB_TESTBED_DIR", str(state))
    testbed.up(
        testbed.parse_devices({"k2": {"size": "64MiB", "model": "null", "backing_dir": str(files)}})
    )
    try:
        yield state
    finally:
        for pid in nbd.nbdfuse_pids(state, "k2"):
            os.kill(pid, signal.SIGCONT)
        testbed.down()
    assert [c for c in commands() if str(state) in c and "nbd" in c] == []
    assert str(state) not in Path("/proc/self/mountinfo").read_text()
    assert list(files.iterdir()) == []


def test_a_model_device_whose_nbdfuse_died_is_broken_and_up_remakes_it(
    k2: Path, open_tmp: Path
) -> None:
    # after a kill -9 of its nbdfuse the FUSE mount is still listed: status said "up", `up`
    # said "up already", and `iolab disk device:k2` failed with "(Read-only file system)"
    (pid,) = nbd.nbdfuse_pids(k2, "k2")
    os.kill(pid, signal.SIGKILL)
    while not gone(pid):
        time.sleep(0.02)
    (dev,) = json.loads(iolab("testbed", "status", "--json").stdout)
    assert (dev["state"], dev["problem"]) == (
        "broken",
        "its nbdfuse is gone (killed, or the machine rebooted?)",
    )
    refused = iolab("disk", "device:k2", "--size", "16MiB", "--runs", "1", "--duration", "1")
    assert refused.returncode == 2
    assert "k2 is not up (its nbdfuse is gone" in refused.stderr
    toml = open_tmp / "k2.toml"
    toml.write_text(
        f'[devices.k2]\nsize = "64MiB"\nmodel = "null"\nbacking_dir = "{open_tmp / "files"}"\n'
    )
    again = iolab("testbed", "up", str(toml), "--json")
    assert again.returncode == 0, again.stderr
    assert (
        "k2: its nbdfuse is gone (killed, or the machine rebooted?); removing it and making it "
        "afresh" in " ".join(again.stderr.split())
    )
    (dev,) = json.loads(again.stdout)
    assert dev["state"] == "up"
    written = k2 / "mnt" / "k2" / "written"
    written.write_bytes(b"x" * 4096)  # the device takes writes again
    assert written.read_bytes() == b"x" * 4096
    written.unlink()


def test_status_says_a_hung_model_device_is_broken_instead_of_hanging(k2: Path) -> None:
    # a stopped nbdfuse answers nothing: a stat of its file, and `losetup --list` (the kernel
    # asks the file for its inode), wait for it; status gives up on it after a few seconds
    (pid,) = nbd.nbdfuse_pids(k2, "k2")
    os.kill(pid, signal.SIGSTOP)
    try:
        done = iolab("testbed", "status", "--json")  # within the 300 s time-out: not hung
    finally:
        os.kill(pid, signal.SIGCONT)
    assert done.returncode == 0, done.stderr
    (dev,) = json.loads(done.stdout)
    assert dev["state"] == "broken"
    # said from its state: a stat may still be answered from the kernel's attribute cache
    assert dev["problem"] == "its nbdfuse is stopped (SIGSTOP, or a debugger holds it)"
    (dev,) = json.loads(iolab("testbed", "status", "--json").stdout)
    assert dev["state"] == "up"  # answering again


def test_a_run_whose_device_loses_its_nbdkit_names_the_device(
    k2: Path, open_tmp: Path, results_db: Path
) -> None:
    # kill -9 of the nbdkit under --wal-dir ended the run with PostgreSQL's "could not create
    # file "pg_wal/xlogtemp...": Read-only file system" and nothing about the device
    (data,) = make_dirs(open_tmp, "data")
    out_file, err_file = open_tmp / "out", open_tmp / "err"
    with out_file.open("w") as out, err_file.open("w") as err:
        proc = subprocess.Popen(
            [
                sys.executable, "-m", "iolab", "populate", "--engine", "postgres",
                "--data-dir", str(data), "--wal-dir", "device:k2", "--rows", "6000",
                "--connections", "2",
            ],
            stdout=out, stderr=err, text=True,
        )  # fmt: skip
    (nbdkit,) = nbd.nbdkit_pids(k2, "k2")
    signal_when(
        proc,
        lambda: (
            [s for s, _ in runs(results_db)] == ["running"] and postgres_loading(k2 / "mnt" / "k2")
        ),
        0,
        what="the load on the device",
        timeout=120,
    )
    os.kill(nbdkit, signal.SIGKILL)
    proc.wait(timeout=300)
    err = err_file.read_text()
    assert proc.returncode == 1, err
    assert "Traceback" not in err
    ((status, error),) = runs(results_db)
    assert status == "failed"
    assert error is not None and "\n" not in error
    assert error.endswith(
        "device:k2 stopped serving: its nbdkit is gone (killed, or the machine rebooted?)"
    ), error
    assert "device:k2 stopped serving: its nbdkit is gone" in " ".join(err.split())
    assert servers_of(open_tmp) == []
    assert list(data.iterdir()) == []
