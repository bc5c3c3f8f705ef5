"""A TPC-H run as a summary table and a per-query table."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from iolab.results import QueryResult
from iolab.units import format_bytes


def summary_table(s: dict[str, Any], title: str) -> Table:
    table = Table(title=title, title_justify="left", show_header=False)
    table.add_column("what", style="bold")
    table.add_column("value", justify="right")
    table.add_column("note", style="dim")
    table.add_row(
        "data",
        format_bytes(s.get("data_bytes", 0)),
        f"CSV from {s.get('generator', 'tpchgen-cli')}",
    )
    loaders = s.get("loaders", 1)
    table.add_row(
        "load",
        f"{s.get('load_seconds', 0):.2f} s",
        f"{s.get('load_mb_per_second', 0):,.1f} MB/s of CSV, {loaders} "
        f"loader{'s' if loaders != 1 else ''}",
    )
    table.add_row("keys, indexes, statistics", f"{s.get('index_seconds', 0):.2f} s", "")
    ratio = s.get("compression_ratio")
    table.add_row(
        "on disk",
        format_bytes(s.get("on_disk_bytes", 0)),
        f"CSV / on disk = {ratio:.2f}" if ratio else "",
    )
    for place in s.get("placement", {}).get("data", []):
        table.add_row("  data file", format_bytes(place["bytes"]), place["path"])
    if "total_seconds" in s:
        count = len(s.get("queries", []))
        table.add_row(
            "power run",
            f"{s['total_seconds']:.2f} s",
            f"{s.get('queries_ok', 0)} of {count} queries ok, {s.get('mode', '')}",
        )
        geomean = s.get("geomean_seconds")
        table.add_row("geometric mean", f"{geomean:.3f} s" if geomean else "-", "per query")
    reference = s.get("reference")
    table.add_row("answers checked", "yes" if reference else "no", reference or "no reference")
    return table


def queries_table(results: list[QueryResult], title: str = "queries") -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("query", justify="right")
    table.add_column("seconds", justify="right")
    table.add_column("rows", justify="right")
    table.add_column("answer")
    table.add_column("note", style="dim")
    for r in results:
        answer = {True: "[green]ok[/]", False: "[red]wrong[/]", None: "unchecked"}[r.answer_ok]
        if r.seconds is None:
            answer = "[red]-[/]"
        table.add_row(
            f"Q{r.query}",
            f"{r.seconds:.3f}" if r.seconds is not None else "-",
            f"{r.rows:,}" if r.rows is not None else "-",
            answer,
            r.error or "",
        )
    return table
