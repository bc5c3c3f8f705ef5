"""The testbed's state file: exactly what iolab created, so ``down`` removes that and nothing else.

Where it lives: ``IOLAB_TESTBED_DIR`` if set; else ``/var/lib/iolab/testbed`` for root and
``$XDG_STATE_HOME/iolab/testbed`` (``~/.local/state/iolab/testbed``) for other users. The directory
holds ``state.json`` and ``mnt/NAME``, the mount points. Every step of ``up`` is recorded before
it is taken (the backing file's path, the mount point) and completed after (the loop device, the
backing file's inode), so a run killed at any moment leaves a state file that names all it made.

The state file is input like any other: iolab reads it only from a directory, and as a file,
that no one but root (or the user running iolab) owns or can write, and ``down`` checks each
thing it names before touching it (see :mod:`iolab.testbed.lifecycle`).
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from iolab.errors import IolabError
from iolab.system.trust import Untrusted, distrust
from iolab.testbed.spec import DeviceSpec

DIR_ENV = "IOLAB_TESTBED_DIR"
ROOT_DIR = Path("/var/lib/iolab/testbed")
STATE_FILE = "state.json"
MOUNTS = "mnt"
FORMAT = 1


def state_dir() -> Path:
    """The directory of the testbed's state and mount points (see the module docstring)."""
    given = os.environ.get(DIR_ENV)
    if given:
        return Path(given).absolute()
    if os.geteuid() == 0:
        return ROOT_DIR
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "iolab" / "testbed"


def is_default_dir() -> bool:
    """True when the state directory is iolab's own (removed when empty), not the user's."""
    return not os.environ.get(DIR_ENV)


@dataclass(frozen=True)
class DeviceRecord:
    """One device and what iolab made for it.

    ``backing_id`` is the backing file's (st_dev, st_ino) once created and ``token`` the random
    mark iolab put on it (empty where the filesystem takes no extended attributes): a loop
    device is detached and a file removed only when they still match. ``loop`` and ``dev``
    (major, minor) are set once the loop device is attached; ``mounted`` once iolab mounted it
    at ``mount_point``.
    """

    spec: DeviceSpec
    backing_file: Path
    mount_point: Path
    backing_id: tuple[int, int] | None = None
    token: str = ""
    loop: str | None = None
    dev: tuple[int, int] | None = None
    formatted: bool = False
    mounted: bool = False
    direct_io: bool | None = None  # what the kernel granted (None: not attached yet)
    created_by: int = 0  # pid of the iolab process that created it
    boot_id: str = ""

    def as_json(self) -> dict[str, Any]:
        return {
            "spec": self.spec.as_json(),
            "backing_file": str(self.backing_file),
            "mount_point": str(self.mount_point),
            "backing_id": list(self.backing_id) if self.backing_id else None,
            "token": self.token,
            "loop": self.loop,
            "dev": list(self.dev) if self.dev else None,
            "formatted": self.formatted,
            "mounted": self.mounted,
            "direct_io": self.direct_io,
            "created_by": self.created_by,
            "boot_id": self.boot_id,
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> DeviceRecord:
        bid = doc.get("backing_id")
        dev = doc.get("dev")
        return cls(
            spec=DeviceSpec.from_json(doc["spec"]),
            backing_file=Path(doc["backing_file"]),
            mount_point=Path(doc["mount_point"]),
            backing_id=(int(bid[0]), int(bid[1])) if bid else None,
            token=str(doc.get("token", "")),
            loop=doc.get("loop"),
            dev=(int(dev[0]), int(dev[1])) if dev else None,
            formatted=bool(doc.get("formatted", False)),
            mounted=bool(doc.get("mounted", False)),
            direct_io=doc.get("direct_io"),
            created_by=int(doc.get("created_by", 0)),
            boot_id=str(doc.get("boot_id", "")),
        )


@dataclass(frozen=True)
class CgroupRecord:
    """The cgroup iolab created for the limits: ``version`` v1 (blkio) or v2 (io)."""

    version: str
    path: Path

    def as_json(self) -> dict[str, str]:
        return {"version": self.version, "path": str(self.path)}


@dataclass(frozen=True)
class State:
    devices: Mapping[str, DeviceRecord] = field(default_factory=dict)
    cgroup: CgroupRecord | None = None

    def with_device(self, record: DeviceRecord) -> State:
        return replace(self, devices={**self.devices, record.spec.name: record})

    def without_device(self, name: str) -> State:
        return replace(self, devices={k: v for k, v in self.devices.items() if k != name})

    @property
    def empty(self) -> bool:
        return not self.devices and self.cgroup is None


class UnsafeState(Untrusted):
    """A state directory or file someone else could have written: iolab does not act on it."""


def check_safe(path: Path, what: str) -> None:
    """Refuse ``path`` (the state directory or file) unless it is owned by root or the user
    running iolab, writable by no one else, and not a symbolic link."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise UnsafeState(
            f"cannot read the testbed's state {what} {path}: {exc.strerror}"
        ) from None
    fix = (
        f"iolab acts only on a state that no one else can write: look at it, then make it "
        f"root's and not writable by others (`chown root {path}; chmod go-w {path}`), or set "
        f"{DIR_ENV} to a directory of your own"
    )
    why = distrust(st)
    if why is not None:
        raise UnsafeState(f"the testbed's state {what} {path} {why}; {fix}")


def load(directory: Path | None = None) -> State:
    """The recorded state; an empty one when there is no state file. A state directory or file
    others could write is refused (:class:`UnsafeState`)."""
    directory = directory or state_dir()
    path = directory / STATE_FILE
    check_safe(directory, "directory")
    check_safe(path, "file")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd) as f:
            doc = json.loads(f.read())
    except FileNotFoundError:
        return State()
    except (OSError, ValueError) as exc:
        raise IolabError(
            f"cannot read the testbed state {path} ({exc}); look at it, and remove it only if no "
            "device of it is mounted (`losetup -l`, `findmnt`)"
        ) from None
    try:
        cg = doc.get("cgroup")
        return State(
            devices={
                str(name): DeviceRecord.from_json(d) for name, d in doc.get("devices", {}).items()
            },
            cgroup=CgroupRecord(str(cg["version"]), Path(cg["path"])) if cg else None,
        )
    except (AttributeError, KeyError, TypeError, ValueError, IolabError) as exc:
        raise IolabError(
            f"the testbed state {path} is not one iolab wrote ({type(exc).__name__}: {exc}); "
            "look at it, and remove it only if no device of it is mounted (`losetup -l`, "
            "`findmnt`)"
        ) from None


def save(directory: Path, state: State) -> None:
    """Write the state atomically (a crash leaves the old or the new file, never half of one);
    an empty state removes the file."""
    path = directory / STATE_FILE
    if state.empty:
        path.unlink(missing_ok=True)
        return
    doc = {
        "format": FORMAT,
        "devices": {name: rec.as_json() for name, rec in state.devices.items()},
        "cgroup": state.cgroup.as_json() if state.cgroup else None,
    }
    tmp = directory / f".{STATE_FILE}.{os.getpid()}"
    with tmp.open("w") as out:
        json.dump(doc, out, indent=2)
        out.flush()
        os.fsync(out.fileno())
    tmp.replace(path)


def _make_dir(path: Path) -> None:
    """``path`` (and its parents), readable by the database server user."""
    if not path.exists():
        path.mkdir(parents=True, mode=0o755)
        path.chmod(0o755)  # umask may have taken bits away; servers must reach the mounts


def ensure_mounts(directory: Path) -> None:
    """Create ``mnt/``, the parent of the mount points; only under the lock (:func:`locked`),
    as a ``down`` of the last device removes it under the lock."""
    _make_dir(directory / MOUNTS)


def _same(fd: int, path: Path) -> bool:
    """True when the directory open as ``fd`` is still the one at ``path`` (a removed one has
    no links; its inode number may already be the new directory's)."""
    held = os.fstat(fd)
    if held.st_nlink == 0:
        return False
    try:
        now = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return (held.st_dev, held.st_ino) == (now.st_dev, now.st_ino)


@contextmanager
def locked(directory: Path) -> Iterator[None]:
    """Hold the testbed's lock: one ``up`` or ``down`` at a time on one state directory.

    Everything under the directory is made and removed while the lock is held. A ``down`` of
    the last device removes iolab's own state directory with the lock held: one who waited for
    the lock then holds it on a directory that is gone, and takes it again on the new one.
    """
    while True:
        _make_dir(directory)
        check_safe(directory, "directory")  # before anything in it is trusted or removed
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if _same(fd, directory):
                break
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # removed while we waited: lock the one there now
    try:
        for stale in directory.glob(f".{STATE_FILE}.*"):
            stale.unlink(missing_ok=True)  # from a writer killed in save(): writers hold the lock
        yield
    finally:
        os.close(fd)


def remove_dirs(directory: Path) -> None:
    """After the last device is down: remove mnt/ and, if it is iolab's own, the state directory
    and its parent ``iolab``, when they are empty (rmdir never removes content)."""
    own = [directory, directory.parent] if is_default_dir() else []
    for d in [directory / MOUNTS, *own]:
        with suppress(OSError):
            d.rmdir()
