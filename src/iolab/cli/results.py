"""``iolab results``: read back what is stored."""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from iolab.cli.console import stdout as out
from iolab.cli.options import JsonOption, ReadResultsOption
from iolab.cli.output import check_id
from iolab.errors import BadInput, IolabError

if TYPE_CHECKING:
    from iolab.store import RunRecord

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
    results: ReadResultsOption = None,
    as_json: JsonOption = False,
    limit: int = typer.Option(
        50, "--limit", help="Show at most this many runs (1 or more), newest first."
    ),
) -> None:
    """List stored runs, newest first: each run's workload, engine, layout (data directories and
    files, a WAL or temp directory of its own, the testbed devices) and headline number with its
    unit (rows/s, NOPM, a disk test's MB/s, TPC-H's seconds, tps); a run that did not finish
    shows its status and why instead. --json adds engine, layout and headline (metric, value,
    unit, text; null unless done) to each run's record (docs/report.md)."""
    from iolab.report.glance import glances, runs_table
    from iolab.store import open_store

    if limit < 1:
        raise BadInput("--limit", str(limit), "give 1 or more")
    with open_store(results, create=False) as store:
        runs = glances(store, limit)
    if as_json:
        print(json.dumps([_run_json(g.run) | g.as_json() for g in runs], indent=2))
        return
    out.print(runs_table(runs))


@app.command("show")
def show(
    run_id: int = typer.Argument(..., metavar="RUN", help="Run id from `iolab results list`."),
    results: ReadResultsOption = None,
    as_json: JsonOption = False,
    with_disk: Annotated[
        list[int] | None,
        typer.Option(
            "--with-disk",
            metavar="DISK_RUN",
            help="Recompute the verdict now against this stored `iolab disk` run (repeat for "
            "several devices) instead of showing the verdict kept with the run; the recomputed "
            "one is said to be recomputed and is not stored.",
        ),
    ] = None,
) -> None:
    """Show one run: its parameters, environment and results (with the driver core that ran
    its load, compiled or Python, and why: IOLAB_DRIVER_CORE), what limited it (a verdict from
    its probes with its evidence: docs/diagnosis.md), and what the probes recorded: the devices
    per role, engine and host counters, wait statistics and checkpoints.

    The verdict is the one kept with the run: computed when the run was stored, against the
    `iolab disk` runs of its devices that had finished by its end (a run stored before iolab
    kept verdicts gets its verdict on first read, by the same rule); a disk run measured later
    never changes it. --with-disk recomputes it against the disk runs named."""
    from iolab.analysis.disk import summarize
    from iolab.drivercore import shown
    from iolab.report import disk as disk_report
    from iolab.report import populate as populate_report
    from iolab.report import probes as probes_report
    from iolab.report import tpcc as tpcc_report
    from iolab.report import tpch as tpch_report
    from iolab.report import why
    from iolab.store import checks, open_store, verdicts

    check_id(run_id, "RUN")
    for disk in with_disk or []:
        check_id(disk, "--with-disk", "the number of an `iolab disk` run")
    with open_store(results, create=False) as store:
        run = store.run(run_id)
        env = store.environment(run.env_id) if run.env_id else {}
        passes = store.disk_passes(run.id)
        queries = store.query_results(run.id)
        probes = store.probes(run.id, values=False)
        logs = store.logs(run.id)
        kept = verdicts.of_run(store, run)
        checked = checks.newest(store, run.id)
        verdict = kept
        if with_disk:
            disk_runs = [verdicts.disk_run(store, d) for d in dict.fromkeys(with_disk)]
            verdict = verdicts.compute(store, run, disk_runs)
    diagnosis = verdict.diagnosis
    summaries = summarize(passes)
    if as_json:
        doc = _run_json(run) | {"environment": env}
        if queries:
            doc["query_results"] = [dataclasses.asdict(q) for q in queries]
        if passes:
            doc["disk"] = {
                "tests": disk_report.summary_json(summaries),
                "passes": disk_report.passes_json(passes),
            }
        if probes is not None:
            doc["probes"] = probes_report.probes_json(probes)
        if diagnosis is not None:
            doc["diagnosis"] = diagnosis.as_json()
            doc["verdict"] = verdict.document()
            if verdict is not kept and kept.diagnosis is not None:
                doc["verdict"]["kept"] = kept.diagnosis.as_json() | kept.document()
        if checked is not None:
            doc["checked_verdict"] = checked.document()
        doc["logs"] = sorted(logs)
        print(json.dumps(doc, indent=2))
        return
    out.print(
        f"[bold]run {run.id}[/]  {run.workload}  {escape(run.experiment)}  "
        f"status {run.status.value}"
    )
    out.print(f"started {run.started_at}  ended {run.ended_at or '-'}")
    if run.error:
        out.print(f"[red]error:[/] {escape(run.error)}")
    _print_environment(env)
    core = shown(run.summary)  # which driver core ran its load: pip hides a skipped build
    if core:
        out.print(escape(core))
    if summaries:
        out.print(disk_report.grid(summaries, "disk profile"))
        out.print(disk_report.details(summaries))
    if run.workload == "populate" and run.summary.get("rows"):
        out.print(populate_report.summary_table(run.summary, "populate"))
        out.print(populate_report.latency_table(run.summary))
        out.print(populate_report.loaders_line(run.summary))
    if run.workload == "tpch" and run.summary.get("data_bytes"):
        out.print(tpch_report.summary_table(run.summary, "tpch"))
    if queries:
        out.print(tpch_report.queries_table(queries))
    if run.workload == "tpcc" and "consistency" in run.summary:
        for table in tpcc_report.tables(run.summary):
            out.print(table)
    if diagnosis is not None:
        for line in why.show_lines(diagnosis):
            out.print(line)
        out.print(f"  [dim]{escape(verdict.origin())}[/]")
        if verdict is not kept and kept.diagnosis is not None:
            out.print(f"  [dim]the verdict kept with the run: {escape(kept.diagnosis.line)}[/]")
    if checked is not None:
        out.print(f"  {escape(why.checked_line(checked))}")
    if probes is not None:
        for table in probes_report.tables(probes):
            out.print(table)
        for line in probes_report.notes_lines(probes.notes):
            out.print(line)
    if logs:
        names = ", ".join(
            f"{name} ({len(text.splitlines()):,} lines)" for name, text in logs.items()
        )
        out.print(f"[dim]logs kept: {names}; `iolab results log {run.id}` prints them[/]")


def _print_environment(env: dict[str, Any]) -> None:
    if not env:
        return
    versions = ", ".join(f"{k} {v}" for k, v in env.get("versions", {}).items())
    memory = env.get("memory_bytes", 0) / 2**30
    if env.get("fleet_host"):  # the run ran on a host of a fleet
        out.print(
            f"on fleet host {escape(str(env['fleet_host']))} ({escape(str(env.get('hostname')))})"
        )
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


@app.command("log")
def log(
    run_id: int = typer.Argument(..., metavar="RUN", help="Run id from `iolab results list`."),
    name: str | None = typer.Option(
        None,
        "--name",
        help="Which log, when the run kept several: server (PostgreSQL's or MariaDB's), "
        "pgbench, pgbench init, sysbench, sysbench prepare, a script's (`iolab results show "
        "RUN` lists them). Default: the server's log, or the run's only one.",
        show_default=False,
    ),
    results: ReadResultsOption = None,
) -> None:
    """Print a log kept with a run: the server's log of a PostgreSQL or MariaDB iolab ran,
    pgbench's or sysbench's output. SQLite and DuckDB run inside iolab, with no server log."""
    from iolab.store import open_store

    check_id(run_id, "RUN")
    with open_store(results, create=False) as store:
        run = store.run(run_id)
        logs = store.logs(run.id)
    text = log_text(run, logs, name)
    print(text, end="" if text.endswith("\n") else "\n")


def log_text(run: RunRecord, logs: dict[str, str], name: str | None) -> str:
    """The log ``name`` of ``run`` (None: its server's, or its only one); an error saying what
    the run kept, and why it kept no log when it kept none."""
    listed = ", ".join(sorted(logs))
    if name is not None and name not in logs:
        kept = f"these logs: {listed}" if logs else "no log"
        raise BadInput("--name", name, f"run {run.id} kept {kept}")
    if name is not None:
        return logs[name]
    if "server" in logs or len(logs) == 1:
        return logs["server"] if "server" in logs else next(iter(logs.values()))
    if logs:
        raise BadInput("--name", None, f"run {run.id} kept {len(logs)} logs: {listed}; name one")
    raise IolabError(f"run {run.id} ({run.experiment}) kept no log{_why_no_log(run)}")


def _why_no_log(run: RunRecord) -> str:
    """Why a run kept no log, where its engine says: an engine inside iolab's process, a
    server of the user's own (--dsn)."""
    from iolab.engines import catalog

    kind = catalog.KINDS.get(str(run.params.get("engine")))
    if kind is not None and not kind.server:
        why = f": {kind.title} runs inside iolab's own process, so there is no server log"
    elif run.params.get("dsn"):
        why = ": its server is yours (--dsn), and so is the server's log"
    else:
        why = ""
    return f"{why}; `iolab results show {run.id}` shows what the run recorded"
