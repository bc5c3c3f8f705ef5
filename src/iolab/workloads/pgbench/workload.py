"""pgbench as the runner sees it: a cell's parameters (named keys and ``args``) into the
options, its checks before any run is recorded, its run and its estimate."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from iolab.engines.interface import Layout, check_layout
from iolab.events import EventSink
from iolab.workloads.interface import (
    DEFAULT_SAMPLE_INTERVAL,
    Body,
    Checked,
    Headline,
    Resolve,
    Workload,
    engine_check,
    layout_of,
    model_of,
    workdir_of,
)
from iolab.workloads.pgbench import metrics
from iolab.workloads.pgbench.arguments import args_rate
from iolab.workloads.pgbench.options import PgbenchWorkload

if TYPE_CHECKING:
    from iolab.workloads.pgbench.run import PgbenchOptions

BUILTINS = ("tpcb-like", "simple-update", "select-only")  # pgbench -b names
DEFAULT_SECONDS = 60.0  # a run's estimate when it names no duration


def run_args(w: PgbenchWorkload) -> tuple[str, ...]:
    """The named keys as pgbench's arguments, then ``args`` as given."""
    out: list[str] = []
    if w.clients is not None:
        out += ["-c", str(w.clients)]
    if w.threads is not None:
        out += ["-j", str(w.threads)]
    if w.duration is not None:
        out += ["-T", str(int(w.duration))]
    if w.rate is not None and args_rate(w.args) is None:  # else args' -R is the rate
        out += ["-R", f"{w.rate:g}"]
    for script in w.script:
        out += ["-b" if script.split("@")[0] in BUILTINS else "-f", script]
    return (*out, *w.args)


def pgbench_options(params: Mapping[str, Any], layout: Layout) -> PgbenchOptions:
    from iolab.engines.external import parse_dsn
    from iolab.workloads.pgbench.arguments import split_init
    from iolab.workloads.pgbench.run import PgbenchOptions

    w = model_of(PgbenchWorkload, params)
    dsn = params.get("dsn")  # a command's --dsn: a server iolab does not manage
    scale = ("-s", str(w.scale)) if w.scale is not None else ()
    return PgbenchOptions(
        engine=w.engine,
        layout=layout,
        run_args=run_args(w),
        init_args=(*split_init(w.init_args), *scale),
        init=w.init,
        pg_bin=Path(w.pg_bin) if w.pg_bin else None,
        sample_interval=params.get("sample_interval", DEFAULT_SAMPLE_INTERVAL),
        cwd=workdir_of(params),  # an experiment's directory; None: the command's
        dsn=parse_dsn(dsn) if dsn else None,
    )


def _check(params: Mapping[str, Any], checked: Checked) -> None:
    layout, on_device = checked.layout(params)
    options = pgbench_options(params, layout)
    options.validate()
    if options.dsn is not None:  # a server of the user's: its layout is its own
        return
    engine_check(options.engine, layout, params.get("pg_bin"), checked)
    if not on_device:
        checked.once(("dirs", tuple(layout.named_dirs())), lambda: check_layout(layout))


def _prepare(
    params: Mapping[str, Any], resolve: Resolve, events: EventSink
) -> tuple[Body, dict[str, Path], dict[str, str]]:
    from iolab.workloads.pgbench.run import preflight, run_pgbench

    layout = layout_of(params, resolve)
    options = pgbench_options(params, layout)
    preflight(options)
    if options.dsn is None:
        check_layout(layout)
    return (lambda outcome: run_pgbench(options, outcome, events)), layout.roles(), {}


def _estimate(params: Mapping[str, Any]) -> float:
    duration = params.get("duration")
    return 10.0 + (float(duration) if duration is not None else DEFAULT_SECONDS)


def _headline(params: Mapping[str, Any], summary: Mapping[str, Any]) -> Headline:
    return Headline("tps")  # transactions per second, as pgbench printed it


WORKLOAD = Workload(
    name="pgbench",
    model=PgbenchWorkload,
    metric="tps",
    metric_label="tps",
    lower_is_better=False,
    prepare=_prepare,
    estimate=_estimate,
    check=_check,
    metrics=metrics.METRICS,
    headline=_headline,
)
