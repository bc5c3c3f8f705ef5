"""Checkpoints as intervals on the run's time axis.

PostgreSQL: the server log (iolab sets ``log_checkpoints = on`` and ``log_timezone = UTC``, so
that the default line prefix ``%m [%p]`` dates each line in UTC to the millisecond) says
``checkpoint starting: <why>`` when one begins and ``checkpoint complete: wrote N buffers ...;
write=... s, sync=... s, total=T s`` when it ends.
The probe reads what the server appends to its log while the run goes on. An interval starts at
the ``starting`` line (or, when that came before recording began, at the end minus ``total``)
and ends at ``complete``, with the pages written. A checkpoint still running at the end has no
end. Lines without such a stamp (a ``--set log_line_prefix`` or ``log_timezone`` of one's own;
a ``%n`` Unix-time prefix is read too) are dated when the probe reads them, to within one
sample interval.

MariaDB: InnoDB checkpoints fuzzily, advancing its checkpoint LSN as the page cleaner flushes.
:class:`LsnCheckpoints` turns the samples of ``Innodb_lsn_last_checkpoint`` into intervals: one
interval for each run of consecutive samples in which the checkpoint advanced, with the pages
flushed meanwhile (``Innodb_buffer_pool_pages_flushed``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from iolab.probes.interface import Checkpoint, Findings, Pace, ProbeUnavailable, Reading, Warn

_EPOCH = re.compile(r"^(\d{9,}\.\d+|\d{9,})\s")
_STAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?) (UTC|GMT)\s")
_STARTING = re.compile(r"\b(checkpoint|restartpoint) starting:\s*(.*?)\s*$")
_COMPLETE = re.compile(r"\b(checkpoint|restartpoint) complete:\s*(.*?)\s*$")
MIN_ADVANCE_MB = 1.0  # a checkpoint LSN advance without flushed pages counts from this size
_WROTE = re.compile(r"wrote (\d+) buffers")
_TOTAL = re.compile(r"total=([0-9.]+) s")


@dataclass(frozen=True)
class LogEvent:
    """A checkpoint line of the server log."""

    epoch: float | None  # Unix time from the line's prefix, None if it has none we can read
    starting: bool  # True for "starting", False for "complete"
    text: str  # what follows "starting:" / "complete:"

    @property
    def pages(self) -> int | None:
        m = _WROTE.search(self.text)
        return int(m.group(1)) if m else None

    @property
    def total_seconds(self) -> float | None:
        m = _TOTAL.search(self.text)
        return float(m.group(1)) if m else None


def line_time(line: str) -> float | None:
    """The Unix time of a log line: a ``%n`` prefix, or a ``%m``/``%t`` stamp in UTC."""
    m = _EPOCH.match(line)
    if m:
        return float(m.group(1))
    m = _STAMP.match(line)
    if m:
        text = m.group(1)
        fmt = "%Y-%m-%d %H:%M:%S.%f" if "." in text else "%Y-%m-%d %H:%M:%S"
        return datetime.strptime(text, fmt).replace(tzinfo=UTC).timestamp()
    return None


def parse_line(line: str) -> LogEvent | None:
    """A checkpoint event if the line is one, else None."""
    if "LOG:" not in line:
        return None
    m = _STARTING.search(line)
    if m:
        return LogEvent(line_time(line), True, m.group(2))
    m = _COMPLETE.search(line)
    if m:
        return LogEvent(line_time(line), False, m.group(2))
    return None


def intervals(events: list[tuple[float, LogEvent]]) -> list[Checkpoint]:
    """Checkpoint intervals from (time from t0, event) pairs in log order.

    PostgreSQL runs one checkpoint at a time, so a ``complete`` closes the last ``starting``.
    """
    out: list[Checkpoint] = []
    open_start: tuple[float, str] | None = None
    for t, ev in events:
        if ev.starting:
            open_start = (t, ev.text)
            continue
        total = ev.total_seconds
        if open_start is not None:
            start, why = open_start
        else:
            start = t - total if total is not None else t
            why = "begun before recording"
        out.append(Checkpoint(start, t, ev.pages, why, ev.text))
        open_start = None
    if open_start is not None:
        out.append(Checkpoint(open_start[0], None, None, open_start[1], "still running"))
    return out


class PostgresLogCheckpoints:
    """Reads checkpoint lines from what the server appends to ``log`` during the run."""

    name = "postgres checkpoints"
    pace = Pace.FINE
    drop_idle = False

    def __init__(self, log: Path) -> None:
        self._log = log
        self._offset = 0
        self._partial = b""
        self._t0_wall = 0.0
        self._events: list[tuple[float, LogEvent]] = []
        self._undated = False

    def open(self, warn: Warn) -> None:
        try:
            self._offset = self._log.stat().st_size
            with self._log.open("rb"):
                pass
        except OSError as exc:
            raise ProbeUnavailable(
                f"cannot read the server log {self._log}: {exc.strerror}"
            ) from exc

    def start(self, t0_wall: float) -> None:
        self._t0_wall = t0_wall

    def _read(self, t: float) -> None:
        with self._log.open("rb") as f:
            f.seek(self._offset)
            chunk = f.read()
        self._offset += len(chunk)
        data = self._partial + chunk
        lines = data.split(b"\n")
        self._partial = lines.pop()  # an unfinished last line waits for the next read
        for raw in lines:
            ev = parse_line(raw.decode("utf-8", "replace"))
            if ev is None:
                continue
            if ev.epoch is None:
                self._undated = True
            self._events.append((ev.epoch - self._t0_wall if ev.epoch is not None else t, ev))

    def sample(self, t: float, dt: float) -> list[Reading]:
        self._read(t)
        return []

    def finish(self, t: float) -> Findings:
        self._read(t)
        notes = (
            ("checkpoint log lines carry no UTC or Unix time: dated when read, to within a sample",)
            if self._undated
            else ()
        )
        return Findings(checkpoints=tuple(intervals(self._events)), notes=notes)

    def so_far(self) -> Findings:
        return Findings(checkpoints=tuple(intervals(list(self._events))))

    def close(self) -> None:
        pass


class LsnCheckpoints:
    """InnoDB checkpoint activity from successive samples of its checkpoint LSN."""

    def __init__(self) -> None:
        self._prev_t = 0.0
        self._prev_lsn: float | None = None
        self._prev_flushed = 0.0
        self._open: tuple[float, float, float] | None = None  # start, flushed at start, lsn
        self.found: list[Checkpoint] = []

    def observe(self, t: float, checkpoint_lsn: float, flushed: float) -> None:
        if self._prev_lsn is not None:
            advanced = checkpoint_lsn > self._prev_lsn
            if advanced and self._open is None:
                self._open = (self._prev_t, self._prev_flushed, self._prev_lsn)
            elif not advanced and self._open is not None:
                self._close(self._prev_t, self._prev_flushed, self._prev_lsn)
        self._prev_t, self._prev_lsn, self._prev_flushed = t, checkpoint_lsn, flushed

    def _close(self, end: float, flushed: float, lsn: float) -> None:
        assert self._open is not None
        start, flushed0, lsn0 = self._open
        mb = (lsn - lsn0) / 1e6
        pages = int(flushed - flushed0)
        if pages > 0 or mb >= MIN_ADVANCE_MB:  # not the bookkeeping of an idle server
            self.found.append(
                Checkpoint(start, end, pages, "flush", f"checkpoint LSN +{mb:.1f} MB")
            )
        self._open = None

    def finish(self) -> list[Checkpoint]:
        if self._open is not None and self._prev_lsn is not None:
            self._close(self._prev_t, self._prev_flushed, self._prev_lsn)
        return list(self.found)


MATCH_SLACK = 1.0  # seconds: the engine's own record of a requested checkpoint may lie this far off


def merge_requested(
    own: Sequence[Checkpoint], requested: Sequence[Checkpoint]
) -> tuple[Checkpoint, ...]:
    """The engine's checkpoints and the requested ones (``--checkpoint-every``) on one axis.

    PostgreSQL logs a requested ``CHECKPOINT`` as one of its own (``immediate force wait``):
    that interval is folded into the requested one, which keeps its own start and end (the
    statement's) and takes the pages the log says it wrote. Everything else is kept as it is.
    """
    kept = list(own)
    merged: list[Checkpoint] = []
    for r in requested:
        match = next(
            (
                c
                for c in kept
                if "immediate" in c.kind
                and r.start_s - MATCH_SLACK <= c.start_s
                and (r.end_s is None or c.start_s <= r.end_s + MATCH_SLACK)
            ),
            None,
        )
        if match is None:
            merged.append(r)
            continue
        kept.remove(match)
        pages = r.pages if r.pages is not None else match.pages
        detail = f"{r.detail}; {match.detail}" if match.detail else r.detail
        merged.append(Checkpoint(r.start_s, r.end_s, pages, r.kind, detail))
    return tuple(sorted([*kept, *merged], key=lambda c: c.start_s))
