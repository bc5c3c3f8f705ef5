"""Interactive timelines: the Plotly figure of a timeline's panels, written compactly."""

from __future__ import annotations

import json
import math
import re

from iolab.report.charts import Band, Line, Mark, Plot
from iolab.report.interactive import WARMUP, WARMUP_COLOUR, _dump, block, figure, plotly_js


def _plots() -> list[Plot]:
    xs = [0.1 * (i + 1) for i in range(49)] + [5.0]  # the last sample ends with the run
    bands = [Band(1.0, 1.5, "checkpoint"), Band(1.5001, 2.0, "checkpoint"), Band(4.0, None)]
    return [
        Plot(
            "throughput",
            "rows/s",
            [Line("rows committed/s", xs, [100.0 + i for i in range(50)])],
            bands,
            marks=[Mark(2.5, "Q1")],
        ),
        Plot(
            "device throughput",
            "MB/s",
            [
                Line("write", xs, [math.nan] + [1 / 3] * 49),
                Line("read", xs, [0.0] * 50, dashed=True),
            ],
            bands,
        ),
    ]


def test_panels_share_one_zoomable_time_axis_with_legends_bands_and_marks() -> None:
    fig = figure(_plots(), 5.0, "run 3")
    layout = fig["layout"]
    assert isinstance(layout, dict)
    assert layout["xaxis2"]["matches"] == "x" and "matches" not in layout["xaxis"]
    assert layout["yaxis"]["title"] == {"text": "rows/s"}
    assert layout["hovermode"] == "x unified"
    data = fig["data"]
    assert isinstance(data, list)
    assert [t["name"] for t in data] == ["rows committed/s", "write", "read"]
    assert [t["legend"] for t in data] == ["legend", "legend2", "legend2"]
    first = data[0]
    assert first["x0"] == 0.1 and abs(first["dx"] - 0.1) < 1e-9 and "x" not in first
    assert first["xlast"] == 5.0
    assert data[2]["line"]["dash"] == "dash"
    rects = [s for s in layout["shapes"] if s["type"] == "rect"]
    assert [(r["x0"], r["x1"]) for r in rects] == [(1.0, 2.0), (4.0, 5.0)]  # merged; to the end
    lines = [s for s in layout["shapes"] if s["type"] == "line"]
    assert [s["x0"] for s in lines] == [2.5]
    texts = [a["text"] for a in layout["annotations"]]
    assert "<b>throughput</b>" in texts and "Q1" in texts
    assert any("grey: checkpoints" in t for t in texts)


def test_long_series_are_thinned_and_numbers_written_short() -> None:
    xs = [float(i) for i in range(20_000)]
    ys = [float(i % 100) for i in range(20_000)]
    fig = figure([Plot("p", "u", [Line("l", xs, ys)])], 20_000.0, "long", max_points=1000)
    trace = fig["data"][0]  # type: ignore[index]
    assert len(trace["y"]) <= 1000 and "x" in trace and max(trace["y"]) == 99.0
    text = _dump({"y": [math.nan, 1 / 3, 123456789.0, 2.0], "t": "</script>"})
    assert text == '{"y":[null,0.333333,1.23457e8,2],"t":"<\\/script>"}'
    assert json.loads(text)["y"][0] is None


def test_a_block_is_a_box_of_its_height_and_its_figure() -> None:
    html = block("timeline-9", _plots(), 5.0, "run <3>")
    box = re.match(r"<div class='iplot' data-fig='timeline-9' style='height:(\d+)px'></div>", html)
    assert box is not None and int(box.group(1)) > 300
    found = re.search(r"<script type='application/json' id='timeline-9'>(.*)</script>", html)
    assert found is not None
    fig = json.loads(found.group(1))
    assert fig["layout"]["title"]["text"] == "<b>run &lt;3&gt;</b>"
    assert len(fig["data"][1]["y"]) == 50 and fig["data"][1]["y"][0] is None
    assert plotly_js().startswith("/**") and "plotly.js v" in plotly_js()[:200]


def test_the_warmup_is_shaded_apart_from_checkpoints() -> None:
    plots = _plots()
    warm = [
        Plot(p.title, p.y_label, p.lines, [Band(0.0, 0.8, WARMUP, WARMUP_COLOUR), *p.bands])
        for p in plots
    ]
    layout = figure(warm, 5.0, "run 3")["layout"]
    assert isinstance(layout, dict)
    rects = [(s["x0"], s["x1"], s["fillcolor"]) for s in layout["shapes"] if s["type"] == "rect"]
    assert (0.0, 0.8, WARMUP_COLOUR) in rects  # not merged into a checkpoint's grey
    assert all(c == "#999" for x0, _, c in rects if x0 >= 1.0)
    assert "blue: warm-up" in json.dumps(layout["annotations"])
    assert "grey: checkpoints" in json.dumps(layout["annotations"])


def test_numbers_are_written_the_same_the_second_time() -> None:
    from iolab.report.interactive import _num

    values = [0.0, -0.0, 1.5e-7, 123456789.0, 12.5, float("nan"), float("inf"), -3.0]
    first = [_num(v) for v in values]
    assert first == ["0", "-0", "1.5e-7", "1.23457e8", "12.5", "null", "null", "-3"]
    assert [_num(v) for v in reversed(values)] == first[::-1]  # from the memo, where kept
