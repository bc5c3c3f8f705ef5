"""Files the CLI writes (reports, exports, timelines) and the numbers it is given on the command
line: checked before any work, so a bad path or number is one line and exit 2.

Every file iolab writes is created readable and writable by its owner only (0600), as the
results database is: a report carries the runs' parameters, paths and server settings. A file
that exists already keeps its mode.
"""

from __future__ import annotations

import os
from pathlib import Path

from iolab.errors import BadInput
from iolab.results import MAX_ID

FILE_MODE = 0o600


def check_output(path: Path, option: str, suffixes: tuple[str, ...] = ()) -> None:
    """``path`` can be a file iolab writes: not a directory, in a directory that exists, with
    one of ``suffixes`` when given, that can be opened for writing. Writing can still fail
    later (the disk fills): :func:`write_output` says so in the same words."""
    if suffixes and path.suffix.lower() not in suffixes:
        choices = (
            ", ".join(suffixes[:-1]) + f" or {suffixes[-1]}" if len(suffixes) > 1 else suffixes[0]
        )
        raise BadInput(option, str(path), f"name a {choices} file")
    if path.is_dir():
        raise BadInput(option, str(path), "name a file to write, not a directory")
    parent = path.parent
    if not parent.is_dir():
        raise BadInput(option, str(path), f"name a file in an existing directory ({parent} is not)")
    existed = path.exists()
    try:  # really takes a file: opened for appending (nothing truncated), a new one removed
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NONBLOCK, FILE_MODE))
        if not existed:
            path.unlink()
    except OSError as exc:
        raise BadInput(option, str(path), _cannot_write(exc)) from None


def write_output(path: Path, data: str | bytes, option: str) -> None:
    """Write ``data`` to ``path`` (created 0600), or say why it cannot be written."""
    check_output(path, option)
    raw = data.encode() if isinstance(data, str) else data
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
    except OSError as exc:
        raise BadInput(option, str(path), _cannot_write(exc)) from None


def _cannot_write(exc: OSError) -> str:
    return f"name a file you can write ({exc.strerror or exc})"


def check_id(value: int, argument: str, what: str = "a run id from `iolab results list`") -> int:
    """A run id given on the command line: a positive number SQLite can hold."""
    if not 1 <= value <= MAX_ID:
        raise BadInput(argument, value, f"give {what}: a whole number from 1 to {MAX_ID}")
    return value
