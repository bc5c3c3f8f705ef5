"""The HTML report's page (issue 47, item 6): a short findings block, then the charts, then the
rest; its timelines thinned so an experiment of multi-second runs stays a small file. The
runs are stored through the Store API as the runner stores them, with probes sampled at 10 Hz."""

from __future__ import annotations

import math
import re

from iolab import report
from iolab.probes.data import ProbeData, Series
from iolab.probes.interface import Checkpoint, Kind, SeriesKey
from iolab.report import html as html_report
from iolab.report import timeline
from iolab.report.interactive import MAX_POINTS
from iolab.results import CellId, RunOutcome, RunStatus
from iolab.store import Store

EXPERIMENT = {
    "experiment": {"name": "layouts", "baseline": {"layout": "one"}},
    "workload": {"kind": "populate", "rows": 100_000},
    "matrix": {"layout": ["one", "two"], "connections": [2, 8]},
    "matrix_keys": ["layout", "connections"],
}
HZ = 10  # samples a second, as the demo's probes take them
SERIES = (  # (probe, name, unit, kind, subject, role, typical value)
    ("workload", "rows_per_s", "rows/s", Kind.RATE, "", "", 20_000.0),
    ("device", "write_mbps", "MB/s", Kind.RATE, "vda", "data", 80.0),
    ("device", "read_mbps", "MB/s", Kind.RATE, "vda", "data", 5.0),
    ("device", "write_await_ms", "ms", Kind.RATIO, "vda", "data", 1.5),
    ("device", "read_await_ms", "ms", Kind.RATIO, "vda", "data", 0.7),
    ("device", "aqu_sz", "requests", Kind.GAUGE, "vda", "data", 2.0),
    ("host", "cpu_user_pct", "%", Kind.RATIO, "all", "", 40.0),
    ("host", "cpu_system_pct", "%", Kind.RATIO, "all", "", 12.0),
    ("host", "cpu_iowait_pct", "%", Kind.RATIO, "all", "", 6.0),
    ("latency", "p50_ms", "ms", Kind.GAUGE, "commit", "", 0.8),
    ("latency", "p99_ms", "ms", Kind.GAUGE, "commit", "", 4.0),
    ("latency", "max_ms", "ms", Kind.GAUGE, "commit", "", 9.0),
)


def probes(seconds: float, seed: int) -> ProbeData:
    """A run's probes: every series the timeline draws, ``seconds`` long at 10 Hz, each sample
    a different number (nothing a writer could shorten), one spike in the rows/s."""
    n = int(seconds * HZ)
    series = []
    for k, (probe, name, unit, kind, subject, role, mean) in enumerate(SERIES):
        values = [mean * (1 + 0.3 * math.sin(0.7 * i + k + seed) + 1e-4 * i) for i in range(n)]
        if name == "rows_per_s":
            values[n // 3] = mean * 9  # a spike the thinning keeps
        key = SeriesKey(probe, name, unit, kind, subject, role)
        series.append(
            Series(key, 1 / HZ, 1 / HZ, seconds, n, sum(values), float(n), max(values), values)
        )
    return ProbeData(
        1 / HZ,
        0.1,
        seconds,
        tuple(series),
        checkpoints=(Checkpoint(seconds / 2, seconds / 2 + 1, 1000, "time"),),
        warmup_end_s=1.0,
    )


def seed(store: Store, seconds: float, repetitions: int = 3) -> None:
    """Four cells of ``repetitions`` populate runs, each ``seconds`` long with its probes;
    layout=two twice as fast as layout=one, so the findings have something significant."""
    exp = store.create_experiment("layouts", "experiment", EXPERIMENT)
    for layout in ("one", "two"):
        for connections in (2, 8):
            cell = CellId(f"{layout}{connections}".ljust(16, "0"))
            params = {"kind": "populate", "layout": layout, "connections": connections}
            store.ensure_cell(exp, cell, "populate", params)
            for i in range(repetitions):
                elapsed = (20.0 if layout == "one" else 10.0) * (1 + 0.01 * i) - connections / 10
                summary = {"elapsed_seconds": elapsed, "rows": 100_000, "devices": {}}
                run = store.start_run(exp, cell, i + 1, None)
                data = probes(seconds, i + connections)
                store.finish_run(run, RunOutcome(RunStatus.DONE, summary, probes=data))


def test_the_page_opens_with_the_headline_then_the_charts_then_the_rest(store: Store) -> None:
    seed(store, 3.0)
    page = html_report.report_page(report.build(store, "layouts", timelines="median"), "now")
    main = page[page.index("<main>") :]
    headline = main[main.index("<section id='headline'>") : main.index("</section>")]
    # the headline: the best cell and the significant comparisons, a few lines at most
    items = re.findall(r"<li[^>]*>(.*?)</li>", headline)
    assert 2 <= len(items) <= 2 + html_report.HEADLINE_SHOWN
    assert items[0].startswith("<b>best: layout=two connections=8</b>: elapsed_seconds ")
    assert "faster than" in items[1] and "not significant" not in items[1]
    assert re.match(r"\d+ of \d+ comparison\(s\) significant", items[-1]), items[-1]
    assert items[-1].endswith("every finding, the warnings and the Why follow the charts")
    # then the first chart, before every finding, warning, Why bullet, table and timeline
    first_chart = main.index("<svg")
    assert main.index("</section>") < main.index("<section id='charts'>") < first_chart
    for later in ("<section id='findings'>", "<section id='cells'>", "<section id='runs'>"):
        assert first_chart < main.index(later), later
    for bullet in ("class='warn'", "<section id='why'>"):
        assert bullet not in main or first_chart < main.index(bullet), bullet
    # the charts fill the width: a grid of figures, each SVG scaled by its viewBox
    charts = main[main.index("<section id='charts'>") : main.index("<section id='findings'>")]
    assert charts.count("<figure class='chart'><svg") == charts.count("<svg") >= 2
    assert "figure.chart svg,#runs svg{width:100%;height:auto}" in page
    assert re.search(r'<svg [^>]*viewBox="0 0 \d+ \d+"', charts)


def test_a_report_of_multi_second_runs_is_under_a_megabyte(store: Store) -> None:
    """Four cells of three 90-second runs at 10 Hz, every run's timeline in the page
    (--timelines all): each series at most MAX_POINTS points, the spike kept, no Plotly."""
    seed(store, 90.0)
    built = report.build(store, "layouts", timelines="all")
    page = html_report.report_page(built, "now")
    assert len(built.timelines) == 12
    assert len(page.encode()) < 1_000_000, len(page.encode())
    assert "plotly" not in page.lower()  # 4.8 MB of JavaScript: the timelines are SVG
    timelines = page[page.index("<section id='runs'>") :]
    assert timelines.count("<svg") == 12
    # as drawn: 900 samples a series thinned to at most MAX_POINTS, the spike (9x) kept
    panels = [
        timeline.downsampled(p, MAX_POINTS) for p in timeline.plots(built.timelines[0].probes)
    ]
    lines = [line for p in panels for line in p.lines]
    assert len(lines) == len(SERIES) and all(len(line.xs) <= MAX_POINTS for line in lines)
    assert max(lines[0].ys) == max(built.timelines[0].probes.series[0].values)


def test_serve_keeps_the_interactive_timelines(store: Store) -> None:
    """``iolab serve`` serves Plotly as a file: its page keeps the interactive timelines, in
    the same order."""
    seed(store, 3.0)
    built = report.build(store, "layouts", timelines="median")
    page = html_report.report_page(
        built, "now", figure_src=lambda r: f"/runs/{r.run_id}/figure.json", scripts_at="/static"
    )
    assert page.count("class='iplot'") == 4 and "/static/plotly.min.js" in page
    assert page.index("<section id='headline'>") < page.index("<section id='charts'>")
