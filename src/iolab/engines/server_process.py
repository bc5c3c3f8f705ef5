"""Running database servers as an unprivileged user, tied to iolab's own life.

PostgreSQL refuses to run as root, and no server should run with more rights than it needs: when
iolab runs as root, servers run as the system user ``iolab`` (created on first use; override with
IOLAB_SERVER_USER). Servers are started as direct children with a parent-death signal, so that they
stop even when iolab is killed with SIGKILL.
"""

from __future__ import annotations

import os
import pwd
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from iolab.errors import IolabError, RunFailed
from iolab.process import require, run, tail

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
    """Create ``path`` (must not exist) owned by the server user, and check it can reach it."""
    path.mkdir(mode=mode)
    if not user.is_current:
        os.chown(path, user.uid, user.gid)
    check_reachable(path, user)
    return path


def check_reachable(path: Path, user: ServerUser) -> None:
    """Every parent of ``path`` must be searchable by the server user, or the server cannot work."""
    if user.is_current:
        return
    for parent in reversed(path.resolve().parents):
        st = parent.stat()
        if st.st_uid == user.uid:
            ok = bool(st.st_mode & 0o100)
        elif st.st_gid == user.gid:
            ok = bool(st.st_mode & 0o010)
        else:
            ok = bool(st.st_mode & 0o001)
        if not ok:
            raise IolabError(
                f"the server runs as user {user.name!r}, which cannot enter {parent} "
                f"(mode {st.st_mode & 0o777:o}); choose a directory outside it or "
                f"`chmod o+x {parent}`"
            )


def spawn(
    argv: Sequence[str | Path],
    user: ServerUser,
    log: Path,
    *,
    env: dict[str, str] | None = None,
    death_signal: str = "TERM",
) -> subprocess.Popen[bytes]:
    """Start a server process as ``user``, its output appended to ``log``.

    util-linux's setpriv sets the parent-death signal after the user switch and then execs the
    server in place, so the server gets ``death_signal`` when iolab dies, even by SIGKILL. A new
    session keeps Ctrl-C in the terminal away from it: iolab stops it in order instead.
    """
    setpriv = require("setpriv", "install Debian's util-linux package")
    log.touch()
    if not user.is_current:  # the server may write this file itself (MariaDB's log-error)
        os.chown(log, user.uid, user.gid)
    with log.open("ab") as out:
        return subprocess.Popen(
            [setpriv, "--pdeathsig", death_signal, "--", *(str(a) for a in argv)],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            user=None if user.is_current else user.uid,
            group=None if user.is_current else user.gid,
            extra_groups=None if user.is_current else [],
            start_new_session=True,
            env=env,
            close_fds=True,
        )


def run_as(
    argv: Sequence[str | Path],
    user: ServerUser,
    *,
    env: dict[str, str] | None = None,
    timeout: float | None = None,
) -> str:
    """Run a short tool (initdb, mariadb-install-db) as ``user``; returns its output."""
    proc = subprocess.run(
        [str(a) for a in argv],
        capture_output=True,
        text=True,
        user=None if user.is_current else user.uid,
        group=None if user.is_current else user.gid,
        extra_groups=None if user.is_current else [],
        env=env,
        timeout=timeout,
        check=False,
    )
    if proc.returncode != 0:
        raise RunFailed(
            f"{Path(str(argv[0])).name} failed (exit {proc.returncode}): "
            f"{tail(proc.stderr or proc.stdout)}"
        )
    return proc.stdout


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


def stopped_during(server: str, how: str, log: Path | None, what: str = "the load") -> str:
    """The one-line reason of a run whose server died: how, and the end of its log."""
    try:
        text = log.read_text(errors="replace") if log is not None else ""
    except OSError:
        text = ""
    return f"the {server} server stopped during {what} ({how}); its log: {tail(text, 5)}"


def kill_session(leader: int, timeout: float = 10.0) -> list[int]:
    """SIGKILL what is left of a dead server's session (a postmaster's backends keep its
    session id after it died) and wait for them; returns the pids that would not go."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 3 and fields[3] == str(leader) and fields[0] not in ("Z", "X"):
            members.append(int(entry.name))
    for pid in members:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            continue
    deadline = time.monotonic() + timeout
    left = members
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [pid for pid in left if _running(pid)]
    return left


def _running(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2 :].split()[0] not in ("Z", "X")
