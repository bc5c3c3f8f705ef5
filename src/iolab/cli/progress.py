"""Rendering core events in the terminal: a progress bar, phases and warnings on stderr."""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
)

from iolab.cli.console import stderr
from iolab.events import Event, ExperimentProgress, Measured, Phase, Step, Warning
from iolab.redaction import redact


def _clock(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 60}:{seconds % 60:02d}"


class ProgressView:
    """An EventSink that draws progress on stderr; stdout stays clean for tables and JSON."""

    def __init__(self, console: Console = stderr) -> None:
        self.console = console
        self.warnings: list[str] = []
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[left]} left"),
            console=console,
            transient=True,
            # drawn on a terminal only: elsewhere rich ends a bar with a blank line
            disable=not console.is_terminal,
        )
        self._task: TaskID | None = None

    def __enter__(self) -> ProgressView:
        self._progress.start()
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._progress.stop()

    def __call__(self, event: Event) -> None:
        if isinstance(event, Phase):
            self.console.print(f"[dim]{escape(redact(event.text))}…[/]")
        elif isinstance(event, Step):
            left = _clock(event.seconds_left)
            if self._task is None:
                self._task = self._progress.add_task(
                    escape(event.label), total=event.total, left=left
                )
            self._progress.update(
                self._task,
                total=event.total,  # a new series of steps (tpch: load bytes, then queries)
                completed=event.index - 1,
                description=escape(event.label),
                left=left,
            )
        elif isinstance(event, Warning):
            text = redact(event.text)
            self.warnings.append(text)
            self.console.print(f"[yellow]warning:[/] {escape(text)}")
        elif isinstance(event, ExperimentProgress):
            failed = f" · [red]{event.failed} failed[/]" if event.failed else ""
            self.console.print(
                f"[bold]run {event.done + 1} of {event.total}[/] · {escape(event.label)}{failed}"
                f" · about {_clock(event.seconds_left)} left"
            )
            if self._task is not None:  # the next run starts its own bar
                self._progress.remove_task(self._task)
                self._task = None
        elif isinstance(event, Measured):
            pass  # the bar moves on the next step; per-pass lines would flood the terminal
