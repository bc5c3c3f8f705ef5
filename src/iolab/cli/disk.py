"""``iolab disk PATH``: a CrystalDiskMark / SQLIO-style profile of the storage behind PATH."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from iolab.analysis.disk import spread_warnings, summarize
from iolab.cli.console import stdout as out
from iolab.cli.options import (
    JsonOption,
    NoProbesOption,
    ResultsOption,
    SampleIntervalOption,
    sample_interval,
)
from iolab.cli.progress import ProgressView
from iolab.errors import BadInput
from iolab.fio.jobs import DataPattern
from iolab.fio.runner import check_parallelism, fio_path, fio_version
from iolab.report import disk as disk_report
from iolab.report import probes as probes_report
from iolab.runner.single import CommandRun, execute
from iolab.store import open_store
from iolab.testbed import resolve_path
from iolab.units import format_bytes, parse_duration, parse_int_list, parse_size
from iolab.workloads.diskmark import (
    PROFILES,
    SWEEP_MODES,
    DiskOptions,
    SweepSpec,
    check_target,
    run_profile,
)

PROFILE_HELP = (
    "default: CrystalDiskMark 8 (SEQ1M Q8T1, SEQ1M Q1T1, RND4K Q32T1, RND4K Q1T1); "
    "nvme: SEQ1M Q8T1, SEQ128K Q32T1, RND4K Q32T16, RND4K Q1T1; peak: SEQ1M Q8T1, RND4K Q32T16; "
    "real: SEQ1M Q1T1, RND4K Q1T1; db: 8K random at QD 1/8/32, 64K/256K scans, 1M writes and "
    "the commit test (8K write + fdatasync); sweep: the SQLIO matrix of --bs x --qd x --threads "
    "x --rw."
)


def _sweep(
    bs: str | None, qd: str | None, threads: str | None, rw: str | None, rwmix: int | None
) -> SweepSpec:
    spec = SweepSpec()
    modes = spec.modes
    if rw is not None:
        modes = tuple(m.strip() for m in rw.split(",") if m.strip())
        for m in modes:
            if m not in SWEEP_MODES:
                raise BadInput.choice("--rw", m, SWEEP_MODES)
    if rwmix is not None and not 0 <= rwmix <= 100:
        raise BadInput("--rwmix", rwmix, "give the read share in percent, 0 to 100")
    queue_depths = tuple(parse_int_list(qd, "--qd")) if qd is not None else spec.queue_depths
    thread_counts = (
        tuple(parse_int_list(threads, "--threads")) if threads is not None else spec.threads
    )
    check_parallelism(list(queue_depths), list(thread_counts))
    return SweepSpec(
        block_sizes=tuple(parse_size(b, "--bs") for b in bs.split(",")) if bs else spec.block_sizes,
        queue_depths=queue_depths,
        threads=thread_counts,
        modes=modes,
        rwmix=rwmix,
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
        str, typer.Option(help="Test file size (written in full before measuring).")
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
    fio = fio_path()
    path = resolve_path(str(path), "PATH")
    if profile not in PROFILES:
        raise BadInput.choice("--profile", profile, PROFILES)
    sweep_given = any(v is not None for v in (bs, qd, threads, rw, rwmix))
    if sweep_given and profile != "sweep":
        raise BadInput(
            "--profile", profile, "--bs/--qd/--threads/--rw/--rwmix go with --profile sweep"
        )
    if runs < 1:
        raise BadInput("--runs", runs, "give at least 1 measured pass")
    if data not in {d.value for d in DataPattern}:
        raise BadInput.choice("--data", data, [d.value for d in DataPattern])
    dur = parse_duration(duration, "--duration")
    if dur < 1:
        raise BadInput("--duration", duration, "give at least 1s per pass")
    options = DiskOptions(
        path=path,
        profile=profile,
        size=parse_size(size, "--size"),
        runs=runs,
        duration=dur,
        interval=parse_duration(interval, "--interval"),
        data=DataPattern(data),
        direct=direct,
        mix=mix,
        sweep=_sweep(bs, qd, threads, rw, rwmix) if profile == "sweep" else None,
        sample_interval=sample_interval(interval_s, no_probes),
    )
    check_target(options)
    spec = CommandRun(
        name=f"disk {path.resolve()}",
        workload="disk",
        params=options.params(),
        roles={"target": path},
        versions={"fio": fio_version()},
    )
    with open_store(results) as store:
        with ProgressView() as view:
            run_id, outcome = execute(store, spec, lambda o: run_profile(options, o, view))
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
        f"{dur:g}s · fio {fio_version()} ({fio})"
    )
    out.print(disk_report.grid(summaries, title))
    out.print(disk_report.details(summaries))
    for text in spread_warnings(summaries):
        out.print(f"[yellow]warning:[/] {escape(text)}")
    out.print(f"[dim]stored as run {run_id} in {escape(str(store.path))}[/]")
    if outcome.probes is not None:
        out.print(probes_report.recorded_line(outcome.probes, run_id))
