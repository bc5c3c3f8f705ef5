"""The two consoles: tables and JSON on stdout, progress, warnings and errors on stderr. The
streams under them are set up in :mod:`iolab.cli.streams` (ASCII where a character does not fit,
output dropped once its reader has gone)."""

from __future__ import annotations

import sys

from rich.console import Console

# Piped output gets a width that fits the tables instead of rich's 80-column fallback, and its
# lines are not wrapped (a command quoted in one, such as `iolab timeline 14 -o run14.html`,
# stays whole for whoever reads or copies it); tables still fit their width.
stdout = Console(width=None if sys.stdout.isatty() else 120, soft_wrap=not sys.stdout.isatty())
stderr = Console(stderr=True, soft_wrap=not sys.stderr.isatty())
