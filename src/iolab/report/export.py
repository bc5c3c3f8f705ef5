"""``iolab export``: every run of an experiment, one row each (cell values, status, summary
numbers), as CSV, JSON or Parquet."""

from __future__ import annotations

import csv
import io
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TypeAlias

from iolab.analysis.findings import matrix_values
from iolab.errors import MissingTool
from iolab.report.builder import find_experiment, matrix_keys
from iolab.report.signature import GENERATOR, PARQUET_KEY
from iolab.store import Store
from iolab.store import experiments as store_experiments

Scalar: TypeAlias = str | int | float | bool | None
Cell: TypeAlias = Scalar | list[str | int | float | bool | None]  # a matrix value may be a list


@dataclass(frozen=True)
class RunTable:
    """One row per run; ``columns`` in first-seen order over the rows."""

    columns: tuple[str, ...]
    rows: tuple[dict[str, Cell], ...]


def run_table(store: Store, target: str) -> RunTable:
    exp = find_experiment(store, target)
    keys = matrix_keys(store_experiments.config_of(store, exp))
    rows: list[dict[str, Cell]] = []
    for cell in store_experiments.cells(store, exp):
        values = matrix_values(cell.params, keys)
        for run in cell.runs:
            row: dict[str, Cell] = {
                "run": run.id,
                "cell": cell.id,
                "status": run.status.value,
                **values,
            }
            for k, v in run.summary.items():
                if isinstance(v, int | float | str | bool) or v is None:
                    row[k] = v
            rows.append(row)
    columns: list[str] = ["run", "cell", "status"]  # also without a run (report/signature.py)
    for row in rows:
        columns += [k for k in row if k not in columns]
    return RunTable(tuple(columns), tuple(rows))


def json_text(table: RunTable) -> str:
    return json.dumps(list(table.rows), indent=2)


def csv_text(table: RunTable) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=table.columns)
    writer.writeheader()
    writer.writerows(table.rows)
    return buf.getvalue()


def parquet_bytes(table: RunTable) -> bytes:
    """Parquet through DuckDB (the engines extra), reading the rows as newline-delimited JSON;
    DuckDB writes into a scratch directory, the caller writes the bytes where they go."""
    try:
        import duckdb
    except ImportError:
        raise MissingTool("duckdb", "pip install 'iolab[engines]' for parquet export") from None
    with tempfile.TemporaryDirectory(prefix="iolab-export-") as scratch:
        source, target = Path(scratch) / "runs.json", Path(scratch) / "runs.parquet"
        source.write_text(
            "".join(json.dumps({c: row.get(c) for c in table.columns}) + "\n" for row in table.rows)
        )
        con = duckdb.connect()
        try:
            con.execute(
                f"COPY (SELECT * FROM read_json_auto('{source}')) TO '{target}' "
                f"(FORMAT parquet, KV_METADATA {{{PARQUET_KEY}: '{GENERATOR}'}})"
            )
        finally:
            con.close()
        return target.read_bytes()


def histogram_logs(store: Store, target: str) -> list[tuple[str, str]]:
    """``(file name, interval log)`` of each run of ``target`` that kept histograms: one per
    operation kind of a run that timed its operations, one of the commit test's fdatasyncs of
    a disk run (:mod:`iolab.latency.export`)."""
    from iolab.latency.export import interval_log, kinds, passes_log

    exp = find_experiment(store, target)
    out: list[tuple[str, str]] = []
    for cell in store_experiments.cells(store, exp):
        for run in cell.runs:
            title = f"iolab run {run.id} of {target}, cell {cell.id}"
            data = store.latency(run.id)
            if data is not None:
                out += [
                    (f"run-{run.id}-{k}.hlog", interval_log(data, k, title)) for k in kinds(data)
                ]
            synced = store.sync_histograms(run.id)
            tests = sorted({s.test for s in synced})
            out += [
                (f"run-{run.id}-{test}-fdatasync.hlog", passes_log(synced, test, title))
                for test in tests
            ]
    return out
