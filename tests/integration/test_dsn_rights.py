"""Issue 43, item 17: `--dsn` as a user without the rights iolab needs.

Servers iolab starts for the test play a server of the user's; the users are created with the
exact grants of each case. A right the workload needs is refused before anything is recorded,
in one line naming the grant (exit 2, no run stored); a right it can do without (the
checkpoint before the measured part, MariaDB's performance_schema) is said once, with what is
lost, and the run goes on. Nothing iolab did not create is dropped: the users' own table and
routine stay, and cleanup drops only what the run made.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from iolab.engines import external, rights
from iolab.engines.interface import Layout, running
from iolab.engines.mariadb import MariaDBEngine
from iolab.engines.postgres import PORT, PostgresEngine
from iolab.workloads.populate import dialects
from iolab.workloads.populate.loading import TABLE
from iolab.workloads.tpcc import dialects as tpcc_dialects
from tests.conftest import make_dirs, requires_mariadb
from tests.integration.conftest import iolab

pytestmark = pytest.mark.integration

POPULATE = ["populate", "--rows", "200", "--connections", "2"]
TPCC = ["tpcc", "--connections", "2", "--warmup", "1s", "--duration", "2s"]
PG_CHECKPOINT = (
    "warning: --dsn: user owner may not run CHECKPOINT (a superuser may, or GRANT pg_checkpoint "
    "TO owner): no checkpoint settles the load before the measured part, so the server's own "
    "checkpoints write the load's pages during it"
)


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresEngine]:
    """A server with ``nocreate`` (may connect to iolab, nothing more: PostgreSQL 15+ grants
    no CREATE on public) and ``owner``, who owns the database ``owned`` (so its schema public)
    but is no superuser. Both databases hold a table of their owner's, ``mine``."""
    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="iolab-test-", dir="/var/tmp"))
    base.chmod(0o755)
    (data,) = make_dirs(base, "data")
    engine = PostgresEngine(Layout(data_dirs=(data,)))
    try:
        with running(engine):
            with engine.connect() as conn:
                conn.autocommit = True
                conn.execute("CREATE ROLE nocreate LOGIN")
                conn.execute("CREATE ROLE owner LOGIN")
                conn.execute("CREATE DATABASE owned OWNER owner")
                conn.execute("CREATE TABLE mine (v int)")
                conn.execute("INSERT INTO mine VALUES (42)")
            yield engine
    finally:
        shutil.rmtree(base, ignore_errors=True)


def pg_dsn(engine: PostgresEngine, user: str, database: str) -> str:
    return f"postgresql://{user}@/{database}?host={engine.socket_dir}&port={PORT}"


def pg_names(engine: PostgresEngine, database: str) -> list[str]:
    """Every table and routine of the public schema of ``database``."""
    import psycopg

    dsn = f"host={engine.socket_dir} port={PORT} user={engine.user.name} dbname={database}"
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE nspname = 'public' AND relkind IN ('r', 'p') UNION ALL "
            "SELECT proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
            "WHERE nspname = 'public' ORDER BY 1"
        ).fetchall()
    return [str(r[0]) for r in rows]


def refused(done: Any) -> str:
    """The one line of a refusal before anything was recorded."""
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return str(lines[0])


def stored_runs(results_db: Path) -> list[dict[str, Any]]:
    """The runs in the results database (none: a refusal before any run creates none)."""
    if not results_db.exists():
        return []
    listed = iolab("results", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    runs = json.loads(listed.stdout)
    assert isinstance(runs, list)
    return runs


def test_postgres_without_create_on_public_is_refused_before_the_load(
    postgres: PostgresEngine, results_db: Path
) -> None:
    dsn = pg_dsn(postgres, "nocreate", "iolab")
    expected = (
        f"error: --dsn: '{dsn}' is not allowed; user nocreate lacks CREATE on schema public "
        "(GRANT CREATE ON SCHEMA public TO nocreate)"
    )
    for command in (POPULATE, TPCC):
        assert refused(iolab(*command, "--dsn", dsn)) == expected
    assert stored_runs(results_db) == []
    assert pg_names(postgres, "iolab") == ["mine"]


def test_postgres_owner_without_checkpoint_skips_it_and_says_so_once(
    postgres: PostgresEngine, results_db: Path, cache: Path
) -> None:
    """The docs promise a plain owner only a TPM that lags; the checkpoint before the
    measured part needs a superuser or pg_checkpoint: skipped, and said once."""
    dsn = pg_dsn(postgres, "owner", "owned")
    with_requests = iolab(*POPULATE, "--dsn", dsn, "--checkpoint-every", "1s")
    assert refused(with_requests) == (
        "error: --checkpoint-every: '1s' is not allowed; with --dsn "
        f"{dsn}: user owner may not run CHECKPOINT (a superuser may, or GRANT pg_checkpoint "
        "TO owner)"
    )
    assert stored_runs(results_db) == []

    done = iolab(*POPULATE, "--dsn", dsn, "--json")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.count("may not run CHECKPOINT") == 1
    assert PG_CHECKPOINT in done.stderr.splitlines()
    doc = json.loads(done.stdout)
    assert (doc["status"], doc["rows"]) == ("done", 200)
    assert [w for w in doc["warnings"] if "CHECKPOINT" in w] == [PG_CHECKPOINT[len("warning: ") :]]

    tpcc = iolab(*TPCC, "--dsn", dsn, "--json")
    assert tpcc.returncode == 0, tpcc.stderr
    assert tpcc.stderr.count("may not run CHECKPOINT") == 1
    doc = json.loads(tpcc.stdout)
    assert doc["status"] == "done" and doc["nopm"] > 0
    assert [r["status"] for r in stored_runs(results_db)] == ["done", "done"]
    # what the runs made is gone; the owner's own table is not
    assert pg_names(postgres, "owned") == []
    assert pg_names(postgres, "iolab") == ["mine"]


@pytest.fixture(scope="module")
def mariadb() -> Iterator[MariaDBEngine]:
    """A server whose database iolab holds a table and a procedure of root's, ``mine`` and
    ``mine_proc``, and users with the grants of each case."""
    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="iolab-test-", dir="/var/tmp"))
    base.chmod(0o755)
    (data,) = make_dirs(base, "data")
    engine = MariaDBEngine(Layout(data_dirs=(data,)))
    users = {
        "selonly": ["SELECT ON iolab.*"],
        # the database's every right, none of the server's (SUPER), no performance_schema
        "plain": ["ALL ON iolab.*", "SELECT ON mysql.innodb_index_stats"],
        # tables but no routine rights: a run that made only its table
        "tables": ["CREATE, DROP, INSERT, SELECT ON iolab.*"],
        # the rights through a database pattern, and through a default role
        "pattern": ["ALL ON `iol%`.*", "SELECT ON mysql.innodb_index_stats"],
        "member": ["bench"],
    }
    try:
        with running(engine):
            conn = engine.connect()
            try:
                with conn.cursor() as cur:
                    cur.execute("CREATE TABLE mine (v int)")
                    cur.execute("INSERT INTO mine VALUES (42)")
                    cur.execute("CREATE PROCEDURE mine_proc() SELECT 1")
                    cur.execute("CREATE ROLE bench")
                    cur.execute("GRANT ALL ON iolab.* TO bench")
                    cur.execute("GRANT SELECT ON mysql.innodb_index_stats TO bench")
                    for user, grants in users.items():
                        cur.execute(f"CREATE USER '{user}'@'localhost'")
                        for grant in grants:
                            cur.execute(f"GRANT {grant} TO '{user}'@'localhost'")
                    cur.execute("SET DEFAULT ROLE bench FOR 'member'@'localhost'")
                conn.commit()
            finally:
                conn.close()
            yield engine
    finally:
        shutil.rmtree(base, ignore_errors=True)


def my_dsn(engine: MariaDBEngine, user: str) -> str:
    return f"mysql://{user}@localhost/iolab?unix_socket={engine.socket}"


def my_names(engine: MariaDBEngine) -> list[str]:
    conn = engine.connect()
    try:
        with conn.cursor() as cur:
            cur.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'iolab' "
                "UNION ALL SELECT routine_name FROM information_schema.routines "
                "WHERE routine_schema = 'iolab' ORDER BY 1"
            )
            return [str(r[0]) for r in cur.fetchall()]
    finally:
        conn.close()


@requires_mariadb
def test_mariadb_with_select_only_is_refused_before_the_load(
    mariadb: MariaDBEngine, results_db: Path
) -> None:
    dsn = my_dsn(mariadb, "selonly")
    user = "'selonly'@'localhost'"
    assert refused(iolab(*POPULATE, "--dsn", dsn)) == (
        f"error: --dsn: '{dsn}' is not allowed; user {user} lacks INSERT, CREATE, DROP, "
        f"CREATE ROUTINE on database iolab (GRANT INSERT, CREATE, DROP, CREATE ROUTINE ON "
        f"`iolab`.* TO {user})"
    )
    privs = "INSERT, CREATE, DROP, CREATE ROUTINE, UPDATE, DELETE, ALTER, INDEX"
    assert refused(iolab(*TPCC, "--dsn", dsn)) == (
        f"error: --dsn: '{dsn}' is not allowed; user {user} lacks {privs} on database iolab "
        f"(GRANT {privs} ON `iolab`.* TO {user})"
    )
    assert stored_runs(results_db) == []
    assert my_names(mariadb) == ["mine", "mine_proc"]


@requires_mariadb
def test_mariadb_without_super_or_performance_schema_runs_without_them(
    mariadb: MariaDBEngine, results_db: Path, cache: Path
) -> None:
    """No SUPER: InnoDB's checkpoint (SET GLOBAL) is skipped; no SELECT on performance_schema:
    TPM is the client's count and no wait events are kept. Each said once; the runs end done."""
    dsn = my_dsn(mariadb, "plain")
    user = "'plain'@'localhost'"
    no_super = (
        f"warning: --dsn: user {user} lacks SUPER, which InnoDB's checkpoint needs to SET "
        f"GLOBAL innodb_max_dirty_pages_pct (GRANT SUPER ON *.* TO {user}): no checkpoint "
        "settles the load before the measured part, so the server's own checkpoints write the "
        "load's pages during it"
    )
    no_ps = (
        f"warning: --dsn: user {user} lacks SELECT on performance_schema (GRANT SELECT ON "
        f"performance_schema.* TO {user}): the run records no wait events of its sessions, and "
        "TPC-C's TPM is the client's count"
    )
    tpcc = iolab(*TPCC, "--dsn", dsn, "--json")
    assert tpcc.returncode == 0, tpcc.stderr
    assert "Traceback" not in tpcc.stderr
    lines = tpcc.stderr.splitlines()
    assert lines.count(no_super) == 1 and lines.count(no_ps) == 1
    assert tpcc.stderr.count("lacks") == 2
    doc = json.loads(tpcc.stdout)
    assert doc["status"] == "done" and doc["nopm"] > 0
    assert doc["tpm_source"] == "client" and doc["tpm"] == doc["tpm_client"]

    populate = iolab(*POPULATE, "--dsn", dsn, "--json")
    assert populate.returncode == 0, populate.stderr
    assert populate.stderr.splitlines().count(no_super) == 1
    doc = json.loads(populate.stdout)
    assert (doc["status"], doc["rows"]) == ("done", 200)
    assert [r["status"] for r in stored_runs(results_db)] == ["done", "done"]
    assert my_names(mariadb) == ["mine", "mine_proc"]  # the runs' own dropped, root's kept


@requires_mariadb
def test_cleanup_drops_only_what_the_run_made(mariadb: MariaDBEngine) -> None:
    """A run that made its table and failed before its routines: cleanup drops the table and
    tries no routine (a user without ALTER ROUTINE was refused dropping those it never made)."""
    target = external.create(
        external.parse_dsn(my_dsn(mariadb, "tables")), dialects.objects("mariadb")
    )
    target.provision()
    conn = target.connect()
    try:
        with conn.cursor() as cur:
            cur.execute(f"CREATE TABLE {TABLE} (id int)")
        conn.commit()
    finally:
        conn.close()
    assert my_names(mariadb) == [TABLE, "mine", "mine_proc"]
    target.destroy()
    assert my_names(mariadb) == ["mine", "mine_proc"]


@requires_mariadb
def test_rights_through_a_database_pattern_or_a_role_are_taken(mariadb: MariaDBEngine) -> None:
    """SHOW GRANTS read as the server applies it: ``iol%`` covers iolab, and the default
    role's grants are the user's. Only the server-wide rights are missing: said, not refused."""
    for user in ("pattern", "member"):
        for objects in (dialects.objects("mariadb"), tpcc_dialects.objects("mariadb")):
            said = rights.check(external.parse_dsn(my_dsn(mariadb, user)), objects)
            assert [text.split(" (GRANT")[0] for text in said] == [
                f"--dsn: user '{user}'@'localhost' lacks SUPER, which InnoDB's checkpoint needs "
                "to SET GLOBAL innodb_max_dirty_pages_pct",
                f"--dsn: user '{user}'@'localhost' lacks SELECT on performance_schema",
            ]
