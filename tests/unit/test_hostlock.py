"""The host's lock (iolab/runner/hostlock.py): runs take turns, who holds it is said, and a
run of the runner holds it. Two threads stand for two processes here (flock makes two opens of
one file exclude each other in one process too); tests/integration/test_experiment_drivers.py
has two real drivers. Each test has a lock directory of its own (tests/unit/conftest.py)."""

from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from iolab.config import experiment as config
from iolab.errors import IolabError
from iolab.events import Collect, Event, EventSink, Phase
from iolab.results import RunOutcome
from iolab.runner import experiment as runner
from iolab.runner import hostlock
from iolab.store import Store
from iolab.workloads.interface import Body, Resolve
from iolab.workloads.registry import WORKLOADS
from tests.conftest import is_root
from tests.unit.cli import iolab
from tests.unit.fakes import FakeWorkload, experiment_file

NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
as_nobody = pytest.mark.skipif(
    not is_root() or shutil.which("setpriv") is None or shutil.which("flock") is None,
    reason="a process of the user nobody needs root, setpriv and flock(1)",
)


def flat(text: str) -> str:
    return " ".join(text.split())


def test_a_second_run_waits_for_the_first_and_is_told_who_holds_the_host(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "argv", ["/usr/bin/iolab", "run", "exp.toml"])
    steps: list[str] = []
    told = threading.Event()
    said: list[str] = []

    def second() -> None:
        def events(event: Event) -> None:
            assert isinstance(event, Phase)
            said.append(event.text)
            steps.append("second waits")
            told.set()

        with hostlock.turn(events) as waited:
            steps.append("second runs")
            assert waited > 0

    with hostlock.turn(lambda e: None) as waited:
        assert waited == 0.0
        steps.append("first runs")
        other = threading.Thread(target=second)
        other.start()
        assert told.wait(60), "the second run never said it waits"
        steps.append("first ends")
    other.join(60)
    assert steps == ["first runs", "second waits", "first ends", "second runs"]
    (text,) = said
    assert text.startswith(
        f"waiting for this host: one run at a time, and pid {os.getpid()} (iolab run exp.toml)"
        " since 20"
    )


def test_who_holds_the_host_and_when_it_is_free(monkeypatch: pytest.MonkeyPatch) -> None:
    dsn = "postgresql://bench:s3cret@db1/sales"
    monkeypatch.setattr(sys, "argv", ["iolab", "populate", "--dsn", dsn])
    assert hostlock.holder() is None  # never taken: not even the file is made
    assert not hostlock.lock_path().exists()
    with hostlock.turn(lambda e: None):
        who = hostlock.holder()
        assert who is not None
        assert (who.pid, who.command) == (
            os.getpid(),
            "iolab populate --dsn postgresql://bench@db1/sales",
        )
        assert "s3cret" not in hostlock.lock_path().read_text()
    assert hostlock.holder() is None
    assert hostlock.lock_path().read_text() == ""  # who held it went with the turn
    assert os.stat(hostlock.lock_path().parent).st_mode & 0o777 == 0o700  # the test's own
    assert os.stat(hostlock.lock_path()).st_mode & 0o777 == 0o600


def test_a_thread_that_holds_the_host_takes_it_again_at_once() -> None:
    with hostlock.turn(lambda e: None):
        said = Collect()
        with hostlock.turn(said) as waited:
            assert waited == 0.0
        assert said.events == []
        assert hostlock.holder() is not None  # still held by the outer turn
    assert hostlock.holder() is None


def test_a_lock_directory_others_can_write_is_refused(
    private_host_lock: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = private_host_lock / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setenv(hostlock.DIR_ENV, str(shared))
    with pytest.raises(IolabError) as caught, hostlock.turn(lambda e: None):
        pass
    assert str(caught.value).startswith(
        f"the host's lock directory {shared} is writable by others (mode 0777); "
    )
    assert list(shared.iterdir()) == []


def test_each_run_of_the_runner_holds_the_host(
    fake: FakeWorkload, store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fake workload's body asks who holds the host: this process, each time."""
    seen: list[int | None] = []

    def prepare(
        params: Mapping[str, Any], resolve: Resolve, events: EventSink
    ) -> tuple[Body, dict[str, Path], dict[str, str]]:
        run, roles, versions = fake.prepare(params, resolve, events)

        def held(outcome: RunOutcome) -> None:
            who = hostlock.holder()
            seen.append(None if who is None else who.pid)
            run(outcome)

        return held, roles, versions

    monkeypatch.setitem(WORKLOADS, "populate", dataclasses.replace(fake.kind(), prepare=prepare))
    path = experiment_file(tmp_path, experiment="repetitions = 2")
    outcome = runner.run(config.load(path), store, Collect())
    assert outcome.done == 6
    assert seen == [os.getpid()] * 6
    assert outcome.waited_seconds == 0.0
    assert hostlock.holder() is None


def test_plan_says_whether_the_host_is_free(fake: FakeWorkload, tmp_path: Path) -> None:
    path = experiment_file(tmp_path, experiment="repetitions = 2")
    free = iolab("plan", str(path), "--results", str(tmp_path / "r.db"))
    assert free.code == 0, free
    lock = hostlock.lock_path()
    assert f"this host: free (one run at a time, by the lock {lock})" in " ".join(
        free.stdout.split()
    )
    with hostlock.turn(lambda e: None):
        busy = iolab("plan", str(path), "--results", str(tmp_path / "r.db"))
        doc = json.loads(
            iolab("plan", str(path), "--json", "--results", str(tmp_path / "r.db")).stdout
        )["host_lock"]
    assert busy.code == 0, busy
    assert f"this host is busy: pid {os.getpid()} (iolab " in " ".join(busy.stdout.split())
    assert doc["path"] == str(lock)
    assert doc["held_by"]["pid"] == os.getpid()


@pytest.fixture
def default_lock_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The default lock directory (root's /run/iolab) moved to ``/tmp/X/iolab``, ``/tmp/X``
    open to every user, as /run is: where another user could reach an iolab lock left open."""
    base = Path(tempfile.mkdtemp(prefix="iolab-lock-", dir="/tmp"))
    base.chmod(0o755)
    monkeypatch.setattr(hostlock, "ROOT_DIR", base / "iolab")
    monkeypatch.delenv(hostlock.DIR_ENV)
    try:
        yield base / "iolab"
    finally:
        shutil.rmtree(base)


def made_by_an_older_iolab(directory: Path) -> Path:
    """The lock as iolab made it before issue 43: directory 0755, file 0644."""
    directory.mkdir()
    directory.chmod(0o755)
    lock = directory / hostlock.FILE
    lock.touch()
    lock.chmod(0o644)
    return lock


@as_nobody
def test_another_user_cannot_open_the_lock_that_an_older_iolab_left_open(
    default_lock_dir: Path,
) -> None:
    """nobody once held every run off with a read-only flock on the 0644 file. iolab's first
    use narrows its own directory and file (0700, 0600), after which nobody cannot open it."""
    lock = made_by_an_older_iolab(default_lock_dir)
    assert hostlock.lock_path() == lock
    assert hostlock.holder() is None
    modes = (stat.S_IMODE(os.stat(default_lock_dir).st_mode), stat.S_IMODE(os.stat(lock).st_mode))
    assert modes == (0o700, 0o600)
    tried = subprocess.run(
        [*NOBODY, "flock", "--nonblock", "--shared", str(lock), "true"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (tried.returncode, tried.stderr.strip()) == (
        66,  # flock(1)'s EX_NOINPUT: the file cannot be opened
        f"flock: cannot open lock file {lock}: Permission denied",
    )


@as_nobody
def test_a_lock_directory_or_file_of_another_user_is_refused_in_one_line(
    default_lock_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = experiment_file(tmp_path)
    default_lock_dir.mkdir(mode=0o700)
    lock = default_lock_dir / hostlock.FILE
    lock.touch(mode=0o600)
    os.chown(lock, 65534, 65534)
    done = iolab("plan", str(path), "--results", str(tmp_path / "r.db"))
    assert (done.code, done.error_lines) == (
        2,
        [
            f"error: the host's lock {lock} is owned by uid 65534; iolab keeps its lock where no "
            "one else can reach it: a directory of root's (or yours) of mode 0700 and a file of "
            f"mode 0600: look at it, and remove it if no iolab runs (`fuser -v {lock}`)"
        ],
    )
    assert lock.stat().st_uid == 65534  # left as it was
    lock.unlink()
    os.chown(default_lock_dir, 65534, 65534)
    with pytest.raises(IolabError) as caught, hostlock.turn(lambda e: None):
        pass
    assert str(caught.value).startswith(
        f"the host's lock directory {default_lock_dir} is owned by uid 65534; "
    )
    assert caught.value.exit_code == 2
    assert list(default_lock_dir.iterdir()) == []


def test_a_lock_directory_that_is_a_link_or_open_to_others_is_refused_with_exit_2(
    private_host_lock: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A directory named by IOLAB_LOCK_DIR is the user's: iolab does not change its mode, it
    refuses it (exit 2, bad environment), as it refuses a link."""
    path = experiment_file(tmp_path)
    readable = private_host_lock / "readable"
    readable.mkdir(mode=0o755)
    readable.chmod(0o755)
    link = private_host_lock / "link"
    link.symlink_to(private_host_lock)
    for directory, why in (
        (readable, "can be entered by others (mode 0755), it must be 0700"),
        (link, "is a symbolic link"),
        (private_host_lock / "writable", "is writable by others (mode 0777)"),
    ):
        if directory.name == "writable":
            directory.mkdir()
            directory.chmod(0o777)
        monkeypatch.setenv(hostlock.DIR_ENV, str(directory))
        done = iolab("plan", str(path), "--results", str(tmp_path / "r.db"))
        assert (done.code, done.error_lines) == (
            2,
            [
                f"error: the host's lock directory {directory} {why}; iolab keeps its lock where "
                "no one else can reach it: a directory of root's (or yours) of mode 0700 and a "
                f"file of mode 0600 (`chmod 700 {directory}`), or set IOLAB_LOCK_DIR to a "
                "directory of your own"
            ],
        )
    assert stat.S_IMODE(readable.stat().st_mode) == 0o755  # the user's: left as it was
    assert list(readable.iterdir()) == []


@as_nobody
def test_a_holder_that_is_not_an_iolab_run_is_named_with_a_way_out(
    default_lock_dir: Path, tmp_path: Path
) -> None:
    """nobody took the lock an older iolab left open, before this iolab narrowed it: its fd
    stays. iolab names the process from the kernel's table of locks, not `pid 0 (another iolab
    process) since`, says how to end it, and the run waiting goes on once it is ended."""
    lock = made_by_an_older_iolab(default_lock_dir)
    script = "echo held; exec sleep 600"
    nobody = subprocess.Popen(
        [*NOBODY, "flock", "--exclusive", str(lock), "sh", "-c", script],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert nobody.stdout is not None
        assert nobody.stdout.readline() == "held\n"
        command = f"flock --exclusive {lock} sh -c '{script}'"
        assert hostlock.holder() == hostlock.Holder(nobody.pid, command, "", identified=False)
        path = experiment_file(tmp_path)
        plan = iolab("plan", str(path), "--results", str(tmp_path / "r.db"))
        doc = json.loads(
            iolab("plan", str(path), "--json", "--results", str(tmp_path / "r.db")).stdout
        )
        assert plan.code == 0, plan
        assert (
            f"this host is held: its lock {lock} is held by pid {nobody.pid} ({command}), which "
            "wrote no record of itself in the lock; every run waits until it lets go: if it is "
            f"not an iolab run, end it (`kill {nobody.pid}`) and the runs go on"
        ) in flat(plan.stdout)
        assert doc["host_lock"]["held_by"] == {
            "pid": nobody.pid,
            "command": command,
            "since": "",
            "identified": False,
        }
        said: list[str] = []
        told = threading.Event()
        ran = threading.Event()

        def run() -> None:
            def events(event: Event) -> None:
                assert isinstance(event, Phase)
                said.append(event.text)
                told.set()

            with hostlock.turn(events):
                ran.set()

        waiting = threading.Thread(target=run)
        waiting.start()
        assert told.wait(60), "the run never said it waits"
        assert said == [
            f"waiting for this host: its lock {lock} is held by pid {nobody.pid} ({command}), "
            "which wrote no record of itself in the lock; if it is not an iolab run, end it "
            f"(`kill {nobody.pid}`) and the runs go on"
        ]
        assert not ran.is_set()
        os.killpg(nobody.pid, signal.SIGTERM)  # the way out
        waiting.join(60)
        assert ran.is_set()
    finally:
        if nobody.poll() is None:
            os.killpg(nobody.pid, signal.SIGKILL)
        nobody.wait(60)


def test_a_holder_the_kernel_does_not_name_is_said_to_be_unknown_with_fuser(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the kernel's table of locks (here: its path moved away) a holder that wrote no
    record has no pid: iolab says it cannot identify it, and how to find it."""
    monkeypatch.setattr(hostlock, "LOCKS", tmp_path / "no-locks")
    with hostlock.turn(lambda e: None):
        pass  # the file exists, empty
    lock = hostlock.lock_path()
    fd = os.open(lock, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # held, no record written
        who = hostlock.holder()
        assert who == hostlock.Holder(None, "", "", identified=False)
        path = experiment_file(tmp_path)
        plan = iolab("plan", str(path), "--results", str(tmp_path / "r.db"))
    finally:
        os.close(fd)
    assert (
        f"this host is held: its lock {lock} is held by a process iolab cannot identify (it "
        "wrote no record of itself in the lock); every run waits until it lets go: `fuser -v "
        f"{lock}` names the processes that have it open; end the one that should not hold it"
    ) in flat(plan.stdout)


def test_plan_tells_runs_running_from_runs_waiting_for_the_host(
    fake: FakeWorkload, store: Store, tmp_path: Path
) -> None:
    """Three runs of an experiment taken by live processes: one whose process holds the host's
    lock, one whose process waits for it, one whose process is not at the lock yet. Only the
    first is running (it said "3 of them are running now")."""
    path = experiment_file(tmp_path, experiment='order = "sequential"\nrepetitions = 2')
    experiment = config.load(path)
    exp_id = runner.register(experiment, store)
    runs = []
    for cell in experiment.cells:
        claim = store.claim_run(exp_id, cell.id, 2)
        assert claim is not None
        runs.append(claim[0])
    code = "from iolab.runner import hostlock\nwith hostlock.turn(lambda e: None): pass\n"
    ready = subprocess.Popen(["sleep", "600"])
    with hostlock.turn(lambda e: None):
        waiter = subprocess.Popen([sys.executable, "-c", code])
        try:
            deadline = time.monotonic() + 60
            while (
                waiter.pid
                not in (hostlock.status()[1] or hostlock.Turns(frozenset(), frozenset())).waiting
            ):
                assert time.monotonic() < deadline, "the second process never waited"
                assert waiter.poll() is None
                time.sleep(0.05)
            with store.transaction() as c:
                for run_id, pid in zip(runs, (os.getpid(), waiter.pid, ready.pid), strict=True):
                    c.execute("UPDATE runs SET pid = ? WHERE id = ?", (pid, run_id))
            plan = iolab("plan", str(path), "--results", str(store.path))
            doc = json.loads(
                iolab("plan", str(path), "--json", "--results", str(store.path)).stdout
            )
        finally:
            ready.kill()
            ready.wait(60)
    assert waiter.wait(60) == 0  # its turn came
    assert plan.code == 0, plan
    assert (
        "3 of them are taken by another iolab process (1 running now, 1 waiting for this host's "
        "lock, 1 getting ready): `iolab run` leaves them to it, and takes them again only if "
        "it dies"
    ) in flat(plan.stdout)
    assert [(c["taken_now"], c["running_now"], c["waiting_now"]) for c in doc["cells"]] == [
        (1, 1, 0),
        (1, 0, 1),
        (1, 0, 0),
    ]
