"""Where generated data is kept between runs: ``$IOLAB_CACHE/<name>`` (default
``~/.cache/iolab/<name>``, ``$XDG_CACHE_HOME`` honoured), one directory per workload that
generates data (TPC-H, TPC-C), and the checks made before a run is recorded."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from iolab.errors import BadInput, IolabError, Unavailable
from iolab.ownership import can_write

CACHE_ENV = "IOLAB_CACHE"


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


@contextlib.contextmanager
def generating(root: Path, name: str, waiting: Callable[[], None]) -> Iterator[None]:
    """Held while one process makes the data ``name`` in ``root``: another process that wants
    the same data (a fleet's hosts on one machine, two commands at once) waits, after calling
    ``waiting``, and then finds it made instead of making it a second time. An exclusive
    ``flock`` on ``root/.NAME.lock``, a file left in the cache (removing it could let a third
    process lock a file the second has already opened)."""
    fd = os.open(root / f".{name}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            waiting()
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # the lock goes with the descriptor
