"""The population workload's SQL for MariaDB against a real mariadbd.

Several loaders, each on its own connection, fill the table; the table must then hold exactly the
rows inserted, with distinct keys, two to a leaf page, spread over the layout's data directories.

Pages per row asserted: sequential keys fill pages at the right edge of the index, two rows each,
so 0.45 to 0.60 (a little over 0.5 when concurrent loaders' AUTO_INCREMENT values reach a page out
of order, or the first page of a partition keeps one row after the root splits). Random and
time-ordered UUIDs land inside the index and split full pages into a page of one row and a page of
two (a UUIDv7 is ordered only to the millisecond, and several rows share one), so 0.45 to 0.75.
Below 0.45 would mean three rows fit on a page, 1.0 one row per page: both are a wrong payload.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from iolab.engines.interface import Layout, running
from iolab.engines.mariadb import MariaDBEngine
from iolab.errors import BadInput
from iolab.workloads.populate import dialects as populate_dialects
from iolab.workloads.populate.loading import (
    TABLE,
    KeyKind,
    LoadMethod,
    LoadMode,
    LoadSpec,
    PopulateDialect,
)
from iolab.workloads.populate.mariadb import MariaDBPopulate
from tests.conftest import make_dirs, requires_mariadb

pytestmark = [
    pytest.mark.integration,
    requires_mariadb,
]

pytest.importorskip("pymysql")

LOADERS = 3
ROWS_EACH = 400
# a small table carries InnoDB's fixed pages (file header, inode and extent descriptor pages)
# beside its two rows per leaf page: 601 rows took 360-362 pages
SEQUENTIAL_PPR = (0.45, 0.62)
SCATTERED_PPR = (0.45, 0.75)

# (method, mode, commit_every, batch)
COMBOS = [
    (LoadMethod.INSERT, LoadMode.CLIENT, 1, 1),
    (LoadMethod.MULTIROW, LoadMode.CLIENT, 50, 20),
    (LoadMethod.INSERT, LoadMode.SERVER, 1, 1),
    (LoadMethod.INSERT, LoadMode.SERVER, 10, 1),
]


@pytest.fixture(scope="module")
def two_dirs() -> Iterator[MariaDBEngine]:
    """One server for the module: two data files (partitions), one in each data directory."""
    base = Path(tempfile.mkdtemp(prefix="iolab-test-", dir="/var/tmp"))
    base.chmod(0o755)
    try:
        data0, data1 = make_dirs(base, "data0", "data1")
        layout = Layout(data_dirs=(data0, data1), files=2)
        engine = MariaDBEngine(layout)
        with running(engine):
            yield engine
    finally:
        shutil.rmtree(base, ignore_errors=True)


def query(conn: Any, sql: str, args: Any = None) -> list[tuple[Any, ...]]:
    with conn.cursor() as cur:
        cur.execute(sql, args)
        rows = [tuple(r) for r in cur.fetchall()]
    conn.commit()
    return rows


def status(conn: Any, name: str) -> int:
    return int(query(conn, "SHOW GLOBAL STATUS LIKE %s", (name,))[0][1])


def run_loaders(engine: MariaDBEngine, dialect: MariaDBPopulate, spec: LoadSpec,
                counts: list[int]) -> list[list[int]]:  # fmt: skip
    """Run one loader per count, each on its own connection; the progress calls of each."""
    calls: list[list[int]] = [[] for _ in counts]
    errors: list[BaseException] = []
    conns = [engine.connect() for _ in counts]
    for conn in conns:
        dialect.ready(conn, spec)  # as the workload does before its clock starts
    start = threading.Barrier(len(counts))

    def work(i: int) -> None:
        try:
            start.wait()
            dialect.load(conns[i], spec, counts[i], calls[i].append)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(counts))]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    finally:
        for conn in conns:
            conn.close()
    assert not any(t.is_alive() for t in threads)
    if errors:
        raise errors[0]
    return calls


def check_uuid7(key: bytes) -> None:
    assert len(key) == 16
    assert key[6] >> 4 == 7  # version
    assert key[8] >> 6 == 0b10  # variant
    ms = int.from_bytes(key[:6], "big")
    assert abs(ms - time.time() * 1000) < 600_000


@pytest.mark.parametrize(
    ("method", "mode", "commit_every", "batch"),
    COMBOS,
    ids=[f"{m.value}-{mo.value}-every{c}" for m, mo, c, _ in COMBOS],
)
@pytest.mark.parametrize("key", list(KeyKind), ids=[k.value for k in KeyKind])
def test_loaders_fill_two_rows_per_page(
    two_dirs: MariaDBEngine,
    key: KeyKind,
    method: LoadMethod,
    mode: LoadMode,
    commit_every: int,
    batch: int,
) -> None:
    engine = two_dirs
    dialect = populate_dialects.dialect(engine)
    assert dialect.page_size == 16384
    payload = dialect.payload_bytes()
    assert payload == 8089
    spec = LoadSpec(key, method, mode, commit_every, payload, batch)
    counts = [ROWS_EACH + i for i in range(LOADERS)]  # uneven shares
    total = sum(counts)

    admin = engine.connect()
    try:
        dialect.create_table(admin, spec)
        log_before = dialect.log_bytes(admin)
        calls = run_loaders(engine, dialect, spec, counts)
        log_after = dialect.log_bytes(admin)
        stats = dialect.table_stats(admin)

        # every row committed was reported, and only once
        assert [sum(c) for c in calls] == counts
        per_statement = batch if method is LoadMethod.MULTIROW else 1
        if mode is LoadMode.CLIENT:
            for loader_calls in calls:
                if commit_every <= per_statement:
                    assert set(loader_calls) <= {per_statement, loader_calls[-1]}
                else:  # a commit after the statement that reaches commit_every rows
                    assert all(n >= commit_every for n in loader_calls[:-1])
                    assert all(n < commit_every + per_statement for n in loader_calls)

        assert stats.rows == total
        assert stats.distinct_keys == total
        assert stats.page_size == 16384
        low, high = SEQUENTIAL_PPR if key is KeyKind.SEQUENTIAL else SCATTERED_PPR
        assert low <= stats.pages_per_row <= high, stats
        assert stats.table_bytes >= stats.pages * stats.page_size
        assert stats.total_bytes >= stats.table_bytes

        # the redo log carries every payload byte
        assert log_before is not None and log_after is not None
        assert log_after - log_before >= total * payload

        # one partition per data file, each in its own directory, each holding rows
        datadir = engine.datadir
        assert datadir is not None
        for i, part_dir in enumerate(engine.partition_dirs):
            assert part_dir.parent == engine.layout.data_dir_for(i)
            ibd = part_dir / "iolab" / f"{TABLE}#P#p{i}.ibd"
            assert ibd.is_file(), sorted(part_dir.rglob("*"))
            assert ibd.stat().st_size >= stats.page_size * 10
            assert not (datadir / "iolab" / ibd.name).exists()
            (held,) = query(admin, f"SELECT COUNT(*) FROM {TABLE} PARTITION (p{i})")[0]
            assert held > total // 4

        ids = [row[0] for row in query(admin, f"SELECT id FROM {TABLE}")]
        if key is KeyKind.SEQUENTIAL:
            assert sorted(ids) == list(range(1, total + 1))
        elif key is KeyKind.ORDERED_UUID:
            for value in ids[:50]:
                check_uuid7(value)
        else:
            assert all(len(value) == 16 for value in ids)
    finally:
        admin.close()


@pytest.mark.parametrize(
    ("method", "mode", "commit_every", "transactions"),
    [
        (LoadMethod.INSERT, LoadMode.CLIENT, 1, 300),
        (LoadMethod.INSERT, LoadMode.SERVER, 1, 300),
        (LoadMethod.INSERT, LoadMode.SERVER, 10, 30),
        (LoadMethod.MULTIROW, LoadMode.SERVER, 1, 15),  # batch 20: one statement, one commit
    ],
    ids=["client-every1", "server-every1", "server-every10", "server-multirow"],
)
def test_commits_as_often_as_asked(
    two_dirs: MariaDBEngine,
    method: LoadMethod,
    mode: LoadMode,
    commit_every: int,
    transactions: int,
) -> None:
    """Each commit writes the redo log once (one loader, so no group commit merges them)."""
    engine = two_dirs
    dialect = populate_dialects.dialect(engine)
    spec = LoadSpec(KeyKind.SEQUENTIAL, method, mode, commit_every, dialect.payload_bytes(), 20)
    admin = engine.connect()
    try:
        dialect.create_table(admin, spec)
        writes_before = status(admin, "Innodb_log_writes")
        calls = run_loaders(engine, dialect, spec, [300])
        writes = status(admin, "Innodb_log_writes") - writes_before
        assert sum(calls[0]) == 300
        assert transactions <= writes <= transactions + 20  # a few for checkpoints, DDL
        assert dialect.table_stats(admin).rows == 300
    finally:
        admin.close()


@pytest.mark.parametrize("mode", [LoadMode.SERVER, LoadMode.CLIENT])
def test_ready_writes_no_row_and_leaves_the_session_as_it_was(
    two_dirs: MariaDBEngine, mode: LoadMode
) -> None:
    """``ready`` runs before the clock: in server mode one CALL of no row (the session parses
    the procedure into its cache), in client mode nothing; autocommit stays as it was."""
    dialect = populate_dialects.dialect(two_dirs)
    spec = LoadSpec(KeyKind.RANDOM, LoadMethod.INSERT, mode, 1, dialect.payload_bytes())
    admin = two_dirs.connect()
    loader = two_dirs.connect()
    try:
        dialect.create_table(admin, spec)
        before = int(query(loader, "SHOW SESSION STATUS LIKE 'Com_call_procedure'")[0][1])
        dialect.ready(loader, spec)
        after = int(query(loader, "SHOW SESSION STATUS LIKE 'Com_call_procedure'")[0][1])
        assert after - before == (1 if mode is LoadMode.SERVER else 0)
        assert not loader.get_autocommit()
        assert query(admin, f"SELECT COUNT(*) FROM {TABLE}") == [(0,)]
        dialect.load(loader, spec, 30, lambda n: None)
        assert query(admin, f"SELECT COUNT(*), COUNT(DISTINCT id) FROM {TABLE}") == [(30, 30)]
    finally:
        loader.close()
        admin.close()


def test_one_data_dir_holds_the_table_and_checkpoint_settles(open_tmp: Path) -> None:
    (data,) = make_dirs(open_tmp, "data")
    engine = MariaDBEngine(Layout(data_dirs=(data,), files=1))
    with running(engine):
        dialect = populate_dialects.dialect(engine)
        spec = LoadSpec(KeyKind.SEQUENTIAL, LoadMethod.MULTIROW, LoadMode.SERVER, 100,
                        dialect.payload_bytes(), 25)  # fmt: skip
        admin = engine.connect()
        try:
            pct_before = query(admin, "SELECT @@GLOBAL.innodb_max_dirty_pages_pct")[0][0]
            dialect.create_table(admin, spec)
            calls = run_loaders(engine, dialect, spec, [300, 301])
            assert [sum(c) for c in calls] == [300, 301]
            assert status(admin, "Innodb_buffer_pool_pages_dirty") > 0

            dialect.checkpoint(admin)
            assert status(admin, "Innodb_buffer_pool_pages_dirty") == 0
            assert status(admin, "Innodb_checkpoint_age") <= 4096
            assert query(admin, "SELECT @@GLOBAL.innodb_max_dirty_pages_pct")[0][0] == pct_before

            stats = dialect.table_stats(admin)
            assert stats.rows == stats.distinct_keys == 601
            assert SEQUENTIAL_PPR[0] <= stats.pages_per_row <= SEQUENTIAL_PPR[1], stats
            (part_dir,) = engine.partition_dirs
            assert (part_dir / "iolab" / f"{TABLE}.ibd").is_file()
            datadir = engine.datadir
            assert datadir is not None
            assert not (datadir / "iolab" / f"{TABLE}.ibd").exists()
            (create,) = query(admin, f"SHOW CREATE TABLE {TABLE}")
            assert "PARTITION" not in create[1]
        finally:
            admin.close()


def test_small_pages_hold_two_rows_too(open_tmp: Path) -> None:
    """The arithmetic is the page size's: 4K pages, bigint and UUID keys."""
    (data,) = make_dirs(open_tmp, "data")
    engine = MariaDBEngine(Layout(data_dirs=(data,), settings={"innodb_page_size": "4096"}))
    with running(engine):
        dialect = populate_dialects.dialect(engine)
        assert dialect.page_size == 4096
        assert dialect.payload_bytes() == 1945
        admin = engine.connect()
        try:
            for key, (low, high) in ((KeyKind.SEQUENTIAL, SEQUENTIAL_PPR),
                                     (KeyKind.RANDOM, SCATTERED_PPR)):  # fmt: skip
                spec = LoadSpec(key, LoadMethod.MULTIROW, LoadMode.CLIENT, 1,
                                dialect.payload_bytes(), 10)  # fmt: skip
                dialect.create_table(admin, spec)
                run_loaders(engine, dialect, spec, [300, 300])
                stats = dialect.table_stats(admin)
                assert stats.rows == stats.distinct_keys == 600
                assert stats.page_size == 4096
                assert low <= stats.pages_per_row <= high, (key, stats)
        finally:
            admin.close()


def test_payload_sizes_for_other_page_sizes() -> None:
    """Two records of the widest row (UUID key) fit in the free space, three never do."""
    for page_size in (4096, 8192, 16384, 32768):
        dialect: PopulateDialect = MariaDBPopulate([], page_size)
        free = page_size - 132
        widest = dialect.payload_bytes() + 36
        narrowest = dialect.payload_bytes() + 28
        assert 2 * widest + 1 <= free
        assert 3 * narrowest + 2 > free
    with pytest.raises(BadInput, match="64K pages"):
        MariaDBPopulate([], 65536)
