"""Options shared by commands, so each is spelled and documented once."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from iolab.errors import BadInput
from iolab.units import parse_duration

ResultsOption = Annotated[
    Path | None,
    typer.Option(
        "--results",
        envvar="IOLAB_RESULTS",
        help="Results database file (SQLite): one of iolab's, or a new or empty file (any "
        "other file is refused and left as it is). Default: ./iolab.db.",
        show_default=False,
    ),
]
ReadResultsOption = Annotated[
    Path | None,
    typer.Option(
        "--results",
        envvar="IOLAB_RESULTS",
        help="Results database file (SQLite) to read: one of iolab's, left as it is. Default: "
        "./iolab.db.",
        show_default=False,
    ),
]
JsonOption = Annotated[
    bool,
    typer.Option("--json", help="Print machine-readable JSON on stdout instead of tables."),
]
SampleIntervalOption = Annotated[
    str,
    typer.Option(
        "--sample-interval",
        help="How often the probes sample devices, CPU and engine counters, e.g. 1s, 500ms, "
        "5s; devices and progress are sampled 10 times a second in each run's first 10 s "
        "(wait events: always).",
    ),
]
NoProbesOption = Annotated[
    bool,
    typer.Option(
        "--no-probes",
        help="Record no probes (device, host and engine series, waits, checkpoints): for "
        "measuring their overhead, or debugging.",
    ),
]


def sample_interval(text: str, off: bool) -> float | None:
    """Seconds between probe samples, or None when probes are off."""
    if off:
        return None
    seconds = parse_duration(text, "--sample-interval")
    if seconds < 0.1:
        raise BadInput("--sample-interval", text, "give 100ms or more")
    return seconds


MemoryOption = Annotated[
    str | None,
    typer.Option(
        "--memory",
        help="Hold the engine under test and the page cache its files fill to this size "
        "(e.g. 256MiB), in a cgroup of iolab's own made for the run: data larger than it is "
        "read from the devices. Servers run inside; an embedded engine runs in iolab, which "
        "enters the cgroup for the run. Settings not given with --set are fitted to it: "
        "PostgreSQL's shared_buffers and maintenance_work_mem (an eighth, a sixteenth), "
        "MariaDB's innodb_buffer_pool_size (a quarter), DuckDB's memory_limit (a half). "
        "At least 73MiB on PostgreSQL, 255MiB on MariaDB, 64MiB on SQLite, 256MiB on DuckDB "
        "(iolab's own process is in the cgroup with an embedded engine). Root. See "
        "docs/caps.md.",
        show_default=False,
    ),
]
CpusOption = Annotated[
    str | None,
    typer.Option(
        "--cpus",
        help="Give the engine under test this many CPUs' time (fractions allowed: 0.5, 1.5; "
        "at least 0.01, the kernel's least quota), a quota in the same cgroup as --memory. "
        "Root.",
        show_default=False,
    ),
]
