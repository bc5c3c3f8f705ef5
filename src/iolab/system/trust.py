"""Whether a path another user could have written or swapped is one iolab may act on: the one
rule the testbed's state and the host's lock follow."""

from __future__ import annotations

import errno
import os
import stat
from contextlib import suppress
from pathlib import Path

from iolab.errors import IolabError


class Untrusted(IolabError):
    """A path another user could have written, swapped or used: iolab does not act on it."""

    exit_code = 2


def distrust(st: os.stat_result) -> str | None:
    """Why a path with this ``lstat`` cannot be trusted (None: it can): a symbolic link, owned by
    someone other than root or this user, or writable by group or others. Said as the end of a
    sentence whose subject is the path ("... is a symbolic link")."""
    if stat.S_ISLNK(st.st_mode):
        return "is a symbolic link"
    if st.st_uid not in (0, os.geteuid()):
        return f"is owned by uid {st.st_uid}"
    if st.st_mode & 0o022:
        return f"is writable by others (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def private_dir(path: Path, what: str, fix: str, *, create: bool, tighten: bool) -> int | None:
    """The directory ``path`` opened (a file descriptor; the caller closes it), checked as it is
    open: a directory, not a link, root's or this user's, that no one else can enter (mode
    0700). With ``create`` it is made (0700) when missing; else None when it is missing. A
    wider mode is narrowed to 0700 when ``tighten`` (a directory iolab made, by an iolab that
    made it wider), else refused. Refusals are :class:`Untrusted`, one line: ``what`` and the
    path, why, then ``fix``."""

    def refuse(why: str) -> Untrusted:
        return Untrusted(f"{what} {path} {why}; {fix}")

    if create:
        path.parent.mkdir(parents=True, exist_ok=True)
        with suppress(FileExistsError):
            os.mkdir(path, 0o700)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        if create:
            raise refuse("vanished as it was made") from None
        return None
    except OSError as exc:
        if exc.errno in (errno.ENOTDIR, errno.ELOOP):
            kind = "is a symbolic link" if os.path.islink(path) else "is not a directory"
            raise refuse(kind) from None
        raise refuse(f"cannot be opened ({exc.strerror})") from None
    try:
        st = os.fstat(fd)
        why = distrust(st)
        if why is not None:
            raise refuse(why)
        mode = stat.S_IMODE(st.st_mode)
        if mode & 0o077:
            if not tighten:
                raise refuse(f"can be entered by others (mode {mode:04o}), it must be 0700")
            try:
                os.fchmod(fd, 0o700)
            except OSError as exc:
                raise refuse(
                    f"has mode {mode:04o} and cannot be made 0700 ({exc.strerror})"
                ) from None
    except BaseException:
        os.close(fd)
        raise
    return fd
