"""``iolab results``: read back what is stored."""

from __future__ import annotations

import json
from typing import Any

import typer
from rich.table import Table

from iolab.analysis.disk import summarize
from iolab.cli.console import stdout as out
from iolab.cli.options import JsonOption, ResultsOption
from iolab.report import disk as disk_report
from iolab.report import populate as populate_report
from iolab.store import RunRecord, open_store

app = typer.Typer(help="List and show stored runs.", no_args_is_help=True)


def _run_json(r: RunRecord) -> dict[str, Any]:
    return {
        "id": r.id,
        "experiment": r.experiment,
        "experiment_id": r.experiment_id,
        "cell": r.cell_id,
        "workload": r.workload,
        "repetition": r.repetition,
        "status": r.status.value,
        "started_at": r.started_at,
        "ended_at": r.ended_at,
        "error": r.error,
        "params": r.params,
        "summary": r.summary,
    }


@app.command("list")
def list_runs(
    results: ResultsOption = None,
    as_json: JsonOption = False,
    limit: int = typer.Option(
        50, "--limit", min=1, help="Show at most this many runs, newest first."
    ),
) -> None:
    """List stored runs, newest first."""
    with open_store(results, create=False) as store:
        runs = store.runs(limit)
    if as_json:
        print(json.dumps([_run_json(r) for r in runs], indent=2))
        return
    table = Table(title=f"runs ({len(runs)} shown)", title_justify="left")
    for col in ("id", "workload", "experiment", "status", "started", "note"):
        table.add_column(col)
    for r in runs:
        note = r.error or ""
        table.add_row(str(r.id), r.workload, r.experiment, r.status.value, r.started_at or "", note)
    out.print(table)


@app.command("show")
def show(
    run_id: int = typer.Argument(..., metavar="RUN", help="Run id from `iolab results list`."),
    results: ResultsOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show one run: its parameters, environment and results."""
    with open_store(results, create=False) as store:
        run = store.run(run_id)
        env = store.environment(run.env_id) if run.env_id else {}
        passes = store.disk_passes(run.id)
    summaries = summarize(passes)
    if as_json:
        doc = _run_json(run) | {"environment": env}
        if passes:
            doc["disk"] = {
                "tests": disk_report.summary_json(summaries),
                "passes": disk_report.passes_json(passes),
            }
        print(json.dumps(doc, indent=2))
        return
    out.print(f"[bold]run {run.id}[/]  {run.workload}  {run.experiment}  status {run.status.value}")
    out.print(f"started {run.started_at}  ended {run.ended_at or '-'}")
    if run.error:
        out.print(f"[red]error:[/] {run.error}")
    _print_environment(env)
    if summaries:
        out.print(disk_report.grid(summaries, "disk profile"))
        out.print(disk_report.details(summaries))
    if run.workload == "populate" and run.summary.get("rows"):
        out.print(populate_report.summary_table(run.summary, "populate"))
        out.print(populate_report.loaders_line(run.summary))


def _print_environment(env: dict[str, Any]) -> None:
    if not env:
        return
    versions = ", ".join(f"{k} {v}" for k, v in env.get("versions", {}).items())
    memory = env.get("memory_bytes", 0) / 2**30
    out.print(
        f"[dim]{env.get('kernel')} · {env.get('cpu_count')} x {env.get('cpu_model')} · "
        f"{memory:.1f} GiB · {versions}[/]"
    )
    for role, st in env.get("storage", {}).items():
        dev = st.get("device") or {}
        what = (
            "memory"
            if st.get("memory_backed")
            else (
                f"{dev.get('name')} ({dev.get('kind')} of {dev.get('disk')}, {dev.get('model')}, "
                f"{'rotational' if dev.get('rotational') else 'non-rotational'}, "
                f"scheduler {dev.get('scheduler')})"
                if dev
                else "no block device"
            )
        )
        bed = st.get("testbed")
        if bed:
            what = f"testbed device {bed['name']} ({bed['limits_text']}), {what}"
        out.print(
            f"[dim]{role}: {st.get('path')} on {st.get('filesystem')} "
            f"({st.get('mount_options')}), {what}, {st.get('fill_percent')}% full[/]"
        )
