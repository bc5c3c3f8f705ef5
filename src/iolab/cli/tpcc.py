"""``iolab tpcc``: a TPC-C-derived OLTP workload on an engine iolab provisions on the layout
under test (docs/tpcc.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

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

if TYPE_CHECKING:
    from iolab.results import RunOutcome

# The defaults as the help says them: workloads.tpcc.dialects.DEFAULT and the options model's
# (importing them here would load the workload to start any command).
ENGINE_HELP = "postgres (the default), mariadb (InnoDB) or sqlite; not duckdb (no OLTP engine)."


def tpcc(
    engine: Annotated[str | None, typer.Option(help=ENGINE_HELP, show_default=False)] = None,
    warehouses: Annotated[
        int,
        typer.Option(
            help="Warehouses W (1 to 100,000): about 74 MiB of CSV and 114 MiB on disk each, "
            "generated once per W into ~/.cache/iolab/tpcc."
        ),
    ] = 1,
    connections: Annotated[
        int,
        typer.Option(
            help="Virtual users, each with its own connection and a home warehouse (more than "
            "10 per warehouse is warned about unless --all-warehouses)."
        ),
    ] = 4,
    mode: Annotated[
        str | None,
        typer.Option(
            help="server: each transaction one call of a server-side routine (PL/pgSQL, "
            "SQL/PSM; the default on PostgreSQL and MariaDB); client: client-side SQL (the only "
            "mode on SQLite).",
            show_default=False,
        ),
    ] = None,
    mix: Annotated[
        str,
        typer.Option(
            help="Percent of New-Order, Payment, Order-Status, Delivery, Stock-Level; must sum "
            "to 100."
        ),
    ] = "45,43,4,4,4",
    all_warehouses: Annotated[
        bool,
        typer.Option(
            "--all-warehouses", help="Each transaction at a random warehouse, not the user's home."
        ),
    ] = False,
    warmup: Annotated[
        str,
        typer.Option(
            help="Time before the measured window, left out of every number and shaded on the "
            "timeline (TPC-C's ramp-up; 7 days at most). Formerly --rampup, which still works."
        ),
    ] = "10s",
    duration: Annotated[
        str, typer.Option(help="The measured window, e.g. 60s, 5m (7 days at most).")
    ] = "60s",
    rate: Annotated[
        float | None,
        typer.Option(
            help="Open loop: transactions a second over all users, the j-th due at j / rate; "
            "latency counts from each one's due time. Not with --think."
        ),
    ] = None,
    think: Annotated[
        bool,
        typer.Option(
            "--think",
            help="The specification's keying and thinking times (off: back to back). Not with "
            "--rate.",
        ),
    ] = False,
    data_dir: DataDirOption = None,
    files: FilesOption = 1,
    wal_dir: WalDirOption = None,
    temp_dir: TempDirOption = None,
    setting: SetOption = None,
    loaders: Annotated[
        int | None,
        typer.Option(help="Parallel loader connections. Default: the CPUs (at least 2)."),
    ] = None,
    pg_bin: PgBinOption = None,
    dsn: Annotated[
        str | None,
        typer.Option(
            help="A PostgreSQL or MariaDB server of yours (postgresql://USER@HOST/DB, "
            "mysql://USER@HOST/DB; the password from PGPASSWORD, ~/.pgpass, MYSQL_PWD or "
            "~/.my.cnf, never stored): the run uses its database; its layout and settings are "
            "its own. iolab refuses a database that holds its tables already and drops what it "
            "made afterwards, unless --keep. Its user's rights are checked first "
            "(docs/servers.md). On this machine (a unix socket, a loopback address) its host and "
            "data directory's devices are probed as this machine's."
        ),
    ] = None,
    keep: Annotated[
        bool,
        typer.Option(
            "--keep", help="With --dsn: leave the tables as the run ended them, for your own SQL."
        ),
    ] = False,
    memory: MemoryOption = None,
    cpus: CpusOption = None,
    interval_s: SampleIntervalOption = "1s",
    no_probes: NoProbesOption = False,
    results: ResultsOption = None,
    as_json: JsonOption = False,
) -> None:
    """Load TPC-C's initial database for W warehouses on a fresh engine laid out as you say,
    run the five transactions from N virtual users through a warm-up and a measured window, then
    check the database's consistency.

    Reported: NOPM three ways (the database's sum(d_next_o_id), its count of orders, the
    client's count of committed New-Orders; the run fails if they differ by more than 1 %),
    TPM from the database's own counter beside the client's, per transaction type its count,
    rollbacks, retries and latency percentiles, and TPC-C's consistency conditions 1-4 (a
    broken one fails the run). The probes record the driven part (`iolab timeline RUN`).
    """
    from iolab.engines.external import parse_dsn
    from iolab.workloads.interface import command_layout, from_flags
    from iolab.workloads.tpcc import dialects
    from iolab.workloads.tpcc.options import TpccWorkload

    target = parse_dsn(dsn) if dsn is not None else None
    if engine is None:
        engine = target.engine if target is not None else dialects.DEFAULT
    dirs, wal, temp = layout_dirs(data_dir, wal_dir, temp_dir)
    workload = from_flags(
        TpccWorkload,
        {
            **{"kind": "tpcc", "engine": engine, "warehouses": warehouses},
            **{"connections": connections, "mode": mode or "default", "mix": mix},
            **{"all_warehouses": all_warehouses, "warmup": warmup, "duration": duration},
            **{"rate": rate, "think": think, "loaders": loaders},
            "pg_bin": str(pg_bin) if pg_bin else None,
            **{"memory": memory, "cpus": cpus},
        },
    )
    with scratch_dir(not dirs and target is None, "tpcc") as scratch:
        layout = command_layout(
            dirs or ([] if target else [scratch]), files, wal, temp, settings(setting)
        )
        params = {
            **workload.model_dump(),
            **layout,
            "dsn": dsn,
            "keep": keep,
            "sample_interval": sample_interval(interval_s, no_probes),
        }
        _run(params, results, as_json, dirs_given=bool(dirs))


def _run(
    params: dict[str, Any], results: Path | None, as_json: bool, dirs_given: bool = True
) -> None:
    from iolab.cli.progress import ProgressView
    from iolab.errors import RunFailed
    from iolab.runner.single import CommandRun, command_name, execute
    from iolab.store import open_store
    from iolab.workloads.caps import caps_of
    from iolab.workloads.interface import layout_of
    from iolab.workloads.tpcc.workload import WORKLOAD, tpcc_options

    options = tpcc_options(params, layout_of(params, Path))
    view = ProgressView()
    prepared, roles, versions = WORKLOAD.prepare(params, Path, view)  # as a cell of a file
    capped = caps_of(params)  # in the run's name and its cell's parameters
    server = options.dsn.words if options.dsn is not None else None
    what = f"tpcc {options.engine} w{options.warehouses} c{options.connections}"
    name = command_name(what, params, dirs_given, server)
    spec = CommandRun(name, "tpcc", options.params() | capped, roles, versions)
    kept: list[RunOutcome] = []

    def body(outcome: RunOutcome) -> None:
        kept.append(outcome)
        prepared(outcome)

    with open_store(results) as store, view:
        try:
            run_id, outcome = execute(store, spec, body, view)
        except RunFailed:
            # NOPM counts apart or a broken condition: show the numbers, then the error
            if kept and "consistency" in kept[0].summary:
                _render(None, kept[0], view.warnings, as_json, store.path)
            raise
    _render(run_id, outcome, view.warnings, as_json, store.path)


def _render(
    run_id: int | None, outcome: RunOutcome, warnings: list[str], as_json: bool, path: Path
) -> None:
    s = outcome.summary
    if as_json:
        doc = {"run": run_id, "status": outcome.status.value, "error": outcome.error, **s}
        print(json.dumps(doc | {"warnings": warnings}, indent=2, default=str))
        return
    from iolab.report import tpcc as tpcc_report

    for table in tpcc_report.tables(s):
        out.print(table)
    if run_id is not None:
        out.print(f"[dim]stored as run {run_id} in {escape(str(path))}[/]")
