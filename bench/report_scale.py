"""Does ``iolab report`` stay fast on a big experiment? 1,000 ten-minute runs, 1 s samples.

Issue 6 asks that a report of an experiment of 1,000 runs, with 1 s samples of 10-minute runs,
builds in under 10 s. This script makes such an experiment and times the real CLI on it.

The fixture (not timed). In a fresh temporary directory under ``/var/tmp`` (removed at the end,
on Ctrl-C and errors too; ``--keep`` leaves it for profiling), an experiment file is written and
loaded with iolab's own config code: a populate experiment on PostgreSQL with 5 layouts x 5 file
counts x 2 connection counts = 50 cells, 20 repetitions each (``--repetitions``). It is put in a
fresh results database the way ``iolab run`` does it: :func:`iolab.runner.experiment.register`
stores the experiment and its cells, and every run goes through
:func:`iolab.runner.single.record` (the one path every run takes: a real environment snapshot
of the layout's directories, the run started, then finished in one transaction), in shuffled
order. Only the run's body is synthetic: it fills the outcome with what a real 10-minute
populate run on PostgreSQL 18 records, copied from a real run's shape:

- a summary with every key a real one has (elapsed seconds around ``--duration``, rows/s, bytes
  per row per device, loader seconds of each connection, the server's settings, ...);
- probes every ``--interval`` s over the whole run: 8 device series for each device of the layout
  (each layout directory stands for one device), 15 host series (2 CPUs), 30 PostgreSQL series
  (WAL, checkpointer, pg_stat_io per backend type and object) and rows/s: 54 to 70 series of
  about 600 noisy values each (latencies partly NaN, as when a device did no reads), 14 wait
  events, a checkpoint every ~25 s, and the server log.

Timed: ``iolab report EXP``, ``iolab report EXP --json`` and ``iolab report EXP --html FILE``
as subprocesses (the installed CLI, end to end, Python start-up included), ``--rounds`` times
each in turn; then the library call the commands make, :func:`iolab.report.build`, in this
process (the store opened and the report built, nothing rendered): without timelines (what the
terminal and JSON reports need) and with them (what the HTML report needs). The database is in
the page cache after it was written; ``--cold`` drops it (that file only:
``posix_fadvise(DONTNEED)`` after an fsync, nothing else on the machine is touched) before every
command and call, as for the first report after a long experiment. Printed: each command's and
call's wall times and median, the HTML file's size (PASS under 12 MB; its timelines are SVG,
each series at most 600 points), the seconds headless Chromium takes to open it until the
first timeline is on the page (PASS under 3 s; Playwright driving /usr/bin/chromium), and PASS
when every median is under the target (10 s). The outputs are checked too: the terminal
report names the best cell, the JSON and the library's report have every cell with all its
runs, the HTML (and the library's report with timelines) one timeline per cell. It exits 0
whatever the verdict (2 on bad input, 1 when it could not run).

    .venv/bin/python bench/report_scale.py [--repetitions 20] [--duration 600] [--interval 1]
        [--rounds 3] [--cold] [--keep] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compare import mark
from harness import machine
from iolab import report
from iolab.config import experiment as config
from iolab.config.experiment import Cell
from iolab.errors import BadInput, IolabError
from iolab.probes.data import ProbeData, Series
from iolab.probes.interface import Checkpoint, Kind, RoleDevice, SeriesKey, WaitStat
from iolab.report import ExperimentReport
from iolab.report.builder import Timelines
from iolab.results import RunOutcome
from iolab.runner.experiment import register
from iolab.runner.single import record
from iolab.store import open_store
from iolab.workloads.interface import layout_of

TARGET_SECONDS = 10.0
HTML_LIMIT_BYTES = 12_000_000  # what "bounded" means for the HTML report
OPEN_LIMIT_SECONDS = 3.0  # the HTML report opened in headless Chromium, first timeline drawn
CHROMIUM = "/usr/bin/chromium"
NAME = "report-scale"
ROWS_PER_SECOND = 10_000  # the load's pace: rows = duration x this
CPUS = 2
WAIT_INTERVAL = 0.1

# layout -> (data directories, WAL directory): each directory stands for one device
LAYOUTS: dict[str, tuple[tuple[str, ...], str]] = {
    "one-ssd": (("ssd0",), "ssd0"),
    "wal-apart": (("ssd0",), "ssd1"),
    "two-ssds": (("ssd0", "ssd1"), "ssd2"),
    "one-hdd": (("hdd0",), "hdd0"),
    "hdd-wal-ssd": (("hdd0",), "ssd0"),
}
FILES = (1, 2, 4, 8, 16)
CONNECTIONS = (16, 64)

# What one device records (probes/devices.py): name, unit, kind, typical level
DEVICE_SERIES = (
    ("read_mbps", "MB/s", Kind.RATE, 3.0),
    ("write_mbps", "MB/s", Kind.RATE, 120.0),
    ("read_iops", "IO/s", Kind.RATE, 50.0),
    ("write_iops", "IO/s", Kind.RATE, 6800.0),
    ("read_await_ms", "ms", Kind.RATIO, 0.4),
    ("write_await_ms", "ms", Kind.RATIO, 0.12),
    ("aqu_sz", "requests", Kind.RATIO, 1.0),
    ("util_pct", "%", Kind.RATIO, 55.0),
)
HOST_CPU_SERIES = (
    ("cpu_user_pct", 60.0),
    ("cpu_system_pct", 30.0),
    ("cpu_iowait_pct", 10.0),
    ("cpu_steal_pct", 0.5),
)
HOST_SERIES = (
    ("procs_blocked", "tasks", 1.0),
    ("dirty_mb", "MB", 700.0),
    ("writeback_mb", "MB", 16.0),
)
# PostgreSQL 18 (probes/postgres.py): name, subject, unit, kind, typical level
POSTGRES_SERIES = (
    ("commits_per_s", "", "commits/s", Kind.RATE, 10_000.0),
    ("tuples_inserted_per_s", "", "rows/s", Kind.RATE, 10_000.0),
    ("blocks_read_per_s", "", "blocks/s", Kind.RATE, 2.0),
    ("blocks_hit_per_s", "", "blocks/s", Kind.RATE, 65_000.0),
    ("wal_lsn_mbps", "", "MB/s", Kind.RATE, 44.0),
    ("wal_mbps", "", "MB/s", Kind.RATE, 44.0),
    ("wal_records_per_s", "", "records/s", Kind.RATE, 31_000.0),
    ("wal_fpi_per_s", "", "images/s", Kind.RATE, 20.0),
    ("checkpoint_pages_per_s", "", "pages/s", Kind.RATE, 600.0),
    ("bgwriter_pages_per_s", "", "pages/s", Kind.RATE, 500.0),
    ("buffers_alloc_per_s", "", "buffers/s", Kind.RATE, 10_000.0),
    ("pages_allocated_per_s", "", "pages/s", Kind.RATE, 10_000.0),
    ("io_writes_per_s", "background writer/relation", "ops/s", Kind.RATE, 500.0),
    ("io_write_ms", "background writer/relation", "ms", Kind.RATIO, 0.007),
    ("io_writes_per_s", "client backend/wal", "ops/s", Kind.RATE, 3100.0),
    ("io_write_ms", "client backend/wal", "ms", Kind.RATIO, 0.07),
    ("io_fsyncs_per_s", "client backend/wal", "ops/s", Kind.RATE, 3100.0),
    ("io_fsync_ms", "client backend/wal", "ms", Kind.RATIO, 0.44),
    ("io_writes_per_s", "checkpointer/relation", "ops/s", Kind.RATE, 700.0),
    ("io_write_ms", "checkpointer/relation", "ms", Kind.RATIO, 0.012),
    ("io_writes_per_s", "walwriter/wal", "ops/s", Kind.RATE, 3.0),
    ("io_write_ms", "walwriter/wal", "ms", Kind.RATIO, 0.022),
    ("io_fsyncs_per_s", "walwriter/wal", "ops/s", Kind.RATE, 3.0),
    ("io_fsync_ms", "walwriter/wal", "ms", Kind.RATIO, 3.0),
    ("io_reads_per_s", "client backend/relation", "ops/s", Kind.RATE, 2.0),
    ("io_read_ms", "client backend/relation", "ms", Kind.RATIO, 1.5),
    ("io_writes_per_s", "client backend/relation", "ops/s", Kind.RATE, 9900.0),
    ("io_write_ms", "client backend/relation", "ms", Kind.RATIO, 0.033),
    ("io_extends_per_s", "client backend/relation", "ops/s", Kind.RATE, 10_000.0),
    ("io_extend_ms", "client backend/relation", "ms", Kind.RATIO, 0.069),
)
# pg_stat_activity at 10 Hz over a populate run: class, event, share of the session-samples
WAITS = (
    ("LWLock", "WALWrite", 0.48),
    ("Client", "ClientRead", 0.29),
    ("IO", "WalSync", 0.089),
    ("CPU", "running", 0.054),
    ("Idle", "idle", 0.029),
    ("IO", "DataFileExtend", 0.015),
    ("Lock", "extend", 0.013),
    ("IO", "DataFileWrite", 0.010),
    ("IO", "WalInitWrite", 0.0069),
    ("IO", "WalWrite", 0.0041),
    ("LWLock", "LockManager", 0.0027),
    ("LWLock", "BufferMapping", 0.0007),
    ("LWLock", "WALInsert", 0.0007),
    ("IO", "WalInitSync", 0.0007),
)
CHECKPOINT_EVERY = 25.0  # seconds: max_wal_size fills this often at 44 MB/s of WAL
SETTINGS = {
    "DateStyle": "ISO, MDY",
    "TimeZone": "Etc/UTC",
    "autovacuum_worker_slots": "16",
    "checkpoint_timeout": "5min",
    "data_checksums": "on",
    "default_text_search_config": "pg_catalog.english",
    "dynamic_shared_memory_type": "posix",
    "fsync": "on",
    "full_page_writes": "on",
    "io_method": "worker",
    "lc_messages": "C",
    "lc_monetary": "C",
    "lc_numeric": "C",
    "lc_time": "C",
    "listen_addresses": "",
    "log_checkpoints": "on",
    "log_timezone": "UTC",
    "logging_collector": "off",
    "max_connections": "100",
    "max_wal_size": "1GB",
    "min_wal_size": "80MB",
    "port": "5432",
    "shared_buffers": "128MB",
    "synchronous_commit": "on",
    "track_io_timing": "on",
    "track_wal_io_timing": "on",
    "wal_compression": "off",
    "wal_level": "replica",
    "wal_sync_method": "fdatasync",
}


def experiment_toml(repetitions: int, duration: float) -> str:
    layouts = "".join(
        f"\n[layouts.{name}]\ndata_dirs = {json.dumps(list(data))}\nwal_dir = {json.dumps(wal)}\n"
        for name, (data, wal) in LAYOUTS.items()
    )
    return (
        f'[experiment]\nname = "{NAME}"\nrepetitions = {repetitions}\norder = "shuffled"\n'
        f'baseline = {{ layout = "one-ssd", files = 1, connections = {CONNECTIONS[0]} }}\n'
        f'\n[workload]\nkind = "populate"\nengine = "postgres"\n'
        f"rows = {round(duration * ROWS_PER_SECOND)}\n"
        f"{layouts}\n[matrix]\nlayout = {json.dumps(list(LAYOUTS))}\n"
        f"files = {list(FILES)}\nconnections = {list(CONNECTIONS)}\n"
    )


class Noise:
    """A pool of unit-mean noise vectors, so that 60,000 series cost little to make; each series
    takes one at a random offset and scales it."""

    def __init__(self, rng: random.Random, length: int, count: int = 64) -> None:
        self.rng = rng
        self.pool = [
            [max(0.0, rng.gauss(1.0, 0.3)) for _ in range(2 * length)] for _ in range(count)
        ]

    def values(self, level: float, n: int) -> list[float]:
        vector = self.rng.choice(self.pool)
        start = self.rng.randrange(len(vector) - n)
        return [level * x for x in vector[start : start + n]]


@dataclass
class Fixture:
    """Makes the outcomes of synthetic runs of one experiment."""

    duration: float
    interval: float
    rng: random.Random
    noise: Noise = field(init=False)

    def __post_init__(self) -> None:
        self.noise = Noise(self.rng, math.ceil(self.duration * 1.2 / self.interval) + 2)

    def elapsed(self, cell: Cell) -> float:
        """A cell's run time: its layout, files and connections matter a little, plus noise."""
        layout = list(LAYOUTS).index(cell.values["layout"])
        files = FILES.index(cell.values["files"])
        factor = 1.0 + 0.04 * layout - 0.015 * files + 0.03 * (cell.values["connections"] > 16)
        return float(self.duration * factor * self.rng.gauss(1.0, 0.02))

    def series(
        self, key: SeriesKey, level: float, elapsed: float, nan_share: float = 0.0
    ) -> Series:
        n = math.ceil(elapsed / self.interval)
        values = self.noise.values(level, n)
        if key.unit == "%":
            values = [min(v, 100.0) for v in values]
        if nan_share:
            values = [math.nan if self.rng.random() < nan_share else v for v in values]
        finite = [v for v in values if not math.isnan(v)]
        mean = statistics.fmean(finite) if finite else math.nan
        if key.kind is Kind.RATE:
            num, den = mean * elapsed, elapsed
        elif key.kind is Kind.RATIO:
            den = float(len(finite) * 100)
            num = mean * den
        else:
            num, den = sum(finite), float(len(finite))
        return Series(
            key=key,
            t0=self.interval,
            interval=self.interval,
            end_s=elapsed,
            n=n,
            total_num=num if finite else 0.0,
            total_den=den,
            peak=max(finite) if finite else None,
            values=values,
        )

    def probes(self, cell: Cell, elapsed: float) -> ProbeData:
        devices = _devices(cell)
        series = []
        for device, held in devices.items():
            for name, unit, kind, level in DEVICE_SERIES:
                key = SeriesKey("device", name, unit, kind, subject=device, role="+".join(held))
                nan = 0.7 if name == "read_await_ms" else 0.0
                series.append(self.series(key, level, elapsed, nan))
        for subject in ("all", *(f"cpu{i}" for i in range(CPUS))):
            for name, level in HOST_CPU_SERIES:
                key = SeriesKey("host", name, "%", Kind.RATIO, subject=subject)
                series.append(self.series(key, level, elapsed))
        for name, unit, level in HOST_SERIES:
            series.append(self.series(SeriesKey("host", name, unit, Kind.GAUGE), level, elapsed))
        for name, subject, unit, kind, level in POSTGRES_SERIES:
            key = SeriesKey("postgres", name, unit, kind, subject=subject)
            series.append(self.series(key, level, elapsed))
        key = SeriesKey("workload", "rows_per_s", "rows/s", Kind.RATE)
        series.append(self.series(key, ROWS_PER_SECOND, elapsed))
        sessions = cell.values["connections"] + 1
        samples = elapsed / WAIT_INTERVAL * sessions
        waits = tuple(
            WaitStat("pg_stat_activity", c, e, round(share * samples), share, share * samples / 10)
            for c, e, share in WAITS
        )
        checkpoints = tuple(
            Checkpoint(
                start,
                start + 8.0,
                1074,
                "wal",
                "checkpoint complete: wrote 1074 buffers (6.6%), wrote 36 SLRU buffers; 0 WAL "
                "file(s) added, 1 removed, 32 recycled; write=6.957 s, sync=0.713 s, "
                "total=7.790 s; sync files=18, longest=0.347 s, average=0.040 s; "
                "distance=529409 kB, estimate=529409 kB",
            )
            for start in _steps(CHECKPOINT_EVERY, elapsed - 8.0)
        )
        roles = tuple(
            RoleDevice(role, path, Path(path).name, "disk", None, "ext4")
            for role, path in _role_paths(cell)
        )
        return ProbeData(
            interval=self.interval,
            wait_interval=WAIT_INTERVAL,
            duration=elapsed,
            series=tuple(series),
            waits=waits,
            checkpoints=checkpoints,
            roles=roles,
        )

    def summary(self, cell: Cell, elapsed: float, probes: ProbeData) -> dict[str, Any]:
        rows = int(cell.params["rows"])
        conns = int(cell.values["connections"])
        devices = {}
        for device, roles in _devices(cell).items():
            written = probes.find("device", "write_mbps", subject=device)[0].total_num * 1e6
            writes = probes.find("device", "write_iops", subject=device)[0].total_num
            devices[device] = {
                "read_bytes": 0,
                "roles": roles,
                "testbed": None,
                "write_bytes": round(written),
                "write_bytes_per_row": written / rows,
                "write_ms": round(writes * 0.12),
                "writes": round(writes),
            }
        wal_bytes = rows * 4236.4
        return {
            "connections": conns,
            "devices": devices,
            "elapsed_seconds": elapsed,
            "engine": "postgres",
            "engine_version": "PostgreSQL 18.6",
            "fill_ok": True,
            "first_finished_seconds": elapsed * 0.98,
            "loader_seconds": [elapsed * self.rng.uniform(0.98, 1.0) for _ in range(conns)],
            "page_size": 8192,
            "pages": rows,
            "pages_per_row": 1.0,
            "pages_per_row_target": 1.0,
            "payload_bytes": 4045,
            "payload_mb_per_second": rows * 4045 / 1e6 / elapsed,
            "placement": {
                "data": [str(Path(d) / ".iolab-pgts-0-0") for d in cell.params["data_dirs"]],
                "temp": None,
                "wal": str(Path(cell.params["wal_dir"]) / ".iolab-pgwal-0-0"),
            },
            "rows": rows,
            "rows_per_second": rows / elapsed,
            "settings": SETTINGS,
            "table_bytes": rows * 8192,
            "total_bytes": rows * 8192 + 3_735_552,
            "wal_bytes": wal_bytes,
            "wal_bytes_per_row": wal_bytes / rows,
            "wall_seconds": elapsed + 0.003,
        }

    def server_log(self, elapsed: float) -> str:
        lines = [
            'The files belonging to this database system will be owned by user "iolab".',
            "Data page checksums are enabled.",
            "creating subdirectories ... ok",
            "syncing data to disk ... ok",
            "LOG:  starting PostgreSQL 18.6 on x86_64-pc-linux-gnu, 64-bit",
            "LOG:  database system is ready to accept connections",
        ]
        for start in _steps(CHECKPOINT_EVERY, elapsed - 8.0):
            lines += [
                f"LOG:  checkpoints are occurring too frequently ({CHECKPOINT_EVERY:.0f} seconds "
                "apart)",
                'HINT:  Consider increasing the configuration parameter "max_wal_size".',
                f"LOG:  checkpoint starting: wal (at {start:.0f} s)",
                "LOG:  checkpoint complete: wrote 1074 buffers (6.6%), wrote 36 SLRU buffers; "
                "0 WAL file(s) added, 1 removed, 32 recycled; write=6.957 s, sync=0.713 s",
            ]
        lines.append("LOG:  database system is shut down")
        return "\n".join(lines) + "\n"

    def fill(self, cell: Cell, outcome: RunOutcome) -> None:
        """The body of a synthetic run: what a real one leaves in its outcome."""
        elapsed = self.elapsed(cell)
        outcome.probes = self.probes(cell, elapsed)
        outcome.summary = self.summary(cell, elapsed, outcome.probes)
        outcome.logs = {"server": self.server_log(elapsed)}


def _steps(every: float, until: float) -> list[float]:
    return [every * i for i in range(1, int(until / every) + 1)]


def _role_paths(cell: Cell) -> list[tuple[str, str]]:
    out = [("data", str(d)) for d in cell.params["data_dirs"]]
    return [*out, ("wal", str(cell.params["wal_dir"]))]


def _devices(cell: Cell) -> dict[str, list[str]]:
    """Device (the directory's name) -> the roles it holds in the cell's runs."""
    out: dict[str, list[str]] = {}
    for role, path in _role_paths(cell):
        roles = out.setdefault(Path(path).name, [])
        if role not in roles:
            roles.append(role)
    return out


def progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def build(base: Path, repetitions: int, duration: float, interval: float) -> tuple[Path, int]:
    """The experiment file and results database in ``base``; returns the database and runs."""
    for data, wal in LAYOUTS.values():
        for name in (*data, wal):
            (base / name).mkdir(exist_ok=True)
    source = base / "report-scale.toml"
    source.write_text(experiment_toml(repetitions, duration))
    experiment = config.load(source)
    db = base / "results.db"
    rng = random.Random(6)
    fixture = Fixture(duration, interval, rng)
    order = [(cell, rep) for cell in experiment.cells for rep in range(1, repetitions + 1)]
    rng.shuffle(order)
    with open_store(db) as store:
        exp_id = register(experiment, store)
        for i, (cell, rep) in enumerate(order, 1):
            roles = layout_of(cell.params, Path).roles()

            def body(outcome: RunOutcome, cell: Cell = cell) -> None:
                fixture.fill(cell, outcome)

            record(store, exp_id, cell.id, rep, roles, {}, body)
            if i % 100 == 0 or i == len(order):
                progress(f"fixture: {i:,} of {len(order):,} runs stored")
    return db, len(order)


@dataclass
class Timing:
    command: str
    seconds: list[float] = field(default_factory=list)
    library: bool = False  # a call of iolab.report in this process, not a CLI command

    @property
    def label(self) -> str:
        return self.command if self.library else f"iolab {self.command}"

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)


def iolab_command() -> list[str]:
    return [sys.executable, "-m", "iolab"]


def evict(db: Path) -> None:
    """Drop the results database (and only it) from the page cache: the next command reads it
    from the device, as the first report after a long experiment would."""
    for path in (db, db.with_name(db.name + "-wal")):
        if not path.exists():
            continue
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)  # dirty pages stay cached
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def run_timed(args: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise IolabError(
            f"{' '.join(args[2:])} exited {done.returncode}: {done.stderr.strip()[-500:]}"
        )
    return seconds, done.stdout


# The library call the commands make (iolab.report.build), timed in this process on an open
# store: without timelines (terminal and --json) and with the median runs' timelines (--html)
LIBRARY_CALLS: dict[str, Timelines | None] = {
    "report.build()": None,
    "report.build(timelines)": "median",
}


def build_timed(db: Path, timelines: Timelines | None) -> tuple[float, ExperimentReport]:
    """Seconds of ``iolab.report.build`` on the fixture, the store opened inside the timing."""
    start = time.perf_counter()
    with open_store(db, create=False) as store:
        built = report.build(store, NAME, timelines=timelines)
    return time.perf_counter() - start, built


def check_built(
    built: ExperimentReport, timelines: Timelines | None, cells: int, runs: int
) -> None:
    """The library's report has every cell with all its runs, and a timeline per cell when asked."""
    n = sum(len(c.runs) for c in built.cells)
    if len(built.cells) != cells or n != runs:
        raise IolabError(
            f"report.build has {len(built.cells)} cells, {n} runs; want {cells}, {runs}"
        )
    if timelines is not None and len(built.timelines) != cells:
        raise IolabError(f"report.build has {len(built.timelines)} timelines; want {cells}")


def check_outputs(terminal: str, doc: dict[str, Any], html: str, cells: int, runs: int) -> None:
    """The reports describe the whole experiment: a timed command that skipped work would not."""
    if "best:" not in terminal:
        raise IolabError("the terminal report names no best cell")
    n = sum(c.get("n", 0) for c in doc["cells"])
    if len(doc["cells"]) != cells or n != runs:
        raise IolabError(f"--json has {len(doc['cells'])} cells, {n} runs; want {cells}, {runs}")
    timelines = html.count("<h3>layout=")
    if timelines != cells:
        raise IolabError(f"the HTML report has {timelines} timelines; want one per cell ({cells})")


def measure(base: Path, db: Path, runs: int, cells: int, rounds: int, cold: bool) -> dict[str, Any]:
    out_html = base / "report.html"
    common = [*iolab_command(), "report", NAME, "--results", str(db)]
    commands = {
        "report": common,
        "report --json": [*common, "--json"],
        "report --html": [*common, "--html", str(out_html)],
    }
    timings = {name: Timing(name) for name in commands}
    outputs: dict[str, str] = {}
    for round_no in range(1, rounds + 1):
        for name, args in commands.items():
            if cold:
                evict(db)
            seconds, stdout = run_timed(args)
            timings[name].seconds.append(seconds)
            outputs[name] = stdout
            progress(f"[round {round_no}/{rounds}] iolab {name}: {seconds:.2f} s")
    for name, timelines in LIBRARY_CALLS.items():
        timing = timings[name] = Timing(name, library=True)
        for round_no in range(1, rounds + 1):
            if cold:
                evict(db)
            seconds, built = build_timed(db, timelines)
            timing.seconds.append(seconds)
            progress(f"[round {round_no}/{rounds}] {name}: {seconds:.2f} s")
            check_built(built, timelines, cells, runs)
    html = out_html.read_text()
    check_outputs(outputs["report"], json.loads(outputs["report --json"]), html, cells, runs)
    opened = Timing("open report.html in Chromium", library=True)
    for round_no in range(1, rounds + 1):
        opened.seconds.append(open_seconds(out_html))
        progress(f"[round {round_no}/{rounds}] {opened.label}: {opened.seconds[-1]:.2f} s")
    return {
        "opened": opened,
        "timings": timings,
        "html_bytes": out_html.stat().st_size,
        "db_bytes": db.stat().st_size,
    }


def open_seconds(page: Path) -> float:
    """Seconds from asking headless Chromium (Debian's, driven by Playwright) to open the
    HTML report until its load event has fired and the first timeline (an SVG) is drawn. A
    fresh browser each time, started before the clock."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            tab = browser.new_page(viewport={"width": 1200, "height": 900})
            t0 = time.perf_counter()
            tab.goto(page.as_uri(), wait_until="load", timeout=120_000)
            tab.locator("#runs svg").first.scroll_into_view_if_needed()
            tab.wait_for_selector("#runs svg", timeout=120_000)
            return time.perf_counter() - t0
        finally:
            browser.close()


def render(result: dict[str, Any], args: argparse.Namespace, runs: int, cells: int) -> str:
    timings: dict[str, Timing] = result["timings"]
    lines = [
        f"report scale · {runs:,} runs in {cells} cells · {args.duration:g} s runs sampled every "
        f"{args.interval:g} s · results database {result['db_bytes'] / 1e6:,.0f} MB, "
        f"{'cold (evicted before every command)' if args.cold else 'warm'} · "
        f"{machine()}",
        "",
        f"{'command':28} {'median s':>9}   per round",
    ]
    for t in timings.values():
        per_round = " ".join(f"{s:.2f}" for s in t.seconds)
        lines.append(f"{t.label:28} {t.median:>9.2f}   {per_round}")
    html_ok = result["html_bytes"] < HTML_LIMIT_BYTES
    worst = max(t.median for t in timings.values())
    opened: Timing = result["opened"]
    lines += [
        f"{opened.label:28} {opened.median:>9.2f}   "
        + " ".join(f"{s:.2f}" for s in opened.seconds),
        "",
        f"HTML report: {result['html_bytes'] / 1e6:.2f} MB (limit {HTML_LIMIT_BYTES / 1e6:g} MB):"
        f" {mark(html_ok)}",
        f"opened in Chromium, first timeline drawn: median {opened.median:.2f} s (limit "
        f"{OPEN_LIMIT_SECONDS:g} s): {mark(opened.median < OPEN_LIMIT_SECONDS)}",
        f"slowest median {worst:.2f} s (target < {TARGET_SECONDS:g} s): "
        f"{mark(worst < TARGET_SECONDS)}",
    ]
    return "\n".join(lines)


def as_json(result: dict[str, Any], args: argparse.Namespace, runs: int, cells: int) -> str:
    timings: dict[str, Timing] = result["timings"]
    worst = max(t.median for t in timings.values())
    return json.dumps(
        {
            "runs": runs,
            "cells": cells,
            "duration_seconds": args.duration,
            "interval_seconds": args.interval,
            "cold": args.cold,
            "db_bytes": result["db_bytes"],
            "html_bytes": result["html_bytes"],
            "html_limit_bytes": HTML_LIMIT_BYTES,
            "seconds": {t.command: t.seconds for t in timings.values()},
            "median_seconds": {t.command: t.median for t in timings.values()},
            "target_seconds": TARGET_SECONDS,
            "verdict": mark(worst < TARGET_SECONDS),
            "html_verdict": mark(result["html_bytes"] < HTML_LIMIT_BYTES),
            "open_seconds": result["opened"].seconds,
            "open_limit_seconds": OPEN_LIMIT_SECONDS,
            "open_verdict": mark(result["opened"].median < OPEN_LIMIT_SECONDS),
        },
        indent=2,
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="time iolab report on 1,000 ten-minute runs")
    parser.add_argument("--repetitions", type=int, default=20, help="runs per cell (20: 1,000)")
    parser.add_argument("--duration", type=float, default=600.0, help="seconds per run (600)")
    parser.add_argument("--interval", type=float, default=1.0, help="sample interval, s (1)")
    parser.add_argument("--rounds", type=int, default=3, help="timings of each command (3)")
    parser.add_argument(
        "--cold",
        action="store_true",
        help="drop the results database from the page cache before every command",
    )
    parser.add_argument(
        "--keep", action="store_true", help="leave the fixture's directory (for profiling)"
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    base: Path | None = None
    try:
        if args.repetitions < 1:
            raise BadInput("--repetitions", args.repetitions, "give at least 1")
        if not 10 <= args.duration <= 36_000:
            raise BadInput("--duration", args.duration, "give 10 to 36000 seconds")
        if not 0.1 <= args.interval <= args.duration / 2:
            raise BadInput("--interval", args.interval, "give 0.1 s to half of --duration")
        if args.rounds < 1:
            raise BadInput("--rounds", args.rounds, "give at least 1 round")
        base = Path(tempfile.mkdtemp(prefix="iolab-bench-report-", dir="/var/tmp"))
        progress(f"building the experiment in {base} (not timed)")
        start = time.perf_counter()
        db, runs = build(base, args.repetitions, args.duration, args.interval)
        cells = len(LAYOUTS) * len(FILES) * len(CONNECTIONS)
        progress(f"fixture built in {time.perf_counter() - start:.0f} s")
        result = measure(base, db, runs, cells, args.rounds, args.cold)
    except IolabError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        if base is not None:
            if args.keep:
                progress(f"kept {base} (results.db, report.html); remove it when done")
            else:
                shutil.rmtree(base, ignore_errors=True)
    print(as_json(result, args, runs, cells) if args.json else render(result, args, runs, cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
