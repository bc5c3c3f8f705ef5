"""Experiment files: one TOML file, validated, expanded into cells. No I/O beyond reading it.

The file has ``[experiment]`` (name, repetitions, order, failure policy, timeout),
``[workload]`` (``kind`` and that workload's parameters), ``[layouts.NAME]`` (data_dirs, files,
wal_dir, temp_dir, settings), optional ``[isolation]``, ``[hooks]``, ``[devices.NAME]`` (the
testbed) and ``[fleet]`` (address, hosts: docs/fleet.md), and ``[matrix]``: keys naming any
workload or layout parameter (``layout`` picks named layouts, ``settings.NAME`` one engine
setting, ``host`` the hosts of a fleet), each with a list of values. Every combination of
the matrix values is a cell; a cell is named by the hash of its resolved parameters, so a cell
whose parameters did not change keeps its runs when the file changes.

Relative paths are relative to the file's directory: a layout's directories, resolved into the
cells' parameters as they are read, and a workload's own (pgbench's and sysbench's scripts, the
directory the tool runs in), handed to the workload with each run (:attr:`Cell.run_params`).
"""

from __future__ import annotations

import itertools
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    Field,
    ValidationError,
    field_validator,
)

from iolab.errors import BadInput
from iolab.fleet import names
from iolab.input_files import read_text
from iolab.results import CellId, cell_id
from iolab.workloads.interface import (
    WORKDIR,
    LayoutSection,
    Section,
    bad_input,
    seconds,
)
from iolab.workloads.registry import MODELS

DEVICE_PREFIX = "device:"  # a path on an emulated device of the testbed: device:NAME[/sub/dir]


MAX_RUNS = 100_000  # a plan of more runs is refused before the matrix is expanded


class ExperimentSection(Section):
    name: str = Field(min_length=1)
    repetitions: int | Literal["auto"] = Field(default=3)
    ci_target: float = Field(default=0.02, gt=0, lt=1)
    min_repetitions: int = Field(default=3, ge=2)
    max_repetitions: int = Field(default=10, ge=2)
    order: Literal["shuffled", "sequential"] = "shuffled"
    seed: int = 0
    on_failure: Literal["retry", "skip", "stop"] = "skip"
    retries: int = Field(default=1, ge=0)
    timeout: str | float | None = None  # per run: seconds or "10min"
    baseline: dict[str, Any] | None = None  # matrix values naming the baseline cell
    baseline_every: int = Field(default=0, ge=0)  # re-run the baseline every N runs (drift)
    # after the cells' repetitions, check each cell's verdict once (`iolab why RUN --check`)
    check_why: bool = False
    check_runs: int = Field(default=3, ge=2)  # ... with this many re-runs a side

    @field_validator("repetitions")
    @classmethod
    def _reps(cls, v: int | str) -> int | str:
        if isinstance(v, int) and v < 1:
            raise ValueError('give 1 or more, or "auto"')
        return v

    @field_validator("timeout")
    @classmethod
    def _timeout(cls, v: str | float | None) -> str | float | None:
        if v is not None and seconds(v) <= 0:
            raise ValueError('give a duration above zero, e.g. "10min" or 600')
        return v

    def timeout_seconds(self) -> float | None:
        return None if self.timeout is None else seconds(self.timeout)


class IsolationSection(Section):
    drop_caches: bool = True  # when root: sync and drop the page cache before every run
    settle_seconds: float = Field(default=1.0, ge=0)  # idle time after the flush, before the run
    warmup: bool = False  # one discarded run of the first cell before the measured ones
    cooldown_seconds: float = Field(default=0.0, ge=0)  # idle time after every run


class HooksSection(Section):
    on_complete: str | None = None  # a shell command; gets the JSON summary on stdin
    on_failure: str | None = None  # called after every failed run, same input


class FleetSection(Section):
    address: str | None = None  # a fleet to run on: "auto", HOST:PORT or ray://... (--fleet)
    hosts: list[str] = Field(default_factory=list)  # spread the runs over these hosts


LAYOUT_KEYS = ("data_dirs", "files", "wal_dir", "temp_dir")
HOST_KEY = "host"  # the matrix key naming fleet hosts: a cell per host, compared like any key


class ExperimentFile(Section):
    experiment: ExperimentSection
    workload: dict[str, Any]
    layouts: dict[str, LayoutSection] = Field(min_length=1)
    matrix: dict[str, list[Any]] = Field(default_factory=dict)
    isolation: IsolationSection = IsolationSection()
    hooks: HooksSection = HooksSection()
    devices: dict[str, dict[str, Any]] = Field(default_factory=dict)
    fleet: FleetSection = FleetSection()


@dataclass(frozen=True)
class Cell:
    """One point of the matrix, resolved: what a run of it does, and its name."""

    id: CellId
    kind: str
    label: str  # the matrix values that make it, e.g. "layout=ssd files=4"
    values: dict[str, Any]  # those matrix values
    params: dict[str, Any]  # workload parameters plus the resolved layout
    workdir: str  # the file's directory, absolute: where its runs read relative paths

    @property
    def run_params(self) -> dict[str, Any]:
        """What the workload is handed for a run of the cell and its checks, here or on a fleet
        host: the parameters and the file's directory (:data:`WORKDIR`: a driver's relative
        scripts are read there and the tool runs there), which is not one of the parameters, so
        the cell's name does not depend on it."""
        return {**self.params, WORKDIR: self.workdir}


@dataclass(frozen=True)
class Experiment:
    """A validated experiment file and its cells."""

    source: Path
    spec: ExperimentFile
    cells: tuple[Cell, ...]
    baseline: Cell | None

    @property
    def name(self) -> str:
        return self.spec.experiment.name

    @property
    def kind(self) -> str:
        return self.cells[0].kind


def load(path: Path) -> Experiment:
    """Read, validate and expand an experiment file; raises BadInput naming the key path."""
    text = read_text(path, "EXPERIMENT", "experiment file (.toml)")
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise BadInput(str(path), "TOML", f"fix the syntax: {exc}") from None
    return parse(raw, path)


def parse(raw: Mapping[str, Any], source: Path) -> Experiment:
    if "devices" in raw and not {"experiment", "workload"} & raw.keys():
        raise BadInput(
            "EXPERIMENT",
            str(source),
            "this is a testbed file ([devices] and no [experiment]): bring its devices up with "
            f"`iolab testbed up {source}`, or give an experiment file",
        )
    raw = _current_names(raw)
    try:
        spec = ExperimentFile.model_validate(raw)
    except ValidationError as exc:
        raise bad_input(exc, model=ExperimentFile) from None
    kind = spec.workload.get("kind")
    model = MODELS.get(str(kind)) if kind is not None else None
    if model is None:
        raise BadInput.choice("workload.kind", kind, MODELS)
    try:
        base = model.model_validate(spec.workload)
    except ValidationError as exc:
        raise bad_input(exc, "workload", model) from None
    e = spec.experiment
    if e.min_repetitions > e.max_repetitions:
        raise BadInput(
            "experiment.min_repetitions", e.min_repetitions, "give at most max_repetitions"
        )
    if spec.devices:
        from iolab.testbed import parse_devices

        parse_devices(spec.devices, "devices")  # validated now; brought up by the runner
    _check_fleet(spec)
    cells = expand(spec, base, model, source.parent)
    baseline = _baseline(spec, cells)
    return Experiment(source, spec, tuple(cells), baseline)


def _current_names(raw: Mapping[str, Any]) -> dict[str, Any]:
    """``raw`` with the workload's, the matrix's and the baseline's old keys (``rampup``) under
    their names now (``warmup``), each said once (:mod:`iolab.vocabulary`)."""
    from iolab.vocabulary import renamed

    out = dict(raw)
    workload = raw.get("workload")
    if not isinstance(workload, Mapping):
        return out
    model = MODELS.get(str(workload.get("kind")))
    if model is None:
        return out
    known = model.model_fields
    out["workload"] = renamed(workload, known, "workload.")
    if isinstance(raw.get("matrix"), Mapping):
        out["matrix"] = renamed(raw["matrix"], known, "matrix.")
    experiment = raw.get("experiment")
    if isinstance(experiment, Mapping) and isinstance(experiment.get("baseline"), Mapping):
        baseline = renamed(experiment["baseline"], known, "experiment.baseline.")
        out["experiment"] = {**experiment, "baseline": baseline}
    return out


def _check_matrix(spec: ExperimentFile, model: type[Section]) -> None:
    workload_keys = set(model.model_fields) - {"kind"}
    allowed = sorted(workload_keys | set(LAYOUT_KEYS) | {"layout", HOST_KEY, "settings.NAME"})
    for key, values in spec.matrix.items():
        if not values:
            raise BadInput(
                f"matrix.{key}", values, "give at least one value; the matrix expands to nothing"
            )
        if key == "layout":
            for i, name in enumerate(values):
                if name not in spec.layouts:
                    raise BadInput.choice(f"matrix.layout[{i}]", name, spec.layouts)
        elif key == HOST_KEY:
            for i, host in enumerate(values):
                _host(host, f"matrix.host[{i}]")
        elif (
            key not in workload_keys and key not in LAYOUT_KEYS and not key.startswith("settings.")
        ):
            raise BadInput.choice(f"matrix.{key}", key, allowed, suggest=True)
        if len({repr(v) for v in values}) != len(values):
            raise BadInput(f"matrix.{key}", values, "give each value once")


def expand(spec: ExperimentFile, base: Section, model: type[Section], root: Path) -> list[Cell]:
    """Every combination of the matrix values, resolved and validated, in file order."""
    _check_matrix(spec, model)
    if "layout" not in spec.matrix and len(spec.layouts) > 1:
        raise BadInput(
            "matrix.layout",
            None,
            f"the file names {len(spec.layouts)} layouts ({', '.join(spec.layouts)}): "
            "say which to run, e.g. layout = [" + ", ".join(f'"{n}"' for n in spec.layouts) + "]",
        )
    _check_size(spec)
    keys = list(spec.matrix)
    workload_keys = [k for k in keys if k not in ("layout", HOST_KEY) and k not in LAYOUT_KEYS]
    workload_keys = [k for k in workload_keys if not k.startswith("settings.")]
    layout_keys = [
        k for k in keys if k == "layout" or k in LAYOUT_KEYS or k.startswith("settings.")
    ]
    base_workload = base.model_dump()
    # Cells share their workload and their layout with many others: each distinct one is
    # validated and resolved once (a matrix of 10,000 cells plans in well under a second).
    workloads: dict[str, dict[str, Any]] = {}
    layouts: dict[str, dict[str, Any]] = {}
    cells: list[Cell] = []
    workdir = str(root.resolve())
    for combo in itertools.product(*(spec.matrix[k] for k in keys)):
        values = dict(zip(keys, combo, strict=True))
        layout_name = values.get("layout", next(iter(spec.layouts)))
        wkey = repr([values[k] for k in workload_keys])
        workload = workloads.get(wkey)
        if workload is None:
            raw = {**base_workload, **{k: values[k] for k in workload_keys}}
            try:
                workload = model.model_validate(raw).model_dump()
            except ValidationError as exc:
                raise bad_input(exc, _where(values), model) from None
            workloads[wkey] = workload
        lkey = repr([values[k] for k in layout_keys])
        layout = layouts.get(lkey)
        if layout is None:
            raw_layout = spec.layouts[layout_name].model_dump()
            for key in layout_keys:
                if key.startswith("settings."):
                    name = key.removeprefix("settings.")
                    raw_layout["settings"] = {**raw_layout["settings"], name: values[key]}
                elif key in LAYOUT_KEYS:
                    raw_layout[key] = values[key]
            try:
                raw_layout = LayoutSection.model_validate(raw_layout).model_dump()
            except ValidationError as exc:
                raise bad_input(exc, _where(values), LayoutSection) from None
            layout = _resolve_dirs(raw_layout, f"layouts.{layout_name}", root, spec)
            layouts[lkey] = layout
        params = {**workload, "layout": layout_name, **layout}
        if HOST_KEY in values:
            params[HOST_KEY] = _host(values[HOST_KEY])
        label = " ".join(f"{k}={_short(v)}" for k, v in values.items()) or layout_name
        cells.append(Cell(cell_id(params), workload["kind"], label, values, params, workdir))
    return cells


def _host(value: Any, where: str = "matrix.host") -> str:
    return names.host_name(value, where)


def _check_fleet(spec: ExperimentFile) -> None:
    """``[fleet]``: an address of the form ``--fleet`` takes, and host names."""
    if spec.fleet.address is not None:
        names.address(spec.fleet.address, "fleet.address")
    for i, host in enumerate(spec.fleet.hosts):
        _host(host, f"fleet.hosts[{i}]")


def _where(values: Mapping[str, Any]) -> str:
    return "matrix (" + ", ".join(f"{k}={v!r}" for k, v in values.items()) + ")"


def _check_size(spec: ExperimentFile) -> None:
    """Count the runs before expanding the matrix: refuse more than MAX_RUNS, saying how."""
    cells = 1
    for values in spec.matrix.values():
        cells *= len(values)
    e = spec.experiment
    reps = e.max_repetitions if e.repetitions == "auto" else int(e.repetitions)
    if cells * reps <= MAX_RUNS:
        return
    widest = sorted(spec.matrix.items(), key=lambda kv: -len(kv[1]))[:3]
    keys = ", ".join(f"matrix.{k} has {len(v):,} values" for k, v in widest)
    raise BadInput(
        "matrix",
        f"{cells:,} cells",
        f"{cells:,} cells x {reps} repetitions is {cells * reps:,} runs, more than the "
        f"{MAX_RUNS:,} an experiment may plan; narrow it ({keys}) or split it into "
        "several experiment files",
    )


def _short(value: Any) -> str:
    if isinstance(value, list):
        return "+".join(str(v) for v in value)
    return str(value)


def _resolve_dirs(
    layout: dict[str, Any], where: str, root: Path, spec: ExperimentFile
) -> dict[str, Any]:
    """Relative paths are relative to the experiment file; device paths must name a device."""

    def one(text: str | None, key: str) -> str | None:
        if text is None:
            return None
        if text.startswith(DEVICE_PREFIX):
            name = text.removeprefix(DEVICE_PREFIX).split("/", 1)[0]
            if name not in spec.devices:
                raise BadInput(
                    f"{where}.{key}",
                    text,
                    "name a device of the [devices] section"
                    + (f": {', '.join(spec.devices)}" if spec.devices else " (there is none)"),
                )
            return text
        path = Path(text).expanduser()
        path = path if path.is_absolute() else root / path
        if not path.is_dir():
            raise BadInput(f"{where}.{key}", text, "give an existing directory")
        return str(path.resolve())

    out = dict(layout)
    out["data_dirs"] = [one(d, f"data_dirs[{i}]") for i, d in enumerate(layout["data_dirs"])]
    out["wal_dir"] = one(layout["wal_dir"], "wal_dir")
    out["temp_dir"] = one(layout["temp_dir"], "temp_dir")
    out["settings"] = {
        k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in layout["settings"].items()
    }
    return out


def _baseline(spec: ExperimentFile, cells: list[Cell]) -> Cell | None:
    wanted = spec.experiment.baseline
    if wanted is None:
        return None
    for key in wanted:
        if not spec.matrix:
            raise BadInput(
                f"experiment.baseline.{key}",
                key,
                "the file has no [matrix]: a baseline names one of its cells by matrix values",
            )
        if key not in spec.matrix:
            raise BadInput.choice(f"experiment.baseline.{key}", key, spec.matrix, suggest=True)
    found = [c for c in cells if all(c.values.get(k) == v for k, v in wanted.items())]
    if len(found) != 1:
        raise BadInput(
            "experiment.baseline",
            wanted,
            f"name exactly one cell by its matrix values ({len(found)} cells match)",
        )
    return found[0]
