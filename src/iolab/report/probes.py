"""What the probes recorded, as terminal tables and JSON: devices per role, engine and host
counters, I/O per backend type, wait statistics and checkpoints."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from rich.table import Table

from iolab.probes.data import ProbeData, Series, ordered_waits
from iolab.probes.interface import Kind
from iolab.units import format_bytes

WAITS_SHOWN = 15
CHECKPOINTS_SHOWN = 20

# The device table: column title -> series name
DEVICE_COLUMNS = (
    ("read MB/s", "read_mbps"),
    ("write MB/s", "write_mbps"),
    ("read IOPS", "read_iops"),
    ("write IOPS", "write_iops"),
    ("read ms", "read_await_ms"),
    ("write ms", "write_await_ms"),
    ("queue", "aqu_sz"),
    ("util %", "util_pct"),
)
IO_OPS = ("read", "write", "extend", "fsync")


def number(value: float | None) -> str:
    if value is None or math.isnan(value):
        return "-"
    size = abs(value)
    if size >= 100 or value == 0:
        return f"{value:,.0f}"
    if size >= 10:
        return f"{value:.1f}"
    if size >= 0.01:
        return f"{value:.2f}"
    return f"{value:.3f}"


def device_table(data: ProbeData) -> Table | None:
    """Per device behind the run's roles: the mean over the run, and the peak sample."""
    if not data.roles:
        return None
    table = Table(
        title="devices (ms per completed request; queue: requests in flight)", title_justify="left"
    )
    table.add_column("role")
    table.add_column("device")
    table.add_column("")
    for title, _ in DEVICE_COLUMNS:
        table.add_column(title, justify="right")
    table.add_column("written", justify="right")
    shown: set[str] = set()
    for r in data.roles:
        if r.device is None:
            what = f"memory ({r.filesystem})" if r.kind == "memory" else "no block device"
            table.add_row(r.role, what, "", *["-"] * (len(DEVICE_COLUMNS) + 1))
            continue
        if r.device in shown:
            continue
        shown.add(r.device)
        found = {
            s.key.name: s
            for s in data.series
            if s.key.probe == "device" and s.key.subject == r.device
        }
        if not found:
            continue
        role = next(iter(found.values())).key.role
        kind = r.kind if r.disk is None else f"{r.kind} of {r.disk}"
        written = found.get("write_mbps")
        means = [number(found[n].mean) if n in found else "-" for _, n in DEVICE_COLUMNS]
        peaks = [number(found[n].peak) if n in found else "-" for _, n in DEVICE_COLUMNS]
        total = format_bytes(written.total * 1e6) if written is not None else "-"
        table.add_row(role, f"{r.device} ({kind})", "mean", *means, total)
        table.add_row("", "", "peak", *peaks, "", end_section=True)
    return table


def counters_table(data: ProbeData) -> Table | None:
    """The workload's, the engine's and the host's series (all CPUs together), one per row."""
    wanted = [
        s
        for s in data.series
        if s.key.probe not in ("device",)
        and not s.key.name.startswith("io_")
        and not (s.key.probe == "host" and s.key.subject not in ("all", ""))
    ]
    if not wanted:
        return None
    table = Table(title="counters (mean / peak over the run)", title_justify="left")
    for col in ("probe", "series", "of", "unit", "mean", "peak", "total"):
        table.add_column(col, justify="right" if col in ("mean", "peak", "total") else "left")
    for s in wanted:
        total = number(s.total) if s.key.kind is Kind.RATE else ""
        # a size recorded in MB (10^6 bytes: memory, a file, a checkpoint's age) shown in MiB
        scale, unit = (1e6 / 2**20, "MiB") if s.key.unit == "MB" else (1.0, s.key.unit)
        table.add_row(
            s.key.probe,
            s.key.name,
            s.key.subject,
            unit,
            number(None if s.mean is None else s.mean * scale),
            number(None if s.peak is None else s.peak * scale),
            total,
        )
    return table


def io_table(data: ProbeData) -> Table | None:
    """pg_stat_io per backend type and object: operations per second and ms per operation."""
    subjects: dict[str, dict[str, Series]] = {}
    for s in data.series:
        if s.key.name.startswith("io_"):
            subjects.setdefault(s.key.subject, {})[s.key.name] = s
    if not subjects:
        return None
    table = Table(
        title="I/O by backend type and object (pg_stat_io; mean ops/s, ms per operation)",
        title_justify="left",
    )
    table.add_column("backend/object")
    for op in IO_OPS:
        table.add_column(f"{op}s/s", justify="right")
        table.add_column(f"ms/{op}", justify="right")
    for subject in sorted(subjects):
        found = subjects[subject]
        cells = []
        for op in IO_OPS:
            rate, latency = found.get(f"io_{op}s_per_s"), found.get(f"io_{op}_ms")
            cells.append(number(rate.mean) if rate is not None else "-")
            cells.append(number(latency.mean) if latency is not None else "-")
        table.add_row(subject, *cells)
    return table


def waits_table(data: ProbeData) -> Table | None:
    if not data.waits:
        return None
    waits = ordered_waits(data.waits)
    source = waits[0].source
    how = (
        "share of all timed waits of the sessions; seconds from the timers"
        if source == "performance_schema"
        else f"share of session-samples every {data.wait_interval:g} s; session-seconds"
    )
    table = Table(title=f"wait statistics ({source}: {how})", title_justify="left")
    for col in ("class", "event", "share", "est. seconds", "samples"):
        table.add_column(col, justify="left" if col in ("class", "event") else "right")
    for w in waits[:WAITS_SHOWN]:
        table.add_row(
            w.wait_class,
            w.event,
            f"{100 * w.share:.1f}%",
            number(w.est_seconds),
            f"{w.samples:,}",
        )
    if len(waits) > WAITS_SHOWN:
        table.caption = f"{len(waits) - WAITS_SHOWN} smaller wait events not shown (see --json)"
    return table


def checkpoints_table(data: ProbeData) -> Table | None:
    if not data.checkpoints:
        return None
    table = Table(title="checkpoints (seconds from the start)", title_justify="left")
    for col in ("#", "start", "end", "seconds", "pages", "kind"):
        table.add_column(col, justify="left" if col == "kind" else "right")
    shown = data.checkpoints[:CHECKPOINTS_SHOWN]
    for i, c in enumerate(shown, 1):
        end = "running" if c.end_s is None else f"{c.end_s:.1f}"
        seconds = "-" if c.end_s is None else f"{c.end_s - c.start_s:.2f}"
        pages = "-" if c.pages is None else f"{c.pages:,}"
        table.add_row(str(i), f"{c.start_s:.1f}", end, seconds, pages, c.kind)
    if len(data.checkpoints) > CHECKPOINTS_SHOWN:
        table.caption = f"{len(data.checkpoints) - CHECKPOINTS_SHOWN} more (see --json)"
    return table


def tables(data: ProbeData) -> list[Table]:
    made = [
        device_table(data),
        counters_table(data),
        io_table(data),
        waits_table(data),
        checkpoints_table(data),
    ]
    return [t for t in made if t is not None]


def series_json(s: Series) -> dict[str, Any]:
    def finite(v: float | None) -> float | None:
        return v if v is not None and math.isfinite(v) else None

    return {
        "probe": s.key.probe,
        "name": s.key.name,
        "subject": s.key.subject,
        "role": s.key.role,
        "unit": s.key.unit,
        "kind": s.key.kind.value,
        "samples": s.n,
        "interval": s.interval,
        "mean": finite(s.mean),
        "peak": finite(s.peak),
        "total": finite(s.total),
    }


def probes_json(data: ProbeData, *, values: bool = False) -> dict[str, Any]:
    """The run's probe data as JSON: whole-run figures per series (with ``values``, the samples
    too, NaN as null), waits, checkpoints, roles and notes."""
    series = []
    for s in data.series:
        doc = series_json(s)
        if values:
            doc["t"] = [round(t, 3) for t in s.times()]
            doc["values"] = [v if math.isfinite(v) else None for v in s.values]
        series.append(doc)
    return {
        "interval": data.interval,
        "wait_interval": data.wait_interval,
        "duration": data.duration,
        "roles": [asdict(r) for r in data.roles],
        "notes": list(data.notes),
        "series": series,
        "waits": [asdict(w) for w in ordered_waits(data.waits)],
        "checkpoints": [asdict(c) for c in data.checkpoints],
    }


def recorded_line(data: ProbeData, run_id: int) -> str:
    return (
        f"[dim]probes: {len(data.series)} series every {data.interval:g} s, "
        f"{len(data.waits)} wait events, {len(data.checkpoints)} checkpoints; "
        f"`iolab results show {run_id}` lists them, `iolab timeline {run_id} -o "
        f"run{run_id}.html` draws them[/]"
    )


def notes_lines(notes: Sequence[str]) -> list[str]:
    return [f"[yellow]probe:[/] {n}" for n in notes]
