"""A sysbench run on a layout: provision the engine, ``sysbench SCRIPT prepare``, ``sysbench
SCRIPT run`` under the probes, and the run's record (sysbench's numbers, its progress as series,
percentiles of its histogram, the script's text and hash)."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path

from iolab.engines import catalog, external
from iolab.engines.clients import MYSQL, Endpoint, endpoint
from iolab.engines.external import ExternalTarget, check_external_layout
from iolab.engines.interface import Engine, Layout, Placement, running
from iolab.errors import BadInput
from iolab.events import EventSink, Measured, Phase
from iolab.latency.histogram import Histogram
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
    tool_path,
    with_tail,
)
from iolab.workloads.sysbench import arguments, output
from iolab.workloads.sysbench.arguments import SysbenchArgs
from iolab.workloads.sysbench.options import ENGINES

PACKAGE = "sysbench"
PREPARE_LOG_MAX = 64 * 1024  # characters of sysbench prepare's output kept with the run
NO_PREPARE = "does not implement the 'prepare' command"
LATENCY_SOURCE = "sysbench --histogram buckets (each count at its printed value, ~2 % wide)"


DSN_INIT = (
    "give --no-init with it: sysbench's prepare creates tables and its cleanup drops them, and "
    "iolab neither makes nor deletes anything on a server of yours; prepare it yourself"
)


def connection(ep: Endpoint) -> list[str]:
    """sysbench's driver and connection options for an engine's endpoint (never a password:
    see :func:`password_env`)."""
    if ep.protocol == MYSQL:
        where = (
            [f"--mysql-socket={ep.host}"]
            if ep.host is not None and ep.host.startswith("/")
            else [f"--mysql-host={ep.host}", *([f"--mysql-port={ep.port}"] if ep.port else [])]
        )
        return [
            "--db-driver=mysql",
            *where,
            f"--mysql-user={ep.user}",
            *([f"--mysql-db={ep.database}"] if ep.database else []),
        ]
    if ep.host is None:  # a server of the user's: libpq reads the whole DSN as the database;
        # sysbench's own defaults (localhost, 5432, sbtest) emptied so that the DSN's parts hold
        return [
            "--db-driver=pgsql",
            "--pgsql-host=",
            "--pgsql-port=",
            "--pgsql-user=",
            f"--pgsql-db={ep.database}",
        ]
    return [
        "--db-driver=pgsql",
        f"--pgsql-host={ep.host}",
        f"--pgsql-port={ep.port}",
        f"--pgsql-user={ep.user}",
        f"--pgsql-db={ep.database}",
    ]


def password_env(ep: Endpoint) -> dict[str, str]:
    """The password in the environment the client library reads (never on the command line,
    where every user of the machine sees it)."""
    if ep.password is None:
        return {}
    return {"MYSQL_PWD" if ep.protocol == MYSQL else "PGPASSWORD": ep.password}


@dataclass(frozen=True)
class SysbenchOptions:
    """A sysbench run: ``words`` as after ``--`` (the script first); ``cwd``: where sysbench
    runs and a relative script path is read (an experiment file's directory; None: the
    directory the command runs in)."""

    engine: str
    layout: Layout
    words: tuple[str, ...]
    init: bool = True  # False: the database already holds what the run needs (--no-init)
    pg_bin: Path | None = None
    sample_interval: float | None = 1.0  # seconds between probe samples; None: probes off
    cwd: Path | None = None
    dsn: ExternalTarget | None = None  # a server of the user's instead of a layout (--no-init)

    @property
    def workdir(self) -> Path:
        return self.cwd if self.cwd is not None else Path.cwd()

    def validate(self) -> SysbenchArgs:
        """Refuse what cannot run, before anything is made; the checked arguments."""
        catalog.kind(self.engine)  # one of iolab's engines
        if self.engine not in ENGINES:
            raise BadInput(
                "--engine", self.engine, "sysbench drives " + " or ".join(ENGINES) + " only"
            )
        if self.dsn is not None:
            if self.dsn.engine != self.engine:
                raise BadInput(
                    "--engine", self.engine, f"{self.dsn.engine}, the engine of the --dsn given"
                )
            check_external_layout(self.layout, self.pg_bin)
            if self.init:
                raise BadInput("--dsn", self.dsn.redacted, DSN_INIT)
        elif not self.init:
            raise BadInput("--no-init", "without --dsn", NO_INIT)
        if self.sample_interval is not None and not self.sample_interval >= 0.1:
            raise BadInput("--sample-interval", self.sample_interval, "give 0.1 s or more")
        return arguments.check(self.words, self.workdir)


def preflight(options: SysbenchOptions) -> tuple[str, SysbenchArgs]:
    """Checks that need no run record: sysbench installed, the options, the engine."""
    program = tool_path("sysbench", PACKAGE)
    checked = options.validate()
    if options.dsn is None:
        catalog.check(options.engine, options.layout, pg_bin=options.pg_bin)
    return program, checked


def run_sysbench(options: SysbenchOptions, outcome: RunOutcome, events: EventSink) -> None:
    """The engine on the layout (or the server of ``--dsn``), ``prepare``, the measured
    ``run``; results into ``outcome``."""
    program, checked = preflight(options)
    if options.dsn is not None:  # a server of the user's: iolab creates and drops nothing
        target = external.create(options.dsn, external.Objects())
        events(Phase(f"connecting to {options.dsn.redacted}"))
        with running(target, "the sysbench run") as placement:
            outcome.summary["dsn"] = options.dsn.redacted  # never the password
            outcome.summary["server_local"] = target.local  # its host and devices: this one's
            drive(target, placement, program, options, checked, outcome, events)
        return
    engine = catalog.create(options.engine, options.layout, pg_bin=options.pg_bin)
    events(Phase(f"provisioning {options.engine}"))
    with running(engine, "the sysbench run") as placement:
        drive(engine, placement, program, options, checked, outcome, events)


def drive(
    engine: Engine,
    placement: Placement,
    program: str,
    options: SysbenchOptions,
    checked: SysbenchArgs,
    outcome: RunOutcome,
    events: EventSink,
) -> None:
    """On a running engine: ``prepare`` (unless ``options.init`` is off), then the measured
    ``run`` under the probes; results into ``outcome``."""
    outcome.logs[checked.script.log_name] = checked.script.text
    ep = endpoint(engine)
    # iolab's connection after the user's options: the one sysbench takes (the last given)
    base = [program, checked.script.given, *checked.args, *connection(ep)]
    env = tool_env(**password_env(ep))
    cwd = options.workdir
    summary = outcome.summary
    summary.update(
        {
            "tool": "sysbench",
            "tool_version": run([program, "--version"]).stdout.strip(),
            "engine": options.engine,
            "engine_version": engine.version(),
            "script": checked.script.stored() | {"builtin": checked.builtin},
            "run_args": list(checked.args),
        }
    )
    if options.init:
        events(Phase(f"sysbench {checked.name} prepare"))
        t0 = time.perf_counter()
        try:
            said = run_tool([*base, "prepare"], cwd=cwd, env=env, what="sysbench prepare").stdout
        except ToolFailed as exc:
            if NO_PREPARE not in exc.output:
                raise
            said = exc.output  # a script of the user's with nothing to prepare: sysbench says so
        summary["prepared"] = NO_PREPARE not in said
        summary["init_seconds"] = time.perf_counter() - t0
        outcome.logs["sysbench prepare"] = said[-PREPARE_LOG_MAX:]
    else:
        summary["prepared"] = False
    extra = ["--histogram=on"]
    if not arguments.parse(checked.args).has("--report-interval"):
        extra.append("--report-interval=1")
    recorder = driver_recorder(engine, placement, options.sample_interval, events)
    events(Phase(f"sysbench {checked.name} run"))
    with recording(recorder, outcome):
        offset = time.perf_counter() - recorder.t0 if recorder is not None else 0.0
        try:
            done = run_tool([*base, *extra, "run"], cwd=cwd, env=env, what="sysbench")
        except ToolFailed as exc:
            outcome.logs["sysbench"] = exc.output
            raise
    outcome.logs["sysbench"] = done.stdout + done.stderr
    _record(outcome, done.stdout, offset)
    summary["report_interval_s"] = checked.report_s
    summary["settings"] = engine.effective_settings()
    events(Measured("sysbench", f"{summary['tps']:,.2f} tps, {summary['qps']:,.2f} qps"))


def _record(outcome: RunOutcome, stdout: str, offset: float) -> None:
    """sysbench's numbers into the summary, its progress into the probes, percentiles of its
    histogram beside them."""
    numbers = output.summary(stdout)
    found = output.histogram(stdout)
    progress = output.progress(stdout)
    _agree(numbers, found, progress)
    outcome.summary.update(numbers)
    if found.total:
        outcome.summary["latency"] = {"transaction": found.stats()}
        outcome.summary["latency_source"] = LATENCY_SOURCE
    lines = with_tail(
        progress,
        "tps",
        float(numbers["transactions"]),
        float(numbers.get("total_seconds", 0.0)),
    )
    series = progress_series(output.PROBE, lines, output.QUANTITIES, offset)
    if outcome.probes is not None:
        outcome.probes = replace(outcome.probes, series=outcome.probes.series + tuple(series))


def _agree(numbers: dict[str, float | int], found: Histogram, lines: list[Progress]) -> None:
    """What iolab stores of the run is sysbench's own: the histogram holds every event it
    counted, its mean is the average it printed (within the buckets' 2 % and the average's 2
    decimals), and the progress lines count no more transactions than it did."""
    events = numbers.get("events", numbers["transactions"])
    agree("sysbench", "histogram", "events", found.total, float(events), 0)
    reported = numbers.get("latency_avg_ms")
    if found.total and reported is not None:
        mean = found.stats()["mean_us"] / 1000
        agree(
            "sysbench", "histogram", "latency average (ms)", mean, reported, 0.01 + 0.03 * reported
        )
    agree_progress("sysbench", lines, "tps", float(numbers["transactions"]), 2)
