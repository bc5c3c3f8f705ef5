"""Running database servers as an unprivileged user, tied to iolab's own life.

PostgreSQL refuses to run as root, and no server should run with more rights than it needs: when
iolab runs as root, servers run as the system user ``iolab`` (created on first use; override with
IOLAB_SERVER_USER). Servers are started as direct children with a parent-death signal, so that they
stop even when iolab is killed with SIGKILL.

Every program run as that user names the directories it works in (``reach``). Where one of them
sits below a directory the user cannot enter (a clone under ``/root``, a mode-700 scratch
directory), the program runs in a private mount namespace that makes exactly those directories
reachable at their own paths (:mod:`iolab.system.launch`); no permission is changed.
"""

from __future__ import annotations

import functools
import os
import pwd
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from iolab.errors import IolabError, RunFailed, Unavailable
from iolab.process import run, tail
from iolab.system import cgroups, launch, processes

USER_ENV = "IOLAB_SERVER_USER"
DEFAULT_USER = "iolab"


@dataclass(frozen=True)
class ServerUser:
    name: str
    uid: int
    gid: int

    @property
    def is_current(self) -> bool:
        return self.uid == os.geteuid()


def server_user() -> ServerUser:
    """The user servers run as: the current user, or an unprivileged one when we are root."""
    if os.geteuid() != 0:
        me = pwd.getpwuid(os.geteuid())
        return ServerUser(me.pw_name, me.pw_uid, me.pw_gid)
    name = os.environ.get(USER_ENV, DEFAULT_USER)
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        if name != DEFAULT_USER:
            raise IolabError(
                f"{USER_ENV}={name!r} names no user on this machine; create it or unset it"
            ) from None
        run(
            [
                "useradd",
                "--system",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
                "--home-dir",
                "/nonexistent",
                name,
            ]
        )
        entry = pwd.getpwnam(name)
    if entry.pw_uid == 0:
        raise IolabError(f"{USER_ENV}={name!r} is root; servers must run as an unprivileged user")
    return ServerUser(entry.pw_name, entry.pw_uid, entry.pw_gid)


def make_owned_dir(path: Path, user: ServerUser, mode: int = 0o700) -> Path:
    """Create ``path`` (must not exist) owned by the server user."""
    path.mkdir(mode=mode)
    if not user.is_current:
        os.chown(path, user.uid, user.gid)
    return path


def check_reachable(paths: Iterable[Path], user: ServerUser) -> None:
    """Refuse, before anything is made, directories the server user could not reach at all.

    A directory below one the user cannot enter is fine where iolab can give the server a
    private view of it (root with mount namespaces); elsewhere this names the directory.
    """
    if user.is_current:
        return
    blocked = launch.needs_view(_existing(paths), user.uid, user.gid)
    if not blocked:
        return
    refused = _views_refused()
    if refused is None:
        return
    path = blocked[0]
    parent = launch.blocked_ancestor(path, user.uid, user.gid)
    assert parent is not None
    mode = parent.stat().st_mode & 0o777
    raise Unavailable(
        f"{path} for the server user {user.name!r}",
        f"it cannot enter {parent} (mode {mode:o}), and this machine refuses the private "
        f"mount namespace iolab would reach it through ({refused}); choose a directory outside "
        f"{parent}",
    )


def _existing(paths: Iterable[Path]) -> list[Path]:
    """Each path cut below its nearest existing ancestor: a path to be made is checked that far."""
    found: list[Path] = []
    for path in paths:
        probe = path.absolute()
        while not probe.parent.exists() and probe != probe.parent:
            probe = probe.parent
        found.append(probe)
    return found


@functools.cache
def _views_refused() -> str | None:
    """None where this process can make private mount namespaces, else why not."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return "unshare is not installed (Debian's util-linux)"
    proc = subprocess.run(
        [unshare, "--mount", "--propagation", "private", "true"],
        capture_output=True,
        text=True,
        check=False,
    )
    return None if proc.returncode == 0 else tail(proc.stderr) or f"exit {proc.returncode}"


def _as_user(
    argv: Sequence[str | Path],
    user: ServerUser,
    reach: Iterable[Path],
    death_signal: str,
    *,
    capped: bool = True,
) -> list[str]:
    """The command line that runs ``argv`` as ``user``, tied to iolab by ``death_signal``, with
    the directories in ``reach`` in its reach (see :mod:`iolab.system.launch`); in the run's
    cgroup when ``capped`` and the run has one."""
    group = cgroups.active() if capped else None  # a capped run's servers run in its cgroup
    joined = group.paths if group is not None else []
    if user.is_current:
        return launch.command(argv, death_signal=death_signal, cgroup=joined)
    blocked = launch.needs_view(reach, user.uid, user.gid)
    user_ids = (user.uid, user.gid)
    return launch.command(
        argv, death_signal=death_signal, user=user_ids, view=blocked, cgroup=joined
    )


def spawn(
    argv: Sequence[str | Path],
    user: ServerUser,
    log: Path,
    *,
    reach: Iterable[Path] = (),
    env: dict[str, str] | None = None,
    death_signal: str = "TERM",
) -> subprocess.Popen[bytes]:
    """Start a server process as ``user``, its output appended to ``log``.

    ``reach``: the directories the server works in (its installation, data, WAL, socket). The
    server gets ``death_signal`` when iolab dies, even by SIGKILL (see :func:`_as_user`). A new
    session keeps Ctrl-C in the terminal away from it: iolab stops it in order instead.
    """
    args = _as_user(argv, user, reach, death_signal)
    log.touch()
    if not user.is_current:  # the server may write this file itself (MariaDB's log-error)
        os.chown(log, user.uid, user.gid)
    with log.open("ab") as out:
        return subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
            close_fds=True,
        )


def run_as(
    argv: Sequence[str | Path],
    user: ServerUser,
    *,
    reach: Iterable[Path] = (),
    env: dict[str, str] | None = None,
    timeout: float | None = None,
    before_kill: Callable[[int], Callable[[], None]] | None = None,
) -> str:
    """Run a short tool (initdb, mariadb-install-db) as ``user``; returns its output.

    ``reach``: the directories it works in, as for :func:`spawn`. It gets SIGKILL when iolab
    dies (parent-death signal), and on Ctrl-C its whole process group is killed.
    ``before_kill``: given the session's leader before that kill, it returns what to do after
    it (remove what the killed processes could not, as PostgreSQL's shared memory).
    """
    # and dies with iolab; outside the run's cgroup: a tool that makes the instance (initdb,
    # mariadb-install-db's bootstrap with the default buffer pool) is not what the caps measure
    args = _as_user(argv, user, reach, "KILL", capped=False)
    proc = subprocess.Popen(
        args,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,  # its own process group: initdb's helpers go with it
    )
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except BaseException:  # Ctrl-C, a time-out: nothing of it may outlive it in its directories
        after = before_kill(proc.pid) if before_kill is not None else None
        kill_session(proc.pid)
        proc.kill()
        proc.wait()
        if after is not None:
            after()
        raise
    if proc.returncode != 0:
        raise RunFailed(
            f"{Path(str(argv[0])).name} failed (exit {proc.returncode}): {tail(stderr or stdout)}"
        )
    return stdout


def how_it_ended(proc: subprocess.Popen[bytes] | None, grace: float = 1.0) -> str | None:
    """How a server process ended without being stopped ("signal 9", "exit status 1"), or None
    while it runs (after waiting up to ``grace`` seconds: a server that has just closed its
    connections may still be exiting)."""
    if proc is None:
        return None
    deadline = time.monotonic() + grace
    code = proc.poll()
    while code is None and time.monotonic() < deadline:
        time.sleep(0.05)
        code = proc.poll()
    if code is None:
        return None
    if code < 0:
        return f"signal {-code}"
    return f"exit status {code}"


def kill_session(leader: int, timeout: float = 10.0) -> list[int]:
    """SIGKILL what is left of a dead server's session (a postmaster's backends keep its
    session id after it died) and wait for them; returns the pids that would not go."""
    members = [
        p.pid for p in processes.listing() if p.session == leader and p.state not in ("Z", "X")
    ]
    for pid in members:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            continue
    deadline = time.monotonic() + timeout
    left = members
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [pid for pid in left if processes.alive(pid)]
    return left
