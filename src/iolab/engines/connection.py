"""The one thing engine-neutral code knows of a database connection."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from typing import Protocol


class Connection(Protocol):
    """A DB-API 2 connection as the engine-neutral code holds it: it hands it to the engine's
    own dialect (which knows its driver's type) and closes it."""

    def close(self) -> None: ...


def cancel_statements(conns: Iterable[Connection]) -> None:
    """Cancel what each connection runs now, where its driver can from another thread:
    psycopg's ``cancel()``, sqlite3's ``interrupt()``. PyMySQL cannot: its statements end when
    they end, or when the server stops."""
    for conn in conns:
        for name in ("cancel", "interrupt"):
            method = getattr(conn, name, None)
            if callable(method):
                with contextlib.suppress(Exception):
                    method()
                break
