"""PostgreSQL's populate dialect against a real server: one row per heap page, every row loaded
once, the keys asked for, commits where the spec puts them, and the table spread over the
layout's tablespaces.

One server (two data directories, two data files) serves the whole module; every test makes the
table afresh.
"""

from __future__ import annotations

import shutil
import tempfile
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from iolab.engines.interface import Layout, running
from iolab.engines.postgres import PostgresEngine
from iolab.errors import BadInput
from iolab.workloads.populate import dialects as populate_dialects
from iolab.workloads.populate.loading import (
    TABLE,
    KeyKind,
    LoadMethod,
    LoadMode,
    LoadSpec,
    PopulateDialect,
    TableStats,
)
from iolab.workloads.populate.postgres import (
    CHECK_ROWS,
    PROCEDURE,
    PROGRESS_INTERVAL,
    UUIDV7_FUNCTION,
    PostgresPopulate,
    payload_width,
)

pytestmark = pytest.mark.integration

LOADERS = (190, 170, 140)  # rows per loader: uneven, so last statements and chunks are partial
WIDTH = 4045  # payload_width(8192); see its docstring for the arithmetic


@pytest.fixture(scope="module")
def engine() -> Iterator[PostgresEngine]:
    """A running server over two data directories with two data files (two tablespaces)."""
    base = Path(tempfile.mkdtemp(prefix="iolab-test-", dir="/var/tmp"))
    base.chmod(0o755)  # the server user must reach it (see the open_tmp fixture)
    try:
        data = (base / "d0", base / "d1")
        for directory in data:
            directory.mkdir()
        eng = PostgresEngine(Layout(data_dirs=data, files=2))
        with running(eng):
            yield eng
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def version(engine: PostgresEngine) -> int:
    with engine.connect() as conn:
        row = conn.execute("SHOW server_version_num").fetchone()
    assert row is not None
    return int(row[0])


@dataclass
class Loaded:
    stats: TableStats
    progress: list[list[int]]  # per loader, the progress(n) calls in order
    wal_bytes: int
    per_partition: dict[str, int]
    transactions: int  # distinct inserting transactions (xmin) among the rows


def populate(
    engine: PostgresEngine, dialect: PostgresPopulate, spec: LoadSpec, counts: tuple[int, ...]
) -> Loaded:
    """Create the table, then run one loader per count, each on its own connection in a thread."""
    with engine.connect() as conn:
        dialect.create_table(conn, spec)
        dialect.checkpoint(conn)
        before = dialect.log_bytes(conn)
    assert before is not None
    calls: list[list[int]] = [[] for _ in counts]

    def loader(i: int) -> None:
        with engine.connect() as conn:
            dialect.ready(conn, spec)  # as the workload does before its clock starts
            dialect.load(conn, spec, counts[i], calls[i].append)

    with ThreadPoolExecutor(len(counts)) as pool:
        for future in [pool.submit(loader, i) for i in range(len(counts))]:
            future.result()

    with engine.connect() as conn:
        after = dialect.log_bytes(conn)
        stats = dialect.table_stats(conn)
        rows = conn.execute(
            f"SELECT tableoid::regclass::text, count(*) FROM {TABLE} GROUP BY 1"
        ).fetchall()
        xids = conn.execute(f"SELECT count(DISTINCT xmin::text) FROM {TABLE}").fetchone()
    assert after is not None
    assert xids is not None
    return Loaded(stats, calls, after - before, {str(t): int(n) for t, n in rows}, int(xids[0]))


def commits(count: int, per_statement: int, commit_every: int) -> list[int]:
    """Rows per commit: after the statement that reaches commit_every, and after the last."""
    out: list[int] = []
    done = pending = 0
    while done < count:
        k = min(per_statement, count - done)
        done += k
        pending += k
        if pending >= commit_every or done == count:
            out.append(pending)
            pending = 0
    return out


def key_versions(engine: PostgresEngine) -> set[str]:
    with engine.connect() as conn:
        rows = conn.execute(f"SELECT DISTINCT substr(id::text, 15, 1) FROM {TABLE}").fetchall()
    return {str(v) for (v,) in rows}


def test_dialect_of_the_running_server(engine: PostgresEngine, version: int) -> None:
    dialect: PopulateDialect = populate_dialects.dialect(engine)
    assert isinstance(dialect, PostgresPopulate)
    assert dialect.tablespaces == engine.tablespaces == ["iolab_ts_0", "iolab_ts_1"]
    assert dialect.server_version_num == version >= 180000
    assert dialect.page_size == 8192
    assert dialect.rows_per_page == 1
    assert dialect.methods == set(LoadMethod)
    assert dialect.modes == set(LoadMode)
    assert dialect.payload_bytes() == WIDTH == payload_width(8192)


# (method, mode, commit_every, batch)
COMBOS = [
    (LoadMethod.INSERT, LoadMode.CLIENT, 1, 100),  # the seed: one implicit transaction a row
    (LoadMethod.MULTIROW, LoadMode.CLIENT, 50, 25),  # explicit transactions of two statements
    (LoadMethod.COPY, LoadMode.CLIENT, 100, 40),  # commits at the chunk that reaches 100
    (LoadMethod.COPY, LoadMode.CLIENT, 1, 25),  # autocommit: one transaction per COPY
    (LoadMethod.INSERT, LoadMode.SERVER, 1, 100),
    (LoadMethod.INSERT, LoadMode.SERVER, 10, 100),
    (LoadMethod.MULTIROW, LoadMode.SERVER, 20, 15),
]


@pytest.mark.parametrize("key", list(KeyKind), ids=str)
@pytest.mark.parametrize(
    ("method", "mode", "commit_every", "batch"),
    COMBOS,
    ids=[f"{m}-{mode}-c{c}-b{b}" for m, mode, c, b in COMBOS],
)
def test_concurrent_loaders_fill_one_row_per_page(
    engine: PostgresEngine,
    version: int,
    key: KeyKind,
    method: LoadMethod,
    mode: LoadMode,
    commit_every: int,
    batch: int,
) -> None:
    # progress_interval 0: the procedure reports every commit, so progress mirrors commits
    dialect = PostgresPopulate(engine.tablespaces, version, progress_interval=0)
    spec = LoadSpec(key, method, mode, commit_every, dialect.payload_bytes(), batch)
    loaded = populate(engine, dialect, spec, LOADERS)
    total = sum(LOADERS)
    stats = loaded.stats

    assert stats.rows == stats.distinct_keys == total
    assert 0.99 <= stats.pages_per_row <= 1.05, stats
    assert stats.page_size == 8192
    assert stats.table_bytes == stats.pages * 8192
    assert stats.total_bytes > stats.table_bytes  # the primary-key indexes
    assert loaded.wal_bytes >= total * spec.payload_bytes

    per_statement = 1 if method is LoadMethod.INSERT else batch
    expected = [commits(n, per_statement, commit_every) for n in LOADERS]
    assert loaded.progress == expected
    assert sum(map(sum, loaded.progress)) == total
    assert loaded.transactions == sum(len(c) for c in expected)

    assert sorted(loaded.per_partition) == [f"{TABLE}_p0", f"{TABLE}_p1"]
    assert all(n > 0 for n in loaded.per_partition.values()), loaded.per_partition

    if key is KeyKind.SEQUENTIAL:
        with engine.connect() as conn:
            assert conn.execute(f"SELECT min(id), max(id) FROM {TABLE}").fetchone() == (1, total)
    else:
        assert key_versions(engine) == {"4" if key is KeyKind.RANDOM else "7"}


def test_table_is_partitioned_over_the_tablespaces(engine: PostgresEngine, version: int) -> None:
    dialect = PostgresPopulate(engine.tablespaces, version)
    spec = LoadSpec(KeyKind.RANDOM, LoadMethod.INSERT, LoadMode.CLIENT, 1, WIDTH)
    with engine.connect() as conn:
        dialect.create_table(conn, spec)
        dialect.load(conn, spec, 20, lambda n: None)
        places = dict(
            conn.execute(
                "SELECT c.relname, coalesce(t.spcname, d.spcname) FROM pg_class c "
                "LEFT JOIN pg_tablespace t ON t.oid = c.reltablespace "
                "CROSS JOIN (SELECT s.spcname FROM pg_database db JOIN pg_tablespace s "
                "ON s.oid = db.dattablespace WHERE db.datname = current_database()) d "
                "WHERE c.relname LIKE 'iolab\\_populate\\_p%' AND c.relkind IN ('r', 'i')"
            ).fetchall()
        )
        parts = conn.execute(
            "SELECT c.relname, c.relkind, c.reltoastrelid::int, c.reloptions, a.attstorage "
            "FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid "
            "AND a.attname = 'payload' WHERE c.relname LIKE 'iolab\\_populate%' ORDER BY 1"
        ).fetchall()
        attached = conn.execute(
            "SELECT inhrelid::regclass::text FROM pg_inherits "
            f"WHERE inhparent = '{TABLE}_pkey'::regclass ORDER BY 1"
        ).fetchall()
        widths = conn.execute(
            f"SELECT DISTINCT pg_column_size(payload), octet_length(payload) FROM {TABLE}"
        ).fetchall()
        procedures = conn.execute(
            "SELECT count(*) FROM pg_proc WHERE proname = %s AND prokind = 'p'", (PROCEDURE,)
        ).fetchone()

    assert places == {
        f"{TABLE}_p0": "iolab_ts_0",
        f"{TABLE}_p0_pkey": "iolab_ts_0",
        f"{TABLE}_p1": "iolab_ts_1",
        f"{TABLE}_p1_pkey": "iolab_ts_1",
    }
    assert [(name, kind) for name, kind, *_ in parts] == [
        (TABLE, "p"),
        (f"{TABLE}_p0", "r"),
        (f"{TABLE}_p1", "r"),
    ]
    for _name, _kind, toast, _options, storage in parts:
        assert storage == "p"  # PLAIN, inherited from the parent
        assert toast == 0  # nothing to TOAST: no TOAST table
    assert [options for _, kind, _, options, _ in parts if kind == "r"] == [["fillfactor=100"]] * 2
    assert attached == [(f"{TABLE}_p0_pkey",), (f"{TABLE}_p1_pkey",)]
    assert widths == [(WIDTH + 4, WIDTH)]  # stored whole, inline, uncompressed, padded
    assert procedures == (1,)


@pytest.mark.parametrize(
    ("key", "width", "per_page"),
    [
        (KeyKind.SEQUENTIAL, WIDTH, 1),
        (KeyKind.SEQUENTIAL, WIDTH - 1, 2),  # one byte narrower and two rows share a page
        (KeyKind.RANDOM, WIDTH, 1),
        (KeyKind.RANDOM, WIDTH - 8, 1),  # the uuid key is 8 bytes wider than bigint ...
        (KeyKind.RANDOM, WIDTH - 9, 2),  # ... so it would get away with 8 bytes less
    ],
)
def test_payload_is_the_narrowest_with_one_row_per_page(
    engine: PostgresEngine, version: int, key: KeyKind, width: int, per_page: int
) -> None:
    dialect = PostgresPopulate(engine.tablespaces, version)
    # one loader, one multirow statement per 50 rows: no concurrent relation extension
    spec = LoadSpec(key, LoadMethod.MULTIROW, LoadMode.CLIENT, 1, width, batch=50)
    loaded = populate(engine, dialect, spec, (200,))
    assert loaded.stats.rows == 200
    expected_pages = sum(-(-n // per_page) for n in loaded.per_partition.values())
    assert loaded.stats.pages == expected_pages


def test_one_tablespace_is_a_plain_table(engine: PostgresEngine, version: int) -> None:
    dialect = PostgresPopulate(["iolab_ts_1"], version)  # default progress interval
    spec = LoadSpec(KeyKind.SEQUENTIAL, LoadMethod.INSERT, LoadMode.SERVER, 1, WIDTH)
    loaded = populate(engine, dialect, spec, (150, 150))
    assert loaded.stats.rows == loaded.stats.distinct_keys == 300
    assert 0.99 <= loaded.stats.pages_per_row <= 1.05
    assert [sum(calls) for calls in loaded.progress] == [150, 150]
    assert loaded.per_partition == {TABLE: 300}
    with engine.connect() as conn:
        rows = conn.execute(
            "SELECT c.relname, c.relkind, t.spcname FROM pg_class c "
            "JOIN pg_tablespace t ON t.oid = c.reltablespace "
            "WHERE c.relname IN (%s, %s) ORDER BY 1",
            (TABLE, f"{TABLE}_pkey"),
        ).fetchall()
    assert rows == [(TABLE, "r", "iolab_ts_1"), (f"{TABLE}_pkey", "i", "iolab_ts_1")]


def test_ordered_uuids_without_uuidv7(engine: PostgresEngine) -> None:
    """A server before 18 gets a PL/pgSQL version-7 UUID; made here as if for version 17."""
    dialect = PostgresPopulate(engine.tablespaces, 170000, progress_interval=0)
    spec = LoadSpec(KeyKind.ORDERED_UUID, LoadMethod.INSERT, LoadMode.SERVER, 5, WIDTH)
    start_ms = time.time_ns() // 1_000_000
    loaded = populate(engine, dialect, spec, (120, 80))
    end_ms = time.time_ns() // 1_000_000
    assert loaded.stats.rows == loaded.stats.distinct_keys == 200
    assert loaded.progress == [[5] * 24, [5] * 16]
    with engine.connect() as conn:
        ids = [u for (u,) in conn.execute(f"SELECT id FROM {TABLE}").fetchall()]
        found = conn.execute(
            "SELECT count(*) FROM pg_proc WHERE proname = %s", (UUIDV7_FUNCTION,)
        ).fetchone()
    assert found == (1,)
    for key in ids:
        assert isinstance(key, uuid.UUID)
        assert key.version == 7
        assert key.variant == uuid.RFC_4122
        assert start_ms - 1000 <= int.from_bytes(key.bytes[:6], "big") <= end_ms + 1000


def test_server_progress_arrives_while_the_call_runs(engine: PostgresEngine, version: int) -> None:
    dialect = PostgresPopulate(engine.tablespaces, version, progress_interval=0)
    spec = LoadSpec(KeyKind.SEQUENTIAL, LoadMethod.INSERT, LoadMode.SERVER, 1, WIDTH)
    count = 2000
    with engine.connect() as conn:
        dialect.create_table(conn, spec)
    seen: list[int] = []
    calls: list[int] = []
    with engine.connect() as loader, engine.connect() as watcher:
        watcher.autocommit = True

        def progress(n: int) -> None:
            if not calls:  # at the first commit, look at the table from elsewhere
                row = watcher.execute(f"SELECT count(*) FROM {TABLE}").fetchone()
                assert row is not None
                seen.append(int(row[0]))
            calls.append(n)

        dialect.load(loader, spec, count, progress)
        assert loader.autocommit is False  # restored
    assert sum(calls) == count
    assert len(calls) == count
    assert seen and 1 <= seen[0] < count  # the CALL was still inserting


@pytest.mark.parametrize("mode", [LoadMode.SERVER, LoadMode.CLIENT])
def test_ready_writes_no_row_and_leaves_the_session_as_it_was(
    engine: PostgresEngine, version: int, mode: LoadMode
) -> None:
    """``ready`` runs before the clock: in server mode one CALL of no transaction (the session
    compiles the procedure), in client mode nothing. No row, no open transaction, autocommit as
    it was; the load that follows inserts exactly its rows."""
    dialect = PostgresPopulate(engine.tablespaces, version)
    spec = LoadSpec(KeyKind.SEQUENTIAL, LoadMethod.INSERT, mode, 1, WIDTH)
    with engine.connect() as conn:
        dialect.create_table(conn, spec)
    from psycopg import pq

    with engine.connect() as loader, engine.connect() as watcher:
        watcher.autocommit = True
        loader.execute("SET track_functions = 'pl'")
        loader.commit()
        dialect.ready(loader, spec)
        assert loader.autocommit is False
        assert loader.info.transaction_status == pq.TransactionStatus.IDLE
        loader.execute("SELECT pg_stat_force_next_flush()")  # the CALL's count, when idle
        loader.commit()
        calls = watcher.execute(
            "SELECT coalesce(sum(calls), 0) FROM pg_stat_user_functions WHERE funcname = %s",
            (PROCEDURE,),
        ).fetchone()
        assert calls == (1 if mode is LoadMode.SERVER else 0,)
        assert watcher.execute(f"SELECT count(*) FROM {TABLE}").fetchone() == (0,)
        dialect.load(loader, spec, 40, lambda n: None)
        assert watcher.execute(f"SELECT count(*), max(id) FROM {TABLE}").fetchone() == (40, 40)


# (method, commit_every, batch): transactions of one row, of 5 one-row statements, of 4
# statements (3, 3, 3, 1 at the end), of 2 statements of 7 rows (the last one shorter), of one
# 40-row statement (a group of 1)
SERVER_SHAPES = [
    (LoadMethod.INSERT, 1, 1),
    (LoadMethod.INSERT, 5, 1),
    (LoadMethod.MULTIROW, 10, 3),
    (LoadMethod.MULTIROW, 14, 7),
    (LoadMethod.MULTIROW, 40, 40),
]


@pytest.mark.parametrize(
    ("method", "commit_every", "batch"),
    SERVER_SHAPES,
    ids=[f"{m}-c{c}-b{b}" for m, c, b in SERVER_SHAPES],
)
def test_server_groups_transactions_between_looks_at_the_clock(
    engine: PostgresEngine, version: int, method: LoadMethod, commit_every: int, batch: int
) -> None:
    """With a reporting interval, the procedure reads the clock once per group of about
    CHECK_ROWS rows: every NOTICE is then a whole number of groups. Rows and commits stay
    exactly those asked for, and every row is reported once."""
    # 1 us: the interval has always passed when the clock is read, so every group reports
    dialect = PostgresPopulate(engine.tablespaces, version, progress_interval=1e-6)
    spec = LoadSpec(KeyKind.SEQUENTIAL, method, LoadMode.SERVER, commit_every, WIDTH, batch)
    loaded = populate(engine, dialect, spec, LOADERS)

    per_statement = 1 if method is LoadMethod.INSERT else batch
    statements = -(-commit_every // per_statement)
    per_commit = statements * per_statement
    group = max(1, CHECK_ROWS // per_commit) * per_commit  # rows between two looks
    for count, calls in zip(LOADERS, loaded.progress, strict=True):
        full, rest = divmod(count // per_commit, max(1, CHECK_ROWS // per_commit))
        expected = [group] * full + ([rest * per_commit] if rest else [])
        if count % per_commit:
            expected.append(count % per_commit)  # the last, shorter transaction
        assert calls == expected, (count, calls)
    assert loaded.stats.rows == loaded.stats.distinct_keys == sum(LOADERS)
    expected_commits = [commits(n, per_statement, commit_every) for n in LOADERS]
    assert loaded.transactions == sum(len(c) for c in expected_commits)
    with engine.connect() as conn:
        found = conn.execute(f"SELECT min(id), max(id) FROM {TABLE}").fetchone()
    assert found == (1, sum(LOADERS))


def test_server_progress_with_the_default_interval(engine: PostgresEngine, version: int) -> None:
    """The default interval (0.5 s): every row reported once, in NOTICEs or when the CALL ends."""
    dialect = PostgresPopulate(engine.tablespaces, version)
    assert dialect.progress_interval == PROGRESS_INTERVAL
    spec = LoadSpec(KeyKind.SEQUENTIAL, LoadMethod.INSERT, LoadMode.SERVER, 1, WIDTH)
    loaded = populate(engine, dialect, spec, LOADERS)
    assert [sum(c) for c in loaded.progress] == list(LOADERS)
    assert loaded.stats.rows == loaded.stats.distinct_keys == sum(LOADERS)
    assert loaded.transactions == sum(LOADERS)


def test_bad_specs_are_bad_input(engine: PostgresEngine, version: int) -> None:
    dialect = PostgresPopulate(engine.tablespaces, version)
    good = LoadSpec(KeyKind.SEQUENTIAL, LoadMethod.INSERT, LoadMode.CLIENT, 1, WIDTH)
    bad: list[tuple[LoadSpec, str]] = [
        (LoadSpec(KeyKind.RANDOM, LoadMethod.COPY, LoadMode.SERVER, 1, WIDTH), "--mode client"),
        (LoadSpec(KeyKind.RANDOM, LoadMethod.INSERT, LoadMode.CLIENT, 0, WIDTH), "commit_every"),
        (LoadSpec(KeyKind.RANDOM, LoadMethod.INSERT, LoadMode.CLIENT, 1, 8200), "one heap page"),
        (LoadSpec(KeyKind.RANDOM, LoadMethod.MULTIROW, LoadMode.CLIENT, 1, 9, 70000), "batch"),
    ]
    with engine.connect() as conn:
        for spec, message in bad:
            with pytest.raises(BadInput, match=message):
                dialect.create_table(conn, spec)
            with pytest.raises(BadInput, match=message):
                dialect.load(conn, spec, 10, lambda n: None)
        with pytest.raises(BadInput, match="count"):
            dialect.load(conn, good, -1, lambda n: None)
    with pytest.raises(BadInput, match="tablespace"):
        PostgresPopulate([], version)
