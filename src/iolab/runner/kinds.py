"""What the experiment runner needs of each workload kind: how to run one cell, and its metric.

A kind turns a cell's resolved parameters (workload parameters plus the layout, see
:mod:`iolab.config.experiment`) into the same options and the same ``run_*`` function the
single command uses, so ``iolab run`` and ``iolab populate`` measure the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from iolab.config.workloads import (
    OFF,
    DiskWorkload,
    PopulateWorkload,
    Section,
    TpchWorkload,
    seconds,
)
from iolab.engines.interface import Layout
from iolab.engines.loading import KeyKind, LoadMethod, LoadMode
from iolab.events import EventSink
from iolab.results import RunOutcome
from iolab.units import parse_size

if TYPE_CHECKING:
    from iolab.workloads.diskmark import DiskOptions
    from iolab.workloads.pgbench.run import PgbenchOptions
    from iolab.workloads.populate import PopulateOptions
    from iolab.workloads.sysbench.run import SysbenchOptions
    from iolab.workloads.tpch import TpchOptions

Body = Callable[[RunOutcome], None]
Resolve = Callable[[str], Path]


class Checked:
    """What a plan's checks already did, so that a matrix of many cells runs each engine and
    directory check once: a set of keys (engine + settings, directory, ...)."""

    def __init__(self) -> None:
        self._seen: set[object] = set()
        self._layouts: dict[str, tuple[Layout, bool]] = {}
        self._free: dict[Path, tuple[int, int] | None] = {}

    def layout(self, params: Mapping[str, Any]) -> tuple[Layout, bool]:
        """The cell's layout at plan time, and whether a path of it is on a testbed device:
        such a path stands for itself (the device may not be up yet), so only what needs no
        directory is checked on it. Made once per distinct layout."""
        key = repr([params[k] for k in ("data_dirs", "files", "wal_dir", "temp_dir", "settings")])
        found = self._layouts.get(key)
        if found is None:
            found = self._layouts[key] = (layout_of(params, Path), _on_device(params))
        return found

    def free_space(self, path: Path) -> tuple[int, int] | None:
        """A directory's filesystem and free bytes, read once per plan."""
        from iolab.workloads.populate import free_space

        if path not in self._free:
            self._free[path] = free_space(path)
        return self._free[path]

    def once(self, key: object, check: Callable[[], object]) -> None:
        if key not in self._seen:
            check()
            self._seen.add(key)


@dataclass(frozen=True)
class Judged:
    """What a cell's runs are judged by: the summary key the statistics are about (its label in
    `iolab run`'s table), and the numbers the cell holds constant by design (a timed load's
    elapsed time), each with the reason, which ``--metric`` refuses."""

    metric: str
    label: str
    held: Mapping[str, str]


@dataclass(frozen=True)
class Kind:
    """One workload kind. ``metric`` is the summary key the statistics are about, unless
    ``judge`` says otherwise for a cell's parameters (:meth:`judged`)."""

    name: str
    metric: str | None  # None: no single number (auto repetitions refused)
    metric_label: str
    lower_is_better: bool
    prepare: Callable[
        [Mapping[str, Any], Resolve, EventSink],
        tuple[Body, dict[str, Path], dict[str, str]],
    ]
    estimate: Callable[[Mapping[str, Any]], float]  # seconds per run, before any run measured it
    # Everything checked before any run is recorded (plan and run alike); BadInput names the
    # option as on the command line (``--set NAME``, ``--rows``); paths on testbed devices
    # (``device:NAME``) are left to the run, when the device is up.
    check: Callable[[Mapping[str, Any], Checked], None]
    judge: Callable[[Mapping[str, Any]], Judged] | None = None

    def judged(self, params: Mapping[str, Any]) -> Judged | None:
        """What a cell of these parameters is judged by (None: no single number, a disk
        profile's tests)."""
        if self.judge is not None:
            return self.judge(params)
        if self.metric is None:
            return None
        return Judged(self.metric, self.metric_label, {})


def judged(kind: Kind, cells: Sequence[Mapping[str, Any]]) -> Judged | None:
    """What cells of ``kind`` (their parameters) are judged by together: the first cell's
    metric that no cell holds constant, and every number some cell holds (None: no single
    number)."""
    each = [j for j in (kind.judged(p) for p in cells) if j is not None]
    if not each:
        return kind.judged({})
    held = {k: v for j in each for k, v in j.held.items()}
    found = next((j for j in each if j.metric not in held), each[0])
    return Judged(found.metric, found.label, held)


M = TypeVar("M", bound=Section)
DEFAULT_SAMPLE_INTERVAL = 1.0  # seconds between probe samples, unless a command says otherwise


def _model(model: type[M], params: Mapping[str, Any]) -> M:
    """The workload's options model of a cell's parameters. They were validated when the cell
    was made (from the file or the flags), so they are not checked again here: a plan of many
    cells reads no limit from /proc once per cell."""
    return model.model_construct(**{k: v for k, v in params.items() if k in model.model_fields})


def command_layout(
    data_dirs: Sequence[Path],
    files: int = 1,
    wal_dir: Path | None = None,
    temp_dir: Path | None = None,
    settings: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A command's layout flags as a cell's layout parameters (the paths already resolved)."""
    return {
        "layout": "command",
        "data_dirs": [str(d) for d in data_dirs],
        "files": files,
        "wal_dir": str(wal_dir) if wal_dir else None,
        "temp_dir": str(temp_dir) if temp_dir else None,
        "settings": dict(settings or {}),
    }


def layout_of(params: Mapping[str, Any], resolve: Resolve) -> Layout:
    """The cell's layout with every directory resolved (``device:NAME`` to its mount point)."""
    return Layout(
        data_dirs=tuple(resolve(d) for d in params["data_dirs"]),
        files=int(params["files"]),
        wal_dir=resolve(params["wal_dir"]) if params.get("wal_dir") else None,
        temp_dir=resolve(params["temp_dir"]) if params.get("temp_dir") else None,
        settings=dict(params.get("settings") or {}),
    )


def populate_options(params: Mapping[str, Any], layout: Layout) -> PopulateOptions:
    from iolab.engines.external import parse_dsn
    from iolab.workloads.populate import PopulateOptions

    w = _model(PopulateWorkload, params)
    dsn = params.get("dsn")  # a command's --dsn: a server iolab does not manage
    return PopulateOptions(
        engine=w.engine,
        layout=layout,
        rows=w.rows if w.rows or w.bytes or w.duration else 10_000,
        size_bytes=parse_size(w.bytes, "--bytes") if w.bytes else None,
        connections=w.connections,
        commit_every=w.commit_every,
        method=LoadMethod(w.method),
        mode=LoadMode(w.mode),
        key=KeyKind(w.key),
        batch=w.batch,
        pg_bin=Path(w.pg_bin) if w.pg_bin else None,
        dsn=parse_dsn(dsn) if dsn else None,
        sample_interval=params.get("sample_interval", DEFAULT_SAMPLE_INTERVAL),
        duration=w.duration,
        warmup_seconds=w.warmup_split()[0],
        warmup_rows=w.warmup_split()[1],
        rate=w.rate,
        **_variations(w),
    )


def _variations(w: PopulateWorkload) -> dict[str, Any]:
    """Seed 003's variation options of a cell (see PopulateWorkload), as PopulateOptions has
    them."""
    from iolab.analysis.steady import SteadyCriterion

    return {
        "checkpoint_every": None if w.checkpoint_every in (None, OFF) else w.checkpoint_every,
        "presize_wal": parse_size(w.presize_wal, "--presize-wal")
        if w.presize_wal not in (None, OFF)
        else None,
        "steady": SteadyCriterion(w.steady_window, w.steady_tolerance),
    }


def _on_device(params: Mapping[str, Any]) -> bool:
    from iolab.config.experiment import DEVICE_PREFIX  # the experiment files' model: on use

    dirs = [*params["data_dirs"], params.get("wal_dir"), params.get("temp_dir")]
    return any(str(d).startswith(DEVICE_PREFIX) for d in dirs if d)


def _engine_check(engine: str, layout: Layout, pg_bin: str | None, checked: Checked) -> None:
    from iolab.engines import catalog

    key = ("engine", engine, id(layout), pg_bin)  # layouts are made once per plan (Checked)
    checked.once(
        key, lambda: catalog.check(engine, layout, pg_bin=Path(pg_bin) if pg_bin else None)
    )


def _populate_check(params: Mapping[str, Any], checked: Checked) -> None:
    from iolab.workloads.populate import check_layout, check_presize_space, check_space

    layout, on_device = checked.layout(params)
    options = populate_options(params, layout)
    options.validate()
    _engine_check(options.engine, layout, params.get("pg_bin"), checked)
    if not on_device:
        checked.once(("dirs", tuple(layout.named_dirs())), lambda: check_layout(layout))
        check_space(options, checked.free_space)
        check_presize_space(options, checked.free_space)


def _populate(
    params: Mapping[str, Any], resolve: Resolve, events: EventSink
) -> tuple[Body, dict[str, Path], dict[str, str]]:
    from iolab.workloads.populate import preflight, run_populate

    layout = layout_of(params, resolve)
    options = populate_options(params, layout)
    preflight(options)
    roles = layout.roles()
    return (lambda outcome: run_populate(options, outcome, events)), roles, {}


def _populate_judge(params: Mapping[str, Any]) -> Judged:
    """A load of a fixed count of rows is judged by its elapsed time; a timed load (a
    duration) lasts its duration whatever the engine does, so by its rows/s; an offered load
    (a rate) inserts at the rate while it holds, so by the 99th percentile latency of its
    commits. What the cell fixes is held, and refused as a metric."""
    held: dict[str, str] = {}
    duration, rate = params.get("duration"), params.get("rate")
    if duration is not None:
        why = f"each run lasts its duration, {_seconds(duration)}"
        held |= {k: why for k in ("elapsed_seconds", "first_finished_seconds", "wall_seconds")}
    if rate is not None:
        why = f"each run is offered {float(rate):g} rows/s, its rate"
        held |= {
            k: why
            for k in ("rows_per_second", "rows_per_second_with_warmup", "payload_mb_per_second")
        }
        if duration is None:  # the schedule sets the time too: rows / rate
            why = f"its rows at {float(rate):g} rows/s take the time its rate sets"
            held |= {k: why for k in ("elapsed_seconds", "first_finished_seconds", "wall_seconds")}
        insert = params.get("method", "insert") == "insert"
        per_statement = 1 if insert else params.get("batch", 100)
        commits = "transaction" if params.get("commit_every", 1) <= per_statement else "commit"
        return Judged(f"latency.{commits}.p99_us", f"{commits} p99 us", held)
    if duration is not None:
        return Judged("rows_per_second", "rows/s", held)
    return Judged("elapsed_seconds", "elapsed s", held)


def _seconds(value: str | float) -> str:
    try:
        return f"{seconds(value):g} s"
    except ValueError:
        return str(value)


def _populate_estimate(params: Mapping[str, Any]) -> float:
    rows = params.get("rows") or 10_000
    return 5.0 + float(rows) / 3000.0  # a server start, and a slow disk's rows/s


def disk_options(params: Mapping[str, Any], target: Path) -> DiskOptions:
    from iolab.fio.jobs import DataPattern
    from iolab.workloads.diskmark import DiskOptions

    w = _model(DiskWorkload, params)
    return DiskOptions(
        path=target,
        profile=w.profile,
        size=parse_size(w.size, "--size"),
        runs=w.runs,
        duration=w.duration,
        interval=w.interval,
        data=DataPattern(w.data),
        direct=w.direct,
        mix=w.mix,
        sweep=w.sweep_spec(),
        sample_interval=params.get("sample_interval", DEFAULT_SAMPLE_INTERVAL),
    )


def _disk_check(params: Mapping[str, Any], checked: Checked) -> None:
    from iolab.workloads.diskmark import check_size, check_target

    options = disk_options(params, Path(params["data_dirs"][0]))
    check_size(options)  # also on a testbed device
    if _on_device(params):
        return
    checked.once(("disk", options.path, options.size), lambda: check_target(options))


def _disk(
    params: Mapping[str, Any], resolve: Resolve, events: EventSink
) -> tuple[Body, dict[str, Path], dict[str, str]]:
    from iolab.fio.runner import fio_version
    from iolab.workloads.diskmark import check_target, run_profile

    target = resolve(params["data_dirs"][0])
    options = disk_options(params, target)
    check_target(options)

    def body(outcome: RunOutcome) -> None:
        run_profile(options, outcome, events)

    return body, {"target": target}, {"fio": fio_version()}


def _disk_estimate(params: Mapping[str, Any]) -> float:
    options = disk_options(params, Path("."))
    return options.estimated_seconds() + 10.0  # and writing the test file


def tpch_options(params: Mapping[str, Any], layout: Layout) -> TpchOptions:
    from iolab.workloads.tpch import TpchOptions
    from iolab.workloads.tpch_answers import QUERIES

    w = _model(TpchWorkload, params)
    return TpchOptions(
        engine=w.engine,
        layout=layout,
        scale_factor=w.scale_factor,
        compression={"on": True, "off": False}.get(w.compression),
        cold=w.cold,
        timeout=w.timeout,
        queries=tuple(w.queries) if w.queries else QUERIES,
        loaders=w.loaders,
        pg_bin=Path(w.pg_bin) if w.pg_bin else None,
        sample_interval=params.get("sample_interval", DEFAULT_SAMPLE_INTERVAL),
    )


def _tpch_check(params: Mapping[str, Any], checked: Checked) -> None:
    from iolab.workloads.populate import check_layout
    from iolab.workloads.tpch import preflight

    layout, on_device = checked.layout(params)
    options = tpch_options(params, layout)
    options.validate()
    _engine_check(options.engine, layout, params.get("pg_bin"), checked)
    if not on_device:
        checked.once(("dirs", tuple(layout.named_dirs())), lambda: check_layout(layout))
        key = ("tpch", options.engine, options.scale_factor, tuple(sorted(layout.settings.items())))
        checked.once(key, lambda: preflight(options))


def _tpch(
    params: Mapping[str, Any], resolve: Resolve, events: EventSink
) -> tuple[Body, dict[str, Path], dict[str, str]]:
    from iolab.workloads.populate import check_layout
    from iolab.workloads.tpch import preflight, run_tpch

    layout = layout_of(params, resolve)
    options = tpch_options(params, layout)
    preflight(options)
    check_layout(layout)
    roles = layout.roles()
    return (lambda outcome: run_tpch(options, outcome, events)), roles, {}


def _tpch_estimate(params: Mapping[str, Any]) -> float:
    return 20.0 + 120.0 * float(params["scale_factor"])  # load and 22 queries, SF 1 ~ 2 min


def _driver_check(params: Mapping[str, Any], checked: Checked) -> None:
    """pgbench's and sysbench's checks: the options, arguments and scripts, the engine, the
    layout's directories."""
    from iolab.workloads.populate import check_layout

    layout, on_device = checked.layout(params)
    options = _driver_options(params, layout)
    options.validate()
    _engine_check(options.engine, layout, params.get("pg_bin"), checked)
    if not on_device:
        checked.once(("dirs", tuple(layout.named_dirs())), lambda: check_layout(layout))


def _driver_options(params: Mapping[str, Any], layout: Layout) -> PgbenchOptions | SysbenchOptions:
    from iolab.workloads.pgbench.workload import pgbench_options
    from iolab.workloads.sysbench.workload import sysbench_options

    make = pgbench_options if params["kind"] == "pgbench" else sysbench_options
    return make(params, layout, None)


def _driver(
    params: Mapping[str, Any], resolve: Resolve, events: EventSink
) -> tuple[Body, dict[str, Path], dict[str, str]]:
    from iolab.workloads.pgbench.run import PgbenchOptions, run_pgbench
    from iolab.workloads.populate import check_layout
    from iolab.workloads.sysbench.run import run_sysbench

    layout = layout_of(params, resolve)
    options = _driver_options(params, layout)
    options.validate()
    check_layout(layout)

    def body(outcome: RunOutcome) -> None:
        if isinstance(options, PgbenchOptions):
            run_pgbench(options, outcome, events)
        else:
            run_sysbench(options, outcome, events)

    return body, layout.roles(), {}


def _driver_estimate(params: Mapping[str, Any]) -> float:
    from iolab.workloads.pgbench.workload import estimate as pgbench_estimate
    from iolab.workloads.sysbench.workload import estimate as sysbench_estimate

    return (pgbench_estimate if params.get("kind") == "pgbench" else sysbench_estimate)(params)


KINDS: dict[str, Kind] = {
    "populate": Kind(
        "populate",
        "elapsed_seconds",
        "elapsed s",
        True,
        _populate,
        _populate_estimate,
        _populate_check,
        _populate_judge,
    ),
    "disk": Kind("disk", None, "", False, _disk, _disk_estimate, _disk_check),
    "tpch": Kind("tpch", "total_seconds", "total s", True, _tpch, _tpch_estimate, _tpch_check),
    "pgbench": Kind("pgbench", "tps", "tps", False, _driver, _driver_estimate, _driver_check),
    "sysbench": Kind("sysbench", "tps", "tps", False, _driver, _driver_estimate, _driver_check),
}
