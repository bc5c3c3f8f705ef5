"""``iolab report``, ``iolab compare`` and ``iolab export``: answers from the results database.

The library builds them (:func:`iolab.report.build`, :mod:`iolab.report.comparison`,
:mod:`iolab.report.export`); this module parses flags and renders.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from iolab.cli.console import stdout as out
from iolab.cli.options import JsonOption, ReadResultsOption
from iolab.cli.output import check_id, check_output, write_output
from iolab.errors import BadInput

MetricOption = Annotated[
    str | None,
    typer.Option(
        help="What to compare: a number of the runs' summaries (rows_per_second, wal_bytes, "
        "'tests.SEQ1M Q8T1 read.mbps', ...). Default: what the experiment measures given what it "
        "fixed (populate: elapsed_seconds for a count of rows, rows_per_second for a duration, "
        "the commits' p99 latency for a rate; TPC-H: total_seconds; a disk experiment's first "
        "test's MB/s); a number it holds constant by design (a timed load's elapsed_seconds) is "
        "refused. Which way is better comes from the number's declaration (iolab.metrics).",
        show_default=False,
    ),
]
TargetArgument = Annotated[
    str,
    typer.Argument(
        help="An experiment file (.toml), an experiment's name or its id (`iolab run` prints "
        "it). A name several experiments share (single commands make one per run) is refused "
        "with each one's id, name and time.",
        show_default=False,
    ),
]


def report(
    target: TargetArgument,
    results: ReadResultsOption = None,
    as_json: JsonOption = False,
    html: Annotated[
        Path | None,
        typer.Option(
            help="Also write one self-contained HTML file (charts, timelines, latency by "
            "percentile per cell beside the WAL device's fdatasync latency): a new file or one "
            "iolab wrote, never the results database or another file."
        ),
    ] = None,
    with_disk: Annotated[
        list[int] | None,
        typer.Option(
            "--with-disk",
            help="A stored `iolab disk` run: its profile goes into the HTML report and its "
            "sequential write is the device's limit for efficiency, its commit test the WAL "
            "device's line on the latency chart (default: the newest disk run of each device "
            "finished by the experiment's end, else the first one since).",
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
    png: Annotated[
        Path | None,
        typer.Option(
            "--png",
            help="Write every chart of the HTML report into this directory as PNG (drawn by a "
            "headless Chromium) and SVG, numbered in page order, for slides.",
            show_default=False,
        ),
    ] = None,
    chart_by: Annotated[
        str | None,
        typer.Option(
            "--chart-by",
            help="HTML: the matrix key on the charts' x axis and, after a comma, the one drawn "
            "as coloured series (e.g. layout,connections); the other keys get a chart each. "
            "Default: a layout-like key on x, a count-like key in colour.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """The findings of an experiment: the best cell, each significant difference with its 95%
    confidence interval and where the limit moved between its cells, one line for the pairs
    that differ in nothing significant with about how many more runs per cell would resolve a
    difference of 10 %, each matrix key's gain, device efficiency, the baseline's drift and
    warnings; then every cell's statistics and the Why (what limited each cell:
    docs/diagnosis.md); --html writes them with charts, a timeline of each cell's median run, each
    operation kind's latency by percentile (with the fdatasync latency of the WAL device's
    `iolab disk` commit test) and the environment, into one file."""
    from iolab import report as report_lib
    from iolab.report import document
    from iolab.report import html as html_report
    from iolab.report.findings import report_text
    from iolab.store import open_store

    if timelines not in ("median", "all"):
        raise BadInput("--timelines", timelines, "give median or all")
    if html is not None:
        check_output(html, "--html", results=results)
    if png is not None:
        check_chart_dir(png)
    for run_id in with_disk or []:
        check_id(run_id, "--with-disk", "the number of an `iolab disk` run")
    with open_store(results, create=False) as store:
        built = report_lib.build(
            store,
            target,
            metric,
            with_disk=with_disk or (),
            timelines=None
            if html is None and png is None
            else ("all" if timelines == "all" else "median"),
        )
    generated = datetime.now().isoformat(timespec="seconds")
    by = [k.strip() for k in chart_by.split(",")] if chart_by else []
    page = html_report.report_page(built, generated, by) if html or png else ""
    if html is not None:
        write_output(html, page, "--html", results)
    if png is not None:
        files = html_report.chart_files(page)
        write_charts(png, files, results)
        out.print(f"[dim]wrote {len(files)} charts (PNG and SVG) to {escape(str(png))}[/]")
    if as_json:
        print(document.report_json(built))
        return
    out.print(report_text(built))
    if html is not None:
        out.print(f"[dim]wrote {escape(str(html))}[/]")


def compare(
    a: Annotated[
        str,
        typer.Argument(
            help="Runs (3,4,9 or 3-7), or EXPERIMENT[:CELL]: an experiment's file, name or id, "
            "then after ':' the cell's KEY=VALUE words (engine=sqlite layout=wal). A bare number "
            "is a run: an experiment by id takes the ':' (2: or 2:engine=sqlite)."
        ),
    ],
    b: Annotated[str, typer.Argument(help="The same, to compare against.")],
    metric: MetricOption = None,
    results: ReadResultsOption = None,
    as_json: JsonOption = False,
) -> None:
    """Two sets of runs side by side: means, the ratio in words with its 95% interval and
    significance, A first and one way whatever the metric's direction ("A was 2.00x slower than
    B"; a latency "2.00x lower", lower being better), with where the limit moved when the
    difference is significant and, when not, about how many more runs per side would resolve
    a difference of 10 %; for populate runs, each side's operation latencies merged (p50 ..
    p99.99, max) and A's against B's in words; what limited each side."""
    from iolab.report import document, why
    from iolab.report import populate as populate_report
    from iolab.report.comparison import compare as compare_runs
    from iolab.store import open_store

    with open_store(results, create=False) as store:
        c = compare_runs(store, a, b, metric)
        limits = why.compare(
            store,
            (c.a.label, c.a.runs),
            (c.b.label, c.b.runs),
            c.ratio,
            (c.a.values, c.b.values),
        )
    if as_json:
        print(json.dumps(document.comparison_document(c) | {"why": limits.document}, indent=2))
        return
    out.print(
        f"{c.metric} ({c.a.declaration.direction}): {c.a.label}: mean {c.a.mean:,.4g} "
        f"(n = {len(c.a.values)}); "
        f"{c.b.label}: mean {c.b.mean:,.4g} (n = {len(c.b.values)})"
    )
    out.print(escape(limits.line))
    for kind, (la, lb) in c.latency.items():
        out.print(populate_report.latency_sides(kind, c.a.label, la, c.b.label, lb))
    for line in limits.lines:
        out.print(escape(line))


def export(
    target: TargetArgument,
    fmt: Annotated[str, typer.Option("--format", help="csv, json or parquet.")] = "csv",
    output: Annotated[
        Path | None,
        typer.Option(
            "-o",
            "--output",
            help="File to write (csv/json: default stdout): a new file or one iolab wrote, "
            "never the results database or another file.",
        ),
    ] = None,
    histograms: Annotated[
        Path | None,
        typer.Option(
            "--histograms",
            help="Write each run's latency histograms instead, one HdrHistogram interval log "
            "per run and operation kind (run-ID-KIND.hlog; a disk run's commit test: "
            "run-ID-TEST-fdatasync.hlog), into this directory.",
        ),
    ] = None,
    results: ReadResultsOption = None,
) -> None:
    """Every run of an experiment, one row each (cell values, status, summary numbers), for
    notebooks; or with --histograms, every run's latency histograms as interval logs."""
    from iolab.report import export as export_lib
    from iolab.store import open_store

    if histograms is not None:
        _export_histograms(target, histograms, results)
        return
    if fmt not in ("csv", "json", "parquet"):
        raise BadInput.choice("--format", fmt, ["csv", "json", "parquet"])
    if fmt == "parquet" and output is None:
        raise BadInput("--output", None, "give a file for parquet output, e.g. -o runs.parquet")
    if output is not None:
        check_output(output, "--output", results=results)
    with open_store(results, create=False) as store:
        table = export_lib.run_table(store, target)
    if fmt == "parquet":
        assert output is not None
        write_output(output, export_lib.parquet_bytes(table), "--output", results)
        out.print(f"wrote {len(table.rows)} runs to {escape(str(output))}")
        return
    text = export_lib.json_text(table) if fmt == "json" else export_lib.csv_text(table)
    if output is None:
        print(text, end="" if text.endswith("\n") else "\n")
    else:
        write_output(output, text, "--output", results)
        out.print(f"wrote {len(table.rows)} runs to {escape(str(output))}")


def check_chart_dir(directory: Path) -> None:
    """--png: a directory (made when missing) with no chart file of iolab's in it already."""
    if directory.exists() and not directory.is_dir():
        raise BadInput("--png", str(directory), "give a directory")
    taken = sorted(p.name for p in directory.glob("[0-9][0-9]-*.png")) if directory.exists() else []
    if taken:
        raise BadInput(
            "--png", str(directory), f"it already holds {taken[0]}; give an empty or new directory"
        )


def write_charts(directory: Path, files: list[tuple[str, str]], results: Path | None) -> None:
    """Each chart as STEM.svg and STEM.png (a headless Chromium draws the SVG)."""
    from iolab.report.raster import browser, svg_to_png

    browser()  # missing: say so before writing anything
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BadInput("--png", str(directory), f"cannot write there: {exc.strerror}") from None
    for stem, _ in files:  # every name first: nothing is written when one is taken
        for suffix in (".svg", ".png"):
            check_output(directory / f"{stem}{suffix}", "--png", results=results)
    for stem, svg in files:
        write_output(directory / f"{stem}.svg", svg, "--png", results)
        write_output(directory / f"{stem}.png", svg_to_png(svg), "--png", results)


def _export_histograms(target: str, directory: Path, results: Path | None) -> None:
    """Interval logs into ``directory`` (made when missing); a file already there is never
    overwritten."""
    from iolab.report import export as export_lib
    from iolab.store import open_store

    with open_store(results, create=False) as store:
        logs = export_lib.histogram_logs(store, target)
    if not logs:
        raise BadInput(
            "EXPERIMENT",
            target,
            "give an experiment with populate runs that timed operations, or disk runs of the "
            "commit test",
        )
    if directory.exists() and not directory.is_dir():
        raise BadInput("--histograms", str(directory), "give a directory")
    taken = [name for name, _ in logs if (directory / name).exists()]
    if taken:
        raise BadInput(
            "--histograms",
            str(directory),
            f"it already holds {taken[0]}; give an empty or new directory",
        )
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BadInput(
            "--histograms", str(directory), f"cannot write there: {exc.strerror}"
        ) from None
    for name, text in logs:
        write_output(directory / name, text, "--histograms", results)
    out.print(f"wrote {len(logs)} interval logs to {escape(str(directory))}")
