"""``iolab compare``: two sets of runs (run ids, or an experiment's cell), the ratio of their
metric with its 95% interval: :func:`compare` -> :class:`Comparison`."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from iolab.analysis.findings import Ratio, metric_of, ratio
from iolab.errors import BadInput
from iolab.latency.histogram import Histogram
from iolab.metrics import Metric
from iolab.report.builder import cell_data, choose_metric, find_experiment, with_disk_tests
from iolab.report.builder import matrix_keys as matrix_keys_of
from iolab.results import MAX_ID, CellId, ExperimentId, RunId
from iolab.store import Store
from iolab.store import experiments as store_experiments
from iolab.store.experiments import StoredCell, StoredRun

_RUNS = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*$")


@dataclass(frozen=True)
class Sample:
    """One side of a comparison: what it is, the metric's values over its done runs."""

    label: str
    values: tuple[float, ...]
    metric: str
    declaration: Metric
    runs: tuple[int, ...] = ()  # the done runs the values come from

    @property
    def mean(self) -> float:
        return sum(self.values) / len(self.values)


@dataclass(frozen=True)
class Comparison:
    a: Sample
    b: Sample
    ratio: Ratio
    # per operation kind both sides timed: each side's runs merged exactly (warm-up left out)
    latency: dict[str, tuple[Histogram, Histogram]] = field(default_factory=dict)

    @property
    def metric(self) -> str:
        return self.a.metric


def compare(store: Store, a: str, b: str, metric: str | None = None) -> Comparison:
    """``a`` against ``b``, each run ids (``3``, ``3,4,9``, ``3-7``) or ``EXPERIMENT[:CELL]``."""
    sa = sample(store, a, metric, "A")
    sb = sample(store, b, metric, "B")
    if sa.metric != sb.metric:
        raise BadInput(
            "B", b, f"give runs measuring {sa.metric}, as A does (B measures {sb.metric})"
        )
    if not sa.values or not sb.values:
        raise BadInput("A/B", a if not sa.values else b, "give runs that finished (status done)")
    r = ratio(sa.label, sa.values, sb.label, sb.values, sa.declaration.lower_is_better, sa.metric)
    return Comparison(sa, sb, r, latency_sides(store, sa.runs, sb.runs))


def latency_sides(
    store: Store, a: tuple[int, ...], b: tuple[int, ...]
) -> dict[str, tuple[Histogram, Histogram]]:
    """Each operation kind timed on both sides: its histograms over each side's runs."""
    sides = []
    for runs in (a, b):
        merged: dict[str, Histogram] = {}
        for run in runs:
            for kind, h in store.latency_totals(RunId(run)).items():
                merged.setdefault(kind, Histogram()).add(h)
        sides.append(merged)
    return {k: (sides[0][k], sides[1][k]) for k in sides[0] if k in sides[1]}


def run_ids(store: Store, spec: str, field: str) -> list[int]:
    """``3``, ``3,4,9``, ``3-7``: each id a run of the results database, each range ascending."""
    top = store_experiments.last_run_id(store)
    allowed = f"give run ids from 1 to {top} (see `iolab results list`), e.g. 3,4,9 or 3-7"
    ids: list[int] = []
    for part in spec.split(","):
        lo_text, _, hi_text = part.partition("-")
        # beyond 19 digits an id is past SQLite's integers (and int() refuses 4,300)
        lo, hi = (int(t) if len(t) <= 19 else MAX_ID + 1 for t in (lo_text, hi_text or lo_text))
        if not 1 <= lo <= hi <= top:
            raise BadInput(field, spec, allowed)
        ids += range(lo, hi + 1)
    return ids


def experiment_cell(store: Store, spec: str) -> tuple[ExperimentId, str, str]:
    """``EXPERIMENT[:CELL]``: the experiment (a file, a name or an id), as typed, and the cell's
    ``KEY=VALUE`` words. A name an older iolab made may hold ':' itself (``demo
    2026-11-27T13:40:19``): the longest part before a ':' that names an experiment is taken."""
    cuts = [len(spec), *(i for i in range(len(spec) - 1, -1, -1) if spec[i] == ":")]
    for cut in cuts:
        name = spec[:cut]
        file = name.endswith(".toml") and Path(name).exists()
        if file or store_experiments.named(store, name):
            return find_experiment(store, name), name, spec[cut + 1 :]
    return store_experiments.resolve(store, spec.partition(":")[0], shown=spec), spec, ""


def sample(store: Store, spec: str, wanted: str | None, field: str) -> Sample:
    """Run ids (``3``, ``3,4,9``, ``3-7``) or ``EXPERIMENT[:CELL]``: the metric's values."""
    if _RUNS.match(spec):
        records = [store.run(i) for i in run_ids(store, spec, field)]
        kinds = {r.workload for r in records}
        if len(kinds) != 1:
            raise BadInput(field, spec, "give runs of one workload")
        kind = kinds.pop()
        each = [  # one cell per run: what each run's parameters held decides the metric
            StoredCell(
                CellId(""),
                "",
                {**r.params, "kind": kind},
                (StoredRun(r.id, r.status, r.summary, r.started_at, r.error),),
            )
            for r in records
        ]
        cells = with_disk_tests(store, each)
        metric, declaration = choose_metric({}, cells, wanted)
        done = [r for c in cells for r in c.runs if r.done]
        found = (metric_of(r.summary, metric) for r in done)
        values = tuple(v for v in found if v is not None)
        return Sample(f"runs {spec}", values, metric, declaration, tuple(r.id for r in done))
    exp, name, cell = experiment_cell(store, spec)
    cfg = store_experiments.config_of(store, exp)
    stored = with_disk_tests(store, store_experiments.cells(store, exp))
    metric, declaration = choose_metric(cfg, stored, wanted)
    data = cell_data(stored, matrix_keys_of(cfg), metric)
    keys = set(cell.split())
    chosen = [c for c in data if keys <= set(c.label.split())]
    if len(chosen) != 1:
        raise BadInput(
            "A/B",
            spec,
            f"name one of {len(data)} cells as 'EXPERIMENT:KEY=VALUE ...' ({len(chosen)} "
            "match), e.g. " + "; ".join(f"'{name}:{c.label}'" for c in data[:3]),
        )
    label = f"{name} {chosen[0].label}".strip()
    done_ids = tuple(r.id for r in stored[data.index(chosen[0])].runs if r.done)
    return Sample(label, tuple(chosen[0].metric), metric, declaration, done_ids)
