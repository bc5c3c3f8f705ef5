"""``iolab timeline RUN -o FILE``: the run's probes on one time axis (seed 003's picture)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from iolab.cli.console import stdout as out
from iolab.cli.options import ResultsOption
from iolab.errors import BadInput
from iolab.report import timeline as timeline_report
from iolab.report.raster import svg_to_png
from iolab.store import open_store

FORMATS = (".html", ".png", ".svg")


def timeline(
    run_id: Annotated[int, typer.Argument(metavar="RUN", help="Run id from `iolab results list`.")],
    output: Annotated[
        Path,
        typer.Option(
            "-o",
            "--output",
            help="File to write: .html (self-contained, with checkpoints and waits), .svg, or "
            ".png (drawn by a headless Chromium).",
        ),
    ],
    results: ResultsOption = None,
) -> None:
    """Draw a run's timeline: rows/s, pages allocated/s, device MB/s, I/O latency and queue
    depth per role, and CPU, on one time axis with checkpoints shaded.
    """
    suffix = output.suffix.lower()
    if suffix not in FORMATS:
        raise BadInput("--output", str(output), "name a .html, .svg or .png file")
    if not output.parent.is_dir():
        raise BadInput("--output", str(output), f"the directory {output.parent} does not exist")
    with open_store(results, create=False) as store:
        run = store.run(run_id)
        data = store.probes(run.id)
        marks = timeline_report.query_marks(store.query_results(run.id))
    if data is None or not data.series:
        raise BadInput(
            "RUN",
            run_id,
            "this run has no probe series (recorded with --no-probes, or before probes "
            "existed); pick another with `iolab results list`",
        )
    title = f"run {run.id} · {run.experiment} · {run.status.value} · {run.started_at or ''}"
    if suffix == ".html":
        lines = [
            f"{len(data.series)} series sampled every {data.interval:g} s over "
            f"{data.duration:.1f} s; shaded: checkpoints"
            + ("; dashed: where each query began." if marks else "."),
        ]
        output.write_text(timeline_report.html_page(data, title, lines, run.id, marks))
    else:
        svg = timeline_report.svg(data, title, marks)
        if suffix == ".svg":
            output.write_text(svg)
        else:
            svg_to_png(svg, output)
    out.print(f"wrote {output} ({output.stat().st_size:,} bytes)")
