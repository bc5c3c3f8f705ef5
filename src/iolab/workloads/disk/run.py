"""Disk profiles in the manner of CrystalDiskMark and SQLIO, driven through fio.

A profile is a list of tests. Each test runs one discarded warm-up pass and then ``runs`` passes,
each a separate fio invocation of ``duration`` seconds, on one test file that was fully written
before measuring (no sparse extents). Every pass checks in /proc/diskstats that its I/O reached
the block device, so cache speed is never reported as disk speed.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from iolab import ownership
from iolab.analysis.disk import test_medians
from iolab.errors import BadInput, RunFailed
from iolab.events import EventSink, Measured, Phase, Step, Warning
from iolab.fio.jobs import MIXED_MODES, DataPattern, FioJob
from iolab.fio.runner import run_job
from iolab.probes.recorder import recording
from iolab.probes.standard import disk_recorder
from iolab.results import DiskPass, RunOutcome, SyncHistogram
from iolab.system import diskstats
from iolab.system.devices import PathDevice, describe
from iolab.units import block_label, format_bytes

KiB = 1024
MiB = 1024 * KiB
OWNED_KIND = "disk"
DIRECT_SHORTFALL = 0.5  # a pass whose device saw under half of fio's bytes was served from cache


@dataclass(frozen=True)
class DiskTest:
    """One test of a profile: ``label`` like ``SEQ1M Q8T1 read``."""

    kind: str  # SEQ | RND | COMMIT
    rw: str
    bs: int
    qd: int
    threads: int
    rwmixread: int | None = None
    fdatasync: bool = False

    @property
    def label(self) -> str:
        if self.fdatasync:
            direction = "fdatasync"
        elif self.rw in MIXED_MODES:
            direction = f"R{self.rwmixread}/W{100 - (self.rwmixread or 0)}"
        else:
            direction = "read" if "read" in self.rw else "write"
        return f"{self.kind}{block_label(self.bs)} Q{self.qd}T{self.threads} {direction}"

    @property
    def group(self) -> str:
        """The row label without direction: ``SEQ1M Q8T1``."""
        return f"{self.kind}{block_label(self.bs)} Q{self.qd}T{self.threads}"


def _pair(kind: str, bs: int, qd: int, threads: int, mix: int | None) -> list[DiskTest]:
    seq = kind == "SEQ"
    tests = [
        DiskTest(kind, "read" if seq else "randread", bs, qd, threads),
        DiskTest(kind, "write" if seq else "randwrite", bs, qd, threads),
    ]
    if mix is not None:
        tests.append(DiskTest(kind, "rw" if seq else "randrw", bs, qd, threads, rwmixread=mix))
    return tests


# CrystalDiskMark 8's test sets, each test read then write (and the R70/W30 mix with --mix).
_CDM_SETS: dict[str, list[tuple[str, int, int, int]]] = {
    "default": [
        ("SEQ", MiB, 8, 1),
        ("SEQ", MiB, 1, 1),
        ("RND", 4 * KiB, 32, 1),
        ("RND", 4 * KiB, 1, 1),
    ],
    "nvme": [
        ("SEQ", MiB, 8, 1),
        ("SEQ", 128 * KiB, 32, 1),
        ("RND", 4 * KiB, 32, 16),
        ("RND", 4 * KiB, 1, 1),
    ],
    "peak": [("SEQ", MiB, 8, 1), ("RND", 4 * KiB, 32, 16)],
    "real": [("SEQ", MiB, 1, 1), ("RND", 4 * KiB, 1, 1)],
}
PROFILES = ("default", "nvme", "peak", "real", "db", "quick", "sweep")
MIX_READ_PERCENT = 70


def db_tests() -> list[DiskTest]:
    """What a database does to a disk."""
    tests = []
    for qd in (1, 8, 32):  # 8K pages read and written at random: index lookups, page flushes
        tests += [
            DiskTest("RND", "randread", 8 * KiB, qd, 1),
            DiskTest("RND", "randwrite", 8 * KiB, qd, 1),
        ]
    tests += [
        DiskTest("SEQ", "read", 64 * KiB, 8, 1),  # table scans
        DiskTest("SEQ", "read", 256 * KiB, 8, 1),  # scans with read-ahead
        DiskTest("SEQ", "write", MiB, 8, 1),  # checkpoint, backup
        DiskTest("COMMIT", "write", 8 * KiB, 1, 1, fdatasync=True),  # WAL: write + fdatasync
    ]
    return tests


def quick_tests() -> list[DiskTest]:
    """The figures a CrystalDiskMark user reads first and a database's commit, in five tests
    (`iolab demo`'s headline): SEQ1M Q8T1 and RND4K Q1T1 read and write, then the commit test."""
    return [
        *_pair("SEQ", MiB, 8, 1, None),
        *_pair("RND", 4 * KiB, 1, 1, None),
        DiskTest("COMMIT", "write", 8 * KiB, 1, 1, fdatasync=True),
    ]


@dataclass(frozen=True)
class SweepSpec:
    """The SQLIO-style matrix: block sizes x queue depths x threads x modes."""

    block_sizes: tuple[int, ...] = (4 * KiB, 8 * KiB, 64 * KiB)
    queue_depths: tuple[int, ...] = (1, 8, 32)
    threads: tuple[int, ...] = (1,)
    modes: tuple[str, ...] = ("randread", "randwrite", "read", "write")
    rwmix: int | None = None


SWEEP_MODES = ("randread", "randwrite", "read", "write")


def sweep_tests(spec: SweepSpec) -> list[DiskTest]:
    tests = []
    for bs in spec.block_sizes:
        for qd in spec.queue_depths:
            for t in spec.threads:
                for mode in spec.modes:
                    kind = "RND" if mode.startswith("rand") else "SEQ"
                    tests.append(DiskTest(kind, mode, bs, qd, t))
                if spec.rwmix is not None:
                    tests.append(DiskTest("RND", "randrw", bs, qd, t, rwmixread=spec.rwmix))
    return tests


def profile_tests(
    profile: str, *, mix: bool = False, sweep: SweepSpec | None = None
) -> list[DiskTest]:
    if profile in _CDM_SETS:
        tests: list[DiskTest] = []
        for kind, bs, qd, t in _CDM_SETS[profile]:
            tests += _pair(kind, bs, qd, t, MIX_READ_PERCENT if mix else None)
        return tests
    if profile == "db":
        return db_tests()
    if profile == "quick":
        return quick_tests()
    if profile == "sweep":
        return sweep_tests(sweep or SweepSpec())
    raise BadInput.choice("--profile", profile, PROFILES)


@dataclass(frozen=True)
class DiskOptions:
    path: Path
    profile: str = "default"
    size: int = 1024 * MiB
    runs: int = 5
    duration: float = 5.0
    interval: float = 5.0
    data: DataPattern = DataPattern.RANDOM
    direct: bool = True
    mix: bool = False
    sweep: SweepSpec | None = None
    sample_interval: float | None = 1.0  # seconds between probe samples; None: probes off

    def tests(self) -> list[DiskTest]:
        return profile_tests(self.profile, mix=self.mix, sweep=self.sweep)

    def estimated_seconds(self) -> float:
        n = len(self.tests())
        return n * (self.runs + 1) * self.duration + max(0, n - 1) * self.interval

    def params(self) -> dict[str, object]:
        """The resolved configuration, for the cell hash and the results database."""
        return {
            "path": str(self.path.resolve()),
            "profile": self.profile,
            "size": self.size,
            "runs": self.runs,
            "duration": self.duration,
            "interval": self.interval,
            "data": self.data.value,
            "direct": self.direct,
            "tests": [t.label for t in self.tests()],
        }


PREPARE_BS = MiB  # the test file is laid out with writes of this size (prepare_job)


def check_size(options: DiskOptions) -> None:
    """Refuse a test file smaller than one block of the largest write or read made on it
    (fio would refuse it only once the run is recorded)."""
    minimum = max([PREPARE_BS, *(t.bs for t in options.tests())])
    if options.size < minimum:
        raise BadInput(
            "--size",
            options.size,
            f"give at least {format_bytes(minimum)} ({minimum:,} bytes): the test file is "
            f"written and read in blocks of up to {format_bytes(minimum)}",
        )


def check_target(options: DiskOptions) -> PathDevice:
    """Refuse a test file size or a path that cannot hold the test file, before anything is
    written."""
    check_size(options)
    path = options.path
    if not path.exists():
        raise BadInput("PATH", str(path), "give an existing directory to test")
    if not path.is_dir():
        raise BadInput("PATH", str(path), "give a directory; iolab creates its test file there")
    reason = ownership.can_write(path)
    if reason is not None:
        raise BadInput("PATH", str(path), f"give a directory you can write to ({reason})")
    target = describe(path)
    if options.size > target.free_bytes:
        raise BadInput(
            "--size",
            format_bytes(options.size),
            f"{path} has {format_bytes(target.free_bytes)} free; choose a smaller test file",
        )
    return target


def pass_job(test: DiskTest, options: DiskOptions, path: Path, pass_no: int) -> FioJob:
    """The fio job of one pass of ``test`` on the test file ``path``."""
    return FioJob(
        name=f"{test.label.replace(' ', '_').replace('/', '')}_{pass_no}",
        filename=path,
        rw=test.rw,
        bs=test.bs,
        size=options.size,
        iodepth=test.qd,
        numjobs=test.threads,
        runtime=options.duration,
        direct=options.direct,
        rwmixread=test.rwmixread,
        fdatasync=1 if test.fdatasync else 0,
        ioengine="psync" if test.fdatasync else "libaio",
        data=options.data,
    )


def prepare_job(options: DiskOptions, path: Path) -> FioJob:
    """Lay the test file out in full with 1 MiB writes before anything is measured."""
    return FioJob(
        "prepare",
        path,
        "write",
        PREPARE_BS,
        options.size,
        iodepth=8,
        direct=options.direct,
        data=options.data,
    )


@contextmanager
def test_file(directory: Path, events: EventSink) -> Iterator[Path]:
    """A test file name that iolab owns; the file is removed however the block ends."""
    ownership.reap(directory, OWNED_KIND, events=events)
    path = directory / ownership.owned_name(OWNED_KIND)
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)


def _device_bytes(
    device: str | None, before: dict[str, diskstats.DiskCounters], test: DiskTest
) -> int | None:
    if device is None or device not in before:
        return None
    delta = diskstats.read()[device] - before[device]
    if test.rw in MIXED_MODES:
        return delta.read_bytes + delta.write_bytes
    return delta.read_bytes if "read" in test.rw else delta.write_bytes


def run_profile(options: DiskOptions, outcome: RunOutcome, events: EventSink) -> None:
    """Run every test of the profile, appending each pass to ``outcome.disk_passes``.

    Passes are appended as they finish, so a caller that is interrupted still has them.
    """
    target = check_target(options)
    tests = options.tests()
    device = target.device.name if target.device else None
    if target.memory_backed:
        events(
            Warning(f"{options.path} is on {target.mount.fstype}: this measures memory, not a disk")
        )
    elif device is None:
        events(
            Warning(
                f"no block device found behind {options.path}; cannot check that I/O reached a disk"
            )
        )
    warned_cache: set[str] = set()
    with test_file(options.path, events) as path:
        events(Phase(f"writing the {format_bytes(options.size)} test file"))
        prepare = prepare_job(options, path)
        try:
            run_job(prepare)
        except RunFailed as exc:
            if options.direct and "Invalid argument" in str(exc):
                raise RunFailed(
                    f"{target.mount.fstype} at {target.mount.mount_point} refuses direct I/O "
                    "(O_DIRECT); run with --buffered to measure through the page cache"
                ) from exc
            raise
        total_passes = len(tests) * (options.runs + 1)
        done = 0
        start = time.monotonic()
        with recording(disk_recorder(options.path, options.sample_interval, events), outcome):
            for index, test in enumerate(tests):
                if index and options.interval:
                    time.sleep(options.interval)
                for pass_no in range(options.runs + 1):
                    remaining = total_passes - done
                    events(
                        Step(
                            test.label,
                            done + 1,
                            total_passes,
                            remaining * options.duration
                            + (len(tests) - index - 1) * options.interval,
                        )
                    )
                    before = diskstats.read()
                    summary = run_job(pass_job(test, options, path, pass_no))
                    reached = _device_bytes(device, before, test)
                    result = DiskPass(
                        test=test.label,
                        rw=test.rw,
                        bs=test.bs,
                        qd=test.qd,
                        threads=test.threads,
                        pass_no=pass_no,
                        seconds=summary.seconds,
                        mbps=summary.mbps,
                        iops=summary.iops,
                        lat=summary.lat,
                        sync=summary.sync,
                        io_bytes=summary.io_bytes,
                        device_bytes=reached,
                    )
                    outcome.disk_passes.append(result)
                    if summary.sync_histogram is not None:
                        outcome.sync_histograms.append(
                            SyncHistogram(test.label, pass_no, summary.sync_histogram)
                        )
                    done += 1
                    events(Measured(test.label, f"pass {pass_no}: {summary.mbps:.1f} MB/s"))
                    if (
                        reached is not None
                        and summary.io_bytes > 0
                        and reached < DIRECT_SHORTFALL * summary.io_bytes
                        and test.label not in warned_cache
                    ):
                        warned_cache.add(test.label)
                        events(
                            Warning(
                                f"{test.label}: fio moved {format_bytes(summary.io_bytes)} but "
                                f"{device} saw {format_bytes(reached)}; the page cache served it "
                                "(direct I/O not honoured?), so this is not disk speed"
                            )
                        )
        outcome.summary["elapsed_seconds"] = round(time.monotonic() - start, 1)
    outcome.summary["cache_suspected"] = sorted(warned_cache)
    # what reports and comparisons read (tests.TEST.mbps), the same from a command or a file
    outcome.summary["tests"] = test_medians(outcome.disk_passes)
