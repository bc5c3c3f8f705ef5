"""The experiment's main charts as the seeds draw them: one matrix key on the x axis, another as
coloured series with a legend, the rest as one chart each; the mean of each cell with its 95%
interval and its value on the bar, then the speed-up of every cell against the baseline.

Which key goes where (:func:`choose`): ``--chart-by X[,S]`` says it; else a layout-like key (one
named ``layout``, else one whose values are not numbers) is on x and a count-like key (numeric
values: connections, files) is the series. The numbers come from :mod:`iolab.analysis`
(:class:`~iolab.analysis.findings.Findings`): nothing is recomputed here.
"""

from __future__ import annotations

import html
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from iolab.analysis.findings import (
    CellStats,
    Findings,
    MatrixValue,
    Ratio,
    in_words,
    ratio_words,
)
from iolab.errors import BadInput
from iolab.report.charts import GroupedBar, grouped_bar_chart


@dataclass(frozen=True)
class ChartLayout:
    """Where each matrix key goes: ``x`` on the axis (None: the cells themselves), ``series``
    coloured with a legend (None: one colour), ``facets`` one chart per combination."""

    x: str | None
    series: str | None
    facets: tuple[str, ...]


def _show(value: MatrixValue) -> str:
    return "+".join(map(str, value)) if isinstance(value, list) else str(value)


def _numeric(key: str, cells: Sequence[CellStats]) -> bool:
    values = [c.cell.values.get(key) for c in cells]
    return all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)


def choose(
    keys: Sequence[str], cells: Sequence[CellStats], chart_by: Sequence[str] = ()
) -> ChartLayout:
    """The layout of the charts for these matrix keys (see the module's docstring). Keys with one
    value only are left out: they say nothing."""
    varied = [k for k in keys if len({_show(c.cell.values.get(k)) for c in cells}) > 1]
    for k in chart_by:
        if k not in keys:
            raise BadInput(
                "--chart-by",
                ",".join(chart_by),
                "give one or two matrix keys separated by a comma: " + ", ".join(keys)
                if keys
                else "this experiment has no matrix keys to chart by",
            )
    if len(chart_by) > 2 or len(set(chart_by)) != len(chart_by):
        raise BadInput("--chart-by", ",".join(chart_by), "give one or two different matrix keys")
    rest = [k for k in varied if k not in chart_by]
    if chart_by:
        x = chart_by[0]
    elif not varied:
        return ChartLayout(None, None, ())
    else:
        x = next(
            (k for k in varied if k == "layout"),
            next((k for k in varied if not _numeric(k, cells)), varied[0]),
        )
        rest.remove(x)
    if len(chart_by) == 2:
        series: str | None = chart_by[1]
    else:
        series = next((k for k in rest if _numeric(k, cells)), rest[0] if rest else None)
    return ChartLayout(x, series, tuple(k for k in rest if k != series))


def _facets(layout: ChartLayout, cells: Sequence[CellStats]) -> list[tuple[str, list[CellStats]]]:
    """The cells of each chart: one per combination of the facet keys' values, in cell order."""
    groups: dict[str, list[CellStats]] = {}
    for c in cells:
        name = " ".join(f"{k}={_show(c.cell.values.get(k))}" for k in layout.facets)
        groups.setdefault(name, []).append(c)
    return list(groups.items())


def _place(layout: ChartLayout, c: CellStats, fallback: str) -> tuple[str, str]:
    """A cell's category on x and its series."""
    v = c.cell.values
    x = _show(v.get(layout.x)) if layout.x is not None else c.cell.label
    s = _show(v.get(layout.series)) if layout.series is not None else fallback
    return x, s


NOT_SIGNIFICANT = "n.s."  # a speed-up bar whose whiskers hold 1
BEFORE_ONLY = "n.s.†"  # whiskers that exclude 1, but not significant after Holm's adjustment


def significance_mark(r: Ratio) -> str:
    """The line under a speed-up bar's ratio: nothing when significant, else which of the two
    ways it is not (the caption says what each mark means)."""
    if r.significant:
        return ""
    return "\n" + (BEFORE_ONLY if r.before_adjustment_only else NOT_SIGNIFICANT)


def _caption(text: str) -> str:
    return f"<p class='caption'>{html.escape(text)}</p>"


def charts(f: Findings, unit: str, keys: Sequence[str], chart_by: Sequence[str] = ()) -> str:
    """The mean chart and the speed-up chart (SVG with captions) for each facet."""
    measured = [c for c in f.cells if c.summary is not None]
    if not measured:
        return ""
    layout = choose(keys, measured, chart_by)
    ratios = {r.a: r for r in f.vs_baseline}
    up, down, what = ratio_words(f.metric)
    x_label = layout.x or "cell"
    legend = layout.series or ""
    out = []
    for facet, cells in _facets(layout, measured):
        where = f" · {facet}" if facet else ""
        means = []
        ups = []
        for c in cells:
            assert c.summary is not None
            x, s = _place(layout, c, f.metric)
            s_ = c.summary
            means.append(GroupedBar(x, s, s_.mean, s_.ci_low, s_.ci_high, f"{s_.mean:.3g}"))
            if c.cell.label == f.baseline:
                ups.append(GroupedBar(x, s, 1.0, text="base"))
            elif (r := ratios.get(c.cell.label)) is not None:
                # "2.27x slower" and under it whether it is significant (see the caption)
                label = in_words(r.better, f.metric, named=False) + significance_mark(r)
                ups.append(GroupedBar(x, s, r.better, r.better_low, r.better_high, label))
        by = f" by {layout.x}" if layout.x else " per cell"
        by += f" and {layout.series}" if layout.series else ""
        out.append(
            grouped_bar_chart(
                means,
                title=f"{f.metric}{by}{where}",
                y_label=f"{f.metric} ({unit})" if unit else f.metric,
                x_label=x_label,
                legend_title=legend,
            )
        )
        n = sorted({c.summary.n for c in cells if c.summary is not None})
        runs = str(n[0]) if len(n) == 1 else f"{n[0]}-{n[-1]}"
        out.append(
            _caption(
                f"One bar: one cell, the mean {f.metric} of its {runs} done run(s) "
                f"({'lower' if f.lower_is_better else 'higher'} is better); whiskers: the 95% "
                "confidence interval of its geometric mean (a t interval of the runs' "
                "logarithms: never below zero); the number: the mean."
            )
        )
        if len(ups) > 1:
            out.append(
                grouped_bar_chart(
                    ups,
                    title=f"speed-up against {f.baseline}{where}",
                    y_label=f"times {up}{what} than the baseline (x)",
                    x_label=x_label,
                    legend_title=legend,
                    reference=1.0,
                )
            )
            out.append(
                _caption(
                    f"One bar: how many times {up}{what} a cell is than the baseline "
                    f"({f.baseline}; above 1 is {up}, below 1 {down}, whatever the metric's "
                    f"direction), written in words on the bar ('2.00x {up}', '1.25x {down}'): "
                    "the ratio of geometric means; whiskers: its 95% confidence interval; "
                    f"'{NOT_SIGNIFICANT}': not significant (the whiskers hold 1); "
                    f"'{BEFORE_ONLY}': whiskers that exclude 1, a difference significant before "
                    "adjustment but not after Holm's over the report's comparisons; no mark: "
                    "significant; the dashed line: as good as the baseline."
                )
            )
    return "".join(out)


def matrix_keys(values: Sequence[Mapping[str, MatrixValue]]) -> list[str]:
    """The matrix keys of the cells, in their order."""
    return list(dict.fromkeys(itertools.chain.from_iterable(values)))
