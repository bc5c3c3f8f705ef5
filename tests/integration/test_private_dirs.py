"""Servers on layouts below directories their user cannot enter: a root user's clone under /root.

As root, PostgreSQL and MariaDB run as the unprivileged ``iolab`` user. Here every directory of
the layout (and the server's own run directory) sits below a mode-700 root-owned directory, two
levels of them for the data files; the servers must start, place each role where the layout
says, and leave the user's directories exactly as they were: same mode, same owner, no mount.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from iolab.engines.interface import Layout, running
from iolab.engines.mariadb import MariaDBEngine
from iolab.engines.postgres import PostgresEngine
from iolab.engines.server_process import server_user
from iolab.system import launch
from tests.conftest import is_root, requires_mariadb

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not is_root(), reason="servers run as another user only when iolab is root"),
]


@pytest.fixture
def private() -> Iterator[Path]:
    """A root-owned mode-700 directory, as /root is; removed after the test."""
    base = Path(tempfile.mkdtemp(prefix="iolab-private-", dir="/var/tmp"))
    assert stat.S_IMODE(base.stat().st_mode) == 0o700
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def layout_below(base: Path) -> tuple[Layout, list[Path]]:
    """Data in two directories (one inside a second 700 directory), WAL and temp beside them."""
    inner = base / "inner"
    dirs = [base / "d0", inner / "d1", base / "wal", base / "temp", base / "run"]
    for path in (inner, *dirs):
        path.mkdir(mode=0o700)
    layout = Layout(data_dirs=(dirs[0], dirs[1]), files=2, wal_dir=dirs[2], temp_dir=dirs[3])
    return layout, [base, inner, *dirs]


def modes(paths: list[Path]) -> dict[Path, tuple[int, int, int]]:
    return {p: (stat.S_IMODE(p.stat().st_mode), p.stat().st_uid, p.stat().st_gid) for p in paths}


def mounts_below(base: Path) -> list[str]:
    return [line for line in Path("/proc/mounts").read_text().splitlines() if str(base) in line]


def server_uid(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(ln for ln in status.splitlines() if ln.startswith("Uid:")).split()[1])


def test_postgres_runs_on_a_layout_below_a_private_directory(private: Path) -> None:
    layout, user_dirs = layout_below(private)
    before = modes(user_dirs)
    engine = PostgresEngine(layout, workdir=private / "run")
    with running(engine) as placement:
        pid = engine.server_pid
        assert pid is not None and server_uid(pid) == server_user().uid
        with engine.connect() as conn:
            conn.autocommit = True
            conn.execute("CREATE TABLE t (id int) TABLESPACE iolab_ts_1")
            conn.execute("INSERT INTO t SELECT generate_series(1, 5000)")
            conn.execute("CHECKPOINT")
            assert conn.execute("SELECT count(*) FROM t").fetchone() == (5000,)
            row = conn.execute("SELECT pg_relation_filepath('t')").fetchone()
        # the table's file is in the second data file's directory, below two private ones
        assert row is not None and str(row[0]).startswith("pg_tblspc/")
        assert any(p.is_file() for p in placement.data[1].rglob("*"))
        assert placement.data[1].parent == private / "inner" / "d1"
        assert any((placement.wal).glob("0000000100000000000000*"))
        # the host sees no mount: the server's view is its own
        assert mounts_below(private) == []
    assert modes(user_dirs) == before
    assert [p for d in user_dirs[2:] for p in d.iterdir()] == []  # nothing left behind
    assert mounts_below(private) == []


@requires_mariadb
def test_mariadb_runs_on_a_layout_below_a_private_directory(private: Path) -> None:
    layout, user_dirs = layout_below(private)
    before = modes(user_dirs)
    engine = MariaDBEngine(layout, workdir=private / "run")
    with running(engine) as placement:
        pid = engine.server_pid
        assert pid is not None and server_uid(pid) == server_user().uid
        parts = ", ".join(
            f"PARTITION p{i} DATA DIRECTORY = '{d}'" for i, d in enumerate(engine.partition_dirs)
        )
        conn = engine.connect()
        try:
            with conn.cursor() as cur:
                cur.execute(
                    "CREATE TABLE t (id INT PRIMARY KEY) ENGINE=InnoDB "
                    f"PARTITION BY HASH (id) ({parts})"
                )
                cur.executemany("INSERT INTO t VALUES (%s)", [(i,) for i in range(2000)])
            conn.commit()
            with conn.cursor() as cur:
                cur.execute("SELECT COUNT(*) FROM t")
                assert cur.fetchone()[0] == 2000
        finally:
            conn.close()
        ibd = [p for d in placement.data for p in d.rglob("*.ibd")]
        assert {p.parents[2] for p in ibd} == {private / "d0", private / "inner" / "d1"}
        assert placement.wal is not None and any(placement.wal.glob("ib_logfile*"))
        assert mounts_below(private) == []
    assert modes(user_dirs) == before
    assert [p for d in user_dirs[2:] for p in d.iterdir()] == []
    assert mounts_below(private) == []


def test_a_reachable_layout_needs_no_private_view(private: Path) -> None:
    """Where nothing blocks the server user, the server runs as before: no namespace of its own."""
    private.chmod(0o755)
    layout, _ = layout_below(private)
    for path in (private / "inner", *layout.data_dirs, layout.wal_dir, layout.temp_dir):
        assert path is not None
        path.chmod(0o755)
    engine = PostgresEngine(layout, workdir=Path(tempfile.gettempdir()))
    with running(engine):
        pid = engine.server_pid
        assert pid is not None
        user = server_user()
        own_view = os.readlink(f"/proc/{pid}/ns/mnt") != os.readlink("/proc/self/ns/mnt")
        # only binaries out of reach (a venv in a private clone) still need one
        assert own_view == bool(launch.needs_view(engine.install_dirs, user.uid, user.gid))
