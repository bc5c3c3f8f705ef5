"""A whole TPC-C run: its options, the checks made before anything is recorded, and the run on
a fresh engine on the layout under test (docs/tpcc.md)."""

from __future__ import annotations

import dataclasses
import math
import os
import random
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from iolab import drivercore
from iolab.engines import catalog, external, rights
from iolab.engines.external import ExternalTarget, check_external_layout
from iolab.engines.interface import Engine, Layout, Placement, first_error, running
from iolab.engines.log_control import allocated_bytes
from iolab.errors import BadInput, IolabError, RunFailed
from iolab.events import EventSink, Measured, Phase, Warning
from iolab.latency.data import LatencyData
from iolab.latency.data import series as latency_series
from iolab.latency.recording import rate_judged, rate_missed
from iolab.probes.cgroup import cgroup_probes
from iolab.probes.devices import DeviceProbe
from iolab.probes.host import HostProbe
from iolab.probes.recorder import Recorder, recording
from iolab.probes.standard import engine_probes, placement_roles, session_ids
from iolab.probes.workload import CounterProbe
from iolab.results import RunOutcome
from iolab.units import format_bytes
from iolab.workloads import cache
from iolab.workloads.tpcc import data, dialects, spec, steps
from iolab.workloads.tpcc.driver import MEASURED, DriverOptions, Live
from iolab.workloads.tpcc.modes import MODES
from iolab.workloads.tpcc.options import MAX_SECONDS, MAX_WAREHOUSES, THINK_AND_RATE

# connections a run opens beside its users': the window's monitor and the probes' (PostgreSQL's
# statistics and its waits; MariaDB's one)
BESIDE_USERS = 3
FULL_BYTES = 64 * 2**20  # a directory with less free is named when a step fails for lack of space
NO_SPACE = ("No space left on device", "disk is full", "Disk full", "ENOSPC")


def default_loaders() -> int:
    return max(2, os.cpu_count() or 2)


def mix_text(mix: Mapping[str, int]) -> str:
    return ",".join(str(mix.get(k, 0)) for k in spec.TRANSACTIONS)


@dataclass(frozen=True)
class TpccOptions:
    """A TPC-C run. ``mode`` None: the engine's default (server where it has routines)."""

    engine: str
    layout: Layout
    warehouses: int = 1
    connections: int = 4
    mode: str | None = None
    mix: Mapping[str, int] = field(default_factory=lambda: dict(spec.DEFAULT_MIX))
    all_warehouses: bool = False
    warmup: float = 10.0
    duration: float = 60.0
    rate: float | None = None
    think: bool = False
    loaders: int | None = None
    pg_bin: Path | None = None
    sample_interval: float | None = 1.0
    seed: int = 1
    dsn: ExternalTarget | None = None  # a server iolab does not manage, instead of a layout
    keep: bool = False  # with dsn: leave the tables and routines as the run ended them

    @property
    def run_mode(self) -> str:
        if self.mode is not None:
            return self.mode
        return dialects.default_mode(self.engine)

    @property
    def loader_count(self) -> int:
        return self.loaders if self.loaders is not None else default_loaders()

    @property
    def connections_needed(self) -> int:
        """The most connections the run holds at once: the loaders', or the users' and
        :data:`BESIDE_USERS`."""
        return max(self.loader_count, self.connections + BESIDE_USERS)

    def validate(self) -> list[str]:
        """Refuse what cannot run, before anything is created; the warnings to show."""
        drivercore.wanted()  # IOLAB_DRIVER_CORE
        if self.engine not in dialects.NAMES:
            raise BadInput(
                "--engine",
                self.engine,
                f"give one of {', '.join(dialects.NAMES)} (TPC-C is an OLTP workload; "
                "DuckDB is not an OLTP engine)",
            )
        if self.dsn is not None:
            if self.engine != self.dsn.engine:
                raise BadInput(
                    "--engine", self.engine, f"{self.dsn.engine}, the engine of the --dsn given"
                )
            check_external_layout(self.layout, self.pg_bin)
        elif self.keep:
            raise BadInput(
                "--keep", "on", "--keep goes with --dsn (iolab removes the servers it starts)"
            )
        w = self.warehouses
        if isinstance(w, bool) or not isinstance(w, int) or not 1 <= w <= MAX_WAREHOUSES:
            raise BadInput("--warehouses", w, f"give 1 to {MAX_WAREHOUSES:,} warehouses")
        c = self.connections
        if isinstance(c, bool) or not isinstance(c, int) or not 1 <= c <= 1000:
            raise BadInput("--connections", c, "give 1 to 1000 virtual users")
        if self.mode is not None and self.mode not in MODES:
            raise BadInput.choice("--mode", self.mode, MODES)
        modes = dialects.ENGINES[self.engine]
        if self.run_mode not in modes:
            raise BadInput(
                "--mode",
                self.run_mode,
                f"{catalog.kind(self.engine).title} runs TPC-C in {' or '.join(modes)} mode "
                "only (it has no server-side routines)",
            )
        if sum(self.mix.values()) != 100 or any(v < 0 for v in self.mix.values()):
            raise BadInput("--mix", mix_text(self.mix), "give shares that sum to 100")
        if not (math.isfinite(self.warmup) and 0 <= self.warmup <= MAX_SECONDS):
            raise BadInput(
                "--warmup", self.warmup, f"give 0 to {MAX_SECONDS:,} seconds, e.g. 10s or 1m"
            )
        if not (math.isfinite(self.duration) and 1 <= self.duration <= MAX_SECONDS):
            raise BadInput(
                "--duration", self.duration, f"give 1 to {MAX_SECONDS:,} seconds, e.g. 60s or 5m"
            )
        if self.rate is not None and not (math.isfinite(self.rate) and self.rate > 0):
            raise BadInput("--rate", self.rate, "give a positive number of transactions a second")
        if self.rate is not None and self.think:
            raise BadInput("--think", "on", THINK_AND_RATE)
        if self.loaders is not None and self.loaders < 1:
            raise BadInput("--loaders", self.loaders, "give 1 or more loader connections")
        if self.sample_interval is not None and not self.sample_interval >= 0.1:
            raise BadInput("--sample-interval", self.sample_interval, "give 0.1 s or more")
        given = self.layout.settings.get("max_connections")
        if self.dsn is None and given is not None and catalog.kind(self.engine).server:
            need = self.connections_needed
            if str(given).strip().isdigit() and int(str(given)) < need:
                raise BadInput(
                    "--set",
                    f"max_connections={given}",
                    f"the run opens up to {need} connections at once ({c} users and "
                    f"{BESIDE_USERS} beside them, or {self.loader_count} loaders): give "
                    f"max_connections={need} or more, or fewer --connections",
                )
        if not catalog.kind(self.engine).takes_pg_bin and self.pg_bin is not None:
            raise BadInput("--pg-bin", str(self.pg_bin), "--pg-bin goes with --engine postgres")
        warnings = []
        if not self.all_warehouses and c > spec.USERS_PER_WAREHOUSE * w:
            warnings.append(
                f"--connections {c} puts more than {spec.USERS_PER_WAREHOUSE} users on a "
                f"warehouse of {w}: they queue on its rows; give --warehouses "
                f"{math.ceil(c / spec.USERS_PER_WAREHOUSE)} or more, or --all-warehouses"
            )
        return warnings

    def driver(self) -> DriverOptions:
        return DriverOptions(
            warehouses=self.warehouses,
            connections=self.connections,
            mode=self.run_mode,
            mix=dict(self.mix),
            all_warehouses=self.all_warehouses,
            rampup=self.warmup,  # the driver's word: TPC-C's ramp-up
            duration=self.duration,
            rate=self.rate,
            think=self.think,
            seed=self.seed,
            interval_s=self.sample_interval or 1.0,
        )

    def params(self) -> dict[str, Any]:
        layout = self.layout
        return {
            "engine": self.engine,
            "data_dirs": [str(d.resolve()) for d in layout.data_dirs],
            "files": layout.files,
            "wal_dir": str(layout.wal_dir.resolve()) if layout.wal_dir else None,
            "temp_dir": str(layout.temp_dir.resolve()) if layout.temp_dir else None,
            "settings": dict(layout.settings),
            "warehouses": self.warehouses,
            "connections": self.connections,
            "mode": self.run_mode,
            "mix": mix_text(self.mix),
            "all_warehouses": self.all_warehouses,
            "warmup": self.warmup,
            "duration": self.duration,
            "rate": self.rate,
            "think": self.think,
            "loaders": self.loader_count,
            "pg_bin": str(self.pg_bin) if self.pg_bin else None,
            "dsn": self.dsn.redacted if self.dsn else None,  # never the password
            "keep": self.keep,
        }


def preflight(options: TpccOptions) -> list[str]:
    """Checks that need no run record: the options, the engine and its settings, and room for
    the data when it is not cached yet. The warnings to show."""
    warnings = options.validate()
    if data.cached(options.warehouses) is None:
        data.check_cache()
        data.check_space(options.warehouses)
    if options.dsn is not None:  # the rights its user needs there, before the run is recorded
        return warnings + rights.check(options.dsn, dialects.objects(options.engine))
    check = catalog.kind(options.engine).check_layout
    if check is not None:
        check(options.layout)
    catalog.check(options.engine, options.layout, pg_bin=options.pg_bin)
    return warnings


def run_tpcc(options: TpccOptions, outcome: RunOutcome, events: EventSink) -> None:
    """Data, engine on the layout, load, warm-up and measured window, consistency; the numbers
    into ``outcome.summary``. A broken condition or NOPM counts apart fail the run."""
    files = data.ensure(options.warehouses, events)
    if options.dsn is not None:
        _on_a_server(options, files, outcome, events)
        why = steps.verdict(outcome.summary)
        if why is not None:
            raise RunFailed(why)
        return
    layout = options.layout
    if catalog.kind(options.engine).server and "max_connections" not in layout.settings:
        settings = dict(layout.settings)
        need = options.connections + options.loader_count + 10
        settings["max_connections"] = str(max(100, need))
        layout = replace(layout, settings=settings)
    engine = catalog.create(options.engine, layout, pg_bin=options.pg_bin)
    events(Phase(f"provisioning {options.engine}"))
    step = _Step()
    with running(engine, step.said) as placement:
        _measured(engine, placement, options, files, outcome, events, step)
    why = steps.verdict(outcome.summary)
    if why is not None:
        raise RunFailed(why)


def _on_a_server(
    options: TpccOptions, files: data.TpccFiles, outcome: RunOutcome, events: EventSink
) -> None:
    """The run on a server of the user's (``--dsn``): its tables and routines dropped after,
    unless ``keep``; those it holds already are refused, never dropped."""
    assert options.dsn is not None
    target = external.create(options.dsn, dialects.objects(options.engine))
    events(Phase(f"connecting to {options.dsn.redacted}"))
    step = _Step()
    if options.keep:
        placement = target.provision()
        target.start()
        outcome.summary["server_local"] = target.local  # its host and devices: this one's
        _measured(target, placement, options, files, outcome, events, step)
        events(Phase(f"kept the TPC-C tables and routines in {options.dsn.redacted}"))
        return
    with running(target, step.said) as placement:
        outcome.summary["server_local"] = target.local
        _measured(target, placement, options, files, outcome, events, step)


@dataclass
class _Step:
    """The step a run is in, for the line that says where it stopped."""

    now: str = "the TPC-C run's start"

    def said(self) -> str:
        return self.now


def _connect(engine: Engine, step: _Step) -> Any:
    """A connection to the engine, or one line naming the step whose connection the server
    refused (too many clients: max_connections) instead of the driver's traceback."""
    try:
        return engine.connect()
    except Exception as exc:
        said = str(exc) if isinstance(exc, IolabError) else first_line(exc)
        raise RunFailed(f"{engine.title} refused a connection during {step.now}: {said}") from None


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0].strip() if text else type(exc).__name__


def _stopped(
    what: str, exc: BaseException, options: TpccOptions, placement: Placement, log_from: int
) -> RunFailed:
    """A step that failed on a running server: the server's first error in its log since the
    step began (the cause, where the driver saw only its consequence: a connection lost), else
    the driver's; and where space ran out, the layout's directories with less than
    :data:`FULL_BYTES` free."""
    said = str(exc) if isinstance(exc, IolabError) else first_line(exc)
    logged = None
    if placement.log is not None:
        try:
            with placement.log.open("rb") as f:
                f.seek(log_from)
                logged = first_error(f.read().decode(errors="replace"))
        except OSError:
            pass
    text = f"{what} stopped: {logged or said}"
    if any(mark in text for mark in NO_SPACE) and options.dsn is None:
        layout = options.layout
        named = [("--data-dir", d) for d in layout.data_dirs]
        named += [
            (f, d) for f, d in (("--wal-dir", layout.wal_dir), ("--temp-dir", layout.temp_dir)) if d
        ]
        full = [
            f"{d} ({flag}, {format_bytes(cache.free_bytes(d))} free)"
            for flag, d in named
            if cache.free_bytes(d) < FULL_BYTES
        ]
        if full:
            text += f"; full: {', '.join(dict.fromkeys(full))}"
    return RunFailed(text)


def _log_size(placement: Placement) -> int:
    try:
        return placement.log.stat().st_size if placement.log is not None else 0
    except OSError:
        return 0


def tpcc_recorder(
    engine: Engine,
    placement: Placement,
    conns: list[Any],
    live: Live,
    interval: float,
    events: EventSink,
) -> Recorder:
    """The probes of a TPC-C run: devices per role, host, the engine's counters and the users'
    waits, NOPM and TPM as the driver counts them, and the caps' cgroup when the run has any."""
    return Recorder(
        [
            DeviceProbe(placement_roles(placement)),
            HostProbe(),
            *engine_probes(engine, placement, session_ids(engine, conns)),
            CounterProbe("nopm", "NOPM", lambda: 60 * live.new_orders()),
            CounterProbe("tpm", "TPM", lambda: 60 * live.ended()),
            *cgroup_probes(),  # the run's caps, when it has any
        ],
        interval=interval,
        events=events,
    )


def _measured(
    engine: Engine,
    placement: Placement,
    options: TpccOptions,
    files: data.TpccFiles,
    outcome: RunOutcome,
    events: EventSink,
    step: _Step,
) -> None:
    """Load, drive, check on a running engine; the numbers into ``outcome.summary``; ``step``
    says which of them it is in."""
    dialect = dialects.dialect(engine, options.loader_count)

    def connect() -> Any:
        return _connect(engine, step)

    step.now = "the TPC-C load"
    log_from = _log_size(placement)
    try:
        loaded = steps.load(dialect, connect, files, options.run_mode, events)
    except Exception as exc:
        if engine.died() is not None:
            raise  # running() says how it ended
        raise _stopped("the TPC-C load", exc, options, placement, log_from) from exc
    step.now = "the TPC-C run"
    # on a server of the user's, its data directory holds more than these tables: not measured
    on_disk = allocated_bytes(list(placement.data)) if options.dsn is None else None
    summary = outcome.summary
    summary.update(
        {
            "engine": options.engine,
            "engine_version": engine.version(),
            "warehouses": options.warehouses,
            "connections": options.connections,
            "mode": options.run_mode,
            "mix": dict(options.mix),
            "all_warehouses": options.all_warehouses,
            "warmup_seconds": options.warmup,
            "duration_seconds": options.duration,
            "rate": options.rate,
            "think": options.think,
            "data_bytes": loaded.csv_bytes,
            "data_rows": loaded.rows,
            "load_seconds": loaded.seconds,
            "load_mb_per_second": loaded.csv_bytes / loaded.seconds / 1e6,
            "index_seconds": loaded.index_seconds,
            "on_disk_bytes": on_disk,
        }
    )
    events(
        Measured(
            "load",
            f"{format_bytes(loaded.csv_bytes)} in {loaded.seconds:.1f} s "
            f"({summary['load_mb_per_second']:,.1f} MB/s), keys {loaded.index_seconds:.1f} s",
        )
    )
    constants = files.constants().for_run(random.Random(f"{options.seed}:run"))

    def on_phase(phase: str, seconds: float) -> None:
        what = "measuring" if phase == MEASURED else "warm-up"
        events(Phase(f"{what}: {options.connections} users for {seconds:g} s"))

    probe_t0: list[float] = []

    @contextmanager
    def probes(conns: list[Any], live: Live) -> Iterator[None]:
        recorder = None
        if options.sample_interval is not None:
            recorder = tpcc_recorder(
                engine, placement, conns, live, options.sample_interval, events
            )
        probe_t0.append(time.perf_counter())
        with recording(recorder, outcome):
            yield

    result, conditions = steps.measure(
        dialect, connect, options.driver(), constants, on_phase, probes
    )
    offset = result.t0 - probe_t0[0] if probe_t0 else 0.0
    outcome.latency = LatencyData(
        intervals=tuple(result.intervals),
        interval_s=options.driver().interval_s,
        start_unix=time.time() - (time.perf_counter() - result.t0),
        probe_offset_s=offset,
        warmup_s=result.start.at - result.t0,
    )
    if outcome.probes is not None:
        outcome.probes = dataclasses.replace(
            outcome.probes,
            series=outcome.probes.series + tuple(latency_series(outcome.latency)),
            warmup_end_s=offset + (result.start.at - result.t0),
        )
    summary.update(steps.summary(result, conditions))
    if options.rate is not None:  # the schedule's slots taken: commits and the spec's rollbacks
        done = sum(t["count"] + t["rollbacks"] for t in summary["transactions"].values())
        judged = rate_judged(options.rate, done / result.seconds if result.seconds > 0 else 0.0)
        summary["rate_held"] = judged
        if not judged["held"]:
            events(Warning(rate_missed(judged, done, "transactions")))
    summary["settings"] = engine.effective_settings()
