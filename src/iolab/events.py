"""Events the core emits while it works; the CLI (or a test) decides how to show them.

The core never prints. A function that does long work takes an ``EventSink`` and calls it with
these frozen records.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Phase:
    """A stage of work without steps to count (preparing a test file, starting a server)."""

    text: str


@dataclass(frozen=True)
class Step:
    """Progress through counted steps: ``index`` of ``total`` (1-based), with a time estimate."""

    label: str
    index: int
    total: int
    seconds_left: float


@dataclass(frozen=True)
class Warning:
    """Something the user should know and can act on; the work goes on."""

    text: str


@dataclass(frozen=True)
class Measured:
    """One measurement finished (a fio pass, a loader batch)."""

    label: str
    detail: str


@dataclass(frozen=True)
class ExperimentProgress:
    """Where a whole experiment is, shown beside the current run's own progress."""

    done: int  # runs finished in this invocation (any status)
    total: int  # runs planned in this invocation (auto repetitions may add some)
    failed: int
    seconds_left: float
    label: str  # the run starting now: its cell and repetition


Event = Phase | Step | Warning | Measured | ExperimentProgress
EventSink = Callable[[Event], None]


def discard(_event: Event) -> None:
    """A sink for callers that do not watch progress."""


class Collect:
    """A sink that keeps every event: for tests and for summaries after the work."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def __call__(self, event: Event) -> None:
        self.events.append(event)

    def warnings(self) -> list[str]:
        return [e.text for e in self.events if isinstance(e, Warning)]
