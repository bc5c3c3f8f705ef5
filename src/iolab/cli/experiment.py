"""``iolab plan FILE`` and ``iolab run FILE``: experiment files."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from iolab.cli.console import stdout as out
from iolab.cli.options import JsonOption, ReadResultsOption, ResultsOption

if TYPE_CHECKING:
    from iolab.analysis.stats import Summary
    from iolab.config import experiment as config
    from iolab.report.value import ExperimentReport
    from iolab.results import ExperimentId
    from iolab.runner import experiment as runner
    from iolab.runner import hostlock
    from iolab.store import Store
    from iolab.workloads.interface import Judged

FileArgument = Annotated[
    Path,
    typer.Argument(
        help="The experiment file (TOML, a regular file of at most 1 MiB); see docs/experiments.md."
    ),
]


def _clock(seconds: float) -> str:
    minutes = round(seconds / 60)
    return f"{minutes // 60} h {minutes % 60} min" if minutes >= 60 else f"{minutes} min"


def plan(
    file: FileArgument, results: ReadResultsOption = None, as_json: JsonOption = False
) -> None:
    """Print the cells of an experiment file, how many runs are left and how long they should
    take; nothing runs. Runs already in the results database count (resume). On a fleet
    whose hosts the file names (`host` in the matrix, `[fleet] hosts`), the estimate is the
    wall time with one run at a time on each host.

    It checks what `iolab run` checks before recording a run: each cell's options, directories
    and free space, engine settings (read by the engine), the name (one workload kind per
    name), and at most 100,000 runs. It also says whether this host is free or which iolab
    process holds its lock (one run at a time per host; a process that is not an iolab run is
    named with a way out), and of the runs other iolab processes took, which run now and which
    wait for the lock."""
    from iolab.config import experiment as config
    from iolab.report import experiment as experiment_report
    from iolab.runner import experiment as runner
    from iolab.runner import hostlock
    from iolab.store import open_store
    from iolab.store.database import default_path
    from iolab.store.identify import check_writable

    experiment = config.load(file)
    existing = results or default_path()
    check_writable(existing)  # as `iolab run` would: it records there
    with open_store(existing, create=False) if existing.exists() else nullcontext() as store:
        p = runner.make_plan(experiment, store)
    here = not p.hosts and experiment.spec.fleet.address is None  # the runs run on this host
    busy, turns = hostlock.status() if here else (None, None)
    if as_json:
        doc = {
            "experiment": experiment.name,
            "workload": experiment.kind,
            "cells": [
                {
                    "id": c.cell.id,
                    "label": c.cell.label,
                    "params": c.cell.params,
                    "done": c.done,
                    "to_run": c.remaining,
                    "taken_now": c.running,
                    "running_now": _states(c.takers, turns)[0],
                    "waiting_now": _states(c.takers, turns)[1],
                    "seconds_each": c.seconds_each,
                }
                for c in p.cells
            ],
            "runs": p.runs,
            "kept": p.kept,
            "estimated_seconds": p.estimated_seconds,
            "estimated_max_seconds": p.estimated_max_seconds,
            "hosts": list(p.hosts),
            "estimated_wall_seconds": p.estimated_wall_seconds,
            "host_lock": {
                "path": str(hostlock.lock_path()),
                "held_by": None if busy is None else dataclasses.asdict(busy),
            }
            if here
            else None,
        }
        print(json.dumps(doc, indent=2))
        return
    e = experiment.spec.experiment
    reps = (
        f"auto ({e.min_repetitions}..{e.max_repetitions}, until the 95% CI is within "
        f"+/-{e.ci_target:.0%})"
        if p.auto
        else str(e.repetitions)
    )
    title = (
        f"{experiment.name} · {experiment.kind} · {len(p.cells)} cells x {reps} repetitions"
        f" · order {e.order}"
    )
    rows = [(c.cell, c.done, c.remaining, c.seconds_each) for c in p.cells]
    if len(rows) > experiment_report.PLAIN_ABOVE:
        print(experiment_report.plan_text(rows, title))
    else:
        out.print(experiment_report.plan_table(rows, title))
    line = f"{p.runs} runs to do, about {_clock(p.estimated_seconds)}"
    if len(p.hosts) > 1 and p.runs:
        line = (
            f"{p.runs} runs to do, about {_clock(p.estimated_wall_seconds)} on "
            f"{len(p.hosts)} hosts ({_clock(p.estimated_seconds)} of runs)"
        )
    if p.auto:
        line += f" (up to {_clock(p.estimated_max_seconds)} if every cell needs the maximum)"
    if p.kept:
        line += f"; {p.kept} finished runs are kept"
    out.print(line)
    takers = tuple(pid for c in p.cells for pid in c.takers)
    if takers:
        out.print(_taken_line(takers, turns))
    if experiment.baseline is not None:
        out.print(f"baseline cell: {escape(experiment.baseline.label)}")
    if here:
        lock = escape(str(hostlock.lock_path()))
        if busy is None:
            out.print(f"this host: free (one run at a time, by the lock {lock})")
        elif busy.identified:
            out.print(
                f"this host is busy: {escape(busy.describe())} holds its lock {lock}; each "
                "run waits for the run before it to end"
            )
        else:
            out.print(
                f"this host is held: its lock {lock} is held by {escape(busy.describe())}; "
                f"every run waits until it lets go: {escape(busy.way_out(hostlock.lock_path()))}"
            )


def _states(takers: tuple[int, ...], turns: hostlock.Turns | None) -> tuple[int, int]:
    """Of the runs other processes took (their pids), how many run now (their process holds
    the host's lock) and how many wait for the lock. Where the kernel's table of locks does not
    say (a fleet's hosts, no /proc/locks), every one taken counts as running."""
    if turns is None:
        return len(takers), 0
    return (
        sum(pid in turns.holding for pid in takers),
        sum(pid in turns.waiting for pid in takers),
    )


def _taken_line(takers: tuple[int, ...], turns: hostlock.Turns | None) -> str:
    """What ``iolab plan`` says of the runs that other iolab processes have taken."""
    leave = "`iolab run` leaves them to it, and takes them again only if it dies"
    n = len(takers)
    if turns is None:
        verb = "is" if n == 1 else "are"
        return f"{n} of them {verb} running now in another iolab process: {leave}"
    running, waiting = _states(takers, turns)
    parts = [
        f"{running} running now" if running else "",
        f"{waiting} waiting for this host's lock" if waiting else "",
        f"{n - running - waiting} getting ready" if n - running - waiting else "",
    ]
    said = ", ".join(part for part in parts if part)
    return (
        f"{n} of them {'is' if n == 1 else 'are'} taken by another iolab process ({said}): {leave}"
    )


FleetOption = Annotated[
    str | None,
    typer.Option(
        "--fleet",
        metavar="ADDRESS",
        help="Run on the hosts of a fleet (`auto`, HOST:PORT or ray://...; also [fleet] address "
        "in the file): each run on one host, many hosts at once, every result recorded here. "
        "The matrix key `host` compares hosts; without it runs are spread over [fleet] hosts "
        "(or every host). Needs `pip install 'iolab[fleet]'`; see docs/fleet.md.",
        show_default=False,
    ),
]


def run(
    file: FileArgument,
    results: ResultsOption = None,
    as_json: JsonOption = False,
    fleet: FleetOption = None,
) -> None:
    """Run an experiment file: every cell of its matrix, repeated, in shuffled order, each run
    on a fresh instance and committed before the next starts. Run it again to resume: finished
    runs are kept, interrupted ones run again. Two `iolab run` of one file share its runs, and
    every run on this host (of any iolab command) waits for the one before it to end: one run at
    a time per host. With --fleet, runs go to the hosts of a fleet, one at a time per host, and
    are recorded here as they come back. It ends with the answer: the best cell, each
    significant difference with where the limit moved, and one line for the pairs that differ
    in nothing significant, with about how many more runs would resolve a difference of 10 %
    (`iolab report` says the rest)."""
    run_experiment(file, results, as_json, fleet)


def run_experiment(
    file: Path,
    results: Path | None = None,
    as_json: bool = False,
    fleet: str | None = None,
    *,
    answer: bool = True,
) -> None:
    """``iolab run``; ``answer`` False leaves out the answer it ends with (a caller that prints
    the report next: ``iolab demo``)."""
    from iolab.cli.progress import ProgressView
    from iolab.config import experiment as config
    from iolab.report import experiment as experiment_report
    from iolab.runner import experiment as runner
    from iolab.store import open_store

    experiment = config.load(file)
    address = fleet or experiment.spec.fleet.address
    field = "--fleet" if fleet else "fleet.address"
    if address is not None:
        from iolab.fleet import cluster, names

        names.address(address, field)
        cluster.require_ray()  # before anything is recorded
    with open_store(results) as store:
        with ProgressView() as view:
            if address is None:
                outcome = runner.run(experiment, store, view)
            else:
                from iolab.fleet import executor as fleet_executor

                with cluster.connected(address, field) as ray:
                    placed = fleet_executor.factory(ray, experiment.spec.fleet.hosts)
                    outcome = runner.run(experiment, store, view, executor=placed)
        rows = _cell_rows(experiment, store, outcome.experiment_id)
        judged = _judged(experiment)
        built = _answer(store, outcome.experiment_id, len(rows)) if judged and answer else None
    if as_json:
        from iolab.report.document import answer_document

        doc: dict[str, Any] = {
            **outcome.as_json(experiment, store.path),
            "metric": judged.metric if judged else None,
            "cells": [
                {
                    "id": cell.id,
                    "label": cell.label,
                    "runs": dict(statuses),
                    "mean": s.mean if s else None,
                    "ci_low": s.ci_low if s else None,
                    "ci_high": s.ci_high if s else None,
                    "cv": s.cv if s else None,
                }
                for cell, s, statuses in rows
            ],
            "warnings": view.warnings,
            "answer": None if built is None else answer_document(built.findings, built.why),
        }
        print(json.dumps(doc, indent=2))
        _exit_code(outcome)
        return
    title = f"{experiment.name} · {experiment.kind}"
    if judged is not None:
        out.print(experiment_report.cells_table(rows, judged.label, title))
    out.print(runs_line(outcome, rows))
    if built is not None:
        from rich.console import Group

        from iolab.report.findings import answer_text

        said = answer_text(built.findings, built.why)
        if said:
            out.print(Group(*said))
    if outcome.stopped:
        out.print(f"[red]stopped:[/] {escape(outcome.stopped)}")
    if outcome.skipped_cells:
        out.print("[yellow]skipped after failures:[/] " + escape(", ".join(outcome.skipped_cells)))
    out.print(f"[dim]experiment {outcome.experiment_id} in {escape(str(store.path))}[/]")
    _exit_code(outcome)


ANSWER_CELLS = 200  # an experiment with more cells ends without the answer: `iolab report`


def _answer(store: Store, exp: ExperimentId, cells: int) -> ExperimentReport | None:
    """The experiment's report for the answer ``iolab run`` ends with (None: too many cells, or
    none with a finished run of the metric)."""
    from iolab import report as report_lib
    from iolab.errors import BadInput

    if cells > ANSWER_CELLS:
        return None
    try:
        built = report_lib.build(store, exp)
    except BadInput:  # e.g. no finished run has the metric: the table above says so
        return None
    return built if sum(c.summary is not None for c in built.findings.cells) >= 2 else None


def runs_line(
    outcome: runner.Outcome, rows: list[tuple[config.Cell, Summary | None, Counter[str]]]
) -> str:
    """What this invocation did: runs done, failed, aborted (a run stopped on its host), kept;
    and the aborted runs an earlier interruption left (Ctrl-C), which are not failures."""
    line = f"{outcome.done} runs done, {outcome.failed} failed"
    if outcome.runs_aborted:
        line += f", {outcome.runs_aborted} aborted"
    if outcome.kept:
        line += f", {outcome.kept} kept from before"
    earlier = sum(statuses.get("aborted", 0) for _, _, statuses in rows) - outcome.runs_aborted
    if earlier > 0:
        runs = "run" if earlier == 1 else "runs"
        line += f"; {earlier} {runs} aborted earlier (interrupted, not failed)"
    if outcome.saved_by_auto:
        line += f"; auto repetitions saved {outcome.saved_by_auto} runs"
    if outcome.waited_seconds >= 0.5:
        line += f"; waited {outcome.waited_seconds:.0f} s for the host while other runs held it"
    return line


def _exit_code(outcome: runner.Outcome) -> None:
    """Exit 1 when the experiment stopped early or gave up on a cell: it is not complete."""
    if outcome.stopped or outcome.skipped_cells:
        raise typer.Exit(1)


def _cell_rows(
    experiment: config.Experiment, store: Store, exp_id: ExperimentId
) -> list[tuple[config.Cell, Summary | None, Counter[str]]]:
    from iolab.analysis.stats import summarize
    from iolab.store import experiments as store_experiments

    judged = _judged(experiment)
    statuses = store_experiments.status_counts(store, exp_id)
    rows = []
    for cell in experiment.cells:
        values = (
            store_experiments.metric_values(store, exp_id, cell.id, judged.metric)
            if judged is not None
            else []
        )
        summary = summarize(values) if values else None
        rows.append((cell, summary, statuses.get(cell.id) or Counter()))
    return rows


def _judged(experiment: config.Experiment) -> Judged | None:
    """What the experiment's cells are judged by (the report's default metric)."""
    from iolab.runner import experiment as runner
    from iolab.workloads.interface import judged as judged_by

    return judged_by(runner.kind_of(experiment), [c.params for c in experiment.cells])
