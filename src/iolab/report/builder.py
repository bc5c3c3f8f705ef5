"""An experiment's report from the results database: :func:`build` -> :class:`ExperimentReport`.

It finds the experiment (a file or a name), chooses the metric (``--metric``, else the workload's;
its direction from :mod:`iolab.metrics`), reads the cells and runs through the store, and asks
:mod:`iolab.analysis` for the findings, efficiency, drift and per-query times. With
``timelines`` it also reads what the HTML report shows beyond the statistics.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from iolab.analysis.disk import summarize as disk_summarize
from iolab.analysis.disk import test_medians
from iolab.analysis.efficiency import (
    Drift,
    Efficiency,
    Limit,
    baseline_drift,
    device_key,
    disk_device,
    populate_efficiency,
    seq_write_limit,
)
from iolab.analysis.findings import (
    CellData,
    analyse,
    label_of,
    matrix_values,
    metric_of,
)
from iolab.analysis.queries import query_times
from iolab.config import experiment as config
from iolab.drivercore import ran as core_ran
from iolab.errors import BadInput
from iolab.metrics import Metric
from iolab.report import spectrum, why
from iolab.report import timeline as timeline_report
from iolab.report.value import DiskGrid, ExperimentReport, ReportCell, ReportRun, RunView
from iolab.results import ExperimentId, RunId
from iolab.store import Store, verdicts
from iolab.store import experiments as store_experiments
from iolab.store.database import RunRecord
from iolab.store.experiments import StoredCell, StoredRun
from iolab.store.overlaps import Overlap, overlaps
from iolab.workloads import registry
from iolab.workloads.interface import judged as judged_by
from iolab.workloads.registry import WORKLOADS

Timelines = Literal["median", "all"]


def build(
    store: Store,
    target: str | ExperimentId,
    metric: str | None = None,
    *,
    with_disk: Sequence[int] = (),
    timelines: Timelines | None = None,
) -> ExperimentReport:
    """The report of the experiment ``target`` (a .toml file, an experiment's name, or its id
    in the store: ``iolab serve``'s pages).

    ``metric``: a number of the runs' summaries (default: the workload's); ``with_disk``: `iolab
    disk` runs whose sequential write is the device's limit (default: the newest disk run of
    each device); ``timelines``: also read each cell's median run (or every done run: "all")
    with its probes, the disk grids and the environment, for the HTML report.
    """
    if isinstance(target, int):
        store_experiments.name_of(store, target)  # BadInput for an id the store lacks
        exp = target
    else:
        exp = find_experiment(store, target)
    cfg = store_experiments.config_of(store, exp)
    cells = with_disk_tests(store, store_experiments.cells(store, exp))
    chosen, declaration = choose_metric(cfg, cells, metric)
    data = cell_data(cells, matrix_keys(cfg), chosen)
    base_label = _full_label(data, _baseline_label(cfg))
    disk_runs = [verdicts.disk_run(store, r) for r in with_disk]
    # the disk runs finished by the experiment's end: one measured since changes nothing
    by = store_experiments.last_end(store, exp)
    found = analyse(data, chosen, declaration.lower_is_better, baseline=base_label).with_context(
        _efficiency(store, cells, data, disk_runs, by),
        _drift(cells, data, chosen, base_label),
        query_times(_done_summaries(cells, data)),
    )
    report_cells = tuple(
        ReportCell(
            id=c.id,
            label=d.label,
            workload=c.workload,
            values=d.values,
            params=c.params,
            runs=tuple(
                ReportRun(
                    r.id,
                    r.status,
                    metric_of(r.summary, chosen) if r.done else None,
                    r.started_at,
                    r.error,
                    core_ran(r.summary),
                )
                for r in c.runs
            ),
            stats=stats,
        )
        for c, d, stats in zip(cells, data, found.cells, strict=True)
    )
    name = (cfg.get("experiment") or {}).get("name") or store_experiments.name_of(store, exp)
    labelled = [(d.label, c) for c, d in zip(cells, data, strict=True)]
    spectra = spectrum.read(store, labelled, [r.id for r in disk_runs], by)
    shared = overlaps(store, exp)
    said = _overlap_warning(shared, {r.id: c.label for c in report_cells for r in c.runs})
    if said is not None:
        found = dataclasses.replace(found, warnings=(*found.warnings, said))
    report = ExperimentReport(
        str(name),
        exp,
        chosen,
        declaration,
        found,
        report_cells,
        spectra=spectra,
        overlaps=tuple(shared),
    )
    report = dataclasses.replace(report, why=why.build(store, report))
    if timelines is None:
        return report
    views, grids, environment = _html_parts(store, cells, data, chosen, timelines == "all")
    grids += [
        DiskGrid(str(r.params.get("path", r.id)), tuple(disk_summarize(store.disk_passes(r.id))))
        for r in disk_runs
    ]
    return dataclasses.replace(
        report, timelines=tuple(views), disks=tuple(grids), environment=environment
    )


def _overlap_warning(found: Sequence[Overlap], labels: Mapping[RunId, str]) -> str | None:
    """One warning about the experiment's runs that ran beside another run on their host
    (``labels``: each run's cell); None when none did."""
    if not found:
        return None
    pairs = [
        f"run {o.run} ({labels.get(o.run, '?')}) with run {o.other}"
        + ("" if o.other in labels else f" of '{o.other_experiment}'")
        + f" on {o.host}, {o.start[11:19]}-{o.end[11:19]}"
        for o in found
        if o.other not in labels or o.run < o.other  # a pair within the experiment once
    ]
    shown = "; ".join(pairs[:6]) + (f"; and {len(pairs) - 6} more" if len(pairs) > 6 else "")
    return (
        f"{len({o.run for o in found})} run(s) ran while another run ran on the same host, so "
        f"each measured the other too: {shown} (an iolab without the host's lock, or --dsn "
        "runs from two machines); run them again alone"
    )


def find_experiment(store: Store, target: str) -> ExperimentId:
    """An experiment by its file (.toml), name or id (:func:`iolab.store.experiments.resolve`:
    a name that several experiments share is refused with each of them listed)."""
    if target.endswith(".toml") and Path(target).exists():
        return store_experiments.resolve(store, config.load(Path(target)).name, shown=target)
    return store_experiments.resolve(store, target)


def choose_metric(
    cfg: Mapping[str, Any], cells: Sequence[StoredCell], wanted: str | None
) -> tuple[str, Metric]:
    """The metric the statistics are about and its declaration: ``wanted`` when given, else
    what the workload kind judges these cells by (:func:`iolab.workloads.interface.judged`: a fixed
    count of rows by its elapsed time, a timed load by its rows/s; a disk experiment: its first
    test's MB/s). A number no workload declared in :mod:`iolab.metrics` has no direction, and
    one the cells hold constant by design (a timed load's elapsed time) measures nothing: both
    are refused."""
    workload = cfg.get("workload")  # an experiment file's table; a single command's name
    kind = workload.get("kind") if isinstance(workload, dict) else workload
    if not isinstance(kind, str) and cells:
        kind = cells[0].params.get("kind")
    k = WORKLOADS.get(str(kind))
    judged = judged_by(k, [c.params for c in cells]) if k is not None else None
    summaries = [r.summary for c in cells for r in c.runs if r.done]
    if wanted is None and judged is not None:
        return judged.metric, registry.lookup_metric(judged.metric)
    if wanted is None and k is not None and k.first_metric is not None:
        wanted = k.first_metric([c.params for c in cells], summaries)  # a disk profile's
    if wanted is None:
        raise BadInput("--metric", None, _metric_choices(summaries))
    if judged is not None and wanted in judged.held:
        raise BadInput(
            "--metric",
            wanted,
            f"the experiment holds it constant by design ({judged.held[wanted]}); give a number "
            f"it measures, e.g. {judged.metric}",
        )
    declaration = registry.find_metric(wanted)
    if declaration is None or not any(metric_of(s, wanted) is not None for s in summaries):
        raise BadInput("--metric", wanted, _metric_choices(summaries))
    return wanted, declaration


def _metric_choices(summaries: Sequence[Mapping[str, Any]]) -> str:
    """What --metric can name (declared numbers), from the first finished run's summary."""
    if not summaries:
        return "the experiment has no finished run yet"
    s = summaries[0]
    names = [k for k in s if metric_of(s, k) is not None and registry.find_metric(k) is not None][
        :12
    ]
    tests = s.get("tests")
    if isinstance(tests, dict) and tests:
        fields = sorted(
            {f for t in tests.values() for f in t if registry.find_metric(f) is not None}
        )
        names.append(f"tests.TEST.{'|'.join(fields)} with TEST one of: " + ", ".join(sorted(tests)))
    latency = s.get("latency")
    if isinstance(latency, dict) and latency:
        fields = sorted(
            {f for t in latency.values() for f in t if registry.find_metric(f) is not None}
        )
        names.append(
            f"latency.KIND.{'|'.join(fields)} with KIND one of: " + ", ".join(sorted(latency))
        )
    return "give a number the runs record: " + ", ".join(names)


def with_disk_tests(store: Store, cells: list[StoredCell]) -> list[StoredCell]:
    """Disk runs of ``iolab disk`` store their passes, not per-test medians in the summary (an
    experiment file's disk runs store both): ``tests`` from the passes where it is missing."""
    return [
        dataclasses.replace(c, runs=tuple(_with_tests(store, r) for r in c.runs))
        if "profile" in c.params
        else c
        for c in cells
    ]


def _with_tests(store: Store, run: StoredRun) -> StoredRun:
    if "tests" in run.summary:
        return run
    passes = store.disk_passes(run.id)
    if not passes:
        return run
    return dataclasses.replace(run, summary={**run.summary, "tests": test_medians(passes)})


def matrix_keys(cfg: Mapping[str, Any]) -> list[str]:
    """The matrix keys in the file's order (the stored config's JSON sorts them)."""
    return list(cfg.get("matrix_keys") or (cfg.get("matrix") or {}).keys())


def cell_data(cells: Sequence[StoredCell], keys: Sequence[str], metric: str) -> list[CellData]:
    """Each cell's label, matrix values, the metric over its done runs, and its failures."""
    out = []
    for c in cells:
        values = matrix_values(c.params, keys)
        found = (metric_of(r.summary, metric) for r in c.runs if r.done)
        numbers = tuple(v for v in found if v is not None)
        failure = c.last_failure()
        failed = sum(1 for r in c.runs if r.status.value in ("failed", "aborted"))
        out.append(CellData(label_of(values) or c.id[:8], values, numbers, failed, failure))
    return out


def _baseline_label(cfg: Mapping[str, Any]) -> str | None:
    """The label of ``experiment.baseline`` (a partial one: only the keys it names)."""
    base = (cfg.get("experiment") or {}).get("baseline")
    if not base:
        return None
    return label_of(matrix_values({**base}, [k for k in matrix_keys(cfg) if k in base]))


def _full_label(cells: Sequence[CellData], partial: str | None) -> str | None:
    if partial is None:
        return None
    wanted = set(partial.split())
    found = [c.label for c in cells if wanted <= set(c.label.split())]
    return found[0] if len(found) == 1 else None


def _done_summaries(
    cells: Sequence[StoredCell], data: Sequence[CellData]
) -> list[tuple[str, list[Mapping[str, Any]]]]:
    """Each cell's label with the summaries of its done runs."""
    return [
        (d.label, [r.summary for r in c.runs if r.done]) for c, d in zip(cells, data, strict=True)
    ]


def _efficiency(
    store: Store,
    cells: Sequence[StoredCell],
    data: Sequence[CellData],
    disk_runs: Sequence[RunRecord],
    by: str | None,
) -> list[Efficiency]:
    """Each populate cell's device MB/s against the device's sequential write, from the disk
    runs given, else the newest disk run of each device in the results database that had
    finished by ``by`` (the experiment's end), or the first one since
    (:func:`~iolab.store.experiments.disk_runs_for`)."""
    wanted = {
        device_key(name, d.get("testbed"))
        for c in cells
        for r in c.runs
        for name, d in (r.summary.get("devices") or {}).items()
    }
    if not wanted:
        return []  # no run of this experiment counted device bytes (not populate)
    given = [(r.id, r.env_id) for r in disk_runs]
    chosen = given or store_experiments.disk_runs_for(store, by)
    limits: dict[str, Limit] = {}
    for run_id, env_id in chosen:
        if limits.keys() >= wanted:
            break  # every device the experiment wrote to has its limit
        device = disk_device(store.environment(env_id)) if env_id is not None else None
        if device is None or device in limits or device not in wanted:
            continue
        limit = seq_write_limit(run_id, device, disk_summarize(store.disk_passes(run_id)))
        if limit is not None:
            limits[device] = limit
    if not limits:
        return []
    return populate_efficiency(_done_summaries(cells, data), limits)


def _drift(
    cells: Sequence[StoredCell], data: Sequence[CellData], metric: str, baseline: str | None
) -> Drift | None:
    """The baseline cell's metric over its runs' start times."""
    if baseline is None:
        return None
    for c, d in zip(cells, data, strict=True):
        if d.label != baseline:
            continue
        found = [(r.started_at, metric_of(r.summary, metric)) for r in c.runs if r.done]
        return baseline_drift(
            baseline, [(t, v) for t, v in found if v is not None and t is not None]
        )
    return None


def run_view(store: Store, run: RunId, summary: Mapping[str, Any], label: str) -> RunView | None:
    """A finished run as its timeline shows it: the series the timeline draws, where each
    query began (TPC-H), the steady part of a populate run; None without probes."""
    probes = store.probes(run, names=timeline_report.SERIES)
    if probes is None:
        return None
    marks = timeline_report.query_marks(store.query_results(run))
    return RunView(label, run, probes, marks, timeline_report.steady_span(summary, probes))


def _html_parts(
    store: Store,
    cells: Sequence[StoredCell],
    data: Sequence[CellData],
    metric: str,
    every_run: bool,
) -> tuple[list[RunView], list[DiskGrid], Mapping[str, Any] | None]:
    """What the HTML report shows beyond the statistics: each cell's median run (or every
    done run) with its probes (and, for disk cells, its disk grid), and the environment of the
    first run."""
    views: list[RunView] = []
    grids: list[DiskGrid] = []
    env: Mapping[str, Any] | None = None
    for c, d in zip(cells, data, strict=True):
        values = ((metric_of(r.summary, metric), r) for r in c.runs if r.done)
        done = [(v, r.id, r) for v, r in values if v is not None]
        if not done:
            continue
        chosen = (
            [r for _, _, r in done]
            if every_run
            else [sorted(done, key=lambda x: (x[0], x[1]))[(len(done) - 1) // 2][2]]
        )
        for run in chosen:
            view = run_view(store, RunId(run.id), run.summary, d.label)
            if view is not None:
                views.append(view)
            if c.params.get("kind") == "disk":  # a disk cell: its run's CrystalDiskMark grid
                passes = store.disk_passes(RunId(run.id))
                grids.append(DiskGrid(f"{d.label} · run {run.id}", tuple(disk_summarize(passes))))
        if env is None:
            env_id = chosen[0].env_id
            env = store.environment(env_id) if env_id else None
    return views, grids, env
