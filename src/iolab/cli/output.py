"""Files the CLI writes (reports, exports, timelines, charts, interval logs) and the numbers it
is given on the command line: checked before any work, so a bad path or number is one line and
exit 2.

An output path names a new file, an empty one, or a file iolab wrote before (its mark or shape,
:mod:`iolab.report.signature`); never the results database or its ``-wal``, ``-shm`` or
``-journal``, another SQLite database, or anything else: those are refused, naming the path, and
left as they are. A symbolic link is followed: the file it names is the output.

Every output is written to a scratch file beside it (an owned name, :mod:`iolab.ownership`),
synced and renamed over the path, so a write that fails (a full disk, Ctrl-C) leaves the old
file whole. A new file is created readable and writable by its owner only (0600), as the
results database is: a report carries the runs' parameters, paths and server settings. A file
that exists already keeps its mode and owner.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from iolab.errors import BadInput
from iolab.ownership import owned_name, reap

FILE_MODE = 0o600
SCRATCH = "output"  # the owned kind of the scratch files outputs are written through


def check_output(
    path: Path, option: str, suffixes: tuple[str, ...] = (), results: Path | None = None
) -> None:
    """``path`` can be a file iolab writes: not a directory, in a directory that exists, with
    one of ``suffixes`` when given, not the results database ``results`` (None: the default
    one) nor any other file iolab did not write, in a directory where a file can be made.
    Writing can still fail later (the disk fills): :func:`write_output` says so in the same
    words."""
    if suffixes and path.suffix.lower() not in suffixes:
        choices = (
            ", ".join(suffixes[:-1]) + f" or {suffixes[-1]}" if len(suffixes) > 1 else suffixes[0]
        )
        raise BadInput(option, str(path), f"name a {choices} file")
    if path.is_dir():
        raise BadInput(option, str(path), "name a file to write, not a directory")
    target = Path(os.path.realpath(path))
    parent = target.parent
    if not parent.is_dir():
        raise BadInput(option, str(path), f"name a file in an existing directory ({parent} is not)")
    _check_not_results(path, target, option, results)
    try:
        if target.exists():
            _check_ours(path, target, option)
        scratch = parent / owned_name(SCRATCH)  # really makes a file there: made and removed
        os.close(os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))
        scratch.unlink()
    except OSError as exc:
        raise BadInput(option, str(path), _cannot_write(exc)) from None


def write_output(path: Path, data: str | bytes, option: str, results: Path | None = None) -> None:
    """Write ``data`` to ``path`` through a scratch file renamed over it (see the module), or
    say why it cannot be written; checked again first (:func:`check_output`)."""
    check_output(path, option, results=results)
    raw = data.encode() if isinstance(data, str) else data
    target = Path(os.path.realpath(path))
    from iolab.cli.progress import ProgressView

    reap(target.parent, SCRATCH, events=ProgressView())  # what an iolab killed mid-write left
    scratch = target.parent / owned_name(SCRATCH)
    try:
        fd = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
        try:
            with contextlib.suppress(FileNotFoundError):
                st = os.stat(target)
                os.fchmod(fd, st.st_mode & 0o7777)
                with contextlib.suppress(PermissionError):
                    os.fchown(fd, st.st_uid, st.st_gid)
            with os.fdopen(fd, "wb", closefd=False) as f:
                f.write(raw)
                f.flush()
                os.fsync(f.fileno())
        finally:
            os.close(fd)
        os.replace(scratch, target)
    except OSError as exc:
        raise BadInput(option, str(path), _cannot_write(exc)) from None
    finally:
        scratch.unlink(missing_ok=True)


def _check_not_results(path: Path, target: Path, option: str, results: Path | None) -> None:
    """The results database and its side files are never an output."""
    from iolab.report.signature import SQLITE_SIDE_FILES  # on use: not on every command's path
    from iolab.store.database import default_path

    database = Path(os.path.realpath(results or default_path()))
    names = {database, *(Path(f"{database}{side}") for side in SQLITE_SIDE_FILES)}
    same = target in names
    if not same and target.exists() and database.exists():
        with contextlib.suppress(OSError):
            same = os.path.samefile(target, database)
    if same:
        raise BadInput(
            option,
            str(path),
            f"it is the results database ({database} or its -wal, -shm or -journal); "
            "name another file",
        )


def _check_ours(path: Path, target: Path, option: str) -> None:
    """An existing file: empty, or one iolab wrote; never an SQLite database or its side
    files."""
    from iolab.report.signature import SQLITE_SIDE_FILES, sqlite_file, written_by_iolab

    if not target.is_file():
        raise BadInput(option, str(path), "name a regular file (not a device, pipe or socket)")
    name = target.name
    side = next((s for s in SQLITE_SIDE_FILES if name.endswith(s)), None)
    owner = target.with_name(name[: -len(side)]) if side else None
    if sqlite_file(target) or (owner is not None and owner.is_file() and sqlite_file(owner)):
        raise BadInput(
            option,
            str(path),
            "it is an SQLite database (or one's side file); iolab leaves it as it is: "
            "name another file",
        )
    if target.stat().st_size and not written_by_iolab(target):
        raise BadInput(
            option,
            str(path),
            "it holds something iolab did not write (not one of its reports, timelines, "
            "charts or exports); iolab leaves it as it is: name a new file, or remove it first",
        )


def _cannot_write(exc: OSError) -> str:
    return f"name a file you can write ({exc.strerror or exc})"


def check_id(value: int, argument: str, what: str = "a run id from `iolab results list`") -> int:
    """A run id given on the command line: a positive number SQLite can hold."""
    from iolab.results import MAX_ID  # on use: the results' model loads the probes' types

    if not 1 <= value <= MAX_ID:
        raise BadInput(argument, value, f"give {what}: a whole number from 1 to {MAX_ID}")
    return value
