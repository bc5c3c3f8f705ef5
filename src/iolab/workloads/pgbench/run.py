"""A pgbench run on a layout: provision PostgreSQL, ``pgbench -i``, the measured run under the
probes, and the run's record (pgbench's numbers, its progress as series, iolab's percentiles of
its transaction log, the scripts' text and hash)."""

from __future__ import annotations

import math
import os
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from iolab.engines import catalog, external
from iolab.engines.clients import bundled, endpoint
from iolab.engines.external import ExternalTarget, check_external_layout
from iolab.engines.interface import Engine, Layout, Placement, running
from iolab.engines.postgres import HOW_TO_GET
from iolab.errors import BadInput, MissingTool
from iolab.events import EventSink, Measured, Phase
from iolab.latency.data import LatencyData
from iolab.latency.data import series as latency_series
from iolab.latency.data import summary as latency_summary
from iolab.ownership import owned_dir
from iolab.probes.recorder import recording
from iolab.process import run
from iolab.results import RunOutcome
from iolab.workloads.drivers import (
    NO_INIT,
    Progress,
    ToolFailed,
    agree,
    agree_progress,
    driver_recorder,
    progress_series,
    run_tool,
    tool_env,
    with_tail,
)
from iolab.workloads.pgbench import arguments, output
from iolab.workloads.pgbench.arguments import DEFAULT_INIT, PgbenchArgs
from iolab.workloads.pgbench.options import ENGINES

LOG_PREFIX = "pgbench_log"
LOG_KIND = "pgbenchlog"  # the -l logs' directory in the temporary directory (iolab.ownership)
DSN_INIT = (
    "give --no-init with it: pgbench -i drops and remakes the pgbench_* tables, and iolab "
    "never deletes what it did not create; initialise the server's database yourself"
)
INIT_LOG_MAX = 64 * 1024  # characters of pgbench -i's output kept with the run


@dataclass(frozen=True)
class PgbenchOptions:
    """A pgbench run: ``run_args`` as after ``--``, ``init_args`` as words (``-i`` among them);
    ``cwd``: where pgbench runs and relative script paths are read (an experiment file's
    directory; None: the directory the command runs in)."""

    engine: str
    layout: Layout
    run_args: tuple[str, ...]
    init_args: tuple[str, ...] = DEFAULT_INIT
    init: bool = True  # False: the database already holds what the run needs (--no-init)
    pg_bin: Path | None = None
    sample_interval: float | None = 1.0  # seconds between probe samples; None: probes off
    cwd: Path | None = None
    dsn: ExternalTarget | None = None  # a server of the user's instead of a layout (--no-init)

    @property
    def workdir(self) -> Path:
        return self.cwd if self.cwd is not None else Path.cwd()

    def validate(self) -> PgbenchArgs:
        """Refuse what cannot run, before anything is made; the checked arguments."""
        catalog.kind(self.engine)  # one of iolab's engines
        if self.engine not in ENGINES:
            raise BadInput(
                "--engine", self.engine, "pgbench drives " + " or ".join(ENGINES) + " only"
            )
        if self.dsn is not None:
            if self.dsn.engine != self.engine:
                raise BadInput("--dsn", self.dsn.redacted, "give a postgresql:// DSN to pgbench")
            check_external_layout(self.layout, self.pg_bin)
            if self.init:
                raise BadInput("--dsn", self.dsn.redacted, DSN_INIT)
        elif not self.init:
            raise BadInput("--no-init", "without --dsn", NO_INIT)
        if self.sample_interval is not None and not self.sample_interval >= 0.1:
            raise BadInput("--sample-interval", self.sample_interval, "give 0.1 s or more")
        return arguments.check(self.init_args, self.run_args, self.workdir)


def preflight(options: PgbenchOptions) -> PgbenchArgs:
    """Checks that need no run record: the options, the arguments and scripts, the engine."""
    checked = options.validate()
    if options.dsn is None:
        catalog.check(options.engine, options.layout, pg_bin=options.pg_bin)
    return checked


def program_of(engine: Engine) -> Path:
    """The pgbench that comes with the engine's PostgreSQL binaries; MissingTool if none."""
    found = bundled(engine, "pgbench")
    if found is None or not (found.is_file() and os.access(found, os.X_OK)):
        raise MissingTool(f"pgbench (looked in {found.parent if found else 'no'})", HOW_TO_GET)
    return found


def run_pgbench(options: PgbenchOptions, outcome: RunOutcome, events: EventSink) -> None:
    """PostgreSQL on the layout, ``pgbench -i``, the measured run; results into ``outcome``."""
    checked = preflight(options)
    if options.dsn is not None:  # a server of the user's: iolab creates and drops nothing
        target = external.create(options.dsn, external.Objects())
        events(Phase(f"connecting to {options.dsn.redacted}"))
        with running(target, "the pgbench run") as placement:
            outcome.summary["dsn"] = options.dsn.redacted  # never the password
            outcome.summary["server_local"] = target.local  # its host and devices: this one's
            drive(target, placement, program_of(target), options, checked, outcome, events)
        return
    engine = catalog.create(options.engine, options.layout, pg_bin=options.pg_bin)
    program = program_of(engine)
    events(Phase(f"provisioning {options.engine}"))
    with running(engine, "the pgbench run") as placement:
        drive(engine, placement, program, options, checked, outcome, events)


def drive(
    engine: Engine,
    placement: Placement,
    program: Path,
    options: PgbenchOptions,
    checked: PgbenchArgs,
    outcome: RunOutcome,
    events: EventSink,
) -> None:
    """On a running engine: ``pgbench -i`` (unless ``options.init`` is off), then the measured
    run under the probes; results into ``outcome``."""
    for script in checked.scripts:
        outcome.logs[script.log_name] = script.text
    ep = endpoint(engine)
    connect = [
        *(["-h", ep.host] if ep.host else []),
        *(["-p", str(ep.port)] if ep.port else []),
        *(["-U", ep.user] if ep.user else []),
    ]
    database = ["--", ep.database] if ep.database else []
    env = tool_env(PGPASSWORD=ep.password) if ep.password else tool_env()  # never on argv
    cwd = options.workdir
    summary = outcome.summary
    summary.update(
        {
            "tool": "pgbench",
            "tool_version": run([program, "--version"]).stdout.strip(),
            "engine": options.engine,
            "engine_version": engine.version(),
            "init_args": list(checked.init) if options.init else None,
            "run_args": list(checked.run),
            "script_files": [s.stored() for s in checked.scripts],
        }
    )
    if options.init:
        events(Phase("pgbench " + " ".join(checked.init)))
        t0 = time.perf_counter()
        init = run_tool(  # iolab's connection last: it is the one pgbench takes
            [program, *checked.init, *connect, *database], cwd=cwd, env=env, what="pgbench -i"
        )
        summary["init_seconds"] = time.perf_counter() - t0
        outcome.logs["pgbench init"] = (init.stdout + init.stderr)[-INIT_LOG_MAX:]
    # iolab's own name: the logs of a pgbench run killed with iolab go with the next one's
    with owned_dir(Path(tempfile.gettempdir()), LOG_KIND, events=events) as work:
        prefix = work / LOG_PREFIX
        extra = ["-l", f"--log-prefix={prefix}"]
        if not checked.run_options.has("--progress"):
            extra += ["-P", "1"]
        argv: list[str | Path] = [program, *checked.run, *extra, *connect, *database]
        recorder = driver_recorder(engine, placement, options.sample_interval, events)
        events(Phase("pgbench " + " ".join(checked.run)))
        with recording(recorder, outcome):
            offset = time.perf_counter() - recorder.t0 if recorder is not None else 0.0
            start_unix = time.time()
            try:
                done = run_tool(argv, cwd=cwd, env=env, what="pgbench")
            except ToolFailed as exc:
                outcome.logs["pgbench"] = exc.output
                raise
        outcome.logs["pgbench"] = done.stdout + done.stderr
        log = output.read_logs(sorted(work.glob(LOG_PREFIX + ".*")), start_unix)
    _record(outcome, done.stdout, done.stderr, log, start_unix, offset, checked)
    summary["settings"] = engine.effective_settings()
    events(Measured("pgbench", f"{summary['tps']:,.1f} tps, {summary['transactions']} tx"))


def _record(
    outcome: RunOutcome,
    stdout: str,
    stderr: str,
    log: output.TransactionLog,
    start_unix: float,
    offset: float,
    checked: PgbenchArgs,
) -> None:
    """pgbench's numbers into the summary, its progress and iolab's latency series into the
    probes, the transaction log's histograms into the run's latency record."""
    parsed = output.summary(stdout)
    _agree(parsed, log, output.progress(stderr))
    scripts: list[dict[str, Any]] = []
    for script in parsed.scripts:
        found = log.per_script.get(script.number)
        if found is not None:
            script.histogram = found
        scripts.append(script.summary())
    if len(parsed.scripts) > 1:
        _per_script_counts(scripts, parsed.numbers, outcome)
    outcome.latency = LatencyData(log.intervals, 1.0, start_unix, probe_offset_s=offset)
    outcome.summary.update(parsed.numbers)
    outcome.summary["scripts"] = scripts
    latency = latency_summary(outcome.latency, True) or {}
    for script in parsed.scripts:  # latency.scriptN.*: per script, numbered as pgbench does
        if script.histogram.total:
            latency[f"script{script.number + 1}"] = script.histogram.stats()
    outcome.summary["latency"] = latency
    outcome.summary["logged_failed"] = log.failed
    # pgbench's tps leaves out the initial connection time: count / tps is its measured time
    end = float(parsed.numbers["transactions"]) / float(parsed.numbers["tps"] or 1.0)
    lines = with_tail(output.progress(stderr), "tps", float(parsed.numbers["transactions"]), end)
    series = [
        *progress_series(output.PROBE, lines, output.QUANTITIES, offset),
        *latency_series(outcome.latency),
    ]
    if outcome.probes is not None:
        outcome.probes = replace(outcome.probes, series=outcome.probes.series + tuple(series))
    outcome.summary["progress_interval_s"] = checked.progress_s


def _per_script_counts(
    scripts: list[dict[str, Any]], numbers: dict[str, float | int], outcome: RunOutcome
) -> None:
    """Each script's count is the ``-l`` log's: pgbench's threads add to its per-script
    counters without a lock (pgbench.c says so), so with ``-j`` above 1 its printed count of a
    script can miss a transaction two threads finished at once (1871 printed, 1872 logged, in
    one CI run at -j 2), while the run's total, kept per thread, is exact. The logged counts
    must add up to that total; pgbench's own count stays beside each as
    ``pgbench_transactions`` when it differs, and the run says so."""
    logged = [int(s.get("latency", {}).get("count", 0)) for s in scripts]
    agree(
        "pgbench", "-l log", "transactions of all scripts", sum(logged), numbers["transactions"], 0
    )
    missed = []
    for script, count in zip(scripts, logged, strict=True):
        printed = script.get("transactions")
        if printed is not None and printed != count:
            script["pgbench_transactions"] = printed
            missed.append(f"script {script['script'] + 1}: {printed} printed, {count} logged")
        script["transactions"] = count
    if missed and outcome.probes is not None:
        note = (
            "pgbench's per-script counts differ from its transaction log ("
            + "; ".join(missed)
            + "): its threads add to them without a lock; iolab stores the log's"
        )
        outcome.probes = replace(outcome.probes, notes=(*outcome.probes.notes, note))


def _agree(parsed: output.Summary, log: output.TransactionLog, lines: list[Progress]) -> None:
    """What iolab stores of the run is pgbench's own: the -l log holds every transaction
    pgbench counted, their average latency is the one it printed (to its 3 decimals, each
    logged latency truncated to the microsecond), and the progress lines count no more than
    it did."""
    n = parsed.numbers
    count = float(n["transactions"])
    agree("pgbench", "-l log", "transactions", log.count, count, 0)
    reported = n.get("latency_avg_ms")
    if log.count and reported is not None and math.isfinite(log.latency_avg_ms):
        slack = 0.002 + 0.005 * float(reported)
        agree("pgbench", "-l log", "latency average (ms)", log.latency_avg_ms, reported, slack)
    agree_progress("pgbench", lines, "tps", count, 1)
