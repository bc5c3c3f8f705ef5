"""The SVG chart primitives: ticks with units, thinning that keeps spikes, what gets drawn."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

from iolab.probes.data import ProbeData, Series
from iolab.probes.interface import Checkpoint, Kind, SeriesKey
from iolab.report import timeline
from iolab.report.charts import (
    Band,
    Bar,
    Line,
    Plot,
    bar_chart,
    nice_ticks,
    stack,
    thin,
    tick_label,
)

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
    assert root.findall(f"{SVG}circle")  # the lone points either side of the gap
    assert any(r.get("fill-opacity") == "0.25" for r in root.iter(f"{SVG}rect"))


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
    page = timeline.html_page(data, "run 7", ["intro"])
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page and "script" not in page
    assert "write data (vda)" in page and "<td>300</td>" in page
