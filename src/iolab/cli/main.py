"""The ``iolab`` command: wires options to the core and renders what comes back."""

from __future__ import annotations

import signal
import sys
from types import FrameType

import typer
from rich.markup import escape

from iolab import __version__
from iolab.cli import (
    demo,
    disk,
    experiment,
    fleet,
    populate,
    report,
    results,
    serve,
    testbed,
    timeline,
    tpch,
)
from iolab.cli.console import fit_streams, guarded, stderr
from iolab.errors import IolabError
from iolab.redaction import redact
from iolab.system.open_files import raise_to_hard

app = typer.Typer(
    name="iolab",
    help="How storage changes your database: disk profiles, database workloads on the layouts "
    "under test, and the statistics to tell the difference.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode="markdown",
)
app.command("demo")(demo.demo)
app.command("disk")(disk.disk)
app.command("populate")(populate.populate)
app.command("plan")(experiment.plan)
app.command("run")(experiment.run)
app.command("report")(report.report)
app.command("compare")(report.compare)
app.command("export")(report.export)
app.command("tpch")(tpch.tpch)
app.add_typer(results.app, name="results")
app.command("timeline")(timeline.timeline)
app.command("serve")(serve.serve)
app.add_typer(testbed.app, name="testbed")
app.add_typer(fleet.app, name="fleet")


def _version(value: bool) -> None:
    if value:
        print(f"iolab {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """iolab: how storage changes your database."""


def _terminate(signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def run() -> None:
    """Entry point: errors meant for people become one line and an exit code, never a traceback.

    typer renders usage errors itself (exit 2) and turns Ctrl-C into exit 130. Output whose
    reader has gone (``| head -1``) is dropped and the command finishes its work, exiting as
    it would have (see :mod:`iolab.cli.console`).
    """
    signal.signal(signal.SIGTERM, _terminate)
    fit_streams()
    raise_to_hard()  # as many open files as the machine allows: connections, servers
    with guarded():
        try:
            app()
        except IolabError as exc:
            stderr.print(
                f"[bold red]error:[/] {escape(redact(str(exc)))}", highlight=False, soft_wrap=True
            )
            sys.exit(exc.exit_code)
        except SystemExit as exc:
            if exc.code == INTERRUPTED:
                stderr.print("[yellow]interrupted[/]: cleaned up; finished results are kept")
            raise


INTERRUPTED = 130
