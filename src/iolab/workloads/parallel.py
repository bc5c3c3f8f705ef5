"""Bulk work over several connections, each in its own thread: what the loads of TPC-H and
TPC-C share. A :class:`Chunk` is a run of whole lines of a CSV file; :func:`run_parallel` hands
tasks (chunks, index builds) to connections until none is left or one fails."""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from iolab.engines.connection import Connection, cancel_statements
from iolab.errors import RunFailed
from iolab.workers import Worker, wait_all

BLOCK_BYTES = 1 * 2**20  # bytes read from a chunk at a time
# psycopg logs the error of ending a COPY whose connection already failed ("error ignored
# terminating <psycopg.Copy [BAD] ...>"), which Python's logging prints on stderr when nothing
# handles it: the load's first error is what iolab reports, in one line
logging.getLogger("psycopg").addHandler(logging.NullHandler())
Connect = Callable[[], Connection]  # a new connection to the engine's benchmark database


@dataclass(frozen=True)
class Chunk:
    """Bytes ``start`` to ``end`` of a table's CSV file: whole lines, no header."""

    table: str
    path: Path
    start: int
    end: int

    def blocks(self, stop: threading.Event | None = None) -> Iterator[bytes]:
        """The chunk's bytes, :data:`BLOCK_BYTES` at a time; :class:`Stopped` once ``stop``
        is set."""
        with self.path.open("rb") as f:
            f.seek(self.start)
            left = self.end - self.start
            while left > 0:
                if stop is not None and stop.is_set():
                    raise Stopped
                block = f.read(min(BLOCK_BYTES, left))
                if not block:
                    raise RunFailed(f"{self.path} is shorter than when the load began")
                left -= len(block)
                yield block


T = TypeVar("T")  # a task of run_parallel


STOP_TIMEOUT = 30.0  # seconds to wait for workers to stop before their connections close


class Stopped(Exception):
    """A worker stopped because another failed or the run was interrupted."""


def run_parallel(
    engine: str,
    connect: Connect,
    workers: int,
    tasks: list[T],
    work: Callable[[Connection, T, threading.Event], None],
) -> None:
    """``work(conn, task, stop)`` for every task, on ``workers`` connections from ``connect``,
    each in its own thread; the first error stops the others and is raised as RunFailed naming
    ``engine``. ``work`` raises :class:`Stopped` when it sees ``stop`` set."""
    pending: queue.SimpleQueue[T] = queue.SimpleQueue()
    for task in tasks:
        pending.put(task)
    stop = threading.Event()
    errors: list[BaseException] = []
    conns = []
    try:
        for _ in range(max(1, min(workers, len(tasks)))):
            conns.append(connect())

        def worker(conn: Connection) -> None:
            while not stop.is_set():
                try:
                    task = pending.get_nowait()
                except queue.Empty:
                    return
                try:
                    work(conn, task, stop)
                except Stopped:
                    return
                except BaseException as exc:
                    errors.append(exc)
                    stop.set()
                    return

        running = [Worker(worker, (c,), f"loader-{i}") for i, c in enumerate(conns)]
        try:
            for w in running:
                w.start()
            for w in running:
                while not w.ended.wait(0.2):
                    pass
        except BaseException:  # Ctrl-C: the workers stop at their next task, then conns close
            stop.set()
            cancel_statements(conns)
            wait_all(running, STOP_TIMEOUT)
            raise
    finally:
        for conn in conns:
            with contextlib.suppress(Exception):
                conn.close()
    if errors:
        first = errors[0]
        text = str(first).strip().splitlines()[0] if str(first).strip() else repr(first)
        raise RunFailed(f"{engine}: {text}") from first
