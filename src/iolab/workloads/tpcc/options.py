"""TPC-C's options: one model for ``iolab tpcc``'s flags and an experiment file's
``[workload]`` table alike (every key a matrix key)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Annotated, ClassVar, Literal

from pydantic import AfterValidator, BeforeValidator, Field, ValidationInfo, field_validator

from iolab.workloads.caps import Caps
from iolab.workloads.interface import Section, duration_check, one_of
from iolab.workloads.tpcc import dialects, spec
from iolab.workloads.tpcc.modes import MODES

MIX_HELP = (
    "give five whole percentages for new_order,payment,order_status,delivery,stock_level "
    "that sum to 100, e.g. 45,43,4,4,4"
)
DEFAULT_MIX = ",".join(str(spec.DEFAULT_MIX[k]) for k in spec.TRANSACTIONS)
MAX_WAREHOUSES = 100_000
# the longest warm-up or measured window: a week (a longer one overflowed the clock's timeout
# after the whole load: 1000000000h)
MAX_SECONDS = 7 * 86_400
THINK_AND_RATE = (
    "give --think or --rate, not both: with --think each user waits its keying and thinking "
    "times, so an open loop's due times would count that waiting as latency"
)


def _at_most_a_week(value: float) -> float:
    if value > MAX_SECONDS:
        raise ValueError(f"give at most 7 days ({MAX_SECONDS:,} s), e.g. 8h")
    return value


def parse_mix(text: str) -> dict[str, int]:
    """``45,43,4,4,4`` (New-Order, Payment, Order-Status, Delivery, Stock-Level) as shares."""
    parts = [p.strip() for p in str(text).split(",")]
    if len(parts) != len(spec.TRANSACTIONS) or not all(p.isdigit() for p in parts):
        raise ValueError(MIX_HELP)
    shares = [int(p) for p in parts]
    if sum(shares) != 100:
        raise ValueError(f"the shares sum to {sum(shares)}; {MIX_HELP}")
    return dict(zip(spec.TRANSACTIONS, shares, strict=True))


def _mix(value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, str):
        raise ValueError(MIX_HELP)
    return ",".join(str(v) for v in parse_mix(value).values())


def _mode(value: str) -> str:
    if value != "default" and value not in MODES:
        raise ValueError("choose one of: server, client, default")
    return value


class TpccWorkload(Section, Caps):
    hints: ClassVar[Mapping[str, str]] = {
        "warehouses": f"give 1 to {MAX_WAREHOUSES:,} warehouses",
    }
    kind: Literal["tpcc"]
    engine: Annotated[str, AfterValidator(one_of(dialects.NAMES))] = dialects.DEFAULT
    warehouses: int = Field(default=1, ge=1, le=MAX_WAREHOUSES)
    connections: int = 4
    mode: Annotated[str, AfterValidator(_mode)] = "default"  # default: the engine's
    mix: Annotated[str, BeforeValidator(_mix)] = DEFAULT_MIX
    all_warehouses: bool = False
    warmup: Annotated[
        float, BeforeValidator(duration_check(0.0, strict=False)), AfterValidator(_at_most_a_week)
    ] = 10.0
    duration: Annotated[
        float, BeforeValidator(duration_check(0.0, strict=True)), AfterValidator(_at_most_a_week)
    ] = 60.0
    rate: float | None = None  # transactions a second, all users
    think: bool = False
    loaders: int | None = Field(default=None, ge=1)
    pg_bin: str | None = None

    # (messages of their own: populate's hints for these keys speak of loaders and rows)
    @field_validator("connections")
    @classmethod
    def _users(cls, value: int) -> int:
        if not 1 <= value <= 1000:
            raise ValueError("give 1 to 1000 virtual users")
        return value

    @field_validator("rate")
    @classmethod
    def _rate(cls, value: float | None) -> float | None:
        if value is not None and not (math.isfinite(value) and value > 0):
            raise ValueError("give a positive number of transactions a second")
        return value

    @field_validator("think")
    @classmethod
    def _think(cls, value: bool, info: ValidationInfo) -> bool:
        if value and info.data.get("rate") is not None:  # (rate is validated before think)
            raise ValueError(THINK_AND_RATE)
        return value
