"""fio jobs as data, and the command lines that run them. Pure: no I/O here."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

READ_MODES = frozenset({"read", "randread"})
WRITE_MODES = frozenset({"write", "randwrite"})
MIXED_MODES = frozenset({"rw", "randrw"})
RW_MODES = READ_MODES | WRITE_MODES | MIXED_MODES
PERCENTILES = (50.0, 99.0, 99.9)
MAX_IODEPTH = 1024  # I/Os in flight per thread: far beyond any device's queue
MAX_NUMJOBS = 256  # threads on the one file; fio itself stops near 4,096 jobs


class DataPattern(StrEnum):
    """What write buffers hold: incompressible random bytes (default) or zeros (0Fill)."""

    RANDOM = "random"
    ZERO = "zero"


@dataclass(frozen=True)
class FioJob:
    """One fio invocation on one file.

    ``numjobs`` threads share the one file (as CrystalDiskMark's T>1 does); ``fdatasync`` = 1
    syncs after every write (the commit-latency pattern). ``runtime`` None means: run until
    ``size`` bytes are done (used to lay out the test file).
    """

    name: str
    filename: Path
    rw: str
    bs: int
    size: int
    iodepth: int = 1
    numjobs: int = 1
    runtime: float | None = None
    direct: bool = True
    rwmixread: int | None = None
    fdatasync: int = 0
    data: DataPattern = DataPattern.RANDOM
    ioengine: str = "libaio"

    def __post_init__(self) -> None:
        if self.rw not in RW_MODES:
            raise ValueError(f"unknown fio rw mode {self.rw!r}")
        if (self.rw in MIXED_MODES) != (self.rwmixread is not None):
            raise ValueError("rwmixread goes with the mixed modes rw/randrw, and only with them")

    @property
    def reads(self) -> bool:
        return self.rw in READ_MODES or self.rw in MIXED_MODES

    @property
    def writes(self) -> bool:
        return self.rw in WRITE_MODES or self.rw in MIXED_MODES


def command(job: FioJob, fio: str = "fio") -> list[str]:
    """The fio command line for ``job``, reporting JSON+ with total-latency percentiles."""
    args = [
        fio,
        f"--name={job.name}",
        f"--filename={job.filename}",
        f"--rw={job.rw}",
        f"--bs={job.bs}",
        f"--size={job.size}",
        f"--iodepth={job.iodepth}",
        f"--numjobs={job.numjobs}",
        f"--ioengine={job.ioengine}",
        f"--direct={int(job.direct)}",
        "--group_reporting=1",
        "--lat_percentiles=1",
        "--percentile_list=" + ":".join(f"{p:g}" for p in PERCENTILES),
        "--randrepeat=0",
        "--output-format=json+",
    ]
    if job.runtime is not None:
        args += ["--time_based=1", f"--runtime={_fio_seconds(job.runtime)}"]
    if job.rwmixread is not None:
        args.append(f"--rwmixread={job.rwmixread}")
    if job.fdatasync:
        args.append(f"--fdatasync={job.fdatasync}")
    # Random data is fio's default: buffers filled with random bytes once and scrambled on
    # every write (scramble_buffers), which defeats dedupe without the cost of refilling them
    # (refill_buffers cost a quarter of the QD1 sequential write speed in bench/disk_vs_fio).
    if job.writes and job.data is DataPattern.ZERO:
        args.append("--zero_buffers=1")
    return args


def _fio_seconds(seconds: float) -> str:
    """fio takes whole seconds bare, or milliseconds with an ``ms`` suffix."""
    if float(seconds).is_integer():
        return str(int(seconds))
    return f"{round(seconds * 1000)}ms"
