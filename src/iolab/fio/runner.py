"""The one place iolab runs fio."""

from __future__ import annotations

import re
from functools import cache

from iolab.errors import RunFailed
from iolab.fio.jobs import FioJob, command
from iolab.fio.parse import FioSummary, load, summarize
from iolab.process import require, run, tail

INSTALL_HINT = "install it with `apt-get install fio` (Debian/Ubuntu) or `dnf install fio`"


def fio_path() -> str:
    return require("fio", INSTALL_HINT)


@cache
def fio_version() -> str:
    out = run([fio_path(), "--version"]).stdout.strip()
    m = re.search(r"(\d+(?:\.\d+)+)", out)
    return m.group(1) if m else out


def run_job(job: FioJob, timeout: float | None = None) -> FioSummary:
    """Run one fio invocation and summarize its JSON output."""
    if timeout is None and job.runtime is not None:
        timeout = job.runtime + 120  # fio's own start-up and layout on a slow device
    done = run(command(job, fio_path()), timeout=timeout, check=False)
    if done.returncode != 0:
        raise RunFailed(f"fio failed (exit {done.returncode}): {tail(done.stderr or done.stdout)}")
    return summarize(load(done.stdout))
