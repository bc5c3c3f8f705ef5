"""File-backed loop devices, through util-linux's losetup, and the identity of iolab's loop files.

A loop device is only ever detached after checking that its backing file is the very file iolab
created: loop numbers are reused, so a number alone proves nothing, and neither do a path and an
inode number (a filesystem hands a freed inode number to the next file at once). iolab marks the
file it creates with an extended attribute holding a random token recorded in its state, and
checks path, inode and token. (The device number of the backing file is not compared: on btrfs
and overlay filesystems stat() and the loop driver disagree about it.)
"""

from __future__ import annotations

import json
import os
import secrets
import stat
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from iolab.errors import RunFailed
from iolab.process import require, run

HOW = "install Debian's util-linux package"
DELETED = " (deleted)"
LIST_WAIT = 10.0  # seconds for `losetup --list`: it hangs on a loop device over a hung FUSE file
STAT_WAIT = 2.0  # seconds a stat of a backing file may take before it counts as not answering


@dataclass(frozen=True)
class Loop:
    """An attached loop device: ``/dev/loopN``, its major:minor and what it reads and writes."""

    path: str
    dev: tuple[int, int]
    backing_file: str
    backing_ino: int | None  # the backing file's inode number
    deleted: bool  # the backing file was unlinked while attached
    direct_io: bool

    @property
    def name(self) -> str:
        return Path(self.path).name


MARK = "user.iolab.testbed"  # the extended attribute on iolab's loop files


def mark(fd: int, token: str) -> bool:
    """Mark the file open as ``fd`` with ``token``; False where the filesystem has no xattrs
    (``up`` then refuses the directory: a file without the mark is never removed)."""
    try:
        os.setxattr(fd, MARK, token.encode())
    except OSError:
        return False
    return True


def takes_mark(directory: Path) -> bool:
    """True when files in ``directory`` take iolab's mark (tried on a file made for it)."""
    probe = directory / f".iolab-testbed-probe-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError:
        return False
    try:
        return mark(fd, "probe")
    finally:
        os.close(fd)
        probe.unlink(missing_ok=True)


def is_ours(path: Path, backing_id: tuple[int, int] | None, token: str) -> bool:
    """True when ``path`` is the file iolab made: a regular file carrying the same non-empty
    token in its mark and, once recorded, the same inode (a file without the mark is never
    iolab's)."""
    if not token:
        return False
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode):
            return False
        if backing_id is not None and st.st_ino != backing_id[1]:
            return False
        return os.getxattr(path, MARK, follow_symlinks=False) == token.encode()
    except OSError:
        return False


def _majmin(text: str) -> tuple[int, int] | None:
    major, sep, minor = text.strip().partition(":")
    if not sep or not major.strip().isdigit() or not minor.strip().isdigit():
        return None
    return (int(major), int(minor))


def stat_within(path: Path, wait: float) -> os.stat_result | str:
    """``os.stat(path)``, or why it failed: its error, or that it did not answer within ``wait``
    seconds. The stat runs on a thread of its own, so a file on a FUSE server that hangs holds
    that thread, not the caller."""
    got: list[os.stat_result | str] = []

    def probe() -> None:
        try:
            got.append(os.stat(path))
        except OSError as exc:
            got.append(exc.strerror or str(exc))

    thread = threading.Thread(target=probe, name=f"iolab-stat {path}", daemon=True)
    thread.start()
    thread.join(wait)
    return got[0] if got else f"no answer within {wait:g} s"


def _from_sysfs() -> list[Loop]:
    """Every attached loop device, from /sys/block, the backing file's inode from a stat of its
    path (None where it does not answer): what :func:`attached` falls back to when losetup
    hangs (the kernel asks the backing file for its inode, and a hung FUSE file never answers)."""
    loops = []
    for block in sorted(Path("/sys/block").glob("loop*")):
        try:
            back = (block / "loop" / "backing_file").read_text().strip()
            dev = _majmin((block / "dev").read_text())
            dio = (block / "loop" / "dio").read_text().strip() == "1"
        except OSError:
            continue  # not attached
        if dev is None or not back:
            continue
        deleted = back.endswith(DELETED)
        path = back.removesuffix(DELETED)
        st = None if deleted else stat_within(Path(path), STAT_WAIT)
        loops.append(
            Loop(
                path=f"/dev/{block.name}",
                dev=dev,
                backing_file=path,
                deleted=deleted,
                backing_ino=st.st_ino if isinstance(st, os.stat_result) else None,
                direct_io=dio,
            )
        )
    return loops


def attached() -> list[Loop]:
    """Every attached loop device of the machine."""
    losetup = require("losetup", HOW)
    argv = [losetup, "--json", "--list", "--output", "NAME,MAJ:MIN,BACK-FILE,BACK-INO,DIO"]
    try:
        done = run(argv, timeout=LIST_WAIT)
    except RunFailed as exc:
        if isinstance(exc.__cause__, subprocess.TimeoutExpired):
            return _from_sysfs()
        raise
    if not done.stdout.strip():
        return []
    loops = []
    for d in json.loads(done.stdout).get("loopdevices", []):
        dev = _majmin(str(d.get("maj:min", "")))
        ino = str(d.get("back-ino", ""))
        if dev is None:
            continue
        back = str(d.get("back-file") or "")
        loops.append(
            Loop(
                path=str(d["name"]),
                dev=dev,
                backing_file=back.removesuffix(DELETED),
                deleted=back.endswith(DELETED),
                backing_ino=int(ino) if ino.isdigit() else None,
                direct_io=d.get("dio") in (True, 1, "1"),
            )
        )
    return loops


def backed_by(
    path: Path,
    backing_id: tuple[int, int] | None,
    token: str,
    among: list[Loop] | None = None,
) -> list[Loop]:
    """The loop devices (of ``among``, default: all attached) whose backing file is iolab's
    file ``path`` (see :func:`is_ours`; a file unlinked while attached: path and inode)."""
    if backing_id is None:
        return []
    return [
        loop
        for loop in (attached() if among is None else among)
        if token
        and loop.backing_file == str(path)
        and loop.backing_ino == backing_id[1]
        and (loop.deleted or is_ours(path, backing_id, token))
    ]


def attach(path: Path, direct_io: bool) -> Loop:
    """Attach a free loop device to ``path`` (a file iolab created); returns what the kernel gave.

    With ``direct_io`` the loop device does O_DIRECT I/O to its file, so pages are not cached
    twice; when the kernel cannot (a filesystem without O_DIRECT), ``Loop.direct_io`` is False.
    """
    losetup = require("losetup", HOW)
    argv: list[str | Path] = [losetup, "--find", "--show"]
    if direct_io:
        argv.append("--direct-io=on")
    argv.append(path)
    done = run(argv)
    name = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    for loop in attached():
        if loop.path == name:
            return loop
    raise RunFailed(f"losetup attached {path} but {name or 'no device'} is not listed as attached")


def set_rotational(loop: Loop, rotational: bool) -> None:
    """Say whether the device rotates (the kernel and some engines tune for it)."""
    knob = Path("/sys/block") / loop.name / "queue" / "rotational"
    try:
        knob.write_text("1" if rotational else "0")
    except OSError as exc:
        raise RunFailed(f"cannot set {knob}: {exc.strerror}") from None


def rotational(name: str) -> bool | None:
    try:
        return (Path("/sys/block") / name / "queue" / "rotational").read_text().strip() == "1"
    except OSError:
        return None


def detach(loop: Loop) -> None:
    """Detach; a device still open elsewhere goes when it is closed (the kernel's autoclear)."""
    losetup = require("losetup", HOW)
    run([losetup, "--detach", loop.path])


def gone(detached: list[Loop], wait: float) -> bool:
    """Wait up to ``wait`` seconds until none of these loop devices is attached to its file."""
    deadline = time.monotonic() + wait
    while True:
        now = {(lp.path, lp.backing_ino) for lp in attached()}
        if not any((lp.path, lp.backing_ino) in now for lp in detached):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
