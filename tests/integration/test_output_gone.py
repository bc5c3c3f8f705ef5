"""Commands whose output nobody reads any more (``iolab ... | head -1`` once head has its line)
finish their work and record it: a broken pipe drops what they say, not what they do.

Each case runs iolab with stdout and stderr on a pipe whose reader is closed before iolab
starts, so every write it makes fails; before the fix the first one stopped the command (exit 1,
the run left "running", or a teardown half done: ``test_testbed.py`` holds ``testbed down`` to
it on real loop devices).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import iolab_streams

pytestmark = pytest.mark.integration
IOLAB = [sys.executable, "-m", "iolab"]
EXPERIMENT = """
[experiment]
name = "unread"
repetitions = 2
[workload]
kind = "populate"
engine = "sqlite"
rows = 200
connections = 2
[layouts.one]
data_dirs = ["{data}"]
[isolation]
settle_seconds = 0
drop_caches = false
"""


def iolab_unread(*args: str) -> int:
    """Run ``iolab ARGS`` with both streams on a pipe that has no reader; its exit code."""
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.Popen([*IOLAB, *args], stdout=write, stderr=write)
    finally:
        os.close(write)
    return proc.wait(timeout=600)


def runs(db: Path) -> list[tuple[str, str, str | None]]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        rows = conn.execute(
            "SELECT c.workload, r.status, r.error FROM runs r "
            "JOIN cells c ON c.experiment_id = r.experiment_id AND c.id = r.cell_id ORDER BY r.id"
        ).fetchall()
    return [(str(w), str(s), e) for w, s, e in rows]


def test_populate_records_its_run(tmp_path: Path, results_db: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    code = iolab_unread("populate", "--rows", "200", "--connections", "2", "--data-dir", str(data))
    assert code == 0
    assert runs(results_db) == [("populate", "done", None)]
    assert [p.name for p in data.iterdir()] == []  # its database removed, as always


def test_an_experiment_records_every_run(tmp_path: Path, results_db: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    exp = tmp_path / "exp.toml"
    exp.write_text(EXPERIMENT.format(data=data))
    assert iolab_unread("run", str(exp), "--json") == 0
    assert runs(results_db) == [("populate", "done", None)] * 2


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")
def test_disk_records_its_run(tmp_path: Path, results_db: Path) -> None:
    quick = ["--size", "16MiB", "--runs", "1", "--duration", "1", "--interval", "0"]
    code = iolab_unread("disk", str(tmp_path), "--profile", "real", *quick, "--json")
    assert code == 0
    assert runs(results_db) == [("disk", "done", None)]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".iolab-")] == []


# --- issue 43: a standard stream closed (`>&-`) or failing (`>/dev/full`) ----------------------

FULL = "warning: standard output: No space left on device; what iolab writes there is dropped"


def test_every_command_runs_without_its_streams(tmp_path: Path, results_db: Path) -> None:
    """Closed, every command crashed at import ('NoneType' object has no attribute 'isatty',
    exit 120); on /dev/full it ended in an OSError traceback (exit 1), also from the last flush
    of a short output at the interpreter's exit. Now the output is dropped and the exit code is
    the command's own."""
    data = tmp_path / "data"
    data.mkdir()
    load = ["populate", "--rows", "200", "--connections", "2", "--data-dir", str(data)]
    for stdout, stderr in (
        ("closed", "pipe"),
        ("pipe", "closed"),
        ("full", "pipe"),
        ("pipe", "full"),
        ("closed", "closed"),
    ):
        case = (stdout, stderr)
        code, out, said = iolab_streams(*load, "--json", stdout=stdout, stderr=stderr)
        assert code == 0, (case, said)
        assert (json.loads(out)["status"] if out else None) == (
            "done" if stdout == "pipe" else None
        ), case
        lines = said.splitlines()  # the steps, and the one line on the failing stdout
        assert "Traceback" not in said
        full = case == ("full", "pipe")
        assert (FULL in lines, lines[-1:] == [FULL], "opening 2 loader connections…" in lines) == (
            full,
            full,
            stderr == "pipe",
        ), case
        assert iolab_streams("--version", stdout=stdout, stderr=stderr) == (
            0,
            "iolab 0.1.0\n" if stdout == "pipe" else "",
            FULL + "\n" if case == ("full", "pipe") else "",
        ), case
        code, out, said = iolab_streams(stdout=stdout, stderr=stderr)  # usage: exit 2
        assert (code, out.startswith("Usage: "), "Traceback" in said) == (
            2,
            stdout == "pipe",
            False,
        ), case
        code, out, said = iolab_streams("results", "list", "--bad", stdout=stdout, stderr=stderr)
        bad = "error: iolab results list: '--bad' is not allowed; no such option"
        assert (code, out, said.startswith(bad)) == (2, "", stderr == "pipe"), case
    assert [s for _, s, _ in runs(results_db)] == ["done"] * 5
    assert [p.name for p in data.iterdir()] == []
