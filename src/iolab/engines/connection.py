"""The one thing engine-neutral code knows of a database connection."""

from __future__ import annotations

from typing import Protocol


class Connection(Protocol):
    """A DB-API 2 connection as the engine-neutral code holds it: it hands it to the engine's
    own dialect (which knows its driver's type) and closes it."""

    def close(self) -> None: ...
