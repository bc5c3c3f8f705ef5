"""``device:NAME`` paths, and which testbed device a path is on.

Wherever iolab takes a directory (``--data-dir``, ``--wal-dir``, ``--temp-dir``, ``iolab disk
PATH``, a layout's ``data_dirs``), ``device:hdd`` names the mount point of the testbed device
``hdd`` and ``device:hdd/sub/dir`` a directory under it.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from iolab.errors import BadInput, IolabError
from iolab.system.devices import mount_of
from iolab.testbed import nbd
from iolab.testbed.lifecycle import DeviceStatus, status
from iolab.testbed.state import STATE_FILE, state_dir

PREFIX = "device:"


def _recorded() -> bool:
    """Cheap check first: most runs have no testbed at all."""
    return (state_dir() / STATE_FILE).exists()


def resolve_path(text: str, field: str = "path") -> Path:
    """``device:NAME[/sub/path]`` -> the device's mount point (+ sub path); other text as is.

    An unknown device, or one that is not up, is a BadInput naming the devices that are up.
    """
    if not text.startswith(PREFIX):
        return Path(text)
    name, _, sub = text[len(PREFIX) :].partition("/")
    devices = {d.name: d for d in status()} if _recorded() else {}
    up = sorted(n for n, d in devices.items() if d.up)
    hint = (
        f"devices that are up: {', '.join(up)}"
        if up
        else "no testbed device is up; bring some up with `iolab testbed up TESTBED.toml`"
    )
    found = devices.get(name)
    if found is None:
        raise BadInput(field, text, hint)
    if not found.up:
        raise BadInput(field, text, f"{name} is not up ({found.problem}); {hint}")
    rel = PurePosixPath(sub)
    if rel.is_absolute() or ".." in rel.parts:
        raise BadInput(field, text, "give a path inside the device: device:NAME/sub/dir")
    return found.mount_point / rel if sub else found.mount_point


def device_on(dev: tuple[int, int]) -> DeviceStatus | None:
    """The testbed device (up) with this major:minor, or None."""
    if not _recorded():
        return None
    try:
        devices = status()
    except IolabError:
        return None  # an unreadable state must not stop a run that does not use the testbed
    for d in devices:
        if d.up and d.dev == dev:
            return d
    return None


def device_of(path: Path) -> DeviceStatus | None:
    """The testbed device a path is on (its filesystem is the device's), or None."""
    if not _recorded():
        return None
    try:
        dev = mount_of(path).dev
    except (OSError, FileNotFoundError):
        return None
    return device_on(dev)


def block_names() -> dict[str, str]:
    """Block device name (``loop3``, as in /proc/diskstats) -> testbed name, for devices up."""
    if not _recorded():
        return {}
    try:
        return {Path(d.loop).name: d.name for d in status() if d.up and d.loop}
    except IolabError:
        return {}


def error_marks(paths: Iterable[Path]) -> dict[str, int]:
    """Model devices under ``paths`` -> where their logs end now (for :func:`errors_note`)."""
    marks: dict[str, int] = {}
    for path in paths:
        found = device_of(path)
        if found is not None and found.spec.model is not None and found.name not in marks:
            marks[found.name] = nbd.log_mark(state_dir(), found.name)
    return marks


def errors_note(marks: dict[str, int]) -> str | None:
    """``device:wal failed 12 requests since the run started (injecting EIO error into
    pwrite)`` for each model device of ``marks`` whose requests failed since, and ``device:wal
    stopped serving: its nbdkit is gone (...)`` for each whose stack no longer serves it (the
    engine's own error then names only a file: "Read-only file system"); None if none."""
    notes = []
    for name, mark in marks.items():
        count, last = nbd.errors_since(state_dir(), name, mark)
        if count:
            plural = "s" if count > 1 else ""
            notes.append(
                f"{PREFIX}{name} failed {count} request{plural} since the run started ({last})"
            )
        stack = nbd.problem(state_dir(), name)
        if stack is not None:
            notes.append(f"{PREFIX}{name} stopped serving: {stack}")
    return "; ".join(notes) or None
