"""Every ratio reads one way (issue 47, item 3): "A was 2.00x faster than B" or "2.00x slower",
never a bare ratio below 1 whose meaning hangs on the metric's direction; a latency reads
"lower/higher" (lower is better); the speed-up chart's bars say "2.00x slower" and "n.s." (not
"0.50x ns", read as nanoseconds). Inputs go through the APIs the reports and `iolab compare`
use (:func:`ratio`, :func:`analyse`, :func:`charts`, the command itself on a seeded results
database)."""

from __future__ import annotations

import html
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from iolab.analysis.findings import CellData, analyse, gain_sentence, ratio, sentence
from iolab.latency.data import Interval, LatencyData
from iolab.latency.histogram import Histogram
from iolab.latency.recording import OpKind
from iolab.report.comparison import Comparison, Sample
from iolab.report.document import ratio_document
from iolab.report.grouped import charts
from iolab.report.populate import latency_sides
from iolab.results import RunOutcome
from iolab.runner.single import CommandRun, execute
from iolab.serve.pages import compare_page
from iolab.store import open_store
from iolab.workloads import registry
from tests.unit.cli import iolab

SVG = "{http://www.w3.org/2000/svg}"
SLOW = (1000.0, 1100.0, 900.0)  # rows/s (or p99 us): half of FAST
FAST = (2000.0, 2200.0, 1800.0)
# a number below 1 written as a ratio ("0.46x"): what a reader had to turn round
BARE = re.compile(r"(?<![\d.])0\.\d+x")


def test_a_rate_reads_faster_or_slower_than_the_other_side() -> None:
    faster = ratio("A", FAST, "B", SLOW, False, "rows_per_second")
    assert sentence(faster) == "A was 2.00x faster than B (95% CI 1.59-2.51x, p = 0.0011)"
    slower = ratio("A", SLOW, "B", FAST, False, "rows_per_second")
    assert slower.better == pytest.approx(
        0.5
    )  # the number stays "times better", below 1 when A is worse
    assert sentence(slower) == "A was 2.00x slower than B (95% CI 1.59-2.51x, p = 0.0011)"
    # a duration, lower is better: the shorter side is the faster one
    quicker = ratio("A", [1 / v for v in FAST], "B", [1 / v for v in SLOW], True, "elapsed_seconds")
    assert sentence(quicker) == "A was 2.00x faster than B (95% CI 1.59-2.51x, p = 0.0011)"


def test_a_latency_reads_lower_or_higher_with_its_name() -> None:
    metric = "latency.commit.p99_us"
    better = ratio("A", SLOW, "B", FAST, True, metric)  # A's p99 half of B's
    assert better.better == pytest.approx(2.0)
    assert sentence(better) == (
        "A had 2.00x lower latency.commit.p99_us than B (95% CI 1.59-2.51x, p = 0.0011)"
    )
    worse = ratio("A", FAST, "B", SLOW, True, metric)
    assert sentence(worse) == (
        "A had 2.00x higher latency.commit.p99_us than B (95% CI 1.59-2.51x, p = 0.0011)"
    )


def test_no_significant_difference_still_says_which_way_and_its_interval_in_words() -> None:
    r = ratio("A", (1.0, 1.1, 0.9), "B", (1.2, 0.8, 1.3), True, "elapsed_seconds")
    assert sentence(r) == (
        "A vs B: no significant difference (A 1.08x faster than B, 95% CI 1.63x slower to "
        "1.90x faster, p = 0.67)"
    )
    few = ratio("A", (2.0,), "B", (1.0,), True, "elapsed_seconds")
    assert sentence(few) == (
        "A 2.00x slower than B (too few runs for a confidence interval; no verdict)"
    )


def test_the_json_keeps_its_numbers_and_adds_the_direction() -> None:
    doc = ratio_document(ratio("A", SLOW, "B", FAST, False, "rows_per_second"))
    assert doc["speedup"] == pytest.approx(0.5) and doc["ci_low"] < 1  # type: ignore[operator]
    assert doc["times"] == pytest.approx(2.0) and doc["direction"] == "slower"
    assert doc["sentence"] == "A was 2.00x slower than B (95% CI 1.59-2.51x, p = 0.0011)"
    doc = ratio_document(ratio("A", SLOW, "B", FAST, True, "latency.commit.p99_us"))
    assert doc["speedup"] == pytest.approx(2.0) and doc["times"] == pytest.approx(2.0)
    assert doc["direction"] == "lower"


def _texts(svg: str) -> list[str]:
    """Each text of a chart as it reads, its lines joined ("2.00x slower n.s.")."""
    return [" ".join(t.itertext()) for t in ET.fromstring(svg).iter(f"{SVG}text")]


def _elapsed(values: dict[str, tuple[float, ...]]) -> list[CellData]:
    return [CellData(f"layout={k}", {"layout": k}, v) for k, v in values.items()]


def test_the_speedup_chart_writes_slower_and_not_significant_never_a_bare_ns() -> None:
    f = analyse(
        _elapsed({"a": (1.0, 1.05, 0.95), "b": (2.0, 2.1, 1.9), "c": (1.0, 1.6, 0.7)}),
        "elapsed_seconds",
        True,
    )
    page = charts(f, "s", ["layout"])
    texts = _texts(re.findall(r"<svg.*?</svg>", page, re.S)[1])
    # b took twice as long as the baseline a: one bar, its ratio in words above it
    assert "times faster than the baseline (x)" in texts
    assert "2.00x slower" in texts  # significant: no mark
    assert "1.04x slower n.s." in texts  # c: its whiskers hold 1
    assert "ns" not in " ".join(texts).split()
    assert not [t for t in texts if BARE.search(t)], texts
    caption = html.unescape(re.findall(r"<p class='caption'>([^<]*)</p>", page)[1])
    assert "'n.s.': not significant (the whiskers hold 1)" in caption
    assert "'n.s.†': whiskers that exclude 1, a difference significant before adjustment" in caption
    assert "written in words on the bar ('2.00x faster', '1.25x slower')" in caption


def test_a_latency_speedup_chart_reads_lower_or_higher() -> None:
    metric = "latency.commit.p99_us"
    f = analyse(_elapsed({"a": SLOW, "b": FAST}), metric, True)
    svg = re.findall(r"<svg.*?</svg>", charts(f, "us", ["layout"]), re.S)[1]
    texts = _texts(svg)
    assert "2.00x higher" in texts  # b's p99 twice the baseline's
    assert f"times lower {metric} than the baseline (x)" in texts


def test_gains_and_spans_along_a_key_read_one_way() -> None:
    f = analyse(
        [
            CellData(f"files={n} engine={e}", {"files": n, "engine": e}, tuple(v * k for v in s))
            for n, k in ((1, 1.0), (4, 2.0))
            for e, s in (("x", (1.0, 1.05, 0.95)), ("y", (3.0, 3.1, 2.9)))
        ],
        "elapsed_seconds",
        True,
    )
    gain = next(d for d in f.dimensions if d.key == "files")
    said = gain_sentence(gain)
    assert said.startswith("files=4 vs files=1: average gain -50.0% (2.00x slower) across 2 ")
    assert not BARE.search(said)


def _histogram(us: int) -> Histogram:
    h = Histogram()
    h.add_values([us] * 100)
    return h


def test_the_latency_row_of_a_comparison_says_lower_or_higher() -> None:
    table = latency_sides("commit", "A", _histogram(1000), "B", _histogram(2000))
    row = [str(list(c.cells)[-1]) for c in table.columns]
    assert row == ["A against B", "", *["2.00x lower"] * 6]
    table = latency_sides("commit", "A", _histogram(3000), "B", _histogram(2000))
    assert [str(list(c.cells)[-1]) for c in table.columns][2:] == ["1.50x higher"] * 6


def _seed(db: Path) -> None:
    """Three populate runs at about 1,000 rows/s (transactions of 2 ms), then three at about
    2,000 rows/s (1 ms)."""

    def body(rate: float) -> object:
        def fill(outcome: RunOutcome) -> None:
            us = round(2e6 / rate)
            outcome.summary.update(
                {
                    "elapsed_seconds": 1000 / rate,
                    "rows": 1000,
                    "rows_per_second": rate,
                    "latency": {"transaction": {"p99_us": us}},
                }
            )
            kind = OpKind.TRANSACTION
            interval = Interval(
                0, kind, 0, False, 0.0, 1.0, _histogram(2000 if rate < 1500 else 1000)
            )
            outcome.latency = LatencyData((interval,), 1.0, 1.7e9)

        return fill

    spec = CommandRun("populate sqlite", "populate", {"engine": "sqlite"}, {}, {})
    with open_store(db) as store:
        for rate in (*SLOW, *FAST):
            execute(store, spec, body(rate))  # type: ignore[arg-type]


def test_iolab_compare_reads_one_way_for_a_rate_and_a_latency(tmp_path: Path) -> None:
    db = tmp_path / "results.db"
    _seed(db)
    done = iolab("compare", "1-3", "4-6", "--metric", "rows_per_second", "--results", str(db))
    assert done.code == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == (
        "rows_per_second (higher is better): runs 1-3: mean 1,000 (n = 3); "
        "runs 4-6: mean 2,000 (n = 3)"
    )
    assert lines[1] == "runs 1-3 was 2.00x slower than runs 4-6 (95% CI 1.59-2.51x, p = 0.0011)"
    assert "A / B" not in done.stdout and not BARE.search(done.stdout)
    # the latency table's last row: each percentile of A's against B's, in words
    against = next(i for i, line in enumerate(lines) if "A against B" in line)
    assert "2.00x" in lines[against] and "higher" in lines[against] + lines[against + 1]
    # each side's verdict last (these runs recorded no probes: nothing to say moved)
    assert lines[-2:] == [
        "runs 1-3: limited by no diagnosed run",
        "runs 4-6: limited by no diagnosed run",
    ]

    done = iolab(
        "compare", "4-6", "1-3", "--metric", "latency.transaction.p99_us", "--results", str(db)
    )
    assert done.code == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("latency.transaction.p99_us (lower is better): runs 4-6: ")
    assert lines[1] == (
        "runs 4-6 had 2.00x lower latency.transaction.p99_us than runs 1-3 "
        "(95% CI 1.59-2.51x, p = 0.0011)"
    )
    assert not BARE.search(done.stdout)


def test_serves_compare_page_says_the_ratio_in_words() -> None:
    declaration = registry.lookup_metric("rows_per_second")
    a = Sample("runs 1-3", SLOW, "rows_per_second", declaration, (1, 2, 3))
    b = Sample("runs 4-6", FAST, "rows_per_second", declaration, (4, 5, 6))
    r = ratio(a.label, a.values, b.label, b.values, False, "rows_per_second")
    page = compare_page("1-3", "4-6", "", Comparison(a, b, r))
    assert "<b id='ratio' data-speedup='0.5'>2.00x slower</b>" in page
    assert re.search(r"<span id='ci' data-low='0\.398\d*' data-high='0\.627\d*'>", page)
    assert ">1.59-2.51x slower</span>" in page
    assert "A / B" not in page and "times better" not in page
    svg = re.findall(r"<svg.*?</svg>", page, re.S)[1]
    texts = _texts(svg)
    assert "2.00x slower" in texts and "times faster than B (x)" in texts
    assert not [t for t in texts if BARE.search(t)], texts
