"""Manual checkpoints (seed 003's variation): a checkpoint requested every so many seconds.

A thread of its own, on a connection of its own, asks the engine for a checkpoint at
``every``, 2 x ``every``, ... seconds after the load began (see
:mod:`iolab.engines.log_control` for what each engine does) and waits for it. One runs at a
time: a checkpoint that comes due while the previous one still runs starts when that one ends,
and the ones it skipped are not made up. Each request is an interval on the probes' time axis,
``kind = "requested"``, with what it wrote where the engine says.
"""

from __future__ import annotations

import threading
import time

from iolab.engines.connection import Connection, cancel_statements
from iolab.engines.log_control import LogControl
from iolab.probes.interface import Checkpoint
from iolab.workers import Worker, wait_all

REQUESTED = "requested"  # the kind of a requested checkpoint's interval
STOP_TIMEOUT = 30.0  # seconds to wait for a checkpoint in flight when the load ends


class CheckpointSchedule:
    """Requests a checkpoint every ``every`` seconds from :meth:`start` until :meth:`stop`."""

    def __init__(
        self, control: LogControl, conn: Connection, every: float, *, keep_size: bool = False
    ) -> None:
        self._control = control
        self._conn = conn
        self._every = every
        self._keep_size = keep_size
        self._stop = threading.Event()  # no further requests
        self._cancel = threading.Event()  # and the one in flight stops waiting
        self._t0 = 0.0
        self._worker: Worker | None = None
        self.made: list[Checkpoint] = []
        self.error: BaseException | None = None

    def start(self, t0: float) -> None:
        """Begin; ``t0`` is the ``time.perf_counter()`` the intervals count from."""
        self._t0 = t0
        self._worker = Worker(self._run, (), "checkpoints")
        self._worker.start()

    def _run(self) -> None:
        due = self._every
        while not self._stop.wait(max(0.0, self._t0 + due - time.perf_counter())):
            start = time.perf_counter() - self._t0
            try:
                pages, detail = self._control.request_checkpoint(
                    self._conn, self._keep_size, self._cancel.is_set
                )
            except BaseException as exc:
                if not self._stop.is_set():
                    self.error = exc
                return
            end = time.perf_counter() - self._t0
            self.made.append(Checkpoint(start, end, pages, REQUESTED, detail))
            while due <= end:
                due += self._every

    def stop(self, *, cancel: bool = False) -> list[Checkpoint]:
        """Stop requesting; wait for a checkpoint in flight, or with ``cancel`` (Ctrl-C, a
        failed load) cancel it, as also after :data:`STOP_TIMEOUT`. The intervals of the
        checkpoints made."""
        self._stop.set()
        if cancel:
            self._cancel.set()
            cancel_statements([self._conn])
        if self._worker is not None:
            wait_all([self._worker], STOP_TIMEOUT)
            if not self._worker.ended.is_set():
                self._cancel.set()
                cancel_statements([self._conn])
                wait_all([self._worker], STOP_TIMEOUT)
        return list(self.made)
