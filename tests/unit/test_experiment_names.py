"""Experiments are easy to name (issue 47, item 4): a generated name holds no ':', a single
command's experiment is named by what ran, an experiment's id is taken wherever its name is, and a
name several experiments share is refused with each of them listed (id, name, when), never the
newest taken in silence. Old names with ':' still compare. Through the store's one resolver and
the real `iolab` entry point, in-process; runs are recorded as the commands record them."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from iolab import report
from iolab.cli.demo import experiment_name
from iolab.engines.external import parse_dsn
from iolab.errors import BadInput
from iolab.report.comparison import compare
from iolab.results import CellId, RunOutcome, RunStatus
from iolab.runner.single import CommandRun, command_name, execute
from iolab.store import Store, open_store
from iolab.store import experiments as store_experiments
from tests.unit.cli import iolab


def test_the_demos_name_holds_no_colon() -> None:
    assert experiment_name(datetime(2026, 11, 27, 13, 40, 19)) == "demo 2026-11-27T13.40.19"


def test_a_single_commands_name_says_what_ran_and_where() -> None:
    layout = {
        "data_dirs": ["/mnt/a", "/mnt/b"],
        "files": 2,
        "wal_dir": "/mnt/wal",
        "temp_dir": None,
        "memory": "1GiB",
        "cpus": "off",
    }
    assert (
        command_name("populate postgres", layout)
        == "populate postgres data=/mnt/a,/mnt/b files=2 wal=/mnt/wal memory=1GiB"
    )
    # iolab's scratch directory (no --data-dir given) is not a layout the user chose
    scratch = {"data_dirs": ["/var/tmp/.iolab-populate-1-x-y"], "files": 1}
    assert command_name("populate sqlite", scratch, dirs_given=False) == "populate sqlite"
    server = parse_dsn("postgresql://app:Secret9Pw@db.example:5433/shop?sslmode=require").words
    assert server == "server=app@db.example port=5433 db=shop"
    named = command_name("tpcc postgres w1 c4", {"data_dirs": []}, server=server)
    assert named == "tpcc postgres w1 c4 server=app@db.example port=5433 db=shop"
    socket = parse_dsn("postgresql://app@/iolab?host=/run/pg&port=5499").words
    assert socket == "server=app@/run/pg port=5499 db=iolab"
    assert command_name("disk /mnt/odd:name", {}) == "disk /mnt/odd.name"  # a path's ':' too


def _command(store: Store, name: str, params: dict[str, Any], logs: dict[str, str]) -> None:
    """One run recorded as a single command records it (its body starts nothing)."""

    def body(outcome: RunOutcome) -> None:
        outcome.summary.update({"elapsed_seconds": 1.5, "rows": 200, "rows_per_second": 133.0})
        outcome.logs.update(logs)

    execute(store, CommandRun(name, "populate", params, {}, {}), body)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """Experiments 1 and 2 both 'populate sqlite' (one run each), 3 'populate sqlite data=/x'."""
    path = tmp_path / "results.db"
    sqlite = {"kind": "populate", "engine": "sqlite", "rows": 200}
    with open_store(path) as store:
        _command(store, "populate sqlite", sqlite, {})
        _command(store, "populate sqlite", {**sqlite, "rows": 300}, {})
        _command(store, "populate sqlite data=/x", sqlite, {})
    return path


def test_a_shared_name_is_refused_with_each_experiment_listed(db: Path) -> None:
    for argv in (
        ["report", "populate sqlite"],
        ["export", "populate sqlite"],
        ["compare", "populate sqlite", "3:"],
    ):
        done = iolab(*argv, "--results", str(db))
        assert (done.code, done.stdout) == (2, ""), done
        (line,) = done.error_lines
        listed = re.escape(
            f"error: EXPERIMENT: 'populate sqlite' is not allowed; it names 2 "
            f"experiments in {db}; give one's id: "
        )
        when = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"
        assert re.fullmatch(
            f"{listed}1 'populate sqlite' of {when}; 2 'populate sqlite' of {when}", line
        ), line


def test_an_experiments_id_is_taken_where_its_name_is(db: Path) -> None:
    r = ["--results", str(db)]
    done = iolab("report", "2", *r)
    assert done.code == 0, done
    assert "populate sqlite · elapsed_seconds (lower is better)" in done.stdout
    unique = iolab("report", "populate sqlite data=/x", *r)
    assert unique.code == 0 and "populate sqlite data=/x · elapsed_seconds" in unique.stdout
    exported = iolab("export", "1", *r)
    assert exported.code == 0 and exported.stdout.splitlines()[1].startswith("1,"), exported
    # a bare number is a run; an experiment by id takes the ':' (its only cell)
    compared = iolab("compare", "1:", "3:", *r)
    assert compared.code == 0, compared
    assert compared.stdout.startswith("elapsed_seconds (lower is better): 1 "), compared.stdout
    missing = iolab("report", "9", *r)
    assert missing.error_lines == [
        f"error: EXPERIMENT: '9' is not allowed; give an experiment file, name or id in {db}: "
        "3 'populate sqlite data=/x'; 2 'populate sqlite'; 1 'populate sqlite'"
    ]


def test_an_old_name_with_colons_still_names_its_cells(store: Store) -> None:
    old = "demo 2026-11-27T13:40:19"  # as the demo named experiments before
    config = {
        "experiment": {"name": old},
        "workload": {"kind": "populate", "rows": 1000},
        "matrix": {"engine": ["sqlite", "postgres"]},
        "matrix_keys": ["engine"],
    }
    exp = store.create_experiment(old, "experiment", config)
    for engine, times in (("sqlite", (10.0, 10.2, 9.9)), ("postgres", (5.0, 5.1, 4.9))):
        cell = CellId(engine.ljust(16, "0"))
        store.ensure_cell(exp, cell, "populate", {"kind": "populate", "engine": engine})
        for i, t in enumerate(times, 1):
            run = store.start_run(exp, cell, i, None)
            summary = {"elapsed_seconds": t, "rows": 1000, "rows_per_second": 1000 / t}
            store.finish_run(run, RunOutcome(RunStatus.DONE, summary))
    c = compare(store, f"{old}:engine=sqlite", f"{exp}:engine=postgres")
    assert (c.a.label, c.b.label) == (f"{old} engine=sqlite", f"{exp} engine=postgres")
    assert c.a.values == (10.0, 10.2, 9.9) and c.b.values == (5.0, 5.1, 4.9)
    assert report.build(store, old).name == old
    assert report.build(store, str(exp)).name == old
    assert store_experiments.resolve(store, old) == exp
    with pytest.raises(BadInput, match=re.escape(f"'{old}:engine=duckdb'")):
        compare(store, f"{old}:engine=duckdb", "1")
