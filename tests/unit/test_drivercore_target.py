"""The one seam between the workloads and the compiled driver core: an engine's
``core_target()`` (drivercore.Target), which populate's loaders and TPC-C's users both connect
with and word their errors by, as the Python path's drivers word them."""

from __future__ import annotations

import random

import pytest

from iolab import drivercore
from iolab.engines import external
from iolab.engines.core_target import LibpqTarget, MariaDBTarget
from iolab.workloads.populate import dialects as populate_dialects
from iolab.workloads.tpcc.mariadb import MariaDBTpcc

OBJECTS = populate_dialects.objects("postgres")


def test_a_servers_target_connects_as_the_engine_does_and_keeps_the_password_apart() -> None:
    pg = external.create(
        external.parse_dsn("postgresql://bench:s3cret@db.example:6432/lab"), OBJECTS
    ).core_target()
    assert pg is not None and pg.library == "postgres"
    params = pg.params()
    assert params["password"] == "s3cret" and "s3cret" not in params["dbname"]
    assert "s3cret" not in repr(pg)
    my = external.create(
        external.parse_dsn("mysql://bench:s3cret@localhost/lab?unix_socket=/run/m.sock"),
        populate_dialects.objects("mariadb"),
    ).core_target()
    assert my is not None and my.library == "mariadb"
    assert {k: my.params()[k] for k in ("user", "password", "database", "unix_socket")} == {
        "user": "bench",
        "password": "s3cret",
        "database": "lab",
        "unix_socket": "/run/m.sock",
    }
    assert "s3cret" not in repr(my)


def test_a_failed_statement_is_worded_as_the_python_paths_driver_words_it() -> None:
    """psycopg: the server's message; PyMySQL: ``(code, 'message')``, the bare message where
    the core has no error number (its own failures)."""
    assert LibpqTarget({}).error(None, "deadlock detected") == "deadlock detected"
    assert LibpqTarget({}).error(0, "deadlock detected") == "deadlock detected"
    said = MariaDBTarget({}).error(1213, "Deadlock found when trying to get lock")
    assert said == "(1213, 'Deadlock found when trying to get lock')"
    assert MariaDBTarget({}).error(None, "out of memory for latencies") == (
        "out of memory for latencies"
    )


def test_tpccs_dialects_carry_the_engines_target() -> None:
    target = MariaDBTarget({"unix_socket": "/run/m.sock"})
    assert MariaDBTpcc([], lambda: None, 2, target).core is target
    assert MariaDBTpcc([], lambda: None).core is None  # no engine's target: the Python path


@pytest.mark.skipif(drivercore.native() is None, reason="the compiled core is not built")
@pytest.mark.parametrize(
    ("target", "code"),
    [
        (LibpqTarget({"host": "/nonexistent-iolab", "dbname": "x", "connect_timeout": "2"}), None),
        (MariaDBTarget({"unix_socket": "/nonexistent-iolab/s.sock", "user": "root"}), 2002),
    ],
)
def test_tpccs_users_refused_are_one_line_as_populates_loaders(
    target: drivercore.Target, code: int | None
) -> None:
    """Tpcc.connect() on a socket with no server: the first user's (index, code, message), as
    Populate.open() gives it, never a crash; the target words it."""
    module = drivercore.native()
    assert module is not None
    users = module.Tpcc(
        engine=target.library,
        params=target.params(),
        mix=(45, 43, 4, 4, 4),
        warehouses=1,
        all_warehouses=False,
        rate=0.0,
        interval_s=1.0,
        states=[random.Random(i).getstate() for i in range(2)],
        constants=(1, 2, 3),
    )
    refused = users.connect()
    assert refused is not None
    index, got, message = refused
    assert index == 0 and got == code and message and "\n" not in message
    said = target.error(got, message)
    assert said == (message if code is None else f"({code}, {message!r})")
    users.disconnect()
