"""The server iolab started dies in the middle of `iolab populate` or `iolab tpch` (SIGKILL).

The run is recorded failed with the reason and the end of the server log, iolab exits 1 with
that one line (no traceback), and nothing is left: no server process, nothing in the data dir.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from iolab.engines.postgres import _listed_segments, _shared_segments
from tests.conftest import make_dirs, requires_mariadb
from tests.integration.test_populate_cli import IOLAB, iolab

pytestmark = pytest.mark.integration


def _stat_fields(pid: int) -> list[str]:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return []
    return stat[stat.rfind(")") + 2 :].split()


def _pids() -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]


def _child_named(parent: int, name: str) -> int | None:
    for pid in _pids():
        fields = _stat_fields(pid)
        if len(fields) > 1 and fields[1] == str(parent):
            try:
                comm = Path(f"/proc/{pid}/comm").read_text().strip()
            except OSError:
                continue
            if comm == name:
                return pid
    return None


def _left_of(session: int, under: Path) -> list[str]:
    """Live processes of the server's session, or working in (or naming) ``under``."""
    found = []
    for pid in _pids():
        fields = _stat_fields(pid)
        if not fields or fields[0] in ("Z", "X"):
            continue
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            cwd, cmdline = "", ""
        if fields[3] == str(session) or cwd.startswith(str(under)) or str(under) in cmdline:
            found.append(f"{pid} {cmdline}")
    return found


POPULATE = ["populate", "--rows", "400000", "--connections", "4"]


def kill_server_mid_load(
    engine: str,
    server: str,
    open_tmp: Path,
    results: Path,
    command: list[str] = POPULATE,
    phase: str = "loader connections",
    what: str = "the load",
) -> None:
    (data,) = make_dirs(open_tmp, "data")
    err_file = open_tmp / "stderr.txt"
    with err_file.open("w") as err:
        proc = subprocess.Popen(
            [
                *IOLAB,
                *command,
                "--engine",
                engine,
                "--data-dir",
                str(data),
                "--results",
                str(results),
            ],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
        deadline = time.monotonic() + 120
        while phase not in err_file.read_text() and time.monotonic() < deadline:
            assert proc.poll() is None, err_file.read_text()
            time.sleep(0.05)
        if command is POPULATE:
            time.sleep(2)  # into the load
        victim = _child_named(proc.pid, server)
        assert victim is not None, f"no {server} child of iolab"
        mapped = _shared_segments(victim) if engine == "postgres" else []
        segments = mapped + [s for m in mapped for s in _listed_segments(m)]
        assert len(segments) >= 2 or engine != "postgres"  # control segment, statistics
        os.kill(victim, signal.SIGKILL)
        proc.communicate(timeout=120)
    stderr = err_file.read_text()
    name = {"postgres": "PostgreSQL", "mariadb": "MariaDB"}[engine]
    reason = f"the {name} server stopped during {what} (signal 9); its log: "
    assert proc.returncode == 1, stderr
    assert "Traceback" not in stderr
    last = stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: {reason}"), stderr
    assert len(last) > len(f"error: {reason}") + 10  # the log's tail is there
    (run,) = json.loads(iolab("results", "list", "--json", "--results", str(results)).stdout)
    assert run["status"] == "failed"
    assert run["error"].startswith(reason)
    assert "internal error" not in run["error"]
    time.sleep(0.5)
    assert _left_of(victim, data) == []
    assert list(data.iterdir()) == []
    assert [p for p in segments if p.exists()] == []  # its shared memory in /dev/shm too


def test_postgres_killed_during_the_load(open_tmp: Path, tmp_path: Path) -> None:
    kill_server_mid_load("postgres", "postgres", open_tmp, tmp_path / "results.db")


@requires_mariadb
def test_mariadb_killed_during_the_load(open_tmp: Path, tmp_path: Path) -> None:
    kill_server_mid_load("mariadb", "mariadbd", open_tmp, tmp_path / "results.db")


def test_postgres_killed_during_tpch(open_tmp: Path, tmp_path: Path, cache: Path) -> None:
    """The same one line when the server dies under the TPC-H load or its queries."""
    command = ["tpch", "--sf", "0.01"]
    kill_server_mid_load(
        "postgres", "postgres", open_tmp, tmp_path / "r.db", command, "loading", "the TPC-H run"
    )
