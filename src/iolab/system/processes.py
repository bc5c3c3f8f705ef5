"""The processes of this machine, read from /proc: their state, parent, session and command
line, the tree under some of them, and stopping a set of them (SIGTERM, then SIGKILL after a
grace time). The one place iolab reads the process table (servers' sessions, the testbed's
nbdkit and nbdfuse, the fleet's Ray).

What iolab stops it finds by its own paths in their command lines, and their children, so
that a program of the same name that iolab did not start is left alone.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")


@dataclass(frozen=True)
class Process:
    pid: int
    ppid: int
    state: str  # R, S, D, Z (a zombie, waiting for its parent), ...
    session: int
    argv: tuple[str, ...]


def listing(proc: Path = PROC) -> list[Process]:
    """Every process readable now (one that ends meanwhile is left out)."""
    out = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            raw = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # state, ppid, pgrp, session, ...
        argv = tuple(a.decode(errors="replace") for a in raw.split(b"\0") if a)
        out.append(Process(int(entry.name), int(fields[1]), fields[0], int(fields[3]), argv))
    return out


def matching(test: Callable[[Process], bool], procs: Sequence[Process] | None = None) -> list[int]:
    """The pids of the processes ``test`` accepts."""
    return sorted(p.pid for p in (listing() if procs is None else procs) if test(p))


def with_children(roots: Iterable[int], procs: Sequence[Process]) -> list[int]:
    """``roots`` and every process under them."""
    children: dict[int, list[int]] = {}
    for p in procs:
        children.setdefault(p.ppid, []).append(p.pid)
    found: set[int] = set()
    todo = list(roots)
    while todo:
        pid = todo.pop()
        if pid in found:
            continue
        found.add(pid)
        todo += children.get(pid, [])
    return sorted(found)


def ancestors(pid: int, procs: Sequence[Process]) -> set[int]:
    """``pid`` and its parents up to the first process."""
    parent = {p.pid: p.ppid for p in procs}
    found = set()
    while pid > 0 and pid not in found:
        found.add(pid)
        pid = parent.get(pid, 0)
    return found


def stop(pids: Iterable[int], grace: float = 15.0) -> list[int]:
    """SIGTERM to each of ``pids``, then SIGKILL to those still there after ``grace`` seconds,
    and returns once every one has exited (a killed process takes a moment to go); returns the
    pids that had to be killed. Gone ones are skipped."""
    left = set(pids)
    for pid in sorted(left):
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while left and time.monotonic() < deadline:
        left = {pid for pid in left if alive(pid)}
        if left:
            time.sleep(0.1)
    killed = sorted(pid for pid in left if alive(pid))
    for pid in killed:
        _signal(pid, signal.SIGKILL)
    deadline = time.monotonic() + KILLED_WAIT
    while time.monotonic() < deadline and any(alive(pid) for pid in killed):
        time.sleep(0.02)
    return killed


KILLED_WAIT = 30.0  # at most this long for SIGKILLed processes to exit (D state: a disk's I/O)


def open_files(pid: int) -> list[str]:
    """The paths ``pid`` has open (its file descriptors' targets; empty when it is gone or not
    readable)."""
    fds = PROC / str(pid) / "fd"
    try:
        names = os.listdir(fds)
    except OSError:
        return []
    found = []
    for fd in names:
        with contextlib.suppress(OSError):
            found.append(os.readlink(fds / fd))
    return found


def environ(pid: int) -> dict[str, str]:
    """The environment ``pid`` was started with (empty when it is gone or not readable)."""
    try:
        raw = (PROC / str(pid) / "environ").read_bytes()
    except OSError:
        return {}
    pairs = (item.decode(errors="replace").partition("=") for item in raw.split(b"\0") if item)
    return {key: value for key, sep, value in pairs if sep}


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # gone meanwhile
        os.kill(pid, sig)


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie or a dead task counts as gone: it only waits for its
    parent)."""
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2 :].split()[0] not in ("Z", "X")
