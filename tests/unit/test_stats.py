"""Statistics against known values: Student's t table, hand-computed cases, Welch's test."""

from __future__ import annotations

import math

import pytest

from iolab.analysis.stats import compare, summarize, t_cdf, t_ppf, trend


@pytest.mark.parametrize(
    ("p", "df", "expected"),
    [
        (0.975, 1, 12.706205),
        (0.975, 2, 4.302653),
        (0.975, 4, 2.776445),
        (0.975, 9, 2.262157),
        (0.975, 30, 2.042272),
        (0.95, 10, 1.812461),
        (0.995, 5, 4.032143),
        (0.025, 4, -2.776445),
    ],
)
def test_t_quantiles_match_the_table(p: float, df: int, expected: float) -> None:
    assert t_ppf(p, df) == pytest.approx(expected, abs=2e-6)
    assert t_cdf(expected, df) == pytest.approx(p, abs=1e-7)


def test_t_cdf_of_fractional_df_and_large_df_tends_to_normal() -> None:
    assert t_cdf(0.0, 3.7) == pytest.approx(0.5)
    normal_975 = 1.959964
    assert t_ppf(0.975, 1e6) == pytest.approx(normal_975, abs=1e-4)


def test_summary_by_hand() -> None:
    values = [10.0, 12.0, 11.0, 13.0, 9.0]
    s = summarize(values)
    assert (s.n, s.mean, s.median, s.min, s.max) == (5, 11.0, 11.0, 9.0, 13.0)
    assert s.sd == pytest.approx(math.sqrt(2.5))
    assert s.cv == pytest.approx(math.sqrt(2.5) / 11)
    # the interval of a positive quantity: t on the logarithms, back-transformed
    logs = [math.log(v) for v in values]
    centre = sum(logs) / 5
    sd_log = math.sqrt(sum((x - centre) ** 2 for x in logs) / 4)
    half = 2.776445 * sd_log / math.sqrt(5)
    assert s.geomean == pytest.approx(math.exp(centre))
    assert s.ci_low == pytest.approx(math.exp(centre - half), abs=1e-5)
    assert s.ci_high == pytest.approx(math.exp(centre + half), abs=1e-5)
    assert (round(s.ci_low or 0, 3), round(s.ci_high or 0, 3)) == (9.107, 13.065)
    assert s.half_width == pytest.approx(math.sinh(half), abs=1e-6)  # against the centre
    assert s.too_wide is True  # CV 14% > 10%
    assert s.outliers == ()


def test_outliers_are_flagged_not_dropped() -> None:
    values = [10.0, 10.2, 9.9, 10.1, 10.0, 25.0]
    s = summarize(values)
    assert s.outliers == (5,)
    assert s.n == 6
    assert s.max == 25.0


def test_one_value_has_no_interval() -> None:
    s = summarize([3.0])
    assert (s.n, s.mean, s.sd, s.ci_low, s.half_width) == (1, 3.0, None, None, None)


def test_overlapping_samples_are_not_significant() -> None:
    a = [10.0, 12.0, 11.0, 13.0, 9.0]
    b = [10.5, 11.5, 12.5, 9.5, 11.0]
    c = compare(a, b)
    assert c.significant is False
    assert c.ci_low is not None and c.ci_high is not None
    assert c.ci_low < 1.0 < c.ci_high
    assert c.p_value is not None and c.p_value > 0.5


def test_a_clear_difference_is_significant_with_the_welch_p_value() -> None:
    a = [2.0, 2.1, 1.9, 2.05, 1.95]
    b = [1.0, 1.05, 0.95, 1.02, 0.98]
    c = compare(a, b)
    assert c.ratio == pytest.approx(math.exp(sum(map(math.log, a)) / 5 - sum(map(math.log, b)) / 5))
    assert c.ratio == pytest.approx(2.0, rel=0.01)
    assert c.significant is True
    assert c.ci_low is not None and c.ci_low > 1.0
    # Welch's statistic on the logs, written out: t = (mean_a - mean_b) / sqrt(va/na + vb/nb)
    la, lb = [math.log(v) for v in a], [math.log(v) for v in b]
    ma, mb = sum(la) / 5, sum(lb) / 5
    va = sum((x - ma) ** 2 for x in la) / 4 / 5
    vb = sum((x - mb) ** 2 for x in lb) / 4 / 5
    t = (ma - mb) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / 4 + vb**2 / 4)
    assert 7.9 < df < 8.0
    assert c.p_value == pytest.approx(2 * (1 - t_cdf(t, df)))
    assert c.p_value < 1e-6


def test_interval_and_test_always_agree() -> None:
    base = [1.0, 1.1, 0.9, 1.05]
    for shift in [1.0, 1.05, 1.1, 1.15, 1.2, 1.3]:
        c = compare([v * shift for v in [1.02, 1.12, 0.88, 1.0]], base)
        assert c.ci_low is not None and c.ci_high is not None and c.p_value is not None
        assert (c.ci_low > 1.0 or c.ci_high < 1.0) == (c.p_value < 0.05)


def test_too_few_runs_give_only_the_ratio() -> None:
    c = compare([2.0], [1.0, 1.1])
    assert c.ratio == pytest.approx(2.0 / math.sqrt(1.1))
    assert (c.ci_low, c.p_value, c.significant) == (None, None, False)


def test_trend_matches_scipy_linregress() -> None:
    # scipy.stats.linregress([1, 2, 3, 4, 5], [2, 4, 5, 4, 5]): slope 0.6, intercept 2.2,
    # pvalue 0.12402706265755456
    t = trend([1, 2, 3, 4, 5], [2, 4, 5, 4, 5])
    assert t.slope == pytest.approx(0.6)
    assert t.intercept == pytest.approx(2.2)
    assert t.p_value == pytest.approx(0.12402706265755456, rel=1e-9)
    assert not t.significant
    assert t.change == pytest.approx(0.6 * 4 / 4.0)


def test_a_steady_drift_is_significant() -> None:
    t = trend([0, 1, 2, 3, 4, 5], [10.0, 10.5, 11.1, 11.4, 12.0, 12.6])
    assert t.significant
    assert t.change > 0.2


def test_trend_of_two_points_has_no_test_and_flat_x_is_refused() -> None:
    assert trend([0, 1], [1, 2]).p_value is None
    with pytest.raises(ValueError):
        trend([1, 1, 1], [1, 2, 3])
