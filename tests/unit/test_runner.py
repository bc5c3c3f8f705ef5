"""The experiment runner's logic on a fake workload kind (tests/unit/fakes.py): order, resume,
the failure policy, auto repetitions, baseline re-runs, warm-up and the plan, with a real
results database and the runner's real entry points. No program starts; the runs that real
servers and fio make are in tests/integration (test_experiment*.py, test_faults.py)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from iolab.config import experiment as config
from iolab.errors import BadInput
from iolab.events import Collect, Phase
from iolab.runner import experiment as runner
from iolab.store import Store, open_store
from iolab.workloads.registry import WORKLOADS
from tests.unit.cli import iolab, no_programs
from tests.unit.fakes import FakeWorkload, RunRow, elapsed_of, experiment_file, run_rows

SEQUENTIAL = 'order = "sequential"\n'


@pytest.fixture(autouse=True)
def _no_programs(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The fake starts nothing, and neither may anything else of a run."""
    with no_programs(monkeypatch):
        yield


def run_file(path: Path, store: Store, events: Collect | None = None) -> runner.Outcome:
    return runner.run(config.load(path), store, events or Collect())


def done_per_cell(rows: list[RunRow]) -> Counter[int]:
    return Counter(r.rows for r in rows if r.status == "done")


# --- order -----------------------------------------------------------------------------------


def test_sequential_runs_cells_in_matrix_order_each_its_repetitions(
    fake: FakeWorkload, store: Store, tmp_path: Path
) -> None:
    path = experiment_file(
        tmp_path,
        experiment=SEQUENTIAL + "repetitions = 2",
        matrix="rows = [300, 100]\nconnections = [1, 2]",
    )
    outcome = run_file(path, store)
    expected = [(300, 1), (300, 1), (300, 2), (300, 2), (100, 1), (100, 1), (100, 2), (100, 2)]
    assert fake.calls == expected
    rows = run_rows(store.path)
    assert [(r.rows, r.connections) for r in rows] == expected
    assert [r.repetition for r in rows] == [1, 2] * 4
    assert {r.status for r in rows} == {"done"}
    assert [r.elapsed for r in rows] == [3.0, 3.0, 3.0, 3.0, 1.0, 1.0, 1.0, 1.0]
    assert (outcome.planned, outcome.done, outcome.failed, outcome.kept) == (8, 8, 0, 0)


def shuffled_calls(tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    workload = FakeWorkload()
    monkeypatch.setitem(WORKLOADS, "populate", workload.kind())
    where = tmp_path / f"seed-{seed}-{len(list(tmp_path.iterdir()))}"
    where.mkdir()
    path = experiment_file(
        where,
        experiment=f'order = "shuffled"\nseed = {seed}\nrepetitions = 3',
        matrix="rows = [100, 200, 300, 400]",
    )
    with open_store(where / "results.db") as s:
        run_file(path, s)
        assert [r.rows for r in run_rows(s.path)] == [r for r, _ in workload.calls]
    return [r for r, _ in workload.calls]


def test_shuffled_is_a_permutation_fixed_by_the_seed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = shuffled_calls(tmp_path, 7, monkeypatch)
    again = shuffled_calls(tmp_path, 7, monkeypatch)
    other = shuffled_calls(tmp_path, 8, monkeypatch)
    in_order = [100] * 3 + [200] * 3 + [300] * 3 + [400] * 3
    assert sorted(first) == sorted(other) == in_order  # each cell exactly its repetitions
    assert first == again  # the same seed: the same order
    assert first != other  # another seed: another order
    assert first != in_order


# --- resume ----------------------------------------------------------------------------------


def test_interrupted_experiment_resumes_without_repeating_a_run(
    fake: FakeWorkload, store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = experiment_file(tmp_path, experiment=SEQUENTIAL + "repetitions = 2")
    fake.interrupt_at = 4  # the second run of rows=200
    with pytest.raises(KeyboardInterrupt):
        run_file(path, store)
    first = run_rows(store.path)
    assert [(r.rows, r.repetition, r.status) for r in first] == [
        (100, 1, "done"),
        (100, 2, "done"),
        (200, 1, "done"),
        (200, 2, "aborted"),
    ]
    assert first[-1].error == "interrupted"
    plan = runner.make_plan(config.load(path), store)
    assert (plan.runs, plan.kept) == (3, 3)
    assert [(c.cell.params["rows"], c.done, c.remaining) for c in plan.cells] == [
        (100, 2, 0),
        (200, 1, 1),
        (300, 0, 2),
    ]

    again = FakeWorkload()
    monkeypatch.setitem(WORKLOADS, "populate", again.kind())
    outcome = run_file(path, store)
    assert again.calls == [(200, 1), (300, 1), (300, 1)]  # only what was missing
    assert (outcome.planned, outcome.kept, outcome.done, outcome.failed) == (3, 3, 3, 0)
    rows = run_rows(store.path)
    assert rows[:4] == first  # the finished runs and the aborted one are kept as they were
    assert [(r.rows, r.repetition, r.status) for r in rows[4:]] == [
        (200, 3, "done"),
        (300, 1, "done"),
        (300, 2, "done"),
    ]
    assert done_per_cell(rows) == {100: 2, 200: 2, 300: 2}
    assert len({(r.rows, r.repetition) for r in rows}) == len(rows)  # no repetition twice
    assert runner.make_plan(config.load(path), store).runs == 0

    nothing = FakeWorkload()
    monkeypatch.setitem(WORKLOADS, "populate", nothing.kind())
    outcome = run_file(path, store)
    assert nothing.calls == []
    assert (outcome.planned, outcome.kept, outcome.done) == (0, 6, 0)


def test_more_repetitions_in_the_file_add_only_the_new_runs(
    fake: FakeWorkload, store: Store, tmp_path: Path
) -> None:
    path = experiment_file(tmp_path, experiment=SEQUENTIAL + "repetitions = 1")
    run_file(path, store)
    path = experiment_file(tmp_path, experiment=SEQUENTIAL + "repetitions = 3")
    outcome = run_file(path, store)
    assert (outcome.kept, outcome.done) == (3, 6)
    assert (
        fake.calls
        == [(100, 1), (200, 1), (300, 1)] + [(100, 1)] * 2 + [(200, 1)] * 2 + [(300, 1)] * 2
    )
    assert done_per_cell(run_rows(store.path)) == {100: 3, 200: 3, 300: 3}


# --- failure policy --------------------------------------------------------------------------


def test_skip_gives_up_the_failing_cell_and_goes_on(
    fake: FakeWorkload, store: Store, tmp_path: Path
) -> None:
    path = experiment_file(tmp_path, experiment=SEQUENTIAL + 'repetitions = 3\non_failure = "skip"')
    fake.fail_rows = {200: None}
    events = Collect()
    outcome = run_file(path, store, events)
    rows = run_rows(store.path)
    assert [(r.rows, r.status) for r in rows] == [
        (100, "done"),
        (100, "done"),
        (100, "done"),
        (200, "failed"),
        (300, "done"),
        (300, "done"),
        (300, "done"),
    ]
    assert rows[3].error == "fake failure 1 of rows=200"
    assert outcome.skipped_cells == ["rows=200"]
    assert (outcome.done, outcome.failed, outcome.stopped) == (6, 1, None)
    assert outcome.failures == [
        {
            "cell": "rows=200",
            "cell_id": config.load(path).cells[1].id,
            "repetition": 1,
            "status": "failed",
            "error": "fake failure 1 of rows=200",
        }
    ]
    assert "run 1 of rows=200 failed: fake failure 1 of rows=200" in events.warnings()


def test_retry_after_one_failure_ends_done(
    fake: FakeWorkload, store: Store, tmp_path: Path
) -> None:
    path = experiment_file(
        tmp_path,
        experiment=SEQUENTIAL + 'repetitions = 2\non_failure = "retry"\nretries = 2',
        matrix="rows = [100, 200]",
    )
    fake.fail_rows = {100: 1}
    outcome = run_file(path, store)
    rows = run_rows(store.path)
    # the failed run is retried at the end of the queue, as a new repetition
    assert [(r.rows, r.repetition, r.status) for r in rows] == [
        (100, 1, "failed"),
        (100, 2, "done"),
        (200, 1, "done"),
        (200, 2, "done"),
        (100, 3, "done"),
    ]
    assert done_per_cell(rows) == {100: 2, 200: 2}
    assert (outcome.done, outcome.failed, outcome.skipped_cells) == (4, 1, [])


def test_retry_of_a_cell_that_always_fails_gives_up_after_retries_plus_one(
    fake: FakeWorkload, store: Store, tmp_path: Path
) -> None:
    path = experiment_file(
        tmp_path,
        experiment=SEQUENTIAL + 'repetitions = 3\non_failure = "retry"\nretries = 2',
        matrix="rows = [100, 200]",
    )
    fake.fail_rows = {100: None}
    outcome = run_file(path, store)
    rows = run_rows(store.path)
    failed = [r for r in rows if r.rows == 100]
    assert [(r.status, r.error) for r in failed] == [
        ("failed", "fake failure 1 of rows=100"),
        ("failed", "fake failure 2 of rows=100"),
        ("failed", "fake failure 3 of rows=100"),
    ]
    assert fake.failed[100] == 3
    assert done_per_cell(rows) == {200: 3}
    assert outcome.skipped_cells == ["rows=100"]
    assert (outcome.done, outcome.failed) == (3, 3)


def test_stop_ends_the_experiment_at_the_first_failure(
    fake: FakeWorkload, store: Store, tmp_path: Path
) -> None:
    path = experiment_file(tmp_path, experiment=SEQUENTIAL + 'repetitions = 2\non_failure = "stop"')
    fake.fail_rows = {200: 1}
    outcome = run_file(path, store)
    assert outcome.stopped == 'a run of rows=200 failed and on_failure = "stop"'
    assert [(r.rows, r.status) for r in run_rows(store.path)] == [
        (100, "done"),
        (100, "done"),
        (200, "failed"),
    ]
    assert fake.calls == [(100, 1), (100, 1), (200, 1)]
    assert (outcome.done, outcome.failed) == (2, 1)
    # run again: the failed run counts for nothing, the rest runs
    outcome = run_file(path, store)
    assert (outcome.kept, outcome.done, outcome.stopped) == (2, 4, None)
    assert done_per_cell(run_rows(store.path)) == {100: 2, 200: 2, 300: 2}


def test_bad_input_from_a_run_stops_at_once_whatever_the_policy(
    fake: FakeWorkload, store: Store, tmp_path: Path
) -> None:
    class Refused(BadInput):
        def __init__(self, message: str) -> None:
            super().__init__("workload.rows", 200, message)

    path = experiment_file(tmp_path, experiment=SEQUENTIAL + 'on_failure = "skip"')
    fake.fail_rows = {200: None}
    fake.error = Refused
    with pytest.raises(BadInput, match=r"^workload.rows: 200 is not allowed; fake failure 1"):
        run_file(path, store)
    assert [(r.rows, r.status) for r in run_rows(store.path)][-1] == (200, "failed")
    assert len(fake.calls) == 4


def test_timeout_fails_the_run_with_the_reason(
    fake: FakeWorkload, store: Store, tmp_path: Path
) -> None:
    path = experiment_file(
        tmp_path,
        experiment=SEQUENTIAL + 'repetitions = 1\ntimeout = "1ms"',
        matrix="rows = [200]",
    )
    fake.sleep_rows = {200: 0.01}  # then it reports progress, where the deadline is checked
    outcome = run_file(path, store)
    assert [(r.rows, r.status, r.error) for r in run_rows(store.path)] == [
        (200, "failed", "timed out after 0.001 s (experiment.timeout)"),
    ]
    assert outcome.skipped_cells == ["rows=200"]


# --- auto repetitions ------------------------------------------------------------------------

AUTO = 'repetitions = "auto"\nci_target = 0.05\nmin_repetitions = 3\nmax_repetitions = 6\n'


def test_auto_stops_at_min_repetitions_without_noise(
    fake: FakeWorkload, store: Store, tmp_path: Path
) -> None:
    path = experiment_file(tmp_path, experiment=SEQUENTIAL + AUTO, matrix="rows = [100, 200]")
    outcome = run_file(path, store)
    rows = run_rows(store.path)
    assert done_per_cell(rows) == {100: 3, 200: 3}
    assert {r.elapsed for r in rows if r.rows == 200} == {elapsed_of({"rows": 200})}
    assert (outcome.planned, outcome.done, outcome.saved_by_auto) == (6, 6, 6)


def test_auto_goes_to_max_repetitions_with_large_noise(
    fake: FakeWorkload, store: Store, tmp_path: Path
) -> None:
    path = experiment_file(tmp_path, experiment=SEQUENTIAL + AUTO, matrix="rows = [100, 200]")
    fake.noise = 0.5
    outcome = run_file(path, store)
    rows = run_rows(store.path)
    assert done_per_cell(rows) == {100: 6, 200: 6}
    assert [r.elapsed for r in rows if r.rows == 100] == [1.5, 0.5] * 3
    assert (outcome.done, outcome.saved_by_auto) == (12, 0)
    # after min_repetitions, one more run per cell still too wide, round by round
    assert [r for r, _ in fake.calls] == [100] * 3 + [200] * 3 + [100, 200] * 3


def test_auto_plan_counts_min_repetitions_and_estimates_up_to_max(
    fake: FakeWorkload, tmp_path: Path
) -> None:
    path = experiment_file(tmp_path, experiment=AUTO, matrix="rows = [100, 200]")
    plan = runner.make_plan(config.load(path), None)
    assert plan.auto
    assert plan.runs == 6
    assert plan.estimated_seconds == 6 * fake.estimate_seconds
    assert plan.estimated_max_seconds == 12 * fake.estimate_seconds


# --- baseline and warm-up --------------------------------------------------------------------


def test_baseline_is_every_nth_run_beyond_its_repetitions(
    fake: FakeWorkload, store: Store, tmp_path: Path
) -> None:
    path = experiment_file(
        tmp_path,
        experiment=SEQUENTIAL + "repetitions = 2\nbaseline = { rows = 100 }\nbaseline_every = 3",
    )
    outcome = run_file(path, store)
    # every third run is the baseline (the baseline runs count), never one at the end
    assert [r for r, _ in fake.calls] == [100, 100, 200, 100, 200, 300, 100, 300]
    rows = run_rows(store.path)
    assert done_per_cell(rows) == {100: 4, 200: 2, 300: 2}
    assert [r.repetition for r in rows if r.rows == 100] == [1, 2, 3, 4]
    assert (outcome.planned, outcome.done) == (6, 8)


def test_warmup_runs_the_first_cell_once_unrecorded(
    fake: FakeWorkload, store: Store, tmp_path: Path
) -> None:
    path = experiment_file(
        tmp_path, experiment=SEQUENTIAL + "repetitions = 1", isolation="warmup = true"
    )
    events = Collect()
    outcome = run_file(path, store, events)
    assert fake.calls == [(100, 1), (100, 1), (200, 1), (300, 1)]
    assert [(r.rows, r.repetition) for r in run_rows(store.path)] == [(100, 1), (200, 1), (300, 1)]
    assert Phase("warm-up run of rows=100 (not recorded)") in events.events
    assert outcome.done == 3


# --- plan ------------------------------------------------------------------------------------


def test_plan_lists_cells_and_runs(fake: FakeWorkload, tmp_path: Path) -> None:
    path = experiment_file(
        tmp_path,
        experiment="repetitions = 4",
        matrix='rows = [100, 200]\nkey = ["sequential", "random"]',
    )
    plan = runner.make_plan(config.load(path), None)
    assert [c.cell.label for c in plan.cells] == [
        "rows=100 key=sequential",
        "rows=100 key=random",
        "rows=200 key=sequential",
        "rows=200 key=random",
    ]
    assert [(c.wanted, c.done, c.remaining) for c in plan.cells] == [(4, 0, 4)] * 4
    assert (plan.runs, plan.kept, plan.auto) == (16, 0, False)
    assert plan.estimated_seconds == 16 * fake.estimate_seconds
    assert fake.calls == []


def test_plan_of_a_resumed_experiment_counts_only_the_runs_left(
    fake: FakeWorkload, store: Store, tmp_path: Path
) -> None:
    path = experiment_file(tmp_path, experiment=SEQUENTIAL + "repetitions = 3")
    fake.interrupt_at = 5  # the second run of rows=200: 4 done before it
    with pytest.raises(KeyboardInterrupt):
        run_file(path, store)
    plan = runner.make_plan(config.load(path), store)
    assert [(c.cell.label, c.done, c.remaining) for c in plan.cells] == [
        ("rows=100", 3, 0),
        ("rows=200", 1, 2),
        ("rows=300", 0, 3),
    ]
    assert (plan.runs, plan.kept) == (5, 4)
    # cells with finished runs are estimated from them; the others from the kind's estimate
    assert plan.cells[2].seconds_each == fake.estimate_seconds


# --- through the command ---------------------------------------------------------------------


def test_run_command_says_why_it_stopped_and_exits_1(fake: FakeWorkload, tmp_path: Path) -> None:
    path = experiment_file(tmp_path, experiment=SEQUENTIAL + 'repetitions = 2\non_failure = "stop"')
    fake.fail_rows = {200: 1}
    db = tmp_path / "results.db"
    done = iolab("run", str(path), "--results", str(db))
    assert done.code == 1, done
    lines = done.stdout.splitlines()
    assert "2 runs done, 1 failed" in lines
    assert 'stopped: a run of rows=200 failed and on_failure = "stop"' in lines
    assert "warning: run 1 of rows=200 failed: fake failure 1 of rows=200" in done.error_lines

    done = iolab("run", str(path), "--results", str(db), "--json")
    assert done.code == 0, done
    doc = json.loads(done.stdout)
    assert (doc["kept"], doc["done"], doc["failed"], doc["stopped"]) == (2, 4, 0, None)
    assert [(c["label"], c["runs"], c["mean"]) for c in doc["cells"]] == [
        ("rows=100", {"done": 2}, 1.0),
        ("rows=200", {"done": 2, "failed": 1}, 2.0),
        ("rows=300", {"done": 2}, 3.0),
    ]


def test_plan_command_counts_what_is_left(fake: FakeWorkload, tmp_path: Path) -> None:
    path = experiment_file(tmp_path, experiment=SEQUENTIAL + "repetitions = 2")
    db = tmp_path / "results.db"
    fake.interrupt_at = 3
    done = iolab("run", str(path), "--results", str(db))
    assert done.code == 130, done
    done = iolab("plan", str(path), "--results", str(db), "--json")
    assert done.code == 0, done
    doc = json.loads(done.stdout)
    assert (doc["runs"], doc["kept"]) == (4, 2)
    assert [(c["label"], c["done"], c["to_run"]) for c in doc["cells"]] == [
        ("rows=100", 2, 0),
        ("rows=200", 0, 2),
        ("rows=300", 0, 2),
    ]


# --- claims: runs shared with another driver, and runs left by a dead one ---------------------


def claim_first_cell(path: Path, store: Store) -> int:
    """Take a run of the file's first cell as another driver would, before this one runs."""
    experiment = config.load(path)
    exp_id = runner.register(experiment, store)
    claim = store.claim_run(exp_id, experiment.cells[0].id, 2)
    assert claim is not None
    return int(claim[0])


def test_a_run_another_live_driver_holds_is_left_to_it(
    fake: FakeWorkload, store: Store, tmp_path: Path
) -> None:
    path = experiment_file(tmp_path, experiment=SEQUENTIAL + "repetitions = 2")
    claim_first_cell(path, store)  # 'running', by this (live) process: another driver's run
    outcome = run_file(path, store)
    assert fake.calls == [(100, 1), (200, 1), (200, 1), (300, 1), (300, 1)]
    rows = run_rows(store.path)
    assert [(r.rows, r.repetition, r.status) for r in rows] == [
        (100, 1, "running"),
        (100, 2, "done"),
        (200, 1, "done"),
        (200, 2, "done"),
        (300, 1, "done"),
        (300, 2, "done"),
    ]
    assert (outcome.planned, outcome.done) == (6, 5)


def test_a_run_left_by_a_dead_driver_is_aborted_and_taken_again(
    fake: FakeWorkload, store: Store, tmp_path: Path
) -> None:
    path = experiment_file(tmp_path, experiment=SEQUENTIAL + "repetitions = 2")
    run_id = claim_first_cell(path, store)
    with store.transaction() as c:  # its process belonged to another boot: it is gone
        c.execute("UPDATE runs SET boot_id = 'another boot' WHERE id = ?", (run_id,))
    outcome = run_file(path, store)
    rows = run_rows(store.path)
    assert (rows[0].rows, rows[0].status, rows[0].error) == (
        100,
        "aborted",
        "interrupted: the iolab process running it is gone",
    )
    assert done_per_cell(rows) == {100: 2, 200: 2, 300: 2}
    assert [r.repetition for r in rows if r.rows == 100] == [1, 2, 3]
    assert (outcome.done, outcome.kept) == (6, 0)


def test_plan_says_which_runs_another_live_driver_is_running(
    fake: FakeWorkload, store: Store, tmp_path: Path
) -> None:
    path = experiment_file(tmp_path, experiment=SEQUENTIAL + "repetitions = 2")
    claim_first_cell(path, store)  # 'running', by a live process
    plan = runner.make_plan(config.load(path), store)
    assert [(c.done, c.running, c.remaining) for c in plan.cells] == [
        (0, 1, 2),
        (0, 0, 2),
        (0, 0, 2),
    ]
    done = iolab("plan", str(path), "--results", str(store.path))
    assert done.code == 0, done
    assert (
        "1 of them is taken by another iolab process (1 getting ready): `iolab run` leaves them "
        "to it"
    ) in " ".join(done.stdout.split())  # its process neither holds the host's lock nor waits for it


def _fleet_plan(tmp_path: Path, matrix: str, fleet: str = "") -> runner.Plan:
    path = experiment_file(tmp_path, experiment="repetitions = 3", matrix=matrix)
    if fleet:
        path.write_text(path.read_text() + f"[fleet]\n{fleet}\n")
    return runner.make_plan(config.load(path), None)


def test_plan_on_a_fleet_estimates_the_hosts_wall_time(fake: FakeWorkload, tmp_path: Path) -> None:
    each = fake.estimate_seconds
    # no fleet: the runs one after another
    alone = _fleet_plan(tmp_path, "rows = [100, 200]")
    assert alone.hosts == ()
    assert alone.estimated_wall_seconds == alone.estimated_seconds == 6 * each
    # 6 runs spread over 2 hosts: 3 each
    spread = _fleet_plan(tmp_path, "rows = [100, 200]", 'hosts = ["db1", "db2"]')
    assert spread.hosts == ("db1", "db2")
    assert spread.estimated_seconds == 6 * each
    assert spread.estimated_wall_seconds == 3 * each
    # hosts compared: each cell on its own host, 2 cells a host
    compared = _fleet_plan(tmp_path, 'rows = [100, 200]\nhost = ["db1", "db2", "db3"]')
    assert compared.hosts == ("db1", "db2", "db3")
    assert compared.estimated_wall_seconds == 2 * 3 * each
    # runs spread over a fleet of unknown size: no wall-time estimate beyond the runs'
    unknown = _fleet_plan(tmp_path, "rows = [100]", 'address = "auto"')
    assert unknown.hosts == ()
    assert unknown.estimated_wall_seconds == 3 * each


def test_plan_command_gives_the_fleet_estimate(fake: FakeWorkload, tmp_path: Path) -> None:
    path = experiment_file(tmp_path, experiment="repetitions = 2", matrix="rows = [100, 200]")
    path.write_text(path.read_text() + '[fleet]\nhosts = ["db1", "db2"]\n')
    result = iolab("plan", str(path), "--json", "--results", str(tmp_path / "r.db"))
    doc = json.loads(result.stdout)
    assert doc["hosts"] == ["db1", "db2"]
    assert doc["estimated_wall_seconds"] == pytest.approx(doc["estimated_seconds"] / 2)
    text = iolab("plan", str(path), "--results", str(tmp_path / "r.db")).stdout
    assert "4 runs to do" in text
    assert "on 2 hosts" in text


def test_a_timed_populate_is_estimated_by_its_duration_and_warm_up() -> None:
    from iolab.workloads.populate.workload import WORKLOAD

    assert WORKLOAD.estimate({"rows": 30_000}) == pytest.approx(15.0)
    assert WORKLOAD.estimate({"duration": 15.0}) == pytest.approx(20.0)
    assert WORKLOAD.estimate({"duration": "1min", "warmup": "10s"}) == pytest.approx(75.0)
    assert WORKLOAD.estimate({"duration": 15.0, "warmup": 5000}) == pytest.approx(20.0)


# --- check_why -------------------------------------------------------------------------------


def test_check_why_checks_each_cell_once_after_its_repetitions(
    fake: FakeWorkload, store: Store, tmp_path: Path
) -> None:
    """The fake records no probes, so no verdict: each cell's newest run is said to be
    unchecked, once per cell, after every repetition ran, and the experiment ends as it would."""
    path = experiment_file(
        tmp_path, experiment=SEQUENTIAL + "repetitions = 2\ncheck_why = true\ncheck_runs = 2"
    )
    events = Collect()
    outcome = run_file(path, store, events)
    assert (outcome.done, outcome.failed, outcome.checked) == (6, 0, [])
    said = [w for w in events.warnings() if "not checked" in w]
    newest = [2, 4, 6]  # each cell's second run, in matrix order
    assert said == [
        f"rows={rows}: the verdict of run {run} not checked: cannot check run {run}: it "
        "recorded no probes, so it has no verdict"
        for rows, run in zip((100, 200, 300), newest, strict=True)
    ]
    phases = [e.text for e in events.events if isinstance(e, Phase) and "checking" in e.text]
    assert phases == [
        f"checking the verdict of rows={r} (run {n})"
        for r, n in zip((100, 200, 300), newest, strict=True)
    ]
    assert outcome.as_json(config.load(path), store.path)["checked"] == []


def test_check_why_is_a_boolean_and_check_runs_two_or_more(tmp_path: Path) -> None:
    for text, field in [("check_why = 3", "check_why"), ("check_runs = 1", "check_runs")]:
        path = experiment_file(tmp_path, experiment=text)
        with pytest.raises(BadInput) as caught:
            config.load(path)
        assert caught.value.field == f"experiment.{field}"
