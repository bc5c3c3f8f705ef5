"""Findings that read like the seeds (issue 46 item 3, issue 47's "Findings"): each significant
difference first, its better cell first, with where the limit moved between its cells' stored
verdicts; every pair that differs in nothing significant in one line, with a power estimate
("about N more runs per cell would resolve a difference of 10 %") whose N is worked out here by
hand from the printed t table. Cells are synthetic, built through the analysis API as the
reports build them; the verdicts are :func:`iolab.analysis.diagnosis.cell_verdict`'s."""

from __future__ import annotations

import html
import io
import json
import math
from pathlib import Path

import pytest
from rich.console import Console

from iolab.analysis import diagnosis as dx
from iolab.analysis.findings import (
    CellData,
    Findings,
    analyse,
    answer,
    power,
    power_words,
)
from iolab.analysis.stats import t_ppf
from iolab.report import why as why_report
from iolab.report.document import answer_document
from iolab.report.findings import findings_text
from iolab.report.html import findings_html, headline_html
from tests.unit.cli import iolab
from tests.unit.fakes import FakeWorkload, experiment_file

# Student's t from the printed table: (quantile, degrees of freedom) -> t
T_TABLE = {
    (0.975, 4): 2.7764,
    (0.975, 6): 2.4469,
    (0.975, 8): 2.3060,
    (0.975, 10): 2.2281,
    (0.80, 4): 0.9410,
    (0.80, 6): 0.9057,
    (0.80, 8): 0.8889,
    (0.80, 10): 0.8791,
    (0.9875, 10): 2.6338,
    (0.9875, 12): 2.5600,
    (0.80, 12): 0.8726,
}

DATA = dx.Diagnosis(dx.DATA, 0.7, (dx.Evidence("x", 97, "%", "the data device 97 % busy"),))
CPU = dx.Diagnosis(dx.CPU, 0.9, (dx.Evidence("host.cpu_busy", 96, "%", "host 96 % busy"),))
NONE = dx.Diagnosis(dx.NONE, None, ())


def _spread(centre: float, d: float) -> tuple[float, float, float]:
    """Three runs whose logarithms are ln(centre) - d, ln(centre), ln(centre) + d: their
    standard deviation in logs is exactly ``d``."""
    return tuple(math.exp(math.log(centre) + x) for x in (-d, 0.0, d))  # type: ignore[return-value]


def _terminal(f: Findings, w: dx.Why | None = None) -> str:
    console = Console(width=400, record=True, file=io.StringIO())
    console.print(findings_text(f, "title", w))
    return console.export_text()


def _why(verdicts: dict[str, dx.Diagnosis]) -> dx.Why:
    return dx.Why(tuple(dx.cell_verdict(k, [v, v, v]) for k, v in verdicts.items()), ())


def test_the_t_table_is_the_one_the_estimate_uses() -> None:
    for (q, df), t in T_TABLE.items():
        assert t_ppf(q, df) == pytest.approx(t, abs=1e-4)


# elapsed seconds: two files 1.80x faster than one
ONE, TWO = (18.0, 18.2, 17.8), (10.0, 10.1, 9.9)


def test_a_significant_difference_says_where_the_limit_moved() -> None:
    f = analyse(
        [
            CellData("one-file", {"layout": "one-file"}, ONE),
            CellData("two-files", {"layout": "two-files"}, TWO),
        ],
        "elapsed_seconds",
        True,
    )
    w = _why({"one-file": DATA, "two-files": CPU})
    lines = why_report.finding_lines(f, w)
    assert len(lines) == 1
    (line,) = lines
    # the better cell first, whichever way the comparison was made
    assert line.text == (
        "two-files was 1.80x faster than one-file (95% CI 1.76-1.84x, p = 3.2e-07); "
        "the limit moved from data-device to cpu"
    )
    assert line.moved == "the limit moved from data-device to cpu" and not line.flagged
    assert line.ratio is not None and line.ratio.significant
    # without verdicts (no probes), the statistics alone
    assert why_report.finding_lines(f)[0].text == line.text.split("; ")[0]
    # the terminal says it first, then each cell's verdict in the Why
    text = _terminal(f, w)
    assert f"  {line.text}\n" in text and "differ in nothing significant" not in text
    assert [t.plain for t in why_report.text(w)][1:4:2] == [
        "  one-file: limited by data-device (3 of 3 runs)",
        "  two-files: limited by cpu (3 of 3 runs)",
    ]
    # the HTML report's headline, every finding and its Why
    item = f"<li>{html.escape(line.text)}</li>"
    assert item in headline_html(f, w) and item in findings_html(f, w)
    section = why_report.html_section(w, f)
    assert item in section and "<td>data-device (3 of 3 runs)</td>" in section
    # --json: the answer's numbers and words
    doc = answer_document(f, w)
    (sig,) = doc["significant"]  # type: ignore[misc]
    assert (sig["a"], sig["b"], sig["direction"]) == ("two-files", "one-file", "faster")
    assert sig["times"] == pytest.approx(1.80, abs=0.005) and sig["limit"] == line.moved
    assert doc["not_significant"] == {
        "pairs": 0,
        "untested": 0,
        "sentence": "",
        "power": None,
    }


def test_the_limit_kept_or_unknown_in_words() -> None:
    def moved(a: dx.Diagnosis, b: dx.Diagnosis) -> str:
        return dx.limit_moved(dx.cell_verdict("a", [a]), dx.cell_verdict("b", [b]))

    assert moved(CPU, DATA) == "the limit moved from data-device to cpu"
    assert moved(CPU, CPU) == "both limited by cpu"
    assert moved(NONE, NONE) == "neither cell had a single limit"
    assert moved(CPU, NONE) == "the limit moved from no single limit to cpu"
    assert dx.limit_moved(dx.cell_verdict("a", []), dx.cell_verdict("b", [CPU])) == ""


def test_pairs_that_differ_in_nothing_significant_are_one_line_with_a_power_estimate() -> None:
    # two cells, their runs' logs spread by sd 0.05 each, 1 % apart: one pair, a family of 1
    a, b = _spread(10.0, 0.05), _spread(10.0 * math.exp(0.01), 0.05)
    f = analyse(
        [CellData("layout=a", {"layout": "a"}, a), CellData("layout=b", {"layout": "b"}, b)],
        "elapsed_seconds",
        True,
    )
    # by hand: n runs per cell resolve 10 % with 80 % power at the 5 % level when
    # (t(0.975, 2n-2) + t(0.80, 2n-2)) * 0.05 * sqrt(2/n) <= ln(1.10) = 0.09531
    goal = math.log(1.10)

    def reach(n: int, q: float = 0.975) -> float:
        df = 2 * n - 2
        return (T_TABLE[(q, df)] + T_TABLE[(0.80, df)]) * 0.05 * math.sqrt(2 / n)

    assert reach(3) == pytest.approx(0.1518, abs=1e-4) and reach(3) > goal
    assert reach(4) == pytest.approx(0.1186, abs=1e-4) and reach(4) > goal
    assert reach(5) == pytest.approx(0.1010, abs=1e-4) and reach(5) > goal
    assert reach(6) == pytest.approx(0.0897, abs=1e-4) and reach(6) <= goal
    # so 6 runs per cell: 3 more than the 3 made
    ans = answer(f)
    assert ans.significant == () and len(ans.quiet) == 1
    assert ans.power is not None
    assert (ans.power.more_runs, ans.power.runs, ans.power.family) == (3, 3, 1)
    assert ans.power.spread == pytest.approx(0.05, abs=1e-12)
    said = (
        "1 pair differs in nothing significant; about 3 more runs per cell would resolve a "
        "difference of 10 %"
    )
    assert ans.quiet_sentence == said
    lines = why_report.finding_lines(f, _why({"layout=a": NONE, "layout=b": NONE}))
    assert [x.text for x in lines] == [said] and lines[0].ratio is None
    text = _terminal(f)
    assert f"  {said}\n" in text
    assert "no significant difference" not in text  # no line per pair
    assert f"<li class='note'>{html.escape(said)}</li>" in headline_html(f)
    # every comparison is still in the HTML report, folded
    assert "every comparison (1)" in findings_html(f)
    doc = answer_document(f, None)["not_significant"]
    assert doc["pairs"] == 1 and doc["power"]["more_runs_per_cell"] == 3  # type: ignore[index]


def test_a_power_estimate_beyond_its_most_runs_says_what_they_would_resolve() -> None:
    # spread 0.3 in logs: 10 % would take far more than 20 more runs per cell
    a, b = _spread(10.0, 0.3), _spread(10.5, 0.3)
    p = power([a, b])
    assert p is not None and p.more_runs == 20
    # 23 runs per cell, 44 degrees of freedom: ln(1 + X) = (t + t) * 0.3 * sqrt(2 / 23)
    x = math.expm1((t_ppf(0.975, 44) + t_ppf(0.80, 44)) * 0.3 * math.sqrt(2 / 23))
    assert p.difference == pytest.approx(x) and 0.28 < x < 0.29
    assert power_words(p) == (
        f"about 20 more runs per cell would resolve a difference of {x * 100:.0f} %"
    )
    # runs that suffice already: the smallest difference they resolve
    many = [_spread(10.0, 0.01) * 3, _spread(10.1, 0.01) * 3]  # 9 runs each, sd ~0.0087
    p = power(many)
    assert p is not None and p.more_runs == 0 and p.difference < 0.10
    assert power_words(p).startswith("the 9 runs per cell made would resolve a difference of ")
    # too few runs, or none that vary: no estimate
    assert power([(1.0,), (2.0,)]) is None and power([(1.0, 1.0), (2.0, 2.0)]) is None


def test_pairs_with_one_run_on_a_side_are_counted_apart_not_called_equal() -> None:
    cells = [
        CellData("layout=a", {"layout": "a"}, _spread(10.0, 0.05)),
        CellData("layout=b", {"layout": "b"}, _spread(10.1, 0.05)),
        CellData("layout=c", {"layout": "c"}, (30.0,)),
    ]
    ans = answer(analyse(cells, "elapsed_seconds", True))
    assert ans.significant == ()
    assert [(r.a, r.b) for r in ans.quiet] == [("layout=b", "layout=a")]
    assert len(ans.untested) == 1
    assert ans.quiet_sentence.endswith("; 1 pair has one run on a side: no test (add repetitions)")
    assert ans.quiet_sentence.startswith("1 pair differs in nothing significant; about ")


def test_mixed_significant_first_then_one_line() -> None:
    # a and b 1 % apart, c 2x slower than both
    a, b, c = _spread(10.0, 0.05), _spread(10.0 * math.exp(0.01), 0.05), _spread(20.0, 0.05)
    f = analyse(
        [
            CellData("layout=a", {"layout": "a"}, a),
            CellData("layout=b", {"layout": "b"}, b),
            CellData("layout=c", {"layout": "c"}, c),
        ],
        "elapsed_seconds",
        True,
    )
    w = _why({"layout=a": CPU, "layout=b": CPU, "layout=c": DATA})
    lines = why_report.finding_lines(f, w)
    texts = [x.text for x in lines]
    assert [x.ratio is not None for x in lines] == [True, False]
    assert texts[0].startswith("layout=a was 2.00x faster than layout=c (95% CI ")
    assert texts[0].endswith("; the limit moved from data-device to cpu")
    # the quiet pair (b against a, along layout: a family of 2 pairs): alpha 0.05 / 2, so
    # by hand with t(0.9875): 6 runs reach 0.1014 > ln 1.1, 7 runs 0.0918 <= it: 4 more
    assert (T_TABLE[(0.9875, 10)] + T_TABLE[(0.80, 10)]) * 0.05 * math.sqrt(2 / 6) > math.log(1.1)
    assert (T_TABLE[(0.9875, 12)] + T_TABLE[(0.80, 12)]) * 0.05 * math.sqrt(2 / 7) <= math.log(1.1)
    assert texts[1] == (
        "1 pair differs in nothing significant; about 4 more runs per cell would resolve a "
        "difference of 10 %"
    )
    text = _terminal(f, w)
    assert text.index(texts[0]) < text.index(texts[1])
    # the HTML Why: the significant pair with its moved limit, then the one line
    section = why_report.html_section(w, f)
    assert section.index(html.escape(texts[0])) < section.index(html.escape(texts[1]))


def test_pairs_along_a_key_going_opposite_ways_still_have_no_average() -> None:
    # connections 8 against 2: SQLite slower, PostgreSQL faster
    spec = {
        ("sqlite", 2): 10.0,
        ("sqlite", 8): 20.0,
        ("postgres", 2): 10.0,
        ("postgres", 8): 5.0,
    }
    cells = [
        CellData(f"engine={e} connections={n}", {"engine": e, "connections": n}, _spread(v, 0.02))
        for (e, n), v in spec.items()
    ]
    f = analyse(cells, "elapsed_seconds", True)
    text = _terminal(f)
    assert "connections=8 vs connections=2: differs by engine (no average): " in text
    assert "average gain" not in text.split("connections=8 vs connections=2")[1].split("\n")[0]
    # each significant pair worded one way: "faster", never "0.5x"
    for x in why_report.finding_lines(f):
        if x.ratio is not None:
            assert " faster than " in x.text and "slower" not in x.text.split("(")[0]


def test_iolab_compare_adds_where_the_limit_moved_or_a_power_estimate() -> None:
    from iolab.analysis.findings import ratio

    r = ratio("A", TWO, "B", ONE, True, "elapsed_seconds")
    line = why_report.compared_line(r, "the limit moved from data-device to cpu", (TWO, ONE))
    assert line.endswith("p = 3.2e-07); the limit moved from data-device to cpu")
    a, b = _spread(10.0, 0.05), _spread(10.0 * math.exp(0.01), 0.05)
    r = ratio("A", a, "B", b, True, "elapsed_seconds")
    line = why_report.compared_line(r, "both limited by cpu", (a, b))
    assert line.startswith("A vs B: no significant difference (")
    assert line.endswith("; about 3 more runs per side would resolve a difference of 10 %")


def test_iolab_run_ends_with_the_answer(fake: FakeWorkload, tmp_path: Path) -> None:
    """The fake workload's elapsed seconds are rows / 100, spread by +/- noise: cells of rows
    differ, cells of connections do not."""
    fake.noise = 0.02
    path = experiment_file(
        tmp_path,
        experiment='order = "sequential"\nrepetitions = 3',
        matrix="rows = [100, 300]\nconnections = [1, 2]",
    )
    db = tmp_path / "results.db"
    done = iolab("run", str(path), "--results", str(db))
    assert done.code == 0, done
    out = done.stdout
    assert "best: rows=100 connections=" in out
    assert "rows=100 connections=1 was 3.00x faster than rows=300 connections=1 (95% CI " in out
    assert "pairs differ in nothing significant" in out
    doc = json.loads(iolab("run", str(path), "--results", str(db), "--json").stdout)
    assert doc["answer"]["significant"][0]["times"] == pytest.approx(3.0, abs=0.01)
    assert doc["answer"]["not_significant"]["pairs"] >= 1
