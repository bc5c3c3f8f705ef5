"""One run at a time on a host: the host's lock, held for the whole of each run.

Two iolab processes on one machine (two ``iolab run`` of one file, a run and an ``iolab
populate``) would otherwise measure each other: the runner shares an experiment's runs between
drivers, and this lock makes them take turns. It is an exclusive ``flock`` on
``/run/iolab/host.lock`` (root; another user: ``$XDG_RUNTIME_DIR/iolab``, else
``~/.local/state/iolab``; ``IOLAB_LOCK_DIR`` names another directory), taken before a run is
isolated (sync, drop caches, settle) and given back when it has ended (its cool-down included).
The kernel releases it when its process dies, however it dies, so a killed driver never leaves
the host locked. The file says who holds it (pid, command, since when) for ``iolab plan`` and
for the one who waits. No one else can take it: the directory is root's (or the user's
running iolab) and mode 0700, the file 0600, both checked on each use and never followed
through a link (an iolab that made them wider had ``nobody`` hold every run off with a
read-only ``flock``). A holder that wrote no record of itself is named from the kernel's table
of locks (``/proc/locks``), with a way out.

A thread that holds the lock takes it again at no cost (a run inside a run); two threads of one
process take turns like two processes.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import shlex
import stat
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from iolab.events import EventSink, Phase
from iolab.ownership import process_alive
from iolab.redaction import redact
from iolab.system.trust import Untrusted, distrust, private_dir

DIR_ENV = "IOLAB_LOCK_DIR"
ROOT_DIR = Path("/run/iolab")
FILE = "host.lock"
LOCKS = Path("/proc/locks")  # the kernel's table of locks: who holds one, who waits


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
    when (UTC, ISO 8601). ``identified`` False: a process that wrote no iolab record of itself
    in the lock (not an iolab run; its pid and command from the kernel's table of locks, None
    and "" when the kernel does not say)."""

    pid: int | None
    command: str
    since: str
    identified: bool = True

    def describe(self) -> str:
        if self.identified:
            return f"pid {self.pid} ({self.command}) since {self.since}"
        if self.pid is None:
            return "a process iolab cannot identify (it wrote no record of itself in the lock)"
        return (
            f"pid {self.pid} ({self.command or 'command unknown'}), which wrote no record of "
            "itself in the lock"
        )

    def way_out(self, path: Path) -> str:
        """What to do about a holder that is not an iolab run ("": it is one, wait for it)."""
        if self.identified:
            return ""
        if self.pid is None:
            return (
                f"`fuser -v {path}` names the processes that have it open; end the one that "
                "should not hold it"
            )
        return f"if it is not an iolab run, end it (`kill {self.pid}`) and the runs go on"


@dataclass(frozen=True)
class Turns:
    """Who holds the host's lock and who waits for it, by pid, as the kernel's table of locks
    (``/proc/locks``) says."""

    holding: frozenset[int]
    waiting: frozenset[int]


_held = threading.local()  # .depth: how many turns this thread is inside

PRIVATE = (
    "iolab keeps its lock where no one else can reach it: a directory of root's (or yours) of "
    "mode 0700 and a file of mode 0600"
)


def _open(create: bool) -> int | None:
    """The lock file, opened and checked (None: it does not exist and ``create`` is false).

    Its directory is opened without following a link and must be root's (or the user's) and
    0700, the file in it a regular file of theirs, 0600: no other user can open it, so none can
    hold the lock. A directory and a file that an iolab which made them wider left behind are
    narrowed (the default directory only: a directory named by ``IOLAB_LOCK_DIR`` is the
    user's, refused instead). Checked on each use."""
    directory = lock_dir()
    path = directory / FILE
    fix = f"{PRIVATE} (`chmod 700 {directory}`), or set {DIR_ENV} to a directory of your own"
    try:
        dir_fd = private_dir(
            directory,
            "the host's lock directory",
            fix,
            create=create,
            tighten=not os.environ.get(DIR_ENV),
        )
    except OSError as exc:
        raise Untrusted(
            f"cannot make the host's lock directory {directory}: {exc.strerror or exc}"
        ) from None
    if dir_fd is None:
        return None
    try:
        flags = os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
        fd = os.open(FILE, flags | (os.O_CREAT if create else 0), 0o600, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        why = "is a symbolic link" if exc.errno == errno.ELOOP else "cannot be opened"
        raise Untrusted(
            f"the host's lock {path} {why} ({exc.strerror}); {PRIVATE}: remove it if no "
            f"iolab runs (`fuser -v {path}`)"
        ) from None
    finally:
        os.close(dir_fd)
    try:
        _check_file(fd, path)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _check_file(fd: int, path: Path) -> None:
    """Refuse an opened lock file that is not a regular file of root's (or the user's); narrow
    one of a wider mode (an earlier iolab made it 0644) to 0600."""
    st = os.fstat(fd)
    why = "is not a regular file" if not stat.S_ISREG(st.st_mode) else distrust(st)
    if why is None and st.st_mode & 0o077:
        try:
            os.fchmod(fd, 0o600)
        except OSError as exc:
            why = f"has mode {stat.S_IMODE(st.st_mode):04o} and cannot be made 0600 ({exc})"
    if why is not None:
        raise Untrusted(
            f"the host's lock {path} {why}; {PRIVATE}: look at it, and remove it if no iolab "
            f"runs (`fuser -v {path}`)"
        )


def _record(fd: int) -> Holder | None:
    """Who the file says holds the lock; None between two turns (or what a killed holder
    left, before the next holder has written over it)."""
    try:
        doc = json.loads(os.pread(fd, 4096, 0) or b"null")
        found = Holder(int(doc["pid"]), str(doc["command"]), str(doc["since"]))
    except (OSError, ValueError, TypeError, KeyError):
        return None
    return found


def _turns(fd: int | None) -> Turns | None:
    """Who holds the lock open as ``fd`` and who waits for it, from ``/proc/locks`` (None: it
    cannot be read; ``fd`` None: there is no lock file, so no one)."""
    inode = ""
    if fd is not None:
        st = os.fstat(fd)
        inode = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    holding: set[int] = set()
    waiting: set[int] = set()
    try:
        with open(LOCKS, encoding="ascii", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:
        words = line.split()[1:]  # "3:" "->"? "FLOCK" "ADVISORY" "WRITE" pid dev:inode ...
        blocked = bool(words) and words[0] == "->"
        words = words[1:] if blocked else words
        if inode and len(words) >= 5 and words[0] == "FLOCK" and words[4] == inode:
            with suppress(ValueError):
                pid = int(words[3])
                if pid > 0:
                    (waiting if blocked else holding).add(pid)
    return Turns(frozenset(holding), frozenset(waiting))


def _cmdline(pid: int) -> str:
    """The command line of process ``pid`` as one printable line, passwords redacted ("": it
    cannot be read)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    words = raw.decode(errors="replace").split("\0")[:-1] or [raw.decode(errors="replace")]
    text = redact(shlex.join(words))
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return text if len(text) <= 200 else text[:199] + "…"


def _holder(fd: int, turns: Turns | None) -> Holder:
    """Who holds the lock open as ``fd``, known to be held: the process its record names, if
    it is alive and (as far as the kernel says) holds it; else the process the kernel says
    holds it, unidentified."""
    record = _record(fd)
    holding = turns.holding if turns is not None else frozenset()
    if (
        record is not None
        and record.pid is not None
        and process_alive(record.pid)
        and (not holding or record.pid in holding)
    ):
        return record
    pid = min(holding) if holding else None
    return Holder(pid, _cmdline(pid) if pid else "", "", identified=False)


def holder() -> Holder | None:
    """Who holds the host's lock now; None when it is free."""
    return status()[0]


def status() -> tuple[Holder | None, Turns | None]:
    """Who holds the host's lock now (None: it is free), and the pids that hold it and wait
    for it (None: the kernel does not say)."""
    fd = _open(create=False)
    if fd is None:
        return None, _turns(None)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            turns = _turns(fd)
            return _holder(fd, turns), turns
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None, _turns(fd)
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
            who = _holder(fd, _turns(fd))
            if who.identified:
                said = f"waiting for this host: one run at a time, and {who.describe()} runs on it"
            else:
                said = (
                    f"waiting for this host: its lock {lock_path()} is held by "
                    f"{who.describe()}; {who.way_out(lock_path())}"
                )
            events(Phase(said))
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
