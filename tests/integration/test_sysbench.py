"""sysbench run by iolab on a MariaDB and a PostgreSQL it provisioned: the numbers iolab records
are sysbench's own, its progress adds up to its count, its histogram gives the percentiles, the
script is kept with the run, and a failing script fails the run with sysbench's own words and
leaves nothing behind. Real servers, Debian's sysbench (2 tables of 1000 rows, 3 s)."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from pathlib import Path

import pytest

from iolab.engines.interface import Layout, running
from iolab.engines.mariadb import MariaDBEngine
from iolab.engines.postgres import PORT, PostgresEngine
from iolab.errors import RunFailed
from iolab.events import Collect
from iolab.results import RunOutcome, RunStatus
from iolab.workloads.sysbench.arguments import SCRIPT_DIR
from iolab.workloads.sysbench.run import SysbenchOptions, run_sysbench
from tests.conftest import make_dirs, requires_mariadb
from tests.integration.conftest import iolab

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not SCRIPT_DIR.is_dir(), reason="sysbench is not installed"),
]

SELECTS = """\
function thread_init()
  drv = sysbench.sql.driver()
  con = drv:connect()
end
function event()
  con:query("SELECT count(*) FROM generate_series(1, 100)")
end
function thread_done()
  con:disconnect()
end
"""


def _printed(text: str, pattern: str) -> str:
    found = re.search(pattern, text, re.MULTILINE)
    assert found is not None, text
    return found.group(1)


@requires_mariadb
def test_sysbench_oltp_on_mariadb_numbers_are_its_own(open_tmp: Path) -> None:
    data, redo = make_dirs(open_tmp, "data", "redo")
    words = ("oltp_read_write", "--tables=2", "--table-size=1000", "--threads=2", "--time=3")
    options = SysbenchOptions("mariadb", Layout((data,), wal_dir=redo), words)
    outcome = RunOutcome(RunStatus.RUNNING)
    run_sysbench(options, outcome, Collect())
    s = outcome.summary
    printed = outcome.logs["sysbench"]
    assert s["tps"] == float(_printed(printed, r"transactions:\s+\d+\s+\(([\d.]+) per sec\.\)"))
    assert s["qps"] == float(_printed(printed, r"queries:\s+\d+\s+\(([\d.]+) per sec\.\)"))
    assert s["latency_avg_ms"] == float(_printed(printed, r"^\s+avg:\s+([\d.]+)$"))
    assert s["percentile"] == 95 and s["latency_pct_ms"] > 0
    assert s["prepared"] is True and s["transactions"] > 0
    assert outcome.probes is not None
    (tps,) = outcome.probes.find("sysbench", "tps")
    assert abs(tps.total - s["transactions"]) <= s["tps"] * 1.0
    # percentiles from sysbench's histogram (its buckets are all there is), and said so
    latency = s["latency"]["transaction"]
    assert latency["count"] == s["transactions"]
    assert abs(latency["mean_us"] / 1000 - s["latency_avg_ms"]) <= 0.03 * s["latency_avg_ms"]
    assert "histogram" in s["latency_source"]
    builtin = (SCRIPT_DIR / "oltp_read_write.lua").read_bytes()
    assert s["script"]["sha256"] == hashlib.sha256(builtin).hexdigest()
    assert s["script"]["builtin"] is True
    assert any(x.key.probe == "device" and "wal" in x.key.role for x in outcome.probes.series)
    assert list(data.iterdir()) == [] and list(redo.iterdir()) == []


def test_a_lua_script_of_the_users_on_postgres_is_kept_with_the_run(open_tmp: Path) -> None:
    (data,) = make_dirs(open_tmp, "data")
    script = open_tmp / "selects.lua"
    script.write_text(SELECTS)
    options = SysbenchOptions("postgres", Layout((data,)), (str(script), "--time=2"))
    outcome = RunOutcome(RunStatus.RUNNING)
    run_sysbench(options, outcome, Collect())
    s = outcome.summary
    assert s["prepared"] is False  # sysbench said the script has nothing to prepare
    assert s["tps"] == float(
        _printed(outcome.logs["sysbench"], r"transactions:\s+\d+\s+\(([\d.]+) per sec\.\)")
    )
    assert s["script"]["sha256"] == hashlib.sha256(SELECTS.encode()).hexdigest()
    assert outcome.logs["script selects.lua"] == SELECTS
    assert list(data.iterdir()) == []


def test_a_failing_script_fails_the_run_with_sysbench_s_words(open_tmp: Path) -> None:
    (data,) = make_dirs(open_tmp, "data")
    script = open_tmp / "broken.lua"
    script.write_text(SELECTS.replace("generate_series(1, 100)", "no_such_table"))
    options = SysbenchOptions("postgres", Layout((data,)), (str(script), "--time=2"))
    outcome = RunOutcome(RunStatus.RUNNING)
    with pytest.raises(RunFailed) as failed:
        run_sysbench(options, outcome, Collect())
    assert "sysbench failed" in str(failed.value) and "no_such_table" in str(failed.value)
    assert list(data.iterdir()) == []


SECRET = "s3cret-Sb-never-stored"


@requires_mariadb
def test_sysbench_on_a_mariadb_server_of_yours_through_a_dsn_with_a_password(
    open_tmp: Path, results_db: Path
) -> None:
    """A user who needs a password: sysbench gets it in its environment (MYSQL_PWD), never on
    its command line; it is in no output and not stored; the server keeps what it held."""
    (data,) = make_dirs(open_tmp, "data")
    engine = MariaDBEngine(Layout(data_dirs=(data,)))
    with running(engine):
        conn = engine.connect()
        try:
            with conn.cursor() as cur:
                cur.execute(f"CREATE USER 'bench'@'localhost' IDENTIFIED BY '{SECRET}'")
                cur.execute("GRANT ALL ON iolab.* TO 'bench'@'localhost'")
            conn.commit()
        finally:
            conn.close()
        table = ("oltp_point_select", "--tables=1", "--table-size=200")
        subprocess.run(  # the user's own preparation
            ["sysbench", "--db-driver=mysql", f"--mysql-socket={engine.socket}",
             "--mysql-user=root", "--mysql-db=iolab", *table, "prepare"],
            check=True, capture_output=True,
        )  # fmt: skip
        dsn = f"mysql://bench:{SECRET}@localhost/iolab?unix_socket={engine.socket}"
        refused = iolab("sysbench", "--dsn", dsn, "--", *table)
        assert refused.returncode == 2 and "give --no-init with it" in refused.stderr
        assert SECRET not in refused.stderr
        done = iolab(
            "sysbench", "--dsn", dsn, "--no-init", "--json", "--", *table, "--threads=2",
            "--time=2",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert SECRET not in done.stdout + done.stderr
        doc = json.loads(done.stdout)
        assert doc["status"] == "done" and doc["tps"] > 0 and doc["prepared"] is False
        assert doc["dsn"] == f"mysql://bench@localhost/iolab?unix_socket={engine.socket}"
        conn = engine.connect()
        try:
            with conn.cursor() as cur:  # what was there is there still
                cur.execute("SELECT count(*) FROM iolab.sbtest1")
                assert cur.fetchone() == (200,)
        finally:
            conn.close()
    assert SECRET not in results_db.read_bytes().decode(errors="replace")


def test_sysbench_on_a_postgres_server_of_yours_through_a_dsn_with_a_password(
    open_tmp: Path, results_db: Path
) -> None:
    """The DSN's own parts reach libpq (sysbench's defaults for host, port and user emptied),
    the password in PGPASSWORD for a user whose local connections need one."""
    (data,) = make_dirs(open_tmp, "data")
    engine = PostgresEngine(Layout(data_dirs=(data,)))
    with running(engine):
        with engine.connect() as conn:
            conn.execute(f"CREATE USER bench PASSWORD '{SECRET}'")
            conn.execute("ALTER DATABASE iolab OWNER TO bench")
            row = conn.execute("SHOW hba_file").fetchone()
            assert row is not None
            hba = Path(row[0])
        hba.write_text("local all bench scram-sha-256\n" + hba.read_text())
        with engine.connect() as conn:
            conn.execute("SELECT pg_reload_conf()")
        table = ("oltp_point_select", "--tables=1", "--table-size=200")
        dsn = f"postgresql://bench:{SECRET}@/iolab?host={engine.socket_dir}&port={PORT}"
        prepared = subprocess.run(  # the user's own preparation, as the user
            ["sysbench", "--db-driver=pgsql", f"--pgsql-host={engine.socket_dir}",
             f"--pgsql-port={PORT}", "--pgsql-user=bench", "--pgsql-db=iolab", *table, "prepare"],
            capture_output=True, text=True, check=False,
            env={"PATH": "/usr/bin:/bin", "PGPASSWORD": SECRET},
        )  # fmt: skip
        assert prepared.returncode == 0, prepared.stdout + prepared.stderr
        done = iolab(
            "sysbench", "--engine", "postgres", "--dsn", dsn, "--no-init", "--json", "--",
            *table, "--threads=2", "--time=2",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert SECRET not in done.stdout + done.stderr
        doc = json.loads(done.stdout)
        assert doc["status"] == "done" and doc["tps"] > 0
        with engine.connect() as conn:
            row = conn.execute("SELECT count(*) FROM sbtest1").fetchone()
        assert row == (200,)
    assert SECRET not in results_db.read_bytes().decode(errors="replace")
