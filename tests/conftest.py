"""Shared fixtures. Real programs only: fio, database servers, browsers; nothing mocked."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def open_tmp() -> Iterator[Path]:
    """A temporary directory that an unprivileged server user can enter (mode 0755).

    pytest's tmp_path lives under a 0700 directory of the current user, which a database server
    running as the ``iolab`` user cannot reach. Removed after the test.
    """
    base = Path(tempfile.mkdtemp(prefix="iolab-test-", dir="/var/tmp"))
    base.chmod(0o755)
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def results_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh results database path, also set as IOLAB_RESULTS for CLI calls."""
    path = tmp_path / "results.db"
    monkeypatch.setenv("IOLAB_RESULTS", str(path))
    return path


def is_root() -> bool:
    return os.geteuid() == 0


def make_dirs(base: Path, *names: str) -> list[Path]:
    """Fresh subdirectories of ``base`` that the server user can enter (mode 0755)."""
    made = []
    for name in names:
        path = base / name
        path.mkdir()
        path.chmod(0o755)
        made.append(path)
    return made


# execs its arguments with SIGINT at its default disposition, in the same process (same pid)
_DEFAULT_SIGINT = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execvp(sys.argv[1], sys.argv[1:])"
)


def interruptible(argv: Sequence[str]) -> list[str]:
    """``argv`` started with SIGINT at its default disposition, whatever the test inherited.

    A shell without job control (``make test &``, nohup, a CI script) starts its children with
    SIGINT ignored; that is inherited through exec, and iolab rightly keeps an ignored SIGINT
    ignored, so a test's Ctrl-C would do nothing. Every test that sends SIGINT starts its
    process through this (no preexec_fn: it is not safe with threads). The process keeps its
    pid: the launcher execs ``argv``."""
    return [sys.executable, "-c", _DEFAULT_SIGINT, *argv]


@pytest.fixture
def sigint_default() -> Iterator[None]:
    """In this process, SIGINT raises KeyboardInterrupt for the test (Python's default), even if
    the test run was started with SIGINT ignored; the inherited handler comes back after."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


requires_mariadb = pytest.mark.skipif(
    not any(shutil.which(n) or Path("/usr/sbin", n).exists() for n in ("mariadbd", "mysqld")),
    reason="mariadb-server is not installed",
)


def signal_when(
    proc: subprocess.Popen[str] | subprocess.Popen[bytes],
    ready: Callable[[], bool],
    sig: int,
    *,
    what: str,
    timeout: float = 300,
) -> None:
    """Send ``sig`` to ``proc`` as soon as ``ready()`` holds (polled every 20 ms); the test fails,
    and ``proc`` is killed, if it ends first or ``what`` does not come within ``timeout``."""
    try:
        deadline = time.monotonic() + timeout
        while not ready():
            assert proc.poll() is None, f"it ended before {what}"
            assert time.monotonic() < deadline, f"{what} never came"
            time.sleep(0.02)
        proc.send_signal(sig)
    except BaseException:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        raise


@contextmanager
def small_tmpfs(mnt: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` (e.g. "1m") mounted on the new directory ``mnt`` (mode 0755), to fill
    up; unmounted after. The test is skipped where iolab cannot mount one (not root, or the
    kernel refuses)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs to fill needs root")
    mnt.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(mnt)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"the kernel refused a tmpfs mount: {done.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def in_network_namespace(code: str, *args: str) -> Any:
    """Run the Python ``code`` with ``args`` inside a network namespace of its own (``unshare
    -n``: a server it starts listens there only) and return the JSON it prints; the test is
    skipped where no namespace can be made."""
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        pytest.skip("unshare (util-linux) and ip (iproute2) are needed for a network namespace")
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"cannot make a network namespace here: {probe.stderr.strip()}")
    done = subprocess.run(
        ["unshare", "-n", sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def iolab_streams(
    *args: str, stdout: str = "pipe", stderr: str = "pipe", timeout: float = 600
) -> tuple[int, str, str]:
    """``python -m iolab ARGS`` with each of its standard output and error ``"pipe"`` (read
    here), ``"closed"`` (as ``>&-`` leaves it) or ``"full"`` (``/dev/full``: every write fails
    with "no space left on device"); its exit code and what the pipes read ("" for the
    others)."""
    closed = [fd for fd, how in ((1, stdout), (2, stderr)) if how == "closed"]

    def close() -> None:  # in the child, just before it becomes iolab: it starts without them
        for fd in closed:
            os.close(fd)

    with open("/dev/full", "w") as full:
        ends = {"pipe": subprocess.PIPE, "full": full, "closed": subprocess.DEVNULL}
        done = subprocess.run(
            [sys.executable, "-m", "iolab", *args],
            stdin=subprocess.DEVNULL,
            stdout=ends[stdout],
            stderr=ends[stderr],
            preexec_fn=close if closed else None,
            text=True,
            timeout=timeout,
            check=False,
        )
    return done.returncode, done.stdout or "", done.stderr or ""
