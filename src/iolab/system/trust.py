"""Whether a path another user could have written or swapped is one iolab may act on: the one
rule the testbed's state and the host's lock follow."""

from __future__ import annotations

import os
import stat


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
