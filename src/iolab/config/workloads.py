"""Each workload's options: one pydantic model per workload kind, validated once.

The same model checks a command's flags (``iolab disk --duration 0``), an experiment file's
``[workload]`` table and every cell of its matrix; the runner then turns a cell's parameters into
the workload's run (:mod:`iolab.runner.kinds`). An error names where the value came from: the
flag on the command line (:func:`from_flags`), the key path in a file (:func:`bad_input`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import UnionType
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_serializer,
)

from iolab.config.fields import flag_of
from iolab.engines import catalog
from iolab.errors import BadInput
from iolab.units import parse_duration, parse_int_list, parse_size

if TYPE_CHECKING:
    from iolab.workloads.diskmark import SweepSpec

M = TypeVar("M", bound=BaseModel)
SWEEP_KEYS = ("bs", "qd", "threads", "rw", "rwmix")
# populate keys stored only where given, so that files without them keep their cells' names
LOAD_KEYS = ("duration", "warmup", "rate", "sample_interval")
# What a number out of range or not a number means, in the words of its workload key.
HINTS = {
    "runs": "give at least 1 measured pass",
    "rows": "give 1 or more rows",
    "connections": "give at least 1 loader connection",
    "commit_every": "give 1 or more rows per commit",
    "batch": "give 1 or more rows per statement",
    "loaders": "give 1 or more loader connections",
    "scale_factor": "give a positive scale factor, e.g. 1 or 0.01",
    "repetitions": 'give 1 or more runs per cell, or "auto"',
    "rate": "give rows per second over all loaders, a finite number more than 0",
    "steady_window": "give 3 or more samples",
    "steady_tolerance": "give a percentage above 0 and at most 100",
    "clients": "give 1 or more clients",
    "threads": "give 1 or more threads",
    "scale": "give a scale of 1 or more",
    "tables": "give 1 or more tables",
    "table_size": "give 1 or more rows per table",
}
WARMUP_HELP = 'give rows (a whole number, e.g. 10000) or a duration with its unit (e.g. "30s")'


def warmup_of(value: str | int | None) -> tuple[float | None, int | None]:
    """``(seconds, rows)`` of a warm-up: a whole number is rows, a duration has its unit
    ("30s", "2m"); (None, None) for none."""
    if value is None:
        return None, None
    if isinstance(value, bool):
        raise ValueError(WARMUP_HELP)
    if isinstance(value, int):
        rows = value
    elif str(value).strip().isdigit():
        rows = int(str(value).strip())
    elif _is_number(str(value)):  # 0.5, 1e3: neither rows nor a duration with its unit
        raise ValueError(WARMUP_HELP)
    else:
        try:
            return parse_duration(str(value).strip(), "warmup"), None
        except BadInput:
            raise ValueError(WARMUP_HELP) from None
    if rows < 0:
        raise ValueError(WARMUP_HELP)
    return None, rows


def _is_number(text: str) -> bool:
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


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

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
        return value


def seconds(value: str | float) -> float:
    """Seconds of a duration written as in the command line (5, "5s", "500ms", "10min")."""
    try:
        return parse_duration(value, "")
    except BadInput as exc:
        raise ValueError(exc.allowed) from None


def _duration(minimum: float, strict: bool) -> Callable[[str | float], float]:
    """A validator: the duration in seconds, at least ``minimum`` (above it when ``strict``)."""

    def check(value: str | float) -> float:
        if isinstance(value, bool):
            raise ValueError('give a duration: seconds or e.g. "5s", "10min"')
        given = seconds(value)
        if given < minimum or (strict and given == minimum):
            raise ValueError(f"give {'more than' if strict else 'at least'} {minimum:g} s")
        return given

    return check


OFF = "off"  # a variation option's value for "not this variation" (TOML has no null)


def _optional_duration(value: str | float | None) -> float | str | None:
    """A schedule's period: a duration above zero, or None / "off" (no schedule; "off" is kept,
    so that a cell of a matrix with it is labelled as the file says)."""
    if value is None or value == OFF:
        return value
    return _duration(0.0, strict=True)(value)


def _optional(check: Callable[[Any], float]) -> Callable[[Any], float | None]:
    """A validator that lets None (the default) through and checks anything else."""
    return lambda value: None if value is None else check(value)


def _one_of(choices: Sequence[str]) -> Callable[[str], str]:
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


# populate keys left out of a cell's parameters while at these values (see PopulateWorkload)
VARIATION_DEFAULTS: dict[str, Any] = {
    "checkpoint_every": None,
    "presize_wal": None,
    "steady_window": 10,
    "steady_tolerance": 10.0,
}


class PopulateWorkload(Section):
    kind: Literal["populate"]
    engine: Annotated[str, AfterValidator(_one_of(catalog.POPULATE_ENGINES))] = (
        catalog.DEFAULT_ENGINE
    )
    rows: int | None = Field(default=None, ge=1)
    bytes: str | None = None
    connections: int = Field(default=16, ge=1)
    commit_every: int = Field(default=1, ge=1)
    method: Literal["insert", "multirow", "copy"] = "insert"
    mode: Literal["client", "server"] = "client"
    key: Literal["sequential", "random", "ordered-uuid"] = "sequential"
    batch: int = Field(default=100, ge=1)
    pg_bin: str | None = None
    # seconds between probe samples (as --sample-interval): 0.1 or more, "1s", "100ms"; None:
    # the default (1 s), left out of the cell's parameters so that cells keep their names
    sample_interval: Annotated[float | None, BeforeValidator(_optional(_duration(0.1, False)))] = (
        None
    )
    # a time-based load instead of rows: seconds, or as on the command line ("10m")
    duration: Annotated[float | None, BeforeValidator(_optional(_duration(0.0, strict=True)))] = (
        None
    )
    warmup: str | int | None = None  # rows (10000) or a duration ("30s"), left out of results
    rate: float | None = Field(default=None, gt=0, allow_inf_nan=False)  # rows/s, all loaders
    # Seed 003's variations (docs/populate.md): a checkpoint requested every so many seconds
    # on a connection of its own, the log grown to a size before the load, and the criterion
    # of the steady state (the last ``steady_window`` samples of rows/s within
    # ``steady_tolerance`` percent of their mean).
    # (either is "off" where a matrix compares it with the engine's own behaviour)
    checkpoint_every: Annotated[float | str | None, BeforeValidator(_optional_duration)] = None
    presize_wal: str | None = None
    steady_window: int = Field(default=10, ge=3)
    steady_tolerance: float = Field(default=10.0, gt=0, le=100)

    @field_validator("duration")
    @classmethod
    def _duration_alone(cls, v: float | None, info: ValidationInfo) -> float | None:
        if v is not None and (info.data.get("rows") is not None or info.data.get("bytes")):
            raise ValueError("give either rows/bytes or a duration, not both")
        if v is not None and info.data.get("mode") == "server":
            raise ValueError("a duration needs mode client (a server loop runs a fixed count)")
        return v

    @field_validator("warmup", mode="before")
    @classmethod
    def _warmup_given(cls, v: object) -> object:
        if isinstance(v, float):  # 0.5: neither rows nor a duration with its unit
            raise ValueError(WARMUP_HELP)
        return v

    @field_validator("warmup")
    @classmethod
    def _warmup(cls, v: str | int | None, info: ValidationInfo) -> str | int | None:
        seconds, rows = warmup_of(v)
        duration = info.data.get("duration")
        if seconds is not None and duration is not None and seconds >= duration:
            raise ValueError(f"the warm-up is as long as the run ({duration:g} s) or longer")
        total = info.data.get("rows")
        if rows is not None and total is not None and rows >= total:
            raise ValueError(f"the warm-up is as long as the run ({total:,} rows) or longer")
        return v

    @field_validator("rate")
    @classmethod
    def _rate_client(cls, v: float | None, info: ValidationInfo) -> float | None:
        if v is not None and info.data.get("mode") == "server":
            raise ValueError("a rate needs mode client (each statement is paced from iolab)")
        return v

    def warmup_split(self) -> tuple[float | None, int | None]:
        """The warm-up as ``(seconds, rows)``."""
        return warmup_of(self.warmup)

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # The load's and seed 003's variation keys only where given: a file without them keeps
        # its cells' names.
        dumped: dict[str, Any] = handler(self)
        return {
            k: v
            for k, v in dumped.items()
            if (k not in LOAD_KEYS or v is not None) and VARIATION_DEFAULTS.get(k, ...) != v
        }

    @field_validator("presize_wal")
    @classmethod
    def _presize(cls, v: str | None) -> str | None:
        if v is not None and v != OFF:
            try:
                parse_size(v, "presize_wal")
            except BadInput as exc:
                raise ValueError(f'{exc.allowed}; or "{OFF}"') from None
        return v

    @field_validator("bytes")
    @classmethod
    def _bytes(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                parse_size(v, "bytes")
            except BadInput as exc:
                raise ValueError(exc.allowed) from None
        return v


class DiskWorkload(Section):
    kind: Literal["disk"]
    profile: str = "default"
    size: str = "1GiB"
    runs: int = Field(default=5, ge=1)
    # seconds, or as on the command line ("5s"); the same range as --duration and --interval
    duration: Annotated[float, BeforeValidator(_duration(1.0, strict=False))] = 5.0
    interval: Annotated[float, BeforeValidator(_duration(0.0, strict=False))] = 5.0
    data: Literal["random", "zero"] = "random"
    direct: bool = True
    mix: bool = False
    # The sweep profile's SQLIO matrix, written as on the command line ("4k,8k,64k", "1,8,32").
    bs: str | None = None
    qd: str | None = None
    threads: str | None = None
    rw: str | None = None
    rwmix: int | None = None

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # The sweep's keys only where given: a file without them keeps its cells' names.
        dumped: dict[str, Any] = handler(self)
        return {k: v for k, v in dumped.items() if k not in SWEEP_KEYS or v is not None}

    @field_validator("bs", "qd", "threads", "rw", "rwmix")
    @classmethod
    def _sweep(cls, v: str | int | None, info: ValidationInfo) -> str | int | None:
        if v is None:
            return v
        if info.data.get("profile") != "sweep":
            raise ValueError("goes with the sweep profile only")
        if info.field_name == "rwmix" and not 0 <= int(v) <= 100:
            raise ValueError("give the read share in percent, 0 to 100")
        try:
            if info.field_name == "bs":
                for size in str(v).split(","):
                    parse_size(size, "bs")
            elif info.field_name == "rw":
                from iolab.workloads.diskmark import SWEEP_MODES

                if any(m.strip() not in SWEEP_MODES for m in str(v).split(",")):
                    raise ValueError("choose one of: " + ", ".join(SWEEP_MODES))
            elif info.field_name in ("qd", "threads"):
                from iolab.fio.runner import check_parallelism

                counts = parse_int_list(str(v), info.field_name)
                qd = parse_int_list(info.data["qd"], "qd") if info.data.get("qd") else [1]
                both = (counts, [1]) if info.field_name == "qd" else (qd, counts)
                check_parallelism(*both)
        except BadInput as exc:
            if " x " in exc.field:  # the product of both lists: say which numbers make it
                raise ValueError(f"queue depth x threads is {exc.value}; {exc.allowed}") from None
            raise ValueError(exc.allowed) from None
        return v

    def sweep_spec(self) -> SweepSpec | None:
        """The sweep's matrix (defaults where not given), or None for the other profiles."""
        from iolab.workloads.diskmark import SweepSpec

        if self.profile != "sweep":
            return None
        spec = SweepSpec()
        return SweepSpec(
            block_sizes=tuple(parse_size(b, "bs") for b in self.bs.split(","))
            if self.bs
            else spec.block_sizes,
            queue_depths=tuple(parse_int_list(self.qd, "qd")) if self.qd else spec.queue_depths,
            threads=tuple(parse_int_list(self.threads, "threads"))
            if self.threads
            else spec.threads,
            modes=tuple(m.strip() for m in self.rw.split(",") if m.strip())
            if self.rw
            else spec.modes,
            rwmix=self.rwmix,
        )

    @field_validator("profile")
    @classmethod
    def _profile(cls, v: str) -> str:
        from iolab.workloads.diskmark import PROFILES

        if v not in PROFILES:
            raise ValueError("choose one of: " + ", ".join(PROFILES))
        return v

    @field_validator("size")
    @classmethod
    def _size(cls, v: str) -> str:
        try:
            if parse_size(v, "size") <= 0:
                raise ValueError("give a size above zero, e.g. 1GiB")
        except BadInput as exc:
            raise ValueError(exc.allowed) from None
        return v


class TpchWorkload(Section):
    kind: Literal["tpch"]
    engine: Annotated[str, AfterValidator(_one_of(catalog.TPCH_ENGINES))] = catalog.TPCH_DEFAULT
    scale_factor: float = Field(default=1.0, gt=0)
    compression: Literal["on", "off", "default"] = "default"
    cold: bool = True
    # seconds per query, or as on the command line ("10m")
    timeout: Annotated[float, BeforeValidator(_duration(0.0, strict=True))] = 600.0
    queries: list[int] | None = None  # a subset of 1..22; all when left out
    loaders: int | None = Field(default=None, ge=1)
    pg_bin: str | None = None


def _whole_seconds(value: float | None) -> float | None:
    """The drivers take whole seconds (pgbench -T, sysbench --time)."""
    if value is not None and value != int(value):
        raise ValueError('give whole seconds, e.g. 30 or "5min"')
    return value


class DriverWorkload(Section):
    """What pgbench and sysbench runs share: the keys people vary, as named matrix keys, and
    the rest of the tool's arguments as given (``args``); ``init = false`` runs no
    initialisation (the database holds what the run needs: a server of yours)."""

    threads: int | None = Field(default=None, ge=1)
    duration: Annotated[
        float | None,
        BeforeValidator(lambda v: None if v is None else _duration(0.0, strict=True)(v)),
        AfterValidator(_whole_seconds),
    ] = None
    rate: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    args: list[str] = []
    init: bool = True
    pg_bin: str | None = None


class PgbenchWorkload(DriverWorkload):
    kind: Literal["pgbench"]
    engine: Annotated[str, AfterValidator(_one_of(("postgres",)))] = "postgres"
    clients: int | None = Field(default=None, ge=1)
    scale: int | None = Field(default=None, ge=1)
    # builtin names (tpcb-like, simple-update, select-only) or script files, each NAME[@WEIGHT]
    script: list[str] = []
    init_args: str = "-i"


class SysbenchWorkload(DriverWorkload):
    kind: Literal["sysbench"]
    engine: Annotated[str, AfterValidator(_one_of(("mariadb", "postgres")))] = "mariadb"
    script: str  # one of sysbench's own (oltp_read_write) or a Lua file
    tables: int | None = Field(default=None, ge=1)
    table_size: int | None = Field(default=None, ge=1)


WORKLOADS: dict[str, type[Section]] = {
    "populate": PopulateWorkload,
    "disk": DiskWorkload,
    "tpch": TpchWorkload,
    "pgbench": PgbenchWorkload,
    "sysbench": SysbenchWorkload,
}


_TYPE_TAGS = frozenset({"int", "float", "str", "bool", "list", "dict"})


def _keys(loc: Sequence[int | str]) -> list[int | str]:
    """A pydantic location without the union members it names ("int", "literal['auto']")."""
    return [p for p in loc if not (isinstance(p, str) and (p in _TYPE_TAGS or "[" in p))]


def _loc(loc: Sequence[int | str]) -> str:
    out = ""
    for part in _keys(loc):
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def bad_input(exc: ValidationError, prefix: str = "") -> BadInput:
    """The first validation error as a BadInput naming the key path, value and what is allowed."""
    err = exc.errors()[0]
    where = _loc([*([prefix] if prefix else []), *err["loc"]])
    message = err["msg"].removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        return BadInput(
            where, err.get("input"), "unknown key; check its spelling in docs/experiments.md"
        )
    if err["type"] == "missing":
        return BadInput(where, None, "this key is required")
    ctx = err.get("ctx", {})
    bound = {"greater_than": "gt", "greater_than_equal": "ge", "less_than_equal": "le"}
    key = bound.get(err["type"])
    plain = {
        "float_parsing": "give a number, e.g. 1 or 0.01",
        "finite_number": "give a finite number",
        "int_parsing": "give a whole number",
        "int_from_float": "give a whole number",
        "bool_parsing": "give true or false",
        "greater_than": "give more than {:g}",
        "greater_than_equal": "give {:g} or more",
        "less_than_equal": "give {:g} or less",
    }.get(err["type"])
    if plain is not None and key is not None:
        plain = plain.format(ctx.get(key, 0))
    if plain is not None:
        keys = _keys(err["loc"])
        hint = HINTS.get(str(keys[-1])) if keys else None
        return BadInput(where, err.get("input"), hint or plain)
    if err["type"] == "literal_error":  # as every other choice: "choose one of: a, b"
        expected = str(err.get("ctx", {}).get("expected", ""))
        choices = [c.strip(" '") for c in expected.replace(" or ", ", ").split(",")]
        return BadInput.choice(where, err.get("input"), choices)
    return BadInput(where, err.get("input"), message)


def from_flags(model: type[M], values: Mapping[str, Any]) -> M:
    """A command's flags validated by the workload's model; an error names the flag."""
    try:
        return model.model_validate(dict(values))
    except ValidationError as exc:
        err = bad_input(exc)
        key = err.field.split("[", 1)[0].split(".", 1)[0]
        raise BadInput(flag_of(key), err.value, err.allowed) from None
