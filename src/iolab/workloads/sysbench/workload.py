"""sysbench as the runner sees it: a cell's parameters (named keys and ``args``) into the
options, and its estimate."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from iolab.config.workloads import SysbenchWorkload
from iolab.engines.interface import Layout
from iolab.workloads.sysbench.run import SysbenchOptions

DEFAULT_SECONDS = 10.0  # sysbench's own --time default


def words(w: SysbenchWorkload) -> tuple[str, ...]:
    """The script, the named keys as sysbench's options, then ``args`` as given."""
    out = [w.script]
    named = {
        "threads": w.threads,
        "time": int(w.duration) if w.duration is not None else None,
        "rate": f"{w.rate:g}" if w.rate is not None else None,
        "tables": w.tables,
        "table-size": w.table_size,
    }
    out += [f"--{name}={value}" for name, value in named.items() if value is not None]
    return (*out, *w.args)


def sysbench_options(
    params: Mapping[str, Any], layout: Layout, cwd: Path | None
) -> SysbenchOptions:
    fields = SysbenchWorkload.model_fields
    w = SysbenchWorkload.model_construct(**{k: v for k, v in params.items() if k in fields})
    return SysbenchOptions(
        engine=w.engine,
        layout=layout,
        words=words(w),
        init=w.init,
        pg_bin=Path(w.pg_bin) if w.pg_bin else None,
        sample_interval=params.get("sample_interval", 1.0),
        cwd=cwd,
    )


def estimate(params: Mapping[str, Any]) -> float:
    duration = params.get("duration")
    return 15.0 + (float(duration) if duration is not None else DEFAULT_SECONDS)
