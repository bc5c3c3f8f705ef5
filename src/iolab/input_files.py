"""The files iolab reads whole as input (experiment and testbed files): one function reads them,
and refuses what is not such a file before reading a byte too many.

An input file is a regular file of at most :data:`MAX_BYTES`, in UTF-8. A FIFO, a device
(``iolab plan /dev/zero`` once read until the kernel's OOM killer stopped it), a directory or
a larger file is refused in one line naming the argument, the path and why; so is a file that
fails as it is read (``/proc/self/mem``: an input/output error).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from iolab.errors import BadInput
from iolab.units import format_bytes

MAX_BYTES = 2**20  # 1 MiB: an experiment file of 10,000 cells is far smaller

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
)


def read_text(path: Path, argument: str, what: str) -> str:
    """The text of the input file ``path``; BadInput naming ``argument`` (``EXPERIMENT``,
    ``TESTBED``) and saying what it should be (``what``: "experiment file (.toml)") otherwise."""
    a_what = ("an " if what[:1] in "aeiou" else "a ") + what
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise BadInput(argument, str(path), f"give an existing {what}") from None
    except OSError as exc:
        raise BadInput(
            argument, str(path), f"give {a_what} you can read ({exc.strerror})"
        ) from None
    if stat.S_ISDIR(mode):
        raise BadInput(argument, str(path), f"give {a_what}, not a directory")
    _regular(mode, path, argument, a_what)
    try:
        # O_NONBLOCK: a file swapped for a FIFO since the stat does not wait for a writer
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise BadInput(
            argument, str(path), f"give {a_what} you can read ({exc.strerror})"
        ) from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        _regular(st.st_mode, path, argument, a_what)
        try:
            data = f.read(MAX_BYTES + 1)
        except OSError as exc:  # a regular file the kernel will not read: /proc/self/mem
            raise BadInput(
                argument, str(path), f"give {a_what} you can read (reading it: {exc.strerror})"
            ) from None
    if max(st.st_size, len(data)) > MAX_BYTES:
        size = format_bytes(max(st.st_size, len(data)))
        raise BadInput(
            argument,
            str(path),
            f"give {a_what} of at most {format_bytes(MAX_BYTES)} (this one has {size})",
        )
    try:
        return data.decode()
    except UnicodeDecodeError as exc:
        raise BadInput(
            argument, str(path), f"give {a_what} in UTF-8 ({exc.reason} at byte {exc.start})"
        ) from None


def _regular(mode: int, path: Path, argument: str, a_what: str) -> None:
    if stat.S_ISREG(mode):
        return
    kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    raise BadInput(argument, str(path), f"give {a_what}: a regular file, not {kind}")
