"""Let an unprivileged server reach directories below a private one, without touching permissions.

As root, iolab runs its servers as an unprivileged user (see :mod:`iolab.engines.server_process`).
A root user's clone usually sits below ``/root`` (mode 700), so neither the PostgreSQL binaries
inside its ``.venv`` nor data directories below the clone can be entered by that user. iolab
changes no permission of the user's own directories. Instead the server starts in a private mount
namespace of its own, in which each blocked ancestor (the topmost directory on the path that the
server user cannot enter) is covered by an empty tmpfs holding just the path down to each
directory the server needs, and that directory is bind-mounted back in place. The server sees
every directory at its usual path, with its usual owner and mode; nothing else below the blocked
ancestor is visible to it. The namespace is the server's alone: it disappears with the server's
last process, so a crash leaves no mount behind, and nobody else's view of the machine changes.

This module is also the small program that sets up such a namespace, run as root by
``unshare --mount --propagation private`` just before it execs the server::

    python -m iolab.system.reach --uid UID --gid GID --path DIR [--path DIR ...] -- PROGRAM ...
"""

from __future__ import annotations

import argparse
import ctypes
import os
import shutil
import stat
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

_MS_NOSUID = 0x2
_MS_NODEV = 0x4
_MS_BIND = 0x1000
_MS_REC = 0x4000


def can_enter(path: Path, uid: int, gid: int) -> bool:
    """True when a process of ``uid``/``gid`` (no supplementary groups) may search ``path``."""
    st = path.stat()
    if st.st_uid == uid:
        return bool(st.st_mode & stat.S_IXUSR)
    if st.st_gid == gid:
        return bool(st.st_mode & stat.S_IXGRP)
    return bool(st.st_mode & stat.S_IXOTH)


def blocked_ancestor(path: Path, uid: int, gid: int) -> Path | None:
    """The topmost directory above ``path`` that ``uid`` cannot enter, or None."""
    for parent in reversed(path.parents):
        if not can_enter(parent, uid, gid):
            return parent
    return None


def needs_view(paths: Iterable[Path], uid: int, gid: int) -> list[Path]:
    """The paths (absolute, resolved) that ``uid`` cannot reach as they are."""
    return [p for p in _outermost(paths) if blocked_ancestor(p, uid, gid) is not None]


def command(paths: Sequence[Path], uid: int, gid: int, argv: Sequence[str]) -> list[str]:
    """The command line, run as root, that runs ``argv`` in a view where ``uid`` reaches ``paths``.

    ``argv`` itself still has to switch to the user (setpriv): the view is made as root.
    """
    args = [sys.executable, "-m", "iolab.system.reach", "--uid", str(uid), "--gid", str(gid)]
    for path in paths:
        args += ["--path", str(path)]
    unshare = shutil.which("unshare") or "unshare"
    return [unshare, "--mount", "--propagation", "private", "--", *args, "--", *argv]


def _outermost(paths: Iterable[Path]) -> list[Path]:
    """Resolved paths, each given once, leaving out those inside another one."""
    resolved = sorted({p.resolve() for p in paths}, key=lambda p: len(p.parts))
    kept: list[Path] = []
    for path in resolved:
        if not any(path == k or k in path.parents for k in kept):
            kept.append(path)
    return kept


def _mount(source: str | None, target: Path, fstype: str | None, flags: int, data: str) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    rc = libc.mount(
        source.encode() if source is not None else None,
        os.fsencode(target),
        fstype.encode() if fstype is not None else None,
        ctypes.c_ulong(flags),
        data.encode() if data else None,
    )
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount on {target}: {os.strerror(err)}")


def set_up(paths: Sequence[Path], uid: int, gid: int) -> None:
    """In a fresh private mount namespace: make each of ``paths`` reachable for ``uid``."""
    wanted = _outermost(paths)
    covers = {blocked_ancestor(path, uid, gid) for path in wanted} - {None}
    # Hold each directory before its ancestor is covered: the bind mounts are made from these.
    held = [(path, os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)) for path in wanted]
    for cover in covers:  # never nested: each is the topmost blocked directory of its path
        assert cover is not None
        _mount("tmpfs", cover, "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=0755,size=64k")
    for path, fd in held:
        path.mkdir(mode=0o755, parents=True, exist_ok=True)
        _mount(f"/proc/self/fd/{fd}", path, None, _MS_BIND | _MS_REC, "")
        os.close(fd)


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m iolab.system.reach")
    parser.add_argument("--uid", type=int, required=True, help="the server user's uid")
    parser.add_argument("--gid", type=int, required=True, help="the server user's gid")
    parser.add_argument("--path", type=Path, action="append", default=[], help="a directory")
    parser.add_argument("program", nargs=argparse.REMAINDER, help="-- PROGRAM [ARG ...]")
    args = parser.parse_args(argv)
    program = args.program[1:] if args.program[:1] == ["--"] else args.program
    if not program:
        parser.error("give the program to run after --")
    try:
        set_up(args.path, args.uid, args.gid)
    except OSError as exc:
        print(f"iolab: cannot make the server's directories reachable: {exc}", file=sys.stderr)
        return 126
    os.chdir("/")
    os.execvp(program[0], program)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
