"""The MariaDB engine against a real mariadbd: placement by role, clean-up, and refusals."""

from __future__ import annotations

import os
import pwd
import subprocess
from pathlib import Path

import pytest

from iolab.engines.interface import Layout, running
from iolab.engines.mariadb import MariaDBEngine
from iolab.engines.server_process import server_user
from iolab.errors import BadInput, RunFailed
from iolab.ownership import owned_name
from tests.conftest import is_root, make_dirs, requires_mariadb
from tests.integration.conftest import log_of_stop_restart_destroy

pytestmark = [
    pytest.mark.integration,
    requires_mariadb,
]

pytest.importorskip("pymysql")

ROWS = 1000


def process_gone(pid: int) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        return True
    return b"mariadbd" not in cmdline and b"mysqld" not in cmdline


def test_layout_places_each_role_and_cleans_up(open_tmp: Path) -> None:
    data0, data1, wal, temp = make_dirs(open_tmp, "data0", "data1", "wal", "temp")
    mine = data0 / "mine.txt"
    mine.write_text("not iolab's\n")
    layout = Layout(
        data_dirs=(data0, data1),
        files=2,
        wal_dir=wal,
        temp_dir=temp,
        settings={"innodb-buffer-pool-size": "64M", "innodb_log_file_size": "32M"},
    )
    engine = MariaDBEngine(layout)

    with running(engine) as placement:
        pid = engine.server_pid
        assert pid is not None
        datadir = engine.datadir
        assert datadir is not None
        assert datadir.parent == data0
        assert len(placement.data) == 2
        assert list(placement.data) == engine.partition_dirs

        parts = ", ".join(
            f"PARTITION p{i} DATA DIRECTORY = '{d}'" for i, d in enumerate(engine.partition_dirs)
        )
        conn = engine.connect()
        try:
            with conn.cursor() as cur:
                cur.execute(
                    "CREATE TABLE t (id INT PRIMARY KEY, pad VARCHAR(64)) ENGINE=InnoDB "
                    f"PARTITION BY HASH (id) ({parts})"
                )
                cur.executemany(
                    "INSERT INTO t VALUES (%s, %s)", [(i, f"row {i}") for i in range(ROWS)]
                )
            conn.commit()
            with conn.cursor() as cur:
                cur.execute("SELECT COUNT(*) FROM t")
                assert cur.fetchone()[0] == ROWS
                cur.execute(
                    "SELECT ENGINE FROM information_schema.TABLES "
                    "WHERE TABLE_SCHEMA = 'iolab' AND TABLE_NAME = 't'"
                )
                assert cur.fetchone()[0] == "InnoDB"
        finally:
            conn.close()

        # The redo log is in the wal dir's instance directory, not in the datadir.
        assert placement.wal is not None
        assert placement.wal.parent == wal
        assert (placement.wal / "ib_logfile0").is_file()
        assert not (datadir / "ib_logfile0").exists()

        # Each partition's tablespace is in its own directory, round-robin over the data dirs.
        for i, part_dir in enumerate(engine.partition_dirs):
            assert part_dir.parent == layout.data_dir_for(i)
            ibd = part_dir / "iolab" / f"t#P#p{i}.ibd"
            assert ibd.is_file(), sorted(part_dir.rglob("*"))
            assert not (datadir / "iolab" / ibd.name).exists()

        assert placement.temp is not None
        assert placement.temp.parent == temp
        assert placement.log is not None
        assert placement.log.is_file()
        assert "ready for connections" in engine.log_tail(50)

        settings = engine.effective_settings()
        assert settings["innodb_buffer_pool_size"] == str(64 * 1024 * 1024)
        assert settings["innodb_log_file_size"] == str(32 * 1024 * 1024)
        assert settings["innodb_file_per_table"] == "ON"
        assert settings["innodb_log_group_home_dir"].rstrip("/") == str(placement.wal)
        assert settings["tmpdir"].rstrip("/") == str(placement.temp)
        assert "MariaDB" in engine.version()

    assert process_gone(pid)
    assert engine.server_pid is None
    for path in placement.created:
        assert not path.exists(), path
    assert mine.read_text() == "not iolab's\n"
    assert sorted(p.name for p in open_tmp.rglob("*")) == [
        "data0",
        "data1",
        "mine.txt",
        "temp",
        "wal",
    ]
    engine.stop()  # both are safe to call twice
    engine.destroy()


def test_unknown_setting_is_refused(open_tmp: Path) -> None:
    (data,) = make_dirs(open_tmp, "data")
    layout = Layout(data_dirs=(data,), settings={"innodb_bufer_pool_size": "1G"})
    with pytest.raises(BadInput) as caught:
        MariaDBEngine(layout, workdir=open_tmp).provision()
    message = str(caught.value)
    assert "--set" in message
    assert "innodb_bufer_pool_size" in message
    assert "not a MariaDB server variable" in message
    assert list(data.iterdir()) == []


def test_layout_variables_cannot_be_set(open_tmp: Path) -> None:
    data, elsewhere = make_dirs(open_tmp, "data", "elsewhere")
    layout = Layout(data_dirs=(data,), settings={"innodb-data-home-dir": str(elsewhere)})
    with pytest.raises(BadInput, match="iolab sets innodb_data_home_dir itself"):
        MariaDBEngine(layout, workdir=open_tmp).provision()
    assert list(data.iterdir()) == []
    assert list(elsewhere.iterdir()) == []


def test_missing_data_dir_is_refused(open_tmp: Path) -> None:
    missing = open_tmp / "nowhere"
    with pytest.raises(BadInput) as caught:
        MariaDBEngine(Layout(data_dirs=(missing,)), workdir=open_tmp).provision()
    assert caught.value.field == "--data-dir"
    assert str(missing) in str(caught.value)
    assert list(open_tmp.iterdir()) == []


@pytest.mark.parametrize(
    ("name", "value", "said"),
    [
        ("innodb_flush_method", "bogus", "Error while setting value 'bogus'"),
        ("innodb_buffer_pool_size", "banana", "Unknown suffix"),
        ("innodb_doublewrite", "maybe", "invalid value 'maybe'"),
        ("max_connections", "-5", "Incorrect unsigned value"),
    ],
)
def test_invalid_value_is_bad_input_before_anything_is_made(
    open_tmp: Path, name: str, value: str, said: str
) -> None:
    """mariadbd itself reads the value (--verbose --help) before anything is created."""
    data, work = make_dirs(open_tmp, "data", "work")
    layout = Layout(data_dirs=(data,), settings={name: value})
    engine = MariaDBEngine(layout, workdir=work)
    with pytest.raises(BadInput) as caught:
        engine.provision()
    assert caught.value.field == f"--set {name}"
    assert caught.value.value == value
    assert said in str(caught.value)
    assert list(data.iterdir()) == []
    assert list(work.iterdir()) == []


def test_server_that_dies_at_start_fails_with_log_tail(open_tmp: Path) -> None:
    data, work = make_dirs(open_tmp, "data", "work")
    missing_sql = open_tmp / "no-such-init.sql"
    layout = Layout(data_dirs=(data,), settings={"init_file": str(missing_sql)})
    engine = MariaDBEngine(layout, workdir=work)
    with pytest.raises(RunFailed) as caught, running(engine):
        pytest.fail("the server must not start")
    message = str(caught.value)
    assert "mariadbd exited" in message
    assert str(missing_sql) in message
    assert engine.server_pid is None
    assert list(data.iterdir()) == []
    assert list(work.iterdir()) == []


def test_missing_server_binaries_say_how_to_install(
    open_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import iolab.engines.mariadb as mariadb_module
    from iolab.errors import MissingTool

    monkeypatch.setenv("PATH", str(open_tmp))
    monkeypatch.setattr(mariadb_module, "SEARCH_DIRS", (open_tmp,))
    (data,) = make_dirs(open_tmp, "data")
    with pytest.raises(MissingTool) as err:
        MariaDBEngine(Layout(data_dirs=(data,))).provision()
    assert "mariadb-server is not installed" in str(err.value)
    assert "apt-get install mariadb-server" in str(err.value)
    assert list(data.iterdir()) == []


def test_stop_is_a_clean_shutdown_and_destroy_a_kill(open_tmp: Path) -> None:
    """stop() lets InnoDB shut down cleanly; destroy() removes the files next, so it kills."""
    (data,) = make_dirs(open_tmp, "data")
    text = log_of_stop_restart_destroy(MariaDBEngine(Layout(data_dirs=(data,))))
    assert text.count("Normal shutdown") == 1  # the stop's, not the destroy's
    assert text.count("ready for connections") == 2
    assert "crash recovery" not in text.lower()  # the restart found it clean
    assert list(data.iterdir()) == []


@pytest.mark.skipif(not is_root(), reason="needs root: the server user and nobody own them")
def test_leftovers_made_for_the_server_user_are_reaped_anothers_are_not(open_tmp: Path) -> None:
    """A killed run's data directory is the server user's (iolab made it for it): the next
    provision removes it. One of iolab's name that another user (nobody) owns is left."""
    (data,) = make_dirs(open_tmp, "data")
    dead = subprocess.Popen(["true"])
    dead.wait()
    tag = owned_name("mariadb").split("-")[3]
    leftover = data / f".iolab-mariadb-{dead.pid}-{tag}-00c0ffee"
    theirs = data / f".iolab-mariadb-{dead.pid}-{tag}-0badc0de"
    user, nobody = server_user(), pwd.getpwnam("nobody")
    for path, uid, gid in ((leftover, user.uid, user.gid), (theirs, nobody.pw_uid, nobody.pw_gid)):
        path.mkdir()
        (path / "ibdata1").write_text("left\n")
        os.chown(path, uid, gid)

    with running(MariaDBEngine(Layout(data_dirs=(data,)), workdir=open_tmp)):
        assert not leftover.exists()
        assert (theirs / "ibdata1").read_text() == "left\n"
    assert [p.name for p in data.iterdir()] == [theirs.name]
