"""The one place iolab runs fio."""

from __future__ import annotations

import re
import signal
from functools import cache
from pathlib import Path

from iolab.errors import BadInput, RunFailed
from iolab.fio.jobs import MAX_IODEPTH, MAX_NUMJOBS, FioJob, command
from iolab.fio.parse import FioSummary, load, summarize
from iolab.process import Completed, require, run, tail
from iolab.system import launch

INSTALL_HINT = "install it with `apt-get install fio` (Debian/Ubuntu) or `dnf install fio`"


def fio_path() -> str:
    return require("fio", INSTALL_HINT)


@cache
def fio_version() -> str:
    out = run([fio_path(), "--version"]).stdout.strip()
    m = re.search(r"(\d+(?:\.\d+)+)", out)
    return m.group(1) if m else out


AIO_MAX_NR = Path("/proc/sys/fs/aio-max-nr")
DEFAULT_AIO_MAX_NR = 65536  # the kernel's default


def check_parallelism(queue_depths: list[int], threads: list[int]) -> None:
    """Refuse queue depths and thread counts fio cannot run, before anything runs: each within
    its limit, and queue depth x threads within the kernel's AIO contexts (fs.aio-max-nr),
    which libaio takes one per I/O in flight."""
    for qd in queue_depths:
        if not 1 <= qd <= MAX_IODEPTH:
            raise BadInput("--qd", qd, f"give queue depths from 1 to {MAX_IODEPTH}")
    for t in threads:
        if not 1 <= t <= MAX_NUMJOBS:
            raise BadInput("--threads", t, f"give thread counts from 1 to {MAX_NUMJOBS}")
    try:
        limit = int(AIO_MAX_NR.read_text())
    except (OSError, ValueError):
        limit = DEFAULT_AIO_MAX_NR
    qd, t = max(queue_depths, default=1), max(threads, default=1)
    if qd * t > limit:
        raise BadInput(
            "--qd x --threads",
            f"{qd} x {t}",
            f"keep queue depth x threads within {limit:,} I/Os in flight (fs.aio-max-nr)",
        )


class Interrupted(KeyboardInterrupt):
    """fio stopped on a signal (Ctrl-C reaching it while iolab ignores SIGINT, a kill): the
    run is aborted, as on Ctrl-C to iolab itself."""


STOP_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM, signal.SIGHUP})  # someone stopping it
_SIGNALLED = re.compile(r"terminating on signal (\d+)")


def _signal_of(done: Completed) -> int | None:
    """The signal that stopped fio: killed by it, or fio's own "terminating on signal N" (on
    stdout before the JSON, or on stderr)."""
    if done.returncode < 0:
        return -done.returncode
    found = _SIGNALLED.search(done.stderr) or _SIGNALLED.search(done.stdout[:4096])
    return int(found.group(1)) if done.returncode != 0 and found else None


def run_job(job: FioJob, timeout: float | None = None) -> FioSummary:
    """Run one fio invocation and summarize its JSON output."""
    if timeout is None and job.runtime is not None:
        timeout = job.runtime + 120  # fio's own start-up and layout on a slow device
    # fio forks a process per job: stopped with SIGINT it ends them itself (a SIGKILL of its main
    # process would leave them running), also when iolab dies (parent-death signal).
    argv = launch.command(command(job, fio_path()), death_signal="INT")
    done = run(argv, timeout=timeout, check=False, stop_signal=signal.SIGINT)
    number = _signal_of(done)
    if number in STOP_SIGNALS:
        raise Interrupted(f"fio stopped on signal {number}")
    if number is not None:
        raise RunFailed(f"fio was killed by signal {number}: {tail(done.stderr or done.stdout)}")
    if done.returncode != 0:
        raise RunFailed(f"fio failed (exit {done.returncode}): {tail(done.stderr or done.stdout)}")
    return summarize(load(done.stdout))
