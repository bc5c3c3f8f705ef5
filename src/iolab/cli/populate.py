"""``iolab populate``: the table-population benchmark on an engine iolab provisions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from iolab.cli.console import stdout as out
from iolab.cli.options import (
    CpusOption,
    DataDirOption,
    FilesOption,
    JsonOption,
    MemoryOption,
    NoProbesOption,
    PgBinOption,
    ResultsOption,
    SampleIntervalOption,
    SetOption,
    TempDirOption,
    WalDirOption,
    layout_dirs,
    sample_interval,
    scratch_dir,
    settings,
)


def populate(
    engine: Annotated[
        str | None,
        typer.Option(
            help="sqlite (embedded, the default), postgres or mariadb; with --dsn, the DSN's."
        ),
    ] = None,
    data_dir: DataDirOption = None,
    files: FilesOption = 1,
    wal_dir: WalDirOption = None,
    temp_dir: TempDirOption = None,
    rows: Annotated[
        int | None,
        typer.Option(
            help="Rows in total (one page each): a whole number, e.g. 100000 or 100_000 (no "
            "unit: 10k is refused, naming 10000)."
        ),
    ] = None,
    size: Annotated[
        str | None, typer.Option("--bytes", help="Payload in total instead of --rows, e.g. 10GB.")
    ] = None,
    duration: Annotated[
        str | None,
        typer.Option(
            help="Insert until this time is up instead of --rows, e.g. 10m, 30s (at most "
            "8760h); each loader stops at its next transaction boundary (client mode)."
        ),
    ] = None,
    warmup: Annotated[
        str | None,
        typer.Option(
            metavar="ROWS|DURATION",
            help="Leave the start out of rows/s, latencies and bytes per row: rows (10000) or "
            "a duration with its unit (30s). Shaded on the timeline.",
        ),
    ] = None,
    rate: Annotated[
        float | None,
        typer.Option(
            help="Offered load in rows/s over all loaders, each on a fixed schedule (row j due "
            "at j / rate; with --duration the run lasts the duration), at most 1,000,000; held "
            "when the achieved rate is within 5 % of it, over or under; latency counts from "
            "each operation's intended start (client mode)."
        ),
    ] = None,
    connections: Annotated[
        int,
        typer.Option(
            help="Loader connections, each its own thread. Each holds open files (SQLite: two "
            "per data file); more than `ulimit -n` allows (raised to its hard limit) is refused."
        ),
    ] = 16,
    commit_every: Annotated[
        int,
        typer.Option(
            help="Rows per transaction (1: one implicit transaction per row, as the seeds)."
        ),
    ] = 1,
    method: Annotated[str, typer.Option(help="insert, multirow or copy (PostgreSQL).")] = "insert",
    mode: Annotated[
        str,
        typer.Option(
            help="client: one round trip per statement; server: the loop runs inside the engine."
        ),
    ] = "client",
    key: Annotated[
        str, typer.Option(help="sequential, random (UUID v4) or ordered-uuid (v7).")
    ] = "sequential",
    batch: Annotated[int, typer.Option(help="Rows per multirow statement or COPY chunk.")] = 100,
    setting: SetOption = None,
    pg_bin: PgBinOption = None,
    dsn: Annotated[
        str | None,
        typer.Option(
            help="A server iolab does not manage instead of a layout: postgresql://USER@HOST/DB "
            "or mysql://USER@HOST/DB. Keep the password in PGPASSWORD, PGPASSFILE or ~/.pgpass "
            "(PostgreSQL), ~/.my.cnf or MYSQL_PWD (MariaDB); one in the DSN (user:PW@ or "
            "?password=) is never shown or stored. Layout options are refused with it. Its "
            "user needs the right to create tables and routines there (checked first; "
            "docs/servers.md). On this machine (a unix socket, a loopback address) its host and "
            "data directory's devices are probed as this machine's.",
        ),
    ] = None,
    checkpoint_every: Annotated[
        str | None,
        typer.Option(
            help="Request a checkpoint every so often during the load (e.g. 30s), on a "
            "connection of its own: PostgreSQL CHECKPOINT, InnoDB a flush up to the request's "
            "LSN, SQLite wal_checkpoint. Each is a checkpoint interval marked requested.",
        ),
    ] = None,
    presize_wal: Annotated[
        str | None,
        typer.Option(
            help="Grow the WAL / redo log to this size before the first row (e.g. 1GiB): "
            "PostgreSQL min_wal_size and segments made up front, MariaDB "
            "innodb_log_file_size, SQLite a pre-grown -wal file. At most the free space of "
            "the log's directory.",
        ),
    ] = None,
    steady_window: Annotated[
        int,
        typer.Option(
            help="Steady state: a window of this many rows/s samples (3 or more), each within "
            "--steady-tolerance of the window's mean (see docs/populate.md).",
        ),
    ] = 10,
    steady_tolerance: Annotated[
        float,
        typer.Option(
            help="Steady state: percent of the window's mean each sample may be off it (above "
            "0, at most 100). The steady rows/s is the mean from the first steady window to "
            "the last.",
        ),
    ] = 10.0,
    memory: MemoryOption = None,
    cpus: CpusOption = None,
    interval_s: SampleIntervalOption = "1s",
    no_probes: NoProbesOption = False,
    results: ResultsOption = None,
    as_json: JsonOption = False,
) -> None:
    """Populate a table with one row per page on a fresh engine laid out as you say.

    iolab provisions the engine on the layout (data dirs, files, WAL dir, temp dir, settings),
    runs the loaders, measures elapsed time, rows/s, the latency of every statement and commit
    (count, mean, p50 .. p99.99, max), pages per row, WAL bytes and the bytes each device wrote
    per row, checks the row count, and removes the instance. --duration loads for a time
    instead of a row count, --warmup leaves the start out, --rate offers a fixed load. Probes
    record the devices, CPU, engine counters, wait events and checkpoints meanwhile (see
    `iolab results show` and `iolab timeline`).

    Nothing starts and nothing is recorded unless the options, the directories, the --set
    values (read by the engine's own binary) and the free space (at least a page per row) pass.
    """
    from iolab.engines.external import parse_dsn
    from iolab.workloads.interface import command_layout, from_flags
    from iolab.workloads.populate import dialects
    from iolab.workloads.populate.options import PopulateWorkload

    target = parse_dsn(dsn) if dsn is not None else None
    if target is not None:
        engine = engine or target.engine
    dirs, wal, temp = layout_dirs(data_dir, wal_dir, temp_dir)
    workload = from_flags(
        PopulateWorkload,
        {
            **{"kind": "populate", "engine": engine or dialects.DEFAULT, "rows": rows},
            **{"bytes": size, "connections": connections, "commit_every": commit_every},
            **{"method": method, "mode": mode, "key": key, "batch": batch},
            "pg_bin": str(pg_bin) if pg_bin else None,
            **{"duration": duration, "warmup": warmup, "rate": rate},
            **{"checkpoint_every": checkpoint_every, "presize_wal": presize_wal},
            **{"steady_window": steady_window, "steady_tolerance": steady_tolerance},
            **{"memory": memory, "cpus": cpus},
        },
    )
    with scratch_dir(not dirs and target is None, "populate") as scratch:
        layout = command_layout(
            dirs or ([] if target else [scratch]), files, wal, temp, settings(setting)
        )
        params = {
            **workload.model_dump(),
            **layout,
            "dsn": dsn,
            "sample_interval": sample_interval(interval_s, no_probes),
        }
        _run(params, results, as_json, dirs_given=bool(dirs))


def _run(
    params: dict[str, Any], results: Path | None, as_json: bool, dirs_given: bool = True
) -> None:
    from iolab.cli.progress import ProgressView
    from iolab.report import populate as populate_report
    from iolab.report import probes as probes_report
    from iolab.runner.single import CommandRun, command_name, execute
    from iolab.store import open_store
    from iolab.workloads.caps import caps_of
    from iolab.workloads.interface import layout_of
    from iolab.workloads.populate.workload import WORKLOAD, populate_options

    options = populate_options(params, layout_of(params, Path))
    view = ProgressView()
    body, roles, versions = WORKLOAD.prepare(params, Path, view)  # as a cell of a file
    server = options.dsn.words if options.dsn is not None else None
    name = command_name(f"populate {options.engine}", params, dirs_given, server)
    capped = caps_of(params)  # in the run's name and its cell's parameters
    spec = CommandRun(name, "populate", options.params() | capped, roles, versions)
    with open_store(results) as store, view:
        run_id, outcome = execute(store, spec, body, view)
    s = outcome.summary
    if as_json:
        doc = {"run": run_id, "status": outcome.status.value, **s, "warnings": view.warnings}
        if outcome.probes is not None:
            doc["probes"] = probes_report.probes_json(outcome.probes)
        print(json.dumps(doc, indent=2))
        return
    title = (
        f"populate · {options.engine} {s.get('engine_version', '')} · {options.key.value} keys"
        f" · {options.method.value}/{options.mode.value} · commit every {options.commit_every}"
    )
    out.print(populate_report.summary_table(s, title))
    out.print(populate_report.latency_table(s))
    out.print(populate_report.loaders_line(s))
    out.print(f"[dim]stored as run {run_id} in {escape(str(store.path))}[/]")
    if outcome.probes is not None:
        out.print(probes_report.recorded_line(outcome.probes, run_id))
