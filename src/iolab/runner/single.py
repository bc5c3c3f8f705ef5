"""Recording runs: a single command (``iolab disk``, ``iolab populate``) is a one-cell experiment.

:func:`record` is the one path every run takes, from a single command or an experiment file:
the run is recorded as running before the work starts and finished in one transaction with all
its results: done, failed (with the reason) or aborted (Ctrl-C), keeping what was measured.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from iolab.errors import IolabError
from iolab.probes.recorder import publishing
from iolab.redaction import redact
from iolab.results import CellId, ExperimentId, RunId, RunOutcome, RunStatus, cell_id
from iolab.store import Store
from iolab.store.live import ChunkWriter
from iolab.system.snapshot import capture
from iolab.testbed import throttle_for


@dataclass(frozen=True)
class CommandRun:
    name: str  # experiment name shown in listings, e.g. "disk /mnt/ssd"
    workload: str
    params: dict[str, Any]
    roles: Mapping[str, Path]  # role -> path, for the environment snapshot
    versions: Mapping[str, str]


def record(
    store: Store,
    experiment: ExperimentId,
    cell: CellId,
    repetition: int,
    roles: Mapping[str, Path],
    versions: Mapping[str, str],
    body: Callable[[RunOutcome], None],
    claimed: RunId | None = None,
) -> tuple[RunId, RunOutcome]:
    """Record and run ``body``; the outcome is stored however the body ends, then re-raised.

    ``claimed``: the run's row, already taken by :meth:`Store.claim_run` (an experiment's
    runs); without it the run is recorded as running now. When a path of the run is on a
    testbed device with limits, the body runs inside the testbed's cgroup (and so does every
    process it starts). A recorder in the body flushes its series to the store as it records
    (:mod:`iolab.store.live`), for ``iolab serve``.
    """
    if claimed is None:
        env_id = store.save_environment(capture(roles, versions))
        run_id = store.start_run(experiment, cell, repetition, env_id)
    else:
        run_id = claimed
    outcome = RunOutcome(RunStatus.RUNNING)
    try:
        if claimed is not None:  # the row exists: whatever fails from here finishes it
            store.start_claimed(run_id, store.save_environment(capture(roles, versions)))
        # a testbed device's limits apply to the run; its probes' series are flushed live
        with throttle_for(roles.values()), publishing(ChunkWriter(store.path, run_id)):
            body(outcome)
        outcome.status = RunStatus.DONE
    except KeyboardInterrupt:
        outcome.status = RunStatus.ABORTED
        outcome.error = "interrupted"
        raise
    except IolabError as exc:
        outcome.status = RunStatus.FAILED
        outcome.error = redact(str(exc))
        raise
    except Exception as exc:
        outcome.status = RunStatus.FAILED
        outcome.error = redact(f"internal error: {exc!r}")
        raise
    finally:
        store.finish_run(run_id, outcome)
    return run_id, outcome


def execute(
    store: Store, spec: CommandRun, body: Callable[[RunOutcome], None]
) -> tuple[RunId, RunOutcome]:
    """A single command: its own experiment with one cell and one run."""
    store.reap_stale()
    experiment = store.create_experiment(
        spec.name, "command", {"workload": spec.workload, **spec.params}
    )
    cell = cell_id({"workload": spec.workload, **spec.params})
    store.ensure_cell(experiment, cell, spec.workload, spec.params)
    return record(store, experiment, cell, 1, spec.roles, spec.versions, body)
