"""What does the model stack (nbdkit + iolab's plugin + nbdfuse + loop) cost per I/O?

Two testbed devices side by side, in a private state directory under /var/tmp (taken down and
removed at the end, on Ctrl-C and errors too): ``plain``, a loop device on its file, and
``null``, the same behind the model stack with the zero-cost ``null`` model. On a test file
(``--size``) on each, fio runs 4K random reads and writes at QD 1 and QD 32 (``--duration``
seconds each, libaio, O_DIRECT), alternating plain and null for ``--rounds`` rounds. Printed:
the median IOPS and mean latency of each side and the ratio null / plain. The stack is what a
model adds on top of its own charge; a model's latency is faithful where it is large next to
this (docs/testbed.md).

    .venv/bin/python bench/model_stack.py [--size 64MiB] [--duration 3] [--rounds 3] [--json]

Needs root, nbdkit, nbdkit-plugin-python, libnbd-bin, fuse3 and fio. Exits 0 whatever the
numbers, 1 when it could not run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from iolab import testbed
from iolab.errors import IolabError
from iolab.testbed import nbd

TESTS = [("randread", 1), ("randread", 32), ("randwrite", 1), ("randwrite", 32)]


def fio(path: Path, rw: str, qd: int, size: str, duration: float) -> tuple[float, float]:
    """(IOPS, mean latency in us) of one fio run."""
    done = subprocess.run(
        [
            "fio", "--name=stack", f"--filename={path}", f"--rw={rw}", "--bs=4k",
            f"--iodepth={qd}", "--ioengine=libaio", "--direct=1", f"--size={size}",
            "--time_based", f"--runtime={duration}", "--output-format=json",
        ],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    job = json.loads(done.stdout)["jobs"][0]["read" if rw == "randread" else "write"]
    return float(job["iops"]), float(job["lat_ns"]["mean"]) / 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="64MiB")
    parser.add_argument("--duration", type=float, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    why = testbed.unavailable_reason(limits=False) or nbd.unavailable_reason()
    if why is not None or shutil.which("fio") is None:
        print(f"cannot run: {why or 'fio is not installed'}", file=sys.stderr)
        return 1
    base = Path(tempfile.mkdtemp(prefix="iolab-bench-stack-", dir="/var/tmp"))
    base.chmod(0o755)
    files = Path(tempfile.mkdtemp(prefix="iolab-bench-stack-files-", dir="/var/tmp"))
    os.environ["IOLAB_TESTBED_DIR"] = str(base)
    results: dict[str, dict[str, list[tuple[float, float]]]] = {}
    try:
        specs = testbed.parse_devices(
            {
                "plain": {"size": "256MiB", "backing_dir": str(files)},
                "null": {"size": "256MiB", "backing_dir": str(files), "model": "null"},
            }
        )
        bed = testbed.up(specs)
        targets = {d.name: d.mount_point / "stack.dat" for d in bed.devices}
        for path in targets.values():  # laid out once, so writes allocate nothing
            subprocess.run(
                ["fio", "--name=fill", f"--filename={path}", "--rw=write", "--bs=1M",
                 f"--size={args.size}", "--direct=1", "--output-format=json"],
                capture_output=True, check=True,
            )  # fmt: skip
        for rw, qd in TESTS:
            label = f"{rw} QD{qd}"
            results[label] = {"plain": [], "null": []}
            for _ in range(args.rounds):
                for side in ("plain", "null"):
                    got = fio(targets[side], rw, qd, args.size, args.duration)
                    results[label][side].append(got)
                    print(f"{label} {side}: {got[0]:.0f} IOPS, {got[1]:.0f} us", file=sys.stderr)
    except (IolabError, subprocess.CalledProcessError) as exc:
        print(f"cannot run: {exc}", file=sys.stderr)
        return 1
    finally:
        testbed.down()
        shutil.rmtree(files, ignore_errors=True)
        shutil.rmtree(base, ignore_errors=True)
    summary = {}
    for label, sides in results.items():
        iops = {s: statistics.median(v[0] for v in runs) for s, runs in sides.items()}
        lat = {s: statistics.median(v[1] for v in runs) for s, runs in sides.items()}
        summary[label] = {
            "plain_iops": iops["plain"],
            "null_iops": iops["null"],
            "iops_ratio": iops["null"] / iops["plain"],
            "plain_lat_us": lat["plain"],
            "null_lat_us": lat["null"],
            "added_lat_us": lat["null"] - lat["plain"],
        }
    if args.json:
        print(json.dumps({"tests": summary, "raw": results}, indent=2))
        return 0
    print(f"{'test':<14} {'plain IOPS':>10} {'null IOPS':>10} {'ratio':>6} "
          f"{'plain us':>9} {'null us':>8} {'added us':>9}")  # fmt: skip
    for label, row in summary.items():
        print(
            f"{label:<14} {row['plain_iops']:>10.0f} {row['null_iops']:>10.0f} "
            f"{row['iops_ratio']:>6.2f} {row['plain_lat_us']:>9.0f} {row['null_lat_us']:>8.0f} "
            f"{row['added_lat_us']:>9.0f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
