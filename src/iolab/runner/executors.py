"""Where an experiment's runs execute: the one-cell path, and executors that carry it out.

:func:`execute_cell` is what one claimed run of a cell does wherever it runs: the workload kind
prepares it, the machine is isolated (sync, drop caches, settle), the body runs under the
experiment's timeout, and an :class:`~iolab.runner.single.Executed` comes back for the driver
to commit. An executor decides where that happens: :class:`LocalExecutor` runs it here, one run
at a time; a fleet (:mod:`iolab.fleet.executor`) runs the same function on a host of the fleet.
The runner (:mod:`iolab.runner.experiment`) claims, submits, waits and commits through this
interface only, so the local path and the fleet path are one path.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from iolab.config.experiment import Cell, IsolationSection
from iolab.errors import RunFailed
from iolab.events import Event, EventSink
from iolab.probes.recorder import LiveSink
from iolab.results import RunId
from iolab.runner import hostlock
from iolab.runner.single import Executed, Started, execute_run
from iolab.workloads.interface import Workload

Resolve = Callable[[str], Path]
DROP_CACHES = Path("/proc/sys/vm/drop_caches")


class RunTimeout(RunFailed):
    """A run went past ``experiment.timeout``."""


class Deadline:
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


def isolate(drop_caches: bool, settle: float) -> str | None:
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


def execute_cell(
    kind: Workload,
    params: Mapping[str, Any],
    resolve: Resolve,
    events: EventSink,
    isolation: IsolationSection,
    timeout: float | None,
    *,
    measured: bool = True,
    started: Started | None = None,
) -> Executed:
    """One run of a cell, here: prepare, isolate, run under the timeout. What the kind's
    prepare raises propagates (nothing of the run ran); what ends the body is in the result.
    After a measured run, the file's cool-down (``isolation.cooldown_seconds``) is waited.
    From the isolation to the end of the cool-down the run holds the host's lock
    (:mod:`iolab.runner.hostlock`): another run on this host waits for it."""
    deadline = Deadline(timeout)

    def sink(event: Event) -> None:
        deadline.check()
        events(event)

    body, roles, versions = kind.prepare(params, resolve, sink)
    with hostlock.turn(events) as waited:  # one run at a time on this host
        cannot = isolate(isolation.drop_caches, isolation.settle_seconds)
        with deadline.armed():
            executed = execute_run(roles, versions, body, started)
        if measured and isolation.cooldown_seconds:
            time.sleep(isolation.cooldown_seconds)
    executed.cannot_drop = cannot
    executed.waited = waited
    return executed


@dataclass(frozen=True)
class Task:
    """One run handed to an executor: a claimed run (``run_id``), or a warm-up (None)."""

    cell: Cell
    run_id: RunId | None
    repetition: int
    host: str | None = None  # where it runs (set by the executor; None: here)

    @property
    def measured(self) -> bool:
        return self.run_id is not None

    def on(self, host: str | None) -> Task:
        return replace(self, host=host)


class Executor(Protocol):
    """Where runs execute. The runner claims a run, :meth:`submit`s it when :meth:`ready`
    says a host can take it, and commits what :meth:`wait` hands back."""

    @property
    def busy(self) -> bool:
        """Runs are in flight."""

    @property
    def width(self) -> int:
        """How many runs can be in flight at once (hosts): for the time left."""

    def ready(self, cell: Cell) -> bool:
        """A run of ``cell`` could start now."""

    def unreachable(self, cell: Cell) -> str | None:
        """Why no run of ``cell`` can ever start here (its host left the fleet), or None."""

    def submit(self, task: Task) -> Task:
        """Start the run; returns the task with its host. A local executor may run it at
        once; what the kind's prepare raises there propagates."""

    def wait(self) -> list[tuple[Task, Executed]]:
        """Block until at least one run in flight ends; those that ended."""

    def close(self) -> list[Task]:
        """Stop what is in flight (the driver is stopping); the tasks it stopped."""


class LocalExecutor:
    """Every run here, one at a time: :meth:`submit` runs it to its end."""

    def __init__(
        self,
        kind: Workload,
        isolation: IsolationSection,
        timeout: float | None,
        resolve: Resolve,
        events: EventSink,
        started: Callable[[RunId, dict[str, Any]], LiveSink | None],
    ) -> None:
        self.kind = kind
        self.isolation = isolation
        self.timeout = timeout
        self.resolve = resolve
        self.events = events
        self.started = started  # the driver records a run's environment as it starts
        self._ended: list[tuple[Task, Executed]] = []

    @property
    def busy(self) -> bool:
        return bool(self._ended)

    @property
    def width(self) -> int:
        return 1

    def ready(self, cell: Cell) -> bool:
        return not self._ended

    def unreachable(self, cell: Cell) -> str | None:
        return None

    def submit(self, task: Task) -> Task:
        run_id = task.run_id

        def started(environment: dict[str, Any]) -> LiveSink | None:
            return None if run_id is None else self.started(run_id, environment)

        executed = execute_cell(
            self.kind,
            task.cell.run_params,
            self.resolve,
            self.events,
            self.isolation,
            self.timeout,
            measured=task.measured,
            started=started,
        )
        self._ended.append((task, executed))
        return task

    def wait(self) -> list[tuple[Task, Executed]]:
        ended, self._ended = self._ended, []
        return ended

    def close(self) -> list[Task]:
        return []
