"""`iolab tpch` end to end at SF 0.01: every answer checked on DuckDB and PostgreSQL, data
placed in the layout's directories, compression's effect on size, a wrong answer caught, bad
input refused with one line.

The generated data lives in one cache for the session (the ``cache`` fixture sets
IOLAB_CACHE), removed at the end.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from iolab.engines import catalog
from iolab.engines.interface import Layout, running
from iolab.errors import RunFailed
from iolab.events import Collect, Warning
from iolab.results import RunOutcome, RunStatus
from iolab.runner.single import CommandRun, execute
from iolab.store import open_store
from iolab.workloads.cache import UntrustedCache
from iolab.workloads.tpch import data as tpch_data
from iolab.workloads.tpch import dialects as tpch_dialects
from iolab.workloads.tpch.run import TpchOptions, load_and_query, run_tpch
from tests.conftest import make_dirs, requires_mariadb, small_tmpfs
from tests.integration.conftest import SF, check_answers, iolab, placed_under, tpch_json

pytestmark = pytest.mark.integration


def test_duckdb_answers_all_22_on_two_files(cache: Path, open_tmp: Path, results_db: Path) -> None:
    a, b = make_dirs(open_tmp, "a", "b")
    doc = tpch_json("--data-dir", str(a), "--data-dir", str(b), "--files", "2", "--warm")
    check_answers(doc)
    assert doc["engine"] == "duckdb" and doc["mode"] == "warm" and doc["compression"] is True
    assert placed_under(doc, a) > 1_000_000 and placed_under(doc, b) > 1_000_000
    assert list(a.iterdir()) == [] and list(b.iterdir()) == []
    assert (cache / "tpch" / "sf0.01" / "lineitem.csv").stat().st_size > 7_000_000
    # the per-query results are in the results database, and `results show` prints them
    shown = iolab("results", "show", str(doc["run"]))
    assert shown.returncode == 0, shown.stderr
    assert "Q22" in shown.stdout and "ok" in shown.stdout
    stored = json.loads(iolab("results", "show", str(doc["run"]), "--json").stdout)
    assert len(stored["query_results"]) == 22
    assert all(q["answer_ok"] is True for q in stored["query_results"])


def test_duckdb_out_of_memory_while_loading_fails_the_run_in_one_line(
    cache: Path, open_tmp: Path, results_db: Path
) -> None:
    (data,) = make_dirs(open_tmp, "data")
    done = iolab(
        "tpch", "--engine", "duckdb", "--sf", SF, "--data-dir", str(data),
        "--set", "memory_limit=1MB",
    )  # fmt: skip
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith("error: DuckDB could not load lineitem: ")
    assert "Out of Memory Error" in errors[0]
    listed = iolab("results", "list").stdout
    assert "failed" in listed and "tpch duckdb" in listed
    assert list(data.iterdir()) == []


def test_postgres_answers_all_22_with_two_tablespaces_on_two_dirs(
    cache: Path, open_tmp: Path, results_db: Path
) -> None:
    a, b, temp = make_dirs(open_tmp, "a", "b", "temp")
    doc = tpch_json(
        "--engine",
        "postgres",
        "--data-dir",
        str(a),
        "--data-dir",
        str(b),
        "--files",
        "2",
        "--temp-dir",
        str(temp),
        "--cold",
    )
    check_answers(doc)
    assert doc["engine"] == "postgres" and doc["mode"] == "cold" and doc["compression"] is False
    # every table is hash-partitioned over both tablespaces: each holds about half the data
    in_a, in_b = placed_under(doc, a), placed_under(doc, b)
    assert in_b > 6_000_000, doc["placement"]
    assert in_a > in_b  # a also holds the database's catalogs
    assert doc["load_seconds"] > 0 and doc["index_seconds"] > 0  # type: ignore[operator]
    assert doc["on_disk_bytes"] == in_a + in_b
    assert doc["settings"]["temp_tablespaces"] == "iolab_temp"  # type: ignore[index]
    for d in (a, b, temp):
        assert list(d.iterdir()) == []
    # what the devices did during each query: every device of the layout, with its roles
    queries = doc["queries"]
    assert isinstance(queries, list)
    for q in queries:
        assert q["io"], q
        roles = {r for d in q["io"].values() for r in d["roles"]}
        assert roles == {"data", "wal", "temp"}  # the WAL is in the cluster, on a
        assert all(d["read_bytes"] >= 0 and d["reads"] >= 0 for d in q["io"].values())
    if doc.get("page_cache_dropped"):  # cold for real: the first scans read from the device
        read = sum(d["read_bytes"] for q in queries for d in q["io"].values())
        assert read > 1_000_000
    stored = json.loads(iolab("results", "show", str(doc["run"]), "--json").stdout)
    assert [q["io"] for q in stored["query_results"]] == [q["io"] for q in queries]
    names = {(s["probe"], s["name"]) for s in stored["probes"]["series"]}
    assert ("device", "read_mbps") in names and any(p == "postgres" for p, _ in names), names
    shown = iolab("results", "show", str(doc["run"]))
    assert "data read MB/s" in shown.stdout and "read ms" in shown.stdout
    # each query's start on the probes' time axis, in order, and marked on the timeline
    starts = [q["start_s"] for q in queries]
    assert all(s is not None and s >= 0 for s in starts) and starts == sorted(starts)
    assert all(b - a >= q["seconds"] for a, b, q in zip(starts, starts[1:], queries, strict=False))
    page = open_tmp / "timeline.html"
    assert iolab("timeline", str(doc["run"]), "-o", str(page)).returncode == 0
    assert '"text":"Q1"' in page.read_text() and "where each query began" in page.read_text()


def test_compression_off_takes_more_room(cache: Path, open_tmp: Path, results_db: Path) -> None:
    sizes = {}
    for setting in ("on", "off"):
        doc = tpch_json("--compression", setting, "--queries", "1,6", "--warm")
        assert [q["answer_ok"] for q in doc["queries"]] == [True, True]  # type: ignore[attr-defined]
        sizes[setting] = doc["on_disk_bytes"]
        assert doc["compression_ratio"] == pytest.approx(doc["data_bytes"] / doc["on_disk_bytes"])  # type: ignore[operator]
    assert sizes["off"] > 2 * sizes["on"]  # type: ignore[operator]


def test_a_wrong_answer_fails_the_run_and_is_kept(
    cache: Path, open_tmp: Path, tmp_path: Path
) -> None:
    """SF 0.01's results checked against SF 0.1's answers: every query must be caught."""
    options = TpchOptions(
        "duckdb",
        Layout((open_tmp,)),
        scale_factor=0.01,
        cold=False,
        queries=(1, 6, 13),
        reference_sf=0.1,
    )
    spec = CommandRun("tpch", "tpch", options.params(), {"data0": open_tmp}, {})
    events = Collect()
    with open_store(tmp_path / "r.db") as store:
        with pytest.raises(RunFailed, match="3 of 3 queries failed: Q1: wrong answer"):
            execute(store, spec, lambda o: run_tpch(options, o, events))
        (run,) = store.runs()
        assert run.status.value == "failed"
        results = store.query_results(run.id)
    assert [r.query for r in results] == [1, 6, 13]
    assert all(r.answer_ok is False and r.seconds is not None for r in results)
    assert results[1].error is not None and "wrong answer: row 1 revenue" in results[1].error
    assert list(open_tmp.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--engine", "oracle"],
            "--engine: 'oracle' is not allowed; choose one of: duckdb, postgres, mariadb",
        ),
        (["--sf", "0"], "--sf: '0' is not allowed; give a positive scale factor"),
        (["--sf", "-1"], "--sf: '-1' is not allowed; give a positive scale factor"),
        (["--sf", "big"], "--sf: 'big' is not allowed; give a positive scale factor"),
        (["--sf", "1000000"], "--sf: 1000000.0 is not allowed; its data needs about"),
        (["--queries", "0,23"], "--queries"),
        (["--queries", "3,3"], "--queries: '3,3' is not allowed; name each query once"),
        (["--compression", "maybe"], "--compression: 'maybe' is not allowed; choose one of: on"),
        (["--engine", "postgres", "--compression", "on"], "PostgreSQL cannot compress"),
        (["--engine", "mariadb", "--pg-bin", "/usr"], "--pg-bin goes with --engine postgres"),
        (["--set", "force_compression=uncompressed"], "use --compression on|off"),
        (["--set", "no_such_thing=1"], "--set: 'no_such_thing' is not allowed"),
        (["--set", "threads=many"], "--set threads: 'many' is not allowed; DuckDB refuses it"),
        (["--wal-dir", "."], "DuckDB keeps its WAL beside each database file"),
        (["--timeout", "0"], "--timeout: '0' is not allowed; give more than 0 s"),
    ],
)
def test_bad_input(
    cache: Path, open_tmp: Path, results_db: Path, args: list[str], message: str
) -> None:
    args = [str(open_tmp) if a == "." else a for a in args]
    done = iolab("tpch", "--data-dir", str(open_tmp), "--sf", SF, *args)
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr.replace("\n", " ")
    assert "Traceback" not in done.stderr
    assert list(open_tmp.iterdir()) == []
    assert not results_db.exists() or "tpch" not in iolab("results", "list").stdout


def test_an_extension_that_will_not_load_names_the_package(
    cache: Path, open_tmp: Path, results_db: Path
) -> None:
    done = iolab(
        "tpch",
        "--data-dir",
        str(open_tmp),
        "--sf",
        SF,
        env={"IOLAB_DUCKDB_EXTENSIONS": str(open_tmp)},
    )
    assert done.returncode == 2
    assert "DuckDB's tpch extension for DuckDB 1.4.4 (package duckdb-ext-tpch" in done.stderr
    assert "pip install duckdb-ext-tpch" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.fixture
def tiny_cache(open_tmp: Path) -> Iterator[Path]:
    with small_tmpfs(open_tmp / "cache", "2m") as mnt:
        yield mnt


def test_a_cache_without_room_is_refused_before_generating(
    tiny_cache: Path, open_tmp: Path, results_db: Path
) -> None:
    data = make_dirs(open_tmp, "data")[0]
    done = iolab("tpch", "--data-dir", str(data), "--sf", SF, env={"IOLAB_CACHE": str(tiny_cache)})
    assert done.returncode == 2
    message = done.stderr.replace("\n", " ")
    assert f"--sf: 0.01 is not allowed; its data needs about 75.0 MiB in {tiny_cache}/tpch" in (
        message
    )
    assert "MiB free; choose a smaller scale factor" in message
    assert list(tiny_cache.iterdir()) == []


# A query no engine finishes within a second at SF 0.01 (60175 x 60175 x 25 rows to count),
# then one that takes a millisecond.
ENDLESS = (
    "SELECT count(*) AS n FROM lineitem a, lineitem b, nation c "
    "WHERE a.l_orderkey + b.l_orderkey + c.n_nationkey < 0"
)
QUICK = "SELECT r_name FROM region ORDER BY r_name"


@pytest.mark.parametrize("engine", ["duckdb", pytest.param("mariadb", marks=[requires_mariadb])])
def test_a_query_over_its_timeout_is_stopped_and_the_run_goes_on(
    cache: Path, open_tmp: Path, engine: str
) -> None:
    """The endless query is stopped at the timeout and reported as timed out; the next query
    runs on the same connection, and afterwards the engine still answers."""
    options = TpchOptions(
        engine, Layout((open_tmp,)), scale_factor=0.01, cold=False, timeout=1.0, queries=(1, 2)
    )
    files = tpch_data.ensure(0.01, Collect())
    outcome = RunOutcome(RunStatus.RUNNING)
    instance = catalog.create(engine, options.layout)
    with running(instance) as placement:
        with pytest.raises(RunFailed, match=r"1 of 2 queries failed: Q1: timed out"):
            load_and_query(
                instance,
                placement,
                options,
                files,
                {1: ENDLESS, 2: QUICK},
                None,
                outcome,
                Collect(),
            )
        stopped, quick = outcome.query_results
        assert (stopped.query, stopped.seconds, stopped.rows) == (1, None, None)
        assert stopped.error == "timed out: stopped after 1 s"
        assert (quick.query, quick.rows, quick.error) == (2, 5, None)
        assert [q["error"] for q in outcome.summary["queries"]] == [stopped.error, None]
        conn = instance.connect()
        try:
            counts = tpch_dialects.dialect(instance, compression=False, loaders=2).row_counts(conn)
        finally:
            conn.close()
        assert counts == tpch_data.expected_rows(files)
    assert list(open_tmp.iterdir()) == []


def test_cached_data_that_differ_from_their_manifest_are_generated_again(
    open_tmp: Path,
) -> None:
    """TPC-H's cache follows TPC-C's rules: an edited nation.csv (its size kept) is named,
    the data set removed with the answers iolab computed beside it, and generated again to
    the manifest's checksum; a data set owned by nobody is refused, not removed."""
    root = open_tmp / "cache"
    files = tpch_data.ensure(0.01, Collect(), root)
    nation = files.path("nation")
    original = nation.read_bytes()
    nation.write_bytes(original.replace(b"a", b"b"))
    (files.directory / tpch_data.ANSWERS_FILE).write_text("{}\n")
    said = Collect()
    again = tpch_data.ensure(0.01, said, root)
    assert said.events[0] == Warning(
        f"the cached TPC-H data at SF 0.01 in {files.directory} are not what iolab generated "
        "(nation.csv differs from its manifest's SHA-256): removed them; generating them again"
    )
    assert again.path("nation").read_bytes() == original
    assert not (again.directory / tpch_data.ANSWERS_FILE).exists()
    if os.geteuid() == 0:
        os.chown(again.directory, 65534, 65534)
        with pytest.raises(UntrustedCache, match=r"sf0\.01 is owned by uid 65534"):
            tpch_data.ensure(0.01, Collect(), root)
        assert again.path("nation").read_bytes() == original
