"""TPC-C's server mode when something goes wrong in the measured window, on both driver cores
(``IOLAB_DRIVER_CORE``): the same outcome from the Python users and the compiled core's.

- A user's statement fails (its session killed by the server's administrator, a procedure
  renamed away): the run stops with one line, ``virtual user N: <the server's first line>``,
  the same on both cores, and none of its sessions stays on the server.
- Ctrl-C: exit 130, the "interrupted" line, the run recorded aborted, no server left.
- The server is SIGKILLed: the one line of a server that died, no hang, nothing left behind.

One load serves both cores where the server is the test's own (the statement errors); the
command's runs load their own.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from iolab import drivercore
from iolab.engines.interface import Layout, running
from iolab.engines.mariadb import MariaDBEngine
from iolab.engines.postgres import PostgresEngine
from iolab.errors import RunFailed
from iolab.events import Collect
from iolab.workloads.tpcc import data, dialects
from iolab.workloads.tpcc import steps as tpcc
from iolab.workloads.tpcc.driver import MEASURED, DriverOptions, drive
from iolab.workloads.tpcc.modes import SERVER
from tests.conftest import interruptible, make_dirs, requires_mariadb, signal_when
from tests.integration.test_populate_cli import IOLAB, iolab, servers_of
from tests.integration.test_server_death import kill_server_mid_load

pytestmark = pytest.mark.integration

USERS = 3
VICTIM = 2  # the user whose statement fails (1-based, as the message counts)
BOTH = [drivercore.PYTHON, drivercore.NATIVE]


def _sessions(engine: Any) -> list[int]:
    """The benchmark database's client sessions other than the asking one, oldest first."""
    conn = engine.connect()
    try:
        cur = conn.cursor()
        if isinstance(engine, PostgresEngine):
            cur.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                "AND backend_type = 'client backend' AND pid <> pg_backend_pid() "
                "ORDER BY backend_start"
            )
        else:
            cur.execute(
                "SELECT id FROM information_schema.processlist "
                "WHERE db = DATABASE() AND id <> CONNECTION_ID() ORDER BY id"
            )
        found = [int(r[0]) for r in cur.fetchall()]
        conn.rollback()
        return found
    finally:
        conn.close()


def _sql(engine: Any, statement: str) -> None:
    conn = engine.connect()
    try:
        conn.cursor().execute(statement)
        conn.commit()
    finally:
        conn.close()


def _failed_run(engine: Any, core: str, fault: Callable[[], None]) -> str:
    """A run of USERS users on ``core`` with ``fault()`` done once the measured window
    begins: its RunFailed's line; none of its sessions outlives it."""
    options = DriverOptions(warehouses=1, connections=USERS, mode=SERVER, rampup=0.5, duration=60)
    measuring = threading.Event()
    faulted: list[BaseException] = []

    def on_phase(phase: str, seconds: float) -> None:
        if phase == MEASURED:
            measuring.set()

    def at_the_window() -> None:
        if measuring.wait(120):
            time.sleep(0.3)  # users inside their transactions
            try:
                fault()
            except BaseException as exc:  # the test's failure, not the run's
                faulted.append(exc)

    files = data.ensure(1, Collect())
    killer = threading.Thread(target=at_the_window, daemon=True)
    killer.start()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(drivercore.ENV, core)
        with pytest.raises(RunFailed) as failed:
            drive(dialects.dialect(engine, 2), engine.connect, options, files.constants(), on_phase)
    killer.join(10)
    assert not faulted, faulted
    # a closed session leaves the server's list soon after (seconds under load: a killed
    # MariaDB session lingers while its thread ends)
    deadline = time.monotonic() + 30
    while _sessions(engine) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _sessions(engine) == [], f"{core}: the run's sessions outlived it"
    line = str(failed.value)
    assert "\n" not in line, line
    return line


def _kill_one_user(engine: Any) -> None:
    found = _sessions(engine)
    assert len(found) == USERS + 1, found  # the monitor, then the users in order
    victim = found[VICTIM]
    if isinstance(engine, PostgresEngine):
        _sql(engine, f"SELECT pg_terminate_backend({victim})")
    else:
        _sql(engine, f"KILL {victim}")


def _statement_errors(engine: Any, renamed: str, back: str) -> dict[str, dict[str, str]]:
    """Per cause, per core: the run's line."""
    tpcc.load(
        dialects.dialect(engine, 2), engine.connect, data.ensure(1, Collect()), SERVER, Collect()
    )
    said: dict[str, dict[str, str]] = {"killed": {}, "renamed": {}}
    for core in BOTH:
        said["killed"][core] = _failed_run(engine, core, lambda: _kill_one_user(engine))
    for core in BOTH:
        try:
            said["renamed"][core] = _failed_run(engine, core, lambda: _sql(engine, renamed))
        finally:
            _sql(engine, back)
    return said


@pytest.fixture
def native_built() -> None:
    if drivercore.native() is None:
        pytest.skip("the compiled core is not built")


def _same_on_both(said: dict[str, str]) -> str:
    """The cores' lines with the failed user's number masked (which user's statement fails
    first is the threads' race): equal; that line."""
    masked = {
        core: re.sub(r"^virtual user [1-9]: ", "virtual user N: ", line)
        for core, line in said.items()
    }
    assert masked[drivercore.PYTHON] == masked[drivercore.NATIVE], said
    assert masked[drivercore.PYTHON].startswith("virtual user N: "), said
    return masked[drivercore.PYTHON]


def test_postgres_statement_errors_are_one_line_on_both_cores(
    native_built: None, cache: Path, open_tmp: Path
) -> None:
    (d,) = make_dirs(open_tmp, "server")
    server = PostgresEngine(Layout(data_dirs=(d,)))
    with running(server):
        said = _statement_errors(
            server,
            "ALTER FUNCTION tpcc_delivery(int, int) RENAME TO tpcc_delivery_gone",
            "ALTER FUNCTION tpcc_delivery_gone(int, int) RENAME TO tpcc_delivery",
        )
    # the server's reason, as libpq gives it; its bare "server closed the connection
    # unexpectedly" when the user's write found the backend gone before it read the reason
    lost = (
        "terminating connection due to administrator command",
        "server closed the connection unexpectedly",
    )
    assert said["killed"][drivercore.PYTHON] in [f"virtual user {VICTIM}: {t}" for t in lost], said
    assert said["killed"][drivercore.NATIVE] in [f"virtual user {VICTIM}: {t}" for t in lost], said
    assert _same_on_both(said["renamed"]) == (
        "virtual user N: function tpcc_delivery(integer, integer) does not exist at character 8"
    )


@requires_mariadb
def test_mariadb_statement_errors_are_one_line_on_both_cores(
    native_built: None, cache: Path, open_tmp: Path
) -> None:
    (d,) = make_dirs(open_tmp, "server")
    server = MariaDBEngine(Layout(data_dirs=(d,)))
    with running(server):
        said = _statement_errors(
            server, "RENAME TABLE history TO history_gone", "RENAME TABLE history_gone TO history"
        )
    # the connection's loss in PyMySQL's words (the compiled core says libmariadb's in them):
    # found reading the answer, or writing the call
    lost = re.compile(
        rf"virtual user {VICTIM}: (\(2013, 'Lost connection to MySQL server during query'\)"
        r"|\(2006, \"MySQL server has gone away( \(BrokenPipeError\(32, 'Broken pipe'\)\))?\"\))"
    )
    for core in BOTH:
        assert lost.fullmatch(said["killed"][core]), said
    assert _same_on_both(said["renamed"]) == (
        """virtual user N: (1146, "Table 'iolab.history' doesn't exist")"""
    )


TPCC = ["tpcc", "--connections", str(USERS), "--warmup", "1s", "--duration", "120s"]


def test_ctrl_c_in_the_window_aborts_and_leaves_no_server(
    cache: Path, open_tmp: Path, results_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the compiled core (CI's default, where it is built; both cores stop their users the
    same way, the statement tests above show it): SIGINT in the measured window."""
    monkeypatch.setenv(drivercore.ENV, "auto")
    (a,) = make_dirs(open_tmp, "a")
    err_file = open_tmp / "stderr.txt"
    with err_file.open("w") as err:
        proc = subprocess.Popen(
            interruptible([*IOLAB, *TPCC, "--engine", "postgres", "--data-dir", str(a)]),
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
        signal_when(
            proc, lambda: "measuring" in err_file.read_text(), signal.SIGINT, what="the window"
        )
        proc.communicate(timeout=120)
    said = err_file.read_text()
    assert proc.returncode == 130, said
    assert "Traceback" not in said
    assert "interrupted" in said.strip().splitlines()[-1], said
    assert servers_of(open_tmp) == []
    assert list(a.iterdir()) == []
    (run,) = json.loads(iolab("results", "list", "--json").stdout)
    assert run["status"] == "aborted"


# one core per engine, crossed (each case loads its own data: about 45 s): the Python path
# on PostgreSQL, the compiled core on MariaDB, whose lost connection each words its own way
@pytest.mark.parametrize(
    ("engine", "server", "core"),
    [
        ("postgres", "postgres", "python"),
        pytest.param(
            "mariadb",
            "mariadbd",
            "native",
            marks=[
                requires_mariadb,
                pytest.mark.skipif(drivercore.native() is None, reason="the core is not built"),
            ],
        ),
    ],
)
def test_the_server_killed_in_the_window_is_one_line(
    engine: str,
    server: str,
    core: str,
    cache: Path,
    open_tmp: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """SIGKILL to the server iolab started, once the users are measured: the run's one line
    of a server that stopped, the run recorded failed, no server process or file left."""
    monkeypatch.setenv(drivercore.ENV, core)
    kill_server_mid_load(
        engine, server, open_tmp, tmp_path / "r.db", TPCC, "measuring", "the TPC-C run"
    )
