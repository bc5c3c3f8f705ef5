"""Disk results as a CrystalDiskMark-like grid, a detail table, and a JSON document."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from rich.table import Table

from iolab.analysis.disk import SPREAD_LIMIT, DiskTestSummary
from iolab.results import DiskPass


def direction_of(test: str) -> str:
    """``read`` of ``SEQ1M Q8T1 read``."""
    return test.rsplit(" ", 1)[1]


def group_of(test: str) -> str:
    """``SEQ1M Q8T1`` of ``SEQ1M Q8T1 read``."""
    return test.rsplit(" ", 1)[0]


def by_group(
    summaries: Sequence[DiskTestSummary],
) -> tuple[list[str], dict[str, dict[str, DiskTestSummary]]]:
    """CrystalDiskMark's layout: the directions in order of appearance (the columns) and, per
    test group (a row), its test of each direction."""
    directions: list[str] = []
    rows: dict[str, dict[str, DiskTestSummary]] = {}
    for s in summaries:
        d = direction_of(s.test)
        if d not in directions:
            directions.append(d)
        rows.setdefault(group_of(s.test), {})[d] = s
    return directions, rows


def grid(summaries: list[DiskTestSummary], title: str) -> Table:
    """Rows of test groups, a column per direction, best MB/s with the median beneath."""
    directions, rows = by_group(summaries)
    table = Table(title=title, title_justify="left", show_lines=True)
    table.add_column("test", style="bold")
    for d in directions:
        unit = "commits/s" if d == "fdatasync" else "MB/s"
        table.add_column(f"{d} {unit}\n(best / median)", justify="right")
    for group, cells in rows.items():
        values = []
        for d in directions:
            cell = cells.get(d)
            if cell is None:
                values.append("")
            elif cell.median.sync is not None:
                values.append(f"[bold]{cell.best.iops:,.0f}[/]\n{cell.median.iops:,.0f}")
            else:
                values.append(f"[bold cyan]{cell.best.mbps:,.2f}[/]\n{cell.median.mbps:,.2f}")
        table.add_row(group, *values)
    return table


def spread_text(s: DiskTestSummary) -> str:
    """How much a test's passes disagree (``12%``); one pass has nothing to disagree with."""
    return "1 run: no spread" if s.passes == 1 else f"{s.spread:.0%}"


def _num(x: float) -> str:
    """Three significant figures for small numbers, thousands separators for large ones."""
    if x >= 100:
        return f"{x:,.0f}"
    if x >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def details(summaries: list[DiskTestSummary]) -> Table:
    """Median IOPS and latency per test; for commit tests the fdatasync latency."""
    table = Table(
        title="medians over the measured passes; latency in µs (commit tests: fdatasync)",
        title_justify="left",
    )
    table.add_column("test", no_wrap=True)
    for name in ("MB/s", "IOPS", "mean", "p50", "p99", "p99.9", "spread"):
        table.add_column(name, justify="right", no_wrap=True)
    for s in summaries:
        m = s.median
        lat = m.sync if m.sync is not None else m.lat
        spread = spread_text(s)
        if s.passes > 1 and s.spread > SPREAD_LIMIT:
            spread = f"[yellow]{spread}[/]"
        table.add_row(
            s.test,
            _num(m.mbps),
            _num(m.iops),
            _num(lat.mean),
            _num(lat.p50),
            _num(lat.p99),
            _num(lat.p999),
            spread,
        )
    return table


def summary_json(summaries: list[DiskTestSummary]) -> list[dict[str, Any]]:
    out = []
    for s in summaries:
        doc = asdict(s)
        if s.commits_per_second is not None:
            doc["commits_per_second"] = s.commits_per_second
        out.append(doc)
    return out


def passes_json(passes: list[DiskPass]) -> list[dict[str, Any]]:
    return [asdict(p) | {"discarded": p.discarded} for p in passes]
