from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from iolab.errors import BadInput, IolabError
from iolab.results import DiskPass, Latency, RunOutcome, RunStatus, cell_id
from iolab.store import open_store
from iolab.store.migrate import available


def _pass(test: str, n: int, mbps: float) -> DiskPass:
    return DiskPass(
        test=test,
        rw="read",
        bs=4096,
        qd=1,
        threads=1,
        pass_no=n,
        seconds=5.0,
        mbps=mbps,
        iops=mbps * 244.14,
        lat=Latency(90.0, 85.0, 200.0, 400.0),
        io_bytes=int(mbps * 5e6),
        device_bytes=int(mbps * 5e6),
    )


def test_migrations_are_recorded_and_wal_is_on(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    with open_store(db) as store:
        versions = [r[0] for r in store.conn.execute("SELECT version FROM schema_migrations")]
        assert versions == [m.version for m in available()]
        assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    with open_store(db) as store:  # re-opening applies nothing twice
        assert store.conn.execute("SELECT COUNT(*) FROM schema_migrations").fetchone()[0] == len(
            available()
        )


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    open_store(db).close()
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO schema_migrations VALUES (999, 'future', 'now')")
    conn.commit()
    conn.close()
    with pytest.raises(IolabError, match="schema version 999, newer than this iolab knows"):
        open_store(db)


def test_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "notes.txt"
    bad.write_text("hello " * 1000)
    with pytest.raises(BadInput, match="not an iolab results database .not an SQLite file"):
        open_store(bad)
    assert bad.read_text() == "hello " * 1000


def test_run_round_trip(tmp_path: Path) -> None:
    with open_store(tmp_path / "r.db") as store:
        env = store.save_environment({"kernel": "Linux 6"})
        assert store.save_environment({"kernel": "Linux 6"}) == env  # same snapshot, same id
        exp = store.create_experiment("disk /x", "command", {"profile": "real"})
        cid = cell_id({"profile": "real"})
        store.ensure_cell(exp, cid, "disk", {"profile": "real"})
        run = store.start_run(exp, cid, 1, env)
        assert store.run(run).status is RunStatus.RUNNING
        passes = [_pass("RND4K Q1T1 read", n, 40.0 + n) for n in range(3)]
        store.finish_run(run, RunOutcome(RunStatus.DONE, {"elapsed": 1}, None, passes))
        rec = store.run(run)
        assert rec.status is RunStatus.DONE
        assert rec.workload == "disk"
        assert rec.params == {"profile": "real"}
        assert rec.summary == {"elapsed": 1}
        assert store.environment(env) == {"kernel": "Linux 6"}
        assert store.disk_passes(run) == passes
        assert [r.id for r in store.runs()] == [run]


def test_unknown_run_names_the_range(tmp_path: Path) -> None:
    with open_store(tmp_path / "r.db") as store, pytest.raises(BadInput) as err:
        store.run(7)
    assert "RUN: 7" in str(err.value)
    assert "no runs yet" in str(err.value)


def test_missing_database_for_reading(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="--results: .*no results database there"):
        open_store(tmp_path / "none.db", create=False)


def test_runs_of_a_dead_process_are_reaped(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    with open_store(db) as store:
        exp = store.create_experiment("x", "command", {})
        store.ensure_cell(exp, cell_id({}), "disk", {})
        mine = store.start_run(exp, cell_id({}), 1, None)
    # a run started by another process that then died
    code = (
        "from iolab.store import open_store; from iolab.results import cell_id;"
        f"s = open_store(__import__('pathlib').Path({str(db)!r}));"
        "s.start_run(1, cell_id({}), 2, None)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    with open_store(db) as store:  # opening marks it aborted
        assert store.reap_stale() == 0
        statuses = {r.repetition: r for r in store.runs()}
        assert statuses[1].status is RunStatus.RUNNING and statuses[1].id == mine
        assert statuses[2].status is RunStatus.ABORTED
        assert "interrupted" in (statuses[2].error or "")


@pytest.mark.usefixtures("sigint_default")
def test_an_interrupt_waits_until_a_run_is_stored(tmp_path: Path) -> None:
    """A Ctrl-C that lands while a run's results are written ends iolab after the commit: the
    run is finished, never left 'running'. Also with other threads alive, which the kernel may
    deliver the signal to."""
    import threading

    alive = threading.Event()
    other = threading.Thread(target=alive.wait, daemon=True)
    other.start()
    from iolab.store.database import signals_held

    reached = False
    with pytest.raises(KeyboardInterrupt), signals_held():  # noqa: PT012 - runs to its end
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)  # caught and held, not raised
        reached = True
    assert reached
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # restored
    alive.set()
    other.join()
