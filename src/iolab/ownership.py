"""Names that mark what iolab created, so that it removes only its own leftovers.

Everything iolab creates inside a user's directory (a disk test file, an engine's instance
directory) is named ``.iolab-<kind>-<pid>-<boot>-<token>``. A later run on the same directory
removes such entries whose creating process is gone (killed before it could clean up) and that
are iolab's own by owner too, and nothing else: in a world-writable directory (``/tmp``,
``/var/tmp``) anyone can make an entry with that name, so an entry is removed only if it
(``lstat``: a symbolic link is itself, never its target) belongs to this process's user or to the
user iolab hands its directories to (the server user, :mod:`iolab.engines.server_process`).
Another's is left in place and said once. A directory is removed with ``shutil.rmtree``, which
walks it by file descriptor and never follows a symbolic link inside it.
"""

from __future__ import annotations

import os
import pwd
import re
import secrets
import shutil
import stat
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path

from iolab.events import EventSink, Warning, discard

_PATTERN = re.compile(
    r"^\.iolab-(?P<kind>[a-z0-9]+)-(?P<pid>\d+)-(?P<boot>[0-9a-f]{8})-[0-9a-f]{8}$"
)


def boot_id() -> str:
    """This boot's id: a pid only names the same process within one boot."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _boot_tag() -> str:
    return (boot_id().replace("-", "") or "0" * 8)[:8]


def owned_name(kind: str) -> str:
    """A fresh name for something of ``kind`` this process creates."""
    if not re.fullmatch(r"[a-z0-9]+", kind):
        raise ValueError(f"kind must be lowercase letters and digits: {kind!r}")
    return f".iolab-{kind}-{os.getpid()}-{_boot_tag()}-{secrets.token_hex(4)}"


def owned_kind(path: Path) -> str | None:
    """The kind of an entry named by :func:`owned_name` (``populate`` for a scratch
    directory), or None for any other name."""
    m = _PATTERN.match(path.name)
    return m.group("kind") if m else None


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def made_by(path: Path, kind: str) -> int | None:
    """The pid of the process of this boot that made an entry of ``kind`` named by
    :func:`owned_name`; None for any other name, or one of another boot."""
    m = _PATTERN.match(path.name)
    if not m or m.group("kind") != kind or m.group("boot") != _boot_tag():
        return None
    return int(m.group("pid"))


def is_orphan(path: Path, kind: str) -> bool:
    """True for an entry named by :func:`owned_name` whose creating process is gone."""
    m = _PATTERN.match(path.name)
    if not m or m.group("kind") != kind:
        return False
    if m.group("boot") != _boot_tag():
        return True  # created before the last reboot
    pid = int(m.group("pid"))
    return pid != os.getpid() and not process_alive(pid)


_SAID: set[Path] = set()  # another user's entries already said, each once per process


def orphans(
    directory: Path, kind: str, owners: Collection[int] = (), events: EventSink = discard
) -> list[tuple[Path, os.stat_result]]:
    """The orphans of ``kind`` in ``directory`` that iolab made, with their ``lstat``: owned by
    this process's user or one of ``owners`` (uids iolab hands what it makes to). One of another
    owner has iolab's name only: it is left out, and said once on ``events``."""
    found: list[tuple[Path, os.stat_result]] = []
    try:
        entries = list(directory.iterdir())
    except OSError:
        return found
    for entry in entries:
        if not is_orphan(entry, kind):
            continue
        try:
            st = entry.lstat()
        except OSError:
            continue  # gone meanwhile
        if st.st_uid in {os.geteuid(), *owners}:
            found.append((entry, st))
        elif entry not in _SAID:
            _SAID.add(entry)
            events(
                Warning(
                    f"{entry} has iolab's name but another user's owner ({_user(st.st_uid)}): "
                    "not iolab's, left in place"
                )
            )
    return found


def _user(uid: int) -> str:
    try:
        return f"{pwd.getpwuid(uid).pw_name}, uid {uid}"
    except KeyError:
        return f"uid {uid}"


def reap(
    directory: Path, kind: str, owners: Collection[int] = (), events: EventSink = discard
) -> list[Path]:
    """Remove the orphans of ``kind`` in ``directory`` that iolab made (:func:`orphans`);
    returns what was removed."""
    removed: list[Path] = []
    for entry, st in orphans(directory, kind, owners, events):
        if stat.S_ISDIR(st.st_mode):
            shutil.rmtree(entry, ignore_errors=True)  # by fd: a link inside goes, not its target
        else:
            entry.unlink(missing_ok=True)  # a link: itself, not its target
        removed.append(entry)
    return removed


@contextmanager
def owned_dir(
    parent: Path, kind: str, mode: int = 0o700, events: EventSink = discard
) -> Iterator[Path]:
    """A fresh directory of ``kind`` in ``parent`` (named by :func:`owned_name`, ``mode``),
    removed afterwards; those of ``kind`` a killed iolab left there go first (:func:`reap`), and
    nothing else."""
    reap(parent, kind, events=events)
    path = parent / owned_name(kind)
    path.mkdir(mode=0o700)
    path.chmod(mode)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def can_write(directory: Path) -> str | None:
    """None if a file can really be created in ``directory``, else the reason it cannot.

    os.access says yes to root even on a read-only mount or an immutable directory: try it.
    """
    probe = directory / owned_name("probe")
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        return exc.strerror or str(exc)
    os.close(fd)
    probe.unlink(missing_ok=True)
    return None


def remove(paths: list[Path]) -> list[Path]:
    """Remove what iolab created (files, directories, symlinks: not their targets), newest first.

    Returns the paths that could not be removed (already gone counts as removed).
    """
    left: list[Path] = []
    for path in reversed(paths):
        try:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)
        except FileNotFoundError:
            pass
        except OSError:
            left.append(path)
    return list(reversed(left))
