"""A disk profile's options: one model for ``iolab disk``'s flags and an experiment file's
``[workload]`` table alike."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import (
    BeforeValidator,
    Field,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    field_validator,
    model_serializer,
)

from iolab.errors import BadInput
from iolab.units import parse_int_list, parse_size
from iolab.workloads.interface import Section, duration_check

if TYPE_CHECKING:
    from iolab.workloads.disk.run import SweepSpec

SWEEP_KEYS = ("bs", "qd", "threads", "rw", "rwmix")


class DiskWorkload(Section):
    hints: ClassVar[Mapping[str, str]] = {"runs": "give at least 1 measured pass"}
    kind: Literal["disk"]
    profile: str = Field(default="default", description="a profile's name")
    size: str = Field(default="1GiB", description="a size")
    runs: int = Field(default=5, ge=1)
    # seconds, or as on the command line ("5s"); the same range as --duration and --interval
    duration: Annotated[float, BeforeValidator(duration_check(1.0, strict=False))] = 5.0
    interval: Annotated[float, BeforeValidator(duration_check(0.0, strict=False))] = 5.0
    data: Literal["random", "zero"] = "random"
    direct: bool = True
    mix: bool = False
    # The sweep profile's SQLIO matrix, written as on the command line ("4k,8k,64k", "1,8,32").
    bs: str | None = Field(default=None, description="block sizes", examples=["4k,8k,64k"])
    qd: str | None = Field(default=None, description="queue depths", examples=["1,8,32"])
    threads: str | None = Field(default=None, description="thread counts", examples=["1,4"])
    rw: str | None = Field(
        default=None, description="access patterns", examples=["randread,randwrite"]
    )
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
                from iolab.workloads.disk.run import SWEEP_MODES

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
        from iolab.workloads.disk.run import SweepSpec

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
        from iolab.workloads.disk.run import PROFILES

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
