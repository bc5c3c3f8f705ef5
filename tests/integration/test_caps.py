"""``--memory`` and ``--cpus`` on real PostgreSQL: the cap is what the data device and the CPU
time show (docs/caps.md).

- A warm scan larger than the memory cap reads the table from the device again; the same scan
  without the cap reads it from the page cache.
- ``--cpus 0.5`` holds a CPU-hungry load to half a core: the group is throttled, and it never
  gets more than its quota.

(iolab killed during a capped run: tests/integration/test_faults.py.)

No number here is a time: the device's bytes, the kernel's counters of the group.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from iolab.ownership import owned_name
from iolab.system import cgroups
from tests.conftest import is_root, make_dirs, requires_mariadb
from tests.integration.test_populate_cli import iolab

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not is_root(), reason="capped runs need root"),
    pytest.mark.skipif(
        cgroups.missing(memory=True, cpus=True) is not None,
        reason=str(cgroups.missing(memory=True, cpus=True)),
    ),
]

BLOCK = 8192  # PostgreSQL's page


def _show(run: int) -> dict[str, Any]:
    done = iolab("results", "show", str(run), "--json")
    assert done.returncode == 0, done.stderr
    doc: dict[str, Any] = json.loads(done.stdout)
    return doc


def _series(doc: dict[str, Any], probe: str, name: str) -> dict[str, Any]:
    found = [s for s in doc["probes"]["series"] if s["probe"] == probe and s["name"] == name]
    assert found, f"no {probe}/{name} series"
    return found[0]


@pytest.fixture
def own_device(open_tmp: Path) -> Iterator[tuple[Path, str]]:
    """An ext4 filesystem on a loop device of the test's own, mounted (mode 0755): its
    /proc/diskstats line counts this test's reads alone, whatever else the machine's disks do.
    Yields the mount point and the device's name."""
    backing, mnt = open_tmp / "device.img", open_tmp / "mnt"
    with backing.open("wb") as f:
        f.truncate(640 << 20)
    loop = subprocess.run(
        ["losetup", "--find", "--show", str(backing)], capture_output=True, text=True, check=False
    )
    if loop.returncode != 0:
        pytest.skip(f"no loop device: {loop.stderr.strip()}")
    dev = loop.stdout.strip()
    try:
        subprocess.run(["mkfs.ext4", "-q", "-F", dev], check=True, capture_output=True)
        mnt.mkdir()
        subprocess.run(["mount", dev, str(mnt)], check=True, capture_output=True)
        try:
            mnt.chmod(0o755)
            yield mnt, Path(dev).name
        finally:
            subprocess.run(["umount", str(mnt)], check=False)
    finally:
        subprocess.run(["losetup", "--detach", dev], check=False)


def _tpch_q1(data: Path, *caps: str) -> dict[str, Any]:
    """A warm TPC-H Q1 (a scan of lineitem, 600,572 rows at SF 0.1), shared_buffers small."""
    done = iolab(
        *["tpch", "--engine", "postgres", "--sf", "0.1", "--queries", "1", "--warm"],
        *["--data-dir", str(data), "--set", "shared_buffers=16MB", *caps, "--json"],
    )
    assert done.returncode == 0, done.stderr
    return _show(json.loads(done.stdout)["run"])


def test_a_warm_scan_larger_than_the_memory_cap_reads_the_device(
    own_device: tuple[Path, str], cache: Path, results_db: Path
) -> None:
    mnt, device = own_device
    capped_dir, free_dir = make_dirs(mnt, "capped", "free")
    capped = _tpch_q1(capped_dir, "--memory", "96MiB")
    free = _tpch_q1(free_dir)

    def device_read(doc: dict[str, Any]) -> int:
        (q1,) = doc["query_results"]
        return int(q1["io"][device]["read_bytes"])

    # lineitem as PostgreSQL read it into its buffers, once per scan (the untimed warm-up and
    # the timed query): each scan reads every page of it through a small ring. The counters
    # reach the statistics up to a second late, so a run's last sample may miss some: the
    # larger of the two runs' counts.
    table = max(
        _series(doc, "postgres", "blocks_read_per_s")["total"] * BLOCK / 2 for doc in (capped, free)
    )
    assert table > 50e6, table  # lineitem at SF 0.1 is about 100 MB
    assert device_read(capped) >= 0.8 * table, (device_read(capped), table)
    assert device_read(free) <= 0.05 * table, (device_read(free), table)  # the page cache's
    # the cap held: the group's memory reached it and stayed under it
    memory = _series(capped, "cgroup", "memory_mb")
    limit = _series(capped, "cgroup", "memory_limit_mb")["peak"]
    assert limit == pytest.approx(96 * 2**20 / 1e6)
    assert 0.9 * limit <= memory["peak"] <= limit
    assert capped["environment"]["versions"]["memory cap"] == "96MiB (100663296 bytes)"
    assert capped["params"]["memory"] == "96MiB"
    # what the cap fitted (a sixteenth of it per index build), and what was given kept
    versions = capped["environment"]["versions"]
    assert versions["fitted to the memory cap"] == "maintenance_work_mem=6MB"
    assert capped["summary"]["settings"]["maintenance_work_mem"] == "6MB"
    assert capped["summary"]["settings"]["shared_buffers"] == "16MB"
    assert "fitted to the memory cap" not in free["environment"]["versions"]
    assert not any(s["probe"] == "cgroup" for s in free["probes"]["series"])


def test_half_a_cpu_holds_the_server_to_half_a_core(open_tmp: Path, results_db: Path) -> None:
    (data,) = make_dirs(open_tmp, "data")
    done = iolab(
        *["populate", "--engine", "postgres", "--data-dir", str(data), "--cpus", "0.5"],
        *["--rows", "10000", "--connections", "4", "--set", "synchronous_commit=off", "--json"],
    )
    assert done.returncode == 0, done.stderr
    doc = _show(json.loads(done.stdout)["run"])
    throttled = _series(doc, "cgroup", "throttled_periods_per_s")["total"]
    lost = _series(doc, "cgroup", "throttled_s_per_s")["total"]
    assert throttled > 0 and lost > 0, (throttled, lost)
    cpu = _series(doc, "cgroup", "cpu_cores")
    seconds = doc["probes"]["duration"]
    assert cpu["total"] <= 0.5 * seconds * 1.1 + 0.1, (cpu["total"], seconds)
    assert _series(doc, "cgroup", "cpu_limit_cores")["peak"] == 0.5
    assert doc["environment"]["versions"]["cpus cap"] == "0.5"


def test_a_capped_tpcc_run_holds_the_server_and_records_the_group(
    open_tmp: Path, results_db: Path
) -> None:
    (data,) = make_dirs(open_tmp, "data")
    done = iolab(
        *["tpcc", "--engine", "postgres", "--data-dir", str(data), "--warehouses", "1"],
        *["--connections", "2", "--warmup", "1s", "--duration", "3s"],
        *["--memory", "384MiB", "--cpus", "1", "--json"],
    )
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)
    assert run["nopm"] == run["nopm_orders"] == run["nopm_client"] and run["nopm"] > 0
    doc = _show(run["run"])
    assert (doc["params"]["memory"], doc["params"]["cpus"]) == ("384MiB", 1.0)
    versions = doc["environment"]["versions"]
    assert versions["memory cap"] == "384MiB (402653184 bytes)"
    assert versions["cpus cap"] == "1"
    assert _series(doc, "cgroup", "memory_limit_mb")["peak"] == pytest.approx(402.653184)
    assert _series(doc, "cgroup", "cpu_limit_cores")["peak"] == 1.0
    assert 0 < _series(doc, "cgroup", "memory_mb")["peak"] <= 402.653184


@requires_mariadb
def test_mariadb_under_a_small_cap_gets_a_pool_fitted_to_it(
    open_tmp: Path, results_db: Path
) -> None:
    """MariaDB's default 128 MiB pool and the 192 MiB it needs beside it exceed a 256 MiB cap:
    the pool not given is fitted to a quarter of the cap (it was refused), and the run records
    what was fitted."""
    (data,) = make_dirs(open_tmp, "data")
    done = iolab(
        *["populate", "--engine", "mariadb", "--data-dir", str(data), "--rows", "2000"],
        *["--memory", "256MiB", "--json"],
    )
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)
    versions = _show(run["run"])["environment"]["versions"]
    assert versions["fitted to the memory cap"] == "innodb_buffer_pool_size=64M"


@requires_mariadb
def test_a_server_the_oom_killer_ends_at_the_cap_is_said_so(
    open_tmp: Path, results_db: Path
) -> None:
    """TPC-C's load and index builds on MariaDB need more than a 256 MiB cap holds (killed at
    256 and 288 MiB, ran at 320): the kernel kills the server at the cap. The run says the OOM
    killer did it at the memory cap, before the server's own "stopped (signal 9)", and is
    recorded failed so."""
    (data,) = make_dirs(open_tmp, "data")
    done = iolab(
        *["tpcc", "--engine", "mariadb", "--data-dir", str(data), "--warehouses", "1"],
        *["--connections", "2", "--warmup", "1s", "--duration", "2s", "--memory", "256MiB"],
    )
    assert done.returncode == 1, done.stderr
    said = "the kernel's OOM killer ended a process of the run at its memory cap (--memory 256MiB)"
    assert said in done.stderr
    assert "signal 9" in done.stderr and "Traceback" not in done.stderr
    runs = json.loads(iolab("results", "list", "--json").stdout)
    assert [r["status"] for r in runs] == ["failed"]
    assert runs[0]["error"].startswith(said)
    assert cgroups.left() == []


def test_a_group_of_iolabs_name_another_user_owns_is_neither_emptied_nor_removed() -> None:
    """Where a hierarchy is delegated to another user, they can make a group named like iolab's
    (of a process that is gone) and run in it: the next run removes root's own orphan, leaves
    theirs and the process in it."""
    hierarchy = cgroups.find("memory")
    assert hierarchy is not None
    tag = owned_name("cgroup").split("-")[3]
    dead = subprocess.Popen(["true"])
    dead.wait()
    theirs = hierarchy.mount_point / f".iolab-cgroup-{dead.pid}-{tag}-0badc0de"
    mine = hierarchy.mount_point / f".iolab-cgroup-{dead.pid}-{tag}-00c0ffee"
    nobody = pwd.getpwnam("nobody")
    theirs.mkdir()
    mine.mkdir()
    sleeper: subprocess.Popen[bytes] | None = None
    try:
        os.chown(theirs, nobody.pw_uid, nobody.pw_gid)
        sleeper = subprocess.Popen(["sleep", "600"], user=nobody.pw_uid, group=nobody.pw_gid)
        (theirs / "cgroup.procs").write_text(f"{sleeper.pid}\n")

        removed = cgroups.reap()

        assert mine in removed and theirs not in removed
        assert not mine.exists()
        assert theirs.is_dir() and cgroups.members(theirs) == [sleeper.pid]
        assert sleeper.poll() is None  # not killed
    finally:
        if sleeper is not None:
            sleeper.kill()
            sleeper.wait()
        for path in (theirs, mine):
            with contextlib.suppress(FileNotFoundError):
                path.rmdir()


# A run of an embedded engine, as iolab runs it under a cap (caps.capped: a cgroup of its own
# that iolab's process enters), whose body allocates past the cap: the kernel's OOM killer
# ends iolab's own process, which can say nothing (exit 137, no output).
KILLED_AT_THE_CAP = """
import sys
from pathlib import Path
from iolab.runner.single import CommandRun, execute
from iolab.store import open_store
from iolab.workloads import caps

params = {"engine": "sqlite", "memory": "64MiB", "rows": 20}
def body(outcome):
    held = []
    while True:  # pages written, so charged to the group
        held.append(b"x" * (1 << 20))
with open_store(Path(sys.argv[1]), create=True) as store:
    spec = CommandRun("populate sqlite", "populate", params, {}, {})
    execute(store, spec, caps.capped(params, body))
"""


def test_iolab_killed_at_its_memory_cap_is_said_so_by_the_next_command(
    open_tmp: Path, results_db: Path
) -> None:
    """The OOM killer ended iolab itself (SQLite and DuckDB run in its process, which the cap
    holds): the run was "aborted: the iolab process running it is gone" with no word of the
    cap, and its cgroup stayed until a capped run. The next command reads the group's
    oom_kill count (or, another command having removed the group, the kernel's log), records
    and says why the run ended, and removes the group."""
    import sys

    child = subprocess.run(
        [sys.executable, "-c", KILLED_AT_THE_CAP, str(results_db)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert child.returncode == -9, child.stderr  # SIGKILL, by the kernel
    pid = _pid_of(results_db)  # the run it left 'running'; its group may be reaped by now
    (data,) = make_dirs(open_tmp, "data")
    done = iolab("populate", "--engine", "sqlite", "--data-dir", str(data), "--rows", "20")
    assert done.returncode == 0, done.stderr
    said = (
        "interrupted: the iolab process running it is gone: the kernel's OOM killer ended it "
        "at its memory cap (64.0 MiB); SQLite and DuckDB run in iolab's process, which the cap "
        "holds too: give a larger --memory"
    )
    assert f"run 1 was aborted: {said}" in done.stderr
    runs = json.loads(iolab("results", "list", "--json").stdout)
    assert [(r["status"], r["error"]) for r in runs if r["id"] == 1] == [("aborted", said)]
    assert not [p for p in cgroups.left() if f"-cgroup-{pid}-" in p.name]


def _pid_of(results_db: Path) -> int:
    """The pid the run left 'running' in the results database."""
    import sqlite3

    with sqlite3.connect(results_db) as conn:
        (pid,) = conn.execute("SELECT pid FROM runs WHERE id = 1").fetchone()
    return int(pid)
