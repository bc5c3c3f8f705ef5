"""A run's verdict, kept with the run (docs/diagnosis.md, "A verdict is part of the run").

:func:`compute` is the one place a verdict is made: :func:`iolab.analysis.diagnosis.diagnose`
of the run's probes, parameters, summary and environment, and of what `iolab disk` measured of
its devices: the newest disk run of each device that had finished when the run ended, or the
disk runs given (``results show --with-disk``). The runner stores a run's verdict right after
its results (:func:`settle`); a run stored before verdicts were kept gets its verdict on first
read, by the same rule (the disk runs finished by its end), and keeps it. Every reader
(``results show``, ``report``, ``compare``, ``serve``) reads it with :func:`of_run`: a disk
run measured later never changes it.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from iolab.analysis import diagnosis as dx
from iolab.analysis.disk import summarize as disk_summarize
from iolab.analysis.efficiency import device_key, disk_device
from iolab.errors import BadInput
from iolab.results import EnvId, RunId, canonical_json
from iolab.store import experiments as store_experiments
from iolab.store.database import RunRecord, Store, StoreFailed

READ = ("read", "randread")
WRITE = ("write", "randwrite")

# stored: computed when the run was stored; first read: a run stored before verdicts were
# kept; unsaved: computed for this read only (a run still running, a read-only database);
# recomputed: against the disk runs --with-disk named, never stored
Basis = Literal["stored", "first read", "unsaved", "recomputed"]


@dataclass(frozen=True)
class Verdict:
    """What limited a run (``diagnosis`` None: it recorded no probes), with the disk runs it
    was judged against (the run's device -> the `iolab disk` run whose best tests were that
    device's measured limits) and how and when it was computed."""

    diagnosis: dx.Diagnosis | None
    disk_runs: Mapping[str, int]
    basis: Basis
    computed_at: str

    def against(self) -> str:
        """``disk run 3 (vda)``, or that none was used."""
        if not self.disk_runs:
            return "no `iolab disk` run (none had measured its devices)"
        runs = ", ".join(f"disk run {r} ({dev})" for dev, r in sorted(self.disk_runs.items()))
        return runs

    def origin(self) -> str:
        """One line: when and against what this verdict was computed."""
        if self.basis == "stored":
            return f"verdict stored with the run ({self.computed_at}), against {self.against()}"
        if self.basis == "first read":
            return (
                f"verdict computed on first read ({self.computed_at}; the run was stored "
                "before verdicts were), against the disk runs finished by its end: "
                f"{self.against()}; kept since"
            )
        if self.basis == "recomputed":
            return f"verdict recomputed now against {self.against()} (--with-disk); not stored"
        return f"verdict computed for this read (not stored), against {self.against()}"

    def document(self) -> dict[str, Any]:
        """``results show --json``'s ``verdict``: how the diagnosis was made."""
        return {
            "basis": self.basis,
            "computed_at": self.computed_at,
            "disk_runs": dict(sorted(self.disk_runs.items())),
        }


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def disk_caps(
    store: Store, environment: Mapping[str, Any], chosen: Sequence[tuple[RunId, EnvId | None]]
) -> dict[str, tuple[dx.Caps, int]]:
    """What the first of ``chosen`` (disk runs, newest first) that measured each of the run's
    devices found, by the run's device name (testbed devices are matched by their testbed
    name), with that disk run's id."""
    wanted: dict[str, str] = {}  # device key -> the run's device name
    for st in (environment.get("storage") or {}).values():
        dev = ((st or {}).get("device") or {}).get("name")
        if dev:
            wanted[device_key(str(dev), ((st or {}).get("testbed") or {}).get("name"))] = dev
    if not wanted:
        return {}
    out: dict[str, tuple[dx.Caps, int]] = {}
    for run_id, env_id in chosen:
        key = disk_device(store.environment(env_id)) if env_id is not None else None
        if key is None or key not in wanted or wanted[key] in out:
            continue
        tests = [
            ("read" if s.rw in READ else "write", s.median.mbps, s.median.iops)
            for s in disk_summarize(store.disk_passes(run_id))
            if s.rw in READ + WRITE
        ]
        caps = dx.disk_test_caps(tests, f"the best test of iolab disk run {run_id}")
        if caps is not None:
            out[wanted[key]] = (caps, int(run_id))
        if len(out) == len(wanted):
            break
    return out


def disk_run(store: Store, run_id: int, option: str = "--with-disk") -> RunRecord:
    """The `iolab disk` run an option names (BadInput naming the option otherwise)."""
    try:
        record = store.run(run_id)
    except BadInput as exc:  # no such run: said of the option that named it
        raise BadInput(option, run_id, exc.allowed) from None
    if record.workload != "disk":
        raise BadInput(option, run_id, "give the number of an `iolab disk` run")
    return record


def compute(store: Store, run: RunRecord, with_disk: Sequence[RunRecord] | None = None) -> Verdict:
    """The verdict of ``run``, against the disk runs that had finished by its end (all of them
    while it runs), or against ``with_disk`` (then ``recomputed``; BadInput when none of them
    measured a device of the run). Nothing is stored."""
    probes = store.probes(run.id, values=False, names=dx.SERIES)
    basis: Basis = "recomputed" if with_disk is not None else "unsaved"
    env = store.environment(run.env_id) if run.env_id else {}
    if with_disk is not None:
        chosen = [(r.id, r.env_id) for r in with_disk]
    else:
        chosen = store_experiments.done_disk_runs(store, by=run.ended_at)
    found = disk_caps(store, env, chosen) if probes is not None else {}
    if with_disk is not None and probes is not None and not found:
        ids = ", ".join(str(r.id) for r in with_disk)
        raise BadInput(
            "--with-disk",
            ids,
            f"give an `iolab disk` run that measured a device of run {run.id} "
            f"({_devices(env) or 'it recorded none'}); run {ids} measured "
            f"{_measured(store, with_disk) or 'no device iolab recognises'}",
        )
    if probes is None:
        return Verdict(None, {}, basis, _now())
    engine = str(run.params.get("engine") or run.summary.get("engine") or "")
    facts = dx.RunFacts(engine, run.workload, run.params, run.summary, env)
    caps = {dev: c for dev, (c, _) in found.items()}
    # how long a device with a known cap was at it: its samples, read only then
    known = bool(caps) or bool(dx.testbed_caps(env))
    samples = store.probes(run.id, names=dx.CAP_SERIES) if known else None
    diagnosis = dx.diagnose(probes, facts, caps, samples)
    return Verdict(diagnosis, {dev: r for dev, (_, r) in found.items()}, basis, _now())


def _devices(env: Mapping[str, Any]) -> str:
    names = {
        str(((st or {}).get("device") or {}).get("name"))
        for st in (env.get("storage") or {}).values()
        if ((st or {}).get("device") or {}).get("name")
    }
    return ", ".join(sorted(names))


def _measured(store: Store, runs: Sequence[RunRecord]) -> str:
    keys = {disk_device(store.environment(r.env_id)) if r.env_id else None for r in runs}
    return ", ".join(sorted(k.removeprefix("device:") for k in keys if k))


def save(store: Store, run: RunId, verdict: Verdict, basis: Basis) -> None:
    """Keep ``verdict`` with ``run``, unless one is kept already (the first stays)."""
    d = verdict.diagnosis
    with store.transaction() as c:
        c.execute(
            "INSERT OR IGNORE INTO verdicts (run_id, diagnosis, disk_runs, computed_at, basis)"
            " VALUES (?, ?, ?, ?, ?)",
            (
                run,
                None if d is None else json.dumps(d.record(), sort_keys=True),
                canonical_json(dict(verdict.disk_runs)),
                verdict.computed_at,
                basis,
            ),
        )


def load(store: Store, run: RunId) -> Verdict | None:
    """The verdict kept with ``run`` (None: none is kept yet)."""
    row = store.conn.execute(
        "SELECT diagnosis, disk_runs, computed_at, basis FROM verdicts WHERE run_id = ?", (run,)
    ).fetchone()
    if row is None:
        return None
    diagnosis, disk_runs, computed_at, basis = row
    d = None if diagnosis is None else dx.Diagnosis.from_record(json.loads(diagnosis))
    runs = {str(k): int(v) for k, v in json.loads(disk_runs).items()}
    return Verdict(d, runs, basis, str(computed_at))


def settle(store: Store, run: RunId) -> None:
    """Compute and keep the verdict of a run just stored (the runner, after its results)."""
    save(store, run, compute(store, store.run(run)), "stored")


def of_run(store: Store, run: RunRecord) -> Verdict:
    """The verdict of ``run``: the one kept with it; for a run stored before verdicts were
    kept, computed now by the same rule and kept (unless the database is read-only); for a
    run still running, computed for this read only."""
    kept = load(store, run.id)
    if kept is not None:
        return kept
    verdict = compute(store, run)
    if run.ended_at is None:
        return verdict
    try:
        save(store, run.id, verdict, "first read")
    except StoreFailed as exc:
        if int(getattr(exc.error, "sqlite_errorcode", 0) or 0) & 0xFF != sqlite3.SQLITE_READONLY:
            raise
        return verdict  # a read-only database (serve, another user's file): this read's
    return load(store, run.id) or verdict
