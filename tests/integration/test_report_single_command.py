"""`iolab report` of single commands, and the output paths and numbers the reading commands take
(issue 14, item 7): the report works, every bad path or number is one line and exit 2."""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

import pytest

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
