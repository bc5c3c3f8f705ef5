"""Running an experiment file: plan, order, isolate, repeat, resume, and survive failures.

Every run goes through :func:`iolab.runner.single.record`, which commits it with its results
before the next starts. Each run is claimed in the results database before it starts
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
import os
import random
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iolab.analysis.stats import summarize
from iolab.config.experiment import DEVICE_PREFIX, Cell, Experiment
from iolab.errors import BadInput, IolabError, RunFailed
from iolab.events import Event, EventSink, ExperimentProgress, Phase, Warning
from iolab.results import ExperimentId, RunOutcome, RunStatus
from iolab.runner import checks
from iolab.runner.kinds import KINDS, Kind
from iolab.runner.single import record
from iolab.store import Store
from iolab.store import experiments as store_experiments

Resolve = Callable[[str], Path]
DROP_CACHES = Path("/proc/sys/vm/drop_caches")


class RunTimeout(RunFailed):
    """A run went past ``experiment.timeout``."""


@dataclass(frozen=True)
class PlannedCell:
    cell: Cell
    wanted: int  # repetitions wanted now (fixed, or min_repetitions for auto)
    done: int  # finished runs already in the results database
    seconds_each: float  # measured mean of earlier runs, or the kind's estimate
    running: int = 0  # runs another live iolab process is running now (they count as remaining)

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
    def estimated_max_seconds(self) -> float:
        """With auto repetitions: the estimate if every cell needs max_repetitions."""
        if not self.auto:
            return self.estimated_seconds
        return sum(max(0, self.max_repetitions - c.done) * c.seconds_each for c in self.cells)


def kind_of(experiment: Experiment) -> Kind:
    return KINDS[experiment.kind]


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
    running: Counter[str] = Counter()
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
            running[cell.id],
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
    aborted: bool = False
    stopped: str | None = None  # why the experiment stopped early (on_failure = "stop")
    skipped_cells: list[str] = field(default_factory=list)
    saved_by_auto: int = 0  # runs auto repetitions did not need (max_repetitions - runs)
    failures: list[dict[str, Any]] = field(default_factory=list)

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
            "aborted": self.aborted,
            "stopped": self.stopped,
            "skipped_cells": self.skipped_cells,
            "saved_by_auto": self.saved_by_auto,
            "failures": self.failures,
        }


def default_resolve(text: str) -> Path:
    """A layout path; ``device:NAME[/sub]`` is a testbed device's mount point (+ sub path)."""
    if text.startswith(DEVICE_PREFIX):
        from iolab.testbed import resolve_path

        path = resolve_path(text, "layout")
        path.mkdir(mode=0o755, parents=True, exist_ok=True)  # a sub dir on iolab's own mount
        return path
    return Path(text)


@contextmanager
def _devices(experiment: Experiment, events: EventSink) -> Iterator[None]:
    """Bring the file's ``[devices]`` up for the experiment and take down those it brought up."""
    table = experiment.spec.devices
    if not table:
        yield
        return
    from iolab import testbed

    specs = testbed.parse_devices(table, "devices")
    already = {d.name for d in testbed.status() if d.up}
    events(Phase(f"bringing up testbed devices: {', '.join(s.name for s in specs)}"))
    testbed.up(specs, events)
    try:
        yield
    finally:
        made = [s.name for s in specs if s.name not in already]
        if made:
            events(Phase(f"taking down testbed devices: {', '.join(made)}"))
            testbed.down(events, names=made)


class _Deadline:
    """A cooperative per-run timeout: checked whenever the workload reports progress, so it
    never interrupts a server's shutdown or the removal of what a run created."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self.until: float | None = None

    @contextmanager
    def armed(self) -> Iterator[None]:
        self.until = None if self.seconds is None else time.monotonic() + self.seconds
        try:
            yield
        finally:
            self.until = None

    def check(self) -> None:
        if self.until is not None and time.monotonic() > self.until:
            self.until = None  # raise once; clean-up runs after it
            raise RunTimeout(f"timed out after {self.seconds:g} s (experiment.timeout)")


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


def run(
    experiment: Experiment,
    store: Store,
    events: EventSink,
    *,
    resolve: Resolve = default_resolve,
) -> Outcome:
    """Run what the plan says is missing, with the file's devices up; returns what happened.
    Ctrl-C propagates."""
    checks.check(experiment, store)  # before the devices come up, too
    with _devices(experiment, events):
        return _run(experiment, store, events, resolve)


def _run(experiment: Experiment, store: Store, events: EventSink, resolve: Resolve) -> Outcome:
    store.reap_stale()
    spec = experiment.spec
    e = spec.experiment
    kind = kind_of(experiment)
    plan = make_plan(experiment, store)
    exp_id = register(experiment, store)
    outcome = Outcome(exp_id, plan.runs, plan.kept)
    rng = random.Random(e.seed + plan.kept)
    deadline = _Deadline(e.timeout_seconds())
    seconds_each = {pc.cell.id: pc.seconds_each for pc in plan.cells}
    skipped: set[str] = set()
    total = plan.runs
    finished = 0
    runs_since_baseline = 0
    warned: list[str] = []

    def sink(event: Event) -> None:
        deadline.check()
        events(event)

    def one_run(cell: Cell, wanted: int | None, measured: bool = True) -> RunStatus | None:
        """One run of the cell, if it can be claimed (None: the cell has ``wanted`` runs done
        or running elsewhere, so another driver does this one)."""
        nonlocal finished, total
        claim = store.claim_run(exp_id, cell.id, wanted) if measured else None
        if measured and claim is None:
            total -= 1
            return None
        try:  # until the run is recorded, a claim given up is deleted: nothing of it ran
            body, roles, versions = kind.prepare(cell.params, resolve, sink)
            cannot = _isolate(spec.isolation.drop_caches, spec.isolation.settle_seconds)
        except BaseException:
            if claim is not None:
                store.release(claim[0])
            raise
        if cannot is not None and not warned:
            warned.append(cannot)
            events(
                Warning(
                    f"cannot drop the page cache ({cannot}): runs may read cached data; run "
                    "as root, or set isolation.drop_caches = false to silence this"
                )
            )
        if not measured:
            events(Phase(f"warm-up run of {cell.label} (not recorded)"))
            with deadline.armed():
                body(RunOutcome(RunStatus.RUNNING))
            return RunStatus.DONE
        assert claim is not None
        run_id, repetition = claim
        left = sum(seconds_each[c.id] for c, _ in queue) + seconds_each[cell.id]
        events(
            ExperimentProgress(
                finished, total, outcome.failed, left, f"{cell.label} · run {repetition}"
            )
        )
        try:
            with deadline.armed():
                record(store, exp_id, cell.id, repetition, roles, versions, body, run_id)
            status = RunStatus.DONE
            outcome.done += 1
        except IolabError as exc:
            if isinstance(exc, BadInput):
                raise  # the file is wrong for every run: stop at once
            status = RunStatus.FAILED
            outcome.failed += 1
            failure = {
                "cell": cell.label,
                "cell_id": cell.id,
                "repetition": repetition,
                "error": str(exc),
            }
            outcome.failures.append(failure)
            events(Warning(f"run {repetition} of {cell.label} failed: {exc}"))
            _hook(spec.hooks.on_failure, failure, events)
        finished += 1
        if spec.isolation.cooldown_seconds:
            time.sleep(spec.isolation.cooldown_seconds)
        return status

    # (cell, runs the cell wants done or running when this one is claimed; None: an extra run)
    queue: list[tuple[Cell, int | None]] = []
    try:
        if spec.isolation.warmup and plan.runs and experiment.cells:
            one_run(next(pc.cell for pc in plan.cells if pc.remaining), None, measured=False)
        wanted = {pc.cell.id: pc.wanted for pc in plan.cells}
        queue = [
            (c, wanted[c.id])
            for c in _order([(pc.cell, pc.remaining) for pc in plan.cells], e.order, rng)
        ]
        retries: Counter[str] = Counter()
        while True:
            queued, claimed = len(queue), 0
            while queue:
                cell, limit = queue.pop(0)
                if cell.id in skipped:
                    continue
                status = one_run(cell, limit)
                if status is None:
                    continue  # another driver has this run
                claimed += 1
                runs_since_baseline += 1
                if status is RunStatus.FAILED:
                    if e.on_failure == "stop":
                        outcome.stopped = f'a run of {cell.label} failed and on_failure = "stop"'
                        return outcome
                    if e.on_failure == "retry" and retries[cell.id] < e.retries:
                        retries[cell.id] += 1
                        queue.append((cell, limit))
                        continue
                    skipped.add(cell.id)
                    outcome.skipped_cells.append(cell.label)
                    queue = [(c, n) for c, n in queue if c.id != cell.id]
                    total = finished + len(queue)
                    continue
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
        return outcome
    except KeyboardInterrupt:
        outcome.aborted = True
        raise
    finally:
        if not outcome.aborted and not outcome.stopped:
            _hook(spec.hooks.on_complete, outcome.as_json(experiment, store.path), events)


def _order(items: list[tuple[Cell, int]], order: str, rng: random.Random) -> list[Cell]:
    """Each cell as many times as it needs; shuffled across cells unless order is sequential."""
    out = [cell for cell, n in items for _ in range(n)]
    if order == "shuffled":
        rng.shuffle(out)
    return out


def _needing_more(
    experiment: Experiment, store: Store, exp_id: ExperimentId, kind: Kind, skipped: set[str]
) -> list[Cell]:
    """Auto repetitions: the cells whose 95% interval is still wider than ci_target."""
    e = experiment.spec.experiment
    assert kind.metric is not None
    more = []
    for cell in experiment.cells:
        if cell.id in skipped:
            continue
        values = store_experiments.metric_values(store, exp_id, cell.id, kind.metric)
        if len(values) >= e.max_repetitions:
            continue
        if len(values) < 2:
            more.append(cell)
            continue
        half = summarize(values).half_width
        if half is None or half > e.ci_target:
            more.append(cell)
    return more


def _isolate(drop_caches: bool, settle: float) -> str | None:
    """Before a run: flush dirty pages, drop the page cache (root only), and let things settle.

    Returns why the page cache could not be dropped, if it could not.
    """
    os.sync()
    failed = None
    if drop_caches:
        try:
            DROP_CACHES.write_text("3\n")
        except OSError as exc:
            failed = exc.strerror or str(exc)
    if settle:
        time.sleep(settle)
    return failed


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
