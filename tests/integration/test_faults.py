"""Faults on real servers: iolab killed with SIGKILL at each phase of a run, then resumed.

Each kill lands in a different phase of a PostgreSQL populate experiment: while a program iolab
starts (initdb, the server) is still in its launcher, before it is tied to iolab (launching);
while the cluster is being made (provisioning), while loaders insert (loading, probes
sampling), and the moment a run is recorded done (recording it, flushing its probes, starting
the next). After each kill the server must be gone (parent-death signal), and the resumed
experiment must end with every run done exactly once, nothing left running, and nothing of
iolab's left in the layout.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from iolab.system import cgroups
from tests.conftest import interruptible, is_root, make_dirs, signal_when
from tests.integration.test_populate_cli import iolab, servers_of

pytestmark = pytest.mark.integration

EXPERIMENT = """
[experiment]
name = "faults"
repetitions = 2
order = "sequential"
[workload]
kind = "populate"
engine = "postgres"
rows = 6000
[layouts.a]
data_dirs = ["a"]
wal_dir = "wal"
[isolation]
settle_seconds = 0
drop_caches = false
[matrix]
connections = [2, 4]
"""


def runs(db: Path) -> list[tuple[int, str]]:
    """Each run's id and status, in order."""
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            return [
                (int(i), str(s)) for i, s in conn.execute("SELECT id, status FROM runs ORDER BY id")
            ]
    except sqlite3.OperationalError:
        return []


def statuses(db: Path) -> list[str]:
    return [status for _, status in runs(db)]


def owned(directory: Path) -> list[Path]:
    return [p for p in directory.iterdir() if p.name.startswith(".iolab-")]


def kill_when(exp: Path, ready: Callable[[], bool], timeout: float = 240) -> None:
    """Start ``iolab run exp`` and SIGKILL it as soon as ``ready()`` holds."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "iolab", "run", str(exp)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    signal_when(proc, ready, signal.SIGKILL, what="the phase", timeout=timeout)
    proc.wait()


def commands() -> list[str]:
    """The command lines of this machine's processes."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            found.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode())
        except (OSError, UnicodeDecodeError):
            continue
    return found


def no_server_under(root: Path, timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while servers_of(root) and time.monotonic() < deadline:
        time.sleep(0.1)
    return servers_of(root) == []


def test_sigkill_at_each_phase_then_resume_runs_each_run_once(
    open_tmp: Path, results_db: Path
) -> None:
    data, wal = make_dirs(open_tmp, "a", "wal")
    exp = open_tmp / "exp.toml"
    exp.write_text(EXPERIMENT)

    # Each phase waits for a run claimed by the process it is about to kill: a run the previous
    # kill left "running" (reaped only once the next process gets to it), or the previous run's
    # leftovers in the layout, must not make the kill land before that process claims its own.
    last_id = 0
    left_over: set[Path] = set()

    def claimed() -> bool:
        return any(i > last_id and status == "running" for i, status in runs(results_db))

    def launching() -> bool:  # a program started by iolab, not yet tied to it by its launcher,
        # for a claimed run (the plan's checks before the claim launch the engine's binary too)
        return claimed() and any(
            "launch.py" in args and str(open_tmp) in args for args in commands()
        )

    def provisioning() -> bool:
        return claimed() and bool(set(owned(data)) - left_over) and not servers_of(open_tmp)

    def loading() -> bool:
        return claimed() and bool(servers_of(open_tmp))

    def recorded() -> bool:
        return any(i > last_id and status == "done" for i, status in runs(results_db))

    for phase in (launching, provisioning, loading, recorded):
        last_id = max((i for i, _ in runs(results_db)), default=0)
        left_over = set(owned(data))
        kill_when(exp, phase)
        assert no_server_under(open_tmp), f"a server outlived iolab killed while {phase.__name__}"
        assert "running" in statuses(results_db) or phase is recorded

    finished = iolab("run", str(exp), "--json")
    assert finished.returncode == 0, finished.stderr
    doc = json.loads(finished.stdout)
    for cell in doc["cells"]:
        assert cell["runs"].get("done") == 2, cell  # exactly the repetitions, none twice
    final = statuses(results_db)
    assert final.count("done") == 4
    assert "running" not in final
    assert final.count("aborted") >= 3  # the runs killed while launching, provisioning, loading
    assert no_server_under(open_tmp)
    assert owned(data) == [] and owned(wal) == []  # the killed runs' leftovers were reaped
    assert [p.name for p in data.iterdir()] == []


def test_ctrl_c_while_initdb_runs_leaves_nothing(open_tmp: Path, results_db: Path) -> None:
    """Ctrl-C while the cluster is being made: initdb and the postgres processes it started end
    with it, the run is aborted (exit 130) and nothing is left in the layout."""
    data, wal = make_dirs(open_tmp, "a", "wal")
    proc = subprocess.Popen(
        interruptible([*[sys.executable, "-m", "iolab"], "populate", "--engine", "postgres",
                       "--data-dir", str(data), "--wal-dir", str(wal), "--rows", "2000"]),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip

    def initdb_writes() -> bool:
        return bool(list(wal.glob(".iolab-pgwal-*/*")))

    signal_when(proc, initdb_writes, signal.SIGINT, what="initdb", timeout=120)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert no_server_under(open_tmp)
    assert list(data.iterdir()) == [] and list(wal.iterdir()) == []
    assert statuses(results_db) == ["aborted"]


@pytest.mark.skipif(
    not is_root() or cgroups.missing(memory=True, cpus=True) is not None,
    reason="capped runs need root and the memory and cpu cgroup controllers",
)
def test_sigkill_during_a_capped_run_leaves_no_cgroup_after_the_next_command(
    open_tmp: Path, results_db: Path
) -> None:
    """iolab killed while its server runs in the run's cgroup (--memory, --cpus): the server
    dies with it, the empty group stays until the next command, which removes it."""
    data, other = make_dirs(open_tmp, "data", "other")
    proc = subprocess.Popen(
        [sys.executable, "-m", "iolab", "populate", "--engine", "postgres", "--data-dir",
         str(data), "--memory", "512MiB", "--cpus", "1", "--duration", "60s"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    mine = f".iolab-cgroup-{proc.pid}-"

    def serving_in_its_group() -> bool:
        groups = [p for p in cgroups.left() if p.name.startswith(mine)]
        return bool(servers_of(open_tmp)) and any(cgroups.members(p) for p in groups)

    signal_when(proc, serving_in_its_group, signal.SIGKILL, what="a capped server", timeout=120)
    proc.wait()
    left = [p for p in cgroups.left() if p.name.startswith(mine)]
    assert left, "the killed run's cgroup should be there until the next command"
    done = iolab("populate", "--data-dir", str(other), "--rows", "100", "--connections", "1")
    assert done.returncode == 0, done.stderr
    assert [p for p in cgroups.left() if p.name.startswith(mine)] == []
    assert servers_of(open_tmp) == []
