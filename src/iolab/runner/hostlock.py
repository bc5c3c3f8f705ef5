"""One run at a time on a host: the host's lock, held for the whole of each run.

Two iolab processes on one machine (two ``iolab run`` of one file, a run and an ``iolab
populate``) would otherwise measure each other: the runner shares an experiment's runs between
drivers, and this lock makes them take turns. It is an exclusive ``flock`` on
``/run/iolab/host.lock`` (root; another user: ``$XDG_RUNTIME_DIR/iolab``, else
``~/.local/state/iolab``; ``IOLAB_LOCK_DIR`` names another directory), taken before a run is
isolated (sync, drop caches, settle) and given back when it has ended (its cool-down included).
The kernel releases it when its process dies, however it dies, so a killed driver never leaves
the host locked. The file says who holds it (pid, command, since when) for ``iolab plan`` and
for the one who waits; it is read only from a directory, and as a file, that no one but root (or
the user running iolab) owns or can write.

A thread that holds the lock takes it again at no cost (a run inside a run); two threads of one
process take turns like two processes.
"""

from __future__ import annotations

import fcntl
import json
import os
import shlex
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from iolab.errors import IolabError
from iolab.events import EventSink, Phase
from iolab.ownership import process_alive
from iolab.redaction import redact
from iolab.system.trust import distrust

DIR_ENV = "IOLAB_LOCK_DIR"
ROOT_DIR = Path("/run/iolab")
FILE = "host.lock"


def lock_dir() -> Path:
    """The directory of the host's lock (see the module docstring)."""
    given = os.environ.get(DIR_ENV)
    if given:
        return Path(given).absolute()
    if os.geteuid() == 0:
        return ROOT_DIR
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    base = Path(runtime) if runtime else Path.home() / ".local" / "state"
    return base / "iolab"


def lock_path() -> Path:
    return lock_dir() / FILE


@dataclass(frozen=True)
class Holder:
    """Who holds the host's lock: a process, its command line (passwords redacted), and since
    when (UTC, ISO 8601)."""

    pid: int
    command: str
    since: str

    def describe(self) -> str:
        return f"pid {self.pid} ({self.command}) since {self.since}"


_held = threading.local()  # .depth: how many turns this thread is inside


def _check_safe(path: Path, what: str) -> None:
    st = os.lstat(path)
    fix = (
        f"iolab trusts its lock only where no one else can write: make it root's and not "
        f"writable by others (`chown root {path}; chmod go-w {path}`), or set {DIR_ENV} to a "
        "directory of your own"
    )
    why = distrust(st)
    if why is not None:
        raise IolabError(f"the host's lock {what} {path} {why}; {fix}")


def _open(create: bool) -> int | None:
    """The lock file, opened (None: it does not exist and ``create`` is false)."""
    directory = lock_dir()
    path = directory / FILE
    try:
        if create:
            directory.mkdir(mode=0o755, parents=True, exist_ok=True)
        _check_safe(directory, "directory")
        flags = os.O_RDWR | os.O_NOFOLLOW | (os.O_CREAT if create else 0)
        fd = os.open(path, flags, 0o644)
    except FileNotFoundError:
        if create:
            raise IolabError(f"cannot make the host's lock {path}: a directory vanished") from None
        return None
    except OSError as exc:
        raise IolabError(f"cannot open the host's lock {path}: {exc.strerror or exc}") from None
    try:
        _check_safe(path, "file")
    except BaseException:
        os.close(fd)
        raise
    return fd


def _read(fd: int) -> Holder | None:
    """Who the file says holds the lock; None between two turns (or what a killed holder
    left, before the next holder has written over it)."""
    try:
        doc = json.loads(os.pread(fd, 4096, 0) or b"null")
        found = Holder(int(doc["pid"]), str(doc["command"]), str(doc["since"]))
    except (OSError, ValueError, TypeError, KeyError):
        return None
    return found if process_alive(found.pid) else None


def holder() -> Holder | None:
    """Who holds the host's lock now; None when it is free. A holder that has not yet said
    who it is shows as pid 0."""
    fd = _open(create=False)
    if fd is None:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read(fd) or Holder(0, "another iolab process", "")
        return None  # free (and given back at once, by the close)
    finally:
        os.close(fd)


def _command() -> str:
    return redact(shlex.join(["iolab", *sys.argv[1:]]))


@contextmanager
def turn(events: EventSink) -> Iterator[float]:
    """Hold the host's lock for a run; yields the seconds it waited for it (0: it was free).
    While another process holds it, one event says who, and the wait goes on until it is
    given back (Ctrl-C ends the wait)."""
    depth = getattr(_held, "depth", 0)
    if depth:
        _held.depth = depth + 1
        try:
            yield 0.0
        finally:
            _held.depth = depth
        return
    fd = _open(create=True)
    assert fd is not None
    try:
        waited = 0.0
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            who = _read(fd)
            said = who.describe() if who is not None else "another iolab process"
            events(Phase(f"waiting for this host: one run at a time, and {said} runs on it"))
            began = time.monotonic()
            fcntl.flock(fd, fcntl.LOCK_EX)
            waited = time.monotonic() - began
        since = datetime.now(UTC).isoformat(timespec="seconds")
        record = json.dumps({"pid": os.getpid(), "command": _command(), "since": since})
        os.ftruncate(fd, 0)
        os.pwrite(fd, record.encode() + b"\n", 0)
        _held.depth = 1
        try:
            yield waited
        finally:
            _held.depth = 0
            with suppress(OSError):
                os.ftruncate(fd, 0)  # who held it goes with the turn
    finally:
        os.close(fd)  # gives the lock back
