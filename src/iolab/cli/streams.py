"""The standard streams as every command writes them, set up once when the command starts
(before any console or progress bar exists; :mod:`iolab.cli.main`). No rich here: this is on
every command's path, ``iolab --version`` included.

A stream that cannot carry a character (``LANG=C``, ``PYTHONIOENCODING=ascii`` or ``latin-1``)
gets iolab's own characters as their nearest ASCII (``·`` as ``-``, ``…`` as ``...``) and any
other (a path's or a name's) escaped as Python writes it (``é`` as ``\\xe9``: never another
name, as ``e`` would be) instead of a crash: :func:`fit_streams` sets that up once, when the
command starts, for everything written to stdout and stderr (rich itself draws its boxes in
ASCII on such a stream).

Output never stops the work: a reader that goes away (``iolab testbed down | head -1``, a
closed terminal) makes the next write fail with a broken pipe, a full file (``>/dev/full``)
with "no space left", and from then on what iolab says to that stream is dropped (its
descriptor is pointed at /dev/null, so programs started later and the interpreter's last flush
find it open), while the command finishes what it does and exits as it would have: a teardown
takes every device down, a run is recorded. A standard output that fails for another reason
than a reader gone is named once on stderr. :func:`guarded` puts both standard streams
behind that rule for the command's duration.

A standard stream the command was started without (``>&-``, ``2>&-``, ``<&-``) is opened on
/dev/null first of all (:func:`open_missing`): the command runs with no output there, and the
next file it opens cannot take the stream's number (what it or a program it starts writes to
the stream would land in that file).
"""

from __future__ import annotations

import codecs
import io
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any, TextIO

ERRORS = "iolab-ascii"  # the codec error handler of both streams
# Characters iolab and rich write, as ASCII; the rest escaped (é as \xe9).
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
    return char.encode("ascii", "backslashreplace").decode()


def _to_ascii(exc: UnicodeError) -> tuple[str | bytes, int]:
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    text = exc.object[exc.start : exc.end]
    if all("\udc80" <= c <= "\udcff" for c in text):  # bytes a file name carried: as they were
        return bytes(ord(c) - 0xDC00 for c in text), exc.end
    return "".join(_nearest(c) for c in text), exc.end


codecs.register_error(ERRORS, _to_ascii)


STANDARD = ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w"))


def open_missing() -> None:
    """Open /dev/null on each standard descriptor that is closed, and give Python a stream for
    each one it started without (``sys.stdout`` is None when descriptor 1 was closed)."""
    for fd, name, mode in STANDARD:
        was_closed = False
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
            was_closed = True
        if getattr(sys, name) is None:  # closed when Python started
            # the descriptor, now /dev/null; else whatever took its number since: not that
            stream = open(fd if was_closed else os.devnull, mode, closefd=was_closed)  # noqa: SIM115
            setattr(sys, name, stream)  # open for the process's life, as Python's own


def fit_streams() -> None:
    """Make stdout and stderr write what their encoding cannot carry as its nearest ASCII."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper) and stream.errors != ERRORS:
            stream.reconfigure(errors=ERRORS)


class _Guarded:
    """A text stream whose writes and flushes survive its reader going away or its file
    failing (see above)."""

    def __init__(self, stream: TextIO, named: str | None = None) -> None:
        self._stream = stream
        self._named = named  # how a failure is named on stderr; None: not named (stderr's own)
        self.gone = False

    def _lose(self, exc: OSError) -> None:
        self.gone = True
        with suppress(OSError, ValueError, io.UnsupportedOperation):
            null = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(null, self._stream.fileno())
            finally:
                os.close(null)
        if self._named and not isinstance(exc, BrokenPipeError):  # a reader gone is no news
            why = exc.strerror or str(exc)
            sys.stderr.write(f"warning: {self._named}: {why}; what iolab writes there is dropped\n")
            sys.stderr.flush()

    def write(self, text: str) -> int:
        if not self.gone:
            try:
                return self._stream.write(text)
            except OSError as exc:
                self._lose(exc)
        return len(text)

    def flush(self) -> None:
        if not self.gone:
            try:
                self._stream.flush()
            except OSError as exc:
                self._lose(exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextmanager
def guarded() -> Iterator[None]:
    """Within: ``sys.stdout`` and ``sys.stderr`` (and so both consoles and ``print``) drop what
    they cannot write (a reader gone, a file full or failing), instead of raising into the work;
    a failing stdout is named in one line on stderr."""
    saved = sys.stdout, sys.stderr
    out, err = _Guarded(saved[0], "standard output"), _Guarded(saved[1])
    sys.stdout, sys.stderr = out, err
    try:
        yield
    finally:
        out.flush()  # a pipe's buffered text: its reader may have gone at the end
        err.flush()
        sys.stdout, sys.stderr = saved
