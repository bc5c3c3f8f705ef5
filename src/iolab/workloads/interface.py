"""What every workload implements, and the option helpers their models share.

A workload is one package, ``workloads/<name>/`` (see docs/architecture.md), whose
:class:`Workload` value the registry (:mod:`iolab.workloads.registry`) lists: its options
model, the checks made before any run is recorded, how one cell's run is prepared, its time
estimate and the metric its statistics are about. The runner, experiment files, ``iolab plan``,
the fleet and the report find a workload there and nowhere else.

A workload's options model (a :class:`Section`) checks a command's flags (``iolab disk
--duration 0``), an experiment file's ``[workload]`` table and every cell of its matrix, once.
An error names where the value came from: the flag on the command line (:func:`from_flags`), the
key path in a file (:func:`bad_input`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, ClassVar, Literal, TypeVar, Union, get_args, get_origin

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from iolab.config.fields import flag_of, plainly
from iolab.engines.interface import Layout
from iolab.errors import BadInput, did_you_mean
from iolab.events import EventSink
from iolab.metrics import Metric
from iolab.results import RunOutcome
from iolab.units import format_seconds, parse_duration, parse_size

M = TypeVar("M", bound=BaseModel)
# What a number out of range or not a number means, in the words of its key: the experiment's
# own keys here, each workload's in its options model's ``hints`` (gathered by Section).
HINTS: dict[str, str] = {
    "repetitions": 'give 1 or more runs per cell, or "auto"',
}


def is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _types(annotation: Any) -> list[Any]:
    """The plain types a field's annotation takes (unions, Optional and Annotated unpacked;
    a Literal as the types of its values)."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _types(get_args(annotation)[0])
    if origin in (Union, UnionType):
        return [t for arg in get_args(annotation) for t in _types(arg)]
    if origin is Literal:
        return [type(v) for v in get_args(annotation)]
    return [annotation]


def _numbers_only(types: Sequence[Any]) -> str | None:
    """What to ask for when a value of these types cannot be true or false: "a whole number"
    or "a number"; None when a boolean is one of them, or no number is."""
    if bool in types or Any in types:
        return None
    if float in types:
        return "a number"
    return "a whole number" if int in types else None


def _text_only(annotation: Any) -> bool:
    """Whether a field takes text and nothing else (or None): not a choice (a Literal), not a
    number."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _text_only(get_args(annotation)[0])
    if origin in (Union, UnionType):
        return all(_text_only(a) for a in get_args(annotation))
    return annotation in (str, type(None))


class Section(BaseModel):
    """A workload's options model (or a part of an experiment file): unknown keys refused,
    frozen. A model's ``hints`` say, per key, what a number out of range means."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    hints: ClassVar[Mapping[str, str]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        HINTS.update(cls.hints)

    @model_validator(mode="before")
    @classmethod
    def _current_names(cls, data: Any) -> Any:
        """A key stored under an old name (a cell's ``rampup``) read as its name now
        (``warmup``); a file's or a flag's is said where it is read (:mod:`iolab.vocabulary`)."""
        if not isinstance(data, Mapping):
            return data
        from iolab.vocabulary import renamed

        return renamed(data, cls.model_fields, say=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_boolean_for_a_number(cls, value: Any, info: ValidationInfo) -> Any:
        """true and false are not numbers (pydantic would take them as 1 and 0), also inside a
        list of numbers (``queries = [true]``)."""
        field = cls.model_fields.get(info.field_name or "")
        if field is None or any(isinstance(m, BeforeValidator) for m in field.metadata):
            return value  # (a field read by a validator of its own says what it takes)
        types = _types(field.annotation)
        if isinstance(value, bool):
            wanted = _numbers_only(types)
        elif isinstance(value, list) and any(isinstance(v, bool) for v in value):
            items = [get_args(t)[0] for t in types if get_origin(t) is list and get_args(t)]
            wanted = next((w for t in items if (w := _numbers_only(_types(t)))), None)
        else:
            wanted = None
        if wanted is not None:
            raise ValueError(f"give {wanted}, not true or false")
        if value is not None and not isinstance(value, str) and _text_only(field.annotation):
            # a number or true where text goes: what the key takes, not "a valid string"
            example = field.examples[0] if field.examples else field.default
            raise ValueError(
                f"give {field.description or 'text'} in quotes"
                + (f', e.g. "{example}"' if isinstance(example, str) else "")
            )
        return value


def seconds(value: str | float) -> float:
    """Seconds of a duration written as in the command line (5, "5s", "500ms", "10min")."""
    try:
        return parse_duration(value, "")
    except BadInput as exc:
        raise ValueError(exc.allowed) from None


def duration_check(
    minimum: float, strict: bool, maximum: float = math.inf
) -> Callable[[str | float], float]:
    """A validator: the duration in seconds, at least ``minimum`` (above it when ``strict``),
    at most ``maximum``."""

    def check(value: str | float) -> float:
        if isinstance(value, bool):
            raise ValueError('give a duration: seconds or e.g. "5s", "10min"')
        given = seconds(value)
        if given < minimum or (strict and given == minimum):
            raise ValueError(f"give {'more than' if strict else 'at least'} {minimum:g} s")
        if given > maximum:
            raise ValueError(f"give at most {format_seconds(maximum)}")
        return given

    return check


OFF = "off"  # a variation option's value for "not this variation" (TOML has no null)


def optional_duration(value: str | float | None) -> float | str | None:
    """A schedule's period: a duration above zero, or None / "off" (no schedule; "off" is kept,
    so that a cell of a matrix with it is labelled as the file says)."""
    if value is None or value == OFF:
        return value
    return duration_check(0.0, strict=True)(value)


def optional(check: Callable[[Any], float]) -> Callable[[Any], float | None]:
    """A validator that lets None (the default) through and checks anything else."""
    return lambda value: None if value is None else check(value)


def one_of(choices: Sequence[str]) -> Callable[[str], str]:
    """A validator: the value is one of ``choices`` (an engine's name, a profile)."""

    def check(value: str) -> str:
        if value not in choices:
            raise ValueError("choose one of: " + ", ".join(choices))
        return value

    return check


class LayoutSection(Section):
    data_dirs: list[str] = Field(min_length=1)
    files: int = Field(default=1, ge=1)
    wal_dir: str | None = None
    temp_dir: str | None = None
    settings: dict[str, str | int | float | bool] = Field(default_factory=dict)


_TYPE_TAGS = frozenset({"int", "float", "str", "bool", "list", "dict"})


def _keys(loc: Sequence[int | str]) -> list[int | str]:
    """A pydantic location without the union members it names ("int", "literal['auto']")."""
    return [p for p in loc if not (isinstance(p, str) and (p in _TYPE_TAGS or "[" in p))]


def _loc(loc: Sequence[int | str]) -> str:
    out = ""
    for part in _keys(loc):
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def bad_input(
    exc: ValidationError, prefix: str = "", model: type[BaseModel] | None = None
) -> BadInput:
    """The first validation error as a BadInput naming the key path, value and what is allowed
    (a key the file misspelled first, with the closest of ``model``'s keys there)."""
    errors = exc.errors()
    err = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    where = _loc([*([prefix] if prefix else []), *err["loc"]])
    message = err["msg"].removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        keys = _keys(err["loc"])
        close = did_you_mean(str(keys[-1]), keys_at(model, keys[:-1])) if model else ""
        return BadInput(
            where,
            err.get("input"),
            f"unknown key; {close} (see docs/experiments.md)"
            if close
            else "unknown key; check its spelling in docs/experiments.md",
        )
    if err["type"] == "missing":
        return BadInput(where, None, "this key is required")
    plain = plainly(err)
    if plain is not None:
        keys = _keys(err["loc"])
        hint = HINTS.get(str(keys[-1])) if keys else None
        return BadInput(where, err.get("input"), hint or plain)
    if err["type"] == "literal_error":  # as every other choice: "choose one of: a, b"
        expected = str(err.get("ctx", {}).get("expected", ""))
        choices = [c.strip(" '") for c in expected.replace(" or ", ", ").split(",")]
        return BadInput.choice(where, err.get("input"), choices)
    return BadInput(where, err.get("input"), message)


def keys_at(model: type[BaseModel], path: Sequence[int | str]) -> list[str]:
    """The keys of the table at ``path`` in ``model`` (``("layouts", "a")`` of an experiment
    file: a layout's keys), or [] where it is not a model's table (a free-form one)."""
    annotation: Any = model
    for part in path:
        annotation = _table(annotation)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            field = annotation.model_fields.get(str(part))
            annotation = field.annotation if field is not None else None
        elif get_origin(annotation) in (dict, list):
            annotation = get_args(annotation)[-1]  # a table's value (by name), a list's item
        else:
            return []
    annotation = _table(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return list(annotation.model_fields)
    return []


def _table(annotation: Any) -> Any:
    """A field's annotation without Annotated and Optional: a model, a dict or list, or other."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _table(get_args(annotation)[0])
    if origin in (Union, UnionType):
        tables = [
            a
            for a in get_args(annotation)
            if get_origin(a) in (dict, list) or (isinstance(a, type) and issubclass(a, BaseModel))
        ]
        return _table(tables[0]) if tables else None
    return annotation


def from_flags(model: type[M], values: Mapping[str, Any]) -> M:
    """A command's flags validated by the workload's model; an error names the flag."""
    try:
        return model.model_validate(dict(values))
    except ValidationError as exc:
        err = bad_input(exc)
        key = err.field.split("[", 1)[0].split(".", 1)[0]
        raise BadInput(flag_of(key), err.value, err.allowed) from None


def free_space(path: Path) -> tuple[int, int] | None:
    """(filesystem id, bytes free to an unprivileged writer) of a directory; None if unreadable."""
    try:
        st = os.statvfs(path)
        return os.stat(path).st_dev, st.f_bavail * st.f_frsize
    except OSError:
        return None  # the directory checks say what is wrong with it


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
        names = ("data_dirs", "files", "wal_dir", "temp_dir", "settings", "engine", "memory")
        key = repr([params.get(k) for k in names])
        found = self._layouts.get(key)
        if found is None:
            found = self._layouts[key] = (layout_of(params, Path), on_device(params))
        return found

    def free_space(self, path: Path) -> tuple[int, int] | None:
        """A directory's filesystem and free bytes, read once per plan."""
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
class Headline:
    """Where a run's one number at a glance is (``iolab results list``, serve's index): a key of
    its summary or a dotted path into its tables (``tests.SEQ1M Q8T1 read.mbps``), declared in
    the workload's ``metrics.py`` (its unit comes from there), and what it is of, where the unit
    alone does not say (a disk test's name, a TPC-H run's count of queries)."""

    key: str
    of: str = ""


@dataclass(frozen=True)
class Workload:
    """What one workload is to the rest of iolab. ``metric`` is the summary key the statistics
    are about, unless ``judge`` says otherwise for a cell's parameters (:meth:`judged`)."""

    name: str  # as in experiment files (``kind = "tpch"``) and results
    model: type[Section]  # its options, for flags and files alike
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
    metrics: tuple[Metric, ...] = ()  # every number it records (see iolab.metrics)
    # the programs it runs itself are installed (MissingTool), as a fleet's host checks them
    check_tools: Callable[[], None] | None = None
    # with no single metric: the number a report is about when --metric is not given, from the
    # cells' parameters and their finished runs' summaries (BadInput when none ran)
    first_metric: (
        Callable[[Sequence[Mapping[str, Any]], Sequence[Mapping[str, Any]]], str] | None
    ) = None
    # a finished run's headline, from its parameters and summary (None: it recorded none)
    headline: Callable[[Mapping[str, Any], Mapping[str, Any]], Headline | None] | None = None

    def judged(self, params: Mapping[str, Any]) -> Judged | None:
        """What a cell of these parameters is judged by (None: no single number, a disk
        profile's tests)."""
        if self.judge is not None:
            return self.judge(params)
        if self.metric is None:
            return None
        return Judged(self.metric, self.metric_label, {})


def judged(kind: Workload, cells: Sequence[Mapping[str, Any]]) -> Judged | None:
    """What cells of ``kind`` (their parameters) are judged by together: the first cell's
    metric that no cell holds constant, and every number some cell holds (None: no single
    number)."""
    each = [j for j in (kind.judged(p) for p in cells) if j is not None]
    if not each:
        return kind.judged({})
    held = {k: v for j in each for k, v in j.held.items()}
    found = next((j for j in each if j.metric not in held), each[0])
    return Judged(found.metric, found.label, held)


S = TypeVar("S", bound=Section)
DEFAULT_SAMPLE_INTERVAL = 1.0  # seconds between probe samples, unless a command says otherwise
# The directory a run reads its relative paths from (a driver's scripts) and runs its tools in:
# an experiment file's own directory, which the runner hands the workload beside the cell's
# parameters (:attr:`iolab.config.experiment.Cell.run_params`); it is none of them, so no cell's
# name depends on it. Absent (a single command): the command's own directory.
WORKDIR = "workdir"


def workdir_of(params: Mapping[str, Any]) -> Path | None:
    """The run's :data:`WORKDIR`, or None: the directory the command runs in."""
    given = params.get(WORKDIR)
    return Path(given) if given else None


def model_of(model: type[S], params: Mapping[str, Any]) -> S:
    """The workload's options model of a cell's parameters. They were validated when the cell
    was made (from the file or the flags), so they are not checked again here: a plan of many
    cells reads no limit from /proc once per cell."""
    from iolab.vocabulary import renamed

    known = model.model_fields
    current = renamed(params, known, say=False)  # a cell stored under an old key (rampup)
    return model.model_construct(**{k: v for k, v in current.items() if k in known})


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
    """The cell's layout with every directory resolved (``device:NAME`` to its mount point),
    and under a ``memory`` cap the engine's settings fitted to it (docs/caps.md)."""
    return Layout(
        data_dirs=tuple(resolve(d) for d in params["data_dirs"]),
        files=int(params["files"]),
        wal_dir=resolve(params["wal_dir"]) if params.get("wal_dir") else None,
        temp_dir=resolve(params["temp_dir"]) if params.get("temp_dir") else None,
        settings=settings_of(params),
    )


def settings_of(params: Mapping[str, Any]) -> dict[str, Any]:
    """The engine's settings a cell gives, and under a ``memory`` cap those of its own the
    engine fits to the cap where they are not given (:meth:`EngineKind.fitted`)."""
    from iolab.engines import catalog

    given = dict(params.get("settings") or {})
    memory, kind = params.get("memory"), catalog.KINDS.get(str(params.get("engine")))
    if memory in (None, OFF) or kind is None:
        return given
    try:
        cap = parse_size(str(memory), "memory")
    except BadInput:
        return given  # the options' model names it
    return {**kind.fitted(given, cap), **given}


def on_device(params: Mapping[str, Any]) -> bool:
    from iolab.testbed.paths import PREFIX as DEVICE_PREFIX

    dirs = [*params["data_dirs"], params.get("wal_dir"), params.get("temp_dir")]
    return any(str(d).startswith(DEVICE_PREFIX) for d in dirs if d)


def engine_check(engine: str, layout: Layout, pg_bin: str | None, checked: Checked) -> None:
    from iolab.engines import catalog

    key = ("engine", engine, id(layout), pg_bin)  # layouts are made once per plan (Checked)
    checked.once(
        key, lambda: catalog.check(engine, layout, pg_bin=Path(pg_bin) if pg_bin else None)
    )
