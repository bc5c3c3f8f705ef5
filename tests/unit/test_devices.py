from __future__ import annotations

from pathlib import Path

from iolab.system import diskstats
from iolab.system.devices import describe, mount_of, parse_mountinfo

MOUNTINFO = """\
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
40 27 8:17 / /mnt/data\\040disk rw,noatime - xfs /dev/sdb1 rw,attr2,inode64
41 27 0:45 / /mnt/data\\040disk/tmp rw - tmpfs tmpfs rw,size=1024k
"""


def test_parse_mountinfo_unescapes_and_splits_options() -> None:
    mounts = parse_mountinfo(MOUNTINFO)
    data = mounts[2]
    assert data.mount_point == "/mnt/data disk"
    assert data.fstype == "xfs"
    assert data.source == "/dev/sdb1"
    assert data.options == "rw,noatime"
    assert data.super_options == "rw,attr2,inode64"
    assert data.dev == (8, 17)


def test_mount_of_takes_the_longest_containing_mount() -> None:
    mounts = parse_mountinfo(MOUNTINFO)
    assert mount_of(Path("/mnt/data disk/pg"), mounts).fstype == "xfs"
    assert mount_of(Path("/mnt/data disk/tmp/x"), mounts).fstype == "tmpfs"
    assert mount_of(Path("/mnt/data diskette"), mounts).mount_point == "/"


def test_tmpfs_is_memory(tmp_path: Path) -> None:
    shm = describe(Path("/dev/shm"))
    assert shm.memory_backed
    assert shm.device is None


def test_real_path_has_a_block_device_with_diskstats(tmp_path: Path) -> None:
    pd = describe(tmp_path)
    if pd.memory_backed:
        return  # a tmpfs /tmp: nothing to check here
    assert pd.device is not None
    assert pd.device.name in diskstats.read()
    assert pd.device.logical_block_size in (512, 4096)
    assert 0 <= pd.fill_percent <= 100
    assert pd.device.kind in {"disk", "partition", "loop", "dm", "md"}


def test_diskstats_delta() -> None:
    text_a = "   8       0 sda 10 0 80 5 20 0 160 7 0 12 12 0 0 0 0"
    text_b = "   8       0 sda 15 0 120 6 30 0 400 9 1 15 16 0 0 0 0"
    delta = diskstats.parse(text_b)["sda"] - diskstats.parse(text_a)["sda"]
    assert delta.reads == 5
    assert delta.read_bytes == 40 * 512
    assert delta.write_bytes == 240 * 512
    assert delta.in_flight == 1


def test_diskstats_only_the_named_devices(tmp_path: Path) -> None:
    text = (
        "   8       0 sda 10 0 80 5 20 0 160 7 0 12 12 0 0 0 0\n"
        "   7       0 loop0 1 0 8 0 0 0 0 0 0 1 1 0 0 0 0\n"
        "   8       1 sda1 9 0 72 5 20 0 160 7 0 12 12 0 0 0 0\n"
    )
    assert sorted(diskstats.parse(text)) == ["loop0", "sda", "sda1"]
    assert sorted(diskstats.parse(text, {"sda1", "vdz"})) == ["sda1"]
    source = tmp_path / "diskstats"
    source.write_text(text)
    read = diskstats.read(source, ["loop0"])
    assert list(read) == ["loop0"] and read["loop0"].read_bytes == 8 * 512
    assert diskstats.read(source) == diskstats.parse(text)
