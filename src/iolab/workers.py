"""Worker threads that can be waited for even after Ctrl-C.

A loader thread must have stopped before its connection is closed: closing an SQLite or DuckDB
connection while another thread runs a statement on it crashes the process. ``Thread.join``
cannot be trusted for that after Ctrl-C: on Python 3.11 a KeyboardInterrupt that arrives inside
``join()`` may mark the still-running thread as stopped, and every later ``join()`` and
``is_alive()`` then returns at once. A :class:`Worker` keeps its own record of when its function
was entered and when it returned.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable


class Worker:
    """A daemon thread running ``target(*args)``; :attr:`ended` is set when it has returned."""

    def __init__(self, target: Callable[..., object], args: tuple[object, ...], name: str) -> None:
        self.entered = threading.Event()  # the thread runs (its function was entered)
        self.ended = threading.Event()  # the function returned or raised
        self._target = target
        self._args = args
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.started = False  # start() was called (it may have been interrupted)

    def _run(self) -> None:
        self.entered.set()
        try:
            self._target(*self._args)
        finally:
            self.ended.set()

    def start(self) -> None:
        self.started = True
        self._thread.start()


def wait_all(workers: Iterable[Worker], timeout: float, slice_seconds: float = 0.2) -> None:
    """Wait until every started worker has ended, at most ``timeout`` seconds in all.

    A worker whose start was interrupted before its thread ran is waited for a moment (its
    thread may still begin); one never started or that never begins is not waited for.
    """
    deadline = time.monotonic() + timeout
    for worker in workers:
        if not worker.started or not worker.entered.wait(
            min(slice_seconds, max(0.0, deadline - time.monotonic()))
        ):
            continue
        worker.ended.wait(max(0.0, deadline - time.monotonic()))
