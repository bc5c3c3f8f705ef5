"""The pages of ``iolab serve``, written from the report library's values and HTML pieces.

Statistics, charts and timelines come from :mod:`iolab.report` exactly as ``iolab report
--html``, ``iolab timeline`` and ``iolab compare`` make them; this module only lays them out,
adds links between pages, and escapes every text taken from the database (names, errors,
parameters, server logs). Plotly's JavaScript is referenced at ``/static/plotly.min.js``,
served from the installed ``plotly`` package: no page loads anything from the network.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import urlencode

from iolab.analysis.findings import in_words, interval_words, ratio_words, sentence, times
from iolab.drivercore import shown
from iolab.probes.data import ProbeData
from iolab.report import interactive, timeline
from iolab.report.charts import GroupedBar, Mark, grouped_bar_chart
from iolab.report.comparison import Comparison
from iolab.report.glance import Glance, minute
from iolab.report.grouped import NOT_SIGNIFICANT, significance_mark
from iolab.report.html import key_values
from iolab.store.browse import ExperimentRow, Filters
from iolab.store.database import RunRecord

STATIC = "/static"  # the pages' scripts, served as files: the policy runs no inline script
PLOTLY_TAG = interactive.head(STATIC)
STYLE = (
    timeline.STYLE + "nav{margin:0 0 12px;font-size:13px}nav a{margin-right:14px}"
    "form.filters input{width:120px;margin-right:8px}form.filters label{font-size:13px}"
    "pre.log{background:#f6f8fa;border:1px solid #ddd;padding:8px;max-height:400px;"
    "overflow:auto;font-size:12px;white-space:pre-wrap}td.v{text-align:left;font-family:monospace}"
    ".running{color:#9a6700}.failed,.aborted{color:#b42318}.done{color:#1a7f37}"
)
NAV = "<nav><a href='/'>Experiments</a><a href='/compare'>Compare</a></nav>"


def _e(text: object) -> str:
    return html.escape(str(text))


def _page(title: str, body: str, scripts: str = "") -> str:
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{_e(title)}</title><style>{STYLE}</style><link rel='icon' href='data:,'>"
        f"</head><body>{NAV}<header><h1>{_e(title)}</h1></header><main>{body}</main>"
        f"{scripts}</body></html>\n"
    )


def _table(head: Sequence[str], rows: Iterable[Sequence[str]], ident: str = "") -> str:
    th = "".join(f"<th>{_e(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    id_attr = f" id='{ident}'" if ident else ""
    return f"<table{id_attr}><tr>{th}</tr>{body}</table>"


def _kv(data: Mapping[str, Any]) -> str:
    """A flat table of a mapping (nested values as JSON), shown open."""
    rows = [
        (_e(k), f"<span class='v'>{_e(v if isinstance(v, str) else json.dumps(v))}</span>")
        for k, v in data.items()
    ]
    return _table(("key", "value"), rows)


def error_page(message: str) -> str:
    return _page("iolab serve: cannot show this", f"<p class='failed'>{_e(message)}</p>")


def experiments_page(
    rows: Sequence[ExperimentRow], filters: Filters, runs: Sequence[Glance] = ()
) -> str:
    """Every experiment (newest first) with its cells and runs done/failed, and the filters;
    then the newest runs of those experiments at a glance (engine, layout, headline number)."""
    inputs = "".join(
        f"<label>{name} <input name='{name}' value='{_e(getattr(filters, name))}'"
        f" placeholder='{hint}'></label>"
        for name, hint in (
            ("workload", "populate"),
            ("engine", "sqlite"),
            ("device", "nvme0n1"),
            ("host", "host name"),
            ("since", "YYYY-MM-DD"),
            ("until", "YYYY-MM-DD"),
        )
    )
    form = f"<form class='filters' method='get' action='/'>{inputs}<button>filter</button></form>"
    table = _table(
        (
            "id",
            "experiment",
            "kind",
            "workload",
            "engine",
            "host",
            "cells",
            "done",
            "failed",
            "running",
            "created",
            "last run",
        ),
        (
            (
                str(r.id),
                f"<a href='/experiments/{r.id}'>{_e(r.name)}</a>",
                _e(r.kind),
                _e(r.workloads),
                _e(r.engines),
                _e(r.hosts),
                str(r.cells),
                str(r.done),
                str(r.failed),
                f"<span class='running'>{r.running}</span>" if r.running else "0",
                _e(r.created_at),
                _e(r.last or "-"),
            )
            for r in rows
        ),
        "experiments",
    )
    shown = f"<p>{len(rows)} experiments" + (" match the filters" if filters != Filters() else "")
    return _page("iolab: experiments", form + shown + ".</p>" + table + _runs(runs))


def _runs(runs: Sequence[Glance]) -> str:
    """The runs at a glance: a finished run's headline number, any other run's status (and
    why it stopped)."""
    if not runs:
        return ""
    rows = (
        (
            f"<a href='/runs/{g.run.id}'>{g.run.id}</a>",
            _e(minute(g.run.started_at)),
            _e(g.run.workload),
            _e(g.engine or "-"),
            _e(g.layout),
            _e(g.figure.text) if g.figure else "-",
            f"<span class='{_e(g.run.status.value)}'>{_e(g.run.status.value)}</span>"
            + (f" {_e(g.run.error)}" if g.run.error else ""),
            f"<a href='/experiments/{g.run.experiment_id}'>{_e(g.run.experiment)}</a>",
        )
        for g in runs
    )
    head = ("run", "started UTC", "workload", "engine", "layout", "result", "status", "experiment")
    return (
        f"<section id='runs'><h2>Runs</h2><p>The newest {len(runs)} runs of these experiments.</p>"
        + _table(head, rows, "run-glance")
        + "</section>"
    )


def experiment_page(
    report_html: str,
    name: str,
    runs: Sequence[tuple[int, str, int, str, str | None]],
    labels: Mapping[str, str],
) -> str:
    """``iolab report --html``'s page of the experiment (the same library call), with links:
    the navigation on top; at the end, two cells to compare and the experiment's runs, each
    to its page."""
    rows = (
        (
            f"<a href='/runs/{rid}'>{rid}</a>",
            _e(labels.get(cell, cell)),
            str(rep),
            f"<span class='{_e(status)}'>{_e(status)}</span>",
            _e(started or "-"),
        )
        for rid, cell, rep, status, started in runs
    )
    listing = "<section id='run-list'><h2>Runs</h2>" + _table(
        ("run", "cell", "repetition", "status", "started"), rows
    )
    listing += "</section>"
    if len(labels) > 1:
        options = "".join(
            f"<option value='{_e(f'{name}:{label}')}'>{_e(label)}</option>"
            for label in labels.values()
        )
        listing = (
            "<section id='compare-cells'><h2>Compare two cells</h2>"
            "<form class='filters' method='get' action='/compare'>"
            f"<label>A <select name='a'>{options}</select></label> "
            f"<label>B <select name='b'>{options}</select></label> "
            "<button>compare</button></form></section>" + listing
        )
    page = report_html.replace("<body>", "<body>" + NAV, 1)
    head, _, tail = page.rpartition("</main>")
    return head + listing + "</main>" + tail


def run_page(
    run: RunRecord,
    environment: Mapping[str, Any],
    data: ProbeData | None,
    logs: Mapping[str, str],
    marks: Sequence[Mark],
    steady: tuple[float, float, float] | None,
    verdict: str = "",
    checked: str = "",
) -> str:
    """A run: its verdict (what limited it) and the newest check of it, parameters,
    environment, devices, counters (its summary), the driver core that
    ran its load, the timeline, waits, checkpoints and the server log (escaped). A running
    run's timeline, waits and checkpoints are drawn from what its recorder flushes, and
    redrawn every second."""
    title = f"run {run.id} · {run.experiment}"
    core = shown(run.summary)  # which driver core ran the load: pip hides a skipped build
    head = (
        f"<p>status <b class='{run.status.value}' id='state'>{_e(run.status.value)}</b>;"
        f" experiment <a href='/experiments/{run.experiment_id}'>{_e(run.experiment)}</a>,"
        f" workload {_e(run.workload)}, repetition {run.repetition};"
        f" started {_e(run.started_at or '-')}, ended {_e(run.ended_at or '-')}</p>"
        + (f"<p class='failed'>{_e(run.error)}</p>" if run.error else "")
        + (f"<p id='driver-core'>{_e(core)}</p>" if core else "")
        + (f"<p id='verdict'>{_e(verdict)}</p>" if verdict else "")
        + (f"<p id='checked'>{_e(checked)}</p>" if checked else "")
        + f"<p><a href='/compare?{urlencode({'a': str(run.id)})}'>compare this run</a></p>"
    )
    parts = [head, "<h2>Timeline</h2>"]
    scripts = ""
    if run.status.value == "running":
        parts.append(
            "<p>live: <span id='points'>0</span> points per series so far, redrawn every "
            "second as the run's probes flush them.</p>"
            f"<div id='live' data-src='/runs/{run.id}/timeline.json' data-points='0'"
            " style='min-height:300px'></div>"
        )
        scripts = PLOTLY_TAG + f"<script src='{STATIC}/live.js'></script>"
    elif data is not None and data.series:
        points = max(s.n for s in data.series)
        parts.append(
            f"<p><span id='points'>{points}</span> points per series, every "
            f"{data.interval:g} s over {data.duration:.1f} s; shaded: checkpoints.</p>"
        )
        parts.append(timeline.interactive(data, title, marks, timeline.SINGLE_RUN_POINTS, steady))
        scripts = PLOTLY_TAG + interactive.script(STATIC)
    else:
        parts.append("<p>No probe series (recorded with --no-probes, or none yet).</p>")
    if run.status.value == "running":  # redrawn with the timeline: waits and checkpoints so far
        so_far = timeline.sections(data, run.id) if data is not None else ""
        parts.append(f"<div id='live-sections'>{so_far}</div>")
    elif data is not None:
        parts.append(timeline.sections(data, run.id))
    parts.append("<h2>Parameters</h2>" + _kv(run.params))
    parts.append("<h2>Devices</h2>" + _devices(environment, data))
    if run.summary:
        parts.append("<h2>Counters</h2>" + _kv(run.summary))
    if environment:
        parts.append("<h2>Environment</h2>" + key_values("environment of the run", environment))
    for name, text in logs.items():
        parts.append(
            f"<h2>{_e(name)} log</h2><pre class='log' id='log-{_e(name)}'>{_e(text)}</pre>"
        )
    return _page(title, "".join(parts), scripts)


def _devices(environment: Mapping[str, Any], data: ProbeData | None) -> str:
    storage = environment.get("storage") or {}
    rows = []
    for role, rec in storage.items() if isinstance(storage, Mapping) else ():
        device = rec.get("device") or {}
        rows.append(
            (
                _e(role),
                _e(rec.get("path", "")),
                _e(rec.get("filesystem", "")),
                _e(device.get("name", "memory" if rec.get("memory_backed") else "")),
                _e(device.get("model", "") or ""),
                _e(rec.get("mount_options", "")),
                _e((rec.get("testbed") or {}).get("limits_text", "")),
            )
        )
    table = (
        _table(("role", "path", "filesystem", "device", "model", "mount options", "testbed"), rows)
        if rows
        else ""
    )
    if data is not None and data.roles:
        table += _table(
            ("role", "path", "device", "kind", "disk"),
            (
                (_e(r.role), _e(r.path), _e(r.device or "-"), _e(r.kind), _e(r.disk or "-"))
                for r in data.roles
            ),
        )
    return table or "<p>No device recorded.</p>"


def compare_page(a: str, b: str, metric: str, found: Comparison | None, error: str = "") -> str:
    """The form, and ``iolab compare``'s answer: each side's mean, the ratio with its 95%
    interval and p, as a sentence, a table and two charts."""
    form = (
        "<form class='filters' method='get' action='/compare'>"
        f"<label>A <input name='a' value='{_e(a)}' placeholder='3,4,9 or EXP:key=v'></label>"
        f"<label>B <input name='b' value='{_e(b)}' placeholder='5-7 or EXP:key=w'></label>"
        f"<label>metric <input name='metric' value='{_e(metric)}' placeholder='default'></label>"
        "<button>compare</button></form><p>Each side: run ids (3, 3,4,9 or 3-7) or "
        "EXPERIMENT:KEY=VALUE naming one cell, as for <code>iolab compare</code>.</p>"
    )
    if error:
        return _page("iolab: compare", form + f"<p class='failed' id='error'>{_e(error)}</p>")
    if found is None:
        return _page("iolab: compare", form)
    r = found.ratio
    c = r.comparison
    up, down, what = ratio_words(found.metric)
    table = _table(
        ("of each side", "A", "B"),
        [
            ("side", _e(found.a.label), _e(found.b.label)),
            ("runs", str(len(found.a.values)), str(len(found.b.values))),
            (f"mean {_e(found.metric)}", f"{found.a.mean:,.4g}", f"{found.b.mean:,.4g}"),
        ],
    )
    # the ratio in words, one direction (its number, > 1 when A is better, in data- attributes)
    low, high = ("" if v is None else f"{v:.6g}" for v in (r.better_low, r.better_high))
    answer = _table(
        ("metric", "A against B", "95% CI", "p"),
        [
            (
                f"{_e(found.metric)} ({found.a.declaration.direction})",
                f"<b id='ratio' data-speedup='{r.better:.6g}'>{_e(times(r))}</b>",
                f"<span id='ci' data-low='{low}' data-high='{high}'>{_e(interval_words(r))}</span>",
                "-" if c.p_value is None else f"{c.p_value:.3g}",
            )
        ],
        "answer",
    )
    unit = found.a.declaration.unit
    means = grouped_bar_chart(
        [
            GroupedBar(found.a.label, "A", found.a.mean),
            GroupedBar(found.b.label, "B", found.b.mean),
        ],
        title=f"mean {found.metric} of each side's done runs",
        y_label=f"{found.metric} {unit}".strip(),
    )
    speedup = grouped_bar_chart(
        [
            GroupedBar(
                "A against B",
                "A against B",
                r.better,
                r.better_low,
                r.better_high,
                in_words(r.better, found.metric, named=False) + significance_mark(r),
            )
        ],
        title=f"how many times {up}{what} A is than B, with its 95% interval",
        y_label=f"times {up} than B (x)",
        reference=1.0,
    ) + (
        f"<p class='caption'>Above 1: A is {up}; below 1: {down}; the dashed line: the same; "
        f"'{NOT_SIGNIFICANT}': not significant (the whiskers hold 1).</p>"
    )
    body = (
        form
        + f"<p id='sentence'>{_e(sentence(r))}</p>"
        + answer
        + table
        + means
        + speedup
        + "".join(
            f"<p>{_e(kind)} latency: both sides timed it; `iolab compare` prints its "
            "percentiles.</p>"
            for kind in found.latency
        )
    )
    return _page("iolab: compare", body)


# Redraws the live timeline every second from /runs/ID/timeline.json (the same figure as the
# report's timelines, series in their short form: first time, step and last time), and the
# waits and checkpoints so far (HTML the server escaped). Served as /static/live.js.
LIVE_JS = """(function(){
var box=document.getElementById('live'),pts=document.getElementById('points'),
state=document.getElementById('state'),config={responsive:true,displaylogo:false};
function expand(f){f.data.forEach(function(t){if(t.xlast===undefined)return;
var n=t.y.length,x=new Array(n);for(var i=0;i<n-1;i++)x[i]=t.x0+i*t.dx;x[n-1]=t.xlast;t.x=x;
delete t.x0;delete t.dx;delete t.xlast;});return f;}
function tick(){fetch(box.dataset.src,{credentials:'same-origin',cache:'no-store'})
.then(function(r){return r.json();}).then(function(j){
pts.textContent=j.points;box.dataset.points=j.points;
document.getElementById('live-sections').innerHTML=j.sections;
if(j.figure){var f=expand(j.figure);Plotly.react(box,f.data,f.layout,config);}
if(j.status!=='running'){state.textContent=j.status+' (reload for waits and checkpoints)';
state.className=j.status;return;}
setTimeout(tick,1000);}).catch(function(){setTimeout(tick,2000);});}
tick();})();"""
