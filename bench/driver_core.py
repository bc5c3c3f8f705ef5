"""The driver core in the benchmarks: which core a side runs (``--cores``), and how much of a
measured window the interpreter lock was held by the driver.

How the lock is measured. Only a thread that runs Python can hold the interpreter lock; the
compiled core's workers are pthreads that touch no Python object, so they are not threads
Python knows. :class:`ThreadCpu` samples, every ``period`` seconds (and when asked,
:meth:`ThreadCpu.mark`), the CPU time (utime + stime, ``/proc/self/task/TID/stat``) of every
thread ``threading.enumerate()`` lists (the main thread included; its own sampling thread left
out: it is the measurement's, not the driver's), and this process's CPU time (every thread,
the core's too). Over a window, the CPU time of those threads divided by the window's wall
time bounds the share of the window during which the driver held the lock: a thread holds it
only while it runs. On the compiled core it is the main thread's waits, the probes and the
window's edges. On the Python path it is an upper bound only: psycopg and PyMySQL's threads
also spend CPU in libpq, the socket calls and the kernel without the lock, so the figure can
pass 100 % when such threads run in parallel on several CPUs.

The window's figures come from the first and the last sample inside it (no interpolation): a
ratio over a span at most one period shorter at each edge, which for a steady load is the
window's. Resolution: the kernel's clock tick (``SC_CLK_TCK``, 10 ms) per thread and sample.
"""

from __future__ import annotations

import contextlib
import math
import os
import statistics
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from iolab.drivercore import CHOICES, ENV
from iolab.errors import BadInput

PERIOD = 0.1  # seconds between samples
_TICK = 1.0 / os.sysconf("SC_CLK_TCK")


def parse_cores(text: str | None) -> tuple[str, ...]:
    """``--cores python,native``: the cores to run iolab's side with, each once per round;
    () when not given (the side runs once, with ``IOLAB_DRIVER_CORE`` as the environment has
    it)."""
    if text is None:
        return ()
    asked = tuple(part.strip() for part in text.split(",") if part.strip())
    if not asked or any(a not in CHOICES for a in asked) or len(set(asked)) != len(asked):
        raise BadInput("--cores", text, f"give some of {','.join(CHOICES)}, each once")
    return asked


@contextlib.contextmanager
def core_env(core: str | None) -> Iterator[None]:
    """``IOLAB_DRIVER_CORE=core`` while iolab's side runs (None: the environment's own)."""
    if core is None:
        yield
        return
    before = os.environ.get(ENV)
    os.environ[ENV] = core
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = before


def _task_seconds(tid: int) -> float | None:
    """A thread's CPU seconds so far (utime + stime); None when it has ended."""
    try:
        text = Path(f"/proc/self/task/{tid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()  # from the 3rd field (state) on
    return (int(fields[11]) + int(fields[12])) * _TICK


@dataclass(frozen=True)
class _Sample:
    at: float  # perf_counter seconds
    threads: dict[int, float]  # native thread id -> CPU seconds, the threads Python knows
    process: float  # this process's CPU seconds less the sampler's own


@dataclass(frozen=True)
class Held:
    """What a window's samples say: its wall seconds, and the CPU seconds of Python's threads
    and of the whole process (the sampler's own left out) over them."""

    seconds: float
    python_cpu: float
    process_cpu: float

    @property
    def gil(self) -> float:
        """The share of the window the interpreter lock was held by the driver, at most."""
        return self.python_cpu / self.seconds if self.seconds > 0 else math.nan

    @property
    def cpu(self) -> float:
        """The process's CPU seconds per second of the window."""
        return self.process_cpu / self.seconds if self.seconds > 0 else math.nan


NO_WINDOW = Held(0.0, math.nan, math.nan)


class ThreadCpu:
    """Samples the CPU time of the threads Python knows while the ``with`` block runs."""

    def __init__(self, period: float = PERIOD) -> None:
        self.period = period
        self._samples: list[_Sample] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="thread-cpu", daemon=True)

    def __enter__(self) -> ThreadCpu:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while True:
            self.mark()
            if self._stop.wait(self.period):
                return

    def mark(self) -> None:
        """A sample now (e.g. at a window's edge), from the caller's thread."""
        own = self._thread.native_id
        threads: dict[int, float] = {}
        for t in threading.enumerate():
            tid = t.native_id
            if tid is None or tid == own:
                continue
            seconds = _task_seconds(tid)
            if seconds is not None:
                threads[tid] = seconds
        process = time.process_time() - self.own()
        sample = _Sample(time.perf_counter(), threads, process)
        with self._lock:
            self._samples.append(sample)

    def own(self) -> float:
        """The sampler's own CPU seconds so far (left out of the process's)."""
        tid = self._thread.native_id
        return (_task_seconds(tid) or 0.0) if tid is not None else 0.0

    def over(self, start: float, end: float) -> Held:
        """The window ``start``..``end`` (perf_counter seconds), from its first and last
        samples; :data:`NO_WINDOW` when fewer than two fell inside it. A thread that started
        inside counts from 0 s; one that ended inside counts up to its last sample."""
        with self._lock:
            inside = [s for s in self._samples if start <= s.at <= end]
        if len(inside) < 2:
            return NO_WINDOW
        first, last = inside[0], inside[-1]
        seen: dict[int, float] = {}
        for s in inside:
            seen.update(s.threads)  # each thread's latest reading inside the window
        python = sum(v - first.threads.get(tid, 0.0) for tid, v in seen.items())
        return Held(last.at - first.at, python, last.process - first.process)


def median_of(values: Sequence[float]) -> float:
    """The median of the finite values (nan when none)."""
    usable = [v for v in values if math.isfinite(v)]
    return statistics.median(usable) if usable else math.nan
