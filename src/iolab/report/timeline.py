"""The timeline of a run (seed 003's perfmon picture): throughput, device write MB/s, write
latency and queue depth per role, CPU, on one time axis with checkpoints as shaded bands and,
for a TPC-H power run, a dashed line where each query began."""

from __future__ import annotations

import dataclasses
import html
import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

from iolab.analysis.steady import SteadyCriterion, steady_state
from iolab.engines import catalog
from iolab.probes.data import ProbeData, Series, ordered_waits
from iolab.report.charts import Band, Line, Mark, Plot, stack, thin
from iolab.report.interactive import (
    MAX_POINTS,
    SCRIPT,
    STEADY,
    STEADY_COLOUR,
    WARMUP,
    WARMUP_COLOUR,
    block,
    fetched,
    figure,
    head,
)
from iolab.report.interactive import figure_json as interactive_figure_json
from iolab.report.probes import CHECKPOINTS_SHOWN, WAITS_SHOWN
from iolab.report.signature import HTML_MARK
from iolab.results import QueryResult

CPU = ("cpu_user_pct", "cpu_system_pct", "cpu_iowait_pct")
DEVICE = ("write_mbps", "read_mbps", "write_await_ms", "read_await_ms", "aqu_sz")
ENGINES = tuple(k.name for k in catalog.KINDS.values() if k.counts_pages)  # pages allocated
# (probe, name) of every series the timeline may draw: what a report reads of a run
DRIVERS = ("pgbench", "sysbench")  # the probes of the drivers' own progress (transactions/s)
ORDERS = ("nopm", "tpm")  # TPC-C's New-Orders and transactions per minute (workload probe)
SERIES: tuple[tuple[str, str], ...] = (
    ("workload", "rows_per_s"),
    *(("workload", name) for name in ORDERS),
    *((probe, "tps") for probe in DRIVERS),
    *((probe, "pages_allocated_per_s") for probe in ENGINES),
    *(("device", name) for name in DEVICE),
    *(("host", name) for name in CPU),
    *(("latency", name) for name in ("p50_ms", "p99_ms", "max_ms")),
)
KINDS_SHOWN = ("commit", "transaction", "statement")  # the first a run timed gets the panel


def _line(s: Series, label: str, *, dashed: bool = False) -> Line:
    return Line(label, s.times(), list(s.values), dashed=dashed)


def _device_label(s: Series) -> str:
    return f"{s.key.role} ({s.key.subject})" if s.key.role else s.key.subject


def query_marks(results: Sequence[QueryResult]) -> list[Mark]:
    """Where each query of a power run began, for the timeline (queries without a start: none)."""
    return [Mark(r.start_s, f"Q{r.query}") for r in results if r.start_s is not None]


def steady_span(
    summary: Mapping[str, Any], data: ProbeData | None = None
) -> tuple[float, float, float] | None:
    """(start, end, rows/s) of a populate run's steady part after its warm-up (see
    iolab.analysis.steady), or None when it has none. With the run's probes ``data``: a run
    whose recorded steady part began before its warm-up ended (stored before the steady part
    left the warm-up out) has it found again in its rows/s series, with the criterion it
    recorded, after the warm-up: the band never overlaps the warm-up's."""
    rate = summary.get("steady_rows_per_second")
    found = summary.get("steady_state")
    if not isinstance(rate, int | float) or not isinstance(found, dict):
        return None
    start, end = found.get("start_s"), found.get("end_s")
    if not isinstance(start, int | float) or not isinstance(end, int | float):
        return None
    warm = data.warmup_end_s if data is not None else None
    if data is None or warm is None or start >= warm - 1e-9:
        return float(start), float(end), float(rate)
    rows = data.find("workload", "rows_per_s")
    window, tolerance = found.get("window"), found.get("tolerance_pct")
    if not rows or not isinstance(window, int) or not isinstance(tolerance, int | float):
        return None
    criterion = SteadyCriterion(window, float(tolerance))
    again = steady_state(list(rows[0].values), rows[0].times(), criterion, warm)
    if again.rate is None or again.start_s is None or again.end_s is None:
        return None
    return again.start_s, again.end_s, again.rate


def plots(
    data: ProbeData,
    marks: Sequence[Mark] = (),
    steady: tuple[float, float, float] | None = None,
) -> list[Plot]:
    """The panels of a run's timeline, those that have data; ``marks`` on every panel;
    ``steady`` (see :func:`steady_span`) as a line at the steady rate over the steady part."""
    bands = [
        Band(c.start_s, c.end_s, "checkpoint")
        for c in data.checkpoints
        if c.start_s <= data.duration
    ]
    if data.warmup_end_s is not None:
        bands.insert(0, Band(0.0, data.warmup_end_s, WARMUP, WARMUP_COLOUR))
    if steady is not None:
        bands.append(Band(steady[0], steady[1], STEADY, STEADY_COLOUR))
    out: list[Plot] = []
    rows = data.find("workload", "rows_per_s")
    if rows:
        lines = [_line(rows[0], "rows committed/s")]
        if steady is not None:
            start, end, rate = steady
            label = f"steady {rate:,.0f} rows/s"
            lines.append(Line(label, [start, end], [rate, rate], STEADY_COLOUR, dashed=True))
        out.append(Plot("throughput", "rows/s", lines, bands, marks=marks))
    orders = [s for name in ORDERS for s in data.find("workload", name)]
    if orders:
        lines = [_line(s, s.key.name.upper()) for s in orders]
        out.append(Plot("throughput", "per minute", lines, bands, marks=marks))
    tps = [s for probe in DRIVERS for s in data.find(probe, "tps")]
    if tps:
        line = _line(tps[0], f"transactions/s ({tps[0].key.probe}'s progress)")
        out.append(Plot("throughput", "tx/s", [line], bands, marks=marks))
    allocated = [
        s for s in data.series if s.key.probe in ENGINES and s.key.name == "pages_allocated_per_s"
    ]
    if allocated:
        lines = [_line(s, f"{s.key.probe}") for s in allocated]
        out.append(Plot("pages allocated", "pages/s", lines, bands, marks=marks))
    devices = data.find("device", "write_mbps")
    if devices:
        lines = [_line(s, f"write {_device_label(s)}") for s in devices]
        lines += [
            _line(s, f"read {_device_label(s)}", dashed=True)
            for s in data.find("device", "read_mbps")
            if (s.peak or 0) > 0
        ]
        out.append(Plot("device throughput", "MB/s", lines, bands, marks=marks))
    latency = data.find("device", "write_await_ms")
    if latency:
        lines = [_line(s, f"write {_device_label(s)}") for s in latency]
        lines += [
            _line(s, f"read {_device_label(s)}", dashed=True)
            for s in data.find("device", "read_await_ms")
            if (s.peak or 0) > 0
        ]
        out.append(Plot("I/O latency (per completed request)", "ms", lines, bands, marks=marks))
    operations = _operation_latency(data)
    if operations is not None:
        out.append(Plot(operations[0], "ms", operations[1], bands, marks=marks))
    queue = data.find("device", "aqu_sz")
    if queue:
        lines = [_line(s, _device_label(s)) for s in queue]
        out.append(Plot("queue depth (requests in flight)", "requests", lines, bands, marks=marks))
    cpu = [s for name in CPU for s in data.find("host", name, subject="all")]
    if cpu:
        lines = [_line(s, s.key.name.removeprefix("cpu_").removesuffix("_pct")) for s in cpu]
        out.append(Plot("CPU (all cores)", "%", lines, bands, marks=marks))
    return out


def _operation_latency(data: ProbeData) -> tuple[str, list[Line]] | None:
    """The panel of the loaders' own latency: p50, p99 and max per interval of the first kind
    of operation the run timed (commits where there are separate ones); for a run that timed
    other kinds (TPC-C's transaction types), the p99 of each."""
    for kind in KINDS_SHOWN:
        if not data.find("latency", "p99_ms", subject=kind):
            continue
        lines = [
            _line(s, f"{kind} {name.removesuffix('_ms')}", dashed=name != "p99_ms")
            for name in ("p50_ms", "p99_ms", "max_ms")
            for s in data.find("latency", name, subject=kind)
        ]
        return f"{kind} latency (per interval)", lines
    each = data.find("latency", "p99_ms")
    if each:
        lines = [_line(s, f"{s.key.subject} p99") for s in each]
        return "p99 latency per transaction type (per interval)", lines
    return None


def svg(
    data: ProbeData,
    title: str,
    marks: Sequence[Mark] = (),
    steady: tuple[float, float, float] | None = None,
    max_points: int | None = None,
) -> str:
    """The timeline as one SVG; ``max_points``: each series thinned to that many points
    (:func:`downsampled`: an experiment report's), else as many as the chart has columns."""
    panels = plots(data, marks, steady)
    if max_points is not None:
        panels = [downsampled(p, max_points) for p in panels]
    return stack(panels, x_max=data.duration, title=title)


def downsampled(plot: Plot, max_points: int) -> Plot:
    """``plot`` with each series at most ``max_points`` points: the time cut into
    ``max_points // 2`` equal slices, each slice's lowest and highest value kept
    (:func:`~iolab.report.charts.thin`), so a spike or a stall of one sample stays visible."""
    lines = [
        dataclasses.replace(line, xs=xs, ys=ys)
        for line in plot.lines
        for xs, ys in [thin(line.xs, line.ys, max(1, max_points // 2))]
    ]
    return dataclasses.replace(plot, lines=lines)


def interactive(
    data: ProbeData,
    title: str,
    marks: Sequence[Mark] = (),
    max_points: int = MAX_POINTS,
    steady: tuple[float, float, float] | None = None,
    src: str | None = None,
) -> str:
    """The timeline as an interactive Plotly chart (:mod:`iolab.report.interactive`): a box
    and its figure; the page carries :func:`~iolab.report.interactive.head` and its script.
    With ``src``, the box only: the page fetches the figure (:func:`figure_json` of the same
    arguments) from that address when the box nears the screen."""
    panels = plots(data, marks, steady)
    ident = f"timeline-{next(_ids)}"
    if src is not None:
        return fetched(ident, src, len(panels))
    return block(ident, panels, data.duration, title, max_points)


def figure_json(
    data: ProbeData,
    title: str,
    marks: Sequence[Mark] = (),
    max_points: int = MAX_POINTS,
    steady: tuple[float, float, float] | None = None,
) -> str:
    """The figure :func:`interactive` draws, as the JSON a page fetches."""
    panels = plots(data, marks, steady)
    return interactive_figure_json(figure(panels, data.duration, title, max_points))


_ids = itertools.count(1)  # each figure's id: unique within any page this process writes


def _cell(value: float | None, fmt: str = "{:.1f}") -> str:
    return (
        "-"
        if value is None or (isinstance(value, float) and math.isnan(value))
        else (fmt.format(value))
    )


def sections(data: ProbeData, run_id: int | None = None) -> str:
    """The checkpoints (the first 20), the top wait events and the probes' notes of a run (of
    ``run_id``, named where the rest can be found), as HTML."""
    rows = "".join(
        f"<tr><td>{i}</td><td>{c.start_s:.1f}</td><td>{_cell(c.end_s)}</td>"
        f"<td>{_cell(c.pages, '{:,}')}</td><td>{html.escape(c.kind)}</td></tr>"
        for i, c in enumerate(data.checkpoints[:CHECKPOINTS_SHOWN], 1)
    )
    more = len(data.checkpoints) - CHECKPOINTS_SHOWN
    checkpoints = (
        "<h3>Checkpoints</h3><table><tr><th>#</th><th>start s</th><th>end s</th><th>pages</th>"
        f"<th>kind</th></tr>{rows}</table>"
        + (
            f"<p>{more:,} more, shaded in the timeline; `iolab results show "
            f"{'RUN' if run_id is None else run_id} --json` lists them all.</p>"
            if more > 0
            else ""
        )
        if data.checkpoints
        else ""
    )
    waits = ordered_waits(data.waits)[:WAITS_SHOWN]
    wait_rows = "".join(
        f"<tr><td>{html.escape(w.wait_class)}</td><td>{html.escape(w.event)}</td>"
        f"<td>{100 * w.share:.1f}%</td><td>{w.est_seconds:.2f}</td><td>{w.samples:,}</td></tr>"
        for w in waits
    )
    wait_table = (
        "<h3>Wait statistics</h3><table><tr><th>class</th><th>event</th><th>share</th>"
        f"<th>est. seconds</th><th>samples</th></tr>{wait_rows}</table>"
        if waits
        else ""
    )
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in data.notes)
    return checkpoints + wait_table + (f"<h3>Probe notes</h3><ul>{notes}</ul>" if notes else "")


STYLE = (
    "body{font-family:'DejaVu Sans',Arial,sans-serif;margin:20px;color:#222;max-width:1100px}"
    "table{border-collapse:collapse;margin-bottom:16px}"
    "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right;font-size:13px}"
    "td:first-child,th:first-child{text-align:left}"
    "p,li{margin:4px 0;font-size:13px}h2{font-size:18px;margin-top:28px}h3{font-size:15px}"
    "svg{max-width:100%;height:auto}"
    "@media print{h2{page-break-before:auto}svg{page-break-inside:avoid}}"
)


SINGLE_RUN_POINTS = 40_000  # a page of one run keeps a 10-hour run's every 1 s sample


def html_page(
    data: ProbeData,
    title: str,
    lines: Sequence[str],
    run_id: int | None = None,
    marks: Sequence[Mark] = (),
    steady: tuple[float, float, float] | None = None,
) -> str:
    """One self-contained HTML file: the interactive timeline, checkpoints and the top wait
    events."""
    intro = "".join(f"<p>{html.escape(line)}</p>" for line in lines)
    chart = interactive(data, title, marks, SINGLE_RUN_POINTS, steady)
    return (
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>{HTML_MARK}"
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>"
        f"<main>{intro}{chart}{sections(data, run_id)}</main>"
        f"{head()}{SCRIPT}</body></html>\n"
    )
