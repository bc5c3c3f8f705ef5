"""The standard streams as every command writes them, set up once when the command starts
(before any console or progress bar exists; :mod:`iolab.cli.main`). No rich here: this is on
every command's path, ``iolab --version`` included.

A stream that cannot carry a character (``LANG=C``, ``PYTHONIOENCODING=ascii`` or ``latin-1``)
gets its nearest ASCII (``·`` as ``-``, ``…`` as ``...``) instead of a crash: :func:`fit_streams`
sets that up once, when the command starts, for everything written to stdout and stderr (rich
itself draws its boxes in ASCII on such a stream).

Output never stops the work: a reader that goes away (``iolab testbed down | head -1``, a
closed terminal) makes the next write fail with a broken pipe, and from then on what iolab
says to that stream is dropped (its descriptor is pointed at /dev/null, so programs started
later and the interpreter's last flush find it open), while the command finishes what it
does: a teardown takes every device down, a run is recorded. :func:`guarded` puts both
standard streams behind that rule for the command's duration.
"""

from __future__ import annotations

import codecs
import io
import os
import sys
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any, TextIO

ERRORS = "iolab-ascii"  # the codec error handler of both streams
# Characters iolab and rich write, as ASCII; the rest by their decomposition (é as e), else "?".
ASCII = {
    "·": "-",
    "…": "...",
    "±": "+/-",
    "µ": "u",
    "\u00d7": "x",
    "—": "-",
    "\u2013": "-",
    "→": "->",
    "←": "<-",
    "≥": ">=",
    "≤": "<=",
    "≈": "~",
    "\u2018": "'",
    "\u2019": "'",
    "“": '"',
    "”": '"',
    "\u00a0": " ",
    "━": "-",
    "─": "-",
    "│": "|",
    "█": "#",
    "•": "*",
}


def _nearest(char: str) -> str:
    if char in ASCII:
        return ASCII[char]
    plain = unicodedata.normalize("NFKD", char).encode("ascii", "ignore").decode()
    return plain or "?"


def _to_ascii(exc: UnicodeError) -> tuple[str | bytes, int]:
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    text = exc.object[exc.start : exc.end]
    if all("\udc80" <= c <= "\udcff" for c in text):  # bytes a file name carried: as they were
        return bytes(ord(c) - 0xDC00 for c in text), exc.end
    return "".join(_nearest(c) for c in text), exc.end


codecs.register_error(ERRORS, _to_ascii)


def fit_streams() -> None:
    """Make stdout and stderr write what their encoding cannot carry as its nearest ASCII."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper) and stream.errors != ERRORS:
            stream.reconfigure(errors=ERRORS)


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
