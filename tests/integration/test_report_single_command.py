"""`iolab report` of single commands, and the output paths and numbers the reading commands take
(issue 14, item 7): the report works, every bad path or number is one line and exit 2."""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

import pytest

from tests.conftest import make_dirs
from tests.integration.test_populate_cli import iolab

pytestmark = pytest.mark.integration
QUICK_DISK = ["--profile", "real", "--size", "16MiB", "--runs", "1", "--duration", "1"]


@pytest.fixture(scope="module")
def populated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A results database holding one `iolab populate` (SQLite) run, for the whole module."""
    db = tmp_path_factory.mktemp("populated") / "results.db"
    done = iolab("populate", "--rows", "2000", "--connections", "2", "--results", str(db))
    assert done.returncode == 0, done.stderr
    return db


def test_report_of_a_populate_command(populated: Path, tmp_path: Path) -> None:
    r = ["--results", str(populated)]
    done = iolab("report", "populate sqlite", *r)
    assert done.returncode == 0, done.stderr
    assert "populate sqlite · elapsed_seconds (lower is better)" in done.stdout
    assert "one run only" in done.stdout
    doc = json.loads(iolab("report", "populate sqlite", "--json", *r).stdout)
    (cell,) = doc["cells"]
    (run,) = json.loads(iolab("results", "list", "--json", *r).stdout)
    assert cell["n"] == 1
    assert cell["runs"] == [pytest.approx(run["summary"]["elapsed_seconds"])]
    html = tmp_path / "report.html"
    done = iolab("report", "populate sqlite", "--html", str(html), *r)
    assert done.returncode == 0, done.stderr
    assert "<html" in html.read_text()
    assert stat.S_IMODE(html.stat().st_mode) == 0o600


def test_single_commands_are_named_by_what_ran_and_found_by_id(
    open_tmp: Path, results_db: Path
) -> None:
    """Issue 47, items 4 and 9: two plain SQLite loads share 'populate sqlite', which `report`
    refuses with both listed (it took the newest); one on a data directory is named by it; the
    ids answer wherever a name does; `results log` of a SQLite run says it has no server log."""
    (data,) = make_dirs(open_tmp, "data")
    small = ["--rows", "300", "--connections", "1", "--no-probes"]
    for extra in ([], [], ["--data-dir", str(data), "--files", "2"]):
        done = iolab("populate", *small, *extra)
        assert done.returncode == 0, done.stderr
    listed = json.loads(iolab("results", "list", "--json").stdout)
    names = [(r["experiment_id"], r["experiment"]) for r in sorted(listed, key=lambda r: r["id"])]
    assert names == [
        (1, "populate sqlite"),
        (2, "populate sqlite"),
        (3, f"populate sqlite data={data} files=2"),
    ]
    shared = iolab("report", "populate sqlite")
    assert shared.returncode == 2 and shared.stdout == ""
    (line,) = shared.stderr.splitlines()
    assert line.startswith(
        "error: EXPERIMENT: 'populate sqlite' is not allowed; it names 2 experiments in "
        f"{results_db}; give one's id: 1 'populate sqlite' of "
    )
    assert "; 2 'populate sqlite' of " in line
    by_id = iolab("report", "2")
    assert by_id.returncode == 0, by_id.stderr
    assert by_id.stdout.startswith("populate sqlite · elapsed_seconds (lower is better)")
    named = iolab("report", f"populate sqlite data={data} files=2")
    assert named.stdout.startswith(f"populate sqlite data={data} files=2 · elapsed_seconds")
    compared = iolab("compare", "1:", "3:")
    assert compared.returncode == 0, compared.stderr
    assert compared.stdout.startswith("elapsed_seconds (lower is better): 1 ")
    log = iolab("results", "log", "1")  # the README's example, on a SQLite run
    assert (log.returncode, log.stdout) == (1, "")
    assert log.stderr == (
        "error: run 1 (populate sqlite) kept no log: SQLite runs inside iolab's own process, so "
        "there is no server log; `iolab results show 1` shows what the run recorded\n"
    )


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")
def test_report_of_a_disk_command(tmp_path: Path, results_db: Path) -> None:
    target = tmp_path / "disk"
    target.mkdir()
    done = iolab("disk", str(target), *QUICK_DISK, "--interval", "0", "--no-probes")
    assert done.returncode == 0, done.stderr
    name = f"disk {target.resolve()}"
    done = iolab("report", name, "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["metric"] == "tests.SEQ1M Q1T1 read.mbps"
    assert doc["cells"][0]["n"] == 1
    assert doc["cells"][0]["runs"][0] > 0
    export = tmp_path / "runs.csv"
    done = iolab("export", name, "-o", str(export))
    assert done.returncode == 0, done.stderr
    assert export.read_text().startswith("run,cell,status")


BIG = "99999999999999999999"


@pytest.mark.parametrize(
    ("args", "shown", "allowed"),
    [
        (
            ["report", "populate sqlite", "--html", "/proc/x.html"],
            "--html: '/proc/x.html'",
            "name a file you can write",
        ),
        (
            ["report", "populate sqlite", "--html", "/var/tmp"],
            "--html: '/var/tmp'",
            "not a directory",
        ),
        (
            ["report", "populate sqlite", "--html", "/nonexistent/r.html"],
            "--html: '/nonexistent/r.html'",
            "in an existing directory",
        ),
        (["report", "populate sqlite", "--with-disk", BIG], f"--with-disk: {BIG}", "from 1 to"),
        (
            ["export", "populate sqlite", "-o", "/proc/x.csv"],
            "--output: '/proc/x.csv'",
            "name a file you can write",
        ),
        (
            ["export", "populate sqlite", "--format", "json", "-o", "/proc/x.json"],
            "--output: '/proc/x.json'",
            "name a file you can write",
        ),
        (
            ["export", "populate sqlite", "--format", "parquet", "-o", "/var/tmp"],
            "--output: '/var/tmp'",
            "not a directory",
        ),
        (
            ["export", "populate sqlite", "--format", "parquet", "-o", "/proc/x.parquet"],
            "--output: '/proc/x.parquet'",
            "name a file you can write",
        ),
        (
            ["timeline", "1", "-o", "/proc/x.html"],
            "--output: '/proc/x.html'",
            "name a file you can write",
        ),
        (["timeline", "1", "-o", "/var/tmp"], "--output: '/var/tmp'", "name a .html"),
        (["timeline", BIG, "-o", "t.html"], f"RUN: {BIG}", "from 1 to"),
        (["compare", "1-99999999999", "2"], "A: '1-99999999999'", "give run ids from 1 to 1"),
        (["compare", "1", "5-3"], "B: '5-3'", "give run ids from 1 to 1"),
        (["results", "show", BIG], f"RUN: {BIG}", "from 1 to 9223372036854775807"),
        (["results", "show", "0"], "RUN: 0", "from 1 to"),
        (["results", "log", BIG], f"RUN: {BIG}", "from 1 to"),
    ],
)
def test_bad_paths_and_numbers(populated: Path, args: list[str], shown: str, allowed: str) -> None:
    done = iolab(*args, "--results", str(populated))
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert done.stderr.startswith(f"error: {shown} is not allowed; ")
    assert allowed in done.stderr
    assert not Path("/proc/x.html").exists()
