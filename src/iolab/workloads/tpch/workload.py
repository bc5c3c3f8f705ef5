"""TPC-H as the runner sees it: a cell's parameters into its options, its checks before any
run is recorded, its run and its estimate."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from iolab.engines.interface import Layout, check_layout
from iolab.events import EventSink
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
from iolab.workloads.tpch import metrics
from iolab.workloads.tpch.options import TpchWorkload

if TYPE_CHECKING:
    from iolab.workloads.tpch.run import TpchOptions


def tpch_options(params: Mapping[str, Any], layout: Layout) -> TpchOptions:
    from iolab.workloads.tpch.answers import QUERIES
    from iolab.workloads.tpch.run import TpchOptions

    w = model_of(TpchWorkload, params)
    return TpchOptions(
        engine=w.engine,
        layout=layout,
        scale_factor=w.scale_factor,
        compression={"on": True, "off": False}.get(w.compression),
        cold=w.cold,
        timeout=w.timeout,
        queries=tuple(w.queries) if w.queries else QUERIES,
        loaders=w.loaders,
        pg_bin=Path(w.pg_bin) if w.pg_bin else None,
        sample_interval=params.get("sample_interval", DEFAULT_SAMPLE_INTERVAL),
    )


def _tpch_check(params: Mapping[str, Any], checked: Checked) -> None:
    from iolab.workloads.tpch.run import preflight

    layout, on_device = checked.layout(params)
    options = tpch_options(params, layout)
    options.validate()
    caps.check(params)
    engine_check(options.engine, layout, params.get("pg_bin"), checked)
    if not on_device:
        checked.once(("dirs", tuple(layout.named_dirs())), lambda: check_layout(layout))
        key = ("tpch", options.engine, options.scale_factor, tuple(sorted(layout.settings.items())))
        checked.once(key, lambda: preflight(options))


def _tpch(
    params: Mapping[str, Any], resolve: Resolve, events: EventSink
) -> tuple[Body, dict[str, Path], dict[str, str]]:
    from iolab.workloads.tpch.run import preflight, run_tpch

    layout = layout_of(params, resolve)
    options = tpch_options(params, layout)
    preflight(options)
    check_layout(layout)
    caps.check(params)
    roles = layout.roles()
    body = caps.capped(params, lambda outcome: run_tpch(options, outcome, events))
    return body, roles, caps.recorded(params)


def _tpch_estimate(params: Mapping[str, Any]) -> float:
    return 20.0 + 120.0 * float(params["scale_factor"])  # load and 22 queries, SF 1 ~ 2 min


def _tpch_headline(params: Mapping[str, Any], summary: Mapping[str, Any]) -> Headline:
    """The power run's seconds, the sum of its queries' (its report's "power run" row), and
    how many queries they are: a run of some of the 22 says so."""
    count = len(summary.get("queries") or ())
    return Headline("total_seconds", f"for {count} quer{'y' if count == 1 else 'ies'}")


WORKLOAD = Workload(
    name="tpch",
    model=TpchWorkload,
    metric="total_seconds",
    metric_label="total s",
    lower_is_better=True,
    prepare=_tpch,
    estimate=_tpch_estimate,
    check=_tpch_check,
    metrics=metrics.METRICS,
    headline=_tpch_headline,
)
