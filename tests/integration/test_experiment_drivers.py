"""Two `iolab run` of one experiment at once: they share the runs (each claimed in the results
database before it starts) instead of repeating them; a driver killed mid-run leaves its run to be
taken again. Real processes, a real SQLite engine, a real results database."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import interruptible, make_dirs, signal_when

pytestmark = pytest.mark.integration
IOLAB = [sys.executable, "-m", "iolab"]

EXPERIMENT = """
[experiment]
name = "two-drivers"
repetitions = {repetitions}
[workload]
kind = "populate"
engine = "sqlite"
rows = {rows}
connections = 1
[layouts.a]
data_dirs = ["a"]
[isolation]
settle_seconds = 0
drop_caches = false
[matrix]
key = ["sequential", "random"]
"""


def experiment(root: Path, repetitions: int, rows: int) -> Path:
    make_dirs(root, "a")
    path = root / "exp.toml"
    path.write_text(EXPERIMENT.format(repetitions=repetitions, rows=rows))
    return path


def driver(exp: Path, db: Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        interruptible([*IOLAB, "run", str(exp), "--json", "--results", str(db)]),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=None if env is None else {**os.environ, **env},
    )


def spans(db: Path) -> list[tuple[int, str, str]]:
    """(run, started_at, ended_at) of every run that ended."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT id, started_at, ended_at FROM runs WHERE ended_at IS NOT NULL ORDER BY id"
        ).fetchall()
    return [(int(i), str(s), str(e)) for i, s, e in rows]


def overlapping(db: Path) -> list[tuple[int, int]]:
    """Pairs of runs whose [start, end] shared a moment (whole seconds: touching is not)."""
    found = spans(db)
    return [
        (a, b)
        for a, a_start, a_end in found
        for b, b_start, b_end in found
        if a < b and a_start < b_end and b_start < a_end
    ]


def runs(db: Path) -> list[tuple[str, int, str]]:
    """(cell, repetition, status) of every run, in the order they were claimed."""
    try:
        with sqlite3.connect(db) as conn:
            rows = conn.execute(
                "SELECT cell_id, repetition, status FROM runs ORDER BY id"
            ).fetchall()
    except sqlite3.OperationalError:  # the schema is not there yet
        return []
    return [(str(c), int(r), str(s)) for c, r, s in rows]


def assert_each_run_done_once(db: Path, repetitions: int) -> None:
    done = [(c, r) for c, r, s in runs(db) if s == "done"]
    per_cell = Counter(c for c, _ in done)
    assert len(per_cell) == 2
    assert set(per_cell.values()) == {repetitions}, per_cell  # none doubled, none missing
    for cell in per_cell:
        assert sorted(r for c, r in done if c == cell) == sorted(
            set(r for c, r in done if c == cell)
        )  # no repetition number given twice


def test_two_drivers_share_the_runs(open_tmp: Path) -> None:
    db = open_tmp / "r.db"
    exp = experiment(open_tmp, repetitions=4, rows=3000)
    first = driver(exp, db)
    time.sleep(0.3)
    second = driver(exp, db)
    docs = []
    for proc in (first, second):
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        assert "Traceback" not in err
        docs.append(json.loads(out))
    assert_each_run_done_once(db, 4)
    assert [s for _, _, s in runs(db)] == ["done"] * 8  # no run started twice
    assert sum(d["done"] for d in docs) == 8
    assert sum(d["failed"] for d in docs) == 0
    # and they took turns on the host: no run measured beside another
    assert len(spans(db)) == 8
    assert overlapping(db) == []
    assert sum(d["waited_seconds"] for d in docs) > 0  # one waited for the other's run
    with sqlite3.connect(db) as conn:
        (experiments,) = conn.execute(
            "SELECT COUNT(*) FROM experiments WHERE name = 'two-drivers'"
        ).fetchone()
    assert experiments == 1
    assert list((open_tmp / "a").iterdir()) == []


def claims_of(db: Path, pid: int) -> Counter[str]:
    """Statuses of the runs process ``pid`` claimed."""
    try:
        with sqlite3.connect(db) as conn:
            rows = conn.execute("SELECT status FROM runs WHERE pid = ?", (pid,)).fetchall()
    except sqlite3.OperationalError:
        return Counter()
    return Counter(str(s) for (s,) in rows)


def in_second_run(db: Path, pid: int) -> Callable[[], bool]:
    """True once the driver ``pid`` has finished a run and holds the next."""

    def ready() -> bool:
        claims = claims_of(db, pid)
        return claims["done"] >= 1 and claims["running"] == 1

    return ready


def test_a_killed_drivers_run_is_taken_again(open_tmp: Path) -> None:
    """Driver A is killed in the middle of a run while B works: B or the next `iolab run` takes
    A's run again, and each run is done exactly once."""
    db = open_tmp / "r.db"
    exp = experiment(open_tmp, repetitions=3, rows=4000)
    doomed = driver(exp, db)
    time.sleep(0.3)
    other = driver(exp, db)
    signal_when(doomed, in_second_run(db, doomed.pid), signal.SIGKILL, what="a run to kill")
    doomed.wait()
    _, err = other.communicate(timeout=600)
    assert other.returncode == 0, err
    again = subprocess.run(
        [*IOLAB, "run", str(exp), "--json", "--results", str(db)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert again.returncode == 0, again.stderr
    statuses = Counter(s for _, _, s in runs(db))
    assert statuses["aborted"] == 1  # the killed driver's run, taken again
    assert statuses["running"] == 0
    assert_each_run_done_once(db, 3)
    assert json.loads(again.stdout)["kept"] == 6


def test_ctrl_c_then_resume_runs_each_run_once(open_tmp: Path) -> None:
    db = open_tmp / "r.db"
    exp = experiment(open_tmp, repetitions=2, rows=4000)
    proc = driver(exp, db)
    signal_when(proc, in_second_run(db, proc.pid), signal.SIGINT, what="a run to interrupt")
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    statuses = Counter(s for _, _, s in runs(db))
    assert statuses["running"] == 0  # the interrupted run is finished as aborted, or given back
    again = subprocess.run(
        [*IOLAB, "run", str(exp), "--json", "--results", str(db)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert again.returncode == 0, again.stderr
    assert_each_run_done_once(db, 2)
    assert Counter(s for _, _, s in runs(db))["running"] == 0


def in_a_started_run(db: Path, pid: int) -> Callable[[], bool]:
    """True once the driver ``pid`` has finished a run and the next one's body has started
    (its environment recorded), so that Ctrl-C lands inside it."""

    def ready() -> bool:
        if claims_of(db, pid)["done"] < 1:
            return False
        with sqlite3.connect(db) as conn:
            (started,) = conn.execute(
                "SELECT COUNT(*) FROM runs WHERE pid = ? AND status = 'running'"
                " AND env_id IS NOT NULL",
                (pid,),
            ).fetchone()
        return bool(started)

    return ready


def test_an_interrupted_run_is_counted_and_worded_as_aborted(open_tmp: Path) -> None:
    """Issue 47, item 9: Ctrl-C in a run, then `iolab run` again. The interrupted run is stored
    aborted and done again; the table has it under 'aborted' (it said 'failed 1') and the line
    says so (it said '3 runs done, 0 failed')."""
    db = open_tmp / "r.db"
    exp = experiment(open_tmp, repetitions=2, rows=20000)
    proc = subprocess.Popen(
        interruptible([*IOLAB, "run", str(exp), "--results", str(db)]),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    signal_when(proc, in_a_started_run(db, proc.pid), signal.SIGINT, what="a run to interrupt")
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, err
    assert Counter(s for _, _, s in runs(db))["aborted"] == 1
    again = subprocess.run(
        [*IOLAB, "run", str(exp), "--results", str(db)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert again.returncode == 0, again.stderr
    lines = again.stdout.splitlines()
    (header,) = [line for line in lines if "┃ cell" in line]
    assert [w.strip() for w in header.split("┃")[1:5]] == ["cell", "done", "failed", "aborted"]
    rows = sorted([w.strip() for w in line.split("│")[1:5]] for line in lines if "│ key=" in line)
    assert [row[:3] for row in rows] == [["key=random", "2", "0"], ["key=sequential", "2", "0"]]
    assert sorted(row[3] for row in rows) == ["0", "1"]  # the interrupted cell's aborted run
    said = "3 runs done, 0 failed, 1 kept from before; 1 run aborted earlier (interrupted, not "
    assert said + "failed)" in again.stdout, again.stdout
    assert_each_run_done_once(db, 2)


def test_runs_that_overlapped_are_flagged_in_the_report(open_tmp: Path) -> None:
    """Two drivers that do not share the host's lock (as an iolab from before it would not):
    their runs overlap, and `iolab report` says which, on which host."""
    db = open_tmp / "r.db"
    exp = experiment(open_tmp, repetitions=2, rows=4000)
    procs = [driver(exp, db, {"IOLAB_LOCK_DIR": str(open_tmp / name)}) for name in ("l1", "l2")]
    for proc in procs:
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
    assert_each_run_done_once(db, 2)
    pairs = overlapping(db)
    assert pairs, spans(db)  # they ran at the same time
    done = subprocess.run(
        [*IOLAB, "report", str(exp), "--json", "--results", str(db)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    host = os.uname().nodename
    flagged = {(o["run"], o["other_run"]) for o in doc["overlaps"]}
    assert flagged == {(a, b) for a, b in pairs} | {(b, a) for a, b in pairs}
    assert {o["host"] for o in doc["overlaps"]} == {host}
    (said,) = [w for w in doc["warnings"] if "ran while another run ran" in w]
    a, b = pairs[0]
    assert f"run {a} (" in said and f"with run {b} on {host}" in said
    text = subprocess.run(
        [*IOLAB, "report", str(exp), "--results", str(db)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert "measured the other too" in " ".join(text.stdout.split())
