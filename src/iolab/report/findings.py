"""Terminal rendering of an experiment's findings: the answer first, then the per-cell table."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from iolab.analysis import diagnosis as dx
from iolab.analysis.efficiency import drift_sentence, efficiency_sentence
from iolab.analysis.findings import Findings, comparisons_sentence, gain_sentence
from iolab.analysis.queries import fastest
from iolab.report.value import ExperimentReport


def report_text(report: ExperimentReport) -> Group:
    """``iolab report`` in the terminal: the title (experiment, metric, direction), then the
    findings (each significant difference with where the limit moved), the tables and each
    cell's verdict."""
    from iolab.report import why

    found = findings_text(
        report.findings, f"{report.name} · {report.metric} ({report.direction})", report.why
    )
    if report.why is None or not report.why.cells:
        return found
    return Group(*found.renderables, *why.text(report.why))


def answer_text(f: Findings, verdicts: dx.Why | None = None) -> list[Text]:
    """The answer alone (``iolab report``'s first lines, ``iolab run``'s last): the best cell,
    each significant difference with where the limit moved (from ``verdicts``), and one line
    for the pairs that differ in nothing significant, with its power estimate."""
    from iolab.report.why import finding_lines, line_markup

    parts = []
    if f.best is not None and f.best.summary is not None:
        s = f.best.summary
        ci = (
            f" (95% CI {s.ci_low:,.4g} - {s.ci_high:,.4g})"
            if s.ci_low is not None and s.ci_high is not None
            else ""
        )
        parts.append(Text(f"best: {f.best.cell.label}: {f.metric} {s.mean:,.4g}{ci}, n = {s.n}"))
    for line in finding_lines(f, verdicts):
        style = "" if line.ratio is not None else "dim"
        parts.append(Text.from_markup("  " + line_markup(line), style=style))
    return parts


def findings_text(f: Findings, title: str, verdicts: dx.Why | None = None) -> Group:
    """The best cell; each significant difference, the largest first, with where the limit
    moved between its cells (from ``verdicts``, the cells' stored verdicts); one line for every
    pair that differs in nothing significant, with how many more runs would resolve a
    difference; each matrix key's gain; efficiency, drift, the comparisons made; the warnings
    and the cells."""
    parts: list[Text | Table] = [Text(title, style="bold"), *answer_text(f, verdicts)]
    for d in f.dimensions:
        if len(d.pairs) > 1:  # one pair's gain is its line above
            parts.append(Text("  " + gain_sentence(d)))
    for e in f.best_efficiency():
        parts.append(Text("  " + efficiency_sentence(e)))
    if f.drift is not None and not f.drift.trend.significant:
        parts.append(Text("  " + drift_sentence(f.drift, f.metric)))  # significant: a warning
    if f.families:
        parts.append(Text("  " + comparisons_sentence(f), style="dim"))
    for w in f.warnings:
        parts.append(Text.from_markup(f"[yellow]warning:[/] {w}"))
    parts.append(cells_table(f))
    if f.queries:
        parts.append(queries_table(f))
    return Group(*parts)


def queries_table(f: Findings) -> Table:
    """Median seconds of each query per cell; the fastest cell of each query in green."""
    table = Table(title="median seconds per query", title_justify="left")
    table.add_column("query", justify="right")
    for q in f.queries:
        table.add_column(q.cell, justify="right")
    numbers = sorted({n for q in f.queries for n in q.seconds})
    for n in numbers:
        best = fastest(f.queries, n)
        cells = []
        for q in f.queries:
            v = q.seconds.get(n)
            text = "-" if v is None else f"{v:.3f}"
            cells.append(f"[green]{text}[/]" if q.cell == best and len(f.queries) > 1 else text)
        table.add_row(f"Q{n}", *cells)
    return table


def cells_table(f: Findings) -> Table:
    table = Table(title_justify="left")
    for name, justify in (
        ("cell", "left"),
        ("n", "right"),
        ("failed", "right"),
        ("mean", "right"),
        ("median", "right"),
        ("95% CI", "right"),
        ("CV", "right"),
        ("min", "right"),
        ("max", "right"),
        ("note", "left"),
    ):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for c in f.cells:
        s = c.summary
        failed = f"[red]{c.cell.failed}[/]" if c.cell.failed else "0"
        if s is None:
            table.add_row(c.cell.label, "0", failed, *["-"] * 6, "no finished run has this metric")
            continue
        ci = (
            f"{s.ci_low:,.4g} - {s.ci_high:,.4g}"
            if s.ci_low is not None and s.ci_high is not None
            else "-"
        )
        notes = []
        if f.best is c:
            notes.append("[green]best[/]")
        if s.too_wide:
            notes.append("[yellow]too wide[/]")
        if s.outliers:
            notes.append(f"{len(s.outliers)} outlier(s)")
        table.add_row(
            c.cell.label,
            str(s.n),
            failed,
            f"{s.mean:,.4g}",
            f"{s.median:,.4g}",
            ci,
            f"{s.cv:.1%}" if s.cv is not None else "-",
            f"{s.min:,.4g}",
            f"{s.max:,.4g}",
            ", ".join(notes),
        )
    return table
