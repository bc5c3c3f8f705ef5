"""Recording runs: a single command (``iolab disk``, ``iolab populate``) is a one-cell experiment.

:func:`record` is the one path every run takes, from a single command or an experiment file:
the run is recorded as running before the work starts and finished in one transaction with all
its results: done, failed (with the reason) or aborted (Ctrl-C), keeping what was measured.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from iolab.errors import BadInput, IolabError, RunFailed
from iolab.events import EventSink, Warning
from iolab.probes.recorder import LiveSink, publishing
from iolab.redaction import redact
from iolab.results import CellId, ExperimentId, RunId, RunOutcome, RunStatus, cell_id
from iolab.runner import hostlock
from iolab.store import Store, verdicts
from iolab.store.live import ChunkWriter
from iolab.system.snapshot import capture
from iolab.testbed import error_marks, errors_note, throttle_for
from iolab.workloads.caps import caps_of


def command_name(
    what: str, params: Mapping[str, Any], dirs_given: bool = True, server: str | None = None
) -> str:
    """A single command's experiment name: what ran (``what``: the workload, its engine and
    what sizes it, e.g. ``tpcc postgres w1 c4``), then where, as KEY=VALUE words: ``server``
    (a --dsn's :attr:`~iolab.engines.external.ExternalTarget.words`), ``data=`` the data
    directories given (``dirs_given``; not iolab's scratch directory), ``files=`` above one,
    ``wal=``, ``temp=``, and the caps (``memory=``, ``cpus=``). Runs of one command on one
    layout share a name; each is its own experiment, told apart by its id. Never a ':' (a
    path's is a '.'): ``iolab compare`` reads ``EXPERIMENT:CELL``."""
    words = [what, *([server] if server else [])]
    if dirs_given and params.get("data_dirs"):
        words.append("data=" + ",".join(os.path.abspath(d) for d in params["data_dirs"]))
    if int(params.get("files") or 1) > 1:
        words.append(f"files={params['files']}")
    words += [
        f"{word}={os.path.abspath(params[key])}" for key, word in LAYOUT_WORDS if params.get(key)
    ]
    words += [f"{k}={v}" for k, v in caps_of(params).items()]
    return " ".join(words).replace(":", ".")


LAYOUT_WORDS = (("wal_dir", "wal"), ("temp_dir", "temp"))


@dataclass(frozen=True)
class CommandRun:
    name: str  # experiment name shown in listings (:func:`command_name`), e.g. "disk /mnt/ssd"
    workload: str
    params: dict[str, Any]
    roles: Mapping[str, Path]  # role -> path, for the environment snapshot
    versions: Mapping[str, str]


@dataclass
class Executed:
    """A run carried out, wherever it ran, not yet committed: what the driver records.

    Picklable (a fleet host sends it back to the driver), except ``failure``: the exception
    that ended the run, kept only where it ran so that a local caller re-raises it as it was
    (:meth:`portable` drops it, keeping its message in ``outcome.error`` and whether it was
    bad input in ``fatal``).
    """

    outcome: RunOutcome
    environment: dict[str, Any] | None  # None: capturing it failed (outcome.error says why)
    started_at: str
    ended_at: str = ""
    failure: BaseException | None = None
    fatal: bool = False  # the body refused its input (BadInput): wrong for every run
    cannot_drop: str | None = None  # why the page cache could not be dropped before the run
    env_saved: bool = False  # the local path saved the environment when the run started
    began: float = 0.0  # when it started and ended where it ran, epoch seconds (fan-out costs)
    finished: float = 0.0
    warnings: list[str] = field(default_factory=list)  # said on another host, for the driver
    waited: float = 0.0  # seconds it waited for the host's lock (another run held it)

    def portable(self) -> Executed:
        """The same, fit to cross to another process (the failure kept as text)."""
        return replace(self, failure=None, fatal=self.fatal or isinstance(self.failure, BadInput))


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


# a run has started: record its environment (given) and say where its series go live
Started = Callable[[dict[str, Any]], LiveSink | None]


def execute_run(
    roles: Mapping[str, Path],
    versions: Mapping[str, str],
    body: Callable[[RunOutcome], None],
    started: Started | None = None,
) -> Executed:
    """Capture the environment and run ``body``; never raises what ends the body (not even
    Ctrl-C): the outcome says done, failed (with the reason) or aborted, keeping what was
    measured, and ``failure`` holds the exception for the caller to re-raise after it has
    committed the run. ``started`` gets the environment before the body starts (the local
    path records it at once, so that a crash leaves it with the run) and says where the
    run's probes flush their series as they record (for ``iolab serve``; None: nowhere, as on
    a fleet host). When a path of the run is on a testbed device with limits, the body runs
    inside the testbed's cgroup (and so does every process it starts).
    """
    outcome = RunOutcome(RunStatus.RUNNING)
    done = Executed(outcome, None, _now(), began=time.time())
    marks: dict[str, int] = {}
    try:
        marks = error_marks(roles.values())
        done.environment = capture(roles, versions)
        live = None
        if started is not None:
            live = started(done.environment)
            done.env_saved = True
        # a testbed device's limits apply to the run; its probes' series are flushed live
        with throttle_for(roles.values()), publishing(live):
            body(outcome)
        outcome.status = RunStatus.DONE
    except KeyboardInterrupt as exc:
        outcome.status = RunStatus.ABORTED
        outcome.error = "interrupted"
        done.failure = exc
    except IolabError as exc:
        outcome.status = RunStatus.FAILED
        outcome.error = redact(str(exc))
        done.failure = exc
    except Exception as exc:
        outcome.status = RunStatus.FAILED
        outcome.error = redact(f"internal error: {exc!r}")
        done.failure = exc
    if isinstance(done.failure, IolabError) and not isinstance(done.failure, BadInput):
        _name_failing_devices(done, marks)
    done.ended_at = _now()
    done.finished = time.time()
    return done


def _name_failing_devices(done: Executed, marks: dict[str, int]) -> None:
    """A run that failed on a model device whose requests failed (a fault, a full backing
    file) or whose nbdkit or nbdfuse is gone says so: the engine's "disk I/O error" or
    "Read-only file system" alone does not name the device."""
    try:
        note = errors_note(marks)
    except (IolabError, OSError):
        return
    if note is None:
        return
    reason = f"{done.outcome.error}; {note}"
    done.outcome.error = redact(reason)
    failure = RunFailed(reason)
    failure.__cause__ = done.failure
    done.failure = failure


def commit(store: Store, run_id: RunId, executed: Executed) -> None:
    """Record a claimed run's outcome: its environment (unless saved when it started), its
    results, and then its verdict (:mod:`iolab.store.verdicts`: against the disk runs of its
    devices finished by its end, kept with the run so that a disk run measured later never
    rewrites it), in the store of the driver."""
    if not executed.env_saved:
        env = None if executed.environment is None else store.save_environment(executed.environment)
        store.start_claimed(run_id, env, executed.started_at)
    store.finish_run(run_id, executed.outcome, executed.ended_at or None)
    verdicts.settle(store, run_id)


def record(
    store: Store,
    experiment: ExperimentId,
    cell: CellId,
    repetition: int,
    roles: Mapping[str, Path],
    versions: Mapping[str, str],
    body: Callable[[RunOutcome], None],
    claimed: RunId | None = None,
    events: EventSink | None = None,
) -> tuple[RunId, RunOutcome]:
    """Record and run ``body`` here, holding the host's lock (:mod:`iolab.runner.hostlock`:
    another run on this host first ends; ``events`` hears that it waits); the outcome is
    stored however the body ends, then the exception that ended it is re-raised.

    ``claimed``: the run's row, already taken by :meth:`Store.claim_run` (an experiment's
    runs); without it the run is recorded as running when it starts.
    """
    run_id = claimed

    def started(environment: dict[str, Any]) -> LiveSink:
        nonlocal run_id
        env_id = store.save_environment(environment)
        if run_id is None:
            run_id = store.start_run(experiment, cell, repetition, env_id)
        else:
            store.start_claimed(run_id, env_id)
        return ChunkWriter(store.path, run_id)

    with hostlock.turn(events or (lambda _event: None)):
        executed = execute_run(roles, versions, body, started)
    if run_id is None:  # it failed before the run was recorded: nothing ran
        assert executed.failure is not None
        raise executed.failure
    commit(store, run_id, executed)
    if executed.failure is not None:
        raise executed.failure
    return run_id, executed.outcome


def said_killed(store: Store, events: EventSink) -> None:
    """Say the runs the store found killed at their memory cap (once each): their process,
    killed by the kernel, could not."""
    for run, error in store.killed_runs:
        events(Warning(f"run {run} was aborted: {error}"))
    store.killed_runs.clear()


def execute(
    store: Store,
    spec: CommandRun,
    body: Callable[[RunOutcome], None],
    events: EventSink | None = None,
) -> tuple[RunId, RunOutcome]:
    """A single command: its own experiment with one cell and one run (``events``: hears that
    it waits for the host, see :func:`record`)."""
    store.reap_stale()
    if events is not None:
        said_killed(store, events)
    experiment = store.create_experiment(
        spec.name, "command", {"workload": spec.workload, **spec.params}
    )
    cell = cell_id({"workload": spec.workload, **spec.params})
    store.ensure_cell(experiment, cell, spec.workload, spec.params)
    return record(store, experiment, cell, 1, spec.roles, spec.versions, body, events=events)
