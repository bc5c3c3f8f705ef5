"""``iolab why RUN --check``: the run's cell again, as it was and with the limit its verdict
names relieved, alternating, and what that says of the verdict (docs/diagnosis.md, "The check").

The rules (which relief, what the figures say) are :mod:`iolab.analysis.whycheck`'s; here the
re-runs are made and stored: each is a run of its own, in an experiment of kind ``check`` with
two cells per relief ("as it was" and the relief), so that none joins the checked run's cells;
a device's role goes on a private mode-700 directory under /dev/shm that the check creates and
removes (:func:`iolab.ownership.owned_dir`). The runs alternate A B B A A B ..., so that a load
that drifts over the check weighs on both sides alike. The result is kept with the run
(:mod:`iolab.store.checks`). The runner emits events and never prints.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, get_args

from iolab.analysis import diagnosis as dx
from iolab.analysis import whycheck as wc
from iolab.analysis.findings import metric_of
from iolab.config.experiment import IsolationSection
from iolab.errors import BadInput, IolabError
from iolab.events import EventSink, Measured, Phase
from iolab.ownership import owned_dir, owned_kind
from iolab.probes.recorder import LiveSink
from iolab.results import RunId, RunStatus, cell_id
from iolab.runner.executors import Resolve, execute_cell
from iolab.runner.single import commit
from iolab.store import checks as store_checks
from iolab.store import verdicts
from iolab.store.database import RunRecord, Store
from iolab.store.live import ChunkWriter
from iolab.workloads.interface import Checked, Workload
from iolab.workloads.registry import WORKLOADS, find_metric

SHM = Path("/dev/shm")  # the RAM-backed directory a device's role moves to
DEFAULT_RUNS = 3


class CannotRerun(IolabError):
    """The run cannot be run again for its check (one line, exit 2)."""

    exit_code = 2


@dataclass(frozen=True)
class Planned:
    """What a check of a run will do: the run, its verdict, the reliefs in turn, and how its
    headline figure is read."""

    run: RunRecord
    diagnosis: dx.Diagnosis
    steps: tuple[wc.Relief | wc.CannotCheck, ...]
    kind: Workload
    metric: str
    lower_is_better: bool


def facts_of(run: RunRecord, kind: Workload) -> wc.RunFacts:
    """What the reliefs of ``run`` depend on."""
    from iolab import drivercore
    from iolab.engines import catalog
    from iolab.system.cgroups import MIN_CPUS

    engine = catalog.KINDS.get(str(run.params.get("engine")))
    mode = kind.model.model_fields.get("mode")
    modes = tuple(str(a) for a in get_args(mode.annotation)) if mode is not None else ()
    return wc.RunFacts(
        run.params,
        run.summary,
        own_wal_dir=engine.own_wal_dir if engine is not None else True,
        host_cpus=len(os.sched_getaffinity(0)),
        core_built=drivercore.built(),
        modes=modes,
        min_cpus=MIN_CPUS,
    )


def plan(store: Store, run_id: int) -> Planned:
    """The check of run ``run_id``: refused (:class:`CannotRerun`) when it did not finish, has
    no verdict or headline figure, or cannot be run again at all."""
    run = store.run(run_id)
    if run.status is not RunStatus.DONE:
        raise CannotRerun(
            f"cannot check run {run.id}: it did not finish ({run.status.value}), so it has "
            "no figure to compare"
        )
    kind = WORKLOADS.get(run.workload)
    diagnosis = verdicts.of_run(store, run).diagnosis
    if diagnosis is None:
        raise CannotRerun(f"cannot check run {run.id}: it recorded no probes, so it has no verdict")
    headline = kind.headline(run.params, run.summary) if kind and kind.headline else None
    declared = find_metric(headline.key) if headline is not None else None
    if kind is None or headline is None or declared is None or run.workload == "disk":
        raise CannotRerun(
            f"cannot check run {run.id}: a {run.workload} run's verdict names the device "
            "it measures; there is no figure of a load to compare"
        )
    _same_devices(run, store.environment(run.env_id) if run.env_id else {})
    steps = tuple(wc.reliefs(diagnosis, facts_of(run, kind)))
    refused = [s for s in steps if isinstance(s, wc.CannotCheck) and not s.rerun]
    if refused and len(refused) == len(steps):
        raise CannotRerun(f"cannot check run {run.id}: {refused[0].why}")
    return Planned(run, diagnosis, steps, kind, headline.key, declared.lower_is_better)


def _same_devices(run: RunRecord, environment: Mapping[str, Any]) -> None:
    """A role the run had on a testbed device must be on it again: a device taken down leaves
    its mount point, an empty directory on another filesystem, and the runs "as it was" would
    run elsewhere without a word."""
    from iolab.testbed import device_of

    for role, st in (environment.get("storage") or {}).items():
        bed = ((st or {}).get("testbed") or {}).get("name")
        path = (st or {}).get("path")
        if not bed or not path:
            continue
        now = device_of(Path(str(path)))
        if now is None or now.name != bed:
            raise CannotRerun(
                f"cannot re-run run {run.id} as it was: its {role} directory {path} was on "
                f"testbed device {bed}, which is not up here; bring it up (`iolab testbed up`) "
                "and check again"
            )


def base_params(run: RunRecord) -> dict[str, Any]:
    """The parameters to run ``run``'s cell again with: its own, in the form its workload's
    options take (a command stored some in the form its run reports them)."""
    p = dict(run.params)
    if p.get("size_bytes") and not p.get("bytes"):  # populate --bytes, as a command stores it
        p["bytes"] = f"{int(p['size_bytes'])}B"
    if p.get("warmup_seconds") and not p.get("warmup"):
        p["warmup"] = f"{float(p['warmup_seconds']):g}s"
    elif p.get("warmup_rows") and not p.get("warmup"):
        p["warmup"] = int(p["warmup_rows"])
    return p


@contextmanager
def _scratch(params: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """A command's scratch data directory (iolab's, removed after its run) made afresh, as
    the command made it; any other directory that is gone refuses the check."""
    dirs = list(params.get("data_dirs") or [])
    with ExitStack() as stack:
        for i, d in enumerate(dirs):
            path = Path(str(d))
            if str(d).startswith("device:") or path.exists():
                continue
            kind = owned_kind(path)
            if kind is None:
                raise CannotRerun(
                    f"cannot re-run the cell: its data directory {path} is gone; make it "
                    "again (empty) to check the run"
                )
            dirs[i] = str(stack.enter_context(owned_dir(path.parent, kind, 0o755)))
        for key in ("wal_dir", "temp_dir"):
            d = params.get(key)
            if d and not str(d).startswith("device:") and not Path(str(d)).exists():
                raise CannotRerun(
                    f"cannot re-run the cell: its {key.replace('_', ' ')} {d} is gone; make "
                    "it again (empty) to check the run"
                )
        yield {**params, "data_dirs": dirs} if dirs else params


@contextmanager
def _ram(planned: Planned, events: EventSink, shm: Path) -> Iterator[Path | None]:
    """The check's private RAM-backed directory, when a relief needs one."""
    if not any(isinstance(s, wc.Relief) and s.ram for s in planned.steps):
        yield None
        return
    if not shm.is_dir():
        raise CannotRerun(
            f"cannot check run {planned.run.id} on RAM: {shm} is missing (the relief puts a "
            "device's role on a RAM-backed directory there)"
        )
    with owned_dir(shm, "whycheck", 0o700) as path:
        events(Phase(f"relieved roles go on {path} (RAM), removed afterwards"))
        yield path


def relieved_params(base: Mapping[str, Any], r: wc.Relief, ram: Path | None) -> dict[str, Any]:
    """The parameters of the relieved runs."""
    p = {k: v for k, v in base.items()}
    for key, value in r.changes.items():
        if value is None:
            p.pop(key, None)
        else:
            p[key] = value
    for role in r.ram:
        assert ram is not None
        if role == "data":
            dirs = []
            for i in range(len(base.get("data_dirs") or [None])):
                d = ram / f"data{i}"
                d.mkdir(mode=0o700, exist_ok=True)
                dirs.append(str(d))
            p["data_dirs"] = dirs
        else:
            d = ram / role
            d.mkdir(mode=0o700, exist_ok=True)
            p[f"{role}_dir"] = str(d)
    return p


def _refused(exc: BadInput, ram: Path | None, shm: Path) -> Exception:
    """A relieved run refused by its workload's checks: /dev/shm too small, said so."""
    if ram is not None and str(ram) in str(exc.value):
        return CannotRerun(f"{shm} is too small for the relieved run: {exc.allowed}")
    return exc


@contextmanager
def _environ(values: Mapping[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _rerun(
    store: Store,
    experiment: int,
    cell: str,
    repetition: int,
    kind: Workload,
    params: Mapping[str, Any],
    env: Mapping[str, str],
    resolve: Resolve,
    events: EventSink,
) -> RunRecord:
    """One re-run, recorded and committed with its verdict as any run is."""
    run_id: RunId | None = None

    def started(environment: dict[str, Any]) -> LiveSink:
        nonlocal run_id
        env_id = store.save_environment(environment)
        run_id = store.start_run(experiment, cell, repetition, env_id)  # type: ignore[arg-type]
        return ChunkWriter(store.path, run_id)

    with _environ(env):
        executed = execute_cell(
            kind, params, resolve, events, IsolationSection(), None, started=started
        )
    if run_id is None:
        assert executed.failure is not None
        raise executed.failure
    commit(store, run_id, executed)
    if executed.failure is not None:
        raise executed.failure
    return store.run(run_id)


def check(
    store: Store,
    planned: Planned,
    runs: int,
    events: EventSink,
    *,
    resolve: Resolve,
    shm: Path = SHM,
    keep: bool = True,
) -> wc.Check:
    """Run the check :func:`plan` made, ``runs`` times each side, and keep its result with
    the run (``keep``; a check of a limit other than the verdict's, as the truth bench plants
    one, is not kept). For ``none``, the candidates are relieved in turn until one moves the
    run."""
    if runs < 2:
        raise BadInput("--runs", runs, "give 2 or more: the interval needs two runs a side")
    run = planned.run
    base = base_params(run)
    steps: list[wc.Step | wc.CannotCheck] = []
    experiment: int | None = None
    with _scratch(base) as base, _ram(planned, events, shm) as ram:
        tried: list[tuple[wc.Relief, dict[str, Any]]] = []
        for s in planned.steps:
            if isinstance(s, wc.CannotCheck):
                continue
            params = relieved_params(base, s, ram)
            try:
                planned.kind.check(params, Checked())
            except BadInput as exc:
                raise _refused(exc, ram, shm) from None
            tried.append((s, params))
        planned.kind.check(base, Checked())
        by_relief = dict(zip([id(r) for r, _ in tried], [p for _, p in tried], strict=True))
        for s in planned.steps:
            if isinstance(s, wc.CannotCheck):
                steps.append(s)
                continue
            if experiment is None:
                experiment = store_checks.check_experiment(
                    store,
                    run.id,
                    f"check of run {run.id} ({run.experiment})",
                    {"workload": run.workload, "limit": planned.diagnosis.limit},
                )
            step = _step(
                store, planned, experiment, s, base, by_relief[id(s)], runs, events, resolve
            )
            steps.append(step)
            events(Measured(f"check of {s.name}", step.sentence))
            if step.outcome == wc.CONFIRMED:
                break
    result = wc.Check(
        run.id,
        planned.diagnosis.limit,
        tuple(steps),
        datetime.now(UTC).isoformat(timespec="seconds"),
        experiment,
    )
    if keep:
        store_checks.save(store, result)
    return result


def planted(planned: Planned, limit: str) -> Planned:
    """The same check of another limit than the verdict's (the truth bench plants a wrong
    verdict to see the check refute it)."""
    wrong = dx.Diagnosis(limit, None, ())
    steps = tuple(wc.reliefs(wrong, facts_of(planned.run, planned.kind)))
    return Planned(planned.run, wrong, steps, planned.kind, planned.metric, planned.lower_is_better)


def _step(
    store: Store,
    planned: Planned,
    experiment: int,
    r: wc.Relief,
    base: Mapping[str, Any],
    relieved: Mapping[str, Any],
    runs: int,
    events: EventSink,
    resolve: Resolve,
) -> wc.Step:
    """One relief: ``runs`` re-runs a side, alternating A B B A A B ..."""
    run = planned.run
    marks = {"check_of": int(run.id)}
    cells = {
        "as it was": (base, r.base_env),
        r.what: (relieved, r.env),
    }
    ids: dict[str, str] = {}
    for label, (params, _env) in cells.items():
        stored = {**params, **marks, "relief": label}
        ids[label] = cell_id({"workload": run.workload, **stored})
        store.ensure_cell(experiment, ids[label], run.workload, stored)  # type: ignore[arg-type]
    order: list[str] = []
    for i in range(runs):
        pair = ["as it was", r.what]
        order += pair if i % 2 == 0 else pair[::-1]
    got: dict[str, list[tuple[int, float]]] = {label: [] for label in cells}
    for n, label in enumerate(order, 1):
        params, env = cells[label]
        events(Phase(f"check of {r.name}: run {n} of {len(order)}, {label}"))
        done = _rerun(
            store,
            experiment,
            ids[label],
            len(got[label]) + 1,
            planned.kind,
            params,
            env,
            resolve,
            events,
        )
        value = metric_of(done.summary, planned.metric)
        if value is None:
            raise IolabError(f"re-run {done.id} recorded no {planned.metric}: cannot compare")
        got[label].append((int(done.id), float(value)))
        events(Measured(f"run {done.id}", f"{label}: {planned.metric} {value:,.6g}"))
    a, b = got["as it was"], got[r.what]
    return wc.judge(
        r,
        [i for i, _ in a],
        [i for i, _ in b],
        [v for _, v in a],
        [v for _, v in b],
        planned.lower_is_better,
    )
