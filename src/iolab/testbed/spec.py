"""What an emulated device is: the ``[devices.NAME]`` tables of a testbed or experiment file.

Parsing is strict and names the key path of every mistake (``devices.hdd.write_iops``), the value
and what is allowed, so a typo never silently becomes an unlimited device.
"""

from __future__ import annotations

import json
import math
import re
import shlex
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from iolab.errors import BadInput, did_you_mean
from iolab.input_files import read_text
from iolab.testbed import models
from iolab.units import SIZE_HELP, format_bytes, parse_size

FILESYSTEMS = ("ext4", "xfs")
# mkfs.xfs refuses filesystems under 300 MB; ext4 works from a few MiB, but a journal needs room.
MIN_SIZE = {"ext4": 16 * 1024 * 1024, "xfs": 320 * 1024 * 1024}
DEFAULT_BACKING_DIR = Path("/var/tmp")
MB = 1_000_000  # MB/s limits count decimal megabytes, as disk makers and `iolab disk` do
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$")
NAME_HELP = "use 1 to 32 letters, digits, '-' or '_', starting with a letter or digit"
# what the kernel's throttles hold: 32-bit IOPS and 64-bit bytes/s, the all-ones value of each
# meaning "no limit" (a larger number is cut to its low bits: 4294967301 IOPS became 5)
MAX_IOPS = 2**32 - 2
MAX_MBPS = (2**64 - 2) // MB
# mount options that would leave a device iolab cannot use: it must be writable
REFUSED_MOUNT_OPTIONS = ("ro",)

KEYS = (
    "size",
    "backing_dir",
    "filesystem",
    "mkfs_options",
    "mount_options",
    "direct_io",
    "rotational",
    "read_iops",
    "write_iops",
    "read_mbps",
    "write_mbps",
    "model",
    "fault",
)
# fault = { op, error, rate, on }: I/O errors injected by nbdkit's error filter (docs/testbed.md)
FAULT_OPS = ("write", "read", "trim", "any")
FAULT_ERRORS = ("EIO", "ENOSPC", "EPERM", "ENOMEM", "EINVAL", "ESHUTDOWN")
FAULT_KEYS = ("op", "error", "rate", "on")


@dataclass(frozen=True)
class Limits:
    """Throttles of one device; None is unlimited. Bandwidth in bytes per second."""

    read_iops: int | None = None
    write_iops: int | None = None
    read_bps: int | None = None
    write_bps: int | None = None

    @property
    def any(self) -> bool:
        return any(
            v is not None for v in (self.read_iops, self.write_iops, self.read_bps, self.write_bps)
        )

    def describe(self) -> str:
        """``read 200 IOPS, 150 MB/s; write 200 IOPS`` or ``unlimited``."""
        parts = []
        for label, iops, bps in (
            ("read", self.read_iops, self.read_bps),
            ("write", self.write_iops, self.write_bps),
        ):
            got = [f"{iops} IOPS"] if iops is not None else []
            got += [f"{bps / MB:g} MB/s"] if bps is not None else []
            if got:
                parts.append(f"{label} " + ", ".join(got))
        return "; ".join(parts) if parts else "unlimited"

    def as_json(self) -> dict[str, int | None]:
        return {
            "read_iops": self.read_iops,
            "write_iops": self.write_iops,
            "read_bps": self.read_bps,
            "write_bps": self.write_bps,
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Limits:
        return cls(
            read_iops=doc.get("read_iops"),
            write_iops=doc.get("write_iops"),
            read_bps=doc.get("read_bps"),
            write_bps=doc.get("write_bps"),
        )


@dataclass(frozen=True)
class DeviceSpec:
    """One emulated device.

    ``size`` bytes in a loop file in ``backing_dir``, formatted with ``filesystem`` (mkfs gets
    ``mkfs_options`` after iolab's own), mounted with ``mount_options``; ``direct_io``: the loop
    device reads and writes its file with O_DIRECT, so the page cache holds the data once (above
    the device), not twice. ``rotational``: what the device tells the kernel and engines it is
    (queue/rotational; None: the kernel's choice). Limits: IOPS and MB/s (decimal) per
    direction; None is unlimited.
    """

    name: str
    size: int
    backing_dir: Path = DEFAULT_BACKING_DIR
    filesystem: str = "ext4"
    mkfs_options: tuple[str, ...] = ()
    mount_options: tuple[str, ...] = ()
    direct_io: bool = True
    rotational: bool | None = None
    read_iops: int | None = None
    write_iops: int | None = None
    read_mbps: float | None = None
    write_mbps: float | None = None
    model: str | None = None  # the checked model table as canonical JSON; None: a plain loop
    fault: str | None = None  # the checked fault table as canonical JSON (model devices only)

    @property
    def fault_params(self) -> dict[str, Any] | None:
        """The fault to inject (``op``, ``error``, ``rate``, ``on``), None for none."""
        return None if self.fault is None else dict(json.loads(self.fault))

    @property
    def model_params(self) -> dict[str, Any] | None:
        """The model's parameters (see :mod:`iolab.testbed.models`), None for a plain device."""
        return None if self.model is None else dict(json.loads(self.model))

    @property
    def effective_rotational(self) -> bool | None:
        """``rotational``, or for a model device what its model is (disks rotate)."""
        params = self.model_params
        if self.rotational is not None or params is None:
            return self.rotational
        leaf = params.get("member", params)
        return {"hdd": True, "ssd": False}.get(str(leaf["model"]))

    @property
    def limits(self) -> Limits:
        def bps(mbps: float | None) -> int | None:
            return None if mbps is None else max(1, round(mbps * MB))

        return Limits(self.read_iops, self.write_iops, bps(self.read_mbps), bps(self.write_mbps))

    def layout_key(self) -> dict[str, Any]:
        """What must match for a device that is up to count as this one (limits may change)."""
        return {
            "size": self.size,
            "backing_dir": str(self.backing_dir),
            "filesystem": self.filesystem,
            "mkfs_options": list(self.mkfs_options),
            "mount_options": list(self.mount_options),
            "direct_io": self.direct_io,
            "rotational": self.rotational,
            "model": self.model_params,
            "fault": self.fault_params,
        }

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            **self.layout_key(),
            "read_iops": self.read_iops,
            "write_iops": self.write_iops,
            "read_mbps": self.read_mbps,
            "write_mbps": self.write_mbps,
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> DeviceSpec:
        return cls(
            name=doc["name"],
            size=int(doc["size"]),
            backing_dir=Path(doc["backing_dir"]),
            filesystem=doc["filesystem"],
            mkfs_options=tuple(doc.get("mkfs_options", ())),
            mount_options=tuple(doc.get("mount_options", ())),
            direct_io=bool(doc.get("direct_io", True)),
            rotational=doc.get("rotational"),
            read_iops=doc.get("read_iops"),
            write_iops=doc.get("write_iops"),
            read_mbps=doc.get("read_mbps"),
            write_mbps=doc.get("write_mbps"),
            model=_canonical(doc["model"]) if doc.get("model") else None,
            fault=_canonical(doc["fault"]) if doc.get("fault") else None,
        )


def _canonical(params: Mapping[str, Any]) -> str:
    return json.dumps(params, sort_keys=True)


def _model(table: Mapping[str, Any], at: str) -> str | None:
    """The checked model of a device table (its keys beyond the plain device's), or None."""
    if "model" not in table:
        return None
    params = {k: v for k, v in table.items() if k not in KEYS or k == "model"}
    try:
        return _canonical(models.check(params))
    except models.ParamError as exc:
        allowed = exc.allowed
        if exc.key in params and "keys of a" in allowed:
            allowed += "; and the device's own: " + ", ".join(KEYS)
        raise BadInput(f"{at}.{exc.key}", exc.value, allowed) from None


def _fault(table: Mapping[str, Any], at: str) -> str | None:
    """The checked ``fault`` table of a device, or None."""
    if "fault" not in table:
        return None
    fault = table["fault"]
    at = f"{at}.fault"
    if "model" not in table:
        raise BadInput(at, fault, 'a fault needs a model device; add model = "null" for no cost')
    if not isinstance(fault, Mapping):
        raise BadInput(at, fault, 'give a table, e.g. { op = "write", error = "EIO" }')
    for key in fault:
        if key not in FAULT_KEYS:
            raise BadInput(f"{at}.{key}", fault[key], "keys of a fault: " + ", ".join(FAULT_KEYS))
    op = fault.get("op", "write")
    if op not in FAULT_OPS:
        raise BadInput.choice(f"{at}.op", op, FAULT_OPS)
    error = fault.get("error", "EIO")
    if error not in FAULT_ERRORS:
        raise BadInput.choice(f"{at}.error", error, FAULT_ERRORS)
    rate = fault.get("rate", 1.0)
    if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 < rate <= 1:
        raise BadInput(
            f"{at}.rate", rate, "give the fraction of requests that fail, above 0 and up to 1"
        )
    on = fault.get("on", True)
    if not isinstance(on, bool):
        raise BadInput(
            f"{at}.on", on, "give true (failing once the device is up) or false (once switched on)"
        )
    return _canonical({"op": op, "error": error, "rate": float(rate), "on": on})


def _iops(value: object, field: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise BadInput(
            field,
            value,
            "give a whole number of I/Os per second > 0, or leave the key out for no limit",
        )
    if value > MAX_IOPS:
        raise BadInput(
            field,
            value,
            f"give at most {MAX_IOPS} I/Os per second (the kernel's limit holds no more), or "
            "leave the key out for no limit",
        )
    return value


def _mbps(value: object, field: str) -> float | None:
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise BadInput(
            field,
            value,
            "give MB/s (decimal megabytes) > 0, e.g. 150 or 0.5, or leave the key out for no limit",
        )
    if value > MAX_MBPS:
        raise BadInput(
            field,
            value,
            f"give at most {MAX_MBPS} MB/s (the kernel's limit holds no more), or leave the key "
            "out for no limit",
        )
    if value * MB < 4096:
        raise BadInput(field, value, "give at least 0.005 MB/s (one 4 KiB block per second)")
    return float(value)


def _options(value: object, field: str, *, comma: bool) -> tuple[str, ...]:
    """A list of strings, or one string (split like a shell, or at commas for mount options)."""
    if isinstance(value, str):
        if comma:
            return tuple(p.strip() for p in value.split(",") if p.strip())
        try:
            return tuple(shlex.split(value))
        except ValueError as exc:
            raise BadInput(
                field, value, f"give options as a shell would read them ({exc})"
            ) from None
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    example = '"noatime,nodiratime"' if comma else '["-b", "4096"] or "-b 4096"'
    raise BadInput(field, value, f"give a string or a list of strings, e.g. {example}")


def _mount_options(value: object, field: str) -> tuple[str, ...]:
    """Mount options, without those that leave the device unusable (read-only)."""
    options = _options(value, field, comma=True)
    for option in options:
        if option in REFUSED_MOUNT_OPTIONS:
            raise BadInput(
                field,
                value,
                f"leave out {option!r}: iolab writes to a testbed device (its mount point, "
                "then the runs' files), so it is mounted read-write",
            )
    return options


def parse_device(name: str, table: object, where: str = "devices") -> DeviceSpec:
    """One ``[devices.NAME]`` table; ``where`` is the key path of the devices table."""
    at = f"{where}.{name}"
    if not NAME_RE.match(name):
        raise BadInput(at, name, NAME_HELP)
    if not isinstance(table, Mapping):
        raise BadInput(
            at, table, "give a table of device settings ([devices.NAME] with size = ...)"
        )
    unknown = sorted(set(table) - set(KEYS))
    if unknown and "model" not in table:
        close = did_you_mean(unknown[0], KEYS)  # write_iop: did you mean write_iops?
        raise BadInput(
            f"{at}.{unknown[0]}",
            table[unknown[0]],
            (f"{close} " if close else "") + "allowed keys: " + ", ".join(KEYS),
        )
    if "size" not in table:
        raise BadInput(f"{at}.size", None, 'give the device size, e.g. size = "20GiB"')
    size_value = table["size"]
    if isinstance(size_value, bool) or not isinstance(size_value, str | int):
        raise BadInput(f"{at}.size", size_value, SIZE_HELP)
    size = parse_size(size_value, f"{at}.size")
    filesystem = table.get("filesystem", "ext4")
    if filesystem not in FILESYSTEMS:
        raise BadInput.choice(f"{at}.filesystem", filesystem, FILESYSTEMS)
    if size < MIN_SIZE[filesystem]:
        raise BadInput(
            f"{at}.size",
            size_value,
            f"{filesystem} needs at least {format_bytes(MIN_SIZE[filesystem])}",
        )
    if size % 4096:
        raise BadInput(f"{at}.size", size_value, "give a multiple of 4 KiB")
    backing = table.get("backing_dir", str(DEFAULT_BACKING_DIR))
    if not isinstance(backing, str) or not backing.startswith("/"):
        raise BadInput(f"{at}.backing_dir", backing, "give an absolute directory path")
    direct_io = table.get("direct_io", True)
    if not isinstance(direct_io, bool):
        raise BadInput(f"{at}.direct_io", direct_io, "give true or false")
    rotational = table.get("rotational")
    if rotational is not None and not isinstance(rotational, bool):
        raise BadInput(f"{at}.rotational", rotational, "give true (a disk) or false (an SSD)")
    return DeviceSpec(
        name=name,
        size=size,
        backing_dir=Path(backing),
        filesystem=filesystem,
        mkfs_options=_options(table.get("mkfs_options", []), f"{at}.mkfs_options", comma=False),
        mount_options=_mount_options(table.get("mount_options", []), f"{at}.mount_options"),
        direct_io=direct_io,
        rotational=rotational,
        read_iops=_iops(table.get("read_iops"), f"{at}.read_iops"),
        write_iops=_iops(table.get("write_iops"), f"{at}.write_iops"),
        read_mbps=_mbps(table.get("read_mbps"), f"{at}.read_mbps"),
        write_mbps=_mbps(table.get("write_mbps"), f"{at}.write_mbps"),
        model=_model(table, at),
        fault=_fault(table, at),
    )


def parse_devices(table: Mapping[str, Any], where: str = "devices") -> list[DeviceSpec]:
    """The devices of a ``[devices]`` table, in file order.

    The experiment runner calls this for the ``[devices]`` section of an experiment file;
    ``where`` is that section's key path, used in error messages.
    """
    if not isinstance(table, Mapping):
        raise BadInput(where, table, "give a table of devices: [devices.NAME] with size = ...")
    if not table:
        raise BadInput(where, {}, "name at least one device: [devices.NAME] with size = ...")
    return [parse_device(name, value, where) for name, value in table.items()]


def load_file(path: Path) -> list[DeviceSpec]:
    """The ``[devices]`` of a testbed file (or of an experiment file: other tables are left to
    the experiment runner)."""
    try:
        doc = tomllib.loads(read_text(path, "TESTBED", "TOML file"))
    except tomllib.TOMLDecodeError as exc:
        raise BadInput("TESTBED", str(path), f"fix the TOML syntax: {exc}") from None
    if "devices" not in doc:
        raise BadInput(
            "devices", None, f"{path} has no [devices] table; add [devices.NAME] with size = ..."
        )
    return parse_devices(doc["devices"])
