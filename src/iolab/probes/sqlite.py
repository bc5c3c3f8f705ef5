"""SQLite's database and WAL file sizes, and pages allocated per second.

The probe never opens the database (a reader's lock would disturb the writers): it stats the
files. ``db_mb`` and ``wal_mb`` are the sizes of each database file and its ``-wal`` file (MB,
10^6 bytes; subject: the file name); ``pages_allocated_per_s`` is the growth of all database
files together in pages (the page size read from each file's header). In WAL mode pages reach
the database file when the WAL is checkpointed, so its growth comes in steps.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from iolab.probes.interface import Findings, Kind, Pace, ProbeUnavailable, Reading, SeriesKey, Warn

PROBE = "sqlite"
HEADER = b"SQLite format 3\x00"


def page_size(path: Path) -> int:
    """The page size in a database file's header (bytes 16-17, big-endian; 1 means 65536)."""
    with path.open("rb") as f:
        head = f.read(18)
    if len(head) < 18 or not head.startswith(HEADER):
        raise ValueError(f"{path} is not a SQLite database")
    size = int.from_bytes(head[16:18], "big")
    return 65536 if size == 1 else size


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return 0


class SQLiteProbe:
    name = PROBE
    pace = Pace.FINE
    drop_idle = False

    def __init__(self, files: Sequence[Path]) -> None:
        self._files = list(files)
        self._page_sizes: dict[Path, int] = {}
        self._pages_before = 0.0

    def open(self, warn: Warn) -> None:
        for path in self._files:
            try:
                self._page_sizes[path] = page_size(path)
            except (OSError, ValueError) as exc:
                raise ProbeUnavailable(f"cannot read {path}: {exc}") from exc

    def _pages(self) -> float:
        return sum(_size(p) / self._page_sizes[p] for p in self._files)

    def start(self, t0_wall: float) -> None:
        self._pages_before = self._pages()

    def sample(self, t: float, dt: float) -> list[Reading]:
        out = []
        pages = 0.0
        for path in self._files:
            size = _size(path)
            pages += size / self._page_sizes[path]
            wal = _size(path.with_name(path.name + "-wal"))
            out.append(Reading(SeriesKey(PROBE, "db_mb", "MB", Kind.GAUGE, path.name), size / 1e6))
            out.append(Reading(SeriesKey(PROBE, "wal_mb", "MB", Kind.GAUGE, path.name), wal / 1e6))
        key = SeriesKey(PROBE, "pages_allocated_per_s", "pages/s", Kind.RATE)
        out.append(Reading(key, pages - self._pages_before, dt))
        self._pages_before = pages
        return out

    def finish(self, t: float) -> Findings:
        return Findings()

    def close(self) -> None:
        pass
