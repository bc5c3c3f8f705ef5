"""The two consoles: tables and JSON on stdout, progress, warnings and errors on stderr.

Output never stops the work: a reader that goes away (``iolab testbed down | head -1``, a
closed terminal) makes the next write fail with a broken pipe, and from then on what iolab
says to that stream is dropped (its descriptor is pointed at /dev/null, so programs started
later and the interpreter's last flush find it open), while the command finishes what it
does: a teardown takes every device down, a run is recorded. :func:`guarded` puts both
standard streams behind that rule for the command's duration.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any, TextIO

from rich.console import Console

# Piped output gets a width that fits the tables instead of rich's 80-column fallback.
stdout = Console(width=None if sys.stdout.isatty() else 120)
stderr = Console(stderr=True)


class _Guarded:
    """A text stream whose writes and flushes survive its reader going away (see above)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.gone = False

    def _lose(self) -> None:
        self.gone = True
        with suppress(OSError, ValueError, io.UnsupportedOperation):
            null = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(null, self._stream.fileno())
            finally:
                os.close(null)

    def write(self, text: str) -> int:
        if not self.gone:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._lose()
        return len(text)

    def flush(self) -> None:
        if not self.gone:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._lose()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextmanager
def guarded() -> Iterator[None]:
    """Within: ``sys.stdout`` and ``sys.stderr`` (and so both consoles and ``print``) drop what
    they cannot write to a reader that has gone, instead of raising into the work."""
    saved = sys.stdout, sys.stderr
    out, err = _Guarded(saved[0]), _Guarded(saved[1])
    sys.stdout, sys.stderr = out, err
    try:
        yield
    finally:
        out.flush()  # a pipe's buffered text: its reader may have gone at the end
        err.flush()
        sys.stdout, sys.stderr = saved
