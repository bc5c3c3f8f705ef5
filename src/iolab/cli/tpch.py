"""``iolab tpch``: TPC-H's 22 queries on an engine iolab provisions on the layout under test."""

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
from iolab.units import parse_int_list

if TYPE_CHECKING:
    from iolab.results import RunOutcome
    from iolab.workloads.tpch.run import TpchOptions

# The defaults of --engine and --timeout, as the help says them: workloads.tpch.dialects.DEFAULT
# and workloads.tpch.run.DEFAULT_TIMEOUT, which the command reads (importing them here would
# load the engines and the workload to start any command; a unit test keeps the help in step).
ENGINE_HELP = "duckdb (embedded, the default), postgres or mariadb (InnoDB)."
TIMEOUT_HELP = "Per-query timeout: seconds or 90s, 5m. Default: 300 s."


def tpch(
    engine: Annotated[str | None, typer.Option(help=ENGINE_HELP, show_default=False)] = None,
    sf: Annotated[
        str, typer.Option("--sf", help="Scale factor: 1 is about 1 GiB of CSV (0.01, 0.1, 1, 10).")
    ] = "1",
    data_dir: DataDirOption = None,
    files: FilesOption = 1,
    wal_dir: WalDirOption = None,
    temp_dir: TempDirOption = None,
    setting: SetOption = None,
    compression: Annotated[
        str | None,
        typer.Option(
            help="on or off. Default: the engine's (DuckDB on; MariaDB off, on is InnoDB page "
            "compression; PostgreSQL has none for TPC-H)."
        ),
    ] = None,
    cold: Annotated[
        bool,
        typer.Option(
            "--cold/--warm",
            help="cold: restart the engine and drop the page cache (root) before the queries; "
            "warm: run each query once untimed before timing it.",
        ),
    ] = True,
    timeout: Annotated[str | None, typer.Option(help=TIMEOUT_HELP, show_default=False)] = None,
    queries: Annotated[
        str | None, typer.Option(help="Queries to run, e.g. 1,3,6. Default: 1 to 22.")
    ] = None,
    loaders: Annotated[
        int | None,
        typer.Option(
            help="PostgreSQL, MariaDB: parallel loader connections (COPY, LOAD DATA). "
            "Default: the CPUs (at least 2)."
        ),
    ] = None,
    pg_bin: PgBinOption = None,
    memory: MemoryOption = None,
    cpus: CpusOption = None,
    interval_s: SampleIntervalOption = "1s",
    no_probes: NoProbesOption = False,
    results: ResultsOption = None,
    as_json: JsonOption = False,
) -> None:
    """Load TPC-H at a scale factor on a fresh engine laid out as you say, then run the 22
    queries in one stream and check every answer.

    Data comes from tpchgen-cli, generated once per scale factor into ~/.cache/iolab/tpch
    (or $IOLAB_CACHE/tpch). Reported: load time and MB/s, on-disk size and compression ratio,
    and per query its seconds, rows and whether the answer matches TPC-H's (at SF 0.01, 0.1
    and 1), and what each device behind the layout read and wrote during it (MB/s, latency);
    total and geometric mean. The probes record the power run (`iolab timeline RUN`). A wrong
    answer, an error or a timeout fails the run.
    """
    from iolab.workloads.interface import command_layout, from_flags
    from iolab.workloads.tpch import dialects
    from iolab.workloads.tpch.options import TpchWorkload
    from iolab.workloads.tpch.run import DEFAULT_TIMEOUT

    engine = dialects.DEFAULT if engine is None else engine
    timeout = f"{DEFAULT_TIMEOUT:g}" if timeout is None else timeout
    dirs, wal, temp = layout_dirs(data_dir, wal_dir, temp_dir)
    workload = from_flags(
        TpchWorkload,
        {
            **{"kind": "tpch", "engine": engine, "scale_factor": sf, "cold": cold},
            **{"compression": (compression or "default").lower(), "timeout": timeout},
            **{"loaders": loaders, "pg_bin": str(pg_bin) if pg_bin else None},
            "queries": parse_int_list(queries, "--queries") if queries is not None else None,
            **{"memory": memory, "cpus": cpus},
        },
    )
    with scratch_dir(not dirs, "tpch") as scratch:
        params = {
            **workload.model_dump(),
            **command_layout(dirs or [scratch], files, wal, temp, settings(setting)),
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
    from iolab.workloads.tpch.workload import WORKLOAD, tpch_options

    options = tpch_options(params, layout_of(params, Path))
    view = ProgressView()
    prepared, roles, versions = WORKLOAD.prepare(params, Path, view)  # as a cell of a file
    capped = caps_of(params)  # in the run's name and its cell's parameters
    name = command_name(f"tpch {options.engine} sf {options.scale_factor:g}", params, dirs_given)
    spec = CommandRun(name, "tpch", options.params() | capped, roles, versions)
    kept: list[RunOutcome] = []

    def body(outcome: RunOutcome) -> None:
        kept.append(outcome)
        prepared(outcome)

    with open_store(results) as store, view:
        try:
            run_id, outcome = execute(store, spec, body, view)
        except RunFailed:
            # a wrong answer or a query that did not finish: show the queries, then the error
            if kept and kept[0].query_results:
                _render(options, None, kept[0], view.warnings, as_json, store.path)
            raise
    _render(options, run_id, outcome, view.warnings, as_json, store.path)


def _render(
    options: TpchOptions,
    run_id: int | None,
    outcome: RunOutcome,
    warnings: list[str],
    as_json: bool,
    path: Path,
) -> None:
    from iolab.report import tpch as tpch_report

    s = outcome.summary
    if as_json:
        doc = {"run": run_id, "status": outcome.status.value, "error": outcome.error, **s}
        print(json.dumps(doc | {"warnings": warnings}, indent=2))
        return
    compressed = "compression on" if options.compressed else "compression off"
    title = (
        f"tpch · {options.engine} {s.get('engine_version', '')} · SF {options.scale_factor:g}"
        f" · {compressed} · {s.get('mode', '')}"
    )
    out.print(tpch_report.summary_table(s, title))
    out.print(tpch_report.queries_table(outcome.query_results))
    if run_id is not None:
        out.print(f"[dim]stored as run {run_id} in {escape(str(path))}[/]")
