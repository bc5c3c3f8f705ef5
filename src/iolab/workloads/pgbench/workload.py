"""pgbench as the runner sees it: a cell's parameters (named keys and ``args``) into the
options, its checks before any run is recorded, its run and its estimate."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from iolab.config.workloads import PgbenchWorkload
from iolab.engines.interface import Layout
from iolab.workloads.pgbench.arguments import split_init
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
    if w.rate is not None:
        out += ["-R", f"{w.rate:g}"]
    for script in w.script:
        out += ["-b" if script.split("@")[0] in BUILTINS else "-f", script]
    return (*out, *w.args)


def init_args(w: PgbenchWorkload) -> tuple[str, ...]:
    scale = ("-s", str(w.scale)) if w.scale is not None else ()
    return (*split_init(w.init_args), *scale)


def pgbench_options(params: Mapping[str, Any], layout: Layout, cwd: Path | None) -> PgbenchOptions:
    fields = PgbenchWorkload.model_fields
    w = PgbenchWorkload.model_construct(**{k: v for k, v in params.items() if k in fields})
    return PgbenchOptions(
        engine=w.engine,
        layout=layout,
        run_args=run_args(w),
        init_args=init_args(w),
        init=w.init,
        pg_bin=Path(w.pg_bin) if w.pg_bin else None,
        sample_interval=params.get("sample_interval", 1.0),
        cwd=cwd,
    )


def estimate(params: Mapping[str, Any]) -> float:
    duration = params.get("duration")
    return 10.0 + (float(duration) if duration is not None else DEFAULT_SECONDS)
