"""The population workload's options: one model for ``iolab populate``'s flags and an
experiment file's ``[workload]`` table alike."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    field_validator,
    model_serializer,
)

from iolab.errors import BadInput
from iolab.latency.recording import MAX_RATE, MAX_SECONDS, rate_help
from iolab.units import parse_duration, parse_size
from iolab.workloads.caps import Caps
from iolab.workloads.interface import (
    OFF,
    Section,
    duration_check,
    is_number,
    one_of,
    optional,
    optional_duration,
)
from iolab.workloads.populate import dialects

# keys stored only where given, so that files without them keep their cells' names
LOAD_KEYS = ("duration", "warmup", "rate", "sample_interval")
RATE_UNIT = "rows per second over all loaders"  # what --rate counts
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
    elif is_number(str(value)):  # 0.5, 1e3: neither rows nor a duration with its unit
        raise ValueError(WARMUP_HELP)
    else:
        try:
            return parse_duration(str(value).strip(), "warmup"), None
        except BadInput:
            raise ValueError(WARMUP_HELP) from None
    if rows < 0:
        raise ValueError(WARMUP_HELP)
    return None, rows


# populate keys left out of a cell's parameters while at these values (see PopulateWorkload)
VARIATION_DEFAULTS: dict[str, Any] = {
    "checkpoint_every": None,
    "presize_wal": None,
    "steady_window": 10,
    "steady_tolerance": 10.0,
}


class PopulateWorkload(Section, Caps):
    hints: ClassVar[Mapping[str, str]] = {
        "rows": "give 1 or more rows",
        "connections": "give at least 1 loader connection",
        "commit_every": "give 1 or more rows per commit",
        "batch": "give 1 or more rows per statement",
        "rate": rate_help(RATE_UNIT),
        "steady_window": "give 3 or more samples",
        "steady_tolerance": "give a percentage above 0 and at most 100",
    }
    kind: Literal["populate"]
    engine: Annotated[str, AfterValidator(one_of(dialects.NAMES))] = dialects.DEFAULT
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
    sample_interval: Annotated[
        float | None, BeforeValidator(optional(duration_check(0.1, False)))
    ] = None
    # a time-based load instead of rows: seconds, or as on the command line ("10m")
    duration: Annotated[
        float | None, BeforeValidator(optional(duration_check(0.0, True, MAX_SECONDS)))
    ] = None
    warmup: str | int | None = None  # rows (10000) or a duration ("30s"), left out of results
    rate: float | None = Field(default=None, gt=0, le=MAX_RATE, allow_inf_nan=False)  # rows/s
    # Seed 003's variations (docs/populate.md): a checkpoint requested every so many seconds
    # on a connection of its own, the log grown to a size before the load, and the criterion
    # of the steady state (the last ``steady_window`` samples of rows/s within
    # ``steady_tolerance`` percent of their mean).
    # (either is "off" where a matrix compares it with the engine's own behaviour)
    checkpoint_every: Annotated[float | str | None, BeforeValidator(optional_duration)] = None
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
