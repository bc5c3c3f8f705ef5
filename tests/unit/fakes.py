"""A workload kind that starts no program, for fast tests of the experiment runner.

:class:`FakeWorkload` stands in for a real workload of :data:`iolab.workloads.registry.WORKLOADS`
(register it with ``monkeypatch.setitem(WORKLOADS, "populate", fake.kind())``: experiment files
are validated as a populate workload, then run by the fake). Its body records the call and
fills the run's summary with numbers that follow from the cell's parameters (``elapsed_seconds`` =
``rows / 100``), optionally spread by a fixed pattern (``noise``). It can be told to fail
(every time, or the first N times, for cells picked by their ``rows``), or to raise
KeyboardInterrupt at its K-th call, as Ctrl-C would.

:func:`experiment_file` writes a small experiment file whose runs do not touch the page cache
or wait (``drop_caches = false``, ``settle_seconds = 0``).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iolab.errors import IolabError, RunFailed
from iolab.events import EventSink, Measured
from iolab.results import RunOutcome
from iolab.workloads.interface import Body, Checked, Resolve, Workload
from iolab.workloads.populate.metrics import METRICS as POPULATE_METRICS
from iolab.workloads.populate.options import PopulateWorkload


def elapsed_of(params: Mapping[str, Any]) -> float:
    """The fake's measured seconds for a cell: its rows / 100."""
    return float(params["rows"]) / 100.0


@dataclass
class FakeWorkload:
    """What the fake does; ``calls`` is every body run so far: ``(rows, connections)``."""

    fail_rows: dict[int, int | None] = field(default_factory=dict)  # rows -> times (None: always)
    error: type[IolabError] = RunFailed
    interrupt_at: int | None = None  # raise KeyboardInterrupt at this call (1-based)
    noise: float = 0.0  # relative spread of elapsed_seconds: +noise, -noise, +noise, ...
    sleep_rows: dict[int, float] = field(default_factory=dict)  # rows -> seconds, then progress
    estimate_seconds: float = 2.0
    calls: list[tuple[int, int]] = field(default_factory=list)
    failed: Counter[int] = field(default_factory=Counter)

    def kind(self, name: str = "populate") -> Workload:
        return Workload(
            name,
            PopulateWorkload,
            "elapsed_seconds",
            "elapsed s",
            True,
            self.prepare,
            lambda _params: self.estimate_seconds,
            self.check,
            metrics=POPULATE_METRICS,  # the numbers it records are populate's
        )

    def check(self, params: Mapping[str, Any], checked: Checked) -> None:
        """Nothing to check: no engine, no directories."""

    def prepare(
        self, params: Mapping[str, Any], resolve: Resolve, events: EventSink
    ) -> tuple[Body, dict[str, Path], dict[str, str]]:
        rows, connections = int(params["rows"]), int(params["connections"])

        def body(outcome: RunOutcome) -> None:
            self.calls.append((rows, connections))
            if self.interrupt_at is not None and len(self.calls) == self.interrupt_at:
                raise KeyboardInterrupt
            if rows in self.fail_rows:
                times = self.fail_rows[rows]
                if times is None or self.failed[rows] < times:
                    self.failed[rows] += 1
                    raise self.error(f"fake failure {self.failed[rows]} of rows={rows}")
            if rows in self.sleep_rows:
                time.sleep(self.sleep_rows[rows])
            events(Measured("fake", f"rows={rows}"))  # the runner's deadline looks here
            nth = sum(1 for r, c in self.calls if (r, c) == (rows, connections))
            sign = 1.0 if nth % 2 else -1.0
            outcome.summary["elapsed_seconds"] = elapsed_of(params) * (1.0 + sign * self.noise)
            outcome.summary["rows"] = rows
            outcome.summary["connections"] = connections

        return body, {}, {"fake": "1"}


def experiment_file(
    tmp_path: Path,
    *,
    experiment: str = "",
    matrix: str = "rows = [100, 200, 300]",
    isolation: str = "",
    name: str = "fake",
    file: str = "exp.toml",
) -> Path:
    """An experiment file in ``tmp_path`` (with its layout's directory): a populate workload of
    one connection, one layout, the given ``[matrix]`` and extra lines for the sections."""
    (tmp_path / "data").mkdir(exist_ok=True)
    path = tmp_path / file
    path.write_text(
        f'[experiment]\nname = "{name}"\n{experiment}\n'
        '[workload]\nkind = "populate"\nconnections = 1\n'
        '[layouts.a]\ndata_dirs = ["data"]\n'
        f"[isolation]\ndrop_caches = false\nsettle_seconds = 0\n{isolation}\n"
        f"[matrix]\n{matrix}\n"
    )
    return path


@dataclass(frozen=True)
class RunRow:
    rows: int
    connections: int
    repetition: int
    status: str
    error: str | None
    elapsed: float | None


def run_rows(db: Path, name: str = "fake") -> list[RunRow]:
    """Every run of the experiment ``name`` in ``db``, in the order they were claimed."""
    with sqlite3.connect(db) as conn:
        found = conn.execute(
            "SELECT r.repetition, r.status, r.error, r.summary, c.params FROM runs r"
            " JOIN cells c ON c.experiment_id = r.experiment_id AND c.id = r.cell_id"
            " JOIN experiments e ON e.id = r.experiment_id WHERE e.name = ? ORDER BY r.id",
            (name,),
        ).fetchall()
    out = []
    for repetition, status, error, summary, params in found:
        p = json.loads(params)
        elapsed = json.loads(summary or "{}").get("elapsed_seconds")
        out.append(
            RunRow(int(p["rows"]), int(p["connections"]), repetition, status, error, elapsed)
        )
    return out
