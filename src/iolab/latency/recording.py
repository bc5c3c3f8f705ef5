"""Timing every operation of a load: each loader's clock, and the run's recording of them.

A loader asks its :class:`LoaderClock` when to start each operation (:meth:`LoaderClock.begin`:
now, or its place on the ``--rate`` schedule after sleeping until then; None once ``--duration``
is up, and under a rate only at the deadline: a timed load lasts its duration) and tells it when
the operation ended (:meth:`LoaderClock.record`). Under a rate, row ``j`` of the load (all
loaders together) is due ``j / rate`` seconds after the start, the first at 0: a load of ``T``
seconds is due ``ceil(T * rate)`` rows (:func:`rows_due`). Under a rate, an
operation's latency runs from its *intended* start, so a stall that holds back the operations
behind it counts against each of them, as they would have waited in front of a real
application (no coordinated omission).

The hot path appends whole microseconds to an array; at each interval boundary (the probe
interval, on a grid from the load's start, plus the end of the warm-up) the loader closes its
interval and the main thread buckets it into a :class:`~iolab.latency.histogram.Histogram`
(:meth:`LatencyRecording.collect`). What is kept: one histogram per loader per operation kind per
interval, each marked when it fell in the warm-up.
"""

from __future__ import annotations

import math
import sys
import time
from array import array
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from iolab.errors import BadInput
from iolab.latency.histogram import Histogram
from iolab.sampling import Grid
from iolab.units import format_rate

_NEVER = sys.maxsize
# The most operations a second one process's schedule places: a loader's clock costs 7.4 us per
# operation on the development machine (begin and record, no database; 2 cores at load 3), so
# one process, whose loaders share the interpreter, places about 135,000 a second there and
# not a million anywhere; above this a "rate" is no schedule, every operation is late. Refused
# above it, in rows/s (populate) or transactions/s (TPC-C): docs/latency.md.
MAX_RATE = 1_000_000.0
# The longest --duration a schedule takes: its deadline is a count of nanoseconds, and the
# kernel's timers (time.sleep, Event.wait) take at most 2**63 ns, about 292 years, from which a
# year is far: longer is refused, not an OverflowError at the end of the run.
MAX_SECONDS = 365 * 24 * 3600.0
# The achieved rate of an open-loop load is its offered one when within this share of it,
# either way (docs/latency.md): a load that ran behind, or whose measured part held more or
# fewer of the schedule's rows than the rate times its length (one row in 20 is 5 %).
RATE_TOLERANCE = 0.05


class OpKind(StrEnum):
    """What one timed operation was."""

    TRANSACTION = "transaction"  # a statement in autocommit: it commits itself (seeds' case)
    STATEMENT = "statement"  # an INSERT or COPY chunk inside an explicit transaction
    COMMIT = "commit"  # the COMMIT that ends an explicit transaction
    # TPC-C's five transactions (workloads/tpcc), each timed whole, retries included
    NEW_ORDER = "new_order"
    PAYMENT = "payment"
    ORDER_STATUS = "order_status"
    DELIVERY = "delivery"
    STOCK_LEVEL = "stock_level"


KIND_ORDER = (OpKind.TRANSACTION, OpKind.STATEMENT, OpKind.COMMIT)  # a loader's kinds


@dataclass(frozen=True)
class Pacing:
    """The shared schedule of one load."""

    interval_s: float  # histogram interval: the probe interval (finer at first: Grid)
    warmup_s: float | None = None  # a time warm-up
    warmup_rows: int | None = None  # a warm-up of rows: it ends by count (end_warmup)
    duration_s: float | None = None  # --duration: no new operation starts after it
    rate: float | None = None  # --rate: rows per second over all loaders


@dataclass(frozen=True)
class Interval:
    """One loader's histogram of one operation kind over one interval (seconds from the start
    of the load)."""

    loader: int
    kind: OpKind
    seq: int  # grid interval number: it covers [seq, seq + 1) * interval at most
    warmup: bool
    start_s: float
    end_s: float
    histogram: Histogram


class LoaderClock:
    """The operation clock of loader ``index`` (one thread uses it; the main thread only ends
    the warm-up through :meth:`end_warmup`)."""

    def __init__(self, index: int, loaders: int, pacing: Pacing, t0_ns: int, timed: bool):
        self.index = index
        self.timed = timed
        self._t0 = t0_ns
        self._step, self._fine_steps, self._ratio = _grid_ns(pacing.interval_s)
        self._fine_end = t0_ns + self._fine_steps * self._step  # where the step widens
        self._deadline = (
            t0_ns + round(pacing.duration_s * 1e9) if pacing.duration_s is not None else _NEVER
        )
        # --rate: row r of this loader is due at t0 + (index + r * loaders) / rate seconds, so
        # the loaders' rows arrive evenly spaced, not in bursts; held below "never" so that a
        # rate so low that a row's interval overflows (1e-300 rows/s) still schedules row 0
        self._ns_per_row = min(loaders * 1e9 / pacing.rate, _NEVER) if pacing.rate else 0.0
        self._phase = min(index * 1e9 / pacing.rate, _NEVER) if pacing.rate else 0.0
        self._rows = 0  # rows scheduled so far
        # --rate with a time warm-up: rows of the operations due before it ended (the schedule
        # decides which rows are the warm-up's, not when they happened to commit)
        self._warm_until = t0_ns + round(pacing.warmup_s * 1e9) if pacing.warmup_s else 0
        self.warm_rows = 0
        self._warm = bool(pacing.warmup_s or pacing.warmup_rows)  # until the warm-up ends
        self._warm_end = t0_ns + round(pacing.warmup_s * 1e9) if pacing.warmup_s else _NEVER
        self._seq = 0
        self._start = t0_ns
        self._roll_at = t0_ns + self._step
        self._values: dict[OpKind, array[int]] = {k: array("q") for k in KIND_ORDER}
        self.closed: deque[tuple[int, bool, int, int, dict[OpKind, array[int]]]] = deque()

    @classmethod
    def untimed(cls) -> LoaderClock:
        """A clock that neither paces, stops nor records: a load called on its own."""
        return cls(0, 1, Pacing(1.0), time.perf_counter_ns(), False)

    @property
    def paced(self) -> bool:
        """Whether a rate schedules the operations (else each is due when asked for)."""
        return bool(self._ns_per_row)

    # --- the loader's side ------------------------------------------------------------------

    def begin(self, rows: int, *, can_stop: bool = True) -> int | None:
        """The start of the next operation of ``rows`` rows (perf_counter ns): now, or its due
        time under a rate (sleeping until then). None when ``can_stop`` and the duration is up:
        the loader stops there (at a transaction boundary: it passes ``can_stop`` False inside
        a transaction, which then ends whatever the clock says)."""
        due = self._next(rows, can_stop)
        if due is None:
            self.wait_out()
        elif self._ns_per_row:
            ahead = due - time.perf_counter_ns()
            if ahead > 0:
                time.sleep(ahead / 1e9)
        return due

    def wait_out(self) -> bool:
        """Under a rate, a timed load lasts its duration: a loader whose next operation falls
        after the deadline idles until the deadline (nothing else is due before it). True for
        such a clock (a rate and a duration), after the wait."""
        if not self._ns_per_row or self._deadline == _NEVER:
            return False
        left = self._deadline - time.perf_counter_ns()
        if left > 0:
            time.sleep(left / 1e9)
        return True

    def due(self, rows: int) -> int | None:
        """:meth:`begin` without sleeping: when the next operation is due (None: duration is
        up), for a loop that drives many loaders and waits on them itself (and then on
        :meth:`wait_out`)."""
        return self._next(rows, True)

    def _next(self, rows: int, can_stop: bool) -> int | None:
        """The next operation's start (its place on the rate's schedule, or now); None when
        ``can_stop`` and the duration is up, also for a loader behind its schedule."""
        now = time.perf_counter_ns()
        start = now
        if self._ns_per_row:
            start = self._t0 + int(min(self._phase + self._rows * self._ns_per_row, _NEVER))
            self._rows += rows
        if can_stop and (start >= self._deadline or now >= self._deadline):
            return None
        if start < self._warm_until:
            self.warm_rows += rows
        return start

    def record(self, kind: OpKind, started: int) -> None:
        """An operation of ``kind`` that began at ``started`` (from :meth:`begin`) ended now."""
        if not self.timed:
            return
        now = time.perf_counter_ns()
        if now >= self._roll_at or now >= self._warm_end:
            self._roll(now)
        self._values[kind].append((now - started) // 1000)

    def _roll(self, now: int) -> None:
        """Close the interval ``now`` left and open the one it is in."""
        warm_ended = self._warm and now >= self._warm_end
        end = min(self._roll_at, self._warm_end) if warm_ended else self._roll_at
        self._close(end)
        if warm_ended:
            self._warm = False
            self._start = end
            self._warm_end = _NEVER
        seq, start, end = self._slot(now)
        if seq != self._seq:
            self._seq = seq
            self._start = start
        self._roll_at = end

    def _slot(self, now: int) -> tuple[int, int, int]:
        """The grid interval ``now`` is in: its number, start and end (ns). Numbers count fine
        steps through the fine start, whole intervals after it."""
        if now < self._fine_end:
            seq = (now - self._t0) // self._step
            return seq, self._t0 + seq * self._step, self._t0 + (seq + 1) * self._step
        wide = self._step * self._ratio
        k = (now - self._fine_end) // wide
        start = self._fine_end + k * wide
        return self._fine_steps + k, start, start + wide

    def _close(self, end: int) -> None:
        values = self._values
        if any(values.values()):
            self.closed.append((self._seq, self._warm, self._start, end, values))
            self._values = {k: array("q") for k in KIND_ORDER}

    # --- the main thread's side -------------------------------------------------------------

    def end_warmup(self, at_ns: int) -> None:
        """A warm-up counted in rows ended at ``at_ns``: operations ending later are measured."""
        if self._warm and self._warm_end == _NEVER:
            self._warm_end = at_ns

    def finish(self, end_ns: int) -> None:
        """Close the last interval (the loader has stopped)."""
        if self._warm and end_ns >= self._warm_end:
            self._roll(end_ns)
        self._close(min(end_ns, self._roll_at))


class LatencyRecording:
    """The clocks of a load's loaders and the histograms they produced."""

    def __init__(self, loaders: int, pacing: Pacing, *, timed: bool = True) -> None:
        self.loaders = loaders
        self.pacing = pacing
        self.timed = timed
        self.t0_ns = 0
        self.clocks: list[LoaderClock] = []
        self._intervals: dict[tuple[int, OpKind, int, bool], Interval] = {}
        self.interval_s = pacing.interval_s  # the grid step of the intervals finish returns

    def begin(self, t0_ns: int) -> None:
        """The load starts at ``t0_ns`` (perf_counter ns): make each loader's clock."""
        self.t0_ns = t0_ns
        self.clocks = [
            LoaderClock(i, self.loaders, self.pacing, t0_ns, self.timed)
            for i in range(self.loaders)
        ]

    def end_warmup(self, at_ns: int) -> None:
        for c in self.clocks:
            c.end_warmup(at_ns)

    def collect(self) -> None:
        """Bucket the intervals the loaders closed since the last call (main thread)."""
        for c in self.clocks:
            while c.closed:
                seq, warm, start, end, values = c.closed.popleft()
                for kind, raw in values.items():
                    if raw:
                        self._add(c.index, kind, seq, warm, start, end, raw)

    def _add(
        self, loader: int, kind: OpKind, seq: int, warm: bool, start: int, end: int, raw: array[int]
    ) -> None:
        self._interval(loader, kind, seq, warm, start, end).histogram.add_values(raw)

    def add_histogram(
        self, loader: int, kind: OpKind, seq: int, warm: bool, start: int, end: int, h: Histogram
    ) -> None:
        """An interval a clock outside Python bucketed already (the compiled driver core's:
        iolab.drivercore), merged as :meth:`collect` merges a loader's raw values."""
        self._interval(loader, kind, seq, warm, start, end).histogram.add(h)

    def _interval(
        self, loader: int, kind: OpKind, seq: int, warm: bool, start: int, end: int
    ) -> Interval:
        """Loader ``loader``'s interval ``seq`` of ``kind`` (made on first use from its start
        and end, perf_counter ns)."""
        key = (loader, kind, seq, warm)
        found = self._intervals.get(key)
        if found is None:
            found = self._intervals[key] = Interval(
                loader,
                kind,
                seq,
                warm,
                (start - self.t0_ns) / 1e9,
                (end - self.t0_ns) / 1e9,
                Histogram(),
            )
        return found

    def finish(self, end_ns: int) -> list[Interval]:
        """Close every loader's last interval and return all intervals, in time order: on the
        fine grid for a load that ended within the fine start, else on whole intervals (the
        fine start's histograms merged, bucket by bucket; see :class:`iolab.sampling.Grid`)."""
        for c in self.clocks:
            c.finish(end_ns)
        self.collect()
        intervals = list(self._intervals.values())
        step_ns, fine_steps, ratio = _grid_ns(self.pacing.interval_s)
        if end_ns - self.t0_ns <= fine_steps * step_ns:
            self.interval_s = step_ns / 1e9 if fine_steps else self.pacing.interval_s
        else:
            intervals = _widen(intervals, fine_steps, ratio)
        return sorted(intervals, key=lambda i: (i.seq, i.warmup is False, i.loader))


def rows_due(rate: float, start_s: float, end_s: float) -> int:
    """Rows the ``rate`` schedule has due in ``[start_s, end_s)`` seconds of a load: row ``j``
    at ``j / rate``, so ``ceil(end * rate) - ceil(start * rate)``, a product within 1e-9 of a
    whole number of rows taken as that number (3 s at 10 rows/s is 30 rows, not 31; 1 s at
    1e-300 rows/s is still row 0, due at 0)."""

    def due_before(t: float) -> int:
        rows = t * rate
        whole = round(rows)
        if whole >= 1 and abs(rows - whole) <= 1e-9 * whole:
            return whole
        return max(0, math.ceil(rows))

    return max(0, due_before(end_s) - due_before(start_s))


def rate_held(target: float, achieved: float) -> bool:
    """Whether an open-loop load held its offered ``target`` rate: the ``achieved`` one (what
    was done in the measured part over its length) within RATE_TOLERANCE of it, over or
    under."""
    return abs(achieved - target) <= RATE_TOLERANCE * target


def rate_judged(target: float, achieved: float, due: int | None = None) -> dict[str, Any]:
    """A summary's judgement of an open-loop load: the target, the rate achieved (what was done
    in the measured part over its length), the tolerance and whether it held the target
    (:func:`rate_held`); ``due``: what its schedule had due in the measured part, where that is
    known (``due_rows``, a timed populate: those it can do at most, which over a short window
    are not the rate times its length: 3 s at 0.5 rows/s, rows due at 0 and 2 s)."""
    out: dict[str, Any] = {
        "target": target,
        "achieved": achieved,
        "tolerance": RATE_TOLERANCE,
        "held": rate_held(target, achieved),
    }
    if due is not None:
        out["due_rows"] = due
    return out


def rate_missed(judged: Mapping[str, Any], done: int, unit: str) -> str:
    """The warning of a load that did not hold its rate (``judged``: as :func:`rate_judged`
    makes it; ``done``: the ``unit`` of the measured part, e.g. rows)."""
    target, achieved = judged["target"], judged["achieved"]
    text = (
        f"the load did not hold --rate {format_rate(target)} {unit}/s within "
        f"{RATE_TOLERANCE:.0%}: it achieved {format_rate(achieved)} {unit}/s "
        f"({achieved / target:.0%})"
    )
    if done <= 1 / RATE_TOLERANCE:  # one operation is 5 % or more of them
        return (
            f"{text}; its measured part did {done:,} {unit}, so one more or fewer is "
            f"{1 / max(1, done):.0%} of them: give a longer load or a higher --rate"
        )
    if achieved < target:
        return (
            f"{text}; latencies count from each operation's intended start, so they include "
            "the backlog"
        )
    return text


def check_rate(field: str, value: float | None, what: str) -> None:
    """Refuse a rate no schedule places: not a number above 0, or above MAX_RATE."""
    if value is not None and not (math.isfinite(value) and 0 < value <= MAX_RATE):
        raise BadInput(field, value, rate_help(what))


def rate_help(what: str) -> str:
    """What a rate option takes, ``what`` its unit in words ("rows per second")."""
    return (
        f"give {what}, more than 0 and at most {MAX_RATE:,.0f} "
        "(the most one process's schedule places)"
    )


def check_duration(field: str, seconds: float | None) -> None:
    """Refuse a duration longer than a schedule's clock takes (MAX_SECONDS)."""
    if seconds is not None and not seconds <= MAX_SECONDS:
        raise BadInput(field, seconds, duration_help())


def duration_help() -> str:
    return f"give at most {MAX_SECONDS / 3600:,.0f}h (a year), e.g. 60s, 5m or 24h"


def _grid_ns(interval_s: float) -> tuple[int, int, int]:
    """The loaders' grid in ns: the fine step, the fine steps of the fine start, and fine
    steps per interval (a whole interval is exactly ``ratio`` steps)."""
    grid = Grid.adaptive(interval_s)
    return max(1, round(grid.fine * 1e9)), grid.fine_steps, grid.ratio


def _widen(intervals: Iterable[Interval], fine_steps: int, ratio: int) -> list[Interval]:
    """Renumber intervals onto whole intervals, merging the fine start's ``ratio`` steps."""
    wide: dict[tuple[int, OpKind, int, bool], Interval] = {}
    for i in intervals:
        seq = i.seq // ratio if i.seq < fine_steps else i.seq - fine_steps + fine_steps // ratio
        key = (i.loader, i.kind, seq, i.warmup)
        found = wide.get(key)
        if found is None:
            wide[key] = replace(i, seq=seq)
        else:
            histogram = Histogram.merged([found.histogram, i.histogram])
            wide[key] = replace(
                found,
                start_s=min(found.start_s, i.start_s),
                end_s=max(found.end_s, i.end_s),
                histogram=histogram,
            )
    return list(wide.values())


def merged_by_kind(intervals: Iterable[Interval], *, warmup: bool = False) -> dict[str, Histogram]:
    """Each operation kind's histogram over ``intervals`` (the warm-up left out unless asked)."""
    out: dict[str, Histogram] = {}
    for i in intervals:
        if i.warmup and not warmup:
            continue
        out.setdefault(i.kind.value, Histogram()).add(i.histogram)
    return {k.value: out[k.value] for k in OpKind if k.value in out}


def series_points(intervals: Sequence[Interval], kind: str) -> list[tuple[int, Histogram]]:
    """(grid interval number, histogram of every loader) of one kind, warm-up included, for
    the per-interval p50 / p99 / max series."""
    by_seq: dict[int, Histogram] = {}
    for i in intervals:
        if i.kind.value == kind:
            by_seq.setdefault(i.seq, Histogram()).add(i.histogram)
    return sorted(by_seq.items())
