"""The two consoles: tables and JSON on stdout, progress, warnings and errors on stderr."""

from __future__ import annotations

import sys

from rich.console import Console

# Piped output gets a width that fits the tables instead of rich's 80-column fallback.
stdout = Console(width=None if sys.stdout.isatty() else 120)
stderr = Console(stderr=True)
