"""The recorder: runs the probes beside a workload on their own threads.

    with Recorder(probes, interval=1.0, events=events) as recorder:
        ...  # the measured part of the workload; t = 0 is when the recorder took its baseline
    data = recorder.data

Each probe is sampled at its pace (:class:`~iolab.probes.interface.Pace`), one thread per pace:
cheap probes (devices, host, checkpoints in the log, the workload's progress) every ``interval``
seconds after a first 10 s at 10 Hz (:class:`iolab.sampling.Grid`: a short run keeps that fine
grid, a longer one has it merged into whole intervals when the fine start ends); engine
counters, a query per sample, every ``interval`` seconds from the start; wait events every
``wait_interval``. Ticks are on a fixed grid (t0 + k * step), so a late wake-up does not drift the
series; a tick missed altogether repeats the next reading, whose rate covers both. When the block
ends the probes take a last sample (folded into the previous value when it came less than a
quarter interval after it) and hand over their findings.

Live: inside :func:`publishing`, a third thread hands each series' new values to a
:class:`LiveSink` every ``flush_interval`` seconds (the results database's chunks, see
:mod:`iolab.store.live`), so a run can be watched while it records and a crash loses at most
the last chunk. It only reads what the sampling threads appended; a sink that fails is tried
again at the next flush, and never stops the recording or the workload.

The recorder never raises because of a probe: a probe that cannot open, or fails later, is
dropped with one warning, and the workload goes on. Warnings are emitted as events from the
thread that entered and left the block, never from the sampling threads.
"""

from __future__ import annotations

import contextlib
import math
import sqlite3
import threading
import time
from array import array
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import TracebackType
from typing import Protocol

from iolab.events import EventSink, Warning, discard
from iolab.probes.data import Chunk, ProbeData, Series
from iolab.probes.interface import (
    Checkpoint,
    Findings,
    Kind,
    Pace,
    Probe,
    ProbeUnavailable,
    Reading,
    SeriesKey,
    SoFar,
    WaitStat,
)
from iolab.results import RunOutcome
from iolab.sampling import Grid

DEFAULT_INTERVAL = 1.0
WAIT_INTERVAL = 0.1  # 10 Hz
MERGE_FRACTION = 0.25  # a last sample closer than this to the previous tick is folded into it
FLUSH_INTERVAL = 1.0  # seconds between two live flushes


class LiveSink(Protocol):
    """Where the series' new values go while a run records; called from one thread."""

    def write(self, chunks: Sequence[Chunk], found: Findings) -> None:
        """Keep ``chunks`` and the waits and checkpoints ``found`` so far (replacing those of
        the last write), or raise: they are handed again, with what came since, next time."""

    def close(self) -> None: ...


_live: ContextVar[LiveSink | None] = ContextVar("iolab_live_sink", default=None)


@contextmanager
def publishing(sink: LiveSink | None) -> Iterator[None]:
    """Recorders entered inside the block flush their series to ``sink`` as they record
    (None: they keep them until the end)."""
    token = _live.set(sink)
    try:
        yield
    finally:
        _live.reset(token)


@dataclass
class _Track:
    """One series being recorded."""

    key: SeriesKey
    values: array[float]
    total_num: float = 0.0
    total_den: float = 0.0
    peak: float = -math.inf
    drop_idle: bool = False  # dropped at the end if it never moved
    moved: bool = False
    last: tuple[float, float] = (math.nan, math.nan)
    # each value's fraction, kept while the grid is fine so that it can be merged (coarsen)
    nums: array[float] | None = None
    dens: array[float] | None = None

    def add(self, reading: Reading, slots: int) -> None:
        # the hot path: hundreds of series per sample, ten samples a second at a run's start
        _, num, den = reading
        value = num / den if den else math.nan
        nums, dens = self.nums, self.dens
        if slots == 1:
            self.values.append(value)
            if nums is not None and dens is not None:
                nums.append(num)
                dens.append(den)
        else:
            self.values.extend([value] * slots)
            if nums is not None and dens is not None:
                nums.extend([num / slots] * slots)
                dens.extend([den / slots] * slots)
        self.total_num += num
        self.total_den += den
        self.last = (num, den)
        self.peak = max(self.peak, value)  # a NaN value never wins: NaN > x is False
        if num and not self.moved and not math.isnan(num):
            self.moved = True

    def fold(self, reading: Reading) -> None:
        """Fold a short last reading into the previous value."""
        if not self.values:
            self.add(reading, 1)
            return
        if self.key.kind is Kind.GAUGE:
            old = self.values[-1]
            self.values[-1] = reading.value
            self.total_num += reading.num - (0.0 if math.isnan(old) else old)
            self.total_den += 0.0 if not math.isnan(old) else reading.den
        else:
            num = (0.0 if math.isnan(self.last[0]) else self.last[0]) + reading.num
            den = (0.0 if math.isnan(self.last[1]) else self.last[1]) + reading.den
            self.values[-1] = num / den if den else math.nan
            self.total_num += reading.num
            self.total_den += reading.den
            self.last = (num, den)
            if self.nums is not None and self.dens is not None:  # the fine start may merge yet
                self.nums[-1] = (0.0 if math.isnan(self.nums[-1]) else self.nums[-1]) + reading.num
                self.dens[-1] = (0.0 if math.isnan(self.dens[-1]) else self.dens[-1]) + reading.den
        self._seen(self.values[-1], reading.num)

    def _seen(self, value: float, num: float) -> None:
        if not math.isnan(value) and value > self.peak:
            self.peak = value
        if num != 0 and not math.isnan(num):
            self.moved = True

    def missing(self, slots: int) -> None:
        """``slots`` values the probe had nothing for."""
        self.values.extend([math.nan] * slots)
        if self.nums is not None and self.dens is not None:
            self.nums.extend([math.nan] * slots)
            self.dens.extend([math.nan] * slots)

    def coarsen(self, ratio: int) -> None:
        """Merge every ``ratio`` values into one: a rate or a ratio adds its fractions, a gauge
        keeps its last value. The run's totals of rates and ratios do not change; a gauge's
        mean becomes the mean of the merged values, each now standing for the same time."""
        nums, dens = self.nums, self.dens
        assert nums is not None
        assert dens is not None
        merged: array[float] = array("f")
        peak = -math.inf
        num = den = math.nan
        for start in range(0, len(self.values), ratio):
            end = start + ratio
            if self.key.kind is Kind.GAUGE:
                finite = [v for v in self.values[start:end] if not math.isnan(v)]
                value = finite[-1] if finite else math.nan
                num, den = value, 1.0
            else:
                both = zip(nums[start:end], dens[start:end], strict=True)
                pairs = [(n, d) for n, d in both if not math.isnan(n)]
                num = sum(n for n, _ in pairs) if pairs else math.nan
                den = sum(d for _, d in pairs) if pairs else math.nan
                value = num / den if pairs and den else math.nan
            merged.append(value)
            if not math.isnan(value) and value > peak:
                peak = value
        if self.key.kind is Kind.GAUGE:
            finite = [v for v in merged if not math.isnan(v)]
            self.total_num, self.total_den = float(sum(finite)), float(len(finite))
        self.values, self.peak, self.last = merged, peak, (num, den)
        self.nums = self.dens = None


@dataclass
class _Group:
    """Probes sampled on one thread on one grid."""

    grid: Grid
    probes: list[Probe]
    tracks: dict[SeriesKey, _Track] = field(default_factory=dict)
    slots: int = 0
    last_t: float = 0.0
    fine: bool = field(init=False)  # still on the grid's fine start

    def __post_init__(self) -> None:
        self.fine = self.grid.fine_steps > 0

    @property
    def interval(self) -> float:
        """The step of the grid now."""
        return self.grid.fine if self.fine else self.grid.interval

    def sample(self, t: float, slots: int, note: _Notes, *, fold: bool = False) -> None:
        dt = t - self.last_t
        touched: set[SeriesKey] = set()
        for probe in list(self.probes):
            try:
                readings = probe.sample(t, dt)
            except Exception as exc:
                note.add(f"probe {probe.name} stopped at t={t:.1f}s: {_reason(exc)}")
                self.probes.remove(probe)
                continue
            for reading in readings:
                track = self.tracks.get(reading.key)
                if track is None:
                    track = _Track(
                        reading.key, array("f", [math.nan] * self.slots), drop_idle=probe.drop_idle
                    )
                    if self.fine:
                        track.nums = array("d", [math.nan] * self.slots)
                        track.dens = array("d", [math.nan] * self.slots)
                    self.tracks[reading.key] = track
                if fold:
                    track.fold(reading)
                else:
                    track.add(reading, slots)
                touched.add(reading.key)
        if not fold:
            for key, track in self.tracks.items():
                if key not in touched:
                    track.missing(slots)
            self.slots += slots
        self.last_t = t

    def run(self, t0: float, stop: threading.Event, note: _Notes) -> None:
        tick = 1
        while not stop.wait(max(0.0, t0 + tick * self.interval - time.perf_counter())):
            t = time.perf_counter() - t0
            passed = max(tick, math.floor(t / self.interval))
            if self.fine:  # a late tick at the end of the fine start still ends it
                passed = min(passed, self.grid.fine_steps)
            self.sample(t, passed - tick + 1, note)
            tick = passed + 1
            if self.fine and tick > self.grid.fine_steps:
                tick = self._coarsen() + 1

    def _coarsen(self) -> int:
        """End the fine start: merge its values into whole intervals; returns their number."""
        ratio = self.grid.ratio
        for track in self.tracks.values():
            track.coarsen(ratio)
        self.fine = False
        self.slots = math.ceil(self.slots / ratio)
        return self.slots

    def finish(self, t: float, note: _Notes) -> None:
        short = self.slots > 0 and t - self.last_t < MERGE_FRACTION * self.interval
        self.sample(t, 1, note, fold=short)
        if self.fine and t > self.grid.fine_until:  # its last fine tick came too late, or never
            self._coarsen()  # a run longer than the fine start has whole intervals, always

    def series(self, end: float) -> list[Series]:
        out = []
        for track in self.tracks.values():
            if track.drop_idle and not track.moved:
                continue
            out.append(
                Series(
                    key=track.key,
                    t0=self.interval,
                    interval=self.interval,
                    end_s=end,
                    n=len(track.values),
                    total_num=track.total_num,
                    total_den=track.total_den,
                    peak=track.peak if track.peak > -math.inf else None,
                    values=tuple(track.values),
                )
            )
        return out


class _Notes:
    """Warnings from any thread, emitted later from the recorder's own thread."""

    def __init__(self) -> None:
        self.all: list[str] = []
        self._emitted = 0
        self._lock = threading.Lock()

    def add(self, text: str) -> None:
        with self._lock:
            if text not in self.all:
                self.all.append(text)

    def emit(self, events: EventSink) -> None:
        with self._lock:
            pending = self.all[self._emitted :]
            self._emitted = len(self.all)
        for text in pending:
            events(Warning(text))


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


class _Flusher:
    """Hands what the sampling threads appended to a sink, as blocks of up to ``BLOCK`` values
    per series: each flush rewrites a series' open block with every value it has so far (the
    sink replaces a block by its start), so a 10-hour run leaves ~300 blocks a series, not
    36,000 chunks, and a crash still loses only what came since the last flush. When the fine
    start is merged into whole intervals, each series of the group is sent again from its
    first value (a block at 0 replaces all of a series' blocks)."""

    BLOCK = 120  # 2 minutes at 1 s: ~2 ms of CPU a flush for 70 series

    def __init__(
        self, sink: LiveSink, groups: Sequence[_Group], probes: Sequence[Probe], note: _Notes
    ) -> None:
        self.sink = sink
        self.groups = groups
        self.reporting = [p for p in probes if isinstance(p, SoFar)]
        self.note = note
        self.numbers: dict[SeriesKey, int] = {}
        self.sent: dict[SeriesKey, int] = {}  # values handed over
        self.block: dict[SeriesKey, int] = {}  # where the open block starts
        self.fine = [g.fine for g in groups]  # each group's grid at the last flush
        self.broken = False

    def flush(self) -> None:
        if self.broken:
            return
        chunks = []
        for i, group in enumerate(self.groups):
            fine, interval = group.fine, group.interval
            if self.fine[i] and not fine:  # the fine start was merged: send it all again
                for key in list(group.tracks):
                    self.sent.pop(key, None)
                    self.block.pop(key, None)
            self.fine[i] = fine
            for key, track in list(group.tracks.items()):  # a copy: a sampler may add one
                start = self.block.get(key, 0)
                values = track.values[start:]  # one slice: the sampler only appends to it
                if len(values) > self.sent.get(key, 0) - start:
                    number = self.numbers.setdefault(key, len(self.numbers))
                    chunks.append(Chunk(number, key, interval, start, values.tolist()))
        waits: list[WaitStat] = []
        checkpoints: list[Checkpoint] = []
        for probe in self.reporting:
            try:
                found = probe.so_far()
            except Exception:
                continue  # its sampling thread will say what went wrong
            waits += found.waits
            checkpoints += found.checkpoints
        checkpoints.sort(key=lambda c: c.start_s)
        try:
            self.sink.write(chunks, Findings(waits=waits, checkpoints=checkpoints))
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
                return  # the runner is writing: these values go with the next flush
            self._give_up(exc)
            return
        except Exception as exc:
            self._give_up(exc)
            return
        for c in chunks:
            end = c.start + len(c.values)
            self.sent[c.key] = end
            if end - c.start >= self.BLOCK:
                self.block[c.key] = end  # closed: the next values open a new block

    def _give_up(self, exc: BaseException) -> None:
        self.broken = True
        self.note.add(
            f"the live view stopped getting this run's series ({_reason(exc)}); "
            "they are all stored when the run ends"
        )

    def run(self, interval: float, stop: threading.Event) -> None:
        try:
            while not stop.wait(interval):
                self.flush()
        finally:
            with contextlib.suppress(Exception):
                self.sink.close()


class Recorder:
    """Samples ``probes`` while the ``with`` block runs; the result is in :attr:`data`."""

    def __init__(
        self,
        probes: Sequence[Probe],
        *,
        interval: float = DEFAULT_INTERVAL,
        wait_interval: float = WAIT_INTERVAL,
        events: EventSink = discard,
        flush_interval: float = FLUSH_INTERVAL,
    ) -> None:
        if not interval > 0 or not wait_interval > 0 or not flush_interval > 0:
            raise ValueError("sampling and flushing intervals must be positive")
        self._flush_interval = flush_interval
        self._probes = list(probes)
        self._events = events
        self._notes = _Notes()
        self._groups = {  # one thread each; see Pace
            Pace.FINE: _Group(Grid.adaptive(interval), []),
            Pace.INTERVAL: _Group(Grid.fixed(interval), []),
            Pace.WAITS: _Group(Grid.fixed(wait_interval), []),
        }
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._opened: list[Probe] = []
        self.t0 = 0.0  # time.perf_counter() at the baseline
        self.t0_wall = 0.0  # the same moment as Unix time
        self._data: ProbeData | None = None

    @property
    def finished(self) -> bool:
        return self._data is not None

    @property
    def data(self) -> ProbeData:
        if self._data is None:
            raise RuntimeError("the recorder has not finished")
        return self._data

    def __enter__(self) -> Recorder:
        for probe in self._probes:
            try:
                probe.open(self._notes.add)
            except ProbeUnavailable as exc:
                self._notes.add(f"{probe.name}: {exc}; the run goes on without it")
                _close(probe)
                continue
            except Exception as exc:
                self._notes.add(
                    f"{probe.name} could not start: {_reason(exc)}; going on without it"
                )
                _close(probe)
                continue
            self._opened.append(probe)
        self.t0 = time.perf_counter()
        self.t0_wall = time.time()
        for probe in list(self._opened):
            try:
                probe.start(self.t0_wall)
            except Exception as exc:
                self._notes.add(
                    f"{probe.name} could not start: {_reason(exc)}; going on without it"
                )
                self._opened.remove(probe)
                _close(probe)
                continue
            self._groups[probe.pace].probes.append(probe)
        self._notes.emit(self._events)
        for pace, group in self._groups.items():
            if group.probes:
                thread = threading.Thread(
                    target=group.run,
                    args=(self.t0, self._stop, self._notes),
                    name=f"iolab-probes-{pace}",
                    daemon=True,
                )
                thread.start()
                self._threads.append(thread)
        sink = _live.get()
        if sink is not None and self._threads:
            flusher = _Flusher(sink, list(self._groups.values()), self._opened, self._notes)
            thread = threading.Thread(
                target=flusher.run,
                args=(self._flush_interval, self._stop),
                name="iolab-live",
                daemon=True,
            )
            thread.start()
            self._threads.append(thread)
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join()
        end = time.perf_counter() - self.t0
        findings: list[Findings] = []
        try:
            if e is None or isinstance(e, Exception):
                for group in self._groups.values():
                    if group.probes:
                        group.finish(end, self._notes)
                for probe in self._opened:
                    try:
                        findings.append(probe.finish(end))
                    except Exception as exc:
                        self._notes.add(f"{probe.name} could not finish: {_reason(exc)}")
        finally:
            for probe in self._opened:
                _close(probe)
        for f in findings:
            for text in f.notes:
                self._notes.add(text)
        self._data = ProbeData(
            interval=self._groups[Pace.FINE].interval,
            wait_interval=self._groups[Pace.WAITS].interval,
            duration=end,
            series=tuple(s for g in self._groups.values() for s in g.series(end)),
            waits=tuple(w for f in findings for w in f.waits),
            checkpoints=tuple(
                sorted((c for f in findings for c in f.checkpoints), key=lambda c: c.start_s)
            ),
            roles=tuple(r for f in findings for r in f.roles),
            notes=tuple(self._notes.all),
        )
        if e is None or isinstance(e, Exception):
            self._notes.emit(self._events)


def _close(probe: Probe) -> None:
    with contextlib.suppress(Exception):  # a connection the server already dropped
        probe.close()


@contextmanager
def recording(recorder: Recorder | None, outcome: RunOutcome) -> Iterator[None]:
    """Run the block under ``recorder`` (nothing when None) and keep what it recorded in
    ``outcome.probes``, also when the block fails or is interrupted."""
    if recorder is None:
        yield
        return
    try:
        with recorder:
            yield
    finally:
        if recorder.finished:
            outcome.probes = recorder.data
