"""A populate run as a summary table and a JSON document."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from iolab.units import format_bytes


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
    table.add_row("rows/s", f"{s.get('rows_per_second', 0):,.0f}", "")
    steady = s.get("steady_state")
    if isinstance(steady, dict):
        rate = s.get("steady_rows_per_second")
        criterion = f"{steady.get('window')} samples within ±{steady.get('tolerance_pct'):g}%"
        if rate is not None:
            table.add_row(
                "steady rows/s",
                f"{rate:,.0f}",
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


def loaders_line(s: dict[str, Any]) -> str:
    each = s.get("loader_seconds", [])
    if not each:
        return ""
    return f"loaders: {len(each)}, fastest {min(each):.2f} s, slowest {max(each):.2f} s"
