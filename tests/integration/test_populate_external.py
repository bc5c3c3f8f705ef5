"""`iolab populate --dsn`: a server iolab does not manage (here one it started for the test)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from iolab.engines.external import parse_dsn
from iolab.engines.interface import Layout, running
from iolab.engines.mariadb import MariaDBEngine
from iolab.engines.postgres import PORT, PostgresEngine
from iolab.errors import BadInput
from iolab.workloads.populate.loading import TABLE
from tests.conftest import make_dirs, requires_mariadb
from tests.integration.test_populate_cli import iolab

pytestmark = pytest.mark.integration
SECRET = "s3cret-Pw-never-stored"


@pytest.fixture
def postgres(open_tmp: Path) -> Iterator[PostgresEngine]:
    (data,) = make_dirs(open_tmp, "data")
    engine = PostgresEngine(Layout(data_dirs=(data,)))
    with running(engine):
        yield engine


def pg_dsn(engine: PostgresEngine, password: str = SECRET) -> str:
    return f"postgresql://{engine.user.name}:{password}@/iolab?host={engine.socket_dir}&port={PORT}"


def test_parse_dsn_keeps_the_password_out_of_every_shown_form() -> None:
    t = parse_dsn("postgresql://bob:hunter2@db.example:6543/sales?sslmode=require")
    assert (t.engine, t.user, t.host, t.port, t.database) == (
        "postgres",
        "bob",
        "db.example",
        6543,
        "sales",
    )
    assert t.redacted == "postgresql://bob@db.example:6543/sales?sslmode=require"
    assert "hunter2" not in repr(t)
    m = parse_dsn("mysql://root@localhost/iolab?unix_socket=/run/mysqld/mysqld.sock")
    assert (m.engine, m.unix_socket, m.database) == ("mariadb", "/run/mysqld/mysqld.sock", "iolab")
    with pytest.raises(BadInput) as bad:
        parse_dsn("oracle://scott:tiger@host/orcl")
    assert "tiger" not in str(bad.value)
    assert "--dsn: 'oracle://scott@host/orcl' is not allowed" in str(bad.value)
    with pytest.raises(BadInput, match="name the database"):
        parse_dsn("mysql://root@localhost")


def test_populate_postgres_through_a_dsn(postgres: PostgresEngine, results_db: Path) -> None:
    done = iolab(
        "populate", "--dsn", pg_dsn(postgres), "--rows", "240", "--connections", "4", "--json"
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["status"] == "done"
    assert doc["engine"] == "postgres"
    assert doc["rows"] == 240
    assert doc["pages_per_row"] == pytest.approx(1.0, abs=0.02)
    assert doc["wal_bytes"] >= 240 * 4045
    # the data directory is local, so iolab found it and its device
    assert doc["placement"]["data"] == [str(postgres.cluster_dir.resolve())]  # type: ignore[union-attr]
    # the password is in no output, no result and no byte of the results database
    assert SECRET not in done.stdout + done.stderr
    for path in results_db.parent.glob(results_db.name + "*"):
        assert SECRET.encode() not in path.read_bytes()
    (run,) = json.loads(iolab("results", "list", "--json").stdout)
    assert run["params"]["dsn"].startswith(f"postgresql://{postgres.user.name}@/iolab?host=")
    # what iolab created in the database is gone again; the server still runs
    with postgres.connect() as conn:
        left = conn.execute(
            "SELECT count(*) FROM pg_class WHERE relname LIKE 'iolab\\_populate%%'"
        ).fetchone()
        procs = conn.execute("SELECT count(*) FROM pg_proc WHERE proname = 'iolab_load'").fetchone()
    assert left == (0,)
    assert procs == (0,)


def test_an_existing_table_is_never_dropped(postgres: PostgresEngine, results_db: Path) -> None:
    with postgres.connect() as conn:
        conn.execute(f"CREATE TABLE {TABLE} (mine int)")
        conn.execute(f"INSERT INTO {TABLE} VALUES (42)")
        conn.commit()
    done = iolab("populate", "--dsn", pg_dsn(postgres), "--rows", "40", "--connections", "2")
    assert done.returncode == 1
    assert "already holds iolab_populate" in done.stderr
    assert "never drops what it did not create" in done.stderr
    assert SECRET not in done.stderr
    with postgres.connect() as conn:
        assert conn.execute(f"SELECT mine FROM {TABLE}").fetchall() == [(42,)]


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--data-dir", "/tmp"], "--data-dir"),
        (["--files", "4"], "--files"),
        (["--wal-dir", "/tmp"], "--wal-dir"),
        (["--set", "shared_buffers=1GB"], "--set"),
        (["--engine", "mariadb"], "--engine"),
    ],
)
def test_layout_options_are_refused_with_a_dsn(
    args: list[str], field: str, results_db: Path
) -> None:
    done = iolab("populate", "--dsn", f"postgresql://me:{SECRET}@/db?host=/nowhere", *args)
    assert done.returncode == 2
    assert done.stderr.startswith(f"error: {field}:")
    assert SECRET not in done.stderr
    assert "Traceback" not in done.stderr


def test_unreachable_server_is_one_line_without_the_password(results_db: Path) -> None:
    done = iolab(
        "populate", "--dsn", f"postgresql://me:{SECRET}@/db?host=/nonexistent-dir", "--rows", "20"
    )
    assert done.returncode == 1
    assert "cannot connect to postgresql://me@/db?host=/nonexistent-dir" in done.stderr
    assert SECRET not in done.stderr
    assert "Traceback" not in done.stderr


@requires_mariadb
def test_populate_mariadb_through_a_dsn(open_tmp: Path, results_db: Path) -> None:
    (data,) = make_dirs(open_tmp, "data")
    engine = MariaDBEngine(Layout(data_dirs=(data,)))
    with running(engine):
        dsn = f"mysql://root@localhost/iolab?unix_socket={engine.socket}"
        done = iolab("populate", "--dsn", dsn, "--rows", "120", "--connections", "3", "--json")
        assert done.returncode == 0, done.stderr
        doc = json.loads(done.stdout)
        assert (doc["engine"], doc["rows"]) == ("mariadb", 120)
        assert doc["pages_per_row"] == pytest.approx(0.5, abs=0.05)
        conn = engine.connect()
        try:
            with conn.cursor() as cur:
                cur.execute(f"SHOW TABLES LIKE '{TABLE}'")
                assert cur.fetchall() == ()
        finally:
            conn.close()
