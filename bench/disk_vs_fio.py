"""Does iolab add overhead over plain fio? The default disk profile, side by side, in one run.

For every test of ``iolab disk --profile default`` (CrystalDiskMark 8: SEQ1M Q8T1, SEQ1M Q1T1,
RND4K Q32T1, RND4K Q1T1, each read then write) this runs, on one test file written in full
beforehand:

* iolab's pass: ``diskmark.pass_job`` (the job ``run_profile`` runs), run by ``run_job``
  (wall clock around the call, so fio's start-up and iolab's JSON parsing are included);
* plain fio: the same test as the command line a person would type, run with subprocess
  (wall clock around the subprocess), MB/s from its JSON ``bw_bytes`` / 10^6.

Each test first runs one discarded iolab pass (iolab discards its first pass too), then
alternates iolab, fio, iolab, fio, ... for ``--rounds`` rounds so that drift hits both equally.
Reported per test: the median MB/s of each side, their ratio (iolab / fio) and the ratio of the
median wall times; overall the geometric means of both ratios against their targets. This is a
measurement: it exits 0 whatever the verdict (non-zero only when it could not run).

    .venv/bin/python bench/disk_vs_fio.py [DIR] [--size 256MiB] [--duration 3] [--rounds 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compare import geometric_mean, json_number, mark, ratio, spread
from iolab import ownership
from iolab.errors import BadInput, IolabError, RunFailed
from iolab.fio.jobs import FioJob, command
from iolab.fio.runner import fio_path, fio_version, run_job
from iolab.system.devices import PathDevice
from iolab.units import format_bytes, parse_duration, parse_size
from iolab.workloads.disk.run import (
    OWNED_KIND,
    DiskOptions,
    DiskTest,
    check_target,
    pass_job,
    prepare_job,
)

KiB = 1024
MiB = 1024 * KiB
PROFILE = "default"
MBPS_TOLERANCE = 0.03  # geometric mean of MB/s ratios within 1.00 +/- this
WALL_LIMIT = 1.05  # geometric mean of wall-time ratios at most this
FIO_TIMEOUT_EXTRA = 120.0  # seconds beyond the pass length, as iolab's runner allows


# --- the two ways of running one pass -------------------------------------------------------


def _fio_amount(nbytes: int) -> str:
    """A size as a person types it for fio: 1m, 4k, 256m (fio's k/m/g are binary)."""
    for suffix, unit in (("g", 1024 * MiB), ("m", MiB), ("k", KiB)):
        if nbytes % unit == 0:
            return f"{nbytes // unit}{suffix}"
    return str(nbytes)


def _fio_runtime(seconds: float) -> str:
    if float(seconds).is_integer():
        return str(int(seconds))
    return f"{round(seconds * 1000)}ms"


def plain_fio_command(test: DiskTest, path: Path, size: int, duration: float) -> list[str]:
    """The fio command line for ``test``, written out by hand as a person would type it."""
    return [
        "fio",
        "--name=" + test.label.replace(" ", "_").lower(),
        f"--filename={path}",
        f"--rw={test.rw}",
        f"--bs={_fio_amount(test.bs)}",
        f"--iodepth={test.qd}",
        f"--numjobs={test.threads}",
        "--ioengine=libaio",
        "--direct=1",
        "--time_based",
        f"--runtime={_fio_runtime(duration)}",
        f"--size={_fio_amount(size)}",
        "--group_reporting",
        "--output-format=json",
    ]


@dataclass(frozen=True)
class Sample:
    mbps: float
    wall: float  # seconds


def run_iolab(job: FioJob) -> Sample:
    start = time.perf_counter()
    summary = run_job(job)
    wall = time.perf_counter() - start
    return Sample(summary.mbps, wall)


def _bw_bytes(stdout: str) -> float:
    """Bytes per second over all jobs and directions of fio's JSON output."""
    start = stdout.find("{")  # fio may print warnings before the JSON
    if start < 0:
        raise RunFailed(f"fio printed no JSON: {stdout.strip()[:200] or '(nothing)'}")
    data: dict[str, Any] = json.loads(stdout[start:])
    total = 0.0
    for job in data["jobs"]:
        if job.get("error"):
            raise RunFailed(f"fio job {job.get('jobname')} failed with error {job['error']}")
        total += float(job["read"]["bw_bytes"]) + float(job["write"]["bw_bytes"])
    return total


def run_plain(argv: Sequence[str], duration: float) -> Sample:
    start = time.perf_counter()
    done = subprocess.run(
        list(argv),
        capture_output=True,
        text=True,
        check=False,
        timeout=duration + FIO_TIMEOUT_EXTRA,
    )
    wall = time.perf_counter() - start
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise RunFailed(f"plain fio failed (exit {done.returncode}): {' | '.join(tail)}")
    return Sample(_bw_bytes(done.stdout) / 1e6, wall)


# --- results --------------------------------------------------------------------------------


@dataclass
class Comparison:
    label: str
    iolab_argv: list[str]
    fio_argv: list[str]
    iolab: list[Sample] = field(default_factory=list)
    fio: list[Sample] = field(default_factory=list)

    @property
    def iolab_mbps(self) -> float:
        return statistics.median(s.mbps for s in self.iolab)

    @property
    def fio_mbps(self) -> float:
        return statistics.median(s.mbps for s in self.fio)

    @property
    def mbps_ratio(self) -> float:
        return ratio(self.iolab_mbps, self.fio_mbps)

    @property
    def wall_ratio(self) -> float:
        return ratio(
            statistics.median(s.wall for s in self.iolab),
            statistics.median(s.wall for s in self.fio),
        )

    def as_json(self) -> dict[str, object]:
        return {
            "test": self.label,
            "iolab_mbps_median": json_number(self.iolab_mbps),
            "fio_mbps_median": json_number(self.fio_mbps),
            "mbps_ratio": json_number(self.mbps_ratio),
            "wall_ratio": json_number(self.wall_ratio),
            "iolab_mbps": [s.mbps for s in self.iolab],
            "fio_mbps": [s.mbps for s in self.fio],
            "iolab_wall_seconds": [s.wall for s in self.iolab],
            "fio_wall_seconds": [s.wall for s in self.fio],
            "iolab_command": self.iolab_argv,
            "fio_command": self.fio_argv,
        }


@dataclass(frozen=True)
class Verdict:
    mbps_geomean: float
    wall_geomean: float

    @property
    def mbps_pass(self) -> bool:
        return abs(self.mbps_geomean - 1.0) <= MBPS_TOLERANCE

    @property
    def wall_pass(self) -> bool:
        return self.wall_geomean <= WALL_LIMIT

    @property
    def passed(self) -> bool:
        return self.mbps_pass and self.wall_pass


def verdict(results: Sequence[Comparison]) -> Verdict:
    return Verdict(
        geometric_mean([r.mbps_ratio for r in results]),
        geometric_mean([r.wall_ratio for r in results]),
    )


def render_table(results: Sequence[Comparison], v: Verdict, header: str) -> str:
    lines = [header, ""]
    cols = ("test", "iolab MB/s", "spread", "fio MB/s", "spread", "MB/s ratio", "wall ratio")
    row = "{:<20} {:>11} {:>7} {:>11} {:>7} {:>11} {:>11}"
    lines.append(row.format(*cols))
    lines.append(row.format(*("-" * len(c) for c in cols)))
    for r in results:
        lines.append(
            row.format(
                r.label,
                f"{r.iolab_mbps:.1f}",
                f"{spread([s.mbps for s in r.iolab]):.0%}",
                f"{r.fio_mbps:.1f}",
                f"{spread([s.mbps for s in r.fio]):.0%}",
                f"{r.mbps_ratio:.3f}",
                f"{r.wall_ratio:.3f}",
            )
        )
    lines += [
        "",
        "MB/s: median over rounds; spread: (max - min) / median of a side's rounds; "
        "ratios are iolab / fio.",
        f"geometric mean MB/s ratio: {v.mbps_geomean:.3f}  "
        f"(target 1.00 +/- {MBPS_TOLERANCE:.2f})  {mark(v.mbps_pass)}",
        f"geometric mean wall ratio: {v.wall_geomean:.3f}  "
        f"(target <= {WALL_LIMIT:.2f})        {mark(v.wall_pass)}",
        "verdict: "
        + (
            "PASS: iolab adds no measurable overhead over plain fio"
            if v.passed
            else "FAIL: iolab and plain fio differ beyond the targets (see the spread columns "
            "before blaming iolab: a noisy disk fails this too)"
        ),
    ]
    if results:
        example = results[-1]
        lines += [
            "",
            f"the two command lines of {example.label}:",
            "  iolab: " + shlex.join(example.iolab_argv),
            "  fio:   " + shlex.join(example.fio_argv),
        ]
    return "\n".join(lines)


# --- the run --------------------------------------------------------------------------------


def progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def lay_out(path: Path, size: int) -> None:
    """Write the whole test file once, as ``run_profile`` does, so no pass sees sparse extents."""
    prepare = prepare_job(DiskOptions(path=path.parent, size=size), path)
    try:
        run_job(prepare)
    except RunFailed as exc:
        if "Invalid argument" in str(exc):
            raise RunFailed(
                f"{path.parent} refuses direct I/O (O_DIRECT); choose a directory on a disk"
            ) from exc
        raise


def measure(options: DiskOptions, path: Path, rounds: int) -> list[Comparison]:
    tests = options.tests()
    results: list[Comparison] = []
    total = len(tests) * (1 + 2 * rounds)
    done = 0
    for test in tests:
        plain = plain_fio_command(test, path, options.size, options.duration)
        result = Comparison(
            test.label, command(pass_job(test, options, path, 1), fio_path()), plain
        )
        done += 1
        progress(f"[{done}/{total}] {test.label}: warm-up (iolab, discarded)")
        run_iolab(pass_job(test, options, path, 0))
        for round_no in range(1, rounds + 1):
            sample = run_iolab(pass_job(test, options, path, round_no))
            result.iolab.append(sample)
            done += 1
            progress(
                f"[{done}/{total}] {test.label} round {round_no}/{rounds} iolab: "
                f"{sample.mbps:.1f} MB/s, {sample.wall:.2f} s"
            )
            sample = run_plain(plain, options.duration)
            result.fio.append(sample)
            done += 1
            progress(
                f"[{done}/{total}] {test.label} round {round_no}/{rounds} fio:   "
                f"{sample.mbps:.1f} MB/s, {sample.wall:.2f} s"
            )
        results.append(result)
    return results


def describe_target(target: PathDevice) -> str:
    device = target.device.name if target.device else "no block device"
    return f"{device}, {target.mount.fstype}"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="iolab disk vs plain fio on the default profile: does iolab add overhead?"
    )
    parser.add_argument(
        "dir",
        nargs="?",
        type=Path,
        help="directory on the disk to test (default: a fresh temp dir under /var/tmp)",
    )
    parser.add_argument("--size", default="256MiB", help="test file size (default 256MiB)")
    parser.add_argument("--duration", default="3", help="seconds per pass (default 3)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per test (default 3)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        size = parse_size(args.size, "--size")
        duration = parse_duration(args.duration, "--duration")
        if duration < 1:
            raise BadInput("--duration", args.duration, "give at least 1 second per pass")
        if args.rounds < 1:
            raise BadInput("--rounds", args.rounds, "give at least 1 round")
        fio_path()  # fail early, saying how to install fio
    except IolabError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code

    made_dir: Path | None = None
    test_path: Path | None = None
    try:
        if args.dir is None:
            made_dir = Path(tempfile.mkdtemp(prefix="iolab-bench-", dir="/var/tmp"))
        directory: Path = made_dir or args.dir
        options = DiskOptions(
            path=directory, profile=PROFILE, size=size, runs=args.rounds, duration=duration
        )
        target = check_target(options)
        if target.memory_backed:
            progress(f"warning: {directory} is on {target.mount.fstype}: this measures memory")
        # an iolab-owned name: a later `iolab disk` on DIR removes it if this process is killed
        test_path = directory / ownership.owned_name(OWNED_KIND)
        progress(f"writing the {format_bytes(size)} test file {test_path}")
        lay_out(test_path, size)
        results = measure(options, test_path, args.rounds)
    except IolabError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted; test file removed", file=sys.stderr)
        return 130
    finally:
        if test_path is not None:
            test_path.unlink(missing_ok=True)
        if made_dir is not None:
            shutil.rmtree(made_dir, ignore_errors=True)

    v = verdict(results)
    header = (
        f"iolab vs plain fio · {PROFILE} profile · {directory.resolve()} "
        f"({describe_target(target)}) · {format_bytes(size)} file · {duration:g} s passes · "
        f"{args.rounds} rounds · fio {fio_version()}"
    )
    if args.json:
        doc = {
            "directory": str(directory.resolve()),
            "target": describe_target(target),
            "profile": PROFILE,
            "size_bytes": size,
            "duration_seconds": duration,
            "rounds": args.rounds,
            "fio": fio_version(),
            "tests": [r.as_json() for r in results],
            "mbps_ratio_geomean": json_number(v.mbps_geomean),
            "mbps_target": [1.0 - MBPS_TOLERANCE, 1.0 + MBPS_TOLERANCE],
            "mbps_pass": v.mbps_pass,
            "wall_ratio_geomean": json_number(v.wall_geomean),
            "wall_target_max": WALL_LIMIT,
            "wall_pass": v.wall_pass,
            "verdict": mark(v.passed),
        }
        print(json.dumps(doc, indent=2))
    else:
        print(render_table(results, v, header))
    return 0


if __name__ == "__main__":
    sys.exit(main())
