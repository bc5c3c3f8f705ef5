"""The testbed's pure parts: device specs, the state file, cgroup discovery, device: paths."""

from __future__ import annotations

import fcntl
import math
import os
import threading
import time
import tomllib
from pathlib import Path
from typing import Any

import pytest

from iolab.errors import BadInput
from iolab.testbed import DeviceSpec, Limits, load_file, parse_devices, resolve_path
from iolab.testbed.cgroups import V2_KEYS, find_hierarchy, limits_of, set_limits
from iolab.testbed.filesystems import mkfs_argv
from iolab.testbed.state import CgroupRecord, DeviceRecord, State, load, locked, save

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

ISSUE_EXAMPLE = """
[devices.hdd]
size = "20GiB"
backing_dir = "/var/tmp"      # where the loop file lives
filesystem = "ext4"
read_iops = 200
write_iops = 200
read_mbps = 150
write_mbps = 150
"""


def test_the_issue_example_parses() -> None:
    (hdd,) = parse_devices(tomllib.loads(ISSUE_EXAMPLE)["devices"])
    assert hdd == DeviceSpec(
        name="hdd",
        size=20 * 2**30,
        backing_dir=Path("/var/tmp"),
        filesystem="ext4",
        read_iops=200,
        write_iops=200,
        read_mbps=150.0,
        write_mbps=150.0,
    )
    assert hdd.limits == Limits(200, 200, 150_000_000, 150_000_000)
    assert hdd.limits.describe() == "read 200 IOPS, 150 MB/s; write 200 IOPS, 150 MB/s"
    assert hdd.direct_io is True


def test_defaults_and_option_forms() -> None:
    table = {
        "a": {"size": "64MiB"},
        "b": {
            "size": 320 * 2**20,
            "filesystem": "xfs",
            "mkfs_options": "-b size=4096 -L 'my log'",
            "mount_options": "noatime, nodiratime",
            "write_mbps": 0.5,
            "rotational": True,
            "direct_io": False,
        },
        "c": {"size": "16MiB", "mkfs_options": ["-b", "1024"], "mount_options": ["noatime"]},
    }
    a, b, c = parse_devices(table)
    assert (a.name, a.size, a.backing_dir, a.filesystem) == (
        "a",
        64 * 2**20,
        Path("/var/tmp"),
        "ext4",
    )
    assert not a.limits.any
    assert a.limits.describe() == "unlimited"
    assert b.mkfs_options == ("-b", "size=4096", "-L", "my log")
    assert b.mount_options == ("noatime", "nodiratime")
    assert b.limits == Limits(write_bps=500_000)
    assert b.rotational is True
    assert b.direct_io is False
    assert c.mkfs_options == ("-b", "1024")
    assert c.mount_options == ("noatime",)


@pytest.mark.parametrize(
    ("device", "field", "allowed"),
    [
        (
            {"size": "1GiB", "write_iop": 5},
            "devices.d.write_iop",
            "did you mean write_iops? allowed keys: size, backing_dir",
        ),
        ({"size": "1GiB", "write_iops": 0}, "devices.d.write_iops", "leave the key out"),
        ({"size": "1GiB", "write_iops": -5}, "devices.d.write_iops", "whole number"),
        ({"size": "1GiB", "write_iops": 2.5}, "devices.d.write_iops", "whole number"),
        ({"size": "1GiB", "read_iops": True}, "devices.d.read_iops", "whole number"),
        ({"size": "1GiB", "read_mbps": "fast"}, "devices.d.read_mbps", "MB/s"),
        ({"size": "1GiB", "write_mbps": 0.0001}, "devices.d.write_mbps", "at least 0.005"),
        ({"write_iops": 5}, "devices.d.size", "give the device size"),
        ({"size": "big"}, "devices.d.size", "a number with a unit"),
        ({"size": "1MiB"}, "devices.d.size", "ext4 needs at least 16.0 MiB"),
        ({"size": "256MiB", "filesystem": "xfs"}, "devices.d.size", "xfs needs at least 320.0 MiB"),
        ({"size": "1GiB", "filesystem": "btrfs"}, "devices.d.filesystem", "ext4, xfs"),
        ({"size": "1GiB", "backing_dir": "var/tmp"}, "devices.d.backing_dir", "absolute"),
        ({"size": "1GiB", "mkfs_options": 4}, "devices.d.mkfs_options", "list of strings"),
        ({"size": "1GiB", "mount_options": ["a", 1]}, "devices.d.mount_options", "list"),
        ({"size": "1GiB", "direct_io": "yes"}, "devices.d.direct_io", "true or false"),
        ({"size": "1GiB", "rotational": 1}, "devices.d.rotational", "true (a disk)"),
        ({"size": 16 * 2**20 + 1}, "devices.d.size", "multiple of 4 KiB"),
        # not a number the kernel's throttle can take (nan and inf raised ValueError and
        # OverflowError before)
        ({"size": "1GiB", "read_mbps": math.nan}, "devices.d.read_mbps", "MB/s (decimal"),
        ({"size": "1GiB", "write_mbps": math.inf}, "devices.d.write_mbps", "MB/s (decimal"),
        ({"size": "1GiB", "read_mbps": 1e300}, "devices.d.read_mbps", "at most 18446744073709"),
        # the kernel keeps 32 bits of an IOPS limit: 4294967301 was written and read back as 5
        ({"size": "1GiB", "read_iops": 4294967301}, "devices.d.read_iops", "at most 4294967294"),
        ({"size": "1GiB", "write_iops": 2**32 - 1}, "devices.d.write_iops", "at most 4294967294"),
        # mounted read-only, the device failed `up` with "Read-only file system" (an OSError)
        ({"size": "1GiB", "mount_options": "noatime,ro"}, "devices.d.mount_options", "'ro'"),
        ({"size": "1GiB", "mount_options": ["ro"]}, "devices.d.mount_options", "read-write"),
        # a RAID member is a disk or an SSD, as the docs say ("null" was taken before)
        (
            {"size": "1GiB", "model": "raid0", "members": 2, "member": {"model": "null"}},
            "devices.d.member.model",
            "a member is one device: 'hdd' or 'ssd'",
        ),
    ],
)
def test_bad_device_names_the_key_path(device: dict[str, Any], field: str, allowed: str) -> None:
    with pytest.raises(BadInput) as caught:
        parse_devices({"d": device})
    assert caught.value.field == field
    assert allowed in caught.value.allowed
    assert str(caught.value).startswith(f"{field}: ")


def test_bad_names_and_tables() -> None:
    with pytest.raises(BadInput, match=r"^devices\.a b: 'a b' is not allowed; use 1 to 32"):
        parse_devices({"a b": {"size": "1GiB"}})
    with pytest.raises(BadInput, match=r"^devices\.hdd: 5 is not allowed; give a table"):
        parse_devices({"hdd": 5})
    with pytest.raises(BadInput, match="name at least one device"):
        parse_devices({})
    with pytest.raises(BadInput, match=r"^experiment\.devices\.x\.size: "):
        parse_devices({"x": {"size": "tiny"}}, where="experiment.devices")


def test_load_file(tmp_path: Path) -> None:
    names = [d.name for d in load_file(EXAMPLES / "testbed.toml")]
    assert names == ["sata", "ssd"]
    seed = {d.name: d for d in load_file(EXAMPLES / "seed-001-log-device.toml")}
    params = seed["sata"].model_params
    assert params is not None
    assert (params["model"], params["members"], params["member"]["rpm"]) == ("raid10", 8, 7200)
    assert seed["sata"].effective_rotational is True
    assert seed["ssd_raid0"].effective_rotational is False
    bad = tmp_path / "bad.toml"
    bad.write_text("[devices.a]\nsize = \n")
    with pytest.raises(BadInput, match="fix the TOML syntax"):
        load_file(bad)
    bad.write_text("[layouts.a]\ndata_dirs = []\n")
    with pytest.raises(BadInput, match=r"has no \[devices\] table"):
        load_file(bad)
    with pytest.raises(BadInput, match="give an existing TOML file"):
        load_file(tmp_path / "missing.toml")


def test_mkfs_keeps_devices_honest() -> None:
    (ext4, xfs, own) = parse_devices(
        {
            "e": {"size": "64MiB", "mkfs_options": "-b 4096"},
            "x": {"size": "512MiB", "filesystem": "xfs"},
            "o": {"size": "64MiB", "mkfs_options": "-E stride=16"},
        }
    )
    argv = mkfs_argv(ext4, "/dev/loop9")
    assert argv[1:] == [
        "-q",
        "-F",
        "-E",
        "lazy_itable_init=0,lazy_journal_init=0,nodiscard",
        "-b",
        "4096",
        "/dev/loop9",
    ]
    assert mkfs_argv(own, "/dev/loop9")[1:] == ["-q", "-F", "-E", "stride=16", "/dev/loop9"]
    assert mkfs_argv(xfs, "/dev/loop9")[1:] == ["-q", "-f", "-K", "/dev/loop9"]


def test_state_round_trip(tmp_path: Path) -> None:
    (spec,) = parse_devices(tomllib.loads(ISSUE_EXAMPLE)["devices"])
    rec = DeviceRecord(
        spec=spec,
        backing_file=Path("/var/tmp/.iolab-testbed-hdd-0123abcd.img"),
        mount_point=tmp_path / "mnt" / "hdd",
        backing_id=(2049, 77),
        loop="/dev/loop3",
        dev=(7, 3),
        formatted=True,
        mounted=True,
        direct_io=True,
        created_by=42,
        boot_id="b",
    )
    state = State(
        devices={"hdd": rec},
        cgroup=CgroupRecord("v1", Path("/sys/fs/cgroup/blkio/iolab-testbed")),
    )
    save(tmp_path, state)
    assert load(tmp_path) == state
    save(tmp_path, State())
    assert not (tmp_path / "state.json").exists()
    assert load(tmp_path) == State()


MOUNTINFO_V1 = """\
30 25 0:26 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755
31 30 0:27 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu
36 30 0:32 / /sys/fs/cgroup/blkio rw - cgroup cgroup rw,blkio
40 30 0:36 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw
"""


def test_find_hierarchy_prefers_the_v1_blkio_controller() -> None:
    found = find_hierarchy(MOUNTINFO_V1)
    assert found is not None
    assert (found.version, found.mount_point, found.root) == (
        "v1",
        Path("/sys/fs/cgroup/blkio"),
        "/",
    )


def test_find_hierarchy_takes_a_cgroup2_mount_with_io(tmp_path: Path) -> None:
    mountinfo = f"40 30 0:36 /ct {tmp_path} rw - cgroup2 cgroup2 rw\n"
    (tmp_path / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    found = find_hierarchy(mountinfo)
    assert found is not None
    assert (found.version, found.mount_point, found.root) == ("v2", tmp_path, "/ct")
    (tmp_path / "cgroup.controllers").write_text("cpuset cpu memory pids\n")
    assert find_hierarchy(mountinfo) is None


def test_v2_io_max_lines(tmp_path: Path) -> None:
    """cgroup v2 is not on every test machine: pin the io.max lines iolab writes and reads."""
    assert set(V2_KEYS) == set(Limits().as_json())
    group = CgroupRecord("v2", tmp_path)
    set_limits(group, (7, 3), Limits(write_iops=100, read_bps=150_000_000))
    assert (tmp_path / "io.max").read_text() == "7:3 riops=max wiops=100 rbps=150000000 wbps=max\n"
    # what the kernel shows: one line per device with limits, in its own order
    (tmp_path / "io.max").write_text(
        "8:0 rbps=max wbps=5 riops=max wiops=max\n7:3 rbps=150000000 wbps=max riops=max wiops=100\n"
    )
    assert limits_of(group, (7, 3)) == Limits(write_iops=100, read_bps=150_000_000)
    assert limits_of(group, (7, 4)) == Limits()


def test_resolve_path_without_a_testbed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IOLAB_TESTBED_DIR", str(tmp_path))
    assert resolve_path("/mnt/ssd") == Path("/mnt/ssd")
    assert resolve_path("devices/hdd") == Path("devices/hdd")
    with pytest.raises(BadInput) as caught:
        resolve_path("device:hdd/wal", "--wal-dir")
    assert str(caught.value) == (
        "--wal-dir: 'device:hdd/wal' is not allowed; no testbed device is up; bring some up "
        "with `iolab testbed up TESTBED.toml`"
    )


def test_the_largest_limits_the_kernel_holds_are_taken() -> None:
    (spec,) = parse_devices(
        {"d": {"size": "1GiB", "read_iops": 2**32 - 2, "write_mbps": 18446744073709}}
    )
    assert spec.limits.read_iops == 4294967294  # the kernel's "no limit" is one more
    bps = spec.limits.write_bps
    assert bps is not None and 18446744073709 * 10**6 <= bps < 2**64 - 1


def test_a_lock_taken_on_a_state_directory_removed_meanwhile_is_taken_again(
    tmp_path: Path,
) -> None:
    """``down`` of the last device removes iolab's own state directory with the lock held; one
    who waited for the lock then holds it on the new directory, not on the removed one (where
    a third could take it beside them)."""
    directory = tmp_path / "testbed"
    got: list[tuple[int, bool]] = []

    def waiter() -> None:
        with locked(directory):
            links = directory.stat().st_nlink
            probe = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
            try:
                fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
                free = True
            except BlockingIOError:
                free = False
            finally:
                os.close(probe)
            got.append((links, free))

    with locked(directory):
        removed = directory.stat()
        thread = threading.Thread(target=waiter)
        thread.start()
        deadline = time.monotonic() + 30
        while not _waits(removed.st_ino):
            assert time.monotonic() < deadline, "the second never waited for the lock"
            time.sleep(0.01)
        for d in (directory / "mnt", directory):  # as remove_dirs does for iolab's own
            if d.exists():
                d.rmdir()
    thread.join(30)
    # the directory is there again, and its lock is held: no one else could take it meanwhile
    assert got == [(2, False)]


def _waits(inode: int) -> bool:
    """Someone waits for an flock on the file ``inode`` (/proc/locks)."""
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if "->" in fields and fields[-3].rsplit(":", 1)[-1] == str(inode):
            return True
    return False
