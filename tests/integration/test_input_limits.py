"""Issue 14, item 12 (parts): limits fio accepts, empty query lists, demo options checked before
anything runs, Ctrl-C reaching fio while iolab ignores SIGINT, messages shown in full."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.integration.test_populate_cli import IOLAB, iolab

pytestmark = pytest.mark.integration
needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")


def refused(done: subprocess.CompletedProcess[str], prefix: str, allowed: str) -> None:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert done.stderr.startswith(f"error: {prefix} is not allowed; "), done.stderr
    assert allowed in done.stderr


def nothing_recorded(results: Path) -> None:
    assert not results.exists() or json.loads(iolab("results", "list", "--json").stdout) == []


@needs_fio
@pytest.mark.parametrize(
    ("args", "prefix", "allowed"),
    [
        (["--threads", "100000"], "--threads: '100000'", "from 1 to 256"),
        (["--qd", "1000000"], "--qd: '1000000'", "from 1 to 1024"),
        (
            ["--qd", "1,8,1024", "--threads", "1,128"],
            "--threads: '1,128'",
            "queue depth x threads is 1024 x 128; keep queue depth x threads within",
        ),
        (["--qd", ""], "--qd: ''", "whole numbers"),
        (["--threads", "0"], "--threads: '0'", "whole numbers >= 1"),
    ],
)
def test_disk_parallelism_within_what_fio_runs(
    tmp_path: Path, results_db: Path, args: list[str], prefix: str, allowed: str
) -> None:
    done = iolab("disk", str(tmp_path), "--profile", "sweep", *args)
    refused(done, prefix, allowed)
    nothing_recorded(results_db)
    assert list(tmp_path.iterdir()) == []


def test_tpch_empty_query_list_is_refused(results_db: Path) -> None:
    done = iolab("tpch", "--queries", "")
    refused(done, "--queries: ''", "comma-separated list of whole numbers")
    nothing_recorded(results_db)


@pytest.mark.parametrize(
    ("args", "prefix", "allowed"),
    [
        (["--rows", "0"], "--rows: 0", "at least 8 rows"),
        (["--rows", "7"], "--rows: 7", "at least 8 rows"),
        (["--html", "/var/tmp"], "--html: '/var/tmp'", "not a directory"),
        (["--html", "/proc/demo.html"], "--html: '/proc/demo.html'", "name a file you can write"),
    ],
)
def test_demo_options_checked_before_anything_runs(
    tmp_path: Path, results_db: Path, args: list[str], prefix: str, allowed: str
) -> None:
    started = time.monotonic()
    done = iolab("demo", *args, cwd=tmp_path)
    assert time.monotonic() - started < 20, "the disk profile ran before the check"
    refused(done, prefix, allowed)
    nothing_recorded(results_db)
    assert list(tmp_path.iterdir()) == []


def test_markup_in_a_message_is_shown_as_written(tmp_path: Path, results_db: Path) -> None:
    (tmp_path / "data").mkdir()
    file = tmp_path / "exp.toml"
    file.write_text(
        '[experiment]\nname = "m"\n[workload]\nkind = "populate"\nrows = 100\n'
        '[layouts.a]\ndata_dirs = ["device:nosuch"]\n[matrix]\nlayout = ["a"]\n'
    )
    done = iolab("plan", str(file))
    assert done.returncode == 2, done.stderr
    assert "name a device of the [devices] section (there is none)" in done.stderr


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if stat[stat.rfind(")") + 2 :].split()[1] == str(pid):
                found.append(int(entry.name))
    return found


def _fio_measuring(pid: int) -> int | None:
    """The fio child of ``pid`` running a timed pass (not laying out the test file)."""
    for child in _children(pid):
        try:
            argv = (Path("/proc") / str(child) / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"fio") and any(a.startswith(b"--runtime") for a in argv):
            return child
    return None


@needs_fio
def test_ctrl_c_to_fio_while_iolab_ignores_sigint_aborts_the_run(
    tmp_path: Path, results_db: Path
) -> None:
    """A script's background job ignores SIGINT; Ctrl-C reaches fio alone: the run is
    aborted (not "fio failed"), the test file removed, the passes so far kept."""
    target = tmp_path / "disk"
    target.mkdir()
    argv = [*IOLAB, "disk", str(target), "--profile", "real", "--size", "16MiB"]
    argv += ["--runs", "5", "--duration", "2", "--interval", "0"]
    proc = subprocess.Popen(  # as a script's background job: SIGINT ignored, then exec
        ["sh", "-c", 'trap "" INT; exec "$@"', "sh", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "IOLAB_RESULTS": str(results_db)},
    )
    deadline = time.monotonic() + 60
    fio = None
    while fio is None and time.monotonic() < deadline and proc.poll() is None:
        fio = _fio_measuring(proc.pid)
        time.sleep(0.1)
    assert fio is not None, "no timed fio pass started"
    time.sleep(4)  # a pass or two measured
    fio = _fio_measuring(proc.pid)
    assert fio is not None
    os.kill(fio, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert "fio failed" not in err
    (run,) = json.loads(iolab("results", "list", "--json").stdout)
    assert run["status"] == "aborted"
    assert run["error"] == "interrupted"
    shown = json.loads(iolab("results", "show", str(run["id"]), "--json").stdout)
    assert shown["disk"]["passes"], "passes measured before the signal are kept"
    assert list(target.iterdir()) == []
