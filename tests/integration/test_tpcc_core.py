"""TPC-C's core against real engines at one warehouse: the load, the five transactions in both
modes, the three NOPM counts agreeing, the consistency conditions holding after the run and
catching a database that breaks them.

The generated data (about 80 MB, once) lives in the session's shared cache (``cache``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from iolab.engines import catalog
from iolab.engines.interface import Layout, running
from iolab.events import Collect
from iolab.workloads.tpcc import consistency, data, dialects, spec
from iolab.workloads.tpcc import steps as tpcc
from iolab.workloads.tpcc.driver import DriverOptions
from iolab.workloads.tpcc.modes import CLIENT, SERVER
from tests.conftest import make_dirs, requires_mariadb

pytestmark = pytest.mark.integration

USERS = 3


def measured(engine: Any, mode: str, files: data.TpccFiles) -> dict[str, Any]:
    dialect = dialects.dialect(engine, 2)
    options = DriverOptions(warehouses=1, connections=USERS, mode=mode, rampup=1, duration=3)
    result, conditions = tpcc.measure(dialect, engine.connect, options, files.constants())
    doc = tpcc.summary(result, conditions)
    assert tpcc.verdict(doc) is None, tpcc.verdict(doc)
    # the database's New-Order count, its orders and the client's commits: the same orders
    assert doc["new_orders"] > 0
    assert doc["nopm"] == doc["nopm_client"] == doc["nopm_orders"]
    assert doc["transactions"]["new_order"]["count"] == doc["new_orders"]
    for kind in spec.TRANSACTIONS:
        t = doc["transactions"][kind]
        assert t["count"] > 0, kind
        assert 0 < t["p50_us"] <= t["p99_us"] <= t["max_us"], kind
    assert doc["consistency"]["ok"] is True
    assert [c["name"] for c in doc["consistency"]["conditions"]] == [
        "condition 1",
        "condition 2",
        "condition 3",
        "condition 4",
        "unused_item",
    ]
    return doc


def loaded(engine: Any, mode: str, files: data.TpccFiles) -> None:
    done = tpcc.load(dialects.dialect(engine, 2), engine.connect, files, mode, Collect())
    assert done.rows == files.rows()
    assert done.rows["stock"] == spec.STOCK and done.rows["new_order"] == 9_000
    assert 295_000 < done.rows["order_line"] < 305_000  # 30,000 orders of 5-15 lines


def test_postgres_server_then_client_mode_on_two_tablespaces(cache: Path, open_tmp: Path) -> None:
    a, b = make_dirs(open_tmp, "a", "b")
    files = data.ensure(1, Collect())
    assert files.directory.parent == cache / "tpcc"
    engine: Any = catalog.create("postgres", Layout(data_dirs=(a, b), files=2))
    with running(engine):
        loaded(engine, SERVER, files)
        with engine.connect() as conn:
            spaces = dict(
                conn.execute(
                    "SELECT tablename, coalesce(tablespace, (SELECT spcname FROM pg_database d "
                    "JOIN pg_tablespace s ON s.oid = d.dattablespace "
                    "WHERE datname = current_database())) "
                    "FROM pg_tables WHERE schemaname = 'public'"
                ).fetchall()
            )
        assert set(spaces) == set(spec.TABLES)
        assert set(spaces.values()) == {"iolab_ts_0", "iolab_ts_1"}
        doc = measured(engine, SERVER, files)
        # the routines raised the spec's rollback; nothing of a rolled-back order remains
        assert doc["tpm_source"] == "database"
        assert abs(doc["tpm"] - doc["tpm_client"]) <= 0.05 * doc["tpm_client"]
        measured(engine, CLIENT, files)


@requires_mariadb
def test_mariadb_server_mode(cache: Path, open_tmp: Path) -> None:
    (a,) = make_dirs(open_tmp, "a")
    files = data.ensure(1, Collect())
    engine: Any = catalog.create("mariadb", Layout(data_dirs=(a,)))
    with running(engine):
        loaded(engine, SERVER, files)
        doc = measured(engine, SERVER, files)
        assert doc["tpm_source"] == "database"
        assert abs(doc["tpm"] - doc["tpm_client"]) <= 0.05 * doc["tpm_client"]


def test_sqlite_client_mode_and_broken_conditions_are_named(cache: Path, open_tmp: Path) -> None:
    a, b = make_dirs(open_tmp, "a", "b")
    files = data.ensure(1, Collect())
    engine: Any = catalog.create("sqlite", Layout(data_dirs=(a, b), files=2))
    with running(engine):
        loaded(engine, CLIENT, files)
        doc = measured(engine, CLIENT, files)
        assert doc["tpm_source"] == "client" and doc["tpm"] == doc["tpm_client"]
        conn = engine.connect()
        try:
            conn.execute("UPDATE warehouse SET w_ytd = w_ytd + 1")
            conn.execute("DELETE FROM order_line WHERE ol_o_id = 5 AND ol_d_id = 3")
            conn.execute(
                "INSERT INTO order_line VALUES (1, 1, 1, 99, 100001, 1, NULL, 1, 1.0, 'x')"
            )
            found = {c.name: c for c in consistency.check(conn)}
        finally:
            conn.close()
    assert not found["condition 1"].ok and "warehouse 1: w_ytd" in found["condition 1"].detail
    assert found["condition 2"].ok and found["condition 3"].ok
    assert (
        not found["condition 4"].ok and "district 3 of warehouse 1" in found["condition 4"].detail
    )
    assert not found["unused_item"].ok and "1 order lines" in found["unused_item"].detail
