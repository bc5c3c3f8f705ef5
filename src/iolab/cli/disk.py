"""``iolab disk PATH``: a CrystalDiskMark / SQLIO-style profile of the storage behind PATH."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from iolab.cli.console import stdout as out
from iolab.cli.options import (
    JsonOption,
    NoProbesOption,
    ResultsOption,
    SampleIntervalOption,
    sample_interval,
)
from iolab.units import format_bytes

PROFILE_HELP = (
    "default: CrystalDiskMark 8 (SEQ1M Q8T1, SEQ1M Q1T1, RND4K Q32T1, RND4K Q1T1); "
    "nvme: SEQ1M Q8T1, SEQ128K Q32T1, RND4K Q32T16, RND4K Q1T1; peak: SEQ1M Q8T1, RND4K Q32T16; "
    "real: SEQ1M Q1T1, RND4K Q1T1; db: 8K random at QD 1/8/32, 64K/256K scans, 1M writes and "
    "the commit test (8K write + fdatasync); quick: SEQ1M Q8T1, RND4K Q1T1 and the commit test "
    "(iolab demo's headline); sweep: the SQLIO matrix of --bs x --qd x --threads "
    "x --rw."
)


def disk(
    path: Annotated[
        Path,
        typer.Argument(
            help="Directory on the storage to test; device:NAME[/sub] for a testbed device.",
            show_default=False,
        ),
    ],
    profile: Annotated[str, typer.Option(help=PROFILE_HELP)] = "default",
    mix: Annotated[
        bool, typer.Option("--mix", help="Add the R70/W30 mixed test to each row.")
    ] = False,
    size: Annotated[
        str,
        typer.Option(
            help="Test file size (written in full before measuring); at least 1 MiB and the "
            "largest --bs."
        ),
    ] = "1GiB",
    runs: Annotated[
        int, typer.Option(help="Measured passes per test (after one discarded pass).")
    ] = 5,
    duration: Annotated[str, typer.Option(help="Length of each pass.")] = "5s",
    interval: Annotated[str, typer.Option(help="Pause between tests.")] = "5s",
    data: Annotated[
        str, typer.Option(help="Test data: random (incompressible) or zero (0Fill).")
    ] = "random",
    direct: Annotated[
        bool,
        typer.Option("--direct/--buffered", help="O_DIRECT (default) or through the page cache."),
    ] = True,
    bs: Annotated[str | None, typer.Option(help="sweep: block sizes, e.g. 4k,8k,64k.")] = None,
    qd: Annotated[str | None, typer.Option(help="sweep: queue depths, e.g. 1,8,32.")] = None,
    threads: Annotated[str | None, typer.Option(help="sweep: threads, e.g. 1,4.")] = None,
    rw: Annotated[
        str | None, typer.Option(help="sweep: modes among randread,randwrite,read,write.")
    ] = None,
    rwmix: Annotated[
        int | None, typer.Option(help="sweep: add a random mix with this read %.")
    ] = None,
    interval_s: SampleIntervalOption = "1s",
    no_probes: NoProbesOption = False,
    results: ResultsOption = None,
    as_json: JsonOption = False,
) -> None:
    """Profile the storage behind PATH with fio, as CrystalDiskMark or SQLIO would.

    The test file is written in full first and removed at the end, also on Ctrl-C. Each test
    runs one discarded pass and then --runs passes; the grid shows the best (as CrystalDiskMark
    does) above the median. Every pass is stored in the results database, with what the probes
    saw of the test file's device meanwhile (`iolab results show`, `iolab timeline`).
    """
    from iolab.analysis.disk import spread_warnings, summarize
    from iolab.cli.progress import ProgressView
    from iolab.fio.runner import fio_path, fio_version
    from iolab.report import disk as disk_report
    from iolab.report import probes as probes_report
    from iolab.runner.single import CommandRun, command_name, execute
    from iolab.store import open_store
    from iolab.testbed import resolve_path
    from iolab.workloads.disk.options import DiskWorkload
    from iolab.workloads.disk.workload import WORKLOAD, disk_options
    from iolab.workloads.interface import command_layout, from_flags

    fio = fio_path()
    path = resolve_path(str(path), "PATH")
    workload = from_flags(
        DiskWorkload,
        {
            "kind": "disk",
            **{"profile": profile, "size": size, "runs": runs, "duration": duration},
            **{"interval": interval, "data": data, "direct": direct, "mix": mix},
            **{"bs": bs, "qd": qd, "threads": threads, "rw": rw, "rwmix": rwmix},
        },
    )
    params = {
        **workload.model_dump(),
        **command_layout([path]),
        "sample_interval": sample_interval(interval_s, no_probes),
    }
    options = disk_options(params, path)
    view = ProgressView()
    body, roles, versions = WORKLOAD.prepare(params, Path, view)  # as a cell of a file
    name = command_name(f"disk {path.resolve()}", {})  # its path is its layout
    spec = CommandRun(name, "disk", options.params(), roles, versions)
    with open_store(results) as store:
        with view:
            run_id, outcome = execute(store, spec, body, view)
        summaries = summarize(outcome.disk_passes)
    if as_json:
        doc = {
            "run": run_id,
            "path": str(path.resolve()),
            "profile": profile,
            "size_bytes": options.size,
            "fio": fio_version(),
            "tests": disk_report.summary_json(summaries),
            "warnings": view.warnings + spread_warnings(summaries),
        }
        if outcome.probes is not None:
            doc["probes"] = probes_report.probes_json(outcome.probes)
        print(json.dumps(doc, indent=2))
        return
    title = (
        f"{path.resolve()} · {profile} · {format_bytes(options.size)} · {runs} x "
        f"{options.duration:g}s · fio {fio_version()} ({fio})"
    )
    out.print(disk_report.grid(summaries, title))
    out.print(disk_report.details(summaries))
    for text in spread_warnings(summaries):
        out.print(f"[yellow]warning:[/] {escape(text)}")
    out.print(f"[dim]stored as run {run_id} in {escape(str(store.path))}[/]")
    if outcome.probes is not None:
        out.print(probes_report.recorded_line(outcome.probes, run_id))
