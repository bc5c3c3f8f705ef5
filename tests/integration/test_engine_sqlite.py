"""The SQLite engine with the real sqlite3 library: placement, clean-up, bad input."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import threading
from pathlib import Path

import pytest

from iolab.engines.interface import Layout, running
from iolab.engines.sqlite import SQLiteConnection, SQLiteEngine
from iolab.errors import BadInput, IolabError
from iolab.ownership import owned_name
from tests.conftest import make_dirs

pytestmark = pytest.mark.integration

ROWS_PER_SCHEMA = 100
BATCH = 10


def header_page_size(path: Path) -> int:
    """The page size from a database file's header: bytes 16-17, big-endian, 1 means 65536."""
    with path.open("rb") as f:
        header = f.read(100)
    assert header[:16] == b"SQLite format 3\x00"
    size = int.from_bytes(header[16:18], "big")
    return 65536 if size == 1 else size


def open_files_under(directory: Path) -> set[str]:
    """What this process has open under ``directory`` (SQLite unlinks temp files at once)."""
    found: set[str] = set()
    prefix = str(directory) + "/"
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(prefix):
            found.add(target)
    return found


def global_temp_directory() -> str:
    conn = sqlite3.connect(":memory:")
    try:
        row = conn.execute("PRAGMA temp_store_directory").fetchone()
    finally:
        conn.close()
    return "" if row is None or row[0] is None else str(row[0])


def load(engine: SQLiteEngine, worker: int, errors: list[BaseException]) -> None:
    """Insert this worker's share of rows into every schema, in transactions of BATCH rows."""
    try:
        conn = engine.connect()
        try:
            share = ROWS_PER_SCHEMA // 2
            for start in range(0, share, BATCH):
                for schema in conn.schemas:
                    conn.execute("BEGIN IMMEDIATE")
                    conn.executemany(
                        f"INSERT INTO {schema}.t (id, worker, payload) VALUES (?, ?, ?)",
                        [
                            (worker * share + n, worker, "x" * 100)
                            for n in range(start, start + BATCH)
                        ],
                    )
                    conn.execute("COMMIT")
        finally:
            conn.close()
    except BaseException as exc:
        errors.append(exc)


def test_layout_is_honoured_and_cleaned_up(open_tmp: Path) -> None:
    d0, d1, temp_dir = make_dirs(open_tmp, "d0", "d1", "temp")
    foreign = d1 / "not-iolabs.txt"
    foreign.write_text("keep me")
    layout = Layout(
        data_dirs=(d0, d1), files=3, temp_dir=temp_dir, settings={"synchronous": "normal"}
    )
    engine = SQLiteEngine(layout)
    before = global_temp_directory()

    with running(engine) as placement:
        assert engine.version() == sqlite3.sqlite_version
        assert engine.schemas == ["main", "f1", "f2"]
        assert placement.wal is None and placement.log is None

        # database file i lies in its round-robin data directory, one iolab directory per dir
        assert list(placement.data) == engine.database_files
        assert len(placement.data) == 3
        for i, path in enumerate(placement.data):
            assert path.name == f"iolab_{i}.db"
            assert path.is_file()
            assert path.parent.parent == layout.data_dir_for(i)
            assert path.parent.name.startswith(".iolab-sqlite-")
            assert header_page_size(path) == 8192
        assert placement.data[0].parent == placement.data[2].parent
        assert placement.temp is not None and placement.temp.parent == temp_dir
        assert sorted(placement.created) == sorted(
            {placement.data[0].parent, placement.data[1].parent, placement.temp}
        )

        conn = engine.connect()
        try:
            assert isinstance(conn, SQLiteConnection)
            assert conn.schemas == ["main", "f1", "f2"]
            assert conn.database_files == list(placement.data)
            listed = {name: Path(file) for _, name, file in conn.execute("PRAGMA database_list")}
            for schema, path in zip(conn.schemas, placement.data, strict=True):
                assert listed[schema] == path
                assert conn.execute(f"PRAGMA {schema}.page_size").fetchone() == (8192,)
                assert conn.execute(f"PRAGMA {schema}.journal_mode").fetchone() == ("wal",)
                assert conn.execute(f"PRAGMA {schema}.synchronous").fetchone() == (1,)
                conn.execute(
                    f"CREATE TABLE {schema}.t (id INTEGER PRIMARY KEY, worker INT, payload TEXT)"
                )
            assert conn.execute("PRAGMA busy_timeout").fetchone() == (60000,)
            # WAL beside each database file while a connection is open
            for path in placement.data:
                assert Path(f"{path}-wal").is_file(), path

            # two loaders at once, each in its own thread and connection
            errors: list[BaseException] = []
            threads = [
                threading.Thread(target=load, args=(engine, worker, errors)) for worker in (0, 1)
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(60)
            assert not errors, errors
            for schema in conn.schemas:
                assert conn.execute(f"SELECT count(*) FROM {schema}.t").fetchone() == (
                    ROWS_PER_SCHEMA,
                )
                assert conn.execute(
                    f"SELECT count(DISTINCT id), min(id), max(id), count(DISTINCT worker) "
                    f"FROM {schema}.t"
                ).fetchone() == (ROWS_PER_SCHEMA, 0, ROWS_PER_SCHEMA - 1, 2)

            # each table really lives in its own file
            for path in placement.data:
                direct = sqlite3.connect(path)
                try:
                    assert direct.execute("SELECT count(*) FROM t").fetchone() == (ROWS_PER_SCHEMA,)
                finally:
                    direct.close()

            # a sort too big for a tiny cache spills to temp files in the temp directory
            assert global_temp_directory() == str(placement.temp)
            conn.execute("PRAGMA temp_store = file")
            conn.execute("PRAGMA cache_size = 10")
            seen: set[str] = set()

            def watch() -> int:
                seen.update(open_files_under(temp_dir))
                return 0

            conn.set_progress_handler(watch, 5000)
            rows = conn.execute(
                "WITH RECURSIVE g(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM g WHERE x < 100000) "
                "SELECT x, randomblob(200) AS b FROM g ORDER BY b"
            ).fetchall()
            conn.set_progress_handler(None, 0)
            assert len(rows) == 100000
            assert seen, "the sort opened no temp file in the temp directory"
            assert all(Path(name.split(" ")[0]).parent == placement.temp for name in seen)
        finally:
            conn.close()

        settings = engine.effective_settings()
        assert settings["synchronous"] == "normal"
        assert settings["journal_mode"] == "wal"
        assert settings["page_size"] == "8192"
        assert settings["busy_timeout"] == "60000"
        assert settings["temp_store_directory"] == str(placement.temp)
        assert {"cache_size", "mmap_size", "wal_autocheckpoint", "temp_store"} <= set(settings)
        assert "locking_mode" in settings and "journal_size_limit" in settings
        assert not any("." in name for name in settings)  # all files agree
        created = placement.created

    assert created
    for path in created:
        assert not os.path.lexists(path), path
    assert list(d0.iterdir()) == []
    assert list(d1.iterdir()) == [foreign]
    assert foreign.read_text() == "keep me"
    assert list(temp_dir.iterdir()) == []
    assert global_temp_directory() == before  # SQLite's per-process temp directory given back
    engine.stop()  # both safe to repeat
    engine.destroy()


def test_defaults_and_other_settings(open_tmp: Path) -> None:
    """One data dir, no temp dir; settings reach every attached file."""
    (data,) = make_dirs(open_tmp, "data")
    layout = Layout(
        data_dirs=(data,),
        files=2,
        settings={
            "journal_mode": "TRUNCATE",
            "page_size": "16384",
            "cache_size": "-4096",
            "busy_timeout": "1500",
            "journal_size_limit": "1048576",
            "temp_store": "memory",
        },
    )
    engine = SQLiteEngine(layout)
    with running(engine) as placement:
        assert placement.temp is None
        assert len(placement.created) == 1  # both files share the data dir's iolab directory
        for path in placement.data:
            assert path.parent == placement.created[0]
            assert header_page_size(path) == 16384
        with engine.connect() as conn:
            conn.execute("CREATE TABLE f1.t (x)")
            conn.execute("INSERT INTO f1.t VALUES (1)")
            assert conn.execute("PRAGMA f1.cache_size").fetchone() == (-4096,)
        assert not Path(f"{placement.data[1]}-wal").exists()
        settings = engine.effective_settings()
        assert settings["journal_mode"] == "truncate"
        assert settings["synchronous"] == "full"
        assert settings["page_size"] == "16384"
        assert settings["cache_size"] == "-4096"
        assert settings["busy_timeout"] == "1500"
        assert settings["journal_size_limit"] == "1048576"
        assert settings["temp_store"] == "memory"
        assert "temp_store_directory" not in settings
    assert list(data.iterdir()) == []


def test_leftovers_of_killed_runs_are_reaped(open_tmp: Path) -> None:
    data, temp_dir = make_dirs(open_tmp, "data", "temp")
    dead = subprocess.Popen(["true"])
    dead.wait()
    leftovers = []
    for directory, kind in ((data, "sqlite"), (temp_dir, "sqlitetmp")):
        name = owned_name(kind).split("-")
        name[2] = str(dead.pid)  # as if made by a process that is gone
        leftover = directory / "-".join(name)
        leftover.mkdir()
        (leftover / "iolab_0.db").write_bytes(b"old")
        leftovers.append(leftover)
    foreign = data / ".iolab-notours"
    foreign.mkdir()

    engine = SQLiteEngine(Layout(data_dirs=(data,), temp_dir=temp_dir))
    with running(engine):
        assert not any(p.exists() for p in leftovers)
        assert foreign.is_dir()
    assert sorted(data.iterdir()) == [foreign]
    assert list(temp_dir.iterdir()) == []


def test_lifecycle_order(open_tmp: Path) -> None:
    (data,) = make_dirs(open_tmp, "data")
    engine = SQLiteEngine(Layout(data_dirs=(data,)))
    with pytest.raises(IolabError, match="provision"):
        engine.start()
    engine.provision()
    try:
        with pytest.raises(IolabError, match="start"):
            engine.connect()
        with pytest.raises(IolabError, match="already provisioned"):
            engine.provision()
    finally:
        engine.destroy()
    assert list(data.iterdir()) == []


def test_unknown_setting_is_bad_input(open_tmp: Path) -> None:
    (data,) = make_dirs(open_tmp, "data")
    engine = SQLiteEngine(Layout(data_dirs=(data,), settings={"jurnal_mode": "wal"}))
    with pytest.raises(BadInput) as err, running(engine):
        pass
    message = str(err.value)
    assert "--set" in message
    assert "jurnal_mode" in message
    assert "not a SQLite setting" in message
    for allowed in ("journal_mode", "synchronous", "page_size", "busy_timeout"):
        assert allowed in message
    assert list(data.iterdir()) == []


def test_wal_dir_is_bad_input(open_tmp: Path) -> None:
    data, wal_dir = make_dirs(open_tmp, "data", "wal")
    with pytest.raises(BadInput) as err:
        SQLiteEngine(Layout(data_dirs=(data,), wal_dir=wal_dir)).provision()
    message = str(err.value)
    assert "--wal-dir" in message
    assert str(wal_dir) in message
    assert "beside each database file" in message
    assert list(data.iterdir()) == []
    assert list(wal_dir.iterdir()) == []


@pytest.mark.parametrize(
    ("name", "value", "allowed"),
    [
        ("journal_mode", "sideways", "delete, truncate, persist, memory, wal, off"),
        ("synchronous", "sometimes", "off, normal, full, extra"),
        ("page_size", "1000", "power of two from 512 to 65536"),
        ("page_size", "131072", "power of two from 512 to 65536"),
        ("temp_store", "disk", "default, file, memory"),
        ("mmap_size", "-1", "0 or more"),
        ("busy_timeout", "soon", "milliseconds"),
    ],
)
def test_invalid_setting_value_is_bad_input(
    open_tmp: Path, name: str, value: str, allowed: str
) -> None:
    (data,) = make_dirs(open_tmp, "data")
    with pytest.raises(BadInput) as err:
        SQLiteEngine(Layout(data_dirs=(data,), settings={name: value})).provision()
    message = str(err.value)
    assert f"--set {name}" in message
    assert repr(value) in message
    assert allowed in message
    assert list(data.iterdir()) == []


@pytest.mark.parametrize("field", ["--data-dir", "--temp-dir"])
def test_missing_directory_is_bad_input(open_tmp: Path, field: str) -> None:
    (data,) = make_dirs(open_tmp, "data")
    missing = open_tmp / "nope"
    layout = {
        "--data-dir": Layout(data_dirs=(data, missing)),
        "--temp-dir": Layout(data_dirs=(data,), temp_dir=missing),
    }[field]
    with pytest.raises(BadInput) as err:
        SQLiteEngine(layout).provision()
    assert field in str(err.value)
    assert str(missing) in str(err.value)
    assert "existing directory" in str(err.value)
    assert list(data.iterdir()) == []


def test_file_as_data_dir_is_bad_input(open_tmp: Path) -> None:
    plain = open_tmp / "plain"
    plain.write_text("")
    with pytest.raises(BadInput, match="--data-dir.*give a directory, not a file"):
        SQLiteEngine(Layout(data_dirs=(plain,))).provision()


@pytest.mark.parametrize("files", [0, -1])
def test_zero_files_is_bad_input(open_tmp: Path, files: int) -> None:
    with pytest.raises(BadInput, match="--files.*1 or more"):
        SQLiteEngine(Layout(data_dirs=(open_tmp,), files=files)).provision()
    assert list(open_tmp.iterdir()) == []


def test_more_files_than_sqlite_attaches_is_bad_input(open_tmp: Path) -> None:
    probe = sqlite3.connect(":memory:")
    most = 1 + probe.getlimit(sqlite3.SQLITE_LIMIT_ATTACHED)
    probe.close()
    with pytest.raises(BadInput, match=f"--files.*give 1 to {most}"):
        SQLiteEngine(Layout(data_dirs=(open_tmp,), files=most + 1)).provision()
    assert list(open_tmp.iterdir()) == []


def test_two_engines_cannot_share_the_temp_directory(open_tmp: Path) -> None:
    data, t1, t2 = make_dirs(open_tmp, "data", "t1", "t2")
    first = SQLiteEngine(Layout(data_dirs=(data,), temp_dir=t1))
    second = SQLiteEngine(Layout(data_dirs=(data,), temp_dir=t2))
    with running(first) as placement:
        with pytest.raises(IolabError, match="one temp directory per process"), running(second):
            pass
        assert global_temp_directory() == str(placement.temp)
    third = SQLiteEngine(Layout(data_dirs=(data,), temp_dir=t2))
    with running(third) as placement:  # free again once the first stopped
        assert global_temp_directory() == str(placement.temp)
    assert list(data.iterdir()) == []
