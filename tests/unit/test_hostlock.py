"""The host's lock (iolab/runner/hostlock.py): runs take turns, who holds it is said, and a
run of the runner holds it. Two threads stand for two processes here (flock makes two opens of
one file exclude each other in one process too); tests/integration/test_experiment_drivers.py
has two real drivers. Each test has a lock directory of its own (tests/unit/conftest.py)."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import threading
from collections.abc import Mapping
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
from tests.unit.cli import iolab
from tests.unit.fakes import FakeWorkload, experiment_file


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
