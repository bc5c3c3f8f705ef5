"""``iolab why``: what limited a run, and (``--check``) whether relieving it moves the run."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from iolab.cli.console import stdout as out
from iolab.cli.options import JsonOption, ResultsOption
from iolab.cli.output import check_id
from iolab.errors import BadInput

if TYPE_CHECKING:
    from iolab.analysis.whycheck import Check
    from iolab.store import Store


def why(
    run_id: int = typer.Argument(..., metavar="RUN", help="Run id from `iolab results list`."),
    check: Annotated[
        bool,
        typer.Option(
            "--check",
            help="Run the run's cell again, as it was and with the named limit relieved, "
            "alternating, and say whether the verdict held: a device's role (data, WAL, temp) "
            "or its latency on a RAM-backed directory under /dev/shm; the client on server "
            "mode or the compiled driver core; memory with its cap lifted; CPU the other way, "
            "its cap halved (confirmed when the rate falls to 0.4-0.65 of before); none with "
            "candidates each candidate in turn. The re-runs are stored as runs of their own "
            "(an experiment 'check of run RUN'), the checked verdict with the run.",
        ),
    ] = False,
    runs: Annotated[
        int,
        typer.Option(
            "--runs",
            help="Re-runs on each side (as it was, relieved) for --check: 2 or more.",
        ),
    ] = 3,
    results: ResultsOption = None,
    as_json: JsonOption = False,
) -> None:
    """Say what limited a run, with its evidence (the verdict stored with the run, as `iolab
    results show` prints it, and the newest check of it), and with --check test the verdict
    by the runs that relieve it: "relieving the WAL device (...) made it 2.4x faster (95 % CI
    2.1-2.8x): confirmed", or "changed nothing (1.02x, 0.97-1.07x): the WAL device was not
    the limit". A verdict iolab has no relief for says "cannot check: WHY". A run that cannot
    be run again (its server was yours, --dsn, and the relief needs iolab's own layout) is
    refused in one line, exit 2 (docs/diagnosis.md, "The check")."""
    from iolab.analysis.whycheck import Step
    from iolab.report import why as why_report
    from iolab.store import checks, open_store, verdicts

    check_id(run_id, "RUN")
    if check and runs < 2:
        raise BadInput("--runs", runs, "give 2 or more: the interval needs two runs a side")
    with open_store(results, create=False) as store:
        run = store.run(run_id)
        verdict = verdicts.of_run(store, run)
        found, metric = None, ""
        if check:
            found, metric = _check(store, run_id, runs)
        kept = checks.newest(store, run.id)
    d = verdict.diagnosis
    if as_json:
        doc = {
            "run": run.id,
            "diagnosis": d.as_json() if d is not None else None,
            "verdict": verdict.document(),
            "check": kept.document() if kept is not None else None,
        }
        print(json.dumps(doc, indent=2))
        return
    if found is None:
        out.print(f"[bold]run {run.id}[/]  {run.workload}  {escape(run.experiment)}")
        if d is None:
            out.print("no verdict: the run recorded no probes")
        else:
            for line in why_report.show_lines(d):
                out.print(line)
            out.print(f"  [dim]{escape(verdict.origin())}[/]")
        if kept is not None:
            out.print(escape(why_report.checked_line(kept)))
        return
    if d is not None:
        out.print(f"[bold]run {run.id}[/]  {escape(d.line)}")
    for sentence in found.sentences():
        out.print(escape(sentence))
    for step in found.steps:
        if isinstance(step, Step):
            out.print(f"  [dim]{escape(step.figures(metric))}[/]")
    out.print(f"[dim]checked verdict stored with run {run.id}: {found.outcome}[/]")


def _check(store: Store, run_id: int, runs: int) -> tuple[Check, str]:
    from iolab.cli.progress import ProgressView
    from iolab.runner import whycheck
    from iolab.runner.experiment import default_resolve

    planned = whycheck.plan(store, run_id)
    view = ProgressView()
    with view:
        found = whycheck.check(store, planned, runs, view, resolve=default_resolve)
    return found, planned.metric
