"""How iolab starts the programs that work for it: tied to iolab's life, as the right user, with
the directories they need in reach.

**Tied to iolab.** A server, initdb, fio or mkfs must not outlive iolab, even when iolab is killed
with SIGKILL. Each is started through this module's small program, which sets a parent-death
signal on itself and then checks that its parent is still iolab: a parent that died before the
signal was set (while this program was starting) is caught by that check, so no moment is left in
which iolab can die unnoticed. The signal survives the final ``exec`` of the program.

**As the server user.** As root, servers run as an unprivileged user (see
:mod:`iolab.engines.server_process`); the switch happens here, after which the parent-death signal
is set again (the kernel clears it when the user changes) and the parent checked again.

**In reach.** A root user's clone usually sits below ``/root`` (mode 700), so neither the
PostgreSQL binaries inside its ``.venv`` nor data directories below the clone can be entered by
the server user. iolab changes no permission of the user's own directories. Instead the server
starts in a private mount namespace of its own, in which each blocked ancestor (the topmost
directory on the path that the server user cannot enter) is covered by an empty tmpfs holding just
the path down to each directory the server needs, and that directory is bind-mounted back in
place. The server sees every directory at its usual path, with its usual owner and mode; nothing
else below the blocked ancestor is visible to it. The namespace is the server's alone: it
disappears with the server's last process, so a crash leaves no mount behind, and nobody else's
view of the machine changes.

**In the run's cgroup.** A server of a capped run (``--memory``, ``--cpus``) writes itself into
each directory of the run's cgroup (:mod:`iolab.system.cgroups`) before anything else, as root:
its children (a postmaster's backends) are born inside.

The program is this very file, run by path with ``python -I -S`` (only the standard library, so
that it starts in a few tens of milliseconds), under ``unshare --mount --propagation private``
when a view is needed::

    python -I -S launch.py --parent PID --death-signal SIG [--uid UID --gid GID]
                           [--path DIR ...] [--cgroup DIR ...] -- PROGRAM [ARG ...]
"""

from __future__ import annotations

import argparse
import ctypes
import os
import shutil
import signal
import stat
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

_PR_SET_PDEATHSIG = 1
_MS_NOSUID = 0x2
_MS_NODEV = 0x4
_MS_BIND = 0x1000
_MS_REC = 0x4000

PARENT_GONE = 125  # the exit status when iolab died before the program could be tied to it


def command(
    argv: Sequence[str | Path],
    *,
    death_signal: str,
    user: tuple[int, int] | None = None,
    view: Sequence[Path] = (),
    cgroup: Sequence[Path] = (),
) -> list[str]:
    """The command line that runs ``argv`` tied to this process by ``death_signal`` ("KILL",
    "TERM", "INT"), as ``user`` (uid, gid; needs root), with ``view`` made reachable for that
    user (needs root and a user) and inside the ``cgroup`` directories (needs root)."""
    args = [sys.executable, "-I", "-S", __file__, "--parent", str(os.getpid())]
    args += ["--death-signal", death_signal]
    if user is not None:
        args += ["--uid", str(user[0]), "--gid", str(user[1])]
    for path in view:
        args += ["--path", str(path)]
    for path in cgroup:
        args += ["--cgroup", str(path)]
    args += ["--", *(str(a) for a in argv)]
    if not view:
        return args
    unshare = shutil.which("unshare") or "unshare"
    return [unshare, "--mount", "--propagation", "private", "--", *args]


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


def _outermost(paths: Iterable[Path]) -> list[Path]:
    """Resolved paths, each given once, leaving out those inside another one."""
    resolved = sorted({p.resolve() for p in paths}, key=lambda p: len(p.parts))
    kept: list[Path] = []
    for path in resolved:
        if not any(path == k or k in path.parents for k in kept):
            kept.append(path)
    return kept


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _mount(source: str | None, target: Path, fstype: str | None, flags: int, data: str) -> None:
    rc = _libc().mount(
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


def tie(parent: int, number: int) -> bool:
    """Set the parent-death signal ``number``; False when ``parent`` is already gone."""
    if _libc().prctl(_PR_SET_PDEATHSIG, ctypes.c_ulong(number), 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl(PR_SET_PDEATHSIG): {os.strerror(err)}")
    return os.getppid() == parent


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="launch.py")
    parser.add_argument("--parent", type=int, required=True, help="the pid it must die with")
    parser.add_argument("--death-signal", required=True, help="KILL, TERM, INT, ...")
    parser.add_argument("--uid", type=int, help="the user to run as")
    parser.add_argument("--gid", type=int, help="that user's group")
    parser.add_argument("--path", type=Path, action="append", default=[], help="a directory")
    parser.add_argument("--cgroup", type=Path, action="append", default=[], help="a cgroup")
    parser.add_argument("program", nargs=argparse.REMAINDER, help="-- PROGRAM [ARG ...]")
    args = parser.parse_args(argv)
    program = args.program[1:] if args.program[:1] == ["--"] else args.program
    if not program:
        parser.error("give the program to run after --")
    if (args.uid is None) != (args.gid is None) or (args.path and args.uid is None):
        parser.error("--uid and --gid go together, and --path needs them")
    number = int(signal.Signals[f"SIG{args.death_signal}"])
    if not tie(args.parent, number):
        return PARENT_GONE
    try:
        for group in args.cgroup:  # first: everything it starts is born inside
            (group / "cgroup.procs").write_text(f"{os.getpid()}\n")
        if args.path:
            set_up(args.path, args.uid, args.gid)
            os.chdir("/")
        if args.uid is not None:
            os.setgroups([])
            os.setresgid(args.gid, args.gid, args.gid)
            os.setresuid(args.uid, args.uid, args.uid)
    except OSError as exc:
        print(f"iolab: cannot start {program[0]} as the server user: {exc}", file=sys.stderr)
        return 126
    if not tie(args.parent, number):  # a new user clears the signal: set it again
        return PARENT_GONE
    try:
        os.execvp(program[0], program)
    except OSError as exc:
        print(f"iolab: cannot run {program[0]}: {exc}", file=sys.stderr)
        return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
