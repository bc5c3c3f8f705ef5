"""``iolab report``, ``iolab compare`` and ``iolab export``: answers from the results database."""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from iolab.analysis.disk import test_medians
from iolab.analysis.efficiency import (
    Drift,
    Efficiency,
    Limit,
    baseline_drift,
    device_key,
    disk_device,
    populate_efficiency,
    seq_write_limit,
)
from iolab.analysis.findings import (
    Ratio,
    analyse,
    cells_from_runs,
    label_of,
    lower_is_better,
    matrix_values,
    metric_of,
    ratio,
    sentence,
)
from iolab.analysis.queries import query_times
from iolab.cli.console import stdout as out
from iolab.cli.options import JsonOption, ResultsOption
from iolab.cli.output import check_id, check_output, write_output
from iolab.config import experiment as config
from iolab.errors import BadInput
from iolab.report import html as html_report
from iolab.report import timeline as timeline_report
from iolab.report.findings import findings_text
from iolab.results import ExperimentId, RunId
from iolab.runner.kinds import KINDS
from iolab.store import Store, open_store
from iolab.store import experiments as store_experiments
from iolab.store.database import RunRecord

MetricOption = Annotated[
    str | None,
    typer.Option(
        help="What to compare: a number of the runs' summaries (rows_per_second, wal_bytes, "
        "'tests.SEQ1M Q8T1 read.mbps', ...). Default: the workload's (elapsed_seconds, "
        "total_seconds; a disk experiment's first test's MB/s). Rates, MB/s, IOPS and ratios "
        "are better high, everything else low.",
        show_default=False,
    ),
]
TargetArgument = Annotated[
    str,
    typer.Argument(help="An experiment file (.toml) or an experiment's name.", show_default=False),
]


def _experiment(store: Store, target: str) -> ExperimentId:
    name = target
    if target.endswith(".toml") and Path(target).exists():
        name = config.load(Path(target)).name
    found = store_experiments.find_any(store, name)
    if found is None:
        names = [
            str(r[0])
            for r in store.conn.execute(
                "SELECT DISTINCT name FROM experiments WHERE kind = 'experiment' ORDER BY name"
            )
        ]
        raise BadInput(
            "EXPERIMENT",
            target,
            "give an experiment file or name in "
            + str(store.path)
            + (": " + ", ".join(names) if names else " (it has no experiment yet)"),
        )
    return found


def _metric(cfg: dict[str, Any], rows: list[Any], wanted: str | None) -> tuple[str, bool]:
    """The metric the statistics are about, and whether lower is better: ``--metric`` when
    given, else the workload kind's (a disk experiment's: its first test's MB/s)."""
    workload = cfg.get("workload")  # an experiment file's table; a single command's name
    kind = workload.get("kind") if isinstance(workload, dict) else workload
    if not isinstance(kind, str) and rows:
        kind = rows[0][1].get("kind")
    k = KINDS.get(str(kind))
    summaries = [s for _, _, runs in rows for _, status, s in runs if status == "done"]
    if wanted is None and k is not None and k.metric is not None:
        return k.metric, k.lower_is_better
    if wanted is None:  # a disk experiment: the first test of its profile that ran
        wanted = _first_disk_test(rows, summaries)
    if not any(metric_of(s, wanted) is not None for s in summaries):
        raise BadInput("--metric", wanted, _metric_choices(summaries))
    if k is not None and wanted == k.metric:
        return wanted, k.lower_is_better
    return wanted, lower_is_better(wanted)


def _first_disk_test(rows: list[Any], summaries: list[dict[str, Any]]) -> str:
    """``tests.<the profile's first test that ran>.mbps`` (CrystalDiskMark's first row)."""
    from iolab.workloads.diskmark import profile_tests

    ran = {t for s in summaries for t in s.get("tests") or {}}
    profiles = [p.get("profile") for _, p, _ in rows if p.get("profile") in _DISK_PROFILES]
    order = [t.label for t in profile_tests(profiles[0], mix=True)] if profiles else []
    first = next((t for t in order if t in ran), None) or min(ran, default=None)
    if first is None:
        raise BadInput("EXPERIMENT", "disk", "it has no finished test to report on")
    return f"tests.{first}.mbps"


_DISK_PROFILES = ("default", "nvme", "peak", "real", "db")  # sweeps: give --metric


def _metric_choices(summaries: list[dict[str, Any]]) -> str:
    """What --metric can name, from the first finished run's summary."""
    if not summaries:
        return "the experiment has no finished run yet"
    s = summaries[0]
    names = [k for k in s if metric_of(s, k) is not None][:12]
    tests = s.get("tests")
    if isinstance(tests, dict) and tests:
        fields = sorted({f for t in tests.values() for f in t})
        names.append(f"tests.TEST.{'|'.join(fields)} with TEST one of: " + ", ".join(sorted(tests)))
    return "give a number the runs record: " + ", ".join(names)


def _cells(
    store: Store, exp: ExperimentId, wanted: str | None = None
) -> tuple[list[Any], list[Any], dict[str, Any], str, bool]:
    """The experiment's cells with their metric, the rows they come from (cell id, params,
    runs), its config, the metric and its direction."""
    cfg = store_experiments.config_of(store, exp)
    rows = _with_disk_tests(store, store_experiments.cell_runs(store, exp))
    metric, lower = _metric(cfg, rows, wanted)
    keys = _matrix_keys(cfg)
    reasons = store_experiments.failure_reasons(store, exp)
    return cells_from_runs(rows, keys, metric, reasons), rows, cfg, metric, lower


def _with_disk_tests(store: Store, rows: list[Any]) -> list[Any]:
    """Disk runs of ``iolab disk`` store their passes, not per-test medians in the summary (an
    experiment file's disk runs store both): add ``tests`` from the passes where it is missing."""
    for _, params, runs in rows:
        if "profile" not in params:
            continue
        for run_id, _, summary in runs:
            if "tests" not in summary:
                passes = store.disk_passes(RunId(run_id))
                if passes:
                    summary["tests"] = test_medians(passes)
    return rows


def _matrix_keys(cfg: dict[str, Any]) -> list[str]:
    """The matrix keys in the file's order (the stored config's JSON sorts them)."""
    return list(cfg.get("matrix_keys") or (cfg.get("matrix") or {}).keys())


def report(
    target: TargetArgument,
    results: ResultsOption = None,
    as_json: JsonOption = False,
    html: Annotated[
        Path | None,
        typer.Option(help="Also write one self-contained HTML file (charts, timelines)."),
    ] = None,
    with_disk: Annotated[
        list[int] | None,
        typer.Option(
            "--with-disk",
            help="A stored `iolab disk` run: its profile goes into the HTML report and its "
            "sequential write is the device's limit for efficiency (default: the newest disk "
            "run of each device).",
        ),
    ] = None,
    metric: MetricOption = None,
    timelines: Annotated[
        str,
        typer.Option(
            help="HTML: the timeline of each cell's median run (median) or of every done run "
            "(all; the file grows with the runs)."
        ),
    ] = "median",
) -> None:
    """The findings of an experiment (best cell, the ratios that matter with their 95%
    confidence intervals, device efficiency, the baseline's drift, warnings), then every cell's
    statistics; --html writes them with charts, a timeline of each cell's median run, and the
    environment, into one file."""
    if timelines not in ("median", "all"):
        raise BadInput("--timelines", timelines, "give median or all")
    if html is not None:
        check_output(html, "--html")
    for run_id in with_disk or []:
        check_id(run_id, "--with-disk", "the number of an `iolab disk` run")
    with open_store(results, create=False) as store:
        exp = _experiment(store, target)
        cells, rows, cfg, metric, lower = _cells(store, exp, metric)
        extra = (
            _html_parts(store, rows, metric, with_disk or [], timelines == "all")
            if html is not None
            else None
        )
        base_label = _full_label(cells, _baseline_label(cfg))
        f = analyse(cells, metric, lower, baseline=base_label)
        f.add_context(
            _efficiency(store, rows, cells, with_disk or []),
            _drift(store, rows, cells, metric, base_label),
            query_times(_done_summaries(rows, cells)),
        )
    name = (cfg.get("experiment") or {}).get("name", target)
    direction = "lower is better" if lower else "higher is better"
    if html is not None and extra is not None:
        runs, cell_disks, disks, env, params = extra
        labels = {c_id: c.label for (c_id, _, _), c in zip(rows, cells, strict=True)}
        disks = [(f"{labels[c_id]} · {what}", d) for c_id, what, d in cell_disks] + disks
        write_output(
            html,
            html_report.page(
                f"iolab report: {name}",
                f"{metric} ({direction}); {sum(len(r[2]) for r in rows)} runs in "
                f"{len(cells)} cells; generated {datetime.now().isoformat(timespec='seconds')}",
                f,
                _unit(metric),
                disks=disks,
                runs=[
                    html_report.RunView(labels[c_id], run_id, data, marks)
                    for c_id, run_id, data, marks in runs
                ],
                cell_params={labels[c_id]: p for c_id, p in params.items()},
                environment=env,
            ),
            "--html",
        )
    if as_json:
        print(json.dumps(_findings_json(f), indent=2))
        return
    out.print(findings_text(f, f"{name} · {metric} ({direction})"))
    if html is not None:
        out.print(f"[dim]wrote {escape(str(html))}[/]")


def _baseline_label(cfg: dict[str, Any]) -> str | None:
    """The label of ``experiment.baseline`` (a partial one: only the keys it names)."""
    base = (cfg.get("experiment") or {}).get("baseline")
    if not base:
        return None
    return label_of(matrix_values({**base}, [k for k in _matrix_keys(cfg) if k in base]))


def _unit(metric: str) -> str:
    return "seconds" if metric.endswith("_seconds") else metric


def _html_parts(
    store: Store, rows: list[Any], metric: str, disk_runs: list[int], every_run: bool = False
) -> tuple[list[Any], list[Any], list[Any], dict[str, Any] | None, dict[str, Any]]:
    """What the HTML report shows beyond the statistics: each cell's median run (or every
    done run) with its probes (and, for disk cells, its disk grid), the disk runs asked for,
    the environment of the first run, each cell's params."""
    from iolab.analysis.disk import summarize as disk_summarize

    runs = []
    cell_disks: list[tuple[str, str, list[Any]]] = []
    env = None
    params = {}
    for cell_id, p, cell_runs in rows:
        params[cell_id] = p
        values = (
            (metric_of(s, metric), run_id) for run_id, status, s in cell_runs if status == "done"
        )
        done = [(v, run_id) for v, run_id in values if v is not None]
        if not done:
            continue
        chosen = [r for _, r in done] if every_run else [sorted(done)[(len(done) - 1) // 2][1]]
        for run_id in chosen:
            data = store.probes(run_id, names=timeline_report.SERIES)
            if data is not None:
                queries = store.query_results(RunId(run_id)) if p.get("kind") == "tpch" else []
                runs.append((cell_id, run_id, data, timeline_report.query_marks(queries)))
            if p.get("kind") == "disk":  # a disk cell: its run's CrystalDiskMark grid
                passes = store.disk_passes(RunId(run_id))
                cell_disks.append((cell_id, f"run {run_id}", disk_summarize(passes)))
        if env is None:
            record = store.run(chosen[0])
            env = store.environment(record.env_id) if record.env_id else None
    disks = []
    for run_id in disk_runs:
        record = _disk_run(store, run_id)
        disks.append(
            (str(record.params.get("path", run_id)), disk_summarize(store.disk_passes(record.id)))
        )
    return runs, cell_disks, disks, env, params


def _disk_run(store: Store, run_id: int) -> RunRecord:
    try:
        record = store.run(run_id)
    except BadInput as exc:  # no such run: said of the option that named it
        raise BadInput("--with-disk", run_id, exc.allowed) from None
    if record.workload != "disk":
        raise BadInput("--with-disk", run_id, "give the number of an `iolab disk` run")
    return record


def _efficiency(
    store: Store, rows: list[Any], cells: list[Any], disk_runs: list[int]
) -> list[Efficiency]:
    """Each populate cell's device MB/s against the device's sequential write, from the disk
    runs given, else the newest finished disk run of each device in the results database."""
    from iolab.analysis.disk import summarize as disk_summarize

    wanted = {
        device_key(name, d.get("testbed"))
        for _, _, runs in rows
        for _, _, s in runs
        for name, d in (s.get("devices") or {}).items()
    }
    if not wanted:
        return []  # no run of this experiment counted device bytes (not populate)
    given = [(RunId(r), _disk_run(store, r).env_id) for r in disk_runs]
    chosen = given or store_experiments.done_disk_runs(store)
    limits: dict[str, Limit] = {}
    for run_id, env_id in chosen:
        if limits.keys() >= wanted:
            break  # every device the experiment wrote to has its limit
        device = disk_device(store.environment(env_id)) if env_id is not None else None
        if device is None or device in limits or device not in wanted:
            continue
        limit = seq_write_limit(run_id, device, disk_summarize(store.disk_passes(run_id)))
        if limit is not None:
            limits[device] = limit
    if not limits:
        return []
    return populate_efficiency(_done_summaries(rows, cells), limits)


def _done_summaries(rows: list[Any], cells: list[Any]) -> list[tuple[str, list[dict[str, Any]]]]:
    """Each cell's label with the summaries of its done runs."""
    return [
        (cell.label, [s for _, status, s in runs if status == "done"])
        for cell, (_, _, runs) in zip(cells, rows, strict=True)
    ]


def _drift(
    store: Store, rows: list[Any], cells: list[Any], metric: str, baseline: str | None
) -> Drift | None:
    """The baseline cell's metric over its runs' start times."""
    if baseline is None:
        return None
    for cell, (_, _, runs) in zip(cells, rows, strict=True):
        if cell.label != baseline:
            continue
        found = {run_id: metric_of(s, metric) for run_id, status, s in runs if status == "done"}
        done = {run_id: v for run_id, v in found.items() if v is not None}
        times = store_experiments.started_at(store, list(done))
        return baseline_drift(baseline, [(times[r], v) for r, v in done.items() if r in times])
    return None


def _full_label(cells: list[Any], partial: str | None) -> str | None:
    if partial is None:
        return None
    wanted = set(partial.split())
    found = [c.label for c in cells if wanted <= set(c.label.split())]
    return found[0] if len(found) == 1 else None


def _ratio_json(r: Ratio) -> dict[str, Any]:
    return {
        "a": r.a,
        "b": r.b,
        "speedup": r.better,
        "ci_low": r.better_low,
        "ci_high": r.better_high,
        "p_value": r.comparison.p_value,
        "significant": r.significant,
        "sentence": sentence(r),
    }


def _findings_json(f: Any) -> dict[str, Any]:
    return {
        "metric": f.metric,
        "lower_is_better": f.lower_is_better,
        "best": f.best.cell.label if f.best else None,
        "best_vs": [_ratio_json(r) for r in f.best_vs],
        "dimensions": [
            {
                "key": d.key,
                "a": d.a,
                "b": d.b,
                "mean_speedup": d.mean_better,
                "pairs": [_ratio_json(p) for p in d.pairs],
            }
            for d in f.dimensions
        ],
        "warnings": f.warnings,
        "efficiency": [
            {
                "cell": e.cell,
                "device": e.device,
                "roles": list(e.roles),
                "write_mb_per_second": e.mbps,
                "runs": e.runs,
                "limit_mb_per_second": e.limit.mbps,
                "limit_test": e.limit.test,
                "limit_disk_run": e.limit.run_id,
                "share": e.share,
            }
            for e in f.efficiency
        ],
        "drift": None
        if f.drift is None
        else {
            "cell": f.drift.cell,
            "hours": list(f.drift.hours),
            "values": list(f.drift.values),
            "change": f.drift.trend.change,
            "p_value": f.drift.trend.p_value,
            "significant": f.drift.trend.significant,
        },
        "queries": [
            {
                "cell": q.cell,
                "runs": q.runs,
                "median_seconds": {str(n): v for n, v in q.seconds.items()},
            }
            for q in f.queries
        ],
        "cells": [
            {
                "label": c.cell.label,
                "values": dict(c.cell.values),
                "runs": list(c.cell.metric),
                "failed": c.cell.failed,
                **(
                    {
                        "n": c.summary.n,
                        "mean": c.summary.mean,
                        "median": c.summary.median,
                        "sd": c.summary.sd,
                        "cv": c.summary.cv,
                        "min": c.summary.min,
                        "max": c.summary.max,
                        "ci_low": c.summary.ci_low,
                        "ci_high": c.summary.ci_high,
                        "outliers": list(c.summary.outliers),
                    }
                    if c.summary
                    else {"n": 0}
                ),
            }
            for c in f.cells
        ],
    }


_RUNS = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*$")


def _run_ids(store: Store, spec: str, field: str) -> list[int]:
    """``3``, ``3,4,9``, ``3-7``: each id a run of the results database, each range ascending."""
    (top,) = store.conn.execute("SELECT COALESCE(MAX(id), 0) FROM runs").fetchone()
    allowed = f"give run ids from 1 to {top} (see `iolab results list`), e.g. 3,4,9 or 3-7"
    ids: list[int] = []
    for part in spec.split(","):
        lo_text, _, hi_text = part.partition("-")
        lo, hi = int(lo_text), int(hi_text or lo_text)
        if not 1 <= lo <= hi <= top:
            raise BadInput(field, spec, allowed)
        ids += range(lo, hi + 1)
    return ids


def _sample(
    store: Store, spec: str, wanted: str | None, field: str
) -> tuple[str, list[float], str, bool]:
    """Run ids (``3``, ``3,4,9``, ``3-7``) or ``EXPERIMENT[:CELL]``: the metric's values."""
    if _RUNS.match(spec):
        ids = _run_ids(store, spec, field)
        records = [store.run(i) for i in ids]
        kinds = {r.workload for r in records}
        if len(kinds) != 1:
            raise BadInput(field, spec, "give runs of one workload")
        params = {**records[0].params, "kind": kinds.pop()}
        rows = [("", params, [(r.id, r.status.value, r.summary) for r in records])]
        rows = _with_disk_tests(store, rows)
        metric, lower = _metric({}, rows, wanted)
        found = (metric_of(r.summary, metric) for r in records if r.status.value == "done")
        return f"runs {spec}", [v for v in found if v is not None], metric, lower
    name, _, cell = spec.partition(":")
    exp = _experiment(store, name)
    cells, _, _, metric, lower = _cells(store, exp, wanted)
    keys = set(cell.split())
    chosen = [c for c in cells if keys <= set(c.label.split())]
    if len(chosen) != 1:
        raise BadInput(
            "A/B",
            spec,
            f"name one of {len(cells)} cells as 'EXPERIMENT:KEY=VALUE ...' ({len(chosen)} "
            "match), e.g. " + "; ".join(f"'{name}:{c.label}'" for c in cells[:3]),
        )
    return f"{name} {chosen[0].label}".strip(), list(chosen[0].metric), metric, lower


def compare(
    a: Annotated[str, typer.Argument(help="Runs (3,4,9 or 3-7) or EXPERIMENT[:CELL].")],
    b: Annotated[str, typer.Argument(help="The same, to compare against.")],
    metric: MetricOption = None,
    results: ResultsOption = None,
    as_json: JsonOption = False,
) -> None:
    """Two sets of runs side by side: means, the ratio with its 95% interval, significance."""
    with open_store(results, create=False) as store:
        la, va, ma, lower = _sample(store, a, metric, "A")
        lb, vb, mb, _ = _sample(store, b, metric, "B")
    if ma != mb:
        raise BadInput("B", b, f"give runs measuring {ma}, as A does (B measures {mb})")
    if not va or not vb:
        raise BadInput("A/B", a if not va else b, "give runs that finished (status done)")
    r = ratio(la, va, lb, vb, lower, ma)
    if as_json:
        print(
            json.dumps({"metric": ma, "a_values": va, "b_values": vb, **_ratio_json(r)}, indent=2)
        )
        return
    out.print(
        f"{ma}: {la}: mean {sum(va) / len(va):,.4g} (n = {len(va)}); "
        f"{lb}: mean {sum(vb) / len(vb):,.4g} (n = {len(vb)})"
    )
    out.print(sentence(r))


def export(
    target: TargetArgument,
    fmt: Annotated[str, typer.Option("--format", help="csv, json or parquet.")] = "csv",
    output: Annotated[
        Path | None,
        typer.Option("-o", "--output", help="File to write (csv/json: default stdout)."),
    ] = None,
    results: ResultsOption = None,
) -> None:
    """Every run of an experiment, one row each (cell values, status, summary numbers), for
    notebooks."""
    if fmt not in ("csv", "json", "parquet"):
        raise BadInput.choice("--format", fmt, ["csv", "json", "parquet"])
    if fmt == "parquet" and output is None:
        raise BadInput("--output", None, "give a file for parquet output, e.g. -o runs.parquet")
    if output is not None:
        check_output(output, "--output")
    with open_store(results, create=False) as store:
        exp = _experiment(store, target)
        cfg = store_experiments.config_of(store, exp)
        keys = _matrix_keys(cfg)
        rows = []
        for cell_id, params, runs in store_experiments.cell_runs(store, exp):
            values = matrix_values(params, keys)
            for run_id, status, summary in runs:
                row: dict[str, Any] = {"run": run_id, "cell": cell_id, "status": status, **values}
                for k, v in summary.items():
                    if isinstance(v, int | float | str | bool) or v is None:
                        row[k] = v
                rows.append(row)
    columns: list[str] = []
    for row in rows:
        columns += [k for k in row if k not in columns]
    if fmt == "json":
        text = json.dumps(rows, indent=2)
    elif fmt == "csv":
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
        text = buf.getvalue()
    else:
        assert output is not None
        write_output(output, _parquet(rows, columns), "--output")
        out.print(f"wrote {len(rows)} runs to {escape(str(output))}")
        return
    if output is None:
        print(text, end="" if text.endswith("\n") else "\n")
    else:
        write_output(output, text, "--output")
        out.print(f"wrote {len(rows)} runs to {escape(str(output))}")


def _parquet(rows: list[dict[str, Any]], columns: list[str]) -> bytes:
    """Parquet through DuckDB (the engines extra), reading the rows as newline-delimited JSON;
    DuckDB writes into a scratch directory, the caller writes the bytes where they go."""
    try:
        import duckdb
    except ImportError:
        from iolab.errors import MissingTool

        raise MissingTool("duckdb", "pip install 'iolab[engines]' for parquet export") from None
    import tempfile

    with tempfile.TemporaryDirectory(prefix="iolab-export-") as scratch:
        source, target = Path(scratch) / "runs.json", Path(scratch) / "runs.parquet"
        source.write_text(
            "".join(json.dumps({c: row.get(c) for c in columns}) + "\n" for row in rows)
        )
        con = duckdb.connect()
        try:
            con.execute(
                f"COPY (SELECT * FROM read_json_auto('{source}')) TO '{target}' (FORMAT parquet)"
            )
        finally:
            con.close()
        return target.read_bytes()
