"""The stack under a model device: nbdkit running iolab's model plugin, nbdfuse, a loop device.

    backing file <- nbdkit python plugin (the model; unix socket) <- nbdfuse (a file on FUSE)
                 <- losetup --direct-io=on <- mkfs, mount (as for any testbed device)

Everything it makes lives under the testbed's own state directory, at paths named after the
device: ``nbd/NAME.sock`` (nbdkit's socket; never a TCP port), ``nbd/NAME.json`` (the model's
parameters), ``nbd/NAME.log`` (what nbdkit and nbdfuse said), ``fuse/NAME/disk`` (the file the
loop device reads and writes). nbdkit and nbdfuse run in sessions of their own, so a killed
iolab leaves them serving; ``testbed down`` finds them again by those paths in their command
lines (/proc/PID/cmdline) and stops them, and nothing else.

Each is started as ``setsid --fork setsid --fork --wait PROGRAM``: the first setsid returns at
once, the second stays as the program's parent until the program exits. nbdkit 1.32 arms a
parent-death SIGTERM (prctl PR_SET_PDEATHSIG) first thing in main, even without
``--exit-with-parent``, so its parent must outlive it: under a single ``setsid --fork`` the
parent exits right after the fork, and when a loaded machine lets nbdkit reach its prctl first,
that exit kills it before it says anything ("nbdkit stopped: nothing in its log").
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Mapping
from contextlib import suppress
from pathlib import Path
from typing import Any

from iolab.errors import MissingTool, RunFailed, Unavailable
from iolab.process import require, run
from iolab.system import processes
from iolab.testbed import filesystems, loops

NBD = "nbd"
FUSE = "fuse"
PLUGIN = Path(__file__).with_name("models") / "nbdkit_plugin.py"
HOW = {
    "nbdkit": "install Debian's nbdkit and nbdkit-plugin-python packages",
    "nbdfuse": "install Debian's libnbd-bin and fuse3 packages",
    "fusermount3": "install Debian's fuse3 package",
}
START_WAIT = 20.0
STOP_WAIT = 10.0
SOCKET_MAX = 107  # sun_path holds 108 bytes with the NUL
WHAT = "a model device"


def socket_path(directory: Path, name: str) -> Path:
    return directory / NBD / f"{name}.sock"


def params_path(directory: Path, name: str) -> Path:
    return directory / NBD / f"{name}.json"


def log_path(directory: Path, name: str) -> Path:
    return directory / NBD / f"{name}.log"


def fault_file(directory: Path, name: str) -> Path:
    """While this file exists, a device with a ``fault`` fails its requests (nbdkit's error
    filter checks it on each request)."""
    return directory / NBD / f"{name}.fault"


# a fault's op -> the error filter's request kinds (a write of zeroes is a write)
FILTER_OPS = {
    "write": ("pwrite", "zero"),
    "read": ("pread",),
    "trim": ("trim",),
    "any": ("pread", "pwrite", "zero", "trim"),
}


def fault_args(directory: Path, name: str, fault: Mapping[str, Any]) -> list[str]:
    """nbdkit's error-filter parameters for a checked fault table (see spec.FAULT_KEYS)."""
    args = []
    for kind in FILTER_OPS[str(fault["op"])]:
        args += [
            f"error-{kind}={fault['error']}",
            f"error-{kind}-rate={float(fault['rate']):g}",
            f"error-{kind}-file={fault_file(directory, name)}",
        ]
    return args


def fuse_dir(directory: Path, name: str) -> Path:
    return directory / FUSE / name


def fuse_file(directory: Path, name: str) -> Path:
    return fuse_dir(directory, name) / "disk"


def check_supported() -> None:
    """Refuse model devices (before anything is made) where the stack cannot run."""
    for tool, how in HOW.items():
        require(tool, how)
    dump = run([require("nbdkit", HOW["nbdkit"]), "python", "--dump-plugin"], check=False)
    if dump.returncode != 0:
        raise MissingTool("nbdkit's python plugin", HOW["nbdkit"])
    if not Path("/dev/fuse").exists():
        raise Unavailable(
            WHAT,
            "the kernel offers no FUSE (/dev/fuse is missing); load the fuse module (a "
            "container needs the host's /dev/fuse)",
        )
    try:
        fd = os.open("/dev/fuse", os.O_RDWR)
    except OSError as exc:
        raise Unavailable(WHAT, f"/dev/fuse cannot be opened ({exc.strerror})") from None
    os.close(fd)


def unavailable_reason() -> str | None:
    try:
        check_supported()
    except (Unavailable, MissingTool) as exc:
        return str(exc)
    return None


def _holders(needle: str, programs: tuple[str, ...]) -> list[int]:
    """Pids of ``programs`` whose command line has the argument ``needle`` (one of iolab's
    paths under the state directory)."""
    return processes.matching(
        lambda p: bool(p.argv) and Path(p.argv[0]).name in programs and needle in p.argv[1:]
    )


def nbdkit_pids(directory: Path, name: str) -> list[int]:
    return _holders(str(socket_path(directory, name)), ("nbdkit",))


def nbdfuse_pids(directory: Path, name: str) -> list[int]:
    return _holders(str(fuse_file(directory, name)), ("nbdfuse",))


def _spawn(argv: list[str], log: Path) -> None:
    """Start ``argv`` as a daemon, output to ``log``: its own session, no parent of iolab's, and
    a parent (a waiting setsid) that lives exactly as long as it does (see the module's doc)."""
    setsid = require("setsid", "install Debian's util-linux package")
    with log.open("ab") as out:
        subprocess.run(
            [setsid, "--fork", setsid, "--fork", "--wait", *argv],
            stdin=subprocess.DEVNULL, stdout=out, stderr=out, check=True,
        )  # fmt: skip


def _started(needle: str, program: str) -> list[int]:
    """Pids of ``program`` whose command line has ``needle``, and of the setsid that waits on it
    (or is about to run it: the short while before its exec)."""
    return _holders(needle, (program, "setsid"))


def _tail(log: Path) -> str:
    """The last lines of ``log``, or where it is when it says nothing."""
    try:
        lines = log.read_text(errors="replace").strip().splitlines()
    except OSError:
        lines = []
    return " / ".join(lines[-3:]) if lines else f"nothing in its log ({log})"


def _wait_for(ready: Any, alive: Any, what: str, log: Path) -> None:
    deadline = time.monotonic() + START_WAIT
    while not ready():
        if time.monotonic() > deadline - START_WAIT + 1 and not alive():
            raise RunFailed(f"{what} stopped: {_tail(log)}")
        if time.monotonic() > deadline:
            raise RunFailed(f"{what} was not ready within {START_WAIT:.0f} s: {_tail(log)}")
        time.sleep(0.05)


def _accepts(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        try:
            s.connect(str(path))
        except OSError:
            return False
    return True


def start(
    directory: Path,
    name: str,
    backing: Path,
    params: Mapping[str, Any],
    fault: Mapping[str, Any] | None = None,
    threads: int = 64,
) -> Path:
    """Serve ``backing`` through the model and expose it as a file; returns the file. With a
    ``fault``, nbdkit's error filter fails requests while :func:`fault_file` exists (the caller
    creates it when the device is up, or the user does)."""
    (directory / NBD).mkdir(mode=0o700, exist_ok=True)
    sock = socket_path(directory, name)
    if len(str(sock)) > SOCKET_MAX:
        raise RunFailed(
            f"the socket path {sock} is too long for a unix socket; use a shorter testbed directory"
        )
    sock.unlink(missing_ok=True)  # of a crashed run: no server holds it (down stopped them)
    fault_file(directory, name).unlink(missing_ok=True)
    params_path(directory, name).write_text(json.dumps(dict(params)))
    log = log_path(directory, name)
    nbdkit = require("nbdkit", HOW["nbdkit"])
    errors = ["--filter=error"] if fault is not None else []
    _spawn(
        [
            nbdkit, "--foreground", "--unix", str(sock), "--threads", str(threads), *errors,
            "python", str(PLUGIN), f"file={backing}", f"params={params_path(directory, name)}",
            *(fault_args(directory, name, fault) if fault is not None else []),
        ],
        log,
    )  # fmt: skip
    _wait_for(lambda: _accepts(sock), lambda: _started(str(sock), "nbdkit"), "nbdkit", log)
    mnt = fuse_dir(directory, name)
    (directory / FUSE).mkdir(mode=0o700, exist_ok=True)
    mnt.mkdir(mode=0o700, exist_ok=True)
    _spawn(
        [require("nbdfuse", HOW["nbdfuse"]), "-C", "8", str(fuse_file(directory, name)),
         "--unix", str(sock)],
        log,
    )  # fmt: skip
    _wait_for(
        lambda: fuse_file(directory, name).exists(),
        lambda: _started(str(fuse_file(directory, name)), "nbdfuse"),
        "nbdfuse",
        log,
    )
    return fuse_file(directory, name)


def log_mark(directory: Path, name: str) -> int:
    """Where the device's log ends now (see :func:`errors_since`)."""
    try:
        return log_path(directory, name).stat().st_size
    except OSError:
        return 0


def errors_since(directory: Path, name: str, mark: int) -> tuple[int, str]:
    """The requests nbdkit failed since ``mark`` (an injected fault, or the backing file's own
    error) and the last such line of its log (``injecting EIO error into pwrite``)."""
    try:
        with log_path(directory, name).open("rb") as f:
            f.seek(mark)
            text = f.read().decode(errors="replace")
    except OSError:
        return 0, ""
    lines = [
        line.split(": error: ", 1)[1]
        for line in text.splitlines()
        if line.startswith("nbdkit:") and ": error: " in line and "handshake" not in line
    ]
    return len(lines), (lines[-1].strip() if lines else "")


def _gone(pids: list[int], wait: float) -> bool:
    deadline = time.monotonic() + wait
    while True:
        alive = []
        for pid in pids:
            with suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)  # our own child: reap it
            if processes.alive(pid):
                alive.append(pid)
        if not alive:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def _stop(pids: list[int]) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            with suppress(ProcessLookupError):
                os.kill(pid, sig)
        if _gone(pids, STOP_WAIT):
            return
    raise RunFailed(f"processes {', '.join(map(str, pids))} did not stop")


def problem(directory: Path, name: str) -> str | None:
    """Why the device's stack does not serve it (None: it does): nbdkit and nbdfuse are
    running and not stopped, the FUSE file is mounted, and it answers a stat within a short wait
    (after a kill -9 of nbdfuse its mount is still listed, but every access fails; a stopped one
    never answers, though the kernel may answer a stat from its attribute cache)."""
    kit, fuse = nbdkit_pids(directory, name), nbdfuse_pids(directory, name)
    if not kit:
        return "its nbdkit is gone (killed, or the machine rebooted?)"
    if not fuse:
        return "its nbdfuse is gone (killed, or the machine rebooted?)"
    stopped = {p.pid for p in processes.listing() if p.state in ("T", "t")}
    for program, pids in (("nbdkit", kit), ("nbdfuse", fuse)):
        if stopped.intersection(pids):  # a stat may still be answered from the kernel's cache
            return f"its {program} is stopped (SIGSTOP, or a debugger holds it)"
    mount = filesystems.mounted_at(fuse_dir(directory, name))
    if mount is None or "fuse" not in mount.fstype:
        return f"its FUSE file is not mounted on {fuse_dir(directory, name)}"
    answer = loops.stat_within(fuse_file(directory, name), loops.STAT_WAIT)
    if isinstance(answer, str):
        return f"its FUSE file {fuse_file(directory, name)} does not answer ({answer})"
    return None


def stop(directory: Path, name: str) -> None:
    """Stop what :func:`start` started for ``name`` (found by its paths), remove its files.
    The loop device on the FUSE file must be detached first."""
    mnt = fuse_dir(directory, name)
    mount = filesystems.mounted_at(mnt)
    if mount is not None and "fuse" in mount.fstype:
        done = run([require("fusermount3", HOW["fusermount3"]), "-u", mnt], check=False)
        if done.returncode != 0 and filesystems.mounted_at(mnt) is not None:
            raise RunFailed(f"cannot unmount {mnt}: {done.stderr.strip()}")
    pids = _started(str(fuse_file(directory, name)), "nbdfuse")
    if pids and not _gone(pids, STOP_WAIT):
        _stop(pids)
    pids = _started(str(socket_path(directory, name)), "nbdkit")
    if pids:
        _stop(pids)
    for path in (
        socket_path(directory, name),
        params_path(directory, name),
        fault_file(directory, name),
    ):
        path.unlink(missing_ok=True)
    log_path(directory, name).unlink(missing_ok=True)
    with suppress(FileNotFoundError, OSError):
        mnt.rmdir()
    for sub in (FUSE, NBD):
        with suppress(OSError):
            (directory / sub).rmdir()  # when empty
