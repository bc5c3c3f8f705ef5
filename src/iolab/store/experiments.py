"""Queries of the experiment runner: find an experiment again, and what its cells have done.

Kept apart from :mod:`iolab.store.database` (runs and their results) so that each module stays
about one thing; both work on the same :class:`~iolab.store.database.Store`.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from iolab.analysis.findings import metric_of
from iolab.errors import BadInput
from iolab.ownership import boot_id, process_alive
from iolab.results import MAX_ID, CellId, EnvId, ExperimentId, RunId, RunStatus, canonical_json
from iolab.store.database import Store

KIND = "experiment"  # experiments.kind of experiment files; single commands are 'command'


def find_or_create(store: Store, name: str, config: dict[str, Any]) -> tuple[ExperimentId, bool]:
    """The experiment of this name (its config updated), or a new one; True when it existed.

    One exclusive transaction: two drivers of one file started at once find the same one.
    """
    with store.transaction() as c:
        row = c.execute(
            "SELECT id FROM experiments WHERE name = ? AND kind = ? ORDER BY id DESC LIMIT 1",
            (name, KIND),
        ).fetchone()
        if row is None:
            cur = c.execute(
                "INSERT INTO experiments (name, kind, config, created_at) VALUES (?, ?, ?, ?)",
                (
                    name,
                    KIND,
                    canonical_json(config),
                    datetime.now(UTC).isoformat(timespec="seconds"),
                ),
            )
            return ExperimentId(int(cur.lastrowid or 0)), False
        c.execute(
            "UPDATE experiments SET config = ? WHERE id = ?", (canonical_json(config), row[0])
        )
    return ExperimentId(int(row[0])), True


def find(store: Store, name: str) -> ExperimentId | None:
    row = store.conn.execute(
        "SELECT id FROM experiments WHERE name = ? AND kind = ? ORDER BY id DESC LIMIT 1",
        (name, KIND),
    ).fetchone()
    return None if row is None else ExperimentId(int(row[0]))


def done_counts(store: Store, experiment: ExperimentId) -> Counter[str]:
    """Finished ('done') runs per cell id."""
    rows = store.conn.execute(
        "SELECT cell_id, COUNT(*) FROM runs WHERE experiment_id = ? AND status = 'done' "
        "GROUP BY cell_id",
        (experiment,),
    )
    return Counter({str(cell): int(n) for cell, n in rows})


def running_now(store: Store, experiment: ExperimentId) -> dict[str, tuple[int, ...]]:
    """The pid of the live iolab process (this boot, its pid alive) that took each run of a
    cell not yet ended, per cell."""
    boot = boot_id()
    rows = store.conn.execute(
        "SELECT cell_id, pid, boot_id FROM runs WHERE experiment_id = ? AND status = 'running'",
        (experiment,),
    )
    found: dict[str, list[int]] = {}
    for cell, pid, run_boot in rows:
        if run_boot == boot and pid is not None and process_alive(int(pid)):
            found.setdefault(str(cell), []).append(int(pid))
    return {cell: tuple(pids) for cell, pids in found.items()}


def metric_values(store: Store, experiment: ExperimentId, cell: CellId, key: str) -> list[float]:
    """One summary number of every done run of a cell, in run order: ``key`` a summary key or a
    dotted path into its tables (:func:`~iolab.analysis.findings.metric_of`)."""
    rows = store.conn.execute(
        "SELECT summary FROM runs WHERE experiment_id = ? AND cell_id = ? AND status = 'done' "
        "ORDER BY id",
        (experiment, cell),
    )
    out = []
    for (summary,) in rows:
        value = metric_of(json.loads(summary), key)
        if value is not None:
            out.append(value)
    return out


def mean_seconds(store: Store, experiment: ExperimentId) -> dict[str, float]:
    """Mean wall time of done runs per cell (from started/ended stamps): for ETAs."""
    rows = store.conn.execute(
        "SELECT cell_id, AVG(julianday(ended_at) - julianday(started_at)) * 86400 FROM runs "
        "WHERE experiment_id = ? AND status = 'done' GROUP BY cell_id",
        (experiment,),
    )
    return {str(cell): float(s) for cell, s in rows if s is not None}


def status_counts(store: Store, experiment: ExperimentId) -> dict[str, Counter[str]]:
    """Runs per cell id and status."""
    out: dict[str, Counter[str]] = {}
    for cell, status, n in store.conn.execute(
        "SELECT cell_id, status, COUNT(*) FROM runs WHERE experiment_id = ? "
        "GROUP BY cell_id, status",
        (experiment,),
    ):
        out.setdefault(str(cell), Counter())[str(status)] = int(n)
    return out


def config_of(store: Store, experiment: ExperimentId) -> dict[str, Any]:
    row = store.conn.execute(
        "SELECT config FROM experiments WHERE id = ?", (experiment,)
    ).fetchone()
    return dict(json.loads(row[0])) if row else {}


def name_of(store: Store, experiment: ExperimentId) -> str:
    """An experiment's name; BadInput naming the range when the store has no such id."""
    row = None  # an id beyond SQLite's integers names no experiment
    if 1 <= experiment <= MAX_ID:
        row = store.conn.execute(
            "SELECT name FROM experiments WHERE id = ?", (experiment,)
        ).fetchone()
    if row is None:
        (top,) = store.conn.execute("SELECT COALESCE(MAX(id), 0) FROM experiments").fetchone()
        raise BadInput("EXPERIMENT", experiment, f"experiments are numbered 1 to {top}")
    return str(row[0])


def find_any(store: Store, name: str) -> ExperimentId | None:
    """An experiment by name, of any kind (newest first)."""
    row = store.conn.execute(
        "SELECT id FROM experiments WHERE name = ? ORDER BY id DESC LIMIT 1", (name,)
    ).fetchone()
    return None if row is None else ExperimentId(int(row[0]))


@dataclass(frozen=True)
class Named:
    """An experiment as a person picks it: its id, its name and when it was made."""

    id: ExperimentId
    name: str
    created_at: str

    def describe(self, when: bool = True) -> str:
        """``4 'populate postgres' of 2026-11-27 13:40:19`` (local time; ``when``: with it)."""
        if not when:
            return f"{self.id} '{self.name}'"
        try:
            made = (
                datetime.fromisoformat(self.created_at).astimezone().strftime("%Y-%m-%d %H:%M:%S")
            )
        except ValueError:
            made = self.created_at
        return f"{self.id} '{self.name}' of {made}"


def named(store: Store, target: str) -> list[Named]:
    """Every experiment ``target`` names, oldest first: the one of that id when it is a number,
    and every experiment of that name (single commands make a new one for each run)."""
    rows = store.conn.execute(
        "SELECT id, name, created_at FROM experiments WHERE name = ? ORDER BY id", (target,)
    ).fetchall()
    text = target.strip()
    if text.isascii() and text.isdigit() and len(text) <= 19 and int(text) <= MAX_ID:
        rows += store.conn.execute(
            "SELECT id, name, created_at FROM experiments WHERE id = ? AND name != ?",
            (int(text), target),
        ).fetchall()
    found = [Named(ExperimentId(int(i)), str(n), str(c)) for i, n, c in rows]
    return sorted(found, key=lambda e: e.id)


SHOWN = 10  # experiments listed in an error that names what there is


def resolve(store: Store, target: str, shown: str | None = None) -> ExperimentId:
    """The one experiment ``target`` names (its name, or its id in the store); BadInput when it
    names none (listing the newest there are) or several (listing each: id, name, when), never
    a silent pick. ``shown``: what the person typed, when it is not ``target`` (a file)."""
    found = named(store, target)
    if len(found) == 1:
        return found[0].id
    given = target if shown is None else shown
    if found:
        raise BadInput(
            "EXPERIMENT",
            given,
            f"it names {len(found)} experiments in {store.path}; give one's id: "
            + "; ".join(e.describe() for e in found),
        )
    newest = [
        Named(ExperimentId(int(i)), str(n), str(c))
        for i, n, c in store.conn.execute(
            "SELECT id, name, created_at FROM experiments ORDER BY id DESC LIMIT ?", (SHOWN + 1,)
        )
    ]
    listed = "; ".join(e.describe(when=False) for e in newest[:SHOWN])
    more = " and older ones (`iolab results list`)" if len(newest) > SHOWN else ""
    raise BadInput(
        "EXPERIMENT",
        given,
        f"give an experiment file, name or id in {store.path}"
        + (f": {listed}{more}" if newest else " (it has no experiment yet)"),
    )


@dataclass(frozen=True)
class StoredRun:
    """One run of a cell as the store holds it; ``summary`` is the run's JSON summary."""

    id: RunId
    status: RunStatus
    summary: Mapping[str, Any]
    started_at: str | None = None
    error: str | None = None
    env_id: EnvId | None = None

    @property
    def done(self) -> bool:
        return self.status is RunStatus.DONE


@dataclass(frozen=True)
class StoredCell:
    """One cell of an experiment: its id, workload, resolved params and runs in run order."""

    id: CellId
    workload: str
    params: Mapping[str, Any]
    runs: tuple[StoredRun, ...]

    def last_failure(self) -> str:
        """Why the cell's last failed or aborted run failed (its error, else its status)."""
        failed = [r for r in self.runs if r.status in (RunStatus.FAILED, RunStatus.ABORTED)]
        return str(failed[-1].error or failed[-1].status.value) if failed else ""


def cells(store: Store, experiment: ExperimentId) -> list[StoredCell]:
    """Every cell of an experiment (in the order it was registered) with its runs."""
    found: dict[str, tuple[str, dict[str, Any], list[StoredRun]]] = {}
    for cell, workload, params in store.conn.execute(
        "SELECT id, workload, params FROM cells WHERE experiment_id = ? ORDER BY rowid",
        (experiment,),
    ):
        found[str(cell)] = (str(workload), json.loads(params), [])
    for run_id, cell, status, summary, started, error, env in store.conn.execute(
        "SELECT id, cell_id, status, summary, started_at, error, env_id FROM runs"
        " WHERE experiment_id = ? ORDER BY id",
        (experiment,),
    ):
        if str(cell) in found:
            found[str(cell)][2].append(
                StoredRun(
                    RunId(int(run_id)),
                    RunStatus(status),
                    json.loads(summary),
                    None if started is None else str(started),
                    None if error is None else str(error),
                    None if env is None else EnvId(str(env)),
                )
            )
    return [
        StoredCell(CellId(cell), workload, params, tuple(runs))
        for cell, (workload, params, runs) in found.items()
    ]


def experiment_names(store: Store) -> list[str]:
    """The names of the experiment files' experiments, sorted."""
    return [
        str(name)
        for (name,) in store.conn.execute(
            "SELECT DISTINCT name FROM experiments WHERE kind = ? ORDER BY name", (KIND,)
        )
    ]


def last_run_id(store: Store) -> int:
    """The highest run id (0 when there is no run)."""
    (top,) = store.conn.execute("SELECT COALESCE(MAX(id), 0) FROM runs").fetchone()
    return int(top)


def done_disk_runs(store: Store, by: str | None = None) -> list[tuple[RunId, EnvId | None]]:
    """Every finished `iolab disk` run (id, environment id), newest first; with ``by`` (an
    ISO time, a run's end) only those that had ended by then: what existed when that run
    ended, whatever was measured since."""
    limit = None if by is None else _utc(by)
    return [
        (RunId(int(run_id)), None if env_id is None else EnvId(str(env_id)))
        for run_id, env_id, ended in store.conn.execute(
            "SELECT r.id, r.env_id, r.ended_at FROM runs r JOIN cells c"
            " ON c.experiment_id = r.experiment_id AND c.id = r.cell_id"
            " WHERE c.workload = 'disk' AND r.status = 'done' ORDER BY r.id DESC"
        )
        if limit is None or (ended is not None and _utc(ended) <= limit)
    ]


def disk_runs_for(store: Store, by: str | None) -> list[tuple[RunId, EnvId | None]]:
    """The finished `iolab disk` runs in the order a report takes them for an experiment that
    ended at ``by`` (the first that measured a device is that device's): those finished by
    then, newest first, then those finished since, oldest first. A disk run measured later
    so never replaces a figure; it only supplies one that had none (a device measured after
    the experiment, as the report's caption suggests)."""
    before = done_disk_runs(store, by=by)
    if by is None:
        return before
    taken = {r for r, _ in before}
    return before + [r for r in reversed(done_disk_runs(store)) if r[0] not in taken]


def last_end(store: Store, experiment: ExperimentId) -> str | None:
    """When the experiment's last finished run ended (None: none has): what its report
    compares with `iolab disk` runs measured by then, not since."""
    ends = [
        str(t)
        for (t,) in store.conn.execute(
            "SELECT ended_at FROM runs WHERE experiment_id = ? AND status = 'done'"
            " AND ended_at IS NOT NULL",
            (experiment,),
        )
    ]
    return max(ends, key=_utc, default=None)


def _utc(iso: str) -> datetime:
    """A stored time; one without a zone is UTC (iolab writes UTC)."""
    t = datetime.fromisoformat(iso)
    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)
