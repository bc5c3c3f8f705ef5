"""The two consoles: tables and JSON on stdout, progress, warnings and errors on stderr.

A stream that cannot carry a character (``LANG=C``, ``PYTHONIOENCODING=ascii`` or ``latin-1``)
gets its nearest ASCII (``·`` as ``-``, ``…`` as ``...``) instead of a crash: :func:`fit_streams`
sets that up once, when the command starts, for everything written to stdout and stderr (rich
itself draws its boxes in ASCII on such a stream).
"""

from __future__ import annotations

import codecs
import io
import sys
import unicodedata

from rich.console import Console

# Piped output gets a width that fits the tables instead of rich's 80-column fallback, and its
# lines are not wrapped (a command quoted in one, such as `iolab timeline 14 -o run14.html`,
# stays whole for whoever reads or copies it); tables still fit their width.
stdout = Console(width=None if sys.stdout.isatty() else 120, soft_wrap=not sys.stdout.isatty())
stderr = Console(stderr=True, soft_wrap=not sys.stderr.isatty())

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
