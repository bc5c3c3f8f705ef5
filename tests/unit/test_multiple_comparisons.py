"""Honest multiple comparisons: Holm's adjustment within each family, counted and said."""

from __future__ import annotations

import json
import random

import pytest

from iolab.analysis.findings import CellData, analyse, comparisons_sentence, sentence
from iolab.analysis.stats import holm, p_value


def test_holm_multiplies_by_the_rank_keeps_the_order_and_caps_at_one() -> None:
    # the textbook case: m = 4; sorted 0.01, 0.02, 0.03, 0.5 -> 0.04, 0.06, 0.06, 0.5
    assert holm([0.03, 0.5, 0.01, 0.02]) == pytest.approx([0.06, 0.5, 0.04, 0.06])
    assert holm([0.4, 0.9]) == [0.8, 0.9]
    assert holm([0.6, 0.7]) == [1.0, 1.0]
    assert holm([]) == []


def test_p_value_is_the_comparisons_own() -> None:
    from iolab.analysis.stats import compare

    a, b = [10.0, 10.5, 9.8, 10.1], [12.0, 12.4, 11.7, 12.2]
    assert p_value(a, b) == compare(a, b).p_value
    assert p_value([1.0], b) is None


def _cells(n: int, seed: int, shift: float = 1.0) -> list[CellData]:
    rng = random.Random(seed)
    cells = []
    for i in range(n):
        scale = shift if i == 0 else 1.0
        runs = tuple(scale * rng.lognormvariate(0.0, 0.05) for _ in range(5))
        cells.append(CellData(f"replica={i}", {"replica": i}, runs))
    return cells


def test_every_ratio_is_adjusted_within_its_family_and_the_families_are_counted() -> None:
    f = analyse(_cells(8, 1), "elapsed_seconds", True)
    names = [(x.name, x.comparisons) for x in f.families]
    assert names == [("all pairs of cells", 28), ("along replica", 7)]
    for r in (*f.best_vs, *f.vs_baseline):
        assert r.family == 28 and r.p_adjusted is not None
        assert r.comparison.p_value is not None and r.p_adjusted >= r.comparison.p_value
    along = [r for d in f.dimensions for r in d.pairs]
    assert len(along) == 7 and all(r.family == 7 for r in along)
    said = comparisons_sentence(f)
    assert said.startswith("35 comparisons (all pairs of cells: 28, along replica: 7)")
    assert "chance alone would make about 1.8 of them p < 0.05" in said
    assert "adjusted p =" in sentence(f.best_vs[0]) and "over 28 comparisons" in sentence(
        f.best_vs[0]
    )


def test_a_real_difference_survives_the_adjustment() -> None:
    f = analyse(_cells(8, 2, shift=0.5), "elapsed_seconds", True)  # cell 0 takes half the time
    assert f.best is not None and f.best.cell.label == "replica=0"
    assert all(r.significant for r in f.best_vs)
    assert f.families[0].significant >= 7  # replica=0 against each of the seven others


def test_the_json_has_raw_and_adjusted_p() -> None:
    from iolab.report.document import ratio_document

    f = analyse(_cells(4, 3), "elapsed_seconds", True)
    doc = json.loads(json.dumps(ratio_document(f.best_vs[0])))
    assert doc["family_size"] == 6 and doc["p_adjusted"] >= doc["p_value"]


def test_beyond_the_holm_limit_the_pairs_take_bonferronis_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from iolab.analysis import findings

    monkeypatch.setattr(findings, "HOLM_PAIRS", 5)  # 8 cells have 28 pairs
    f = analyse(_cells(8, 1), "elapsed_seconds", True)
    family = f.families[0]
    assert family.name == "all pairs of cells (Bonferroni)" and family.comparisons == 28
    for r in f.best_vs:
        assert r.comparison.p_value is not None
        assert r.p_adjusted == pytest.approx(min(1.0, 28 * r.comparison.p_value))
