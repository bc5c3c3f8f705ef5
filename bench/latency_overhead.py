"""Does timing every operation slow the load down? The same populate with per-operation latency
recording on and off, alternately, at 16 and 64 connections, with the probes on throughout.

The paired rounds of ``bench/probe_overhead.py`` (one PostgreSQL server from the wheel, the
seed's table, one row per implicit transaction, a discarded first load, the order flipped every
round), with the switch on the loaders' clocks: on, each statement is timed into the run's
histograms as ``iolab populate`` does; off, the loaders never read the clock. Reported per
connection count: the median rows/s of each side, the ratio on / off (target >= 0.99) and the
paired ratios. It exits 0 whatever the verdict (2 on bad input, 1 when it could not run).

    .venv/bin/python bench/latency_overhead.py [--engine postgres] [--rows 20000]
        [--connections 16,64] [--rounds 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from compare import mark
from harness import one_line
from iolab.errors import BadInput
from probe_overhead import measure, render


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="populate with latency timing on vs off")
    parser.add_argument("--engine", default="postgres", help="postgres (default) or mariadb")
    parser.add_argument("--rows", type=int, default=20000, help="rows per load (20000)")
    parser.add_argument("--connections", default="16,64", help="connection counts (16,64)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds, each on and off (5)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    return parser.parse_args(argv)


@one_line
def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.engine not in ("postgres", "mariadb"):
        raise BadInput.choice("--engine", args.engine, ("postgres", "mariadb"))
    counts = [int(c) for c in args.connections.split(",") if c.strip().isdigit()]
    if not counts or min(counts) < 1 or args.rows < max(counts):
        raise BadInput("--connections", args.connections, "give counts from 1 to --rows")
    if args.rounds < 1:
        raise BadInput("--rounds", args.rounds, "give at least 1 round")
    found = [measure(args.engine, args.rows, c, args.rounds, 1.0, "latency") for c in counts]
    if args.json:
        doc = {
            "engine_version": found[0][1],
            "results": [r.as_json() for r, _ in found],
            "verdict": mark(all(r.passed for r, _ in found)),
        }
        print(json.dumps(doc, indent=2))
    else:
        print("\n\n".join(render(r, version) for r, version in found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
