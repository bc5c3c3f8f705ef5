"""Running an experiment file: plan, order, isolate, repeat, resume, and survive failures.

Every run is executed by :func:`iolab.runner.executors.execute_cell` where an executor puts it
(here, one at a time; or on a fleet host) and committed with its results by the driver
(:func:`iolab.runner.single.commit`). Each run is claimed in the results database before it starts
(:meth:`Store.claim_run`: a run row, taken in one exclusive transaction only while the cell has
fewer runs done or running than it wants), so two ``iolab run`` of one file at once share the
runs instead of repeating them. Running the same file again resumes: a cell's finished ('done')
runs count towards its repetitions, runs left 'running' by a dead process (its pid gone, or
another boot) are marked aborted and taken again, and a cell whose resolved parameters did not
change keeps its runs when the file changes (cells are named by the hash of those parameters).

The runner emits events and never prints; the CLI renders them.
"""

from __future__ import annotations

import json
import random
import subprocess
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iolab.analysis.stats import summarize
from iolab.config.experiment import DEVICE_PREFIX, HOST_KEY, Cell, Experiment
from iolab.errors import BadInput, IolabError, RunFailed
from iolab.events import EventSink, ExperimentProgress, Phase, Warning
from iolab.probes.recorder import LiveSink
from iolab.results import ExperimentId, RunId, RunOutcome, RunStatus
from iolab.runner import checks
from iolab.runner.executors import Executor, LocalExecutor, Task
from iolab.runner.single import Executed, commit, said_killed
from iolab.store import Store
from iolab.store import experiments as store_experiments
from iolab.store.database import signals_held
from iolab.store.live import ChunkWriter
from iolab.workloads.interface import Workload
from iolab.workloads.registry import WORKLOADS

Resolve = Callable[[str], Path]


@dataclass(frozen=True)
class PlannedCell:
    cell: Cell
    wanted: int  # repetitions wanted now (fixed, or min_repetitions for auto)
    done: int  # finished runs already in the results database
    seconds_each: float  # measured mean of earlier runs, or the kind's estimate
    takers: tuple[int, ...] = ()  # the pid of each run a live iolab process has taken, not ended

    @property
    def running(self) -> int:
        """Runs another live iolab process has taken and not ended (they count as remaining)."""
        return len(self.takers)

    @property
    def remaining(self) -> int:
        return max(0, self.wanted - self.done)


@dataclass(frozen=True)
class Plan:
    experiment: Experiment
    cells: tuple[PlannedCell, ...]
    auto: bool
    max_repetitions: int

    @property
    def runs(self) -> int:
        return sum(c.remaining for c in self.cells)

    @property
    def kept(self) -> int:
        return sum(min(c.done, c.wanted) for c in self.cells)

    @property
    def estimated_seconds(self) -> float:
        return sum(c.remaining * c.seconds_each for c in self.cells)

    @property
    def hosts(self) -> tuple[str, ...]:
        """The fleet hosts the runs go to, as far as the file says: its ``host`` values and
        ``[fleet] hosts``; empty without a fleet, or when the fleet picks any of its hosts."""
        named = {str(c.cell.values[HOST_KEY]) for c in self.cells if HOST_KEY in c.cell.values}
        spread = self.experiment.spec.fleet.hosts
        return tuple(sorted(named | set(spread))) if spread or not self._unpinned else ()

    @property
    def _unpinned(self) -> bool:
        return any(HOST_KEY not in c.cell.values and c.remaining for c in self.cells)

    @property
    def estimated_wall_seconds(self) -> float:
        """The estimate when the runs go to :attr:`hosts`, one run at a time on each: a cell's
        runs on its ``host``, the others to the host that is free first, longest first."""
        hosts = self.hosts
        if len(hosts) < 2:
            return self.estimated_seconds
        busy = dict.fromkeys(hosts, 0.0)
        spread: list[float] = []
        for c in self.cells:
            if HOST_KEY in c.cell.values:
                busy[str(c.cell.values[HOST_KEY])] += c.remaining * c.seconds_each
            else:
                spread += [c.seconds_each] * c.remaining
        targets = self.experiment.spec.fleet.hosts or list(hosts)
        for seconds in sorted(spread, reverse=True):
            first = min(targets, key=lambda h: busy[h])
            busy[first] += seconds
        return max(busy.values())

    @property
    def estimated_max_seconds(self) -> float:
        """With auto repetitions: the estimate if every cell needs max_repetitions."""
        if not self.auto:
            return self.estimated_seconds
        return sum(max(0, self.max_repetitions - c.done) * c.seconds_each for c in self.cells)


def kind_of(experiment: Experiment) -> Workload:
    return WORKLOADS[experiment.kind]


def make_plan(experiment: Experiment, store: Store | None) -> Plan:
    """What a run of the file would do now, given what the results database holds."""
    e = experiment.spec.experiment
    kind = kind_of(experiment)
    auto = e.repetitions == "auto"
    if auto and kind.metric is None:
        raise BadInput(
            "experiment.repetitions",
            "auto",
            f"a {kind.name} workload has no single metric to judge: give a number",
        )
    checks.check(experiment, store)  # plan and run refuse the same things, before any record
    wanted = e.min_repetitions if auto else int(e.repetitions)
    done: Counter[str] = Counter()
    running: dict[str, tuple[int, ...]] = {}
    seconds: dict[str, float] = {}
    if store is not None:
        found = store_experiments.find(store, experiment.name)
        if found is not None:
            done = store_experiments.done_counts(store, found)
            running = store_experiments.running_now(store, found)
            seconds = store_experiments.mean_seconds(store, found)
    cells = tuple(
        PlannedCell(
            cell,
            wanted,
            done[cell.id],
            seconds.get(cell.id) or kind.estimate(cell.params),
            running.get(cell.id, ()),
        )
        for cell in experiment.cells
    )
    return Plan(experiment, cells, auto, e.max_repetitions)


@dataclass
class Outcome:
    """What an invocation of the runner did."""

    experiment_id: ExperimentId
    planned: int
    kept: int  # finished runs found from earlier invocations
    done: int = 0
    failed: int = 0
    runs_aborted: int = 0  # runs that ended aborted (stopped on their host), not failed
    aborted: bool = False  # this invocation was interrupted (Ctrl-C)
    stopped: str | None = None  # why the experiment stopped early (on_failure = "stop")
    skipped_cells: list[str] = field(default_factory=list)
    saved_by_auto: int = 0  # runs auto repetitions did not need (max_repetitions - runs)
    failures: list[dict[str, Any]] = field(default_factory=list)
    waited_seconds: float = 0.0  # for the host's lock, while other runs held it
    checked: list[dict[str, Any]] = field(default_factory=list)  # check_why: each cell's

    def as_json(self, experiment: Experiment, results: Path) -> dict[str, Any]:
        return {
            "experiment": experiment.name,
            "file": str(experiment.source),
            "results": str(results),
            "experiment_id": self.experiment_id,
            "planned": self.planned,
            "kept": self.kept,
            "done": self.done,
            "failed": self.failed,
            "runs_aborted": self.runs_aborted,
            "aborted": self.aborted,
            "stopped": self.stopped,
            "skipped_cells": self.skipped_cells,
            "saved_by_auto": self.saved_by_auto,
            "failures": self.failures,
            "waited_seconds": round(self.waited_seconds, 3),
            "checked": self.checked,
        }


def default_resolve(text: str) -> Path:
    """A layout path; ``device:NAME[/sub]`` is a testbed device's mount point (+ sub path)."""
    if text.startswith(DEVICE_PREFIX):
        from iolab.testbed import resolve_path

        path = resolve_path(text, "layout")
        path.mkdir(mode=0o755, parents=True, exist_ok=True)  # a sub dir on iolab's own mount
        return path
    return Path(text)


def devices_up(table: dict[str, dict[str, Any]], events: EventSink) -> list[str]:
    """Bring a file's ``[devices]`` up on this machine; returns the names this brought up
    (those already up are kept as they are, and left up afterwards). When one fails, those
    this call brought up before it are taken down again before the error goes on."""
    if not table:
        return []
    from iolab import testbed

    specs = testbed.parse_devices(table, "devices")
    already = {d.name for d in testbed.status() if d.up}
    events(Phase(f"bringing up testbed devices: {', '.join(s.name for s in specs)}"))
    try:
        testbed.up(specs, events)
    except BaseException:
        named = {s.name for s in specs}
        made = [d.name for d in testbed.status() if d.name in named and d.name not in already]
        if made:
            events(Phase(f"taking down the testbed devices brought up: {', '.join(made)}"))
            try:
                testbed.down(events, names=made)
            except Exception as exc:  # the first error is the one to report
                events(Warning(f"testbed devices left up: {exc}; `iolab testbed down` takes them"))
        raise
    return [s.name for s in specs if s.name not in already]


def devices_down(names: list[str], events: EventSink) -> None:
    """Take down the devices :func:`devices_up` brought up."""
    if names:
        from iolab import testbed

        events(Phase(f"taking down testbed devices: {', '.join(names)}"))
        testbed.down(events, names=names)


@contextmanager
def _devices(experiment: Experiment, events: EventSink) -> Iterator[None]:
    """Bring the file's ``[devices]`` up for the experiment and take down those it brought up."""
    made = devices_up(experiment.spec.devices, events)
    try:
        yield
    finally:
        devices_down(made, events)


def register(experiment: Experiment, store: Store) -> ExperimentId:
    """The experiment in the results database (found by name, its config updated, or created)
    with every cell of its matrix: what runs are then recorded against."""
    # The stored JSON sorts keys: matrix_keys keeps the file's order for reports.
    config = {
        "file": str(experiment.source),
        "matrix_keys": list(experiment.spec.matrix),
        **json.loads(experiment.spec.model_dump_json()),
    }
    exp_id, _ = store_experiments.find_or_create(store, experiment.name, config)
    for cell in experiment.cells:
        store.ensure_cell(exp_id, cell.id, cell.kind, cell.params)
    return exp_id


ExecutorFactory = Callable[[Experiment, Store, EventSink, Resolve], Executor]


def local_executor(
    experiment: Experiment, store: Store, events: EventSink, resolve: Resolve
) -> Executor:
    """Every run on this machine, one at a time, its environment recorded as it starts and its
    series flushed to the store as they are recorded."""
    spec = experiment.spec

    def started(run_id: RunId, environment: dict[str, Any]) -> LiveSink:
        store.start_claimed(run_id, store.save_environment(environment))
        return ChunkWriter(store.path, run_id)  # its series, live, for iolab serve

    return LocalExecutor(
        kind_of(experiment),
        spec.isolation,
        spec.experiment.timeout_seconds(),
        resolve,
        events,
        started,
    )


def run(
    experiment: Experiment,
    store: Store,
    events: EventSink,
    *,
    resolve: Resolve = default_resolve,
    executor: ExecutorFactory | None = None,
) -> Outcome:
    """Run what the plan says is missing, with the file's devices up; returns what happened.
    ``executor``: where the runs execute (a fleet); by default here, one at a time.
    Ctrl-C propagates."""
    checks.check(experiment, store)  # before the devices come up, too
    if executor is None:
        if "host" in experiment.spec.matrix:
            raise BadInput(
                "matrix.host",
                experiment.spec.matrix["host"],
                "host compares the hosts of a fleet: run the file with --fleet ADDRESS "
                "(or [fleet] address), or take host out of the matrix",
            )
        with _devices(experiment, events):
            return _run(
                experiment, store, events, local_executor(experiment, store, events, resolve)
            )
    placed = executor(experiment, store, events, resolve)
    try:
        return _run(experiment, store, events, placed)
    finally:
        placed.close()  # (again: what it brought up is taken down even if _run failed early)


def _run(experiment: Experiment, store: Store, events: EventSink, executor: Executor) -> Outcome:
    store.reap_stale()
    said_killed(store, events)
    spec = experiment.spec
    e = spec.experiment
    kind = kind_of(experiment)
    plan = make_plan(experiment, store)
    exp_id = register(experiment, store)
    outcome = Outcome(exp_id, plan.runs, plan.kept)
    rng = random.Random(e.seed + plan.kept)
    seconds_each = {pc.cell.id: pc.seconds_each for pc in plan.cells}
    skipped: set[str] = set()
    total = plan.runs
    finished = 0
    runs_since_baseline = 0
    warned: list[str] = []
    retries: Counter[str] = Counter()
    limits: dict[RunId, int | None] = {}  # a run in flight -> what its cell wanted at its claim
    # (cell, runs the cell wants done or running when this one is claimed; None: an extra run)
    queue: list[tuple[Cell, int | None]] = []

    def warn_cache(executed: Executed) -> None:
        cannot = executed.cannot_drop
        if cannot is not None and not warned:
            warned.append(cannot)
            events(
                Warning(
                    f"cannot drop the page cache ({cannot}): runs may read cached data; run "
                    "as root, or set isolation.drop_caches = false to silence this"
                )
            )

    def claim(cell: Cell, limit: int | None) -> bool:
        """Claim the next run of the cell and submit it (False: the cell has ``limit`` runs
        done or running elsewhere, so another driver does this one). A claim given up before
        the executor has it (Ctrl-C between the two, a failed submit) is deleted: a signal
        waits until the claim is known, so no claimed run is left 'running' by a live driver."""
        nonlocal total, runs_since_baseline
        taken: tuple[RunId, int] | None = None
        try:
            with signals_held():
                taken = store.claim_run(exp_id, cell.id, limit)
            if taken is None:
                total -= 1
                return False
            run_id, repetition = taken
            limits[run_id] = limit
            runs_since_baseline += 1
            # the runs left, shared by the hosts that run at once
            left = (
                sum(seconds_each[c.id] for c, _ in queue) + seconds_each[cell.id]
            ) / executor.width
            events(
                ExperimentProgress(
                    finished, total, outcome.failed, left, f"{cell.label} · run {repetition}"
                )
            )
            executor.submit(Task(cell, run_id, repetition))
        except BaseException:
            if taken is not None:
                store.release(taken[0])
                limits.pop(taken[0], None)
            raise
        return True

    def ended(task: Task, executed: Executed) -> RunStatus:
        """Commit a run that ended, and say what became of it."""
        nonlocal finished
        assert task.run_id is not None
        warn_cache(executed)
        outcome.waited_seconds += executed.waited
        for text in executed.warnings:
            events(Warning(text))
        commit(store, task.run_id, executed)
        finished += 1
        status = executed.outcome.status
        if executed.failure is not None and not isinstance(executed.failure, IolabError):
            limits.pop(task.run_id, None)
            raise executed.failure  # Ctrl-C (the run is recorded aborted), or a bug
        if executed.fatal or isinstance(executed.failure, BadInput):
            limits.pop(task.run_id, None)
            if executed.failure is not None:
                raise executed.failure  # the file is wrong for every run: stop at once
            raise RunFailed(executed.outcome.error or "bad input")
        if status is RunStatus.DONE:
            outcome.done += 1
            return status
        aborted = status is RunStatus.ABORTED
        if aborted:
            outcome.runs_aborted += 1
        else:
            outcome.failed += 1
        failure = {
            "cell": task.cell.label,
            "cell_id": task.cell.id,
            "repetition": task.repetition,
            "status": status.value,
            "error": executed.outcome.error or status.value,
        }
        if task.host is not None:
            failure["host"] = task.host
        outcome.failures.append(failure)
        ended_as = "was aborted" if aborted else "failed"
        events(
            Warning(f"run {task.repetition} of {task.cell.label} {ended_as}: {failure['error']}")
        )
        _hook(spec.hooks.on_failure, failure, events)
        return RunStatus.FAILED  # for the failure policy, an aborted run did not finish either

    def skip(cell: Cell, why: str | None = None) -> None:
        nonlocal queue, total
        if cell.id in skipped:
            return
        skipped.add(cell.id)
        outcome.skipped_cells.append(cell.label)
        if why:
            events(Warning(f"{cell.label} skipped: {why}"))
        queue = [(c, n) for c, n in queue if c.id != cell.id]
        total = finished + len(queue) + len(limits)

    def policy(task: Task, limit: int | None, status: RunStatus) -> None:
        """After a run: the failure policy, and the baseline's drift check."""
        nonlocal total, runs_since_baseline
        cell = task.cell
        if status is RunStatus.FAILED:
            if e.on_failure == "stop":
                outcome.stopped = f'a run of {cell.label} failed and on_failure = "stop"'
                return
            if e.on_failure == "retry" and retries[cell.id] < e.retries:
                retries[cell.id] += 1
                queue.append((cell, limit))
                return
            skip(cell)
            return
        base = experiment.baseline
        if (
            base is not None
            and e.baseline_every
            and runs_since_baseline >= e.baseline_every
            and queue
        ):
            runs_since_baseline = 0
            queue.insert(0, (base, None))  # a drift check: beyond the repetitions
            total += 1

    def drain() -> int:
        """Claim and submit what the executor can take, commit what ended, until the queue
        is empty and nothing is in flight (or the policy stopped); returns runs claimed."""
        nonlocal queue
        claimed = 0
        while True:
            i = 0
            while i < len(queue) and outcome.stopped is None:
                cell, limit = queue[i]
                if cell.id in skipped:
                    queue.pop(i)
                    continue
                why = executor.unreachable(cell)
                if why is not None:
                    skip(cell, why)
                    continue
                if not executor.ready(cell):
                    i += 1
                    continue
                queue.pop(i)
                claimed += claim(cell, limit)
            if not executor.busy:
                return claimed
            for task, executed in executor.wait():
                assert task.run_id is not None
                status = ended(task, executed)
                policy(task, limits.pop(task.run_id, None), status)

    try:
        if spec.isolation.warmup and plan.runs and experiment.cells:
            first = next(pc.cell for pc in plan.cells if pc.remaining)
            events(Phase(f"warm-up run of {first.label} (not recorded)"))
            executor.submit(Task(first, None, 0))
            for _task, executed in executor.wait():
                warn_cache(executed)
                if executed.failure is not None:
                    raise executed.failure
                if executed.outcome.status is not RunStatus.DONE:
                    raise RunFailed(f"the warm-up run failed: {executed.outcome.error}")
        wanted = {pc.cell.id: pc.wanted for pc in plan.cells}
        queue = [
            (c, wanted[c.id])
            for c in _order([(pc.cell, pc.remaining) for pc in plan.cells], e.order, rng)
        ]
        while True:
            queued = len(queue)
            claimed = drain()
            if outcome.stopped is not None:
                return outcome
            if not plan.auto or (queued and not claimed):
                break  # auto: a round all taken by another driver is that driver's to judge
            more = _needing_more(experiment, store, exp_id, kind, skipped)
            if not more:
                break
            counts = store_experiments.done_counts(store, exp_id)
            queue = [(c, counts[c.id] + 1) for c in _order([(c, 1) for c in more], e.order, rng)]
            total += len(queue)
        if plan.auto:
            counts = store_experiments.done_counts(store, exp_id)
            outcome.saved_by_auto = sum(
                max(0, e.max_repetitions - counts[c.id])
                for c in experiment.cells
                if c.id not in skipped
            )
        if e.check_why:
            if isinstance(executor, LocalExecutor):
                outcome.checked = _check_cells(
                    experiment, store, exp_id, skipped, events, executor.resolve
                )
            else:
                events(Warning("check_why runs here only: the fleet's cells are not checked"))
        return outcome
    except KeyboardInterrupt:
        outcome.aborted = True
        raise
    finally:
        for task in executor.close():  # runs in flight when the driver stops
            if task.run_id is not None:
                aborted = RunOutcome(RunStatus.ABORTED, error="the driver stopped during the run")
                store.finish_run(task.run_id, aborted)
        if not outcome.aborted and not outcome.stopped:
            _hook(spec.hooks.on_complete, outcome.as_json(experiment, store.path), events)


def _check_cells(
    experiment: Experiment,
    store: Store,
    exp_id: ExperimentId,
    skipped: set[str],
    events: EventSink,
    resolve: Resolve,
) -> list[dict[str, Any]]:
    """``check_why``: each cell's verdict checked once, after its repetitions, on its newest
    finished run (:mod:`iolab.runner.whycheck`); a cell one of whose runs has a check already
    (a resumed experiment) is not checked again. A cell that cannot be checked is said, and
    the experiment goes on."""
    from iolab.runner import whycheck
    from iolab.store import checks

    e = experiment.spec.experiment
    out: list[dict[str, Any]] = []
    for cell in experiment.cells:
        if cell.id in skipped:
            continue
        runs = [
            r
            for r in store.runs(experiments=[exp_id])
            if r.cell_id == cell.id and r.status is RunStatus.DONE
        ]
        if not runs or checks.of_runs(store, [r.id for r in runs]):
            continue
        newest = runs[0]  # store.runs: newest first
        events(Phase(f"checking the verdict of {cell.label} (run {newest.id})"))
        try:
            planned = whycheck.plan(store, newest.id)
            found = whycheck.check(store, planned, e.check_runs, events, resolve=resolve)
        except IolabError as exc:
            events(Warning(f"{cell.label}: the verdict of run {newest.id} not checked: {exc}"))
            continue
        out.append({"cell": cell.label, "run": int(newest.id), **found.document()})
    return out


def _order(items: list[tuple[Cell, int]], order: str, rng: random.Random) -> list[Cell]:
    """Each cell as many times as it needs; shuffled across cells unless order is sequential."""
    out = [cell for cell, n in items for _ in range(n)]
    if order == "shuffled":
        rng.shuffle(out)
    return out


def _needing_more(
    experiment: Experiment, store: Store, exp_id: ExperimentId, kind: Workload, skipped: set[str]
) -> list[Cell]:
    """Auto repetitions: the cells whose 95% interval is still wider than ci_target."""
    e = experiment.spec.experiment
    more = []
    for cell in experiment.cells:
        if cell.id in skipped:
            continue
        judged = kind.judged(cell.params)
        assert judged is not None
        values = store_experiments.metric_values(store, exp_id, cell.id, judged.metric)
        if len(values) >= e.max_repetitions:
            continue
        if len(values) < 2:
            more.append(cell)
            continue
        half = summarize(values).half_width
        if half is None or half > e.ci_target:
            more.append(cell)
    return more


def _hook(command: str | None, summary: dict[str, Any], events: EventSink) -> None:
    """Run a hook command with the JSON summary on stdin; a failing hook is only a warning."""
    if not command:
        return
    try:
        done = subprocess.run(
            command,
            shell=True,
            input=json.dumps(summary) + "\n",
            text=True,
            capture_output=True,
            timeout=120,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        events(Warning(f"hook {command!r} failed: {exc}"))
        return
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or [""]
        events(Warning(f"hook {command!r} exited {done.returncode}: {tail[0]}"))
