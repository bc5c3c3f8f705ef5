"""TPC-C's tables: NOPM three ways and TPM, the transactions' counts and latency, the
consistency conditions (``iolab tpcc`` and ``iolab results show``)."""

from __future__ import annotations

import math
from typing import Any

from rich.markup import escape
from rich.table import Table

from iolab.units import format_bytes

TYPES = ("new_order", "payment", "order_status", "delivery", "stock_level")


def tables(s: dict[str, Any]) -> list[Table]:
    """Every table of a run's summary."""
    return [summary_table(s), transactions_table(s), consistency_table(s)]


def summary_table(s: dict[str, Any]) -> Table:
    title = (
        f"tpcc · {s.get('engine')} {s.get('engine_version', '')} · W {s.get('warehouses')} · "
        f"{s.get('connections')} users · {s.get('mode')} mode"
    )
    table = Table(title=title, show_header=False)
    table.add_column("")
    table.add_column("", justify="right")
    rows = [
        ("NOPM (database: sum(d_next_o_id))", f"{s['nopm']:,.0f}"),
        ("NOPM (client: committed New-Orders)", f"{s['nopm_client']:,.0f}"),
        ("NOPM (count of orders)", f"{s['nopm_orders']:,.0f}"),
        ("TPM (database)", f"{s['tpm']:,.0f}"),
        ("TPM (client)", f"{s['tpm_client']:,.0f}"),
        (
            "measured",
            f"{s['measured_seconds']:.1f} s after a {_warmup(s):g} s warm-up",
        ),
        (
            "load",
            f"{format_bytes(s['data_bytes'])} in {s['load_seconds']:.1f} s "
            f"({s['load_mb_per_second']:,.1f} MB/s), keys {s['index_seconds']:.1f} s",
        ),
    ]
    if s.get("on_disk_bytes") is not None:
        rows.append(("on disk", format_bytes(s["on_disk_bytes"])))
    for label, value in rows:
        if label == "TPM (database)" and s.get("tpm_source") != "database":
            continue  # the engine keeps no count of its own (SQLite)
        table.add_row(label, value)
    return table


def _warmup(s: dict[str, Any]) -> float:
    """The warm-up's seconds (runs stored before it was named so: rampup_seconds)."""
    return float(s.get("warmup_seconds", s.get("rampup_seconds", 0.0)))


def _ms(us: float | None) -> str:
    return "-" if us is None or math.isnan(us) else f"{us / 1000:,.2f}"


def transactions_table(s: dict[str, Any]) -> Table:
    table = Table(title="transactions in the measured window (latency in ms)")
    for col in ("type", "count", "rollbacks", "retries", "p50", "p95", "p99", "p99.9", "max"):
        table.add_column(col, justify="left" if col == "type" else "right")
    for kind in TYPES:
        t = s["transactions"][kind]
        table.add_row(
            kind,
            f"{t['count']:,}",
            f"{t['rollbacks']:,}",
            f"{t['retries']:,}",
            *(_ms(t.get(k)) for k in ("p50_us", "p95_us", "p99_us", "p999_us", "max_us")),
        )
    return table


def consistency_table(s: dict[str, Any]) -> Table:
    table = Table(title="consistency (TPC-C clause 3.3.2)")
    table.add_column("condition")
    table.add_column("")
    table.add_column("what")
    for c in s["consistency"]["conditions"]:
        table.add_row(c["name"], "ok" if c["ok"] else "[red]FAILED[/]", escape(c["detail"]))
    return table
