"""The testbed end to end: real loop devices, filesystems, mounts and blkio/io cgroups.

Each test gets its own state directory (IOLAB_TESTBED_DIR), so its devices, mount points and
cgroup are its own; a fixture takes down whatever a failing test left.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from iolab import testbed
from iolab.engines.server_process import server_user
from iolab.events import Collect
from iolab.ownership import process_alive
from iolab.system import launch
from iolab.system.devices import parse_mountinfo
from iolab.testbed import cgroups
from tests.conftest import iolab_streams

pytestmark = pytest.mark.integration
IOLAB = [sys.executable, "-m", "iolab"]
NO_TESTBED = testbed.unavailable_reason(limits=True)
requires_testbed = pytest.mark.skipif(NO_TESTBED is not None, reason=str(NO_TESTBED))


def iolab(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*IOLAB, *args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**os.environ, **(env or {})},
    )


PREFIX = "iolab-testbed-test-"


@pytest.fixture(scope="module", autouse=True)
def reap_killed_test_runs() -> None:
    """Take down what an earlier test run left when it was killed (its pid is in the name)."""
    if NO_TESTBED is not None:
        return
    for state in Path("/var/tmp").glob(f"{PREFIX}*-*/state.json"):
        directory = state.parent
        pid = directory.name.removeprefix(PREFIX).split("-")[0]
        if not pid.isdigit() or process_alive(int(pid)):
            continue
        saved = os.environ.get("IOLAB_TESTBED_DIR")
        os.environ["IOLAB_TESTBED_DIR"] = str(directory)
        try:
            testbed.down()
        finally:
            if saved is None:
                del os.environ["IOLAB_TESTBED_DIR"]
            else:
                os.environ["IOLAB_TESTBED_DIR"] = saved
        for d in (directory, directory.parent / (directory.name + "-files")):
            with contextlib.suppress(OSError):
                d.rmdir()


@pytest.fixture
def bed(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private testbed state directory, set as IOLAB_TESTBED_DIR; left clean afterwards."""
    base = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir="/var/tmp"))
    base.chmod(0o755)
    monkeypatch.setenv("IOLAB_TESTBED_DIR", str(base))
    try:
        yield base
    finally:
        if NO_TESTBED is None:
            testbed.down()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def backing(bed: Path) -> Path:
    """A directory for the loop files, separate from the state directory."""
    path = bed.parent / (bed.name + "-files")
    path.mkdir()
    yield path  # type: ignore[misc]
    testbed.down()  # what the test left up; `down` removes the files
    leftovers = list(path.iterdir())
    shutil.rmtree(path, ignore_errors=True)
    assert leftovers == [], "loop files left behind"


def write_testbed(path: Path, devices: dict[str, dict[str, Any]]) -> Path:
    lines = []
    for name, settings in devices.items():
        lines.append(f"[devices.{name}]")
        for key, value in settings.items():
            lines.append(f"{key} = {json.dumps(value)}")
    path.write_text("\n".join(lines) + "\n")
    return path


def mounts_under(path: Path) -> list[str]:
    text = Path("/proc/self/mountinfo").read_text()
    return [m.mount_point for m in parse_mountinfo(text) if m.mount_point.startswith(str(path))]


def loops_on(files: Path) -> list[str]:
    out = subprocess.run(
        ["losetup", "-l", "-n", "-O", "NAME,BACK-FILE"], capture_output=True, text=True, check=True
    ).stdout
    return [line for line in out.splitlines() if str(files) in line]


def blkio_group(bed: Path) -> Path:
    hierarchy = cgroups.require_hierarchy()
    return cgroups.group_path(hierarchy, testbed.lifecycle.group_name(bed))


def assert_nothing_left(bed: Path, files: Path) -> None:
    assert mounts_under(bed) == []
    assert loops_on(files) == []
    assert list(files.iterdir()) == []
    assert not blkio_group(bed).exists()
    assert list(bed.iterdir()) == []  # no state file, no mount points


@requires_testbed
def test_up_status_down_round_trip(bed: Path, backing: Path, tmp_path: Path) -> None:
    spec = {
        "slow": {
            "size": "64MiB",
            "backing_dir": str(backing),
            "write_iops": 100,
            "read_mbps": 20,
            "rotational": True,
        },
        "fast": {
            "size": "320MiB",
            "backing_dir": str(backing),
            "filesystem": "xfs",
            "mount_options": "noatime",
            "rotational": False,
        },
    }
    file = write_testbed(tmp_path / "testbed.toml", spec)
    done = iolab("testbed", "up", str(file), "--json")
    assert done.returncode == 0, done.stderr
    devices = {d["name"]: d for d in json.loads(done.stdout)}
    assert set(devices) == {"slow", "fast"}
    slow, fast = devices["slow"], devices["fast"]
    assert slow["state"] == "up"
    assert slow["mount_point"] == str(bed / "mnt" / "slow")
    assert slow["loop"].startswith("/dev/loop")
    assert slow["size_bytes"] == 64 * 2**20
    assert slow["direct_io"] is True
    assert slow["rotational"] is True
    assert fast["rotational"] is False
    assert slow["limits"] == {
        "read_iops": None,
        "write_iops": 100,
        "read_bps": 20_000_000,
        "write_bps": None,
    }
    assert fast["limits_text"] == "unlimited"
    assert Path(slow["backing_file"]).parent == backing
    assert Path(slow["backing_file"]).name.startswith(".iolab-testbed-slow-")
    assert Path(slow["backing_file"]).stat().st_blocks * 512 >= 64 * 2**20  # preallocated

    mounts = {m.mount_point: m for m in parse_mountinfo(Path("/proc/self/mountinfo").read_text())}
    assert mounts[slow["mount_point"]].fstype == "ext4"
    assert mounts[slow["mount_point"]].source == slow["loop"]
    assert mounts[fast["mount_point"]].fstype == "xfs"
    assert "noatime" in mounts[fast["mount_point"]].options
    major, minor = slow["maj_min"].split(":")
    assert mounts[slow["mount_point"]].dev == (int(major), int(minor))
    group = blkio_group(bed)
    if group.parent.name == "blkio":
        text = (group / "blkio.throttle.write_iops_device").read_text()
        assert f"{slow['maj_min']} 100" in text.splitlines()
        assert fast["maj_min"] not in text

    status = json.loads(iolab("testbed", "status", "--json").stdout)
    assert {d["name"]: d for d in status} == devices
    table = iolab("testbed", "status").stdout
    assert "write 100 IOPS" in table
    assert "read 20 MB/s" in table

    # Up again: kept as is; new limits are applied in place; another size is refused.
    again = iolab("testbed", "up", str(file), "--json")
    assert again.returncode == 0, again.stderr
    assert [d["loop"] for d in json.loads(again.stdout)] == [slow["loop"], fast["loop"]]
    assert "slow: up already" in again.stderr
    spec["slow"]["write_iops"] = 300
    write_testbed(file, spec)
    changed = iolab("testbed", "up", str(file), "--json")
    assert changed.returncode == 0, changed.stderr
    (now,) = [d for d in json.loads(changed.stdout) if d["name"] == "slow"]
    assert now["limits"]["write_iops"] == 300
    assert now["loop"] == slow["loop"]
    spec["slow"]["size"] = "128MiB"
    write_testbed(file, spec)
    refused = iolab("testbed", "up", str(file))
    assert refused.returncode == 2
    assert "devices.slow: 'slow' is not allowed; it is up with another size" in refused.stderr

    # The throttle moves this process into the cgroup and back out.
    here = Path("/proc/self/cgroup").read_text()
    with testbed.throttled():
        assert os.getpid() in cgroups.members(testbed.lifecycle.load().cgroup)  # type: ignore[arg-type]
    assert Path("/proc/self/cgroup").read_text() == here
    assert cgroups.members(testbed.lifecycle.load().cgroup) == []  # type: ignore[arg-type]

    down = iolab("testbed", "down")
    assert down.returncode == 0, down.stderr
    assert down.stdout.strip() == "taken down: slow, fast"
    assert_nothing_left(bed, backing)
    assert iolab("testbed", "status").stdout.strip() == "no testbed devices are up"
    assert iolab("testbed", "down").stdout.strip() == "no testbed devices were up"


def waits_for_lock(pid: int, directory: Path) -> bool:
    """True when process ``pid`` waits for the flock on ``directory`` (/proc/locks)."""
    inode = str(directory.stat().st_ino)
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        waiting = "->" in fields and "FLOCK" in fields and str(pid) in fields
        if waiting and fields[-3].rsplit(":", 1)[-1] == inode:
            return True
    return False


def wait_until(ready: Any, what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        assert time.monotonic() < deadline, f"{what} never came"
        time.sleep(0.02)


@requires_testbed
def test_an_up_that_waited_for_a_down_of_the_last_device_finds_its_directories(
    bed: Path, backing: Path, tmp_path: Path
) -> None:
    # `up` made mnt/ before it took the lock, and the `down` that held it removed mnt/ with its
    # last device: the `up` then failed with FileNotFoundError: .../mnt/b
    testbed.up(testbed.parse_devices({"a": {"size": "64MiB", "backing_dir": str(backing)}}))
    file = write_testbed(tmp_path / "b.toml", {"b": {"size": "64MiB", "backing_dir": str(backing)}})
    env = {**os.environ, "IOLAB_TESTBED_DIR": str(bed)}
    pipes: dict[str, Any] = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    lock = os.open(bed, os.O_RDONLY | os.O_DIRECTORY)
    up_b = down = None
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the lock held between the two
        up_b = subprocess.Popen([*IOLAB, "testbed", "up", str(file)], env=env, **pipes)
        wait_until(lambda: waits_for_lock(up_b.pid, bed), "up b waiting for the lock")
        up_b.send_signal(signal.SIGSTOP)  # so that the down goes first
        down = subprocess.Popen([*IOLAB, "testbed", "down"], env=env, **pipes)
        wait_until(lambda: waits_for_lock(down.pid, bed), "down waiting for the lock")
        fcntl.flock(lock, fcntl.LOCK_UN)
        down_out, down_err = down.communicate(timeout=300)
        assert down.returncode == 0, down_err
        assert down_out.strip() == "taken down: a"
        assert not (bed / "mnt").exists()  # the last device's down removes mnt/
        up_b.send_signal(signal.SIGCONT)
        _, up_err = up_b.communicate(timeout=300)
        assert up_b.returncode == 0, up_err
    finally:
        os.close(lock)
        for proc in (up_b, down):
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
                proc.kill()
                proc.wait()
    ((name, state),) = [(d.name, d.up) for d in testbed.status()]
    assert (name, state) == ("b", True)
    assert mounts_under(bed) == [str(bed / "mnt" / "b")]


def iolab_unread(*args: str) -> int:
    """Run ``iolab ARGS`` with stdout and stderr on a pipe whose reader has gone (as
    ``| head -1`` leaves it once head has its line): its exit code."""
    read, write = os.pipe()
    os.close(read)  # every write of iolab's fails with a broken pipe
    try:
        proc = subprocess.Popen([*IOLAB, *args], stdout=write, stderr=write)
    finally:
        os.close(write)
    return proc.wait(timeout=600)


@requires_testbed
def test_down_finishes_when_its_output_is_not_read(bed: Path, backing: Path) -> None:
    # `iolab testbed down 2>&1 | head -1` stopped after the first device (exit 1): data was left
    # "broken: not mounted" with its loop device attached, wal still up
    testbed.up(
        testbed.parse_devices(
            {
                "data": {"size": "64MiB", "backing_dir": str(backing), "write_iops": 100},
                "wal": {"size": "64MiB", "backing_dir": str(backing)},
            }
        )
    )
    assert iolab_unread("testbed", "down") == 0
    assert testbed.status() == []
    assert_nothing_left(bed, backing)


@requires_testbed
def test_down_finishes_whatever_its_streams_do(bed: Path, backing: Path) -> None:
    # issue 43: `down 2>/dev/full` exit 1 with the 3 devices up; `down >&-` and `2>&-` exit 120
    # with nothing taken down (a crash at import); `down >/dev/full` a traceback after it
    specs = testbed.parse_devices(
        {name: {"size": "64MiB", "backing_dir": str(backing)} for name in ("a", "b", "c")}
    )
    steps = [f"{n}: {step}" for n in "abc" for step in (f"unmounting {bed}/mnt/{n}…", "detaching…")]
    full = "warning: standard output: No space left on device; what iolab writes there is dropped"
    for stdout, stderr, said, err in (
        ("pipe", "full", "taken down: a, b, c\n", []),
        ("closed", "pipe", "", steps),
        ("pipe", "closed", "taken down: a, b, c\n", []),
        ("full", "pipe", "", [*steps, full]),
        ("closed", "closed", "", []),
        ("full", "full", "", []),
    ):
        testbed.up(specs)
        assert [d.name for d in testbed.status()] == ["a", "b", "c"]
        code, out, lines = iolab_streams("testbed", "down", stdout=stdout, stderr=stderr)
        shown = [re.sub(r" /dev/loop\d+…$", "…", line) for line in lines.splitlines()]
        assert (code, out, shown) == (0, said, err), (stdout, stderr)
        assert testbed.status() == []
        assert_nothing_left(bed, backing)


@requires_testbed
@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")
def test_write_iops_limit_holds_at_qd1(bed: Path, backing: Path, results_db: Path) -> None:
    # 20 ms per write: the throttle, not the real disk under the loop file (shared with other
    # work on a test machine), sets the pace
    limit = 50
    testbed.up(
        testbed.parse_devices(
            {"slow": {"size": "128MiB", "backing_dir": str(backing), "write_iops": limit}}
        )
    )
    done = iolab(
        "disk",
        "device:slow",
        "--profile",
        "sweep",
        "--bs",
        "4k",
        "--qd",
        "1",
        "--threads",
        "1",
        "--rw",
        "randwrite",
        "--size",
        "32MiB",
        "--runs",
        "3",
        "--duration",
        "2",
        "--interval",
        "0",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    (test,) = doc["tests"]
    assert test["test"] == "RND4K Q1T1 write"
    assert test["median"]["iops"] == pytest.approx(limit, rel=0.10)
    assert test["device_share"] == pytest.approx(1.0, abs=0.1)  # the loop device saw the writes
    assert doc["path"] == str(bed / "mnt" / "slow")
    shown = json.loads(iolab("results", "show", str(doc["run"]), "--json").stdout)
    storage = shown["environment"]["storage"]["target"]
    assert storage["testbed"]["name"] == "slow"
    assert storage["testbed"]["limits"]["write_iops"] == limit
    assert storage["device"]["kind"] == "loop"
    text = iolab("results", "show", str(doc["run"])).stdout
    assert "testbed device slow (write 50 IOPS)" in text
    # the run left the cgroup with the iolab process
    assert cgroups.members(testbed.lifecycle.load().cgroup) == []  # type: ignore[arg-type]


def populate(wal: str) -> dict[str, Any]:
    done = iolab(
        "populate",
        "--engine",
        "postgres",
        "--wal-dir",
        wal,
        "--rows",
        "100",
        "--connections",
        "2",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


@requires_testbed
def test_populate_with_the_wal_on_a_slow_device_is_slower(
    bed: Path, backing: Path, results_db: Path
) -> None:
    bed_up = testbed.up(
        testbed.parse_devices(
            {
                "slow": {"size": "64MiB", "backing_dir": str(backing), "write_iops": 50},
                "fast": {"size": "64MiB", "backing_dir": str(backing)},
            }
        )
    )
    loop = {d.name: Path(d.loop or "").name for d in bed_up.devices}
    slow = populate("device:slow")
    fast = populate("device:fast")
    assert slow["rows"] == fast["rows"] == 100
    # every commit waits for a WAL flush: 50 write IOPS hold the slow run back
    assert slow["rows_per_second"] < fast["rows_per_second"] / 3
    assert Path(slow["placement"]["wal"]).parent == bed / "mnt" / "slow"
    # each device has its own diskstats counters, under its testbed name
    dev = slow["devices"][loop["slow"]]
    assert dev["testbed"] == "slow"
    assert dev["roles"] == ["wal"]
    assert dev["write_bytes"] >= slow["wal_bytes"] * 0.9
    assert loop["fast"] not in slow["devices"]
    assert fast["devices"][loop["fast"]]["testbed"] == "fast"
    assert fast["devices"][loop["fast"]]["write_bytes"] >= fast["wal_bytes"] * 0.9
    runs = json.loads(iolab("results", "list", "--json").stdout)
    assert len(runs) == 2
    text = iolab("results", "show", str(slow["run"])).stdout
    assert f"device slow = {loop['slow']} (wal)" in text
    assert list((bed / "mnt" / "slow").iterdir()) == [bed / "mnt" / "slow" / "lost+found"]


@requires_testbed
def test_down_cleans_what_a_crash_left(bed: Path, backing: Path, tmp_path: Path) -> None:
    specs = testbed.parse_devices({"a": {"size": "64MiB", "backing_dir": str(backing)}})
    # A crash right after losetup: the loop device is attached, the state does not name it yet.
    (dev,) = testbed.up(specs).devices
    subprocess.run(["umount", str(dev.mount_point)], check=True)
    state_file = bed / "state.json"
    doc = json.loads(state_file.read_text())
    doc["devices"]["a"].update(loop=None, dev=None, formatted=False, mounted=False)
    state_file.write_text(json.dumps(doc))
    (broken,) = testbed.status()
    assert broken.problem is not None and "half made" in broken.problem
    assert len(loops_on(backing)) == 1
    down = iolab("testbed", "down")
    assert down.returncode == 0, down.stderr
    assert f"detaching {dev.loop}" in down.stderr
    assert_nothing_left(bed, backing)

    # A reboot: loop device and mount gone, state and file left. `up` makes it afresh.
    (dev,) = testbed.up(specs).devices
    subprocess.run(["umount", str(dev.mount_point)], check=True)
    subprocess.run(["losetup", "-d", str(dev.loop)], check=True)
    (broken,) = testbed.status()
    assert broken.problem == "its loop device is gone (the machine rebooted?)"
    events = Collect()
    (remade,) = testbed.up(specs, events).devices
    assert remade.up
    assert remade.backing_file != dev.backing_file
    assert not dev.backing_file.exists()
    assert any("removing it and making it afresh" in w for w in events.warnings())

    # A real kill: `iolab testbed up` stopped by SIGKILL wherever it is.
    testbed.down()
    file = write_testbed(
        tmp_path / "t.toml",
        {
            "b": {"size": "256MiB", "backing_dir": str(backing)},
            "c": {"size": "256MiB", "backing_dir": str(backing)},
        },
    )
    proc = subprocess.Popen(
        [*IOLAB, "testbed", "up", str(file)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 60
    while not (bed / "state.json").exists() and proc.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    down = iolab("testbed", "down")
    assert down.returncode == 0, down.stderr
    assert_nothing_left(bed, backing)


@requires_testbed
def test_down_leaves_what_is_not_iolabs(bed: Path, backing: Path) -> None:
    """A loop device on a file of the same name but another inode is someone else's."""
    (dev,) = testbed.up(
        testbed.parse_devices({"a": {"size": "64MiB", "backing_dir": str(backing)}})
    ).devices
    subprocess.run(["umount", str(dev.mount_point)], check=True)
    subprocess.run(["losetup", "-d", str(dev.loop)], check=True)
    dev.backing_file.unlink()
    dev.backing_file.write_bytes(b"\0" * 1024 * 1024)  # not the file iolab made
    other = subprocess.run(
        ["losetup", "--find", "--show", str(dev.backing_file)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    try:
        events = Collect()
        assert testbed.down(events) == ["a"]
        assert any("is not the file iolab made" in w for w in events.warnings())
        assert dev.backing_file.exists()
        assert len(loops_on(backing)) == 1  # their loop device is still attached
    finally:
        subprocess.run(["losetup", "-d", other], check=True)
        dev.backing_file.unlink()


def test_bad_input_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IOLAB_TESTBED_DIR", str(tmp_path / "bed"))
    file = write_testbed(tmp_path / "t.toml", {"hdd": {"size": "1GiB", "write_iops": "fast"}})
    done = iolab("testbed", "up", str(file))
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "error: devices.hdd.write_iops: 'fast' is not allowed; give a whole number of I/Os per "
        "second > 0, or leave the key out for no limit"
    )
    done = iolab("populate", "--wal-dir", "device:hdd")
    assert done.returncode == 2
    assert "--wal-dir: 'device:hdd' is not allowed; no testbed device is up" in done.stderr
    done = iolab("disk", "device:hdd/sub")
    assert done.returncode == 2
    assert "PATH: 'device:hdd/sub' is not allowed; no testbed device is up" in done.stderr


@requires_testbed
def test_unknown_device_names_those_up(bed: Path, backing: Path) -> None:
    testbed.up(testbed.parse_devices({"ssd": {"size": "64MiB", "backing_dir": str(backing)}}))
    done = iolab("populate", "--wal-dir", "device:hdd")
    assert done.returncode == 2
    assert "--wal-dir: 'device:hdd' is not allowed; devices that are up: ssd" in done.stderr
    done = iolab("disk", "device:ssd/../x")
    assert done.returncode == 2
    assert "give a path inside the device" in done.stderr
    done = iolab("testbed", "down", "hdd")
    assert done.returncode == 2
    assert "NAME: 'hdd' is not allowed; devices of the testbed: ssd" in done.stderr
    assert testbed.resolve_path("device:ssd/wal") == bed / "mnt" / "ssd" / "wal"


@requires_testbed
def test_a_failed_up_undoes_the_failed_device(bed: Path, backing: Path, tmp_path: Path) -> None:
    file = write_testbed(
        tmp_path / "t.toml",
        {
            "ok": {"size": "64MiB", "backing_dir": str(backing)},
            "bad": {"size": "64MiB", "backing_dir": str(backing), "mkfs_options": "-b 999"},
        },
    )
    done = iolab("testbed", "up", str(file))
    assert done.returncode == 1
    assert "error: mkfs.ext4 failed (exit 1): mkfs.ext4: invalid block size - 999" in done.stderr
    (ok,) = testbed.status()  # the device made before stays up; the failed one left nothing
    assert (ok.name, ok.up) == ("ok", True)
    assert len(loops_on(backing)) == 1
    assert [p.name[:18] for p in backing.iterdir()] == [".iolab-testbed-ok-"]
    assert sorted(p.name for p in (bed / "mnt").iterdir()) == ["ok"]


@requires_testbed
def test_an_experiment_whose_devices_fail_to_come_up_takes_down_those_it_made(
    bed: Path, backing: Path, tmp_path: Path, results_db: Path
) -> None:
    """``iolab testbed up`` keeps what it made before a failure (above); an experiment owns its
    devices, so it takes down those it brought up, and leaves those that were up before."""
    testbed.up(testbed.parse_devices({"keep": {"size": "64MiB", "backing_dir": str(backing)}}))
    (tmp_path / "exp.toml").write_text(
        textwrap.dedent(
            f"""
            [experiment]
            name = "devices-fail"
            [workload]
            kind = "populate"
            engine = "sqlite"
            rows = 100
            [layouts.a]
            data_dirs = ["device:ok"]
            [devices.keep]
            size = "64MiB"
            backing_dir = "{backing}"
            [devices.ok]
            size = "64MiB"
            backing_dir = "{backing}"
            [devices.bad]
            size = "64MiB"
            backing_dir = "{backing}"
            mkfs_options = "-b 999"
            """
        )
    )
    done = iolab("run", str(tmp_path / "exp.toml"))
    assert done.returncode == 1, done.stderr
    assert "mkfs.ext4: invalid block size - 999" in done.stderr
    assert "taking down the testbed devices brought up: ok" in done.stderr + done.stdout
    (kept,) = testbed.status()
    assert (kept.name, kept.up) == ("keep", True)
    assert len(loops_on(backing)) == 1
    assert sorted(p.name for p in (bed / "mnt").iterdir()) == ["keep"]


def test_without_root_says_so(open_tmp: Path) -> None:
    file = write_testbed(open_tmp / "t.toml", {"a": {"size": "64MiB"}})
    file.chmod(0o644)
    argv = [*IOLAB, "testbed", "up", str(file)]
    if os.geteuid() == 0:
        user = server_user()
        # iolab's source and interpreter may sit below /root (mode 700): show the user just those
        needed = [Path(sys.prefix), Path(sys.base_prefix), Path(testbed.__file__).parents[2]]
        blocked = launch.needs_view([*needed, open_tmp], user.uid, user.gid)
        argv = launch.command(argv, death_signal="KILL", user=(user.uid, user.gid), view=blocked)
    env = {**os.environ, "IOLAB_TESTBED_DIR": str(open_tmp / "bed"), "HOME": str(open_tmp)}
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120, check=False)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "error: the testbed is not available here: it needs root (loop devices, mkfs and mount "
        "are privileged); run iolab as root"
    )
    assert not (open_tmp / "bed").exists()
