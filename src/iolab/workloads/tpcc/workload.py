"""TPC-C as the runner sees it: a cell's parameters into its options, its checks before any run
is recorded, its run and its estimate."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from iolab.engines.interface import Layout, check_layout
from iolab.errors import BadInput
from iolab.events import EventSink, Warning
from iolab.units import format_bytes
from iolab.workloads import caps
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
)
from iolab.workloads.tpcc import metrics
from iolab.workloads.tpcc.options import TpccWorkload, parse_mix

if TYPE_CHECKING:
    from iolab.workloads.tpcc.run import TpccOptions

# bytes a warehouse takes on disk once loaded with its keys and indexes: 124.6 MB measured on
# PostgreSQL at W = 1 (SQLite 87.5 MB); rounded up, and the WAL the run writes on top
ON_DISK_PER_WAREHOUSE = 160 * 10**6


def tpcc_options(params: Mapping[str, Any], layout: Layout) -> TpccOptions:
    from iolab.engines.external import parse_dsn
    from iolab.workloads.tpcc.run import TpccOptions

    w = model_of(TpccWorkload, params)
    dsn = params.get("dsn")  # a command's --dsn: a server iolab does not manage
    return TpccOptions(
        engine=w.engine,
        layout=layout,
        warehouses=w.warehouses,
        connections=w.connections,
        mode=None if w.mode == "default" else w.mode,
        mix=parse_mix(w.mix),
        all_warehouses=w.all_warehouses,
        warmup=w.warmup,
        duration=w.duration,
        rate=w.rate,
        think=w.think,
        loaders=w.loaders,
        pg_bin=Path(w.pg_bin) if w.pg_bin else None,
        sample_interval=params.get("sample_interval", DEFAULT_SAMPLE_INTERVAL),
        dsn=parse_dsn(dsn) if dsn else None,
        keep=bool(params.get("keep", False)),
    )


def check_space(options: TpccOptions, free_space: Callable[[Path], tuple[int, int] | None]) -> None:
    """Refuse more warehouses than the data directories' free space holds."""
    if options.dsn is not None:
        return  # the server's own
    dirs = list(dict.fromkeys(options.layout.data_dirs))
    free: dict[int, int] = {}
    for d in dirs:
        found = free_space(d)
        if found is not None:
            free[found[0]] = found[1]
    if not free:
        return
    need = ON_DISK_PER_WAREHOUSE * options.warehouses
    have = sum(free.values())
    if have < need:
        raise BadInput(
            "--warehouses",
            options.warehouses,
            f"{options.warehouses} warehouses take about {format_bytes(need)} on disk and the "
            f"data dirs have {format_bytes(have)} free; give at most "
            f"{max(0, have // ON_DISK_PER_WAREHOUSE)}",
        )


def _check(params: Mapping[str, Any], checked: Checked) -> None:
    from iolab.workloads.tpcc.run import preflight

    layout, on_device = checked.layout(params)
    options = tpcc_options(params, layout)
    options.validate()
    caps.check(params)
    engine_check(options.engine, layout, params.get("pg_bin"), checked)
    if not on_device:
        checked.once(("dirs", tuple(layout.named_dirs())), lambda: check_layout(layout))
        check_space(options, checked.free_space)
        key = ("tpcc", options.engine, options.warehouses, tuple(sorted(layout.settings.items())))
        checked.once(key, lambda: preflight(options))


def _prepare(
    params: Mapping[str, Any], resolve: Resolve, events: EventSink
) -> tuple[Body, dict[str, Path], dict[str, str]]:
    from iolab.workloads.interface import free_space
    from iolab.workloads.tpcc.run import preflight, run_tpcc

    layout = layout_of(params, resolve)
    options = tpcc_options(params, layout)
    caps.check(params)  # before preflight, which reaches a --dsn's server
    warnings = preflight(options)
    check_layout(layout)
    check_space(options, free_space)
    for text in warnings:
        events(Warning(text))
    body = caps.capped(params, lambda outcome: run_tpcc(options, outcome, events))
    return body, layout.roles(), caps.recorded(params)


# a run's seconds beyond its rampup and duration (start, load, keys, statistics, the
# consistency check), fixed and per warehouse, with the data in the cache; measured 2026-11-26
# at commit a5cee1f on 2 vCPUs, W = 1 and 4, 2 users: PostgreSQL 3.8 and 7.9 s, MariaDB 5.9
# and 17.3 s, SQLite 3.8 and 13.1 s. Generating a warehouse count the first time adds about
# 6 s per warehouse.
OVERHEAD_SECONDS = {"postgres": (2.5, 1.5), "mariadb": (2.0, 4.0), "sqlite": (1.0, 3.0)}


def _estimate(params: Mapping[str, Any]) -> float:
    w = model_of(TpccWorkload, params)
    fixed, per_warehouse = OVERHEAD_SECONDS.get(w.engine, (2.0, 4.0))
    return fixed + per_warehouse * w.warehouses + w.warmup + w.duration


def _headline(params: Mapping[str, Any], summary: Mapping[str, Any]) -> Headline:
    return Headline("nopm")  # New-Orders per minute, the database's count, as TPC-C's own


WORKLOAD = Workload(
    name="tpcc",
    model=TpccWorkload,
    metric="nopm",
    metric_label="NOPM",
    lower_is_better=False,
    prepare=_prepare,
    estimate=_estimate,
    check=_check,
    metrics=metrics.METRICS,
    headline=_headline,
)
