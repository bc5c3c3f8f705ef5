"""What `iolab plan` and `iolab run` check before any run is recorded (issue 14 items 3, 8, 9,
10): a name keeps its workload kind, engine settings are read by the engine, a populate cell
must fit its directories, and a matrix is counted before it is expanded."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest

from tests.integration.bad_input import assert_refused, iolab

pytestmark = pytest.mark.integration


def populate_file(root: Path, name: str, rows: int = 100, extra: str = "") -> Path:
    path = root / f"{name}-{rows}.toml"
    path.write_text(
        f'[experiment]\nname = "{name}"\nrepetitions = 1\n[workload]\nkind = "populate"\n'
        f'rows = {rows}\nconnections = 2\n[layouts.a]\ndata_dirs = ["data"]\n'
        f"[isolation]\nsettle_seconds = 0\ndrop_caches = false\n{extra}"
    )
    return path


def disk_file(root: Path, name: str) -> Path:
    path = root / f"{name}-disk.toml"
    path.write_text(
        f'[experiment]\nname = "{name}"\nrepetitions = 1\n[workload]\nkind = "disk"\n'
        'size = "16MiB"\nruns = 1\nduration = "1s"\ninterval = 0\n'
        '[layouts.a]\ndata_dirs = ["data"]\n[isolation]\nsettle_seconds = 0\n'
        "drop_caches = false\n"
    )
    return path


def experiments(db: Path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT name, kind, config FROM experiments ORDER BY id").fetchall()
    return [(str(n), str(k), str(c)) for n, k, c in rows]


def runs(db: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT cell_id, status FROM runs ORDER BY id").fetchall()
    return [(str(c), str(s)) for c, s in rows]


@pytest.fixture
def root(open_tmp: Path) -> Path:
    (open_tmp / "data").mkdir(mode=0o755)
    return open_tmp


def test_a_name_keeps_its_workload_kind(root: Path, tmp_path: Path) -> None:
    """Item 10: a disk file named like a populate experiment is refused by plan and run, and the
    populate experiment's config and runs are untouched; new parameters under the same name
    still make new cells beside the old ones."""
    db = tmp_path / "results.db"
    first = iolab("run", str(populate_file(root, "shared")), cwd=root, results=db)
    assert first.returncode == 0, first.stderr
    before = experiments(db)
    (old_run,) = runs(db)
    assert old_run[1] == "done"

    for command in ("plan", "run"):
        done = iolab(command, str(disk_file(root, "shared")), cwd=root, results=db)
        assert done.returncode == 2, done.stderr
        (line,) = done.stderr.strip().splitlines()
        assert line.startswith("error: experiment.name: 'shared' is not allowed")
        assert "is a populate experiment" in line and "workload is disk" in line
        assert experiments(db) == before
        assert runs(db) == [old_run]
    report = iolab("report", "shared", "--json", cwd=root, results=db)
    assert report.returncode == 0, report.stderr
    doc = json.loads(report.stdout)
    assert doc["metric"] == "elapsed_seconds"
    assert [c["n"] for c in doc["cells"]] == [1]  # it read "n 0" after a disk file took the name

    # Changing a parameter is still fine: a new cell, the old one keeps its run.
    plan = iolab(
        "plan", str(populate_file(root, "shared", rows=120)), "--json", cwd=root, results=db
    )
    assert plan.returncode == 0, plan.stderr
    doc = json.loads(plan.stdout)
    assert [c["to_run"] for c in doc["cells"]] == [1]
    assert doc["cells"][0]["id"] != old_run[0]


def test_an_experiment_may_not_take_a_single_commands_name(root: Path, tmp_path: Path) -> None:
    db = tmp_path / "results.db"
    single = iolab(
        "populate",
        "--data-dir",
        str(root / "data"),
        "--rows",
        "100",
        "--connections",
        "2",
        "--no-probes",
        cwd=root,
        results=db,
    )
    assert single.returncode == 0, single.stderr
    before = experiments(db)
    ((name, _, _),) = before  # named by what ran: "populate sqlite data=..."
    assert name == f"populate sqlite data={root / 'data'}"
    file = populate_file(root, "single")
    file.write_text(file.read_text().replace('name = "single"', f'name = "{name}"'))
    done = iolab("plan", str(file), cwd=root, results=db)
    assert done.returncode == 2, done.stderr
    assert f"experiment.name: '{name}'" in done.stderr
    assert "runs of single iolab commands" in done.stderr
    assert experiments(db) == before


def test_plan_and_run_refuse_a_bad_setting_the_same_way(root: Path, tmp_path: Path) -> None:
    """Item 8: before, plan printed the cells and run recorded a failed run per cell."""
    db = tmp_path / "results.db"
    file = populate_file(root, "pg").with_name("pg.toml")
    file.write_text(
        populate_file(root, "pg")
        .read_text()
        .replace('kind = "populate"', 'kind = "populate"\nengine = "postgres"')
        + '[matrix]\n"settings.shared_buffers" = ["128MB", "banana"]\n'
    )
    lines = []
    for command in ("plan", "run"):
        done = iolab(command, str(file), cwd=root, results=db)
        assert_refused(done, "matrix.settings.shared_buffers: 'banana' is not allowed", db)
        assert 'invalid value for parameter "shared_buffers"' in done.stderr
        lines.append(done.stderr.strip())
    assert lines[0] == lines[1]
    assert list((root / "data").iterdir()) == []


def test_duration_is_written_as_on_the_command_line(root: Path, tmp_path: Path) -> None:
    """Item 8: workload.duration = "1s" is taken, and "0.5s" refused as --duration 0.5s is."""
    db = tmp_path / "results.db"
    file = disk_file(root, "d")
    done = iolab("plan", str(file), "--json", cwd=root, results=db)
    assert done.returncode == 0, done.stderr
    (cell,) = json.loads(done.stdout)["cells"]
    assert cell["params"]["duration"] == 1.0
    file.write_text(file.read_text().replace('duration = "1s"', 'duration = "0.5s"'))
    in_file = iolab("plan", str(file), cwd=root, results=db)
    assert_refused(in_file, "workload.duration: '0.5s' is not allowed; give at least 1 s", db)
    on_line = iolab("disk", str(root / "data"), "--duration", "0.5s", cwd=root, results=db)
    assert_refused(on_line, "--duration", db)


def test_a_populate_cell_that_cannot_fit_is_refused_at_plan(root: Path, tmp_path: Path) -> None:
    """Item 3 in a file: the cell's rows x page against its directory's free space."""
    db = tmp_path / "results.db"
    file = populate_file(root, "big", extra="[matrix]\nrows = [100, 1_000_000_000_000_000]\n")
    for command in ("plan", "run"):
        done = iolab(command, str(file), cwd=root, results=db)
        assert_refused(done, "layouts.a.data_dirs:", db)
        assert "1,000,000,000,000,000 rows of 8.0 KiB each" in done.stderr
        assert "free" in done.stderr


def test_a_huge_matrix_is_counted_not_expanded(root: Path, tmp_path: Path) -> None:
    """Item 9: 10^6 cells are refused at once with the count and how to narrow it (it took
    300 s and 3.6 GB before); 10^4 cells plan."""
    db = tmp_path / "results.db"
    keys = "\n".join(
        f'"settings.cache_size" = [{", ".join(str(-v) for v in range(1, 101))}]' for _ in range(1)
    )
    wide = (
        f"[matrix]\n{keys}\nrows = [{', '.join(str(100 + v) for v in range(100))}]\n"
        f"batch = [{', '.join(str(1 + v) for v in range(100))}]\n"
    )
    file = populate_file(root, "wide", extra=wide)
    started = time.monotonic()
    done = iolab("plan", str(file), cwd=root, results=db)
    assert_refused(done, "matrix: '1,000,000 cells' is not allowed", db)
    assert "1,000,000 runs, more than the 100,000" in done.stderr
    assert "narrow it (matrix." in done.stderr
    assert time.monotonic() - started < 60  # not a timing assertion: it hung for 300 s
    file.write_text(
        file.read_text().replace(f"batch = [{', '.join(str(1 + v) for v in range(100))}]\n", "")
    )
    plan = iolab("plan", str(file), "--json", cwd=root, results=db)
    assert plan.returncode == 0, plan.stderr
    doc = json.loads(plan.stdout)
    assert len(doc["cells"]) == 10_000
    assert doc["runs"] == 10_000
    text = iolab("plan", str(file), cwd=root, results=db)
    assert text.returncode == 0, text.stderr
    assert len(text.stdout.splitlines()) >= 10_002
    assert not db.exists()


def test_tpch_refuses_a_bad_postgres_setting_before_loading(root: Path, tmp_path: Path) -> None:
    db = tmp_path / "results.db"
    done = iolab(
        "tpch",
        "--engine",
        "postgres",
        "--sf",
        "0.01",
        "--data-dir",
        str(root / "data"),
        "--set",
        "shared_buffers=banana",
        cwd=root,
        results=db,
    )
    assert_refused(done, "--set shared_buffers: 'banana' is not allowed", db)
    assert list((root / "data").iterdir()) == []
