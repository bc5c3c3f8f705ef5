"""The population workload as the runner sees it: a cell's parameters into its options, its
checks before any run is recorded, its run, its estimate and what its cells are judged by."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from iolab.engines.interface import Layout, check_layout
from iolab.events import EventSink, Warning
from iolab.units import parse_size
from iolab.workloads import caps
from iolab.workloads.interface import (
    DEFAULT_SAMPLE_INTERVAL,
    OFF,
    Body,
    Checked,
    Headline,
    Judged,
    Resolve,
    Workload,
    engine_check,
    layout_of,
    model_of,
    seconds,
)
from iolab.workloads.populate import metrics
from iolab.workloads.populate.options import PopulateWorkload

if TYPE_CHECKING:
    from iolab.workloads.populate.run import PopulateOptions


def populate_options(params: Mapping[str, Any], layout: Layout) -> PopulateOptions:
    from iolab.engines.external import parse_dsn
    from iolab.workloads.populate.loading import KeyKind, LoadMethod, LoadMode
    from iolab.workloads.populate.run import PopulateOptions

    w = model_of(PopulateWorkload, params)
    dsn = params.get("dsn")  # a command's --dsn: a server iolab does not manage
    return PopulateOptions(
        engine=w.engine,
        layout=layout,
        rows=w.rows if w.rows or w.bytes or w.duration else 10_000,
        size_bytes=parse_size(w.bytes, "--bytes") if w.bytes else None,
        connections=w.connections,
        commit_every=w.commit_every,
        method=LoadMethod(w.method),
        mode=LoadMode(w.mode),
        key=KeyKind(w.key),
        batch=w.batch,
        pg_bin=Path(w.pg_bin) if w.pg_bin else None,
        dsn=parse_dsn(dsn) if dsn else None,
        sample_interval=params.get("sample_interval", DEFAULT_SAMPLE_INTERVAL),
        duration=w.duration,
        warmup_seconds=w.warmup_split()[0],
        warmup_rows=w.warmup_split()[1],
        rate=w.rate,
        **_variations(w),
    )


def _variations(w: PopulateWorkload) -> dict[str, Any]:
    """Seed 003's variation options of a cell (see PopulateWorkload), as PopulateOptions has
    them."""
    from iolab.analysis.steady import SteadyCriterion

    return {
        "checkpoint_every": None if w.checkpoint_every in (None, OFF) else w.checkpoint_every,
        "presize_wal": parse_size(w.presize_wal, "--presize-wal")
        if w.presize_wal not in (None, OFF)
        else None,
        "steady": SteadyCriterion(w.steady_window, w.steady_tolerance),
    }


def _populate_check(params: Mapping[str, Any], checked: Checked) -> None:
    from iolab.workloads.populate.run import check_presize_space, check_space

    layout, on_device = checked.layout(params)
    options = populate_options(params, layout)
    options.validate()
    caps.check(params)
    engine_check(options.engine, layout, params.get("pg_bin"), checked)
    if not on_device:
        checked.once(("dirs", tuple(layout.named_dirs())), lambda: check_layout(layout))
        check_space(options, checked.free_space)
        check_presize_space(options, checked.free_space)


def _populate(
    params: Mapping[str, Any], resolve: Resolve, events: EventSink
) -> tuple[Body, dict[str, Path], dict[str, str]]:
    from iolab.engines import rights
    from iolab.workloads.populate import dialects
    from iolab.workloads.populate.run import preflight, run_populate

    layout = layout_of(params, resolve)
    options = populate_options(params, layout)
    preflight(options)
    caps.check(params)
    if options.dsn is not None:  # the rights its user needs there, before the run is recorded
        objects = dialects.objects(options.engine)
        for text in rights.check(options.dsn, objects, options.checkpoint_every):
            events(Warning(text))
    roles = layout.roles()
    body = caps.capped(params, lambda outcome: run_populate(options, outcome, events))
    return body, roles, caps.recorded(params)


def _populate_judge(params: Mapping[str, Any]) -> Judged:
    """A load of a fixed count of rows is judged by its elapsed time; a timed load (a
    duration) lasts its duration whatever the engine does, so by its rows/s; an offered load
    (a rate) inserts at the rate while it holds, so by the 99th percentile latency of its
    commits. What the cell fixes is held, and refused as a metric."""
    held: dict[str, str] = {}
    duration, rate = params.get("duration"), params.get("rate")
    if duration is not None:
        why = f"each run lasts its duration, {_seconds(duration)}"
        held |= {k: why for k in ("elapsed_seconds", "first_finished_seconds", "wall_seconds")}
    if rate is not None:
        why = f"each run is offered {float(rate):g} rows/s, its rate"
        held |= {
            k: why
            for k in ("rows_per_second", "rows_per_second_with_warmup", "payload_mb_per_second")
        }
        if duration is None:  # the schedule sets the time too: rows / rate
            why = f"its rows at {float(rate):g} rows/s take the time its rate sets"
            held |= {k: why for k in ("elapsed_seconds", "first_finished_seconds", "wall_seconds")}
        insert = params.get("method", "insert") == "insert"
        per_statement = 1 if insert else params.get("batch", 100)
        commits = "transaction" if params.get("commit_every", 1) <= per_statement else "commit"
        return Judged(f"latency.{commits}.p99_us", f"{commits} p99 µs", held)
    if duration is not None:
        return Judged("rows_per_second", "rows/s", held)
    return Judged("elapsed_seconds", "elapsed s", held)


def _populate_headline(params: Mapping[str, Any], summary: Mapping[str, Any]) -> Headline:
    """rows/s; under an offered rate, which sets the rows/s, the 99th percentile latency of its
    commits, as its cells are judged."""
    judged = _populate_judge(params)
    if judged.metric.startswith("latency."):  # latency.KIND.p99_us
        kind = judged.metric.split(".")[1]  # transaction or commit
        return Headline(judged.metric, f"p99 {'tx' if kind == 'transaction' else kind}")
    return Headline("rows_per_second")


def _seconds(value: str | float) -> str:
    try:
        return f"{seconds(value):g} s"
    except ValueError:
        return str(value)


def _populate_estimate(params: Mapping[str, Any]) -> float:
    """A server start, and the load: its duration, and its warm-up when that is a time; or
    its rows at a slow disk's rows/s."""
    if params.get("duration") is not None:
        warmup = params.get("warmup")
        try:
            warm = seconds(warmup) if isinstance(warmup, str) else 0.0
        except ValueError:  # rows: their time is unknown before a run
            warm = 0.0
        return 5.0 + seconds(params["duration"]) + warm
    rows = params.get("rows") or 10_000
    return 5.0 + float(rows) / 3000.0


WORKLOAD = Workload(
    name="populate",
    model=PopulateWorkload,
    metric="elapsed_seconds",
    metric_label="elapsed s",
    lower_is_better=True,
    prepare=_populate,
    estimate=_populate_estimate,
    check=_populate_check,
    judge=_populate_judge,
    metrics=metrics.METRICS,
    headline=_populate_headline,
)
