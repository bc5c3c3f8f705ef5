"""A run's checked verdict, kept beside its verdict (table ``checked_verdicts``; docs/diagnosis.md,
"The check"): what ``iolab why RUN --check`` found when it ran the run again as it was and with
its limit relieved. ``results show``, the report's Why and serve read the newest with
:func:`newest`."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from iolab.analysis.whycheck import Check, Step
from iolab.results import ExperimentId, RunId
from iolab.store.database import Store

KIND = "check"  # the kind of the experiment that holds a check's re-runs


def save(store: Store, check: Check) -> None:
    """Keep ``check`` with its run."""
    d = check.document()
    tried = [s for s in check.steps if isinstance(s, Step)]
    with store.transaction() as c:
        c.execute(
            "INSERT INTO checked_verdicts (run_id, limit_checked, outcome, moved, ratio, ci_low,"
            " ci_high, base_runs, relieved_runs, sentence, steps, experiment_id, checked_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                check.run,
                check.limit,
                check.outcome,
                check.moved,
                d["ratio"],
                d["ci_low"],
                d["ci_high"],
                json.dumps([r for s in tried for r in s.base_runs]),
                json.dumps([r for s in tried for r in s.relieved_runs]),
                check.line,
                json.dumps(d["steps"], sort_keys=True),
                check.experiment_id,
                check.checked_at,
            ),
        )


def newest(store: Store, run: RunId) -> Check | None:
    """The newest check of ``run`` (None: never checked, or a database from before checks)."""
    found = of_runs(store, [run])
    return found.get(run)


def of_runs(store: Store, runs: Sequence[RunId]) -> dict[RunId, Check]:
    """The newest check of each of ``runs`` that has one."""
    if not runs:
        return {}
    marks = ",".join("?" * len(runs))
    try:
        rows = store.conn.execute(
            "SELECT run_id, limit_checked, steps, experiment_id, checked_at FROM"
            f" checked_verdicts WHERE run_id IN ({marks}) ORDER BY id",
            list(runs),
        ).fetchall()
    except sqlite3.OperationalError:  # a read-only database from before the table
        return {}
    out: dict[RunId, Check] = {}
    for run_id, limit, steps, exp, at in rows:
        out[RunId(run_id)] = Check.from_document(
            {
                "run": run_id,
                "limit": limit,
                "steps": json.loads(steps),
                "checked_at": at,
                "experiment_id": exp,
            }
        )
    return out


def check_experiment(
    store: Store, run: RunId, name: str, config: dict[str, object]
) -> ExperimentId:
    """A fresh experiment of kind ``check`` for the re-runs of one check of ``run``."""
    return store.create_experiment(name, KIND, {"check_of": int(run), **config})
