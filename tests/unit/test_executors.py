"""The runner with an executor of several hosts (a fake of the fleet's: no Ray, the runs
executed by the real one-cell path when waited for, last submitted first): runs in flight on
every free host at once, each committed once however they come back, a host that leaves, and
the failure policy with runs in flight."""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from iolab.config import experiment as config
from iolab.config.experiment import Cell, Experiment
from iolab.events import Collect, EventSink, ExperimentProgress
from iolab.results import RunOutcome, RunStatus
from iolab.runner import experiment as runner
from iolab.runner.executors import Executor, Resolve, Task, execute_cell
from iolab.runner.single import Executed
from iolab.store import Store
from tests.unit.cli import no_programs
from tests.unit.fakes import FakeWorkload, experiment_file, run_rows


@pytest.fixture(autouse=True)
def _no_programs(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    with no_programs(monkeypatch):
        yield


class Hosts:
    """Hosts h1, h2 (or those given): one run at a time each; ``leaves`` leaves the fleet
    during its first run."""

    def __init__(self, experiment: Experiment, names: tuple[str, ...], leaves: str | None) -> None:
        self.kind = runner.kind_of(experiment)
        self.spec = experiment.spec
        self.names = names
        self.leaves = leaves
        self.gone: set[str] = set()
        self.running: list[Task] = []
        self.most = 0  # the most runs in flight at once
        self.placed: list[str] = []

    @property
    def busy(self) -> bool:
        return bool(self.running)

    @property
    def width(self) -> int:
        return len(self.names)

    def _free(self) -> list[str]:
        taken = {t.host for t in self.running}
        return [h for h in self.names if h not in taken and h not in self.gone]

    def ready(self, cell: Cell) -> bool:
        host = cell.values.get("host")
        return host in self._free() if host else bool(self._free())

    def unreachable(self, cell: Cell) -> str | None:
        host = cell.values.get("host")
        return f"host {host} left the fleet" if host in self.gone else None

    def submit(self, task: Task) -> Task:
        placed = task.on(task.cell.values.get("host") or self._free()[0])
        self.running.append(placed)
        self.most = max(self.most, len(self.running))
        return placed

    def wait(self) -> list[tuple[Task, Executed]]:
        task = self.running.pop()  # the last one sent comes back first
        assert task.host is not None
        self.placed.append(task.host)
        if task.host == self.leaves:
            self.gone.add(task.host)
            error = f"host {task.host} left the fleet during run {task.repetition}"
            return [(task, Executed(RunOutcome(RunStatus.FAILED, error=error), None, "", ""))]
        executed = execute_cell(
            self.kind, task.cell.params, Path, lambda _e: None, self.spec.isolation, None
        )
        assert executed.environment is not None
        executed.environment["fleet_host"] = task.host
        return [(task, executed.portable())]

    def close(self) -> list[Task]:
        stopped, self.running = self.running, []
        return stopped


def on(
    names: tuple[str, ...] = ("h1", "h2"), leaves: str | None = None
) -> tuple[list[Hosts], runner.ExecutorFactory]:
    made: list[Hosts] = []

    def factory(
        experiment: Experiment, _store: Store, _events: EventSink, _resolve: Resolve
    ) -> Executor:
        made.append(Hosts(experiment, names, leaves))
        return made[-1]

    return made, factory


def hosts_of(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [
            str(h)
            for (h,) in conn.execute(
                "SELECT json_extract(e.data, '$.fleet_host') FROM runs r"
                " JOIN environments e ON e.id = r.env_id ORDER BY r.id"
            )
        ]


def test_runs_spread_over_free_hosts_each_committed_once(
    fake: FakeWorkload, store: Store, tmp_path: Path
) -> None:
    path = experiment_file(tmp_path, experiment="repetitions = 3")
    made, factory = on()
    events = Collect()
    outcome = runner.run(config.load(path), store, events, executor=factory)
    assert (outcome.planned, outcome.done, outcome.failed) == (9, 9, 0)
    progress = [e for e in events.events if isinstance(e, ExperimentProgress)]
    assert progress[0].seconds_left == 9 * 2.0 / 2  # 9 runs of 2 s estimated, on 2 hosts
    assert made[0].most == 2  # both hosts busy at once
    rows = run_rows(store.path)
    assert Counter(r.rows for r in rows if r.status == "done") == {100: 3, 200: 3, 300: 3}
    assert sorted(r.repetition for r in rows if r.rows == 100) == [1, 2, 3]
    assert [r.elapsed for r in rows if r.rows == 300] == [3.0, 3.0, 3.0]
    # each run's environment names its host (h1's first run is held until the end: the fake
    # hands back the last run sent first, so h2 takes the rest one by one)
    assert Counter(hosts_of(store.path)) == {"h1": 1, "h2": 8}
    assert made[0].placed[-1] == "h1"


def test_a_host_that_leaves_fails_its_run_and_its_cells_are_skipped(
    fake: FakeWorkload, store: Store, tmp_path: Path
) -> None:
    path = experiment_file(
        tmp_path,
        experiment='repetitions = 2\norder = "sequential"',
        matrix='rows = [100]\nhost = ["h1", "h2"]',
    )
    events = Collect()
    _, factory = on(leaves="h2")
    outcome = runner.run(config.load(path), store, events, executor=factory)
    rows = run_rows(store.path)
    assert [(r.status, r.error) for r in rows if r.status != "done"] == [
        ("failed", "host h2 left the fleet during run 1")
    ]
    assert [r.status for r in rows].count("done") == 2  # h1's two runs
    assert (outcome.done, outcome.failed, outcome.skipped_cells) == (2, 1, ["rows=100 host=h2"])
    assert outcome.failures[0]["host"] == "h2"
    assert "run 1 of rows=100 host=h2 failed: host h2 left the fleet during run 1" in [
        w for w in events.warnings()
    ]


def test_stop_commits_the_runs_in_flight_and_claims_no_more(
    fake: FakeWorkload, store: Store, tmp_path: Path
) -> None:
    fake.fail_rows = {200: None}
    path = experiment_file(
        tmp_path, experiment='repetitions = 2\norder = "sequential"\non_failure = "stop"'
    )
    outcome = runner.run(config.load(path), store, Collect(), executor=on()[1])
    assert outcome.stopped == 'a run of rows=200 failed and on_failure = "stop"'
    rows = run_rows(store.path)
    assert "running" not in {r.status for r in rows}  # every claimed run was recorded
    assert [(r.rows, r.status) for r in rows if r.status == "failed"] == [(200, "failed")]
    assert not [r for r in rows if r.rows == 300]  # nothing claimed after the stop
