"""Runs that overlapped on one host (iolab/store/overlaps.py), found from what a real results
database holds: each run's start and end, its environment's host name, a --dsn run's server."""

from __future__ import annotations

from iolab.results import ExperimentId, RunId, RunOutcome, RunStatus
from iolab.store import Store
from iolab.store.database import GONE
from iolab.store.overlaps import Overlap, overlaps

DAY = "2026-11-25T15:00:"


def add_run(
    store: Store,
    experiment: ExperimentId,
    start: int,
    end: int,
    host: str = "db1",
    dsn: str | None = None,
    status: RunStatus = RunStatus.DONE,
    error: str | None = None,
    env: bool = True,
) -> RunId:
    """A run on ``host`` from second ``start`` to second ``end`` of 15:00 UTC."""
    params = {"n": start, "dsn": dsn}
    cell = f"c{start}-{host}-{dsn}"
    store.ensure_cell(experiment, cell, "populate", params)  # type: ignore[arg-type]
    env_id = store.save_environment({"hostname": host}) if env else None
    run = store.start_run(experiment, cell, 1, env_id)  # type: ignore[arg-type]
    store.finish_run(run, RunOutcome(status, error=error), f"{DAY}{end:02d}+00:00")
    with store.transaction() as c:
        c.execute("UPDATE runs SET started_at = ? WHERE id = ?", (f"{DAY}{start:02d}+00:00", run))
    return run


def test_runs_on_one_host_at_once_are_found_both_ways(store: Store) -> None:
    exp = store.create_experiment("e", "experiment", {})
    other = store.create_experiment("populate sqlite", "command", {})
    a = add_run(store, exp, 0, 10)
    b = add_run(store, exp, 5, 20)
    c = add_run(store, other, 18, 30)
    alone = add_run(store, exp, 30, 40)  # starts when c ends: touching is not sharing
    add_run(store, other, 0, 40, host="db2")  # another machine
    add_run(store, other, 32, 35, status=RunStatus.ABORTED, error=GONE)  # its end is unknown
    add_run(store, other, 32, 35, env=False)  # claimed, never started
    found = overlaps(store, exp)
    assert found == [
        Overlap(a, b, "e", "db1", f"{DAY}05+00:00", f"{DAY}10+00:00"),
        Overlap(b, a, "e", "db1", f"{DAY}05+00:00", f"{DAY}10+00:00"),
        Overlap(b, c, "populate sqlite", "db1", f"{DAY}18+00:00", f"{DAY}20+00:00"),
    ]
    assert alone not in {o.run for o in found}
    assert [o.run for o in overlaps(store, other)] == [c]


def test_dsn_runs_from_two_machines_on_one_server_overlap(store: Store) -> None:
    exp = store.create_experiment("e", "experiment", {})
    mine = add_run(store, exp, 0, 10, host="client1", dsn="postgresql://u@db9:5433/x")
    theirs = add_run(store, exp, 4, 12, host="client2", dsn="postgresql://u@db9:5433/x")
    add_run(store, exp, 0, 10, host="client3", dsn="postgresql://u@db8/x")  # another server
    add_run(store, exp, 0, 10, host="client4", dsn="postgresql:///x?host=/run/postgresql")
    assert [(o.run, o.other, o.host) for o in overlaps(store, exp)] == [
        (mine, theirs, "db9:5433"),
        (theirs, mine, "db9:5433"),
    ]
