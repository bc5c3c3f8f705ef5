"""TPC-C against real engines at one warehouse: the load, the five transactions in both modes,
the three NOPM counts agreeing, the consistency conditions holding after the run and catching a
database that breaks them; `iolab tpcc` and an experiment of kind "tpcc" end to end.

The generated data (about 80 MB, once) lives in the session's shared cache (``cache``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest

from iolab import drivercore
from iolab.engines import catalog
from iolab.engines.interface import Layout, running
from iolab.engines.mariadb import MariaDBEngine
from iolab.engines.postgres import PORT, PostgresEngine
from iolab.events import Collect
from iolab.units import format_bytes
from iolab.workloads.tpcc import consistency, data, dialects, spec
from iolab.workloads.tpcc import steps as tpcc
from iolab.workloads.tpcc.driver import DriverOptions
from iolab.workloads.tpcc.modes import CLIENT, SERVER
from tests.conftest import is_root, make_dirs, requires_mariadb, small_tmpfs
from tests.integration.conftest import iolab

pytestmark = pytest.mark.integration

USERS = 3
SECRET = "s3cret-Pw-never-stored"
# server mode on both driver cores (IOLAB_DRIVER_CORE); the compiled one where it is built
CORES = [
    drivercore.PYTHON,
    pytest.param(
        drivercore.NATIVE,
        marks=pytest.mark.skipif(drivercore.native() is None, reason="the core is not built"),
    ),
]


def measured(
    engine: Any, mode: str, files: data.TpccFiles, rate: float | None = None
) -> dict[str, Any]:
    dialect = dialects.dialect(engine, 2)
    options = DriverOptions(
        warehouses=1, connections=USERS, mode=mode, rampup=1, duration=3, rate=rate
    )
    result, conditions = tpcc.measure(dialect, engine.connect, options, files.constants())
    doc = tpcc.summary(result, conditions)
    assert tpcc.verdict(doc) is None, tpcc.verdict(doc)
    # the measured intervals' histograms hold every transaction the window counted
    for kind in spec.TRANSACTIONS:
        held = sum(i.histogram.total for i in result.intervals if i.kind == kind and not i.warmup)
        t = doc["transactions"][kind]
        assert held == t["count"] + t["rollbacks"], kind
    assert {i.loader for i in result.intervals} == set(range(USERS))
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


@pytest.mark.parametrize("core", CORES)
def test_postgres_server_then_client_mode_on_two_tablespaces(
    core: str, cache: Path, open_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(drivercore.ENV, core)
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
        assert doc["driver_core"] == core
        # the routines raised the spec's rollback; nothing of a rolled-back order remains
        assert doc["tpm_source"] == "database"
        assert abs(doc["tpm"] - doc["tpm_client"]) <= 0.05 * doc["tpm_client"]
        # on the open schedule: the slots taken are the rate's (commits and rollbacks)
        paced = measured(engine, SERVER, files, rate=40.0)
        assert paced["driver_core"] == core
        done = sum(t["count"] + t["rollbacks"] for t in paced["transactions"].values())
        # never more than the schedule has due by the window's end (the pacing: its 1 s warm-up,
        # the window, and up to 1 s the users are held at its two edges); the window counts
        # what ended in it, so slots the warm-up fell behind on a cold, loaded machine end in
        # the window (170 for 120 in 3 s at load 5, the Python path), and the run then warns
        # that the rate was not held (test_diagnosis_truth holds a rate over a longer window)
        due_by_the_end = 40.0 * (1.0 + paced["measured_seconds"] + 1.0)
        assert 0.5 * 40.0 * paced["measured_seconds"] <= done <= due_by_the_end, done
        monkeypatch.setenv(drivercore.ENV, "auto")  # native would refuse client mode
        client = measured(engine, CLIENT, files)
        assert client["driver_core"] == drivercore.PYTHON  # the core runs server mode only
        assert client["driver_core_reason"] == "the compiled core does not run TPC-C's client mode"
        # a database that breaks the conditions: each broken one is named
        with engine.connect() as conn:
            conn.execute("UPDATE warehouse SET w_ytd = w_ytd + 1")
            conn.execute("DELETE FROM order_line WHERE ol_o_id = 5 AND ol_d_id = 3")
            conn.execute(
                "INSERT INTO order_line VALUES (1, 1, 1, 99, 100001, 1, NULL, 1, 1.0, 'x')"
            )
            conn.commit()
            found = {c.name: c for c in consistency.check(conn)}
    assert not found["condition 1"].ok and "warehouse 1: w_ytd" in found["condition 1"].detail
    assert found["condition 2"].ok and found["condition 3"].ok
    assert (
        not found["condition 4"].ok and "district 3 of warehouse 1" in found["condition 4"].detail
    )
    assert not found["unused_item"].ok and "1 order lines" in found["unused_item"].detail


@requires_mariadb
@pytest.mark.parametrize("core", CORES)
def test_mariadb_through_the_command_and_results_show(
    core: str, cache: Path, open_tmp: Path, results_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(drivercore.ENV, core)
    (a,) = make_dirs(open_tmp, "a")
    argv = ["tpcc", "--engine", "mariadb", "--data-dir", str(a), "--connections", str(USERS)]
    done = iolab(*argv, "--warmup", "1s", "--duration", "2s", "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert (doc["status"], doc["mode"], doc["warehouses"], doc["connections"]) == (
        "done",
        "server",
        1,
        USERS,
    )
    assert (doc["warmup_seconds"], doc["duration_seconds"]) == (1.0, 2.0)
    assert doc["nopm"] > 0 and doc["nopm"] == doc["nopm_client"] == doc["nopm_orders"]
    assert doc["driver_core"] == core
    assert doc["tpm_source"] == "database"
    assert abs(doc["tpm"] - doc["tpm_client"]) <= 0.05 * doc["tpm_client"]
    assert doc["consistency"]["ok"] is True
    assert set(doc["transactions"]) == set(spec.TRANSACTIONS)
    for t in doc["transactions"].values():
        assert set(t) >= {"count", "rollbacks", "retries", "p50_us", "p95_us", "p99_us", "max_us"}
    assert doc["load_seconds"] > 0 and doc["on_disk_bytes"] > 50_000_000
    assert list(a.iterdir()) == []  # the instance was removed
    stored = json.loads(iolab("results", "show", str(doc["run"]), "--json").stdout)
    assert stored["summary"]["nopm"] == doc["nopm"]
    assert stored["summary"]["transactions"] == doc["transactions"]
    assert stored["params"]["mode"] == "server" and stored["params"]["mix"] == "45,43,4,4,4"
    shown = iolab("results", "show", str(doc["run"])).stdout
    assert f"{doc['nopm']:,.0f}" in shown and "NOPM (database: sum(d_next_o_id))" in shown
    assert "condition 4" in shown and "new_order" in shown


def test_sqlite_experiment_reports_nopm_higher_is_better(
    cache: Path, open_tmp: Path, results_db: Path
) -> None:
    make_dirs(open_tmp, "a", "b")
    exp = open_tmp / "exp.toml"
    exp.write_text(
        """
[experiment]
name = "tpcc-small"
repetitions = 1
[workload]
kind = "tpcc"
engine = "sqlite"
connections = 2
warmup = "1s"
duration = "2s"
[layouts.two]
data_dirs = ["a", "b"]
files = 2
[isolation]
settle_seconds = 0
"""
    )
    done = iolab("run", str(exp), "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert (doc["done"], doc["metric"]) == (1, "nopm")
    runs = json.loads(iolab("results", "list", "--json").stdout)
    assert len(runs) == 1
    for run in runs:
        s = run["summary"]
        assert s["nopm"] > 0 and s["nopm"] == s["nopm_client"] == s["nopm_orders"]
        assert s["mode"] == "client" and s["tpm_source"] == "client"
        assert s["consistency"]["ok"] is True
    report = iolab("report", str(exp))
    assert report.returncode == 0, report.stderr
    assert "tpcc-small · nopm (higher is better)" in report.stdout
    assert list((open_tmp / "a").iterdir()) == [] and list((open_tmp / "b").iterdir()) == []


@requires_mariadb
def test_a_mariadb_server_of_yours_counts_only_the_users_transactions(
    cache: Path, open_tmp: Path, results_db: Path
) -> None:
    """Another client commits on the same server all through the run: the database's TPM
    counts the users' sessions only, so it stays with the client's count (the server's global
    Com_commit had counted the other client's commits too)."""
    (d,) = make_dirs(open_tmp, "server")
    server = MariaDBEngine(Layout(data_dirs=(d,)))
    with running(server):
        other = server.connect()
        stop = threading.Event()
        committed = [0]

        def bystander() -> None:  # commits that leave InnoDB nothing to write or purge
            with other.cursor() as cur:
                while not stop.is_set():
                    cur.execute("SELECT 1")
                    other.commit()
                    committed[0] += 1

        thread = threading.Thread(target=bystander, daemon=True)
        thread.start()
        try:
            dsn = f"mysql://root@localhost/iolab?unix_socket={server.socket}"
            argv = ["tpcc", "--dsn", dsn, "--connections", str(USERS), "--warmup", "1s"]
            done = iolab(*argv, "--duration", "3s", "--json")
        finally:
            stop.set()
            thread.join()
            other.close()
        assert done.returncode == 0, done.stderr
        doc = json.loads(done.stdout)
        assert committed[0] > 1000  # the other client's commits ran beside the users'
        assert doc["server_local"] is True  # its socket: the server runs on this machine
        assert doc["tpm_source"] == "database"
        assert abs(doc["tpm"] - doc["tpm_client"]) <= 0.05 * doc["tpm_client"], doc


@requires_mariadb
@pytest.mark.parametrize(
    "settings",
    [
        {"performance_schema": "OFF"},
        {"performance_schema_instrument": "transaction=OFF"},  # the server's default
    ],
    ids=["performance_schema-off", "transaction-instrument-off"],
)
def test_a_mariadb_server_without_per_session_transactions_gives_the_clients_tpm(
    settings: dict[str, str], cache: Path, open_tmp: Path, results_db: Path
) -> None:
    """With performance_schema, or its transaction instrument, off the server cannot count
    per session: TPM is the client's count and says so, never the server's global count of
    every client."""
    (d,) = make_dirs(open_tmp, "server")
    server = MariaDBEngine(Layout(data_dirs=(d,), settings=settings))
    with running(server):
        dsn = f"mysql://root@localhost/iolab?unix_socket={server.socket}"
        argv = ["tpcc", "--dsn", dsn, "--connections", str(USERS), "--warmup", "1s"]
        done = iolab(*argv, "--duration", "2s", "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["tpm_source"] == "client"
    assert doc["tpm"] == doc["tpm_client"] > 0


def test_a_postgres_server_of_yours_through_a_dsn_kept_and_never_dropped(
    cache: Path, open_tmp: Path, results_db: Path
) -> None:
    (d,) = make_dirs(open_tmp, "server")
    server = PostgresEngine(Layout(data_dirs=(d,)))
    with running(server):
        dsn = (
            f"postgresql://{server.user.name}:{SECRET}@/iolab?host={server.socket_dir}&port={PORT}"
        )
        argv = ["tpcc", "--dsn", dsn, "--connections", "2", "--warmup", "1s", "--duration", "2s"]
        done = iolab(*argv, "--keep", "--json")
        assert done.returncode == 0, done.stderr
        doc = json.loads(done.stdout)
        assert (doc["engine"], doc["mode"], doc["on_disk_bytes"]) == ("postgres", "server", None)
        assert doc["server_local"] is True  # kept or not, where the server runs is recorded
        assert doc["nopm"] > 0 and doc["nopm"] == doc["nopm_client"] == doc["nopm_orders"]
        assert doc["consistency"]["ok"] is True
        assert SECRET not in done.stdout + done.stderr
        for path in results_db.parent.glob(results_db.name + "*"):
            assert SECRET.encode() not in path.read_bytes()
        # kept: the user's own SQL reads the tables as the run ended them
        with server.connect() as conn:
            (next_ids,) = conn.execute("SELECT sum(d_next_o_id) FROM district").fetchone()
            (routines,) = conn.execute(
                "SELECT count(*) FROM pg_proc WHERE proname LIKE 'tpcc\\_%%'"
            ).fetchone()
        assert next_ids >= 10 * 3001 + doc["new_orders"] and routines == 6
        # a database that holds the tables already is refused, and nothing of it is dropped
        again = iolab(*argv)
        assert again.returncode == 1
        assert "already holds" in again.stderr and SECRET not in again.stderr
        with server.connect() as conn:
            assert conn.execute("SELECT sum(d_next_o_id) FROM district").fetchone() == (next_ids,)


# --- the data cache: trusted only when no one else can write it, checked before each load ---

NOBODY = 65534


def tiny_data_set(root: Path) -> Path:
    """A complete data set of W = 1 in the cache ``root`` as iolab writes it (one line a table,
    a manifest with each file's bytes and SHA-256): refused or used only for who owns it."""
    directory = data.data_dir(1, root)
    directory.mkdir(parents=True)
    doc: dict[str, Any] = {"format": data.FORMAT, "seed": data.SEED, "warehouses": 1}
    doc["constants"] = {"c_last": 1, "c_id": 2, "ol_i_id": 3}
    doc["bytes"], doc["sha256"] = {}, {}
    for table in spec.TABLES:
        (directory / f"{table}.csv").write_text("1\n")
        doc["bytes"][table] = 2
        doc["sha256"][table] = hashlib.sha256(b"1\n").hexdigest()
    (directory / data.MANIFEST).write_text(json.dumps(doc))
    return directory


@pytest.mark.parametrize(
    "whose", ["tpcc", "tpcc/w1", "tpcc/w1/customer.csv", "tpcc/w1/manifest.json", "tpcc/.w1.lock"]
)
def test_a_cache_another_user_owns_is_refused_before_anything_and_kept(
    whose: str, open_tmp: Path, results_db: Path
) -> None:
    """The cache's directory, a data set's directory, one of its files or its lock owned by
    nobody (who could have written the data the run loads, or hold the lock forever): refused in
    one line naming it, before a run is recorded; nothing of nobody's is removed."""
    if not is_root():
        pytest.skip("giving a file to nobody needs root")
    root = open_tmp / "cache"
    tiny_data_set(root / "tpcc")
    (root / "tpcc" / ".w1.lock").touch()
    os.chown(root / whose, NOBODY, NOBODY)
    done = iolab("tpcc", "--engine", "sqlite", env={"IOLAB_CACHE": str(root)})
    assert done.returncode == 2, done.stderr
    lines = [ln for ln in done.stderr.splitlines() if ln.strip() and "waiting" not in ln]
    assert lines == [
        f"error: the data cache's {root / whose} is owned by uid {NOBODY}; iolab uses only data "
        "no one else can write: look at it, then remove it (iolab generates the data again) or "
        "make it yours and not writable by others, or set IOLAB_CACHE to a directory of your own"
    ]
    assert (root / whose).exists() and os.stat(root / whose).st_uid == NOBODY
    assert not results_db.exists() or json.loads(iolab("results", "list", "--json").stdout) == []


def test_a_data_set_that_is_a_link_to_nobodys_directory_is_refused_not_followed(
    open_tmp: Path, results_db: Path
) -> None:
    """``w1`` a symbolic link (nobody's, to nobody's directory of data): refused as a link,
    neither followed nor removed; a group-writable ``w1`` of the user's own is refused too."""
    if not is_root():
        pytest.skip("giving a file to nobody needs root")
    root = open_tmp / "cache"
    theirs = tiny_data_set(open_tmp / "theirs")
    for path in (theirs.parent, theirs, *theirs.iterdir()):
        os.chown(path, NOBODY, NOBODY)
    (root / "tpcc").mkdir(parents=True)
    (root / "tpcc" / "w1").symlink_to(theirs)
    os.lchown(root / "tpcc" / "w1", NOBODY, NOBODY)
    done = iolab("tpcc", "--engine", "sqlite", env={"IOLAB_CACHE": str(root)})
    assert done.returncode == 2, done.stderr
    assert f"error: the data cache's {root}/tpcc/w1 is a symbolic link; " in done.stderr
    assert (root / "tpcc" / "w1").is_symlink() and (theirs / data.MANIFEST).exists()
    (root / "tpcc" / "w1").unlink()
    mine = tiny_data_set(root / "tpcc")
    mine.chmod(0o775)
    done = iolab("tpcc", "--engine", "sqlite", env={"IOLAB_CACHE": str(root)})
    assert done.returncode == 2, done.stderr
    assert f"{mine} is writable by others (mode 0775)" in done.stderr
    assert not results_db.exists() or json.loads(iolab("results", "list", "--json").stdout) == []


def private_copy(open_tmp: Path) -> Path:
    """A cache of the test's own holding a copy of the session's W = 1 data, to spoil."""
    files = data.ensure(1, Collect())
    root = open_tmp / "cache"
    (root / "tpcc").mkdir(parents=True)
    shutil.copytree(files.directory, data.data_dir(1, root / "tpcc"))
    return root


def test_an_edited_csv_is_removed_and_generated_again_before_the_load(
    cache: Path, open_tmp: Path, results_db: Path
) -> None:
    """Every customer given bad credit in customer.csv (the same size: only its checksum
    tells): the run says the file differs from its manifest, removes the data set, generates it
    again and loads that, about 10 % bad credit as the specification says (the edited file had
    loaded and the run ended "done")."""
    root = private_copy(open_tmp)
    directory = data.data_dir(1, root / "tpcc")
    customer = directory / "customer.csv"
    original = hashlib.sha256(customer.read_bytes()).hexdigest()
    text = customer.read_text()
    customer.write_text(text.replace(",GC,", ",BC,"))
    assert customer.stat().st_size == len(text)
    argv = ["tpcc", "--engine", "sqlite", "--connections", "2", "--warmup", "0s"]
    done = iolab(*argv, "--duration", "1s", "--json", env={"IOLAB_CACHE": str(root)})
    assert done.returncode == 0, done.stderr
    assert (
        f"the cached TPC-C data in {directory} are not what iolab generated (customer.csv "
        "differs from its manifest's SHA-256): removed them; generating them again"
    ) in " ".join(done.stderr.split())
    assert json.loads(done.stdout)["status"] == "done"
    again = customer.read_text()
    assert hashlib.sha256(again.encode()).hexdigest() == original
    credits = [line.split(",")[13] for line in again.splitlines()]
    assert len(credits) == 30_000 and 2_700 < credits.count("BC") < 3_300


def test_a_truncated_csv_names_itself_and_is_generated_again(cache: Path, open_tmp: Path) -> None:
    """order_line.csv cut in half: the cache is not taken as complete before the run (so the
    free space for generating it is checked), and the run's data step names the file and its
    sizes, removes the data set and generates it again (the load had failed with "the load lost
    or added rows", on every later run too)."""
    root = private_copy(open_tmp)
    directory = data.data_dir(1, root / "tpcc")
    lines = directory / "order_line.csv"
    size = lines.stat().st_size
    os.truncate(lines, size // 2)
    assert data.cached(1, root / "tpcc") is None
    said = Collect()
    found = data.ensure(1, said, root / "tpcc")
    told = [str(e) for e in said.events]
    assert any(
        f"the cached TPC-C data in {directory} are not what iolab generated (order_line.csv "
        f"holds {format_bytes(size // 2)} ({size // 2:,} bytes), its manifest {size:,} bytes): "
        "removed them; generating them again" in t
        for t in told
    ), told
    assert found.directory == directory and lines.stat().st_size == size
    assert found.rows() == data.ensure(1, Collect()).rows()


@pytest.mark.parametrize(
    ("flags", "size", "said"),
    [
        # tables of the second data file on a 6 MiB filesystem: the server's ERROR, it lives on
        (["--data-dir", "{a}", "--data-dir", "{full}", "--files", "2"], "6m", "ERROR:"),
        # the WAL on a 40 MiB filesystem: a PANIC, then a recovery that fails for want of space
        (["--data-dir", "{a}", "--wal-dir", "{full}"], "40m", "PANIC:"),
    ],
    ids=["data-file", "wal"],
)
def test_a_disk_full_during_the_load_names_the_load_and_its_first_error(
    flags: list[str], size: str, said: str, cache: Path, open_tmp: Path, results_db: Path
) -> None:
    """The load fills a filesystem: one line naming the load (not "the TPC-C run"), the
    server's first error (not the failed recovery after it), and with the server still up the
    full directory; no psycopg "error ignored terminating <psycopg.Copy [BAD]>" lines."""
    data.ensure(1, Collect())
    (a,) = make_dirs(open_tmp, "a")
    with small_tmpfs(open_tmp / "full", size) as full:
        argv = [f.format(a=a, full=full) for f in flags]
        done = iolab("tpcc", "--engine", "postgres", *argv, "--warmup", "0s", "--duration", "1s")
    assert done.returncode == 1, done.stderr
    assert "error ignored" not in done.stderr and "Traceback" not in done.stderr
    errors = [ln for ln in done.stderr.splitlines() if ln.startswith("error")]
    assert len(errors) == 1 and errors == done.stderr.strip().splitlines()[-1:], done.stderr
    (line,) = errors
    if said == "ERROR:":
        assert line.startswith("error: the TPC-C load stopped: "), line
        assert f"; full: {full} (--data-dir, " in line
    else:
        assert line.startswith("error: the PostgreSQL server stopped during the TPC-C load ")
    first = line.split("its log: ")[-1] if said == "PANIC:" else line
    assert said in first.split(" | ")[0] and "No space left on device" in first.split(" | ")[0]
    (run,) = json.loads(iolab("results", "list", "--json").stdout)
    assert run["status"] == "failed" and "the TPC-C load" in run["error"]


def test_a_server_with_too_few_connections_for_the_users_is_one_line(
    cache: Path, open_tmp: Path, results_db: Path
) -> None:
    """A server of the user's whose max_connections (6) is below what the users need (a monitor
    and 6 users): one line naming the step and the server's refusal, not psycopg's traceback
    (iolab's own servers are refused before the load: test_cli_args)."""
    (d,) = make_dirs(open_tmp, "server")
    server = PostgresEngine(Layout(data_dirs=(d,), settings={"max_connections": "6"}))
    with running(server):
        dsn = f"postgresql://{server.user.name}@/iolab?host={server.socket_dir}&port={PORT}"
        argv = ["tpcc", "--dsn", dsn, "--connections", "6", "--loaders", "2", "--warmup", "0s"]
        done = iolab(*argv, "--duration", "1s")
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: PostgreSQL refused a connection during the TPC-C run: "), last
    assert last.endswith("sorry, too many clients already"), last
    (run,) = json.loads(iolab("results", "list", "--json").stdout)
    assert run["status"] == "failed" and "internal error" not in run["error"]
