"""Where generated data is kept between runs: ``$IOLAB_CACHE/<name>`` (default
``~/.cache/iolab/<name>``, ``$XDG_CACHE_HOME`` honoured), one directory per workload that
generates data (TPC-H, TPC-C), and the checks made before a run is recorded.

A data set is a directory of the cache (``w1``, ``sf0.01``) holding one ``<table>.csv`` per
table and ``manifest.json``, which lists each file's bytes and SHA-256. The cache is trusted as
the host's lock is (:func:`iolab.system.trust.distrust`): its directory, each data set's
directory and each of its files must be root's or the user's own, writable by no one else, and
not a symbolic link; each is checked whenever it is used, and anything else is refused in one
line, never followed, never removed. Before a load the files are checked against their
manifest (sizes, then checksums): data that differ (edited, truncated), or a manifest without
checksums (an older iolab's), is removed, only what iolab made in it, and said so; the caller
then generates it again.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import stat
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from iolab.errors import BadInput, IolabError, Unavailable
from iolab.events import EventSink, Phase
from iolab.ownership import can_write
from iolab.system.trust import distrust
from iolab.units import format_bytes

CACHE_ENV = "IOLAB_CACHE"
MANIFEST = "manifest.json"
BLOCK_BYTES = 1 << 20  # read at a time when checksumming
T = TypeVar("T")


class UntrustedCache(IolabError):
    """A path of the data cache someone else could have written: iolab does not use it."""

    exit_code = 2


def _untrusted(path: Path, why: str) -> UntrustedCache:
    return UntrustedCache(
        f"the data cache's {path} {why}; iolab uses only data no one else can write: look at "
        f"it, then remove it (iolab generates the data again) or make it yours and not "
        f"writable by others, or set {CACHE_ENV} to a directory of your own"
    )


def trusted(path: Path) -> os.stat_result | None:
    """``path``'s ``lstat`` (None: it does not exist); :class:`UntrustedCache` when someone
    other than root or this user owns it or can write it, or it is a symbolic link."""
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):  # a file above it: the pre-flight says so
        return None
    except OSError as exc:
        raise _untrusted(path, f"cannot be read ({exc.strerror})") from None
    why = distrust(st)
    if why is not None:
        raise _untrusted(path, why)
    return st


def _open_trusted(path: Path) -> int:
    """A regular file of the cache opened for reading, never through a link, checked on the
    descriptor (FileNotFoundError when it is not there)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if stat.S_ISLNK(os.lstat(path).st_mode):
            raise _untrusted(path, "is a symbolic link") from None
        raise _untrusted(path, f"cannot be read ({exc.strerror})") from None
    st = os.fstat(fd)
    why = distrust(st) or (None if stat.S_ISREG(st.st_mode) else "is not a regular file")
    if why is not None:
        os.close(fd)
        raise _untrusted(path, why)
    return fd


def read_trusted(path: Path) -> bytes:
    """A file of the cache, read as :func:`trusted` allows (FileNotFoundError: absent)."""
    with os.fdopen(_open_trusted(path), "rb") as f:
        return f.read()


def sha256(path: Path) -> str:
    """The SHA-256 of a file of the cache, read as :func:`trusted` allows."""
    digest = hashlib.sha256()
    with os.fdopen(_open_trusted(path), "rb") as f:
        while block := f.read(BLOCK_BYTES):
            digest.update(block)
    return digest.hexdigest()


def csv_name(table: str) -> str:
    return f"{table}.csv"


def create(path: Path) -> BinaryIO:
    """A new file of the cache, at most mode 0644 whatever the umask (a file others can write
    is refused on its next use)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    return os.fdopen(os.open(path, flags, 0o644), "wb")


def write_manifest(directory: Path, doc: Mapping[str, Any]) -> None:
    with create(directory / MANIFEST) as f:
        f.write((json.dumps(doc, indent=2) + "\n").encode())


def manifest(directory: Path) -> dict[str, Any]:
    """A data set's manifest, read as :func:`trusted` allows (ValueError: not a manifest)."""
    doc = json.loads(read_trusted(directory / MANIFEST))
    if not isinstance(doc, dict):
        raise ValueError("not an object")
    return doc


def lock_path(target: Path) -> Path:
    """The lock of :func:`made_once` for the data at ``target``."""
    return target.parent / f".{target.name}.lock"


def data_set(
    directory: Path, tables: Sequence[str], current: Callable[[Mapping[str, Any]], bool]
) -> dict[str, Any] | None:
    """The manifest of the data set in ``directory``: None when there is none, or it is not
    this iolab's (``current`` says no, or it lists no bytes and checksum of a table). The cache's
    directory, the data set's lock, directory, manifest and files are checked first, present or
    not, stale or not (:class:`UntrustedCache`)."""
    trusted(directory.parent)
    trusted(lock_path(directory))
    st = trusted(directory)
    if st is None:
        return None
    if not stat.S_ISDIR(st.st_mode):
        raise _untrusted(directory, "is not a directory")
    for table in tables:
        trusted(directory / csv_name(table))
    try:
        doc = manifest(directory)
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return None  # a manifest cut short: stale, replaced
    sizes, sums = doc.get("bytes"), doc.get("sha256")
    if not current(doc) or not isinstance(sizes, dict) or not isinstance(sums, dict):
        return None
    if any(t not in sizes or t not in sums for t in tables):
        return None
    return doc


def differs(
    directory: Path, doc: Mapping[str, Any], tables: Sequence[str], checksums: bool
) -> str | None:
    """How the data set's files differ from its manifest (a file missing, its size, with
    ``checksums`` its SHA-256), or None when they agree."""
    for table in tables:
        path = directory / csv_name(table)
        st = trusted(path)
        if st is None or not stat.S_ISREG(st.st_mode):
            return f"{path.name} is missing"
        want = doc["bytes"][table]
        if st.st_size != want:
            return (
                f"{path.name} holds {format_bytes(st.st_size)} ({st.st_size:,} bytes), its "
                f"manifest {want:,} bytes"
            )
    if checksums:
        for table in tables:
            path = directory / csv_name(table)
            if sha256(path) != doc["sha256"][table]:
                return f"{path.name} differs from its manifest's SHA-256"
    return None


def discard(directory: Path, tables: Sequence[str], own: Sequence[str], why: str) -> None:
    """Remove a data set iolab made whose files are not what its manifest says (``why``):
    its CSV files, its manifest and ``own`` (other files iolab writes there), each checked
    first, then the directory. A directory that holds anything else is kept and refused."""
    names = [csv_name(t) for t in tables] + [MANIFEST, *own]
    for name in names:
        path = directory / name
        if trusted(path) is not None:
            path.unlink(missing_ok=True)
    try:
        directory.rmdir()
    except FileNotFoundError:
        pass
    except OSError:
        others = sorted(p.name for p in directory.iterdir())
        shown = ", ".join(others[:3]) + (", ..." if len(others) > 3 else "")
        raise IolabError(
            f"the data in {directory} were not what iolab generated ({why}); iolab removed "
            f"its own files but the directory holds others it did not make ({shown}): move "
            "them away, then run again"
        ) from None


def cache_root(name: str) -> Path:
    """``$IOLAB_CACHE/<name>`` or ``~/.cache/iolab/<name>``."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env) / name
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "iolab" / name


def _existing_ancestor(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def free_bytes(path: Path) -> int:
    """Bytes available to this user on the filesystem that holds (or would hold) ``path``."""
    st = os.statvfs(_existing_ancestor(path))
    return st.f_bavail * st.f_frsize


def check_cache(root: Path, what: str) -> None:
    """Refuse, before a run is recorded, a cache directory iolab cannot create or write;
    ``what``: whose data it holds, for the message ("TPC-H")."""
    trusted(root)
    existing = _existing_ancestor(root)
    if not existing.is_dir():
        raise unusable(root, what, f"{existing} is not a directory")
    reason = can_write(existing)
    if reason is not None:
        raise unusable(root, what, f"no file can be created in {existing} ({reason})")


def unusable(root: Path, what: str, reason: str) -> IolabError:
    """The cache at ``root`` cannot be used: naming IOLAB_CACHE only when it is set."""
    custom = os.environ.get(CACHE_ENV)
    if custom:
        return BadInput(CACHE_ENV, custom, f"give a directory iolab can create and write: {reason}")
    return Unavailable(
        f"the {what} data cache {root}",
        f"{reason}; set {CACHE_ENV} to a directory iolab can create and write",
    )


def made_once(
    target: Path,
    what: str,
    events: EventSink,
    found: Callable[[], T | None],
    make: Callable[[], T],
) -> T:
    """The data at ``target`` (``what``: its name for the user): ``found()`` when another
    process made it meanwhile, else ``make()``, one process at a time. Another process that
    wants the same data (a fleet's hosts on one machine, two commands at once) waits, saying
    so, and then finds it made instead of making it a second time. An exclusive ``flock`` on
    ``.NAME.lock`` beside ``target``, a file left in the cache (removing it could let a third
    process lock a file the second has already opened)."""
    path = lock_path(target)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    except OSError as exc:
        trusted(path)  # a symbolic link: said as such
        raise _untrusted(path, f"cannot be opened ({exc.strerror})") from None
    try:
        why = distrust(os.fstat(fd))  # another user's lock could hold this one off forever
        if why is not None:
            raise _untrusted(path, why)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            events(Phase(f"waiting for another iolab process generating {what}"))
            fcntl.flock(fd, fcntl.LOCK_EX)
        done = found()
        if done is not None:  # made by the process this one waited for
            events(Phase(f"using {what} just generated by another iolab process"))
            return done
        return make()
    finally:
        os.close(fd)  # the lock goes with the descriptor
