"""sysbench as the runner sees it: a cell's parameters (the script, named keys and ``args``)
into the options, its checks before any run is recorded, its run and its estimate."""

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
from iolab.workloads.sysbench import metrics
from iolab.workloads.sysbench.arguments import args_rate
from iolab.workloads.sysbench.options import SysbenchWorkload

if TYPE_CHECKING:
    from iolab.workloads.sysbench.run import SysbenchOptions

DEFAULT_SECONDS = 10.0  # sysbench's own --time default


def words(w: SysbenchWorkload) -> tuple[str, ...]:
    """The script, the named keys as sysbench's options, then ``args`` as given."""
    named = {
        "threads": w.threads,
        "time": int(w.duration) if w.duration is not None else None,
        # a rate in args is the rate (the named one is then the same)
        "rate": f"{w.rate:g}" if w.rate is not None and args_rate(w.args) is None else None,
        "tables": w.tables,
        "table-size": w.table_size,
    }
    options = [f"--{name}={value}" for name, value in named.items() if value is not None]
    return (w.script, *options, *w.args)


def sysbench_options(params: Mapping[str, Any], layout: Layout) -> SysbenchOptions:
    from iolab.engines.external import parse_dsn
    from iolab.workloads.sysbench.run import SysbenchOptions

    w = model_of(SysbenchWorkload, params)
    dsn = params.get("dsn")  # a command's --dsn: a server iolab does not manage
    return SysbenchOptions(
        engine=w.engine,
        layout=layout,
        words=words(w),
        init=w.init,
        pg_bin=Path(w.pg_bin) if w.pg_bin else None,
        sample_interval=params.get("sample_interval", DEFAULT_SAMPLE_INTERVAL),
        cwd=workdir_of(params),  # an experiment's directory; None: the command's
        dsn=parse_dsn(dsn) if dsn else None,
    )


def _check(params: Mapping[str, Any], checked: Checked) -> None:
    layout, on_device = checked.layout(params)
    options = sysbench_options(params, layout)
    options.validate()
    if options.dsn is not None:  # a server of the user's: its layout is its own
        return
    engine_check(options.engine, layout, params.get("pg_bin"), checked)
    if not on_device:
        checked.once(("dirs", tuple(layout.named_dirs())), lambda: check_layout(layout))


def _prepare(
    params: Mapping[str, Any], resolve: Resolve, events: EventSink
) -> tuple[Body, dict[str, Path], dict[str, str]]:
    from iolab.workloads.sysbench.run import preflight, run_sysbench

    layout = layout_of(params, resolve)
    options = sysbench_options(params, layout)
    preflight(options)
    if options.dsn is None:
        check_layout(layout)
    return (lambda outcome: run_sysbench(options, outcome, events)), layout.roles(), {}


def _estimate(params: Mapping[str, Any]) -> float:
    duration = params.get("duration")
    return 15.0 + (float(duration) if duration is not None else DEFAULT_SECONDS)


def _check_tools() -> None:
    from iolab.workloads.drivers import tool_path
    from iolab.workloads.sysbench.run import PACKAGE

    tool_path("sysbench", PACKAGE)


def _headline(params: Mapping[str, Any], summary: Mapping[str, Any]) -> Headline:
    return Headline("tps")  # transactions per second, as sysbench printed it


WORKLOAD = Workload(
    name="sysbench",
    model=SysbenchWorkload,
    metric="tps",
    metric_label="tps",
    lower_is_better=False,
    prepare=_prepare,
    estimate=_estimate,
    check=_check,
    metrics=metrics.METRICS,
    headline=_headline,
    check_tools=_check_tools,
)
