"""Terminal output of experiment files: the plan, and the per-cell table after a run."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from rich.table import Table

from iolab.analysis.stats import Summary
from iolab.config.experiment import Cell


def _clock(seconds: float) -> str:
    hours, rest = divmod(round(seconds), 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def plan_table(rows: Sequence[tuple[Cell, int, int, float]], title: str) -> Table:
    """One row per cell: its label, id, runs done already, runs to do, seconds per run."""
    table = Table(title=title, title_justify="left")
    table.add_column("cell")
    table.add_column("id", style="dim")
    table.add_column("done", justify="right")
    table.add_column("to run", justify="right")
    table.add_column("per run", justify="right")
    for cell, done, remaining, seconds in rows:
        table.add_row(cell.label, cell.id[:8], str(done), str(remaining), _clock(seconds))
    return table


PLAIN_ABOVE = 200  # cells: a larger plan is printed as plain columns (a table of 10,000 rows
# takes rich seconds to lay out)


def plan_text(rows: Sequence[tuple[Cell, int, int, float]], title: str) -> str:
    """The plan table's rows as plain fixed-width text: fast for any number of cells."""
    width = max([4, *(len(cell.label) for cell, *_ in rows)])
    lines = [title, f"{'cell':<{width}}  {'id':<8}  {'done':>5}  {'to run':>6}  {'per run':>8}"]
    lines += [
        f"{cell.label:<{width}}  {cell.id[:8]:<8}  {done:>5}  {remaining:>6}  {_clock(seconds):>8}"
        for cell, done, remaining, seconds in rows
    ]
    return "\n".join(lines)


def cells_table(
    rows: Sequence[tuple[Cell, Summary | None, Counter[str]]],
    metric_label: str,
    title: str,
) -> Table:
    """One row per cell: runs by status (an aborted run, interrupted, is not a failed one: its
    column is there when a cell has one) and the metric's mean with its 95% interval and CV."""
    aborted = any(statuses.get("aborted", 0) for _, _, statuses in rows)
    table = Table(title=title, title_justify="left")
    table.add_column("cell")
    table.add_column("done", justify="right")
    table.add_column("failed", justify="right")
    if aborted:
        table.add_column("aborted", justify="right")
    table.add_column(f"mean {metric_label}", justify="right")
    table.add_column("95% CI", justify="right")
    table.add_column("CV", justify="right")
    table.add_column("note")
    for cell, summary, statuses in rows:
        notes = []
        if summary is None:
            mean = ci = cv = "-"
        else:
            mean = f"{summary.mean:,.3g}"
            ci = (
                f"{summary.ci_low:,.3g} - {summary.ci_high:,.3g}"
                if summary.ci_low is not None and summary.ci_high is not None
                else "-"
            )
            cv = f"{summary.cv:.1%}" if summary.cv is not None else "-"
            if summary.too_wide:
                notes.append("[yellow]spread too wide to trust[/]")
            if summary.outliers:
                notes.append(f"{len(summary.outliers)} outlier(s)")
        failed = statuses.get("failed", 0)
        stopped = statuses.get("aborted", 0)
        table.add_row(
            cell.label,
            str(statuses.get("done", 0)),
            f"[red]{failed}[/]" if failed else "0",
            *([f"[yellow]{stopped}[/]" if stopped else "0"] if aborted else []),
            mean,
            ci,
            cv,
            ", ".join(notes),
        )
    return table
