"""Does iolab's TPC-C driver keep up with sysbench driving the same MariaDB procedures?

The MariaDB side of tpcc_vs_pgbench.py. One MariaDB server (Debian's mariadbd, as iolab runs
it) in a fresh directory under ``/var/tmp``, loaded once with ``--warehouses`` of TPC-C data
(from iolab's cache) and the five SQL/PSM procedures of ``iolab tpcc --mode server``. Then, per
round and per user count, two measured runs of ``--duration`` seconds each, in alternating
order:

- **iolab**: ``workloads.tpcc.driver.drive`` -- the path ``iolab tpcc`` measures -- with N
  users, home warehouses, the 45/43/4/4/4 mix and the spec's inputs drawn in Python, each
  transaction one ``CALL tpcc_...()`` and a COMMIT (probes off: this measures the driver);
- **sysbench**: ``sysbench --threads=N --time=D`` running a Lua script written by this bench:
  the same mix, the inputs drawn by ``sysbench.rand.uniform`` as the spec's distributions (NURand
  with LuaJIT's ``bit.bor``, the same run constants), the user's home warehouse from its thread
  id, each transaction the same ``CALL`` and a COMMIT. sysbench ends a thread on an error it
  is not told to ignore, so its New-Orders never carry the unused item (iolab's do, 1 %:
  those roll back).

NOPM for both is the database's own count (the change of ``sum(d_next_o_id)`` over the run,
per minute of the run's wall time). Client CPU per transaction: this process's CPU time during
``drive`` (iolab) and sysbench's (``RUSAGE_CHILDREN``), over the transactions each ended.
Printed: per user count the median NOPM of each side and the ratio iolab / sysbench (target
>= 0.98), the median of the rounds' pairs, and both client CPU costs.

    .venv/bin/python bench/tpcc_vs_sysbench.py [--warehouses 2] [--users 4,16] [--duration 10]
        [--rounds 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import re
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
from iolab.engines.mariadb import MariaDBEngine
from iolab.errors import BadInput, IolabError
from iolab.events import discard
from iolab.workloads.drivers import tool_env, tool_path
from iolab.workloads.sysbench import run as sysbench_run
from iolab.workloads.tpcc import data as tpcc_data
from iolab.workloads.tpcc import dialects, spec, steps
from iolab.workloads.tpcc.driver import DriverOptions, drive
from iolab.workloads.tpcc.modes import SERVER

RATIO_TARGET = 0.98
IOLAB, SYSBENCH = "iolab", "sysbench"


def progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


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
  con:query("COMMIT")
end
"""


def next_o_ids(engine: MariaDBEngine) -> int:
    conn = engine.connect()
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT sum(d_next_o_id) FROM district")
            row = cur.fetchone()
        conn.commit()
    finally:
        conn.close()
    return int(row[0])


def run_iolab(
    engine: MariaDBEngine, users: int, duration: float, warehouses: int, c: spec.Constants
) -> dict[str, float]:
    dialect = dialects.dialect(engine, 2)
    options = DriverOptions(
        warehouses=warehouses, connections=users, mode=SERVER, rampup=0.5, duration=duration
    )
    before = next_o_ids(engine)
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    result = drive(dialect, engine.connect, options, c)
    seconds = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    ended = result.ended_client
    return {
        "nopm": result.nopm,
        "nopm_database_whole": (next_o_ids(engine) - before) * 60 / seconds,
        "cpu_us_per_tx": cpu / max(1, ended) * 1e6,
        "ended": ended,
    }


def run_sysbench(
    engine: MariaDBEngine, users: int, duration: int, script: Path
) -> dict[str, float]:
    program = tool_path("sysbench", sysbench_run.PACKAGE)
    argv = [program, *sysbench_run.connection(endpoint(engine)), str(script)]
    argv += [f"--threads={users}", f"--time={duration}", "run"]
    before = next_o_ids(engine)
    usage0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=tool_env(), check=False)
    seconds = time.perf_counter() - t0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise IolabError(f"sysbench failed: {(done.stderr or done.stdout).strip()[-400:]}")
    new = next_o_ids(engine) - before
    found = re.search(r"transactions:\s+(\d+)", done.stdout)
    if found is None:
        raise IolabError("sysbench printed no transaction count: " + done.stdout.strip()[-300:])
    count = int(found.group(1))
    cpu = (usage.ru_utime + usage.ru_stime) - (usage0.ru_utime + usage0.ru_stime)
    return {
        "nopm": new * 60 / seconds,
        "nopm_database_whole": new * 60 / seconds,
        "cpu_us_per_tx": cpu / max(1, count) * 1e6,
        "ended": count,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="iolab tpcc's driver vs sysbench on MariaDB")
    parser.add_argument("--warehouses", type=int, default=2)
    parser.add_argument("--users", default="4,16")
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    base: Path | None = None
    samples: dict[int, dict[str, list[dict[str, float]]]] = {}
    try:
        counts = [int(u) for u in args.users.split(",")]
        if min([args.warehouses, args.duration, args.rounds, *counts]) < 1:
            raise BadInput("--warehouses/--users/--duration/--rounds", 0, "give 1 or more")
        files = tpcc_data.ensure(args.warehouses, discard)
        base = Path(tempfile.mkdtemp(prefix="iolab-bench-tpcc-maria-", dir="/var/tmp"))
        base.chmod(0o755)
        engine = MariaDBEngine(Layout(data_dirs=(base,), settings={"max_connections": "200"}))
        progress(f"starting MariaDB in {base}; loading {args.warehouses} warehouses")
        with running(engine):
            steps.load(dialects.dialect(engine, 2), engine.connect, files, SERVER, discard)
            constants = files.constants().for_run(random.Random(1))
            script = base / "tpcc.lua"
            script.write_text(lua_script(args.warehouses, constants))
            script.chmod(0o644)
            w = args.warehouses
            run_iolab(engine, counts[0], 3.0, w, constants)  # discarded: warms the buffer pool
            for round_no in range(1, args.rounds + 1):
                for users in counts:
                    order = (IOLAB, SYSBENCH) if round_no % 2 else (SYSBENCH, IOLAB)
                    for side in order:
                        got = (
                            run_iolab(engine, users, float(args.duration), w, constants)
                            if side == IOLAB
                            else run_sysbench(engine, users, args.duration, script)
                        )
                        samples.setdefault(users, {IOLAB: [], SYSBENCH: []})[side].append(got)
                        progress(
                            f"round {round_no} {users} users {side}: {got['nopm']:,.0f} NOPM, "
                            f"{got['cpu_us_per_tx']:,.0f} us client CPU per transaction"
                        )
            version = engine.version()
    except (IolabError, subprocess.CalledProcessError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return getattr(exc, "exit_code", 1)
    finally:
        if base is not None:
            shutil.rmtree(base, ignore_errors=True)
    load = Path("/proc/loadavg").read_text().split()[:3]
    doc: dict[str, Any] = {"engine": version, "warehouses": args.warehouses, "load": load}
    doc["users"] = {}
    for users, sides in samples.items():
        med = {s: statistics.median(r["nopm"] for r in v) for s, v in sides.items()}
        cpu = {s: statistics.median(r["cpu_us_per_tx"] for r in v) for s, v in sides.items()}
        pairs = [
            ratio(a["nopm"], b["nopm"]) for a, b in zip(sides[IOLAB], sides[SYSBENCH], strict=True)
        ]
        paired = statistics.median(pairs)
        doc["users"][users] = {
            "median_nopm": med,
            "client_cpu_us_per_tx": cpu,
            "ratio": json_number(ratio(med[IOLAB], med[SYSBENCH])),
            "pairs": [json_number(p) for p in pairs],
            "paired_ratio": json_number(paired),
            "verdict": mark(paired >= RATIO_TARGET),
        }
    if args.json:
        print(json.dumps(doc, indent=2))
        return 0
    print(
        f"TPC-C driver · {version} · W {args.warehouses} · {args.duration} s runs · "
        f"load {' '.join(load)}\n"
    )
    for users, d in doc["users"].items():
        m, cpu = d["median_nopm"], d["client_cpu_us_per_tx"]
        print(
            f"  {users:>3} users: iolab {m[IOLAB]:,.0f} NOPM, sysbench {m[SYSBENCH]:,.0f} NOPM, "
            f"of the medians {d['ratio']:.3f}, median of the pairs {d['paired_ratio']:.3f} "
            f"(target >= {RATIO_TARGET}) {d['verdict']}; client CPU per transaction iolab "
            f"{cpu[IOLAB]:,.0f} us, sysbench {cpu[SYSBENCH]:,.0f} us"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
