"""The SVG chart primitives: ticks with units, thinning that keeps spikes, what gets drawn."""

from __future__ import annotations

import math
import random
import re
import xml.etree.ElementTree as ET

import pytest

from iolab.probes.data import ProbeData, Series
from iolab.probes.interface import Checkpoint, Kind, SeriesKey
from iolab.report import timeline
from iolab.report.charts import (
    Band,
    Bar,
    Line,
    Plot,
    bar_chart,
    line_path,
    nice_ticks,
    stack,
    thin,
    tick_label,
)
from iolab.report.interactive import STEADY, WARMUP

SVG = "{http://www.w3.org/2000/svg}"


def test_nice_ticks_cover_the_range_with_round_steps() -> None:
    assert nice_ticks(0, 7.3, 5) == [0, 2, 4, 6, 8]
    assert nice_ticks(0, 1000, 4) == [0, 250, 500, 750, 1000]
    ticks = nice_ticks(3.2, 3.9, 5)
    assert ticks[0] <= 3.2 and ticks[-1] >= 3.9
    assert nice_ticks(5, 5) == [5, 6, 7, 8, 9, 10]  # a flat series still gets an axis
    assert tick_label(12_000, "rows/s") == "12k rows/s"
    assert tick_label(1_500_000) == "1.5M"
    assert tick_label(0.25, "ms") == "0.25 ms"


def test_thin_keeps_spikes_and_gaps() -> None:
    xs = [float(i) for i in range(10_000)]
    ys = [1.0] * 10_000
    ys[4321] = 500.0
    ys[7000] = math.nan
    tx, ty = thin(xs, ys, 100)
    assert len(tx) <= 2 * 100 + 2
    assert 500.0 in ty
    assert any(math.isnan(y) for y in ty) or min(ty) == 1.0


def test_stacked_timeline_has_titles_units_and_bands() -> None:
    line = Line("write data (vda)", [1.0, 2.0, 3.0], [10.0, math.nan, 30.0])
    plot = Plot("device throughput", "MB/s", [line], [Band(1.5, 2.5, "checkpoint")])
    svg = stack([plot], x_max=3.0, title="run 1")
    root = ET.fromstring(svg)  # well-formed XML
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "device throughput" in texts and "MB/s" in texts
    assert "write data (vda)" in texts and "checkpoint" in texts
    assert "seconds from the start" in texts
    paths = list(root.iter(f"{SVG}path"))
    # the lone points either side of the gap: two dots (zero-length subpaths, round caps)
    dots = [p for p in paths if p.get("stroke-linecap") == "round"]
    assert len(dots) == 1 and dots[0].get("d", "").count("h0") == 2
    # the checkpoint: one shaded rectangle, a closed subpath
    bands = [p for p in paths if p.get("fill-opacity") == "0.25"]
    assert len(bands) == 1 and bands[0].get("d", "").count("z") == 1
    assert "font-family" in root.attrib and "font-family" not in svg.split("<text", 1)[1]


def _decode(d: str) -> list[list[tuple[float, float]]]:
    """The points of path data made of M (absolute) then l (relative) steps, per subpath."""
    tokens = re.findall(r"[A-Za-z]|-?(?:\d+\.?\d*|\.\d+)", d)
    out: list[list[tuple[float, float]]] = []
    i, x, y = 0, 0.0, 0.0
    while i < len(tokens):
        if tokens[i] == "M":
            x, y = float(tokens[i + 1]), float(tokens[i + 2])
            out.append([(x, y)])
            i += 3
        elif tokens[i] == "l":
            i += 1
            while i < len(tokens) and not tokens[i].isalpha():
                x, y = x + float(tokens[i]), y + float(tokens[i + 1])
                out[-1].append((x, y))
                i += 2
        else:
            raise AssertionError(f"unexpected {tokens[i]!r} in {d[:80]!r}")
    return out


def test_line_path_steps_do_not_drift() -> None:
    rng = random.Random(3)
    long = [(float(i), rng.uniform(-500.0, 500.0)) for i in range(10_000)]
    short = [(3.0, 4.25), (3.3, -0.04)]
    d, dots = line_path([long, short, [(9.0, 9.0)]], lambda x: 78 + x * 0.0722, lambda y: y)
    decoded = _decode(d)
    assert len(decoded) == 2 and len(decoded[0]) == 10_000
    for got, want in zip(decoded[0] + decoded[1], long + short, strict=True):
        assert abs(got[0] - round((78 + want[0] * 0.0722) * 10) / 10) < 1e-6
        assert abs(got[1] - round(want[1] * 10) / 10) < 1e-6
    assert "-" in d and " -" not in d  # a minus separates numbers by itself
    assert dots == "M78.6 9h0"


def test_bar_chart_with_error_bars() -> None:
    bars = [Bar("SSD", 900.0, 850.0, 950.0), Bar("HDD", 120.0, 100.0, 140.0)]
    svg = bar_chart(Plot("rows/s", "rows/s", bars=bars), title="layouts")
    root = ET.fromstring(svg)
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "SSD" in texts and "HDD" in texts
    assert len(root.findall(f"{SVG}line")) >= 6  # three strokes per error bar, plus the grid


def test_timeline_panels_from_probe_data() -> None:
    def series(probe: str, name: str, unit: str, values: list[float], **kw: str) -> Series:
        return Series(
            SeriesKey(probe, name, unit, Kind.RATE, **kw),
            1.0,
            1.0,
            float(len(values)),
            len(values),
            sum(values),
            float(len(values)),
            max(values),
            tuple(values),
        )

    data = ProbeData(
        interval=1.0,
        wait_interval=0.1,
        duration=4.0,
        series=(
            series("workload", "rows_per_s", "rows/s", [100, 120, 80, 110]),
            series("device", "write_mbps", "MB/s", [5, 50, 6, 5], subject="vda", role="data"),
            series("device", "write_await_ms", "ms", [1, 9, 1, 1], subject="vda", role="data"),
            series("device", "aqu_sz", "requests", [1, 8, 1, 1], subject="vda", role="data"),
        ),
        checkpoints=(Checkpoint(1.2, 2.4, 300, "time"),),
    )
    titles = [p.title for p in timeline.plots(data)]
    assert titles == [
        "throughput",
        "device throughput",
        "I/O latency (per completed request)",
        "queue depth (requests in flight)",
    ]

    # TPC-C: NOPM and TPM in one panel, the p99 of each transaction type in another
    tpcc = ProbeData(
        interval=1.0,
        wait_interval=0.1,
        duration=4.0,
        series=(
            series("workload", "nopm", "NOPM", [9000, 9100, 8900, 9050]),
            series("workload", "tpm", "TPM", [20000, 20200, 19800, 20100]),
            series("latency", "p99_ms", "ms", [4, 5, 4, 6], subject="new_order"),
            series("latency", "p99_ms", "ms", [2, 2, 3, 2], subject="payment"),
            series("latency", "p50_ms", "ms", [1, 1, 1, 1], subject="payment"),
        ),
    )
    panels = timeline.plots(tpcc)
    assert [p.title for p in panels] == [
        "throughput",
        "p99 latency per transaction type (per interval)",
    ]
    assert [line.label for line in panels[0].lines] == ["NOPM", "TPM"]
    assert list(panels[0].lines[0].ys) == [9000, 9100, 8900, 9050]
    assert [line.label for line in panels[1].lines] == ["new_order p99", "payment p99"]
    page = timeline.html_page(data, "run 7", ["intro"])
    assert page.startswith("<!DOCTYPE html>") and "<script type='application/json'" in page
    assert page.count("* plotly.js v") == 1 and "<script src" not in page  # once, inline
    assert "write data (vda)" in page and "<td>300</td>" in page


def test_thin_keeps_each_column_extremes_and_empty_columns_as_gaps() -> None:
    xs = [float(i) for i in range(36_000)]  # ten hours at 1 s
    ys = [float(i % 97) for i in range(36_000)]
    ys[20_000:21_000] = [math.nan] * 1000  # recording missed a stretch
    ys[123] = -5.0
    tx, ty = thin(xs, ys, 361)
    assert len(tx) <= 2 * 361 and tx == sorted(tx)
    assert min(y for y in ty if not math.isnan(y)) == -5.0 and max(ty) == 96.0
    gaps = [x for x, y in zip(tx, ty, strict=True) if math.isnan(y)]
    assert gaps and all(20_000 <= x < 21_000 for x in gaps)


def test_checkpoint_bands_merge_where_they_overlap_and_tables_stay_short() -> None:
    ten_hours = 36_000.0
    often = tuple(Checkpoint(t, t + 8.0, 1000, "wal") for t in range(25, 36_000, 25))
    rare = (Checkpoint(3_000.0, 3_600.0, 9, "time"), Checkpoint(20_000.0, None, None, "wal"))
    for checkpoints, spans in ((often, 1), (rare, 2)):
        plot = Plot("t", "x", bands=[Band(c.start_s, c.end_s) for c in checkpoints])
        root = ET.fromstring(stack([plot], x_max=ten_hours))
        bands = [p for p in root.iter(f"{SVG}path") if p.get("fill-opacity") == "0.25"]
        assert len(bands) == 1 and bands[0].get("d", "").count("z") == spans
    data = ProbeData(interval=1.0, wait_interval=0.1, duration=ten_hours, checkpoints=often)
    html = timeline.sections(data, 42)
    assert html.count("<tr>") == 1 + 20  # the header and the first 20
    assert f"{len(often) - 20:,} more" in html and "iolab results show 42 --json" in html


def test_a_time_axis_labels_every_tick_the_same_way() -> None:
    from iolab.report.charts import Line, Plot, stack

    def labels(seconds: float) -> list[str]:
        plot = Plot("p", "MB/s", lines=[Line("a", [0.0, seconds], [1.0, 2.0])])
        svg = stack([plot], x_max=seconds)
        return re.findall(r'text-anchor="middle"[^>]*>([^<]+)</text>', svg)

    ten_minutes = labels(600.0)
    assert "600" in ten_minutes and not any(":" in t for t in ten_minutes)
    half_hour = [t for t in labels(1800.0) if t[0].isdigit()]
    assert half_hour[:2] == ["0:00:00", "0:05:00"] and all(t.count(":") == 2 for t in half_hour)


def test_marks_are_dashed_lines_labelled_where_there_is_room() -> None:
    from iolab.report.charts import Line, Mark, Plot, stack

    marks = [Mark(1.0, "Q1"), Mark(1.01, "Q2"), Mark(50.0, "Q3")]
    plot = Plot("p", "MB/s", lines=[Line("a", [0.0, 100.0], [1.0, 2.0])], marks=marks)
    svg = stack([plot], x_max=100.0)
    dashed = re.findall(r'<path d="([^"]+)" stroke="#7a5195"[^>]*stroke-dasharray', svg)
    assert len(dashed) == 1 and dashed[0].count("M") == 3  # one line per mark
    labels = re.findall(r">(Q\d+)</text>", svg)
    assert labels == ["Q1", "Q3"]  # Q2 starts a tenth of a pixel after Q1: no room for it


def test_the_steady_part_is_a_dashed_line_at_its_rate_on_the_throughput_panel() -> None:
    values = (100.0, 120.0, 118.0, 122.0)
    rows = Series(
        SeriesKey("workload", "rows_per_s", "rows/s", Kind.RATE), 1.0, 1.0, 4.0, 4, 460.0, 4.0,
        122.0, values,
    )  # fmt: skip
    data = ProbeData(interval=1.0, wait_interval=0.1, duration=4.0, series=(rows,))
    summary = {
        "steady_rows_per_second": 120.0,
        "steady_state": {"window": 3, "tolerance_pct": 5.0, "start_s": 1.0, "end_s": 4.0},
    }
    steady = timeline.steady_span(summary)
    assert steady == (1.0, 4.0, 120.0)
    (panel,) = timeline.plots(data, steady=steady)
    line = panel.lines[-1]
    assert (line.label, list(line.xs), list(line.ys), line.dashed) == (
        "steady 120 rows/s",
        [1.0, 4.0],
        [120.0, 120.0],
        True,
    )
    assert "steady 120 rows/s" in timeline.svg(data, "run 1", steady=steady)
    none = {"steady_rows_per_second": None, "steady_state": {"reason": "4 samples, fewer"}}
    assert timeline.steady_span(none) is None
    assert timeline.steady_span({}) is None
    assert len(timeline.plots(data)[0].lines) == 1


def test_a_stored_steady_part_that_overlaps_the_warm_up_is_found_again_after_it() -> None:
    """Issue 47 (run 35: a steady band from 0 s over a 1 s warm-up): a run stored before the
    steady part left the warm-up out gets its band found again in its rows/s series, with the
    criterion it recorded, after the warm-up; a stored one after the warm-up is kept."""
    values = (100.0, 100.0, 200.0, 202.0, 198.0, 200.0, 201.0, 199.0)
    n = len(values)
    rows = Series(
        SeriesKey("workload", "rows_per_s", "rows/s", Kind.RATE), 1.0, 1.0, float(n), n,
        sum(values), float(n), max(values), values,
    )  # fmt: skip
    data = ProbeData(1.0, 0.1, float(n), (rows,), warmup_end_s=2.0)
    stored = {
        "steady_rows_per_second": 175.0,
        "steady_state": {"window": 3, "tolerance_pct": 50.0, "start_s": 0.0, "end_s": 8.0},
    }
    assert timeline.steady_span(stored) == (0.0, 8.0, 175.0)  # without the probes: as stored
    start, end, rate = timeline.steady_span(stored, data) or (0.0, 0.0, 0.0)
    assert (start, end) == (2.0, 8.0) and rate == pytest.approx(200.0)
    (panel,) = timeline.plots(data, steady=(start, end, rate))
    warm, steady = (b for b in panel.bands if b.label in (WARMUP, STEADY))
    assert warm.x1 is not None and warm.x1 <= steady.x0
    after = {**stored, "steady_state": {**stored["steady_state"], "start_s": 2.0}}
    assert timeline.steady_span(after, data) == (2.0, 8.0, 175.0)
