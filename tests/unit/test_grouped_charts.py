"""The seeds' grouped charts: which key goes where, legends, values on bars, labels that fit."""

from __future__ import annotations

import itertools
import re
import xml.etree.ElementTree as ET

import pytest

from iolab.analysis.findings import CellData, analyse
from iolab.errors import BadInput
from iolab.report.charts import CHAR_WIDTH, GroupedBar, grouped_bar_chart, wrap
from iolab.report.grouped import charts, choose

SVG = "{http://www.w3.org/2000/svg}"


def _cells() -> list[CellData]:
    out = []
    for engine in ("sqlite", "postgres"):
        for layout in ("one-file", "two-files"):
            for connections in (2, 8):
                base = 10.0 if layout == "one-file" else 5.0
                base *= 1.0 if engine == "sqlite" else 2.0
                values = {"engine": engine, "layout": layout, "connections": connections}
                label = f"engine={engine} layout={layout} connections={connections}"
                runs = (base, base * 1.02, base * 0.98)
                out.append(CellData(label, values, runs))
    return out


def test_the_layout_key_goes_on_x_and_the_count_in_colour() -> None:
    f = analyse(_cells(), "elapsed_seconds", True)
    keys = ["engine", "layout", "connections"]
    layout = choose(keys, f.cells)
    assert (layout.x, layout.series, layout.facets) == ("layout", "connections", ("engine",))
    chosen = choose(keys, f.cells, ["connections", "engine"])
    assert (chosen.x, chosen.series, chosen.facets) == ("connections", "engine", ("layout",))
    with pytest.raises(BadInput) as bad:
        choose(keys, f.cells, ["files"])
    assert bad.value.field == "--chart-by" and "engine, layout, connections" in bad.value.allowed


def test_a_grouped_chart_has_a_legend_values_and_a_speedup_chart() -> None:
    f = analyse(_cells(), "elapsed_seconds", True)
    assert f.baseline == "engine=sqlite layout=one-file connections=2"
    html = charts(f, "s", ["engine", "layout", "connections"])
    svgs = re.findall(r"<svg.*?</svg>", html, re.S)
    assert len(svgs) == 4  # mean and speed-up, for each engine
    root = ET.fromstring(svgs[0])
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "elapsed_seconds by layout and connections · engine=sqlite" in texts
    assert {"connections", "2", "8", "10", "5"} <= set(texts)  # legend title, series, means
    labels = [
        " ".join(s.text or "" for s in t.iter(f"{SVG}tspan")) for t in root.iter(f"{SVG}text")
    ]
    assert [label for label in labels if label] == ["one-file", "two-files"]
    speedup = [" ".join(t.itertext()) for t in ET.fromstring(svgs[1]).iter(f"{SVG}text")]
    assert "base" in speedup and "2.00x faster" in speedup  # two files halve the seconds
    postgres = [" ".join(t.itertext()) for t in ET.fromstring(svgs[3]).iter(f"{SVG}text")]
    # twice sqlite's seconds; two files as the sqlite baseline, not significantly different
    assert "2.00x slower" in postgres and "1.00x faster n.s." in postgres
    assert "One bar: one cell, the mean elapsed_seconds of its 3 done run(s)" in html


def test_long_labels_wrap_within_their_slot_and_never_overlap() -> None:
    tests = [f"{t} Q{q}T1" for t in ("SEQ1M", "RND4K") for q in (1, 8, 32, 64)]
    bars = [GroupedBar(t, d, 100.0 + i) for i, t in enumerate(tests) for d in ("read", "write")]
    svg = grouped_bar_chart(bars, title="disk", y_label="MB/s", legend_title="direction")
    root = ET.fromstring(svg)
    spans: list[tuple[float, float, int]] = []
    for text in root.iter(f"{SVG}text"):
        lines = [s.text or "" for s in text.iter(f"{SVG}tspan")]
        if lines:
            x = float(text.get("x", "0"))
            half = max(len(line) for line in lines) * 11 * CHAR_WIDTH / 2
            spans.append((x - half, x + half, len(lines)))
    assert len(spans) == len(tests)
    for (_, right, _), (left, _, _) in itertools.pairwise(spans):
        assert right < left  # each label ends before the next begins
    assert [t.text for t in root.iter(f"{SVG}text")].count("read") == 1  # in the legend
    assert wrap("engine=postgres layout=two-files", 60, 11) == ["engine=p…", "layout=t…"]
