"""PostgreSQL probes against ground truth on a real server: WAL bytes from the LSN difference vs
pg_stat_wal's sum, a forced CHECKPOINT as an interval, a lock wait made on purpose in the wait
statistics, an older server without pg_stat_io, and a populate run that keeps it all."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from iolab.engines.interface import Layout, Placement, running
from iolab.engines.postgres import PostgresEngine
from iolab.events import Collect
from iolab.probes.checkpoints import PostgresLogCheckpoints
from iolab.probes.postgres import PostgresProbe
from iolab.probes.recorder import Recorder
from iolab.probes.waits import PostgresWaits
from tests.conftest import make_dirs

pytestmark = pytest.mark.integration
PG15 = Path("/usr/lib/postgresql/15/bin")


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[PostgresEngine, Placement]]:
    base = Path(tempfile.mkdtemp(prefix="iolab-test-", dir="/var/tmp"))
    base.chmod(0o755)
    try:
        engine = PostgresEngine(Layout(data_dirs=(base,)))
        with running(engine) as placement:
            yield engine, placement
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _lsn(conn: Any) -> int:
    return int(conn.execute("SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn").fetchone()[0])


def test_wal_bytes_match_the_lsn_difference(server: tuple[PostgresEngine, Placement]) -> None:
    engine, _ = server
    admin = engine.connect()
    admin.autocommit = True
    admin.execute("DROP TABLE IF EXISTS wal_test")
    admin.execute("CREATE TABLE wal_test (id int, pad text)")
    before = _lsn(admin)
    with Recorder([PostgresProbe(engine.connect)], interval=0.5) as rec:
        writer = engine.connect()
        writer.autocommit = True
        for _ in range(20):
            writer.execute(
                "INSERT INTO wal_test SELECT g, repeat('x', 500) FROM generate_series(1, 1000) g"
            )
        writer.close()  # a backend reports its counters when it exits
        time.sleep(0.8)
    after = _lsn(admin)
    admin.close()
    lsn = rec.data.one("postgres", "wal_lsn_mbps")
    stat = rec.data.one("postgres", "wal_mbps")
    assert lsn is not None and stat is not None
    generated = after - before
    assert generated > 10_000_000  # 20,000 rows of 500 bytes
    # the probe's LSN series covers its own span, inside [before, after]: all but a few bytes
    assert generated * 0.995 <= lsn.total * 1e6 <= generated
    # pg_stat_wal counts record bytes; the LSN also counts the records' alignment padding
    # (to 8 bytes) and page headers (24 of every 8192 bytes): about 1% more here
    assert lsn.total * 0.975 <= stat.total <= lsn.total
    assert rec.data.one("postgres", "tuples_inserted_per_s") is not None


def test_forced_checkpoint_is_an_interval(server: tuple[PostgresEngine, Placement]) -> None:
    engine, placement = server
    assert placement.log is not None
    conn = engine.connect()
    conn.autocommit = True
    conn.execute("DROP TABLE IF EXISTS ckpt_test")
    conn.execute(
        "CREATE TABLE ckpt_test AS SELECT g, repeat('y', 200) AS pad "
        "FROM generate_series(1, 20000) g"
    )
    probes = [PostgresLogCheckpoints(placement.log), PostgresProbe(engine.connect)]
    with Recorder(probes, interval=0.5) as rec:
        time.sleep(0.3)
        conn.execute("CHECKPOINT")
        time.sleep(0.3)
    conn.close()
    forced = [c for c in rec.data.checkpoints if "immediate" in c.kind]
    assert len(forced) == 1
    c = forced[0]
    assert c.end_s is not None
    assert 0.2 <= c.start_s <= c.end_s <= rec.data.duration
    assert c.pages is not None and c.pages > 100  # the table's dirty pages at least
    written = rec.data.one("postgres", "checkpoint_pages_per_s")
    assert written is not None and written.total >= c.pages


def test_a_lock_wait_made_on_purpose_is_in_the_waits(
    server: tuple[PostgresEngine, Placement],
) -> None:
    engine, _ = server
    holder = engine.connect()
    holder.execute("CREATE TABLE IF NOT EXISTS lock_test (id int)")
    holder.commit()
    waiter = engine.connect()
    waiter.autocommit = True
    pid = int(waiter.info.backend_pid)
    bystander = engine.connect()  # idle throughout: watched too, counted as idle
    watched = [pid, int(bystander.info.backend_pid)]
    hold = 1.5
    holder.execute("LOCK TABLE lock_test IN ACCESS EXCLUSIVE MODE")  # held until commit
    blocked = threading.Thread(target=lambda: waiter.execute("INSERT INTO lock_test VALUES (1)"))
    with Recorder([PostgresWaits(engine.connect, watched)], interval=1.0) as rec:
        blocked.start()
        time.sleep(hold)
        holder.commit()
        blocked.join()
        time.sleep(0.3)
    holder.close()
    waiter.close()
    bystander.close()
    waits = {(w.wait_class, w.event): w for w in rec.data.waits}
    lock = waits["Lock", "relation"]
    assert lock.source == "pg_stat_activity"
    assert lock.est_seconds == pytest.approx(hold, abs=0.5)
    assert lock.share > 0.25  # of two sessions' samples, the other idle
    assert lock.samples >= 8  # 10 Hz
    idle = waits["Client", "ClientRead"]  # the bystander waits for its client
    assert idle.samples > lock.samples
    assert sum(w.share for w in rec.data.waits) == pytest.approx(1.0)


@pytest.mark.skipif(not (PG15 / "postgres").exists(), reason="PostgreSQL 15 is not installed")
def test_postgres_15_lacks_views_says_so_once_and_goes_on(open_tmp: Path) -> None:
    (data,) = make_dirs(open_tmp, "d")
    engine = PostgresEngine(Layout(data_dirs=(data,)), bin_dir=PG15)
    events = Collect()
    with running(engine):
        conn = engine.connect()
        conn.autocommit = True
        conn.execute("CREATE TABLE t (pad text)")
        conn.execute("ALTER TABLE t ALTER COLUMN pad SET STORAGE PLAIN")  # 2 rows per page
        with Recorder([PostgresProbe(engine.connect)], interval=0.3, events=events) as rec:
            for _ in range(5):
                conn.execute("INSERT INTO t SELECT repeat('z', 3000) FROM generate_series(1, 300)")
                time.sleep(0.1)
        conn.close()
    said = events.warnings()
    assert sum("has no pg_stat_io" in w for w in said) == 1
    assert sum("has no pg_stat_checkpointer" in w for w in said) == 1
    assert not any(s.key.name.startswith("io_") for s in rec.data.series)
    allocated = rec.data.one("postgres", "pages_allocated_per_s")
    assert allocated is not None  # from relation sizes: 1,500 rows of 3,000 bytes, 2 a page
    assert 700 <= allocated.total <= 800
    wal = rec.data.one("postgres", "wal_lsn_mbps")
    assert wal is not None and wal.total > 1.0


def test_populate_keeps_probes_and_the_server_log(open_tmp: Path, results_db: Path) -> None:
    data, wal = make_dirs(open_tmp, "data", "wal")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "iolab",
            "populate",
            "--engine",
            "postgres",
            "--data-dir",
            str(data),
            "--wal-dir",
            str(wal),
            "--rows",
            "3000",
            "--connections",
            "4",
            "--sample-interval",
            "0.5s",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    probes = doc["probes"]
    roles = {r["role"] for r in probes["roles"]}
    assert roles == {"data", "wal"}
    rows = next(s for s in probes["series"] if s["name"] == "rows_per_s")
    assert rows["total"] == 3000  # every committed row, on the probes' time axis
    names = {(s["probe"], s["name"]) for s in probes["series"]}
    assert ("device", "write_mbps") in names and ("host", "cpu_iowait_pct") in names
    assert any(w["source"] == "pg_stat_activity" for w in probes["waits"])
    run = str(doc["run"])
    shown = subprocess.run(
        [sys.executable, "-m", "iolab", "results", "show", run],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "wait statistics" in shown.stdout and "devices" in shown.stdout
    log = subprocess.run(
        [sys.executable, "-m", "iolab", "results", "log", run],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "database system is ready to accept connections" in log.stdout
