"""What the experiment runner needs of each workload kind: how to run one cell, and its metric.

A kind turns a cell's resolved parameters (workload parameters plus the layout, see
:mod:`iolab.config.experiment`) into the same options and the same ``run_*`` function the
single command uses, so ``iolab run`` and ``iolab populate`` measure the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from iolab.engines.interface import Layout
from iolab.engines.loading import KeyKind, LoadMethod, LoadMode
from iolab.events import EventSink
from iolab.results import RunOutcome
from iolab.units import parse_size

Body = Callable[[RunOutcome], None]


@dataclass(frozen=True)
class Kind:
    """One workload kind. ``metric`` is the summary key the statistics are about."""

    name: str
    metric: str | None  # None: no single number (auto repetitions refused)
    metric_label: str
    lower_is_better: bool
    prepare: Callable[
        [Mapping[str, Any], Callable[[str], Path], EventSink],
        tuple[Body, dict[str, Path], dict[str, str]],
    ]
    estimate: Callable[[Mapping[str, Any]], float]  # seconds per run, before any run measured it


def layout_of(params: Mapping[str, Any], resolve: Callable[[str], Path]) -> Layout:
    """The cell's layout with every directory resolved (``device:NAME`` to its mount point)."""
    return Layout(
        data_dirs=tuple(resolve(d) for d in params["data_dirs"]),
        files=int(params["files"]),
        wal_dir=resolve(params["wal_dir"]) if params.get("wal_dir") else None,
        temp_dir=resolve(params["temp_dir"]) if params.get("temp_dir") else None,
        settings=dict(params.get("settings") or {}),
    )


def _populate(
    params: Mapping[str, Any], resolve: Callable[[str], Path], events: EventSink
) -> tuple[Body, dict[str, Path], dict[str, str]]:
    from iolab.workloads.populate import PopulateOptions, check_layout, run_populate

    layout = layout_of(params, resolve)
    size = params.get("bytes")
    options = PopulateOptions(
        engine=params["engine"],
        layout=layout,
        rows=params.get("rows") if params.get("rows") or size else 10_000,
        size_bytes=parse_size(size, "workload.bytes") if size else None,
        connections=int(params["connections"]),
        commit_every=int(params["commit_every"]),
        method=LoadMethod(params["method"]),
        mode=LoadMode(params["mode"]),
        key=KeyKind(params["key"]),
        batch=int(params["batch"]),
        pg_bin=Path(params["pg_bin"]) if params.get("pg_bin") else None,
    )
    options.validate()
    check_layout(layout)
    roles = layout.roles()
    return (lambda outcome: run_populate(options, outcome, events)), roles, {}


def _populate_estimate(params: Mapping[str, Any]) -> float:
    rows = params.get("rows") or 10_000
    return 5.0 + float(rows) / 3000.0  # a server start, and a slow disk's rows/s


def _disk(
    params: Mapping[str, Any], resolve: Callable[[str], Path], events: EventSink
) -> tuple[Body, dict[str, Path], dict[str, str]]:
    from iolab.analysis.disk import summarize
    from iolab.fio.jobs import DataPattern
    from iolab.fio.runner import fio_version
    from iolab.workloads.diskmark import DiskOptions, check_target, run_profile

    target = resolve(params["data_dirs"][0])
    options = DiskOptions(
        path=target,
        profile=params["profile"],
        size=parse_size(params["size"], "workload.size"),
        runs=int(params["runs"]),
        duration=float(params["duration"]),
        interval=float(params["interval"]),
        data=DataPattern(params["data"]),
        direct=bool(params["direct"]),
        mix=bool(params["mix"]),
    )
    check_target(options)

    def body(outcome: RunOutcome) -> None:
        run_profile(options, outcome, events)
        outcome.summary["tests"] = {
            s.test: {"mbps": s.median.mbps, "iops": s.median.iops, "lat_p99_us": s.median.lat.p99}
            for s in summarize(outcome.disk_passes)
        }

    return body, {"target": target}, {"fio": fio_version()}


def _disk_estimate(params: Mapping[str, Any]) -> float:
    from iolab.workloads.diskmark import DiskOptions

    options = DiskOptions(
        path=Path("."),
        profile=params["profile"],
        runs=int(params["runs"]),
        duration=float(params["duration"]),
        interval=float(params["interval"]),
        mix=bool(params["mix"]),
    )
    return options.estimated_seconds() + 10.0  # and writing the test file


def _tpch(
    params: Mapping[str, Any], resolve: Callable[[str], Path], events: EventSink
) -> tuple[Body, dict[str, Path], dict[str, str]]:
    from iolab.workloads.populate import check_layout
    from iolab.workloads.tpch import TpchOptions, preflight, run_tpch
    from iolab.workloads.tpch_answers import QUERIES

    layout = layout_of(params, resolve)
    compression = {"on": True, "off": False}.get(str(params.get("compression")))
    options = TpchOptions(
        engine=params["engine"],
        layout=layout,
        scale_factor=float(params["scale_factor"]),
        compression=compression,
        cold=bool(params["cold"]),
        timeout=float(params["timeout"]),
        queries=tuple(params["queries"]) if params.get("queries") else QUERIES,
        loaders=params.get("loaders"),
        pg_bin=Path(params["pg_bin"]) if params.get("pg_bin") else None,
    )
    preflight(options)
    check_layout(layout)
    roles = layout.roles()
    return (lambda outcome: run_tpch(options, outcome, events)), roles, {}


def _tpch_estimate(params: Mapping[str, Any]) -> float:
    return 20.0 + 120.0 * float(params["scale_factor"])  # load and 22 queries, SF 1 ~ 2 min


KINDS: dict[str, Kind] = {
    "populate": Kind(
        "populate",
        "elapsed_seconds",
        "elapsed s",
        True,
        _populate,
        _populate_estimate,
    ),
    "disk": Kind("disk", None, "", False, _disk, _disk_estimate),
    "tpch": Kind("tpch", "total_seconds", "total s", True, _tpch, _tpch_estimate),
}
