"""A verdict is part of the run (issue 46 item 0): computed when the run is stored, against
the `iolab disk` runs that had finished by then, and kept with the ids of those it used; a disk
run measured later never rewrites it; ``results show --with-disk`` recomputes it and says so.

Issue 46: a sysbench run read `cpu`; after a one-pass `disk --profile real`, `results show` of
the same run read `wal-device ... (disk run 58)`. Each run here goes through the results
database as the runner stores it (:func:`iolab.runner.single.commit`) and back."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from iolab import report
from iolab.analysis import diagnosis as dx
from iolab.errors import BadInput
from iolab.probes.data import ProbeData
from iolab.report import why
from iolab.report.why import run_diagnosis, show_lines
from iolab.results import (
    CellId,
    DiskPass,
    ExperimentId,
    Latency,
    RunId,
    RunOutcome,
    RunStatus,
)
from iolab.runner.single import Executed, commit
from iolab.store import Store, open_readonly, open_store, verdicts
from iolab.store import experiments as store_experiments
from tests.unit.cli import iolab
from tests.unit.test_diagnosis_stored import SPREAD, device, host, pg_waits, probes
from tests.unit.test_report_build import DISK_ENV, _pass, seed

# the run's WAL device did 300 write IOPS, busy 35 %, while its sessions waited on the WAL 40 %
# of their time: against a disk run that measured 10,000 write IOPS the device was far from
# its limit (none singled out); against one that measured 310, it was at it (wal-device)
FAST, SLOW = 10_000.0, 310.0
RUN_ENV = {"storage": {"data": {"path": "/srv/db", "device": {"name": "vda"}}}}


def run_probes() -> ProbeData:
    return probes(device("vda", "data+wal", 35), host(40), waits=pg_waits(**SPREAD))


def disk_pass(n: int, iops: float) -> DiskPass:
    return DiskPass(
        test="RND4K Q32T1 write",
        rw="randwrite",
        bs=4096,
        qd=32,
        threads=1,
        pass_no=n,
        seconds=5.0,
        mbps=500.0,  # sequential enough: the IOPS are the limit
        iops=iops,
        lat=Latency(900.0, 850.0, 2000.0, 4000.0),
    )


def disk_run(store: Store, iops: float, ended: str, device: str = "vda") -> int:
    """An `iolab disk` run of ``device`` that measured ``iops`` write IOPS, ended at ``ended``."""
    exp = store.create_experiment("disk run", "command", {"workload": "disk"})
    cell = CellId("disk000000000000")
    store.ensure_cell(exp, cell, "disk", {"kind": "disk", "path": "/srv"})
    env = {"storage": {"target": {"path": "/srv", "device": {"name": device}}}}
    run = store.start_run(exp, cell, 1, store.save_environment(env))
    passes = [disk_pass(n, iops) for n in range(3)]
    store.finish_run(run, RunOutcome(RunStatus.DONE, {}, disk_passes=passes), ended)
    return int(run)


def populate_run(
    store: Store, ended: str, *, settle: bool = True, exp: ExperimentId | None = None
) -> int:
    """A populate run on vda, ended at ``ended``: committed as the runner commits it
    (``settle``), or as a run stored before verdicts were kept (no verdict with it)."""
    if exp is None:
        exp = store.create_experiment("populate run", "command", {"workload": "populate"})
    cell = CellId("populate00000000")
    params = {"kind": "populate", "engine": "postgres", "connections": 4}
    store.ensure_cell(exp, cell, "populate", params)
    run = store.start_run(exp, cell, 1, None)
    summary = {"rows_per_second": 900.0, "rows": 9000, "elapsed_seconds": 10.0}
    outcome = RunOutcome(RunStatus.DONE, summary, probes=run_probes())
    if settle:
        commit(store, run, Executed(outcome, RUN_ENV, "2026-11-27T09:59:00+00:00", ended))
    else:
        store.start_claimed(run, store.save_environment(RUN_ENV))
        store.finish_run(run, outcome, ended)
    return int(run)


def shown(store: Store, run: int) -> list[str]:
    d = run_diagnosis(store, store.run(run))
    assert d is not None
    return show_lines(d)


def test_a_disk_run_measured_later_does_not_rewrite_a_stored_verdict(store: Store) -> None:
    fast = disk_run(store, FAST, "2026-11-27T09:00:00+00:00")
    run = populate_run(store, "2026-11-27T10:00:00+00:00")
    before = shown(store, run)
    assert before[0] == "[bold]limited by none singled out (candidates: wal-device or cpu)[/]"
    kept = verdicts.of_run(store, store.run(run))
    assert (kept.basis, dict(kept.disk_runs)) == ("stored", {"vda": fast})
    # the one-pass disk run, measured after the run: the newest disk run of vda
    slow = disk_run(store, SLOW, "2026-11-27T11:00:00+00:00")
    assert shown(store, run) == before
    assert dict(verdicts.of_run(store, store.run(run)).disk_runs) == {"vda": fast}
    # recomputed on request against the slow one: it reads wal-device, and says where from
    again = verdicts.compute(store, store.run(run), [store.run(slow)])
    assert again.basis == "recomputed"
    assert again.diagnosis is not None
    assert again.diagnosis.line == "limited by wal-device (40% of session time)"
    assert (
        f"97% of the best write IOPS measured (the best test of iolab disk run {slow})"
        in " ".join(again.diagnosis.sentences())
    )
    assert again.origin() == (
        f"verdict recomputed now against disk run {slow} (vda) (--with-disk); not stored"
    )
    # ... which changes nothing kept
    assert shown(store, run) == before


def test_the_verdict_is_computed_against_the_disk_runs_finished_by_the_runs_end(
    store: Store,
) -> None:
    """A disk run that ended after the run (stored before it was committed, a fleet host's
    run committed late) was not there when the run ended: not used."""
    slow = disk_run(store, SLOW, "2026-11-27T09:00:00+00:00")
    disk_run(store, FAST, "2026-11-27T10:30:00+00:00")  # ended after the run, stored first
    run = populate_run(store, "2026-11-27T10:00:00+00:00")
    kept = verdicts.of_run(store, store.run(run))
    assert kept.diagnosis is not None
    assert kept.diagnosis.limit == dx.WAL
    assert dict(kept.disk_runs) == {"vda": slow}
    assert f"(the best test of iolab disk run {slow})" in " ".join(kept.diagnosis.sentences())


def test_a_run_stored_before_verdicts_were_kept_gets_one_on_first_read(store: Store) -> None:
    fast = disk_run(store, FAST, "2026-11-27T09:00:00+00:00")
    run = populate_run(store, "2026-11-27T10:00:00+00:00", settle=False)
    slow = disk_run(store, SLOW, "2026-11-27T11:00:00+00:00")  # before the first read
    assert store.conn.execute("SELECT COUNT(*) FROM verdicts WHERE run_id = ?", (run,)).fetchone()[
        0
    ] == (0)
    first = verdicts.of_run(store, store.run(run))
    assert first.basis == "first read"
    assert dict(first.disk_runs) == {"vda": fast}  # not the slow one, measured after its end
    assert first.diagnosis is not None and first.diagnosis.limit == dx.NONE
    assert first.origin().startswith("verdict computed on first read (")
    disk_run(store, SLOW / 2, "2026-11-27T12:00:00+00:00", "vda")
    assert verdicts.of_run(store, store.run(run)) == first  # fixed since
    assert slow not in verdicts.of_run(store, store.run(run)).disk_runs.values()


def test_a_read_only_database_computes_the_same_verdict_without_keeping_it(
    tmp_path: Path,
) -> None:
    """`iolab serve` opens the database read-only: a run without a kept verdict is judged by
    the same rule, nothing is written."""
    path = tmp_path / "results.db"
    with open_store(path) as store:
        fast = disk_run(store, FAST, "2026-11-27T09:00:00+00:00")
        run = populate_run(store, "2026-11-27T10:00:00+00:00", settle=False)
        disk_run(store, SLOW, "2026-11-27T11:00:00+00:00")
    with open_readonly(path) as store:
        seen = verdicts.of_run(store, store.run(run))
        assert seen.basis == "unsaved"
        assert dict(seen.disk_runs) == {"vda": fast}
        assert seen.diagnosis is not None and seen.diagnosis.limit == dx.NONE
    with open_store(path, create=False) as store:
        count = store.conn.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0]
        assert count == 0
        assert verdicts.of_run(store, store.run(run)).diagnosis == seen.diagnosis


def test_a_kept_verdict_reads_back_byte_for_byte(store: Store) -> None:
    """Every number and sentence as computed: candidates, evidence groups, notes, NaN."""
    d = dx.Diagnosis(
        dx.NONE,
        None,
        (),
        (
            dx.Candidate(
                dx.WAL,
                0.4,
                (
                    dx.Evidence("wal.busy", 35.0, "%", "busy 35 %", "device vda"),
                    dx.Evidence("wal.queue", float("nan"), "requests", "queue nan", "device vda"),
                ),
            ),
            dx.Candidate(dx.CPU, None, ()),
        ),
        ("a note",),
    )
    back = dx.Diagnosis.from_record(json.loads(json.dumps(d.record())))
    assert show_lines(back) == show_lines(d)
    assert back.as_json() == d.as_json()
    assert back.candidates[0].evidence[1].group == "device vda"


def test_results_show_with_disk_recomputes_and_says_so(store: Store) -> None:
    fast = disk_run(store, FAST, "2026-11-27T09:00:00+00:00")
    run = populate_run(store, "2026-11-27T10:00:00+00:00")
    slow = disk_run(store, SLOW, "2026-11-27T11:00:00+00:00")
    db = str(store.path)
    plain = iolab("results", "show", str(run), "--results", db)
    assert plain.code == 0, plain.stderr
    assert "limited by none singled out (candidates: wal-device or cpu)" in plain.stdout
    origin = re.search(
        r"verdict stored with the run \(([^)]+)\), against disk run (\d+)", plain.stdout
    )
    assert origin is not None and int(origin.group(2)) == fast
    again = iolab("results", "show", str(run), "--results", db, "--with-disk", str(slow))
    assert again.code == 0, again.stderr
    assert "limited by wal-device (40% of session time)" in again.stdout
    assert f"verdict recomputed now against disk run {slow} (vda) (--with-disk); not stored" in (
        " ".join(again.stdout.split())
    )
    assert "the verdict kept with the run: limited by none singled out" in again.stdout
    doc = json.loads(iolab("results", "show", str(run), "--results", db, "--json").stdout)
    assert doc["verdict"]["basis"] == "stored"
    assert doc["verdict"]["disk_runs"] == {"vda": fast}
    assert doc["diagnosis"]["limit"] == "none"
    # the same output again: nothing of --with-disk was kept
    assert iolab("results", "show", str(run), "--results", db).stdout == plain.stdout


@pytest.mark.parametrize("given", ["0", "999"])
def test_with_disk_names_a_stored_disk_run(store: Store, given: str) -> None:
    run = populate_run(store, "2026-11-27T10:00:00+00:00")
    r = iolab("results", "show", str(run), "--results", str(store.path), "--with-disk", given)
    assert r.code == 2
    assert r.error_lines == [r.error_lines[0]]
    assert "--with-disk" in r.error_lines[0] and given in r.error_lines[0]


def test_with_disk_refuses_a_run_that_is_not_a_disk_run_or_of_another_device(
    store: Store,
) -> None:
    run = populate_run(store, "2026-11-27T10:00:00+00:00")
    other = disk_run(store, SLOW, "2026-11-27T11:00:00+00:00", device="nvme0n1")
    with pytest.raises(BadInput, match="give the number of an `iolab disk` run"):
        verdicts.disk_run(store, run)
    with pytest.raises(BadInput) as found:
        verdicts.compute(store, store.run(run), [store.run(other)])
    assert str(found.value).endswith(
        f"give an `iolab disk` run that measured a device of run {run} (vda); run {other} "
        "measured nvme0n1"
    )
    r = iolab("results", "show", str(run), "--results", str(store.path), "--with-disk", str(other))
    assert r.code == 2
    assert len(r.error_lines) == 1 and "--with-disk" in r.error_lines[0]


def test_a_stored_run_keeps_its_verdict_row_with_its_disk_run_ids(store: Store) -> None:
    fast = disk_run(store, FAST, "2026-11-27T09:00:00+00:00")
    run = populate_run(store, "2026-11-27T10:00:00+00:00")
    (diagnosis, disk_runs, basis) = store.conn.execute(
        "SELECT diagnosis, disk_runs, basis FROM verdicts WHERE run_id = ?", (run,)
    ).fetchone()
    assert basis == "stored"
    assert json.loads(disk_runs) == {"vda": fast}
    assert json.loads(diagnosis)["limit"] == "none"
    assert verdicts.load(store, RunId(fast)) is None  # stored by finish_run alone: none yet


def test_the_report_and_serve_read_the_kept_verdicts(tmp_path: Path) -> None:
    """The issue: the demo's saved report cited disk run 1, serve disk run 29 for the same
    finding. The report (terminal, JSON, HTML) and serve's read-only store read one verdict."""
    path = tmp_path / "results.db"
    config = {
        "experiment": {"name": "kept"},
        "workload": {"kind": "populate", "rows": 9000},
        "matrix": {"engine": ["postgres"]},
        "matrix_keys": ["engine"],
    }
    with open_store(path) as store:
        fast = disk_run(store, FAST, "2026-11-27T09:00:00+00:00")
        exp = store.create_experiment("kept", "experiment", config)
        for minute in (0, 1):
            populate_run(store, f"2026-11-27T10:0{minute}:00+00:00", exp=exp)
        before = report.build(store, "kept")
        assert before.why is not None
        assert [c.text for c in before.why.cells] == ["none (2 of 2 runs)"]
        disk_run(store, SLOW, "2026-11-27T11:00:00+00:00")
        after = report.build(store, "kept")
        assert after.why is not None
        assert why.document(after.why) == why.document(before.why)
        assert why.html_section(after.why) == why.html_section(before.why)
        assert [t.plain for t in why.text(after.why)] == [t.plain for t in why.text(before.why)]
    with open_readonly(path) as store:  # iolab serve's
        served = report.build(store, exp)
        assert served.why is not None
        assert why.document(served.why) == why.document(before.why)
        kept = [verdicts.of_run(store, store.run(r.id)) for c in served.cells for r in c.runs]
        assert {(v.basis, v.disk_runs["vda"]) for v in kept} == {("stored", fast)}


def test_the_efficiency_figures_keep_the_disk_run_of_the_experiments_time(store: Store) -> None:
    """A report's efficiency compares with the newest disk run finished by the experiment's
    end: one measured since (here an hour later, 100 MB/s) changes no figure."""
    seed(store)
    first = report.build(store, "layouts")
    assert {e.limit.run_id for e in first.efficiency} == {1}
    env = store.save_environment(DISK_ENV)
    exp = store.create_experiment("disk /x", "command", {"workload": "disk", "profile": "real"})
    cell = CellId("e" * 16)
    store.ensure_cell(exp, cell, "disk", {"kind": "disk", "profile": "real", "path": "/x"})
    run = store.start_run(exp, cell, 1, env)
    later = (datetime.now(UTC) + timedelta(hours=1)).isoformat(timespec="seconds")
    passes = [_pass("SEQ1M Q1T1 write", "write", n, 100.0) for n in (1, 2)]
    store.finish_run(run, RunOutcome(RunStatus.DONE, {}, None, passes), later)
    again = report.build(store, "layouts")
    assert again.efficiency == first.efficiency
    # named with --with-disk, it is used: the explicit choice
    given = report.build(store, "layouts", with_disk=[int(run)])
    assert {e.limit.run_id for e in given.efficiency} == {int(run)}


def test_a_report_takes_the_disk_runs_of_its_time_then_the_first_since(store: Store) -> None:
    """Newest first those finished by the experiment's end; then, for a device none had
    measured by then, the first measured since (the report's caption says to add one):
    never a later one over an earlier one."""
    a = disk_run(store, FAST, "2026-11-27T08:00:00+00:00")
    b = disk_run(store, FAST, "2026-11-27T09:00:00+00:00")
    c = disk_run(store, FAST, "2026-11-27T11:00:00+00:00")
    d = disk_run(store, FAST, "2026-11-27T12:00:00+00:00")
    order = [int(r) for r, _ in store_experiments.disk_runs_for(store, "2026-11-27T10:00:00Z")]
    assert order == [b, a, c, d]
    assert [int(r) for r, _ in store_experiments.disk_runs_for(store, None)] == [d, c, b, a]
    early = store_experiments.disk_runs_for(store, "2026-11-27T07:00:00+00:00")
    assert [int(r) for r, _ in early] == [a, b, c, d]
