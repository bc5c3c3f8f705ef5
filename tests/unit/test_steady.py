"""The steady state of a rows/s series (iolab.analysis.steady): fio's criterion applied after
the run, with the steady part from the first steady window to the last."""

from __future__ import annotations

import math

import pytest

from iolab.analysis.steady import SteadyCriterion, steady_state
from iolab.errors import BadInput


def ends(n: int, step: float = 1.0) -> list[float]:
    return [step * (i + 1) for i in range(n)]


def test_a_ramp_then_a_plateau_is_steady_from_the_plateau() -> None:
    values = [100.0, 400.0, 700.0] + [1000.0, 1040.0, 960.0, 1010.0, 990.0] * 2
    found = steady_state(values, ends(len(values)), SteadyCriterion(window=5, tolerance_pct=5))
    assert found.rate == pytest.approx(1000.0)
    assert (found.start_s, found.end_s, found.samples) == (3.0, 13.0, 10)
    assert found.reason == ""


def test_a_dip_between_steady_windows_counts_in_the_steady_rate() -> None:
    plateau = [1000.0] * 5
    values = [*plateau, 400.0, *plateau]  # a checkpoint's dip in the middle
    found = steady_state(values, ends(len(values)), SteadyCriterion(window=5, tolerance_pct=5))
    assert (found.start_s, found.end_s, found.samples) == (0.0, 11.0, 11)
    assert found.rate == pytest.approx((10 * 1000 + 400) / 11)


def test_the_tail_after_the_last_steady_window_is_left_out() -> None:
    values = [500.0] * 6 + [200.0, 50.0]  # loaders finishing one by one
    found = steady_state(values, ends(len(values)), SteadyCriterion(window=4, tolerance_pct=1))
    assert (found.rate, found.start_s, found.end_s) == (500.0, 0.0, 6.0)


def test_a_short_last_sample_weighs_by_its_duration() -> None:
    values = [100.0, 100.0, 100.0, 90.0]
    times = [1.0, 2.0, 3.0, 3.5]  # recording stopped half-way through the last interval
    found = steady_state(values, times, SteadyCriterion(window=4, tolerance_pct=10))
    assert found.rate == pytest.approx((300 + 45) / 3.5)


def test_too_few_samples_give_no_steady_rate() -> None:
    found = steady_state([1000.0] * 4, ends(4), SteadyCriterion(window=10))
    assert found.rate is None and found.start_s is None
    assert found.reason == "4 samples, fewer than the steady-state window of 10"


def test_a_series_that_never_settles_gives_no_steady_rate() -> None:
    values = [1000.0, 500.0] * 10
    found = steady_state(values, ends(20), SteadyCriterion(window=4, tolerance_pct=20))
    assert found.rate is None
    assert found.reason == "no 4 samples within ±20% of their mean among 20 samples"


def test_missing_samples_and_zero_rates_are_not_steady() -> None:
    values = [math.nan, 1000.0, 1000.0, math.nan, 0.0, 0.0, 0.0]
    found = steady_state(values, ends(7), SteadyCriterion(window=3, tolerance_pct=10))
    assert found.rate is None


def test_the_criterion_refuses_what_is_out_of_range() -> None:
    with pytest.raises(BadInput) as window:
        SteadyCriterion(window=2).validate()
    assert (window.value.field, window.value.allowed) == (
        "--steady-window",
        "give 3 or more samples",
    )
    for bad in (0.0, -1.0, 100.5):
        with pytest.raises(BadInput) as tolerance:
            SteadyCriterion(tolerance_pct=bad).validate()
        assert tolerance.value.field == "--steady-tolerance"
    SteadyCriterion(window=3, tolerance_pct=100).validate()


def test_the_steady_part_starts_after_the_warm_up() -> None:
    """Issue 47: a run's steady band overlapped the warm-up the results leave out. A load
    steady from its first sample, with a 3 s warm-up: the steady part begins at 3 s."""
    values = [1000.0] * 12
    criterion = SteadyCriterion(window=4, tolerance_pct=5)
    whole = steady_state(values, ends(12), criterion)
    assert (whole.start_s, whole.end_s, whole.samples) == (0.0, 12.0, 12)
    found = steady_state(values, ends(12), criterion, after=3.0)
    assert (found.start_s, found.end_s, found.samples, found.rate) == (3.0, 12.0, 9, 1000.0)
    # a warm-up that ends inside a sample's interval leaves that sample out too
    inside = steady_state(values, ends(12), criterion, after=2.5)
    assert (inside.start_s, inside.samples) == (3.0, 9)
    # at 10 Hz the sample grid's float sums land a hair off the warm-up's end: no sample lost
    tenths = steady_state([1000.0] * 40, ends(40, 0.1), criterion, after=1.0)
    assert tenths.start_s == pytest.approx(1.0) and tenths.samples == 30


def test_a_run_too_short_after_its_warm_up_has_no_steady_part() -> None:
    found = steady_state([1000.0] * 6, ends(6), SteadyCriterion(window=4), after=3.0)
    assert found.rate is None and found.start_s is None
    assert (
        found.reason == "3 samples after the warm-up's 3 s, fewer than the steady-state window of 4"
    )
