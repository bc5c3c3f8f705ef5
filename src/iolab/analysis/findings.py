"""The sentences an experiment ends with: the best cell, the ratios that matter, the warnings.

Input: each cell's matrix values and the values of its main metric over its finished runs.
Output: :class:`Findings`, plain data that the terminal and HTML reports render. Differences
whose 95% interval contains 1.0 are "no significant difference", never a win; one whose interval
excludes 1.0 but which the family's adjustment does not keep says so in its own line
("significant before adjustment, not after Holm's"), so a verdict never contradicts the interval
printed beside it. Pairs along a matrix key that go opposite ways are not averaged: the gain says
which other key they differ by.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeAlias

from iolab.analysis.efficiency import Drift, Efficiency, drift_sentence
from iolab.analysis.queries import QueryTimes
from iolab.analysis.stats import (
    CONFIDENCE,
    Comparison,
    Summary,
    compare,
    holm,
    p_value,
    summarize,
    t_ppf,
)
from iolab.metrics import Quantity
from iolab.units import format_seconds

# A value of a matrix key as the stored params hold it (a JSON scalar, or a list: data dirs)
MatrixValue: TypeAlias = str | int | float | bool | list[str | int | float | bool | None] | None


@dataclass(frozen=True)
class CellData:
    label: str
    values: Mapping[str, MatrixValue]  # matrix key -> value
    metric: tuple[float, ...]  # the metric over done runs, in run order
    failed: int = 0
    reason: str = ""  # why the last failed run failed


@dataclass(frozen=True)
class CellStats:
    cell: CellData
    summary: Summary | None


@dataclass(frozen=True)
class Ratio:
    """``a`` against ``b`` in "times better": > 1 means a is better, whatever the direction."""

    a: str
    b: str
    comparison: Comparison
    better: float  # how many times better a is than b (speedup); < 1: worse
    better_low: float | None  # its 95% interval
    better_high: float | None
    metric: str = ""  # what was compared: it decides the words (:func:`ratio_words`)
    p_adjusted: float | None = None  # Holm's, within its family (None: not adjusted)
    family: int = 1  # how many comparisons its family holds
    adjustment: str = "Holm's"  # p_adjusted's method ("Bonferroni's" beyond HOLM_PAIRS)

    @property
    def significant(self) -> bool:
        """Adjusted p < 0.05 when the ratio belongs to a family, else the test's own p."""
        if self.p_adjusted is None:
            return self.comparison.significant
        return self.p_adjusted < 1.0 - CONFIDENCE

    @property
    def before_adjustment_only(self) -> bool:
        """Its own interval excludes 1.0 (p < 0.05), but the family's adjustment does not keep
        it: the line must say so, or it would read "not significant" beside such an interval."""
        return self.comparison.significant and not self.significant


@dataclass(frozen=True)
class Family:
    """A family of comparisons whose p-values were adjusted together (Holm): all pairs of
    cells, or all pairs along one matrix key."""

    name: str  # "all pairs of cells", "along layout"
    comparisons: int  # how many tests it holds (each with a p-value)
    raw_significant: int  # of them p < 0.05 before the adjustment
    significant: int  # adjusted p < 0.05

    @property
    def by_chance(self) -> float:
        """How many "p < 0.05" chance alone would give if nothing differed."""
        return self.comparisons * (1.0 - CONFIDENCE)


@dataclass(frozen=True)
class DimensionGain:
    """Seed 001's "average gain of X over Y across all tests": one matrix key, two values.
    Pairs that go opposite ways (some faster, some slower) have no average: ``by`` names the
    other matrix key whose values split them, when one does, and ``groups`` its pairs."""

    key: str
    a: MatrixValue
    b: MatrixValue
    pairs: tuple[Ratio, ...]  # a vs b with every other key equal
    mean_better: float | None  # geometric mean of the pairs' speedups; None: opposite ways
    by: str | None = None  # opposite ways: the other key each of whose values goes one way
    groups: tuple[tuple[MatrixValue, tuple[Ratio, ...]], ...] = ()  # by's values, in cell order


@dataclass(frozen=True)
class Findings:
    metric: str
    lower_is_better: bool
    cells: tuple[CellStats, ...]
    best: CellStats | None = None
    best_vs: tuple[Ratio, ...] = ()  # best vs baseline, runner-up, worst
    dimensions: tuple[DimensionGain, ...] = ()
    warnings: tuple[str, ...] = ()
    efficiency: tuple[Efficiency, ...] = ()  # cell x device vs its limit
    drift: Drift | None = None  # the baseline cell's metric over time
    queries: tuple[QueryTimes, ...] = ()  # query workloads: per-query times
    baseline: str | None = None  # the cell the speed-ups are against (the first, if none given)
    vs_baseline: tuple[Ratio, ...] = ()  # every other measured cell against it
    families: tuple[Family, ...] = ()  # the comparisons made, adjusted within each family

    def with_context(
        self,
        efficiency: Sequence[Efficiency],
        drift: Drift | None,
        queries: Sequence[QueryTimes] = (),
    ) -> Findings:
        """These findings with what the store knows beyond the metric: device limits, the
        baseline over time and per-query times. A drift the test finds significant becomes a
        warning."""
        warnings = self.warnings
        if drift is not None and drift.trend.significant:
            warnings += (drift_sentence(drift, self.metric),)
        return replace(
            self,
            efficiency=tuple(efficiency),
            drift=drift,
            queries=tuple(queries),
            warnings=warnings,
        )

    def best_efficiency(self) -> list[Efficiency]:
        best = self.best.cell.label if self.best is not None else None
        return [e for e in self.efficiency if e.cell == best]


def speedup(ratio_of_metric: float, lower_is_better: bool) -> float:
    """A ratio of the metric (a / b) as "times better": elapsed halves = 2.0x."""
    return 1.0 / ratio_of_metric if lower_is_better else ratio_of_metric


def ratio(
    a: str,
    a_values: Sequence[float],
    b: str,
    b_values: Sequence[float],
    lower_is_better: bool,
    metric: str = "",
) -> Ratio:
    """How many times better ``a`` is than ``b``, with its 95% interval and significance."""
    c = compare(a_values, b_values)
    low, high = c.ci_low, c.ci_high
    if lower_is_better and low is not None and high is not None:
        low, high = 1.0 / high, 1.0 / low
    return Ratio(a, b, c, speedup(c.ratio, lower_is_better), low, high, metric)


def _ratio(a: CellStats, b: CellStats, lower_is_better: bool, metric: str) -> Ratio | None:
    if not a.cell.metric or not b.cell.metric:
        return None
    return ratio(a.cell.label, a.cell.metric, b.cell.label, b.cell.metric, lower_is_better, metric)


def analyse(
    cells: Sequence[CellData],
    metric: str,
    lower_is_better: bool,
    baseline: str | None = None,
) -> Findings:
    stats = tuple(CellStats(c, summarize(c.metric) if c.metric else None) for c in cells)
    measured = [s for s in stats if s.summary is not None]
    if not measured:
        return Findings(metric, lower_is_better, stats, warnings=("no finished runs to analyse",))

    def key(s: CellStats) -> float:
        assert s.summary is not None
        return s.summary.mean if lower_is_better else -s.summary.mean

    ranked = sorted(measured, key=key)
    best = ranked[0]
    others: list[CellStats] = []
    base = next((s for s in measured if s.cell.label == baseline), None)
    if base is not None and base is not best:
        others.append(base)
    if len(ranked) > 1 and ranked[1] not in others:
        others.append(ranked[1])
    if len(ranked) > 2 and ranked[-1] not in others:
        others.append(ranked[-1])
    found = (_ratio(best, o, lower_is_better, metric) for o in others)
    best_vs = [r for r in found if r is not None]
    warnings: list[str] = []
    for s in stats:
        if s.summary is None:
            continue
        if s.summary.too_wide and s.summary.cv is not None:
            warnings.append(
                f"{s.cell.label}: runs vary by {s.summary.cv:.0%} (CV): too wide to trust; "
                'add repetitions (or repetitions = "auto"), more rows, or quiet the machine'
            )
        if s.summary.outliers:
            runs = ", ".join(str(i + 1) for i in s.summary.outliers)
            warnings.append(f"{s.cell.label}: run(s) {runs} are outliers (kept)")
        if s.summary.n < 2:
            warnings.append(f"{s.cell.label}: one run only, no confidence interval")
    for s in stats:
        if s.cell.failed:
            why = f": {s.cell.reason}" if s.cell.reason else ""
            warnings.append(f"{s.cell.label}: {s.cell.failed} run(s) failed{why}")
    reference = base or measured[0]
    return adjusted(
        Findings(
            metric,
            lower_is_better,
            stats,
            best,
            tuple(best_vs),
            tuple(_dimensions(measured, lower_is_better, metric)),
            tuple(warnings),
            baseline=reference.cell.label,
            vs_baseline=tuple(_against(measured, reference, lower_is_better, metric)),
        )
    )


HOLM_PAIRS = 20_000  # pairs of cells (200 cells): beyond, Bonferroni's bound (m x p) instead


def adjusted(f: Findings) -> Findings:
    """The findings with every ratio's p-value adjusted (Holm) within its family, and the
    families counted. Two families of the issue's design: all pairs of cells (the best cell
    was picked among them, so its ratios belong to all of them), and each matrix key's pairs
    (its dimension gains). Only tests with a p-value count (two runs or more on each side)."""
    measured = [c for c in f.cells if c.summary is not None and c.summary.n >= 2]
    families: list[Family] = []
    pairs = len(measured) * (len(measured) - 1) // 2
    found: dict[frozenset[str], float] = {}
    if pairs and pairs <= HOLM_PAIRS:
        keys = []
        raw = []
        for i, a in enumerate(measured):
            for b in measured[i + 1 :]:
                p = p_value(a.cell.metric, b.cell.metric)
                if p is not None:
                    keys.append(frozenset((a.cell.label, b.cell.label)))
                    raw.append(p)
        found = dict(zip(keys, holm(raw), strict=True))
        families.append(_family("all pairs of cells", raw, found.values()))

    def cell_pair(r: Ratio) -> Ratio:
        p = r.comparison.p_value
        if p is None or not pairs:
            return r
        # over HOLM_PAIRS: the bound Holm's adjusted p never exceeds
        key = frozenset((r.a, r.b))
        if key in found:
            return replace(r, p_adjusted=found[key], family=pairs)
        return replace(r, p_adjusted=min(1.0, pairs * p), family=pairs, adjustment="Bonferroni's")

    if pairs > HOLM_PAIRS:
        raw = [p for r in (*f.best_vs, *f.vs_baseline) if (p := r.comparison.p_value) is not None]
        families.append(
            _family("all pairs of cells (Bonferroni)", raw, [min(1.0, pairs * p) for p in raw])
        )
        families[-1] = replace(families[-1], comparisons=pairs)
    dimensions = []
    for key in dict.fromkeys(d.key for d in f.dimensions):
        ratios = [p for d in f.dimensions if d.key == key for p in d.pairs]
        tested = [r.comparison.p_value for r in ratios if r.comparison.p_value is not None]
        adj = iter(holm(tested))
        by_ratio = {id(r): next(adj) for r in ratios if r.comparison.p_value is not None}
        if tested:
            families.append(_family(f"along {key}", tested, by_ratio.values()))
        for d in f.dimensions:
            if d.key == key:
                dimensions.append(
                    replace(
                        d,
                        pairs=tuple(
                            replace(r, p_adjusted=by_ratio[id(r)], family=len(tested))
                            if id(r) in by_ratio
                            else r
                            for r in d.pairs
                        ),
                    )
                )
    return replace(
        f,
        best_vs=tuple(cell_pair(r) for r in f.best_vs),
        vs_baseline=tuple(cell_pair(r) for r in f.vs_baseline),
        dimensions=tuple(_regrouped(d) for d in dimensions),
        families=tuple(families),
    )


def _regrouped(d: DimensionGain) -> DimensionGain:
    """``d`` with its groups' ratios the adjusted ones (the groups were made before)."""
    if not d.groups:
        return d
    by_pair = {(r.a, r.b): r for r in d.pairs}
    groups = tuple((v, tuple(by_pair[(r.a, r.b)] for r in rs)) for v, rs in d.groups)
    return replace(d, groups=groups)


def _family(name: str, raw: Sequence[float], adjusted: Iterable[float]) -> Family:
    alpha = 1.0 - CONFIDENCE
    return Family(
        name, len(raw), sum(1 for p in raw if p < alpha), sum(1 for p in adjusted if p < alpha)
    )


def comparisons_sentence(f: Findings) -> str:
    """How many comparisons the findings made, how many chance alone would call significant,
    and how many were before and after the adjustment."""
    if not f.families:
        return ""
    total = sum(x.comparisons for x in f.families)
    parts = ", ".join(f"{x.name}: {x.comparisons}" for x in f.families)
    raw = sum(x.raw_significant for x in f.families)
    kept = sum(x.significant for x in f.families)
    chance = sum(x.by_chance for x in f.families)
    return (
        f"{total} comparisons ({parts}); if nothing differed, chance alone would make about "
        f"{chance:.1f} of them p < 0.05. {raw} had p < 0.05; {kept} remain significant after "
        "Holm's adjustment within each family, and the verdicts and p-values here are the "
        "adjusted ones. Each 95% interval is its comparison's own: one that excludes 1.0 where "
        "the adjustment does not keep the difference is marked 'significant before adjustment, "
        "not after'"
    )


def _against(
    measured: list[CellStats], base: CellStats, lower_is_better: bool, metric: str
) -> list[Ratio]:
    """Every measured cell but ``base`` against it: the speed-up chart's bars."""
    found = (_ratio(s, base, lower_is_better, metric) for s in measured if s is not base)
    return [r for r in found if r is not None]


def _dimensions(
    measured: list[CellStats], lower_is_better: bool, metric: str
) -> list[DimensionGain]:
    """For every matrix key with two or more values: each value against the first, paired on
    all other keys, and the geometric mean of the speedups."""
    if not measured:
        return []
    keys = list(measured[0].cell.values)
    out = []
    for k in keys:
        values: list[MatrixValue] = []
        for s in measured:
            v = s.cell.values.get(k)
            if v not in values:
                values.append(v)
        if len(values) < 2:
            continue
        first = values[0]
        for v in values[1:]:
            pairs = []
            for a in measured:
                if a.cell.values.get(k) != v:
                    continue
                rest = {kk: vv for kk, vv in a.cell.values.items() if kk != k}
                for b in measured:
                    if b.cell.values.get(k) == first and all(
                        b.cell.values.get(kk) == vv for kk, vv in rest.items()
                    ):
                        r = _ratio(a, b, lower_is_better, metric)
                        if r is not None:
                            pairs.append(r)
            if pairs:
                out.append(_gain(k, v, first, pairs, measured))
    return out


def _side(r: Ratio) -> int:
    """+1: a is better than b; -1: worse; 0: the same (to rounding)."""
    log = math.log(r.better)
    return 0 if abs(log) < 1e-9 else 1 if log > 0 else -1


def _gain(
    key: str, a: MatrixValue, b: MatrixValue, pairs: list[Ratio], measured: list[CellStats]
) -> DimensionGain:
    """The geometric mean of the pairs' speed-ups, unless they go opposite ways: then no
    average (SQLite's 0.44x and PostgreSQL's 2.34x make no "+14.7 %"), and the first other
    matrix key each of whose values holds pairs going one way only."""
    sides = {_side(r) for r in pairs}
    if not {1, -1} <= sides:
        mean = math.exp(sum(math.log(p.better) for p in pairs) / len(pairs))
        return DimensionGain(key, a, b, tuple(pairs), mean)
    values = {s.cell.label: s.cell.values for s in measured}
    for other in values[pairs[0].a]:
        if other == key:
            continue
        groups: dict[str, tuple[MatrixValue, list[Ratio]]] = {}
        for r in pairs:
            v = values[r.a].get(other)
            groups.setdefault(show_value(other, v), (v, []))[1].append(r)
        if len(groups) > 1 and all(
            not {1, -1} <= {_side(r) for r in rs} for _, rs in groups.values()
        ):
            split = tuple((v, tuple(rs)) for v, rs in groups.values())
            return DimensionGain(key, a, b, tuple(pairs), None, other, split)
    return DimensionGain(key, a, b, tuple(pairs), None)


def ratio_words(metric: str) -> tuple[str, str, str]:
    """How a ratio of ``metric`` reads: the better side's word, the worse side's, and what
    follows the word in a sentence: ("faster", "slower", "") for times and rates (and a number
    no workload declares), ("lower", "higher", " latency.commit.p99_us") for a latency,
    ("better", "worse", "") for sizes, counts and ratios (see :attr:`Metric.words`)."""
    # the registry imports every workload (and pgbench its drivers): on use, not with the
    # store, which reads metric_of at the end of every run
    from iolab.workloads import registry

    found = registry.find_metric(metric) if metric else None
    if found is None:
        return "faster", "slower", ""
    up, down = found.words
    return up, down, f" {metric}" if found.quantity is Quantity.LATENCY else ""


def in_words(better: float, metric: str, named: bool = True) -> str:
    """ "2.00x faster", "1.16x slower", "1.70x lower latency.commit.p99_us": a "times better"
    (below 1: worse) as a ratio of at least 1.00x and the word that says which way; ``named``
    False leaves the latency's name out (an interval's second end)."""
    up, down, what = ratio_words(metric)
    text = f"{better:.2f}x {up}" if better >= 1 else f"{1 / better:.2f}x {down}"
    return text + (what if named else "")


def direction(r: Ratio) -> str:
    """The word of :func:`in_words` alone ("faster", "slower", "lower", ...): --json's
    ``direction``, beside the number ``speedup`` (> 1: a is better)."""
    up, down, _ = ratio_words(r.metric)
    return up if r.better >= 1 else down


def times(r: Ratio) -> str:
    """ "2.00x faster", "1.16x slower": how many times better or worse ``r.a`` is, in words."""
    return in_words(r.better, r.metric)


def interval_words(r: Ratio) -> str:
    """The 95% interval in words, its worse end first: "1.80-2.05x faster" (both ends one
    way), "1.01x slower to 2.47x faster" (it holds 1.0); "-" with too few runs."""
    lo, hi = r.better_low, r.better_high
    if lo is None or hi is None:
        return "-"
    up, down, _ = ratio_words(r.metric)
    if lo >= 1:
        return f"{lo:.2f}-{hi:.2f}x {up}"
    if hi < 1:
        return f"{1 / hi:.2f}-{1 / lo:.2f}x {down}"
    return f"{1 / lo:.2f}x {down} to {hi:.2f}x {up}"


def _than(r: Ratio) -> str:
    """ "A 2.00x faster than B": the ratio with both sides named, a first."""
    return f"{r.a} {times(r)} than {r.b}"


def sentence(r: Ratio) -> str:
    """One comparison in words, in one direction whatever the metric's: "A was 1.93x faster
    than B (95% CI 1.80-2.05x, p = 0.001)"; "A had 1.70x lower latency.commit.p99_us than B
    (...)"; "A 1.69x faster than B (...), significant before adjustment, not after Holm's";
    "A vs B: no significant difference (A 1.56x faster than B, 95% CI 1.01x slower to 2.47x
    faster, ...)". Every ratio is 1.00x or more with its word; the verdict always agrees with
    the interval printed beside it."""
    c = r.comparison
    lo, hi = r.better_low, r.better_high
    if lo is None or hi is None or c.p_value is None:
        return f"{_than(r)} (too few runs for a confidence interval; no verdict)"
    lo_t, hi_t = (lo, hi) if r.better >= 1 else (1 / hi, 1 / lo)
    if c.significant and not r.significant:  # its interval excludes 1.0; the adjustment does not
        assert r.p_adjusted is not None
        return (
            f"{_than(r)} (95% CI {lo_t:.2f}-{hi_t:.2f}x, p = {c.p_value:.2g}), "
            f"significant before adjustment, not after {r.adjustment} over {r.family} "
            f"comparisons (adjusted p = {r.p_adjusted:.2g})"
        )
    p = f"p = {c.p_value:.2g}"
    if r.p_adjusted is not None and r.family > 1:
        p = f"adjusted p = {r.p_adjusted:.2g} over {r.family} comparisons, unadjusted {p}"
    if not c.significant:  # the interval holds 1.0: its ends go opposite ways
        ci = interval_words(r)
        return f"{r.a} vs {r.b}: no significant difference ({_than(r)}, 95% CI {ci}, {p})"
    verb = "had" if ratio_words(r.metric)[2] else "was"
    return f"{r.a} {verb} {times(r)} than {r.b} (95% CI {lo_t:.2f}-{hi_t:.2f}x, {p})"


def _span(ratios: Sequence[Ratio]) -> str:
    """ "1.97x-2.34x faster": the range of ratios that go one way, in words."""
    near, far = times(min(ratios, key=_unit)), times(max(ratios, key=_unit))
    return near if near == far else f"{near.split()[0]}-{far}"


def _unit(r: Ratio) -> float:
    """How far from 1.0 a ratio is, whichever way (2.0x and 0.5x are as far)."""
    return abs(math.log(r.better))


def gain_sentence(d: DimensionGain) -> str:
    """Seed 001: "the average gain of X over Y across all tests was 4.25%"; pairs that go
    opposite ways are not averaged: "differs by engine: engine=sqlite 1.16x-2.27x slower,
    engine=postgres 1.97x-2.34x faster"."""
    significant = sum(1 for p in d.pairs if p.significant)
    what = f"{d.key}={show_value(d.key, d.a)} vs {d.key}={show_value(d.key, d.b)}"
    if d.mean_better is not None:
        gain = (d.mean_better - 1.0) * 100.0
        metric = d.pairs[0].metric
        return (
            f"{what}: average gain {gain:+.1f}% ({in_words(d.mean_better, metric)}) across "
            f"{len(d.pairs)} paired cell(s), {significant} of them significant"
        )
    of = f"{significant} of {len(d.pairs)} pairs significant"
    if d.by is not None:
        ways = ", ".join(f"{d.by}={show_value(d.by, v)} {_span(rs)}" for v, rs in d.groups)
        return f"{what}: differs by {d.by} (no average): {ways}; {of}"
    up = [r for r in d.pairs if _side(r) > 0]
    down = [r for r in d.pairs if _side(r) < 0]
    return (
        f"{what}: goes both ways (no average): {len(up)} pair(s) {_span(up)}, "
        f"{len(down)} {_span(down)}; {of}"
    )


def matrix_values(params: Mapping[str, Any], keys: Sequence[str]) -> dict[str, MatrixValue]:
    """A cell's matrix values from its resolved parameters (``settings.X`` from the settings)."""
    out: dict[str, MatrixValue] = {}
    for k in keys:
        if k.startswith("settings."):
            out[k] = (params.get("settings") or {}).get(k.removeprefix("settings."))
        else:
            out[k] = params.get(k)
    return out


# matrix keys whose values are seconds: labels write them as the file does (5s, not 5.0)
SECONDS_KEYS = frozenset({"duration", "sample_interval", "checkpoint_every", "interval", "timeout"})


def show_value(key: str, value: MatrixValue) -> str:
    """A matrix value as a label shows it."""
    if isinstance(value, list):
        return "+".join(map(str, value))
    if key in SECONDS_KEYS and isinstance(value, int | float) and not isinstance(value, bool):
        return format_seconds(value)
    return str(value)


def label_of(values: Mapping[str, MatrixValue]) -> str:
    return " ".join(f"{k}={show_value(k, v)}" for k, v in values.items())


def metric_of(summary: Mapping[str, Any], metric: str) -> float | None:
    """The metric's value in a run summary: a key (``elapsed_seconds``) or a dotted path into
    its tables (``tests.SEQ1M Q8T1 read.mbps``); None when absent or not a number."""
    path = [metric] if metric in summary else metric.split(".")
    value: Any = summary
    for part in path:
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


# -- the answer: significant differences first, the rest in one line ---------------------------

POWER = 0.80  # the chance a power estimate asks for of finding a real difference significant
TARGET_DIFFERENCE = 0.10  # the difference a power estimate is worked out for first (10 %)
MOST_MORE_RUNS = 20  # runs per cell a power estimate proposes at most


@dataclass(frozen=True)
class Power:
    """How many more runs per cell would resolve a difference, from the spread measured so far.

    ``more_runs`` runs added to each cell (0: the runs made already suffice) would find a true
    difference of ``difference`` (0.10 = 10 %, as a ratio 1.10x) significant with
    :data:`POWER` chance, at the 5 % level divided over ``family`` comparisons (the strictest
    step of Holm's adjustment). ``spread`` is the pooled standard deviation of the logarithm
    of the metric over the cells (about their CV), ``runs`` the fewest runs a cell has now.
    The test is Welch's on the logarithms with equal runs per side:
    ``(t(1 - alpha / 2, 2n - 2) + t(POWER, 2n - 2)) * spread * sqrt(2 / n) <= ln(1 + difference)``.
    """

    more_runs: int
    difference: float
    runs: int
    spread: float
    family: int = 1


def _needed(spread: float, difference: float, alpha: float, most: int) -> int:
    """The fewest runs per cell (at least 2) that resolve ``difference`` at ``alpha``; past
    ``most``, ``most + 1``."""
    goal = math.log1p(difference)
    n = 2
    while n <= most and _resolves(spread, n, alpha) > goal:
        n += 1
    return n


def _resolves(spread: float, n: int, alpha: float) -> float:
    """The smallest difference (in logs) ``n`` runs per cell resolve: see :class:`Power`."""
    df = 2.0 * (n - 1)
    return (t_ppf(1.0 - alpha / 2.0, df) + t_ppf(POWER, df)) * spread * math.sqrt(2.0 / n)


def power(
    samples: Sequence[Sequence[float]],
    family: int = 1,
    target: float = TARGET_DIFFERENCE,
    most: int = MOST_MORE_RUNS,
) -> Power | None:
    """The power estimate of :class:`Power` over cells' runs (``samples``, each a cell's
    values: positive, two or more runs; others are left out): how many more runs per cell
    resolve ``target``; when that is more than ``most``, the difference ``most`` more runs
    resolve; when the runs suffice already, the smallest difference they resolve. None without
    two such cells or with runs that do not vary at all."""
    kept = [s for s in samples if len(s) >= 2 and min(s) > 0]
    if len(kept) < 2:
        return None
    var = 0.0
    df = 0
    for s in kept:
        logs = [math.log(v) for v in s]
        mean = math.fsum(logs) / len(logs)
        var += math.fsum((x - mean) ** 2 for x in logs)
        df += len(logs) - 1
    spread = math.sqrt(var / df)
    if spread == 0:
        return None
    runs = min(len(s) for s in kept)
    alpha = (1.0 - CONFIDENCE) / max(1, family)
    need = _needed(spread, target, alpha, runs + most)
    if need <= runs:
        return Power(0, math.expm1(_resolves(spread, runs, alpha)), runs, spread, family)
    if need - runs <= most:
        return Power(need - runs, target, runs, spread, family)
    return Power(most, math.expm1(_resolves(spread, runs + most, alpha)), runs, spread, family)


def power_words(p: Power, per: str = "cell") -> str:
    """ "about 3 more runs per cell would resolve a difference of 10 %" (or of what the most
    runs proposed resolve); "the 8 runs per cell made would resolve a difference of 6 % or
    more" when they suffice. ``per``: what gets the runs ("cell"; "side" in a comparison)."""
    x = f"{p.difference * 100:.0f} %"
    if p.more_runs == 0:
        return f"the {p.runs} runs per {per} made would resolve a difference of {x} or more"
    more = "run" if p.more_runs == 1 else "runs"
    return f"about {p.more_runs} more {more} per {per} would resolve a difference of {x}"


@dataclass(frozen=True)
class Answer:
    """What an experiment's findings say, in the order a reader acts on: each significant
    difference, the better cell first (``significant``, the largest first), then the pairs that
    differ in nothing significant (``quiet``) as one line with a power estimate."""

    significant: tuple[Ratio, ...]
    quiet: tuple[Ratio, ...]
    power: Power | None
    comparisons: int  # the tests made (every family's), which the adjustment spans
    untested: tuple[Ratio, ...] = ()  # pairs with one run on a side: no test, no verdict

    @property
    def quiet_sentence(self) -> str:
        """ "12 pairs differ in nothing significant; about 6 more runs per cell would resolve
        a difference of 10 %"; pairs with one run on a side are counted apart ("2 pairs have
        one run on a side: no test"); "" when every pair differs."""
        parts = []
        if self.quiet:
            n = len(self.quiet)
            head = f"{n} pairs differ" if n > 1 else "1 pair differs"
            head += " in nothing significant"
            early = sum(1 for r in self.quiet if r.before_adjustment_only)
            if early:
                head += f" ({early} only before {self.quiet[0].adjustment} adjustment)"
            parts.append(head if self.power is None else f"{head}; {power_words(self.power)}")
        if self.untested:
            n = len(self.untested)
            parts.append(f"{n} pairs have" if n > 1 else "1 pair has")
            parts[-1] += " one run on a side: no test (add repetitions)"
        return "; ".join(parts)


def compared(f: Findings) -> tuple[Ratio, ...]:
    """Every pair of cells the findings compared, once each, as first worded: the pairs along
    each matrix key (the experiment's questions, each key's family adjusted on its own), then
    the best cell against the others and every cell against the baseline (all pairs of cells
    one family)."""
    seen: set[frozenset[str]] = set()
    out = []
    for r in (*(p for d in f.dimensions for p in d.pairs), *f.best_vs, *f.vs_baseline):
        key = frozenset((r.a, r.b))
        if key not in seen:
            seen.add(key)
            out.append(r)
    return tuple(out)


def flipped(r: Ratio) -> Ratio:
    """``r`` worded from its other side: b against a (the same test, the same p-values)."""
    c = r.comparison
    return replace(
        r,
        a=r.b,
        b=r.a,
        comparison=replace(
            c,
            ratio=1.0 / c.ratio,
            ci_low=None if c.ci_high is None else 1.0 / c.ci_high,
            ci_high=None if c.ci_low is None else 1.0 / c.ci_low,
            n_a=c.n_b,
            n_b=c.n_a,
        ),
        better=1.0 / r.better,
        better_low=None if r.better_high is None else 1.0 / r.better_high,
        better_high=None if r.better_low is None else 1.0 / r.better_low,
    )


def winner_first(r: Ratio) -> Ratio:
    """``r`` worded with its better cell first ("A 1.8x faster than B", never "B 1.8x slower")."""
    return r if r.better >= 1.0 else flipped(r)


def answer(f: Findings, target: float = TARGET_DIFFERENCE) -> Answer:
    """The findings' :class:`Answer`: the significant pairs, winner first and the largest
    difference first; the rest in one line whose power estimate pools the spread of their
    cells (``target``: the difference it is worked out for)."""
    pairs = compared(f)
    significant = sorted((winner_first(r) for r in pairs if r.significant), key=_unit, reverse=True)
    quiet = tuple(r for r in pairs if not r.significant and r.comparison.p_value is not None)
    untested = tuple(r for r in pairs if r.comparison.p_value is None)
    est = None
    if quiet:
        runs = {c.cell.label: c.cell.metric for c in f.cells}
        labels = dict.fromkeys(x for r in quiet for x in (r.a, r.b))
        est = power([runs[x] for x in labels if x in runs], max(r.family for r in quiet), target)
    made = sum(x.comparisons for x in f.families) if f.families else len(pairs)
    return Answer(tuple(significant), quiet, est, made, untested)
