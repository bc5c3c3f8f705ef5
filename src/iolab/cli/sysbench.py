"""``iolab sysbench``: a sysbench script, with the user's arguments, against a MariaDB or
PostgreSQL iolab provisions on the layout under test."""

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


def sysbench(
    sysbench_args: Annotated[
        list[str] | None,
        typer.Argument(
            help="After --: the script (oltp_read_write, ... or a Lua file), then sysbench's "
            "own options as --name=value, passed unchanged; refused in any spelling (- or _): "
            "the driver and connection, --histogram, --report-checkpoints, --config-file, "
            "--test, which iolab owns. A --rate is the run's offered rate.",
            show_default=False,
        ),
    ] = None,
    engine: Annotated[str, typer.Option(help="mariadb (the default) or postgres.")] = "mariadb",
    data_dir: DataDirOption = None,
    files: FilesOption = 1,
    wal_dir: WalDirOption = None,
    temp_dir: TempDirOption = None,
    setting: SetOption = None,
    no_init: NoInitOption = False,
    dsn: Annotated[
        str | None,
        typer.Option(
            help="A server of yours instead of a layout: mysql://USER@HOST:PORT/DB, "
            "mysql://USER@localhost/DB?unix_socket=PATH or postgresql://USER@HOST:PORT/DB with "
            "--engine postgres (the password from MYSQL_PWD or PGPASSWORD, handed to sysbench "
            "in its environment, never stored); needs --no-init.",
            show_default=False,
        ),
    ] = None,
    pg_bin: PgBinOption = None,
    interval_s: SampleIntervalOption = "1s",
    no_probes: NoProbesOption = False,
    results: ResultsOption = None,
    as_json: JsonOption = False,
) -> None:
    """Run a sysbench script on a fresh engine laid out as you say: iolab sysbench --
    oltp_read_write --tables=4 --table-size=100000 --threads=8 --time=30.

    iolab provisions the engine, runs sysbench SCRIPT prepare, then SCRIPT run with your
    options (--report-interval=1 and --histogram added) on the engine's private socket while
    the probes record underneath, and removes what it made. Stored: sysbench's numbers (tps,
    qps, latency average and percentile, errors), its progress per second, percentiles from its
    histogram, the script (text and SHA-256). See docs/drivers.md.
    """
    from iolab.cli.drivers import layout_params, run
    from iolab.cli.options import scratch_dir
    from iolab.engines.external import parse_dsn
    from iolab.errors import BadInput
    from iolab.runner.single import command_name
    from iolab.workloads.interface import from_flags
    from iolab.workloads.sysbench.options import SysbenchWorkload

    words = list(sysbench_args or [])
    if not words:
        raise BadInput("sysbench SCRIPT", None, "give the script after --, e.g. -- oltp_read_write")
    workload = from_flags(
        SysbenchWorkload,
        {
            "kind": "sysbench",
            "engine": engine,
            "script": words[0],
            "init": not no_init,
            "args": words[1:],
            "pg_bin": str(pg_bin) if pg_bin else None,
        },
    )
    target = parse_dsn(dsn) if dsn is not None else None
    with scratch_dir(not data_dir and target is None, "sysbench") as scratch:
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
        what = f"sysbench {target.engine if target is not None else engine} {words[0]}"
        name = command_name(what, params, bool(data_dir), server)
        stored = {**params, "dsn": target.redacted} if target is not None else params
        run("sysbench", name, params, results, as_json, stored)
