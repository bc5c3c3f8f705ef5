"""What an engine provides for TPC-C: its tables and load, its server-side routines, how a
transaction is begun, called and retried, and its own count of transactions.

Connections come from the engine (``Connect``). The CSV files are cut into chunks at line ends
(:func:`chunks`) for engines that load a table over several connections.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from iolab.drivercore import Target
from iolab.workloads.parallel import Chunk
from iolab.workloads.tpcc import spec
from iolab.workloads.tpcc.transactions import Input

Connect = Callable[[], Any]  # a new connection to the benchmark database
Progress = Callable[[int], None]  # called with CSV bytes just loaded
CHUNK_BYTES = 8 * 2**20


class TpccDialect(Protocol):
    title: str
    modes: tuple[str, ...]  # the modes it runs; the first is its default
    for_update: str
    # the engine's server as the compiled core reaches it (its core_target()): the core runs
    # server mode there; None where it does not (SQLite)
    core: Target | None

    def q(self, sql: str) -> str: ...

    def arg(self, value: Any) -> Any: ...

    def create_tables(self, conn: Any) -> None:
        """The nine tables spread over the layout's data files (keys may wait for
        :meth:`finish_load`)."""
        ...

    def load(self, connect: Connect, directory: Path, progress: Progress) -> None:
        """Every table from its CSV file in ``directory``."""
        ...

    def finish_load(self, connect: Connect) -> None:
        """Keys, the two indexes and statistics; data written to the files."""
        ...

    def install_routines(self, conn: Any) -> None:
        """The five server-side routines (``--mode server``)."""
        ...

    def prepare(self, conn: Any, mode: str) -> None:
        """A virtual user's connection set up for ``mode``."""
        ...

    def begin(self, conn: Any, write: bool) -> None:
        """Open a client-side transaction (``write``: it will write)."""
        ...

    def call(self, conn: Any, tx: Input) -> None:
        """One transaction as one call of its routine, committed."""
        ...

    def commit(self, conn: Any) -> None: ...

    def rollback(self, conn: Any) -> None: ...

    def retryable(self, exc: BaseException) -> bool:
        """A serialization failure or deadlock: the transaction is run again."""
        ...

    def user_rollback(self, exc: BaseException) -> bool:
        """A routine's refusal of the unused item number (the spec's 1 % rollback)."""
        ...

    def counter(self, conn: Any, sessions: Sequence[Any]) -> int | None:
        """The engine's own count of transactions ended (commits and rollbacks) in the
        benchmark database, or by ``sessions`` (the users' connections) where it counts per
        session; None where it keeps none."""
        ...

    def flush_counter(self, conn: Any) -> int:
        """Make ``conn``'s ended transactions visible to :meth:`counter`; the transactions this
        itself adds to the counter."""
        ...


def chunks(directory: Path, size: int = CHUNK_BYTES) -> list[Chunk]:
    """Every table's CSV file (no header) cut at line ends into chunks of about ``size`` bytes,
    largest tables first."""
    found: list[Chunk] = []
    paths = [directory / f"{t}.csv" for t in spec.TABLES]
    for path in sorted(paths, key=lambda p: -p.stat().st_size):
        total = path.stat().st_size
        start = 0
        with path.open("rb") as f:
            while start < total:
                end = min(total, start + size)
                if end < total:
                    f.seek(end)
                    end += len(f.readline())
                found.append(Chunk(path.stem, path, start, end))
                start = end
    return found


def distribute(items: list[str], places: list[Any]) -> dict[str, Any]:
    """Each table's place (tablespace, directory, schema): round-robin in table order."""
    return {item: places[i % len(places)] for i, item in enumerate(items)}
