"""The HTML report: one self-contained file (inline SVG and CSS, no network).

Sections, the answer first: a few lines of findings (the best cell, the significant
differences with where the limit moved, one line for the pairs that differ in nothing
significant with a power estimate, how many comparisons were made), then the charts, filling
the page's width: the grouped charts of :mod:`iolab.report.grouped` (the metric per cell
with 95% confidence intervals, one matrix key on x and another in colour, and the speed-up
against the baseline) and the baseline's drift over time. Then the rest: every finding and
the warnings, the Why, the per-cell table, each cell's device write MB/s against the
device's sequential write (efficiency), disk profiles (the CrystalDiskMark grid), a timeline
with wait statistics and checkpoints for one run of each cell (its median run; SVG, each
series thinned to :data:`TIMELINE_POINTS`; interactive in ``iolab serve``'s page), and the
environment and settings. Statistics come from :mod:`iolab.analysis`; nothing is recomputed.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from iolab.analysis import diagnosis as dx
from iolab.analysis.disk import DiskTestSummary
from iolab.analysis.efficiency import drift_sentence, efficiency_sentence
from iolab.analysis.findings import (
    Findings,
    Ratio,
    answer,
    comparisons_sentence,
    gain_sentence,
    sentence,
)
from iolab.analysis.queries import fastest
from iolab.report import interactive, spectrum, timeline
from iolab.report.charts import GroupedBar, Line, Plot, grouped_bar_chart, stack
from iolab.report.disk import by_group, spread_text
from iolab.report.disk import direction_of as _direction
from iolab.report.disk import group_of as _group
from iolab.report.grouped import charts as grouped_charts
from iolab.report.grouped import matrix_keys
from iolab.report.signature import HTML_MARK
from iolab.report.value import ExperimentReport, ReportCell, RunView
from iolab.report.why import finding_lines, line_html
from iolab.report.why import html_section as why_html
from iolab.report.why import run_limits as why_limits


def _e(text: object) -> str:
    return html.escape(str(text))


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:,.4g}"


def _table(head: Sequence[str], rows: Iterable[Sequence[str]], css: str = "cells") -> str:
    """A table of ready-made cells (already escaped HTML); the header is escaped here."""
    th = "".join(f"<th>{_e(h)}</th>" for h in head)
    trs = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table class='{css}'><tr>{th}</tr>{trs}</table>"


HEADLINE_SHOWN = 3  # significant differences in the headline; every one is under Findings


def headline_html(f: Findings, verdicts: dx.Why | None = None) -> str:
    """The page's first block, read before the charts: the best cell, the significant
    differences (the largest first, at most :data:`HEADLINE_SHOWN`, each with where the limit
    moved between its cells when ``verdicts`` holds them), the one line of the pairs that differ
    in nothing significant with its power estimate, and one line saying how many comparisons
    were made and what the rest of the page holds."""
    lines = finding_lines(f, verdicts)
    significant = [x for x in lines if x.ratio is not None]
    items = _best_item(f) + [line_html(x) for x in significant[:HEADLINE_SHOWN]]
    items += [line_html(x) for x in lines if x.ratio is None]
    made = answer(f).comparisons
    kept = sum(x.significant for x in f.families) if f.families else len(significant)
    rest = [f"{kept} of {made} comparison(s) significant" if made else "no comparison made"]
    if len(significant) > HEADLINE_SHOWN:
        rest.append(f"{len(significant) - HEADLINE_SHOWN} more significant below")
    if f.warnings:
        rest.append(f"{len(f.warnings)} warning(s)")
    items.append(
        f"<li class='note'>{_e('; '.join(rest))}: every finding, the warnings and the Why "
        "follow the charts</li>"
    )
    return "<section id='headline'><h2>Findings</h2><ul>" + "".join(items) + "</ul></section>"


def _best_item(f: Findings) -> list[str]:
    """The best cell's line (its mean and interval), as both findings blocks open with it."""
    if f.best is None or f.best.summary is None:
        return []
    s = f.best.summary
    ci = f" (95% CI {_num(s.ci_low)} - {_num(s.ci_high)})" if s.ci_low is not None else ""
    return [
        f"<li class='best'><b>best: {_e(f.best.cell.label)}</b>: {_e(f.metric)} "
        f"{_num(s.mean)}{ci}, n = {s.n}</li>"
    ]


def findings_html(f: Findings, verdicts: dx.Why | None = None) -> str:
    """Every finding: each significant difference with where the limit moved, the one line of
    the pairs that differ in nothing significant, each matrix key's gain, and every comparison
    made in its own line (folded), then efficiency, drift, the comparisons' count and the
    warnings."""
    items = _best_item(f) + [line_html(x) for x in finding_lines(f, verdicts)]
    items += [f"<li>{_e(gain_sentence(d))}</li>" for d in f.dimensions if len(d.pairs) > 1]
    every = _every_comparison(f)
    if every:
        pairs = "".join(f"<li>{_e(sentence(r))}</li>" for r in every)
        items.append(
            f"<li><details><summary>every comparison ({len(every)})</summary><ul>{pairs}</ul>"
            "</details></li>"
        )
    items += [f"<li>{_e(efficiency_sentence(e))}</li>" for e in f.best_efficiency()]
    if f.drift is not None and not f.drift.trend.significant:  # significant: a warning
        items.append(f"<li>{_e(drift_sentence(f.drift, f.metric))}</li>")
    if f.families:
        items.append(f"<li class='note'>{_e(comparisons_sentence(f))}</li>")
    warnings = "".join(f"<li class='warn'>{_e(w)}</li>" for w in f.warnings)
    return (
        "<section id='findings'><h2>Every finding</h2><ul>"
        + "".join(items)
        + "</ul>"
        + (f"<h3>Warnings</h3><ul>{warnings}</ul>" if warnings else "")
        + "</section>"
    )


def _every_comparison(f: Findings) -> list[Ratio]:
    """Each comparison made, in each family it was made in (the best cell's and the baseline's
    among all pairs of cells, each matrix key's pairs among its own), once."""
    seen: set[tuple[frozenset[str], float | None]] = set()
    out = []
    for r in (*f.best_vs, *f.vs_baseline, *(p for d in f.dimensions for p in d.pairs)):
        key = (frozenset((r.a, r.b)), r.p_adjusted)
        if key not in seen:
            seen.add(key)
            out.append(r)
    return out


def efficiency_table(f: Findings) -> str:
    """Every cell's write MB/s per device against the device's sequential write."""
    if not f.efficiency:
        return ""
    table = _table(
        ("cell", "device", "roles", "write MB/s", "limit MB/s", "share", "limit from"),
        (
            (
                _e(e.cell),
                _e(e.device),
                _e("+".join(e.roles)),
                f"{e.mbps:,.1f}",
                f"{e.limit.mbps:,.0f}",
                f"{e.share:.0%}",
                f"{_e(e.limit.test)}, disk run {e.limit.run_id}",
            )
            for e in f.efficiency
        ),
    )
    return (
        "<section id='efficiency'><h2>Efficiency against the device</h2><p>Bytes the block "
        "device wrote during the load / the load's elapsed time (median over the cell's runs), "
        "as a share of the same device's sequential write MB/s from <code>iolab disk</code>."
        f"</p>{table}</section>"
    )


def queries_table(f: Findings) -> str:
    """Median seconds of each query per cell (query workloads); the fastest cell in bold."""
    if not f.queries:
        return ""
    rows = []
    for n in sorted({n for q in f.queries for n in q.seconds}):
        best = fastest(f.queries, n)
        row = [f"Q{n}"]
        for q in f.queries:
            v = q.seconds.get(n)
            text = "-" if v is None else f"{v:.3f}"
            row.append(f"<b>{text}</b>" if q.cell == best else text)
        rows.append(row)
    return (
        "<section id='queries'><h2>Seconds per query</h2><p>The median over each cell's done "
        "runs; the fastest cell of each query in bold.</p>"
        + _table(["query", *(q.cell for q in f.queries)], rows)
        + "</section>"
    )


def drift_chart(f: Findings, unit: str) -> str:
    """The baseline cell's metric over the experiment, with its least-squares line."""
    d = f.drift
    if d is None:
        return ""
    seconds = [h * 3600.0 for h in d.hours]
    fitted = [d.trend.intercept + d.trend.slope * h for h in d.hours]
    plot = Plot(
        f"{f.metric} of the baseline, run by run",
        unit,
        lines=[
            Line("baseline runs", seconds, list(d.values)),
            Line(f"trend {d.trend.change:+.1%}", seconds, fitted, dashed=True),
        ],
        y_min=None,
        height=200,
    )
    return (
        stack(
            [plot],
            x_max=max(seconds),
            x_label="seconds since the baseline's first run",
            title=f"drift of the baseline {d.cell}",
        )
        + f"<p>{_e(drift_sentence(d, f.metric))}</p>"
    )


def cells_table(f: Findings) -> str:
    head = "".join(
        f"<th>{h}</th>"
        for h in (
            "#",
            "cell",
            "n",
            "failed",
            "mean",
            "median",
            "95% CI",
            "CV",
            "min",
            "max",
            "note",
        )
    )
    rows = []
    for i, c in enumerate(f.cells, 1):
        s = c.summary
        if s is None:
            rows.append(
                f"<tr><td>{i}</td><td>{_e(c.cell.label)}</td><td>0</td><td>{c.cell.failed}</td>"
                + "<td>-</td>" * 6
                + "<td>no finished run has this metric</td></tr>"
            )
            continue
        notes = []
        if f.best is c:
            notes.append("best")
        if s.too_wide:
            notes.append("spread too wide to trust")
        if s.outliers:
            notes.append(f"{len(s.outliers)} outlier(s)")
        rows.append(
            f"<tr><td>{i}</td><td>{_e(c.cell.label)}</td><td>{s.n}</td><td>{c.cell.failed}</td>"
            f"<td>{_num(s.mean)}</td><td>{_num(s.median)}</td>"
            f"<td>{_num(s.ci_low)} - {_num(s.ci_high)}</td>"
            f"<td>{'-' if s.cv is None else f'{s.cv:.1%}'}</td>"
            f"<td>{_num(s.min)}</td><td>{_num(s.max)}</td><td>{_e(', '.join(notes))}</td></tr>"
        )
    return f"<table class='cells'><tr>{head}</tr>{''.join(rows)}</table>"


def disk_section(title: str, summaries: Sequence[DiskTestSummary]) -> str:
    """The CrystalDiskMark-like table: MB/s (median and best), IOPS, latency per test."""
    table = _table(
        ("test", "MB/s median", "MB/s best", "IOPS", "lat mean µs", "p99 µs", "spread"),
        (
            (
                _e(s.test),
                f"{s.median.mbps:,.1f}",
                f"{s.best.mbps:,.1f}",
                f"{s.median.iops:,.0f}",
                f"{s.median.lat.mean:,.0f}",
                f"{s.median.lat.p99:,.0f}",
                spread_text(s),
            )
            for s in summaries
        ),
        css="disk",
    )
    bars = [
        GroupedBar(_group(s.test), _direction(s.test), s.median.mbps, text=f"{s.median.mbps:,.0f}")
        for s in summaries
    ]
    chart = (
        grouped_bar_chart(
            bars,
            title=f"disk: {title}",
            y_label="MB/s, median of the passes",
            x_label="test",
            legend_title="direction",
            height=200,
        )
        + "<p class='caption'>One bar: one test's median MB/s over its measured passes.</p>"
        if bars
        else ""
    )
    return f"<h3>{_e(title)}</h3>{tiles(summaries)}{chart}{table}"


def tiles(summaries: Sequence[DiskTestSummary]) -> str:
    """CrystalDiskMark's grid: a row per test, a tile per direction, the best pass large and
    the median beneath (MB/s; commits/s for the commit test)."""
    directions, rows = by_group(summaries)
    if not rows:
        return ""

    def tile(s: DiskTestSummary | None) -> str:
        if s is None:
            return "<td class='tile none'>-</td>"
        commits = s.commits_per_second
        best, median = (
            (s.best.iops, commits) if commits is not None else (s.best.mbps, s.median.mbps)
        )
        unit = "commits/s" if commits is not None else "MB/s"
        return f"<td class='tile'><b>{best:,.2f}</b><small>median {median:,.2f} {unit}</small></td>"

    head = "".join(f"<th>{_e(d)}</th>" for d in directions)
    body = "".join(
        f"<tr><th class='test'>{_e(group)}</th>"
        + "".join(tile(cells.get(d)) for d in directions)
        + "</tr>"
        for group, cells in rows.items()
    )
    return (
        f"<table class='cdm'><tr><th></th>{head}</tr>{body}</table>"
        "<p class='caption'>As CrystalDiskMark shows it: the best measured pass of each test "
        "(MB/s; commits/s for the commit test), the median of the passes beneath.</p>"
    )


def _flat(prefix: str, value: Any, out: list[tuple[str, str]]) -> None:
    if isinstance(value, Mapping):
        for k, v in value.items():
            _flat(f"{prefix}.{k}" if prefix else str(k), v, out)
    elif isinstance(value, list) and value and isinstance(value[0], Mapping):
        for i, v in enumerate(value):
            _flat(f"{prefix}[{i}]", v, out)
    else:
        out.append((prefix, json.dumps(value) if not isinstance(value, str) else value))


def key_values(title: str, data: Mapping[str, Any]) -> str:
    pairs: list[tuple[str, str]] = []
    _flat("", data, pairs)
    rows = "".join(f"<tr><td>{_e(k)}</td><td class='v'>{_e(v)}</td></tr>" for k, v in pairs)
    return f"<details><summary>{_e(title)}</summary><table class='kv'>{rows}</table></details>"


TILE_STYLE = (
    "table.cdm{border-collapse:separate;border-spacing:4px;margin:8px 0}"
    "table.cdm th.test{background:#2f7d32;color:#fff;padding:6px 12px;text-align:left}"
    "td.tile{background:#e8f3e8;border:1px solid #9cc59e;min-width:150px;padding:6px 12px;"
    "text-align:right}td.tile b{display:block;font-size:22px}td.tile small{color:#555}"
)
SAVE_STYLE = "div.save{font-size:12px;color:#555;margin:-4px 0 8px}div.save a{margin-left:6px}"
# Under each static chart, links that save it as SVG or PNG (drawn on a canvas in the page: no
# network); the interactive timelines have their own buttons in Plotly's mode bar. ``iolab
# serve`` serves it as a file (/static/save.js).
SAVE_JS = (
    "(function(){var n=0;document.querySelectorAll('svg[role=img]').forEach("
    "function(svg){n+=1;var name='chart-'+n;var t=svg.querySelector('title');"
    "if(t){name=t.textContent.replace(/[^A-Za-z0-9]+/g,'-').replace(/^-|-$/g,'').slice(0,60)"
    "||name;}var text=new XMLSerializer().serializeToString(svg);"
    "var url=URL.createObjectURL(new Blob([text],{type:'image/svg+xml'}));"
    "var box=document.createElement('div');box.className='save';box.textContent='save:';"
    "var a=document.createElement('a');a.href=url;a.download=name+'.svg';a.textContent='SVG';"
    "var p=document.createElement('a');p.href='#';p.textContent='PNG';"
    "p.onclick=function(e){e.preventDefault();var img=new Image();img.onload=function(){"
    "var c=document.createElement('canvas');c.width=img.width*2;c.height=img.height*2;"
    "var g=c.getContext('2d');g.scale(2,2);g.drawImage(img,0,0);c.toBlob(function(b){"
    "var d=document.createElement('a');d.href=URL.createObjectURL(b);d.download=name+'.png';"
    "d.click();});};img.src=url;};"
    "box.appendChild(a);box.appendChild(p);svg.parentNode.insertBefore(box,svg.nextSibling);"
    "});})();"
)
SAVE_SCRIPT = f"<script>{SAVE_JS}</script>"
CHART = re.compile(r'<svg xmlns="http://www.w3.org/2000/svg".*?</svg>', re.S)
_TITLE = re.compile(r"<title>(.*?)</title>", re.S)


def chart_files(html_page: str) -> list[tuple[str, str]]:
    """Every chart of a report page (a file's: its timelines drawn in the page too) as ``(file
    stem, SVG)``, numbered in page order (``iolab report --png DIR``)."""
    svgs = CHART.findall(html_page)
    out = []
    for i, svg in enumerate(svgs, 1):
        found = _TITLE.search(svg)
        words = re.sub(r"[^A-Za-z0-9]+", "-", html.unescape(found.group(1)) if found else "")
        out.append((f"{i:02d}-{words.strip('-')[:60] or 'chart'}", svg))
    return out


TIMELINE_POINTS = interactive.MAX_POINTS  # per series and panel of a report's timeline
# The charts fill the page's width: a grid of as many columns of at least 520 px as fit, each
# chart (an SVG scaled to its column by its viewBox) with its caption; a timeline, the width.
PAGE_STYLE = (
    "body{max-width:1600px}div.charts{display:grid;gap:8px 20px;"
    "grid-template-columns:repeat(auto-fit,minmax(520px,1fr))}"
    "figure.chart{margin:0}figure.chart svg,#runs svg{width:100%;height:auto}"
)
_FIGURE = re.compile(
    r"<svg xmlns=\"http://www.w3.org/2000/svg\".*?</svg>(?:<p(?: class='caption')?>.*?</p>)?", re.S
)


def figures(charts: str) -> str:
    """Static charts (SVG, each followed by its caption) as a grid that fills the page's width,
    each chart and its caption one cell."""
    if not charts:
        return ""
    cells = _FIGURE.sub(lambda m: f"<figure class='chart'>{m.group(0)}</figure>", charts)
    return f"<div class='charts'>{cells}</div>"


def page(
    title: str,
    subtitle: str,
    findings: Findings,
    unit: str,
    *,
    disks: Sequence[tuple[str, Sequence[DiskTestSummary]]] = (),
    runs: Sequence[RunView] = (),
    cell_params: Mapping[str, Mapping[str, Any]] | None = None,
    cores: Mapping[str, str] | None = None,
    environment: Mapping[str, Any] | None = None,
    spectra: Sequence[spectrum.Spectrum] = (),
    chart_by: Sequence[str] = (),
    figure_src: Callable[[RunView], str] | None = None,
    scripts_at: str | None = None,
    why: str = "",
    limits: Mapping[str, str] | None = None,
    verdicts: dx.Why | None = None,
) -> str:
    """The report page. ``figure_src``: where the page fetches each run's timeline figure
    (``iolab serve``); without it, every figure is in the page. ``scripts_at``: where a
    server serves the page's scripts (``iolab serve``'s /static, whose policy runs no inline
    script); without it, every script is in the page. ``verdicts``: the cells' stored
    verdicts, for where the limit moved in each significant difference."""
    parts = [
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>{HTML_MARK}",
        f"<title>{_e(title)}</title><style>{timeline.STYLE}{PAGE_STYLE}"
        ".best{color:#1a7f37}.warn{color:#9a6700}td.v{text-align:left;font-family:monospace}"
        "details{margin:6px 0}p.caption{color:#555;margin:0 0 18px}li.note{color:#555}"
        f"{TILE_STYLE}{SAVE_STYLE}</style><link rel='icon' href='data:,'></head><body>",
        f"<header><h1>{_e(title)}</h1><p>{_e(subtitle)}</p></header><main>",
        headline_html(findings, verdicts),
        "<section id='charts'><h2>Charts</h2>",
        figures(
            grouped_charts(
                findings, unit, matrix_keys([c.cell.values for c in findings.cells]), chart_by
            )
            + drift_chart(findings, unit)
        ),
        "</section>",
        findings_html(findings, verdicts),
        why,
        "<section id='cells'><h2>Cells</h2>",
        cells_table(findings),
        "</section>",
        queries_table(findings),
        efficiency_table(findings),
        spectrum.section(spectra),
    ]
    if disks:
        parts.append("<section id='disk'><h2>Disk profiles</h2>")
        parts += [disk_section(name, s) for name, s in disks]
        parts.append("</section>")
    if runs:
        cells = [r.cell for r in runs]
        which = "every run" if len(set(cells)) < len(cells) else "the median run of each cell"
        parts.append(f"<section id='runs'><h2>Runs underneath ({which})</h2>")
        if figure_src is None:
            parts.append(
                f"<p class='caption'>Each series drawn with at most {TIMELINE_POINTS} points: "
                f"the run cut into {TIMELINE_POINTS // 2} slices of time, each slice's lowest "
                "and highest value kept, so a spike stays visible. Every sample, zoom and "
                "values on hover: <code>iolab timeline RUN -o RUN.html</code> or "
                "<code>iolab serve</code>.</p>"
            )
        for r in runs:
            title = f"{r.cell} · run {r.run_id}"
            parts.append(f"<h3>{_e(title)}</h3>")
            if limits and r.cell in limits:
                parts.append(f"<p class='caption'>{_e(limits[r.cell])}</p>")
            parts.append(
                timeline.svg(r.probes, title, r.marks, r.steady, TIMELINE_POINTS)
                if figure_src is None
                else timeline.interactive(
                    r.probes, title, r.marks, steady=r.steady, src=figure_src(r)
                )
            )
            parts.append(timeline.sections(r.probes, r.run_id))
        parts.append("</section>")
    parts.append("<section id='settings'><h2>Environment and settings</h2>")
    if environment:
        parts.append(key_values("environment of the first run", environment))
    for label, params in (cell_params or {}).items():
        parts.append(key_values(f"cell {label}", params))
        if cores and cores.get(label):
            parts.append(f"<p class='caption driver-core'>{_e(cores[label])}</p>")
    parts.append("</section></main>")
    if runs and figure_src is not None:  # Plotly's once, before the script that draws them
        parts += [interactive.head(scripts_at), interactive.script(scripts_at)]
    parts.append(
        SAVE_SCRIPT if scripts_at is None else f"<script src='{scripts_at}/save.js'></script>"
    )
    parts.append("</body></html>\n")
    return "".join(parts)


def cores_line(cell: ReportCell) -> str:
    """The driver core that ran a cell's loads: ``driver core: native (built)`` when each of its
    runs that recorded one says the same, else each with its runs; "" when none recorded one."""
    runs: dict[str, list[str]] = {}
    for r in cell.runs:
        if r.core:
            runs.setdefault(r.core, []).append(str(r.id))
    if len(runs) <= 1:
        return "".join(f"driver core: {core}" for core in runs)
    each = (
        f"{core} in run{'s' if len(ids) > 1 else ''} {', '.join(ids)}" for core, ids in runs.items()
    )
    return "driver core: " + "; ".join(each)


def report_page(
    report: ExperimentReport,
    generated: str,
    chart_by: Sequence[str] = (),
    figure_src: Callable[[RunView], str] | None = None,
    scripts_at: str | None = None,
) -> str:
    """``iolab report --html``: the page of an experiment's report (built with timelines);
    ``chart_by``: the matrix key on the charts' x axis and the one in colour (--chart-by);
    ``figure_src``: where the page fetches each timeline's figure (``iolab serve``);
    ``scripts_at``: where it loads its scripts from (``iolab serve``)."""
    return page(
        f"iolab report: {report.name}",
        f"{report.metric} ({report.direction}); {report.run_count} runs in "
        f"{len(report.cells)} cells; generated {generated}",
        report.findings,
        report.unit,
        disks=[(g.title, g.tests) for g in report.disks],
        runs=report.timelines,
        cell_params={c.label: c.params for c in report.cells},
        cores={c.label: cores_line(c) for c in report.cells},
        environment=report.environment,
        spectra=report.spectra,
        chart_by=chart_by,
        figure_src=figure_src,
        scripts_at=scripts_at,
        why=why_html(report.why, report.findings),
        limits=why_limits(report.why),
        verdicts=report.why,
    )
