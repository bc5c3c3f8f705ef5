"""``iolab timeline RUN -o FILE``: the run's probes on one time axis (seed 003's picture)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from iolab.cli.console import stdout as out
from iolab.cli.options import ReadResultsOption
from iolab.cli.output import check_id, check_output, write_output
from iolab.errors import BadInput

FORMATS = (".html", ".svg", ".png")


def timeline(
    run_id: Annotated[int, typer.Argument(metavar="RUN", help="Run id from `iolab results list`.")],
    output: Annotated[
        Path,
        typer.Option(
            "-o",
            "--output",
            help="File to write: .html (self-contained and interactive: zoom and pan every "
            "panel at once, values on hover; with checkpoints and waits), .svg, or .png (drawn "
            "by a headless Chromium) for slides and print. A new file or one iolab wrote, "
            "never the results database or another file.",
        ),
    ],
    results: ReadResultsOption = None,
) -> None:
    """Draw a run's timeline: rows/s, pages allocated/s, device MB/s, I/O latency and queue
    depth per role, and CPU, on one time axis with checkpoints shaded.
    """
    from iolab.report import timeline as timeline_report
    from iolab.report.raster import svg_to_png
    from iolab.store import open_store

    check_id(run_id, "RUN")
    check_output(output, "--output", FORMATS, results)
    suffix = output.suffix.lower()
    with open_store(results, create=False) as store:
        run = store.run(run_id)
        data = store.probes(run.id)
        marks = timeline_report.query_marks(store.query_results(run.id))
    steady = timeline_report.steady_span(run.summary, data)
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
            + ("; dashed: where each query began" if marks else "")
            + ("; dashed on rows/s: the steady part at its rate." if steady else "."),
        ]
        written: str | bytes = timeline_report.html_page(data, title, lines, run.id, marks, steady)
    else:
        written = timeline_report.svg(data, title, marks, steady)
        if suffix == ".png":
            written = svg_to_png(written)
    write_output(output, written, "--output", results)
    size = len(written.encode() if isinstance(written, str) else written)
    out.print(f"wrote {escape(str(output))} ({size:,} bytes)")
