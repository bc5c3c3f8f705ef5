"""``iolab pgbench``: pgbench, with the user's arguments, against a PostgreSQL iolab provisions
on the layout under test."""

from __future__ import annotations

from typing import Annotated

import typer

from iolab.cli.drivers import NoInitOption
from iolab.cli.options import (
    DataDirOption,
    FilesOption,
    JsonOption,
    NoProbesOption,
    PgBinOption,
    ResultsOption,
    SampleIntervalOption,
    SetOption,
    TempDirOption,
    WalDirOption,
    sample_interval,
)


def pgbench(
    pgbench_args: Annotated[
        list[str] | None,
        typer.Argument(
            help="pgbench's own arguments, after --: passed unchanged, read as pgbench reads "
            "them (abbreviations too); refused: the connection (host, port, user, database), "
            "the -l log's options (--log-prefix, --aggregate-interval, --sampling-rate) and "
            "--progress-timestamp, which iolab owns. A -R rate is the run's offered rate.",
            show_default=False,
        ),
    ] = None,
    engine: Annotated[str, typer.Option(help="postgres (pgbench drives PostgreSQL).")] = "postgres",
    data_dir: DataDirOption = None,
    files: FilesOption = 1,
    wal_dir: WalDirOption = None,
    temp_dir: TempDirOption = None,
    setting: SetOption = None,
    init_args: Annotated[
        str,
        typer.Option(help='pgbench\'s initialisation, e.g. "-i -s 10" (-i is added if left out).'),
    ] = "-i",
    no_init: NoInitOption = False,
    dsn: Annotated[
        str | None,
        typer.Option(
            help="A PostgreSQL server of yours instead of a layout: postgresql://USER@HOST:PORT/DB "
            "(the password from PGPASSWORD or ~/.pgpass, never stored); needs --no-init.",
            show_default=False,
        ),
    ] = None,
    pg_bin: PgBinOption = None,
    interval_s: SampleIntervalOption = "1s",
    no_probes: NoProbesOption = False,
    results: ResultsOption = None,
    as_json: JsonOption = False,
) -> None:
    """Run pgbench on a fresh PostgreSQL laid out as you say: iolab pgbench -- -c 8 -T 30.

    iolab provisions the engine, runs pgbench -i with --init-args, then pgbench with your
    arguments (-P 1 and a -l transaction log added) on the engine's private socket while the
    probes record underneath, and removes what it made. Stored: pgbench's numbers (tps,
    latency average, failed, retried), its progress per second, latency percentiles per script
    from every logged transaction, your -f scripts (text and SHA-256). See docs/drivers.md.
    """
    from iolab.cli.drivers import layout_params, run
    from iolab.cli.options import scratch_dir
    from iolab.engines.external import parse_dsn
    from iolab.runner.single import command_name
    from iolab.workloads.interface import from_flags
    from iolab.workloads.pgbench.options import PgbenchWorkload

    workload = from_flags(
        PgbenchWorkload,
        {
            "kind": "pgbench",
            "engine": engine,
            "init_args": init_args,
            "init": not no_init,
            "args": list(pgbench_args or []),
            "pg_bin": str(pg_bin) if pg_bin else None,
        },
    )
    target = parse_dsn(dsn) if dsn is not None else None
    with scratch_dir(not data_dir and target is None, "pgbench") as scratch:
        layout = layout_params(data_dir, files, wal_dir, temp_dir, setting, scratch)
        if target is not None and not data_dir:
            layout["data_dirs"] = []  # the server's layout is its own
        params = {
            **workload.model_dump(),
            **layout,
            "dsn": dsn,
            "sample_interval": sample_interval(interval_s, no_probes),
        }
        server = target.words if target is not None else None
        name = command_name(f"pgbench {engine}", params, bool(data_dir), server)
        stored = {**params, "dsn": target.redacted} if target is not None else params
        run("pgbench", name, params, results, as_json, stored)
