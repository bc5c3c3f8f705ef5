"""Listing experiments for browsing (``iolab serve``): one row each, filtered in SQL.

Filters: a workload (``disk``, ``populate``, ``tpch``), an engine (a cell's ``engine``
parameter), a device (text in the storage part of a run's environment: a device name, model or
filesystem), a host (a run's environment's host name), and dates (the experiment's creation
day, ``YYYY-MM-DD``, both ends included). Empty filters match everything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

from iolab.errors import BadInput
from iolab.results import ExperimentId
from iolab.store.database import Store

_DAY = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")


@dataclass(frozen=True)
class Filters:
    workload: str = ""
    engine: str = ""
    device: str = ""
    host: str = ""
    since: str = ""  # YYYY-MM-DD
    until: str = ""

    def __post_init__(self) -> None:
        for field in ("since", "until"):
            value = getattr(self, field)
            if value and not (_DAY.match(value) and _is_day(value)):
                raise BadInput(field, value, "give a day as YYYY-MM-DD, e.g. 2026-11-24")


def _is_day(text: str) -> bool:
    try:
        date.fromisoformat(text)
    except ValueError:  # 2026-02-30
        return False
    return True


@dataclass(frozen=True)
class ExperimentRow:
    id: ExperimentId
    name: str
    kind: str  # experiment (a file's) or command (one run of iolab disk, populate, tpch)
    created_at: str
    workloads: str  # comma-separated
    engines: str
    hosts: str
    cells: int
    done: int
    failed: int  # failed or aborted
    running: int
    last: str | None  # when its last run ended (or started, while it runs)


def experiments(
    store: Store, filters: Filters = Filters(), limit: int = 500
) -> list[ExperimentRow]:
    """The experiments matching ``filters``, newest first (at most ``limit``)."""
    where, args = ["1"], []
    if filters.workload:
        where.append(
            "EXISTS (SELECT 1 FROM cells c WHERE c.experiment_id = e.id AND c.workload = ?)"
        )
        args.append(filters.workload)
    if filters.engine:
        where.append(
            "EXISTS (SELECT 1 FROM cells c WHERE c.experiment_id = e.id"
            " AND json_extract(c.params, '$.engine') = ?)"
        )
        args.append(filters.engine)
    if filters.host:
        where.append(
            "EXISTS (SELECT 1 FROM runs r JOIN environments v ON v.id = r.env_id"
            " WHERE r.experiment_id = e.id AND json_extract(v.data, '$.hostname') = ?)"
        )
        args.append(filters.host)
    if filters.device:
        where.append(
            "EXISTS (SELECT 1 FROM runs r JOIN environments v ON v.id = r.env_id"
            " WHERE r.experiment_id = e.id"
            " AND instr(lower(json_extract(v.data, '$.storage')), lower(?)) > 0)"
        )
        args.append(filters.device)
    if filters.since:
        where.append("substr(e.created_at, 1, 10) >= ?")
        args.append(filters.since)
    if filters.until:
        where.append("substr(e.created_at, 1, 10) <= ?")
        args.append(filters.until)
    rows = store.conn.execute(
        "SELECT e.id, e.name, e.kind, e.created_at,"
        " (SELECT group_concat(DISTINCT c.workload) FROM cells c WHERE c.experiment_id = e.id),"
        " (SELECT group_concat(DISTINCT json_extract(c.params, '$.engine')) FROM cells c"
        "  WHERE c.experiment_id = e.id),"
        " (SELECT group_concat(DISTINCT json_extract(v.data, '$.hostname')) FROM runs r"
        "  JOIN environments v ON v.id = r.env_id WHERE r.experiment_id = e.id),"
        " (SELECT COUNT(*) FROM cells c WHERE c.experiment_id = e.id),"
        " (SELECT COUNT(*) FROM runs r WHERE r.experiment_id = e.id AND r.status = 'done'),"
        " (SELECT COUNT(*) FROM runs r WHERE r.experiment_id = e.id"
        "  AND r.status IN ('failed', 'aborted')),"
        " (SELECT COUNT(*) FROM runs r WHERE r.experiment_id = e.id AND r.status = 'running'),"
        " (SELECT MAX(COALESCE(r.ended_at, r.started_at)) FROM runs r"
        "  WHERE r.experiment_id = e.id)"
        f" FROM experiments e WHERE {' AND '.join(where)} ORDER BY e.id DESC LIMIT ?",
        [*args, limit],
    )
    return [
        ExperimentRow(
            ExperimentId(int(r[0])),
            str(r[1]),
            str(r[2]),
            str(r[3]),
            r[4] or "",
            r[5] or "",
            r[6] or "",
            int(r[7]),
            int(r[8]),
            int(r[9]),
            int(r[10]),
            r[11],
        )
        for r in rows
    ]


def runs_of(store: Store, experiment: ExperimentId) -> list[tuple[int, str, int, str, str | None]]:
    """An experiment's runs: (id, cell, repetition, status, started_at), in run order."""
    return [
        (int(r[0]), str(r[1]), int(r[2]), str(r[3]), r[4])
        for r in store.conn.execute(
            "SELECT id, cell_id, repetition, status, started_at FROM runs"
            " WHERE experiment_id = ? ORDER BY id",
            (experiment,),
        )
    ]


def fingerprint(store: Store) -> tuple[object, ...]:
    """What changes whenever a run is added, started, finished or removed anywhere in the
    store: the runs' count, newest id, last end time, and how many are running and done."""
    row = store.conn.execute(
        "SELECT COUNT(*), MAX(id), MAX(ended_at), SUM(status = 'running'),"
        " SUM(status = 'done') FROM runs"
    ).fetchone()
    return tuple(row)
