"""The environment a run happened in: stored with every run so results can be compared honestly."""

from __future__ import annotations

import os
import platform
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from iolab import __version__
from iolab.drivercore import built as driver_core_built
from iolab.errors import IolabError
from iolab.system.devices import PathDevice, describe
from iolab.testbed import device_on


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def memory_bytes() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def device_record(pd: PathDevice) -> dict[str, Any]:
    """A JSON-ready description of the storage behind one path."""
    return {
        "path": pd.path,
        "mount_point": pd.mount.mount_point,
        "filesystem": pd.mount.fstype,
        "mount_source": pd.mount.source,
        "mount_options": pd.mount.options,
        "fs_options": pd.mount.super_options,
        "memory_backed": pd.memory_backed,
        "device": asdict(pd.device) if pd.device else None,
        "total_bytes": pd.total_bytes,
        "fill_percent": round(pd.fill_percent, 1),
        "testbed": _testbed(pd),
    }


def _testbed(pd: PathDevice) -> dict[str, Any] | None:
    """For a path on an emulated device: its testbed name, limits in force and make-up."""
    found = None if pd.memory_backed else device_on(pd.mount.dev)
    if found is None:
        return None
    return {
        "name": found.name,
        "limits": found.limits.as_json(),
        "limits_text": found.limits.describe(),
        "size_bytes": found.size,
        "backing_file": str(found.backing_file),
        "direct_io": found.direct_io,
        "loop": found.loop,
    }


def capture(roles: Mapping[str, Path], versions: Mapping[str, str]) -> dict[str, Any]:
    """Kernel, CPU, memory, the storage behind each role's path, and tool versions.

    ``roles`` maps a role (data, wal, temp, target) to a path; ``versions`` names the tools used
    (fio, postgres, ...) with their versions. ``driver_core_built``: whether the compiled
    driver core is installed (pip hides a skipped build); which core a load ran is in its
    summary (``driver_core``), since a load the core does not run takes Python either way.
    """
    uname = os.uname()
    return {
        "kernel": f"{uname.sysname} {uname.release}",
        "kernel_version": uname.version,
        "machine": uname.machine,
        "hostname": uname.nodename,
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count() or 0,
        "memory_bytes": memory_bytes(),
        "python": platform.python_version(),
        "iolab": __version__,
        "driver_core_built": driver_core_built(),
        "versions": dict(versions),
        "storage": {role: device_record(_described(role, path)) for role, path in roles.items()},
    }


def _described(role: str, path: Path) -> PathDevice:
    """:func:`describe`, or the run's one-line failure when the role's directory is gone (a
    testbed device another experiment took down, a directory removed under the run)."""
    try:
        return describe(path)
    except OSError as exc:
        raise IolabError(f"the {role} directory {path} is gone: {exc.strerror or exc}") from None
