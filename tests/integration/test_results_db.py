"""The results database under real processes: commands racing on a new file, files that are not
iolab's, paths that cannot hold a database, a full filesystem, runs of killed processes."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
IOLAB = [sys.executable, "-m", "iolab"]
POPULATE = ["populate", "--rows", "40", "--connections", "1", "--no-probes"]


def iolab(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "IOLAB_RESULTS"}
    return subprocess.run(
        [*IOLAB, *args], capture_output=True, text=True, timeout=600, cwd=cwd, env=env, check=False
    )


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    """The single line of a refused command (exit 2, no traceback)."""
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


# The real CLI entry point, started once the file GO exists: each process has imported iolab
# already, so the commands reach the new database within a few milliseconds of each other
# (started plainly, Python's start-up spreads them over a few hundred and the race hides).
LAUNCH = """
import sys, time
from pathlib import Path
import iolab.cli.main as main
go = Path(sys.argv[1])
while not go.exists():
    time.sleep(0.001)
sys.argv = ["iolab", *sys.argv[2:]]
main.run()
"""


def test_commands_racing_on_a_new_database_all_succeed(tmp_path: Path) -> None:
    """Several commands started at once on a database that does not exist yet: the schema is
    made once, under one exclusive transaction, and every command's run is recorded."""
    launch = tmp_path / "launch.py"
    launch.write_text(LAUNCH)
    rounds, at_once = 6, 6
    for n in range(rounds):
        db, go = tmp_path / f"n{n}.db", tmp_path / f"go{n}"
        procs = [
            subprocess.Popen(
                [sys.executable, str(launch), str(go), *POPULATE, "--results", str(db)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(at_once)
        ]
        time.sleep(3.0)  # every process has imported iolab and waits for GO
        go.touch()
        errors = []
        for p in procs:
            _, err = p.communicate(timeout=300)
            if p.returncode != 0:
                errors.append(err.strip())
        assert errors == [], f"round {n}: {errors}"
        with sqlite3.connect(db) as conn:
            statuses = [s for (s,) in conn.execute("SELECT status FROM runs")]
            versions = [v for (v,) in conn.execute("SELECT version FROM schema_migrations")]
        assert statuses == ["done"] * at_once
        assert versions == sorted(set(versions))  # each migration once


def foreign_db(path: Path) -> Path:
    """Another application's SQLite file (rollback journal, its own tables)."""
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
        conn.execute("INSERT INTO users (name) VALUES ('ada')")
    return path


def test_a_file_that_is_not_iolabs_is_refused_and_left_as_it_is(tmp_path: Path) -> None:
    app = foreign_db(tmp_path / "app.db")
    rails = tmp_path / "rails.db"
    with sqlite3.connect(rails) as conn:  # a schema_migrations table of another tool
        conn.execute("CREATE TABLE schema_migrations (version TEXT PRIMARY KEY)")
        conn.execute("INSERT INTO schema_migrations VALUES ('20240101000000')")
    notes = tmp_path / "notes.txt"
    notes.write_text("hello " * 1000)
    for path in (app, rails, notes):
        before = digest(path)
        for args in (
            ["results", "list"],
            ["results", "show", "1"],
            ["timeline", "1", "-o", str(tmp_path / "t.html")],
            POPULATE,
        ):
            line = one_line_error(iolab(*args, "--results", str(path)))
            assert line.startswith(f"error: --results: '{path}' is not allowed; "), line
            assert "not an iolab results database" in line, line
        assert digest(path) == before  # not a byte changed: no tables added, no WAL
        assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(path.name)) == [
            path.name
        ]
    with sqlite3.connect(app) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        assert [r for (r,) in conn.execute("SELECT name FROM sqlite_master")] == ["users"]
    assert not (tmp_path / "t.html").exists()


def test_an_empty_file_is_refused_for_reading_and_taken_for_writing(tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    empty.touch()
    line = one_line_error(iolab("results", "list", "--results", str(empty)))
    assert f"--results: '{empty}' is not allowed; " in line
    assert "holds no results yet" in line
    assert empty.stat().st_size == 0
    done = iolab(*POPULATE, "--results", str(empty))
    assert done.returncode == 0, done.stderr
    listed = iolab("results", "list", "--json", "--results", str(empty))
    assert listed.returncode == 0, listed.stderr
    assert [r["status"] for r in json.loads(listed.stdout)] == ["done"]


def test_a_path_that_cannot_hold_a_database_is_bad_input(tmp_path: Path) -> None:
    line = one_line_error(iolab(*POPULATE, "--results", "/proc/r.db"))
    assert line.startswith("error: --results: '/proc/r.db' is not allowed; "), line
    assert "cannot create a file in /proc" in line
    directory = tmp_path / "d"
    directory.mkdir()
    line = one_line_error(iolab(*POPULATE, "--results", str(directory)))
    assert "name a file, not a directory" in line
    line = one_line_error(iolab("results", "list", "--results", "/dev/null"))
    assert line.startswith("error: --results: '/dev/null' is not allowed; name a regular file")


@pytest.fixture
def small_fs() -> Iterator[Path]:
    """A small tmpfs of its own."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs to fill needs root")
    where = Path(tempfile.mkdtemp(prefix="iolab-test-full-", dir="/var/tmp"))
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)
        where.rmdir()


def fill(directory: Path) -> None:
    fd = os.open(directory / "filler", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        while os.write(fd, b"\0" * 4096):
            pass
    except OSError:
        pass  # full
    finally:
        os.close(fd)


def test_a_full_filesystem_is_named_as_full(small_fs: Path) -> None:
    kept = small_fs / "kept.db"
    done = iolab(*POPULATE, "--results", str(kept))
    assert done.returncode == 0, done.stderr
    fill(small_fs)
    for db, args in (
        (small_fs / "new.db", POPULATE),
        (kept, POPULATE),
        (kept, ["results", "list"]),
    ):
        line = one_line_error(iolab(*args, "--results", str(db)))
        assert line.startswith(f"error: --results: '{db}' is not allowed; "), line
        assert f"the filesystem of {small_fs} is full" in line, line
        assert "disk I/O error" not in line


def test_a_killed_disk_run_is_listed_as_aborted(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    proc = subprocess.Popen(
        [*IOLAB, "disk", str(tmp_path), "--size", "64MiB", "--results", str(db)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            assert time.monotonic() < deadline, "the disk run never started"
            assert proc.poll() is None, "the disk run ended before it could be killed"
            try:
                with sqlite3.connect(db) as conn:
                    row = conn.execute("SELECT status FROM runs").fetchone()
            except sqlite3.OperationalError:
                row = None
            if row == ("running",):
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    listed = iolab("results", "list", "--json", "--results", str(db))
    assert listed.returncode == 0, listed.stderr
    (run,) = json.loads(listed.stdout)
    assert run["workload"] == "disk"
    assert run["status"] == "aborted"
    assert run["error"] == "interrupted: the iolab process running it is gone"
    shown = iolab("results", "show", "1", "--results", str(db))
    assert "status aborted" in shown.stdout


# --- a database this process can read and not write (issue 43, item 8) ------------------------

# root ignores a file's mode: iolab runs as root without the capabilities that let it, so that
# the modes of the database and its directory bind it as they bind another user
WITHOUT_DAC = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]
needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="needs root and setpriv to run iolab without CAP_DAC_OVERRIDE",
)


def iolab_bound(*args: str) -> subprocess.CompletedProcess[str]:
    """``iolab ARGS`` as root bound by file modes (no CAP_DAC_OVERRIDE)."""
    env = {k: v for k, v in os.environ.items() if k != "IOLAB_RESULTS"}
    return subprocess.run(
        [*WITHOUT_DAC, *IOLAB, *args],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        check=False,
    )


def listed(db: Path, done: subprocess.CompletedProcess[str]) -> list[tuple[int, str]]:
    assert done.returncode == 0, done.stderr
    return [(r["id"], r["status"]) for r in json.loads(done.stdout)]


@needs_root
def test_reading_a_database_it_cannot_write_leaves_nothing_beside_it(tmp_path: Path) -> None:
    """A reading command on a database of mode 444 once left a -wal and -shm of mode 444 that
    it could not remove, and after `chmod 644` the next run failed ("attempt to write a
    readonly database"). It reads the file as it is now, and leaves nothing."""
    db = tmp_path / "r.db"
    made = iolab(*POPULATE, "--results", str(db))
    assert made.returncode == 0, made.stderr
    db.chmod(0o444)
    before = digest(db)
    assert listed(db, iolab_bound("results", "list", "--json", "--results", str(db))) == [
        (1, "done")
    ]
    shown = iolab_bound("results", "show", "1", "--results", str(db))
    assert shown.returncode == 0, shown.stderr
    assert "status done" in shown.stdout
    report = iolab_bound("report", "populate sqlite", "--results", str(db))
    assert report.returncode == 0, report.stderr
    assert "populate sqlite" in report.stdout
    assert (sorted(tmp_path.iterdir()), digest(db)) == ([db], before)  # no -wal, no -shm
    db.chmod(0o644)
    again = iolab_bound(*POPULATE, "--results", str(db))
    assert again.returncode == 0, again.stderr
    assert listed(db, iolab("results", "list", "--json", "--results", str(db))) == [
        (2, "done"),
        (1, "done"),
    ]


@needs_root
def test_a_database_in_a_directory_it_cannot_write_is_read_and_refused_for_recording(
    tmp_path: Path,
) -> None:
    """A writable database in a read-only directory: the reading commands read it (they said
    "it cannot be written (a read-only file or filesystem)": neither true nor needed); a
    recording command is refused naming the directory, before anything runs."""
    directory = tmp_path / "ro"
    directory.mkdir()
    db = directory / "r.db"
    made = iolab(*POPULATE, "--results", str(db))
    assert made.returncode == 0, made.stderr
    directory.chmod(0o555)
    try:
        before = digest(db)
        assert listed(db, iolab_bound("results", "list", "--json", "--results", str(db))) == [
            (1, "done")
        ]
        report = iolab_bound("report", "populate sqlite", "--results", str(db))
        assert report.returncode == 0, report.stderr
        assert "populate sqlite" in report.stdout
        assert one_line_error(iolab_bound(*POPULATE, "--results", str(db))) == (
            f"error: --results: '{db}' is not allowed; its directory {directory} takes no new "
            "files (Permission denied), and SQLite writes the database's -wal and -shm there; "
            "name a results file in a directory you can write"
        )
        assert (sorted(directory.iterdir()), digest(db)) == ([db], before)
    finally:
        directory.chmod(0o755)


@needs_root
def test_a_shm_an_older_iolab_left_unwritable_is_named_before_a_run(tmp_path: Path) -> None:
    """What an older iolab's reading command left (a -shm of mode 444): a recording command
    names it, instead of failing at its first write; a reading command still reads."""
    db = tmp_path / "r.db"
    made = iolab(*POPULATE, "--results", str(db))
    assert made.returncode == 0, made.stderr
    shm = tmp_path / "r.db-shm"
    shm.touch()
    shm.chmod(0o444)
    assert one_line_error(iolab_bound(*POPULATE, "--results", str(db))) == (
        f"error: --results: '{db}' is not allowed; {shm} beside it cannot be written "
        "(Permission denied), as a command that could only read the database once left it: "
        "give it the database's owner and mode, or name another file"
    )
    assert listed(db, iolab_bound("results", "list", "--json", "--results", str(db))) == [
        (1, "done")
    ]


def refused_run(db: Path) -> str:
    """The last line of a populate run whose results the database refused (exit 1)."""
    done = iolab(*POPULATE, "--results", str(db))
    assert done.returncode == 1, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr
    return done.stderr.splitlines()[-1]


def test_a_trigger_that_refuses_a_runs_results_is_one_line_saying_where_the_run_stands(
    tmp_path: Path,
) -> None:
    """A trigger on latency_totals (or on runs) refused the run's results: sqlite3's
    IntegrityError, a traceback, the run aborted. Now one line naming the database and the
    error, and the run recorded as failed with its summary (or, where the database refuses
    even that, left to be marked aborted, as the line says)."""
    db = tmp_path / "r.db"
    made = iolab(*POPULATE, "--results", str(db))
    assert made.returncode == 0, made.stderr
    with sqlite3.connect(db) as conn:
        conn.execute(
            "CREATE TRIGGER no_totals BEFORE INSERT ON latency_totals "
            "BEGIN SELECT RAISE(ABORT, 'no totals here'); END"
        )
    assert refused_run(db) == (
        f"error: cannot write the results database {db}: no totals here "
        "(SQLITE_CONSTRAINT_TRIGGER); run 2 (it ended done) is recorded as failed, with its "
        "summary and this reason, without its series and histograms"
    )
    shown = iolab("results", "show", "2", "--json", "--results", str(db))
    assert shown.returncode == 0, shown.stderr
    run = json.loads(shown.stdout)
    assert (run["status"], run["error"], run["summary"]["rows"]) == (
        "failed",
        "its results could not be stored: no totals here (SQLITE_CONSTRAINT_TRIGGER)",
        40,
    )
    with sqlite3.connect(db) as conn:
        conn.execute("DROP TRIGGER no_totals")
        conn.execute(
            "CREATE TRIGGER runs_stay BEFORE UPDATE OF status ON runs "
            "WHEN NEW.status != 'running' BEGIN SELECT RAISE(ABORT, 'runs stay'); END"
        )
    assert refused_run(db) == (
        f"error: cannot write the results database {db}: runs stay (SQLITE_CONSTRAINT_TRIGGER);"
        " run 3 stays 'running' there without its results, and the next command marks it "
        "aborted"
    )
    with sqlite3.connect(db) as conn:
        conn.execute("DROP TRIGGER runs_stay")
    assert listed(db, iolab("results", "list", "--json", "--results", str(db))) == [
        (3, "aborted"),
        (2, "failed"),
        (1, "done"),
    ]
