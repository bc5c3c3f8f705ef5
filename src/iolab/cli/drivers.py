"""What ``iolab pgbench`` and ``iolab sysbench`` share: the layout flags, the run as a one-cell
experiment, and the table of the tool's numbers and iolab's percentiles."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from iolab.cli.console import stdout as out

NoInitOption = Annotated[
    bool,
    typer.Option(
        "--no-init",
        help="Run no initialisation (pgbench -i, sysbench prepare): the database of --dsn "
        "already holds what the run needs (refused without --dsn: a provisioned engine is "
        "empty).",
    ),
]


def layout_params(
    data_dir: list[Path] | None,
    files: int,
    wal_dir: Path | None,
    temp_dir: Path | None,
    setting: list[str] | None,
    scratch: Path,
) -> dict[str, Any]:
    from iolab.cli.options import layout_dirs, settings
    from iolab.workloads.interface import command_layout

    dirs, wal, temp = layout_dirs(data_dir, wal_dir, temp_dir)
    layout: dict[str, Any] = command_layout(dirs or [scratch], files, wal, temp, settings(setting))
    return layout


def run(
    kind: str,
    name: str,
    params: dict[str, Any],
    results: Path | None,
    as_json: bool,
    stored: dict[str, Any] | None = None,
) -> None:
    """One run of ``kind`` (pgbench, sysbench) as a one-cell experiment, then its table;
    ``stored``: the parameters as recorded, where they differ (a DSN without its password)."""
    from iolab.cli.progress import ProgressView
    from iolab.report import probes as probes_report
    from iolab.runner.single import CommandRun, execute
    from iolab.store import open_store
    from iolab.workloads.registry import WORKLOADS

    view = ProgressView()
    body, roles, versions = WORKLOADS[kind].prepare(params, Path, view)  # as a cell of a file
    spec = CommandRun(name, kind, stored if stored is not None else params, roles, versions)
    with open_store(results) as store, view:
        run_id, outcome = execute(store, spec, body, view)
    s = outcome.summary
    if as_json:
        doc = {"run": run_id, "status": outcome.status.value, **s, "warnings": view.warnings}
        if outcome.probes is not None:
            doc["probes"] = probes_report.probes_json(outcome.probes)
        print(json.dumps(doc, indent=2, default=str))
        return
    out.print(summary_table(kind, s))
    out.print(f"[dim]stored as run {run_id} in {escape(str(store.path))}[/]")
    if outcome.probes is not None:
        out.print(probes_report.recorded_line(outcome.probes, run_id))


def _ms(us: float | int | None) -> str:
    return "" if us is None else f"{float(us) / 1000:,.3f}"


def summary_table(kind: str, s: dict[str, Any]) -> Table:
    """The tool's numbers, then iolab's percentiles per script (pgbench) or of the run."""
    engine = f"{s.get('engine', '')} {s.get('engine_version', '')}"
    title = f"{kind} · {engine} · {s.get('tool_version', '')}"
    table = Table(title=title, title_justify="left")
    failures = "errors" if kind == "sysbench" else "failed"  # sysbench's are ignored errors
    for column in ("", "tps", "transactions", failures, "avg ms", "p50 ms", "p99 ms", "max ms"):
        table.add_column(column, justify="left" if not column else "right")
    latency = s.get("latency") or {}
    overall = latency.get("transaction", {})
    failed = s.get("failed", s.get("errors", 0))
    table.add_row(
        "run",
        f"{s['tps']:,.2f}",
        f"{s['transactions']:,}",
        f"{failed:,}",
        f"{s['latency_avg_ms']:,.3f}",
        _ms(overall.get("p50_us")),
        _ms(overall.get("p99_us")),
        _ms(overall.get("max_us")),
    )
    for script in s.get("scripts", []) if len(s.get("scripts", [])) > 1 else []:
        mine = latency.get(f"script{script['script'] + 1}", {})
        table.add_row(
            escape(str(script["name"])),
            f"{script.get('tps', 0):,.2f}",
            f"{script.get('transactions', 0):,}",
            f"{script.get('failed', 0):,}",
            f"{script.get('latency_avg_ms', 0):,.3f}",
            _ms(mine.get("p50_us")),
            _ms(mine.get("p99_us")),
            _ms(mine.get("max_us")),
        )
    source = s.get("latency_source")
    table.caption = (
        "tps, transactions, failed and avg are the tool's; p50, p99 and max are iolab's, "
        + (f"from {source}" if source else "from every transaction of pgbench's -l log")
    )
    return table
