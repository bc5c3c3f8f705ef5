"""A TPC-H run as a summary table and a per-query table."""

from __future__ import annotations

from dataclasses import dataclass
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


@dataclass(frozen=True)
class QueryIO:
    """What the layout's devices did during one query, summed over the devices of a role."""

    data_read_mbps: float | None  # bytes read from the data devices / the query's seconds
    written_bytes: int  # written to any device of the layout (temp spills, the WAL, ...)
    temp_written_bytes: int | None  # to the devices holding temp, when temp has its own role
    read_latency_ms: float | None  # mean over every read of the layout's devices

    @staticmethod
    def of(r: QueryResult) -> QueryIO | None:
        if r.io is None:
            return None
        data = [d for d in r.io.values() if "data" in d.get("roles", ())]
        read = sum(int(d.get("read_bytes", 0)) for d in data)
        reads = sum(int(d.get("reads", 0)) for d in r.io.values())
        read_ms = sum(int(d.get("read_ms", 0)) for d in r.io.values())
        temp = [d for d in r.io.values() if "temp" in d.get("roles", ())]
        return QueryIO(
            data_read_mbps=read / r.seconds / 1e6 if r.seconds else None,
            written_bytes=sum(int(d.get("write_bytes", 0)) for d in r.io.values()),
            temp_written_bytes=sum(int(d.get("write_bytes", 0)) for d in temp) if temp else None,
            read_latency_ms=read_ms / reads if reads else None,
        )


def queries_table(results: list[QueryResult], title: str = "queries") -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("query", justify="right")
    table.add_column("seconds", justify="right")
    table.add_column("rows", justify="right")
    table.add_column("answer")
    table.add_column("data read MB/s", justify="right")
    table.add_column("written", justify="right")
    table.add_column("temp written", justify="right")
    table.add_column("read ms", justify="right")
    table.add_column("note", style="dim")
    for r in results:
        answer = {True: "[green]ok[/]", False: "[red]wrong[/]", None: "unchecked"}[r.answer_ok]
        if r.seconds is None:
            answer = "[red]-[/]"
        io = QueryIO.of(r)
        table.add_row(
            f"Q{r.query}",
            f"{r.seconds:.3f}" if r.seconds is not None else "-",
            f"{r.rows:,}" if r.rows is not None else "-",
            answer,
            "-" if io is None or io.data_read_mbps is None else f"{io.data_read_mbps:,.1f}",
            "-" if io is None else format_bytes(io.written_bytes),
            "-"
            if io is None or io.temp_written_bytes is None
            else format_bytes(io.temp_written_bytes),
            "-" if io is None or io.read_latency_ms is None else f"{io.read_latency_ms:.2f}",
            r.error or "",
        )
    return table
