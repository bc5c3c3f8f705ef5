"""Making and mounting the filesystem of an emulated device.

mkfs runs with the options that keep the device honest as a benchmark target: ext4 initialises
its inode tables and journal at once (``lazy_itable_init=0,lazy_journal_init=0``) instead of
in a kernel thread that would write to the device during the first minutes of measurements, and
neither ext4 nor xfs discards the device at mkfs (a discard punches holes into the preallocated
loop file, which would then allocate again while measured). The user's ``mkfs_options`` come
after these, so they win where they overlap (an ``-E`` of theirs replaces iolab's ``-E``).
"""

from __future__ import annotations

from pathlib import Path

from iolab.errors import RunFailed
from iolab.process import require, run, tail
from iolab.system import launch
from iolab.system.devices import Mount, parse_mountinfo
from iolab.testbed.spec import DeviceSpec

MKFS_HOW = {
    "ext4": "install Debian's e2fsprogs package",
    "xfs": "install Debian's xfsprogs package (apt-get install xfsprogs)",
}
BASE_OPTIONS = {
    "ext4": ["-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0,nodiscard"],
    "xfs": ["-q", "-f", "-K"],
}


def mkfs_argv(spec: DeviceSpec, device: str) -> list[str]:
    """The mkfs command line for ``device``: iolab's options, then the user's."""
    base = list(BASE_OPTIONS[spec.filesystem])
    if spec.filesystem == "ext4" and "-E" in spec.mkfs_options:
        base = base[:2]  # mke2fs keeps only the last -E: theirs
    return [f"mkfs.{spec.filesystem}", *base, *spec.mkfs_options, device]


def _run_tied(argv: list[str | Path], timeout: float) -> None:
    """Run a command that is killed if iolab dies: a crashed ``up`` leaves no mkfs or mount
    working on the device behind it."""
    done = run(launch.command(argv, death_signal="KILL"), timeout=timeout, check=False)
    if done.returncode != 0:
        name = Path(str(argv[0])).name
        raise RunFailed(f"{name} failed (exit {done.returncode}): {tail(done.stderr)}")


def make(spec: DeviceSpec, device: str) -> None:
    mkfs = require(f"mkfs.{spec.filesystem}", MKFS_HOW[spec.filesystem])
    _run_tied([mkfs, *mkfs_argv(spec, device)[1:]], timeout=3600)


def check_tools(spec: DeviceSpec) -> None:
    """Refuse before anything is created when mkfs or mount is missing."""
    require(f"mkfs.{spec.filesystem}", MKFS_HOW[spec.filesystem])
    require("mount", "install Debian's mount package")
    require("umount", "install Debian's mount package")


def mount(spec: DeviceSpec, device: str, mount_point: Path) -> None:
    argv: list[str | Path] = [require("mount", "install Debian's mount package")]
    argv += ["-t", spec.filesystem]
    if spec.mount_options:
        argv += ["-o", ",".join(spec.mount_options)]
    _run_tied([*argv, device, mount_point], timeout=120)
    mount_point.chmod(0o755)  # the root of a fresh filesystem: servers must enter it


def mounted_at(mount_point: Path) -> Mount | None:
    """The mount on ``mount_point`` (the top one if several are stacked), or None."""
    mounts = parse_mountinfo(Path("/proc/self/mountinfo").read_text())
    found = [m for m in mounts if m.mount_point == str(mount_point)]
    return found[-1] if found else None


def unmount(mount_point: Path) -> None:
    run([require("umount", "install Debian's mount package"), mount_point], timeout=300)
