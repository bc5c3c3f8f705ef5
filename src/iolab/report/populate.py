"""A populate run as a summary table and a JSON document."""

from __future__ import annotations

import math
from typing import Any

from rich.table import Table

from iolab.latency.histogram import Histogram
from iolab.units import format_bytes, format_micros, format_rate

# the percentiles every command shows (docs/vocabulary.md); a run stored before p95 was
# recorded shows "-" there
LATENCY_COLUMNS = (
    ("mean", "mean_us"),
    ("p50", "p50_us"),
    ("p95", "p95_us"),
    ("p99", "p99_us"),
    ("p99.9", "p999_us"),
    ("max", "max_us"),
)
KIND_NOTES = {
    "transaction": "a statement that commits itself",
    "statement": "inside an explicit transaction",
    "commit": "the COMMIT round trip",
}


def summary_table(s: dict[str, Any], title: str) -> Table:
    table = Table(title=title, title_justify="left", show_header=False)
    table.add_column("what", style="bold")
    table.add_column("value", justify="right")
    table.add_column("note", style="dim")
    rows = s.get("rows", 0)
    table.add_row("rows", f"{rows:,}", f"{s.get('connections')} connections")
    first = s.get("first_finished_seconds", 0)
    table.add_row(
        "elapsed (last loader)",
        f"{s.get('elapsed_seconds', 0):.2f} s",
        f"first loader finished at {first:.2f} s",
    )
    warm = s.get("warmup")
    table.add_row(
        "rows/s",
        format_rate(s.get("rows_per_second", 0)),
        f"after a warm-up of {warm['seconds']:.1f} s and {warm['rows']:,} rows "
        f"({warm['rows_per_second_with_warmup']:,.0f} with it)"
        if warm
        else "",
    )
    rate = s.get("rate")
    if rate:
        tolerance = rate.get("tolerance")  # runs before it was stated: held to the rows due
        within = f" within {tolerance:.0%}" if tolerance is not None else ""
        outside = f" (outside ±{tolerance:.0%})" if tolerance is not None else ""
        held = f"held{within}" if rate["held"] else f"[yellow]not held{outside}[/]"
        due = f" ({rate['due_rows']:,} rows due)" if "due_rows" in rate else ""
        table.add_row(
            "offered rate",
            format_rate(rate["target"]),
            f"rows/s over all loaders: {held}, achieved {format_rate(rate['achieved'])}{due}",
        )
    steady = s.get("steady_state")
    if isinstance(steady, dict):
        steady_rate = s.get("steady_rows_per_second")
        criterion = f"{steady.get('window')} samples within ±{steady.get('tolerance_pct'):g}%"
        if steady_rate is not None:
            table.add_row(
                "steady rows/s",
                f"{steady_rate:,.0f}",
                f"{steady.get('start_s'):.0f}-{steady.get('end_s'):.0f} s ({criterion})",
            )
        else:
            table.add_row("steady rows/s", "none", str(steady.get("reason") or criterion))
    if s.get("checkpoint_every_seconds") is not None:
        table.add_row(
            "requested checkpoints",
            f"{s.get('requested_checkpoints', 0)}",
            f"every {s['checkpoint_every_seconds']:g} s",
        )
    if s.get("presize_wal_bytes") is not None:
        before = s.get("log_bytes_before_load")
        table.add_row(
            "log before the load",
            format_bytes(before) if before is not None else "-",
            f"pre-sized to {format_bytes(s['presize_wal_bytes'])}",
        )
    table.add_row(
        "payload MB/s",
        f"{s.get('payload_mb_per_second', 0):,.2f}",
        f"{s.get('payload_bytes')} bytes per row",
    )
    fill = "" if s.get("fill_ok", True) else "[yellow]not as intended[/]"
    table.add_row(
        "pages per row",
        f"{s.get('pages_per_row', 0):.3f}",
        f"target {s.get('pages_per_row_target', 0):.2f} {fill}",
    )
    table.add_row(
        "table size",
        format_bytes(s.get("table_bytes", 0)),
        f"{format_bytes(s.get('total_bytes', 0))} with indexes",
    )
    wal = s.get("wal_bytes")
    if wal is not None:
        table.add_row(
            "WAL / log written",
            format_bytes(wal),
            f"{s.get('wal_bytes_per_row', 0):,.0f} bytes per row",
        )
    for name, dev in s.get("devices", {}).items():
        shown = f"{dev['testbed']} = {name}" if dev.get("testbed") else name
        table.add_row(
            f"device {shown} ({'+'.join(dev['roles'])})",
            f"{dev['write_bytes_per_row']:,.0f} B/row",
            f"{format_bytes(dev['write_bytes'])} written, {format_bytes(dev['read_bytes'])} read",
        )
    return table


def latency_table(s: dict[str, Any]) -> Table | str:
    """Each operation kind's latency over the measured part, or why there is none."""
    found = s.get("latency")
    if not found:
        if "latency" in s:  # recorded as None: the loop ran inside the server
            return "[dim]latency: server mode runs its operations inside the server; none timed[/]"
        return ""
    order = [k for k in KIND_NOTES if k in found] + [k for k in found if k not in KIND_NOTES]
    caption = "; ".join(f"{k}: {KIND_NOTES[k]}" for k in order if k in KIND_NOTES)
    table = Table(
        title="latency per operation", title_justify="left", caption=caption, caption_justify="left"
    )
    table.add_column("operation")
    table.add_column("count", justify="right")
    for name, _ in LATENCY_COLUMNS:
        table.add_column(name, justify="right")
    for kind in order:
        st = found[kind]
        table.add_row(
            kind,
            f"{st['count']:,}",
            *(format_micros(float(st.get(key, math.nan))) for _, key in LATENCY_COLUMNS),
        )
    return table


def latency_sides(kind: str, a_label: str, a: Histogram, b_label: str, b: Histogram) -> Table:
    """One operation kind's latency on two sides of a comparison, each side's runs merged, and
    A's against B's in words ("1.69x lower": A's is lower, better)."""
    table = Table(
        title=f"{kind} latency, each side's runs merged (warm-up left out)", title_justify="left"
    )
    table.add_column("side")
    table.add_column("count", justify="right")
    for name, _ in LATENCY_COLUMNS:
        table.add_column(name, justify="right")
    rows = [(a_label, a.stats()), (b_label, b.stats())]
    for label, st in rows:
        values = (format_micros(float(st[key])) for _, key in LATENCY_COLUMNS)
        table.add_row(label, f"{st['count']:,}", *values)
    table.add_row(
        "A against B", "", *(_against(rows[0][1][k], rows[1][1][k], k) for _, k in LATENCY_COLUMNS)
    )
    return table


def _against(a: float, b: float, key: str) -> str:
    """A's latency against B's in words, one direction: "1.69x lower", "1.20x higher"."""
    from iolab.analysis.findings import in_words  # the registry's every workload: on use

    if not a or not b:
        return "-"
    return in_words(float(b) / float(a), key, named=False)


def loaders_line(s: dict[str, Any]) -> str:
    each = s.get("loader_seconds", [])
    if not each:
        return ""
    return f"loaders: {len(each)}, fastest {min(each):.2f} s, slowest {max(each):.2f} s"
