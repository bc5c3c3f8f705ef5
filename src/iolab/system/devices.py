"""Which mount and which block device stand behind a path.

Linux exposes this in /proc/self/mountinfo and /sys/dev/block; partitions are resolved to their
disk, and loop (backing file), device-mapper and md devices (their underlying disks) are described,
so that a result says what hardware it measured. A path on tmpfs or ramfs has no block device: it
is memory.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

MEMORY_FILESYSTEMS = frozenset({"tmpfs", "ramfs", "devtmpfs"})


@dataclass(frozen=True)
class Mount:
    mount_point: str
    fstype: str
    source: str
    options: str  # per-mount options (rw, noatime, ...)
    super_options: str  # filesystem options (data=ordered, discard, ...)
    dev: tuple[int, int]


@dataclass(frozen=True)
class BlockDevice:
    """The block device a filesystem sits on.

    ``name`` is the device whose /proc/diskstats line counts this filesystem's I/O (a partition,
    a loop, a dm or md device, or a whole disk); ``disk`` is the whole disk it belongs to.
    """

    name: str
    disk: str
    kind: str  # disk | partition | loop | dm | md
    size_bytes: int
    model: str | None = None
    rotational: bool | None = None
    scheduler: str | None = None
    logical_block_size: int | None = None
    physical_block_size: int | None = None
    backing_file: str | None = None
    dm_name: str | None = None
    slaves: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class PathDevice:
    """What stands behind one path: its mount, block device (None for memory) and fill level."""

    path: str
    mount: Mount
    device: BlockDevice | None
    total_bytes: int
    free_bytes: int

    @property
    def memory_backed(self) -> bool:
        return self.mount.fstype in MEMORY_FILESYSTEMS

    @property
    def fill_percent(self) -> float:
        if self.total_bytes == 0:
            return 0.0
        return 100.0 * (self.total_bytes - self.free_bytes) / self.total_bytes


def _unescape(text: str) -> str:
    """mountinfo escapes space, tab, newline and backslash as octal."""
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\" and i + 3 < len(text) and text[i + 1 : i + 4].isdigit():
            out.append(chr(int(text[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def parse_mountinfo(text: str) -> list[Mount]:
    mounts = []
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        if not sep:
            continue
        fields = left.split()
        rest = right.split()
        if len(fields) < 6 or len(rest) < 2:
            continue
        major, minor = (int(x) for x in fields[2].split(":"))
        super_opts = rest[2] if len(rest) > 2 else ""
        point, source = _unescape(fields[4]), _unescape(rest[1])
        mounts.append(Mount(point, rest[0], source, fields[5], super_opts, (major, minor)))
    return mounts


def mount_of(path: Path, mounts: list[Mount] | None = None) -> Mount:
    """The mount a path lives on: the longest mount point containing it (the last one mounted)."""
    if mounts is None:
        mounts = parse_mountinfo(Path("/proc/self/mountinfo").read_text())
    resolved = str(path.resolve())
    best: Mount | None = None
    for m in mounts:
        mp = m.mount_point
        inside = resolved == mp or resolved.startswith(mp.rstrip("/") + "/")
        if inside and (best is None or len(mp) >= len(best.mount_point)):
            best = m
    if best is None:
        raise FileNotFoundError(f"no mount contains {resolved}")
    return best


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _read_int(path: Path) -> int | None:
    text = _read(path)
    return int(text) if text is not None and text.lstrip("-").isdigit() else None


def _scheduler(text: str | None) -> str | None:
    if not text:
        return None
    for word in text.split():
        if word.startswith("[") and word.endswith("]"):
            return word[1:-1]
    return text


def block_device(dev: tuple[int, int], sys_root: Path = Path("/sys")) -> BlockDevice | None:
    """Describe the block device with this major:minor, or None when there is none."""
    node = sys_root / "dev" / "block" / f"{dev[0]}:{dev[1]}"
    if not node.exists():
        return None
    real = node.resolve()
    name = real.name
    is_partition = (real / "partition").exists()
    disk_dir = real.parent if is_partition else real
    disk = disk_dir.name
    if is_partition:
        kind = "partition"
    elif disk.startswith("loop"):
        kind = "loop"
    elif disk.startswith("dm-"):
        kind = "dm"
    elif disk.startswith("md"):
        kind = "md"
    else:
        kind = "disk"
    queue = disk_dir / "queue"
    model = _read(disk_dir / "device" / "model")
    driver = disk_dir / "device" / "driver"
    if model is None and driver.exists():
        # virtio and some others have no model string; the driver says what kind of device it is
        model = driver.resolve().name
    rotational = _read_int(queue / "rotational")
    slaves_dir = disk_dir / "slaves"
    slaves = tuple(sorted(p.name for p in slaves_dir.iterdir())) if slaves_dir.is_dir() else ()
    sectors = _read_int(real / "size") or 0
    return BlockDevice(
        name=name,
        disk=disk,
        kind=kind,
        size_bytes=sectors * 512,
        model=model,
        rotational=None if rotational is None else bool(rotational),
        scheduler=_scheduler(_read(queue / "scheduler")),
        logical_block_size=_read_int(queue / "logical_block_size"),
        physical_block_size=_read_int(queue / "physical_block_size"),
        backing_file=_read(disk_dir / "loop" / "backing_file"),
        dm_name=_read(disk_dir / "dm" / "name"),
        slaves=slaves,
    )


def describe(path: Path) -> PathDevice:
    """The mount, block device and fill level behind an existing path."""
    mount = mount_of(path)
    dev = mount.dev
    if dev[0] == 0 and mount.source.startswith("/dev/"):
        # btrfs and some others report an anonymous device number; the source names the real one
        try:
            rdev = os.stat(mount.source).st_rdev
            dev = (os.major(rdev), os.minor(rdev))
        except OSError:
            pass
    device = None if mount.fstype in MEMORY_FILESYSTEMS else block_device(dev)
    st = os.statvfs(path)
    return PathDevice(
        path=str(path.resolve()),
        mount=mount,
        device=device,
        total_bytes=st.f_blocks * st.f_frsize,
        free_bytes=st.f_bavail * st.f_frsize,
    )
