"""Words that say what happened (issue 47, item 9): `iolab results log` of a run that kept no log
says so and why, naming the run, not an option never typed; an aborted run (interrupted) is
counted and worded as aborted, not failed; one disk pass has no spread. The CLI in-process
(tests/unit/cli.py) on runs recorded as the commands record them, and the tables as rendered."""

from __future__ import annotations

import io
from collections import Counter
from pathlib import Path

from rich.console import Console, RenderableType

from iolab.analysis.disk import summarize as disk_summarize
from iolab.analysis.stats import summarize
from iolab.cli.experiment import runs_line
from iolab.config.experiment import Cell
from iolab.report.disk import details
from iolab.report.experiment import cells_table
from iolab.report.html import disk_section
from iolab.results import CellId, ExperimentId, RunOutcome
from iolab.runner.experiment import Outcome
from iolab.runner.single import CommandRun, execute
from iolab.store import open_store
from tests.unit.cli import iolab
from tests.unit.test_report_build import _pass as disk_pass

TEST = "SEQ1M Q1T1 read"


def _text(table: RenderableType) -> str:
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(table)
    return console.export_text()


def _recorded(db: Path, name: str, engine: str, logs: dict[str, str], dsn: str = "") -> None:
    def body(outcome: RunOutcome) -> None:
        outcome.summary.update({"elapsed_seconds": 1.0, "rows": 100, "rows_per_second": 100.0})
        outcome.logs.update(logs)

    params = {"kind": "populate", "engine": engine, "rows": 100, "dsn": dsn or None}
    with open_store(db) as store:
        execute(store, CommandRun(name, "populate", params, {}, {}), body)


def test_results_log_says_what_each_run_kept(tmp_path: Path) -> None:
    db = tmp_path / "results.db"
    _recorded(db, "populate sqlite", "sqlite", {})
    _recorded(db, "pgbench postgres", "postgres", {"pgbench": "tps = 5\n", "pgbench init": "ok"})
    _recorded(db, "populate postgres", "postgres", {"server": "ready to accept connections\n"})
    _recorded(db, "populate postgres server=u@h db=x", "postgres", {}, "postgresql://u@h/x")
    r = ["--results", str(db)]

    sqlite = iolab("results", "log", "1", *r)  # the README's example, on a SQLite run
    assert (sqlite.code, sqlite.stdout) == (1, "")
    assert sqlite.error_lines == [
        "error: run 1 (populate sqlite) kept no log: SQLite runs inside iolab's own process, so "
        "there is no server log; `iolab results show 1` shows what the run recorded"
    ]
    several = iolab("results", "log", "2", *r)
    assert several.error_lines == [
        "error: --name: missing; run 2 kept 2 logs: pgbench, pgbench init; name one"
    ]
    assert iolab("results", "log", "2", "--name", "pgbench init", *r).stdout == "ok\n"
    wrong = iolab("results", "log", "2", "--name", "server", *r)
    assert wrong.error_lines == [
        "error: --name: 'server' is not allowed; run 2 kept these logs: pgbench, pgbench init"
    ]
    server = iolab("results", "log", "3", *r)
    assert (server.code, server.stdout) == (0, "ready to accept connections\n")
    theirs = iolab("results", "log", "4", *r)  # a server iolab did not start (--dsn)
    assert theirs.error_lines == [
        "error: run 4 (populate postgres server=u@h db=x) kept no log: its server is yours "
        "(--dsn), and so is the server's log; `iolab results show 4` shows what the run recorded"
    ]


def _cell(label: str) -> Cell:
    return Cell(CellId(label.ljust(12, "0")), "populate", label, {}, {}, "/")


def test_an_aborted_run_is_counted_and_worded_as_aborted() -> None:
    """After Ctrl-C, `iolab run` again: the interrupted run is stored aborted and its repetition
    done again; neither the table nor the line calls it failed."""
    rows = [
        (_cell("key=sequential"), summarize([2.0, 2.1]), Counter(done=2, aborted=1)),
        (_cell("key=random"), summarize([3.0, 3.2]), Counter(done=2)),
    ]
    table = _text(cells_table(rows, "elapsed s", "two-drivers · populate"))
    (header,) = [line for line in table.splitlines() if "┃" in line]
    sequential, random = [line for line in table.splitlines() if "│" in line]
    assert [w.strip() for w in header.split("┃")[1:5]] == ["cell", "done", "failed", "aborted"]
    assert [w.strip() for w in sequential.split("│")[1:5]] == ["key=sequential", "2", "0", "1"]
    assert [w.strip() for w in random.split("│")[1:5]] == ["key=random", "2", "0", "0"]
    outcome = Outcome(ExperimentId(1), planned=3, kept=1, done=3)
    assert runs_line(outcome, rows) == (
        "3 runs done, 0 failed, 1 kept from before; 1 run aborted earlier (interrupted, not failed)"
    )
    stopped = Outcome(ExperimentId(1), planned=3, kept=1, done=2, runs_aborted=1)  # on its host
    assert runs_line(stopped, rows) == "2 runs done, 0 failed, 1 aborted, 1 kept from before"
    clean = [(cell, s, Counter(done=2)) for cell, s, _ in rows]
    assert "aborted" not in _text(cells_table(clean, "elapsed s", "t"))


def test_one_disk_pass_has_no_spread() -> None:
    (one,) = disk_summarize([disk_pass(TEST, "read", 1, 500.0)])  # `iolab disk --runs 1`
    row = next(line for line in _text(details([one])).splitlines() if TEST in line)
    assert row.split("│")[-2].strip() == "1 run: no spread"
    assert "<td>1 run: no spread</td>" in disk_section("disk", [one])
    (two,) = disk_summarize([disk_pass(TEST, "read", 1, 500.0), disk_pass(TEST, "read", 2, 550.0)])
    row = next(line for line in _text(details([two])).splitlines() if TEST in line)
    assert row.split("│")[-2].strip() == "10%"
