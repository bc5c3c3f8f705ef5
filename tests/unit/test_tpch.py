"""TPC-H pieces that need no engine: the answer check, the cache's names, CSV chunks,
MariaDB's table definitions and query text, the per-query results in the results database,
the migrator with a gap in the numbers."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from iolab.errors import BadInput, RunFailed
from iolab.results import QueryResult, RunOutcome, RunStatus, cell_id
from iolab.store import open_store
from iolab.store.migrate import available
from iolab.workloads.tpch.answers import Answer, mismatch, same_value
from iolab.workloads.tpch.data import check_space, data_dir, sf_label
from iolab.workloads.tpch.dialect import TABLES, TpchFiles, chunks
from iolab.workloads.tpch.mariadb import MariaDBTpch
from iolab.workloads.tpch.run import geometric_mean


@pytest.mark.parametrize(
    ("got", "want"),
    [
        ("25.5751546114546930", "25.575154611454693"),  # PostgreSQL numeric vs DuckDB double
        ("97864.56820000001", "97864.5682"),  # binary floating point in the last digit
        ("25.5752", "25.575154611454693"),  # four decimals printed: agree to four
        ("1193053.2252999984", "1193053.2253"),
        ("0.00000000000000000000", "0.0"),
        ("14876", "14876"),
        ("BUILDING  ", "BUILDING"),  # CHAR(n) pads
        ("", ""),  # NULL
        ("1995-03-11", "1995-03-11"),
    ],
)
def test_values_that_match(got: str, want: str) -> None:
    assert same_value(got, want)


@pytest.mark.parametrize(
    ("got", "want"),
    [
        ("14877", "14876"),  # counts are exact
        ("25.59", "25.575154611454693"),  # does not agree to the decimals it prints
        ("532348211.65", "532348211.66"),
        ("", "0"),
        ("MAIL", "SHIP"),
        ("1995-03-12", "1995-03-11"),
    ],
)
def test_values_that_do_not(got: str, want: str) -> None:
    assert not same_value(got, want)


def test_mismatch_names_the_first_difference() -> None:
    want = Answer.from_pipe_text("a|b\n1|x\n2|y\n")
    assert mismatch(Answer.from_rows(["a", "b"], [(1, "x"), (2, "y")]), want) is None
    assert mismatch(Answer.from_rows(["a", "b"], [(1, "x")]), want) == "1 rows, expected 2"
    wrong = Answer.from_rows(["a", "b"], [(1, "x"), (3, "y")])
    assert mismatch(wrong, want) == "row 2 a: got '3', expected '2'"
    assert mismatch(wrong, want, frozenset({"a"})) is None  # a skipped column
    assert mismatch(Answer.from_rows(["a"], [(1,), (2,)]), want) == "1 columns, expected 2"


def test_scale_factor_names(tmp_path: Path) -> None:
    assert [sf_label(s) for s in (1, 1.0, 0.01, 0.1, 10, 100, 0.5)] == [
        "1",
        "1",
        "0.01",
        "0.1",
        "10",
        "100",
        "0.5",
    ]
    assert data_dir(0.01, tmp_path) == tmp_path / "sf0.01"


def test_no_room_for_the_data_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match=r"--sf: 1000000\.0 is not allowed; its data needs about"):
        check_space(1_000_000.0, tmp_path)
    check_space(0.0001, tmp_path)  # a few hundred kB fit anywhere


def test_chunks_cut_whole_lines_and_skip_the_header(tmp_path: Path) -> None:
    lines = [f"{i},{'x' * (i % 7)},end\n".encode() for i in range(1000)]
    for table in TABLES:
        (tmp_path / f"{table}.csv").write_bytes(b"key,text,tail\n" + b"".join(lines))
    found = [c for c in chunks(TpchFiles(0.01, tmp_path), size=1000) if c.table == "orders"]
    assert len(found) > 5
    data = b""
    for c in found:
        part = c.path.read_bytes()[c.start : c.end]
        assert part.endswith(b"\n") and part[:1].isdigit()
        assert b"".join(c.blocks()) == part
        data += part
    assert data == b"".join(lines)


def test_mariadb_tables_are_split_over_the_dirs_and_page_compressed() -> None:
    two = MariaDBTpch([Path("/d0"), Path("/d1")], lambda: None, compression=True)
    sql = two.create_table_sql("lineitem")
    assert "l_comment VARCHAR(44) CHARACTER SET latin1 COLLATE latin1_bin NOT NULL" in sql
    assert "l_quantity DECIMAL(15,2) NOT NULL" in sql
    assert "PRIMARY KEY (l_orderkey, l_linenumber)" in sql
    assert sql.endswith(
        "PAGE_COMPRESSED=1 PARTITION BY HASH (l_orderkey) "
        "(PARTITION p0 DATA DIRECTORY = '/d0', PARTITION p1 DATA DIRECTORY = '/d1')"
    )
    one = MariaDBTpch([Path("/d0")], lambda: None).create_table_sql("orders")
    assert one.endswith("ROW_FORMAT=DYNAMIC STATS_PERSISTENT=1 DATA DIRECTORY = '/d0'")
    assert "PAGE_COMPRESSED" not in one


def test_mariadb_q13_names_its_derived_columns_in_the_select_list() -> None:
    duckdb_q13 = (
        "SELECT c_count, count(*) AS custdist FROM (SELECT c_custkey, count(o_orderkey)\n"
        "    FROM customer LEFT OUTER JOIN orders ON c_custkey = o_custkey\n"
        "GROUP BY c_custkey) AS c_orders (c_custkey,\n        c_count)\nGROUP BY c_count;"
    )
    dialect = MariaDBTpch([Path("/d0")], lambda: None)
    assert dialect.query(13, duckdb_q13) == (
        "SELECT c_count, count(*) AS custdist FROM (SELECT c_custkey, count(o_orderkey) "
        "AS c_count\n    FROM customer LEFT OUTER JOIN orders ON c_custkey = o_custkey\n"
        "GROUP BY c_custkey) AS c_orders\nGROUP BY c_count;"
    )
    assert dialect.query(6, "SELECT 6;") == "SELECT 6;"
    with pytest.raises(RunFailed, match="query 13 of the tpch extension is not the text"):
        dialect.query(13, "SELECT 13")


def test_geometric_mean() -> None:
    assert geometric_mean([1.0, 4.0]) == pytest.approx(2.0)
    assert geometric_mean([]) is None


def test_query_results_are_stored_with_the_run(tmp_path: Path) -> None:
    with open_store(tmp_path / "r.db") as store:
        experiment = store.create_experiment("tpch", "command", {})
        cell = cell_id({"w": "tpch"})
        store.ensure_cell(experiment, cell, "tpch", {})
        run = store.start_run(experiment, cell, 1, None)
        outcome = RunOutcome(RunStatus.FAILED, error="1 of 2 queries failed")
        outcome.query_results = [
            QueryResult(1, 0.25, 4, True),
            QueryResult(2, None, None, False, "timed out: stopped after 1 s"),
        ]
        store.finish_run(run, outcome)
        assert store.query_results(run) == outcome.query_results
        row = store.conn.execute(
            "SELECT answer_ok, error FROM query_results WHERE run_id = ? AND query = 2", (run,)
        ).fetchone()
        assert row == (0, "timed out: stopped after 1 s")


def test_a_migration_numbered_below_the_newest_applied_is_still_applied(tmp_path: Path) -> None:
    """Branches add migrations in parallel: a database at 3 may still lack a lower number."""
    db = tmp_path / "r.db"
    conn = sqlite3.connect(db)
    conn.execute(
        "CREATE TABLE schema_migrations "
        "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )
    # 0003 stands alone (later ones alter its table): applied first, as if 1 and 2 came later
    newest = next(m for m in available() if m.version == 3)
    conn.executescript(newest.sql)
    conn.execute(
        "INSERT INTO schema_migrations VALUES (?, ?, 'now')", (newest.version, newest.name)
    )
    conn.commit()
    conn.close()
    with open_store(db) as store:
        versions = [r[0] for r in store.conn.execute("SELECT version FROM schema_migrations")]
        assert sorted(versions) == [m.version for m in available()]
        assert store.runs() == []  # the runs table of 0001 is there
