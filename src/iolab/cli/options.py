"""Options shared by commands, so each is spelled and documented once."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

ResultsOption = Annotated[
    Path | None,
    typer.Option(
        "--results",
        envvar="IOLAB_RESULTS",
        help="Results database file (SQLite). Default: ./iolab.db.",
        show_default=False,
    ),
]
JsonOption = Annotated[
    bool,
    typer.Option("--json", help="Print machine-readable JSON on stdout instead of tables."),
]
