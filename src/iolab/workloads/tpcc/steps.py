"""The steps of a TPC-C run on a running engine: load the cached data, install the routines,
drive the users, check consistency, and the run's numbers (docs/tpcc.md)."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from iolab.errors import RunFailed
from iolab.events import EventSink, Phase
from iolab.units import format_bytes
from iolab.workloads.tpcc import consistency, spec
from iolab.workloads.tpcc.data import TpccFiles
from iolab.workloads.tpcc.dialect import Connect, TpccDialect
from iolab.workloads.tpcc.driver import DriveResult, DriverOptions, Live, drive
from iolab.workloads.tpcc.modes import SERVER
from iolab.workloads.tpcc.spec import Constants

AGREEMENT = 0.01  # the NOPM counts may differ by this fraction at most


@dataclass(frozen=True)
class Loaded:
    seconds: float
    index_seconds: float
    csv_bytes: int
    rows: dict[str, int]


def load(
    dialect: TpccDialect, connect: Connect, files: TpccFiles, mode: str, events: EventSink
) -> Loaded:
    """Tables, bulk load, keys and statistics, routines; the rows are counted against the
    generator's."""
    conn = connect()
    try:
        dialect.create_tables(conn)
    finally:
        conn.close()
    total = files.total_bytes
    events(Phase(f"loading {format_bytes(total)} of CSV ({files.warehouses} warehouses)"))
    t0 = time.perf_counter()
    dialect.load(connect, files.directory, lambda n: None)
    loaded = time.perf_counter() - t0
    events(Phase("building keys and indexes, gathering statistics"))
    t1 = time.perf_counter()
    dialect.finish_load(connect)
    index_seconds = time.perf_counter() - t1
    conn = connect()
    try:
        if mode == SERVER:
            dialect.install_routines(conn)
        rows = row_counts(conn)
        dialect.rollback(conn)
    finally:
        conn.close()
    expected = files.rows()
    if rows != expected:
        wrong = [f"{t}: {rows.get(t)} rows, expected {n}" for t, n in expected.items()]
        raise RunFailed("the load lost or added rows: " + "; ".join(wrong))
    return Loaded(loaded, index_seconds, total, rows)


def row_counts(conn: Any) -> dict[str, int]:
    cur = conn.cursor()
    try:
        counts = {}
        for table in spec.TABLES:
            cur.execute(f"SELECT count(*) FROM {table}")
            counts[table] = int(cur.fetchone()[0])
        return counts
    finally:
        cur.close()


def measure(
    dialect: TpccDialect,
    connect: Connect,
    options: DriverOptions,
    constants: Constants,
    on_phase: Callable[[str, float], None] | None = None,
    around: Callable[[list[Any], Live], AbstractContextManager[object]] | None = None,
) -> tuple[DriveResult, list[consistency.Condition]]:
    """Drive the users, then check the conditions."""
    result = drive(dialect, connect, options, constants, on_phase, around)
    conn = connect()
    try:
        conditions = consistency.check(conn)
    finally:
        conn.close()
    return result, conditions


def summary(result: DriveResult, conditions: list[consistency.Condition]) -> dict[str, Any]:
    """The run's numbers as ``--json`` carries them."""
    tpm = result.tpm
    return {
        "nopm": result.nopm,
        "nopm_client": result.nopm_client,
        "nopm_orders": result.nopm_orders,
        "tpm": tpm if tpm is not None else result.tpm_client,
        "tpm_source": "database" if tpm is not None else "client",
        "tpm_client": result.tpm_client,
        "measured_seconds": result.seconds,
        "new_orders": result.end.next_o_ids - result.start.next_o_ids,
        "transactions": result.transactions(),
        "consistency": {
            "ok": all(c.ok for c in conditions),
            "conditions": [{"name": c.name, "ok": c.ok, "detail": c.detail} for c in conditions],
        },
        **result.core.record(),  # driver_core, driver_core_reason
    }


def verdict(doc: dict[str, Any]) -> str | None:
    """Why the run fails (NOPM counts apart, a condition broken), or None."""
    failed = [c for c in doc["consistency"]["conditions"] if not c["ok"]]
    if failed:
        return "; ".join(f"{c['name']}: {c['detail']}" for c in failed)
    counts = {"database": doc["nopm"], "client": doc["nopm_client"], "orders": doc["nopm_orders"]}
    high, low = max(counts.values()), min(counts.values())
    if high > 0 and (high - low) / high > AGREEMENT:
        shown = ", ".join(f"{k} {v:,.1f}" for k, v in counts.items())
        return f"the NOPM counts disagree by more than {AGREEMENT:.0%}: {shown}"
    return None
