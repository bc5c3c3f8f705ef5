"""A run at a glance: its engine, its layout in a few words and its headline number with the
unit (``iolab results list`` and ``iolab serve``'s index).

The headline is the workload's own (:attr:`iolab.workloads.interface.Workload.headline`: where
the number is in its summary), formatted by the number's declaration (its unit); only a run
that finished has one. The layout is read from the run's parameters (data directories, data
files, a WAL or temp directory of its own, a ``--dsn`` server) and, for the testbed devices
its directories were on, from its environment.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rich.markup import escape
from rich.table import Table
from rich.text import Text

from iolab.analysis.findings import metric_of
from iolab.results import EnvId, ExperimentId, RunStatus
from iolab.store.database import RunRecord, Store
from iolab.testbed.paths import PREFIX as DEVICE_PREFIX
from iolab.workloads.registry import WORKLOADS, find_metric


@dataclass(frozen=True)
class Figure:
    """A run's headline number: the summary key it is, its value, unit and words."""

    metric: str
    value: float
    unit: str
    text: str  # "12,345 rows/s", "1,234 MB/s SEQ1M Q8T1 read", "12.3 s for 22 queries"

    def as_json(self) -> dict[str, Any]:
        return {"metric": self.metric, "value": self.value, "unit": self.unit, "text": self.text}


@dataclass(frozen=True)
class Glance:
    run: RunRecord
    engine: str  # "" for none (a disk profile)
    layout: str
    figure: Figure | None  # None: not finished (its status says so), or nothing recorded

    def as_json(self) -> dict[str, Any]:
        return {
            "engine": self.engine or None,
            "layout": self.layout,
            "headline": self.figure.as_json() if self.figure else None,
        }


def figure(run: RunRecord) -> Figure | None:
    """The run's headline number, as its workload names it; None unless it finished."""
    kind = WORKLOADS.get(run.workload)
    if run.status is not RunStatus.DONE or kind is None or kind.headline is None:
        return None
    headline = kind.headline(run.params, run.summary)
    if headline is None:
        return None
    value, declared = metric_of(run.summary, headline.key), find_metric(headline.key)
    if value is None or declared is None:
        return None
    text = declared.format(value) + (f" {headline.of}" if headline.of else "")
    return Figure(headline.key, value, declared.unit, text)


def layout(params: Mapping[str, Any], environment: Mapping[str, Any]) -> str:
    """The run's layout in a few words: ``1 dir``, ``4 files in 2 dirs, wal apart`` (a WAL
    directory of its own), ``1 dir on hdd, wal on nvme`` (testbed devices, by name), ``--dsn
    server`` (a server of the user's: its layout is its own); a disk profile's, the device it
    measured."""
    if params.get("dsn"):
        return "--dsn server"
    storage = environment.get("storage")
    recorded = storage if isinstance(storage, Mapping) else {}
    dirs = params.get("data_dirs")
    if not isinstance(dirs, list) or not dirs:  # a disk profile: the one path it measured
        named = [_testbed(rec) or _device(rec) for rec in recorded.values()]
        return ", ".join(n for n in named if n) or "-"
    files = params.get("files")
    count = f"{len(dirs)} dir{'s' if len(dirs) != 1 else ''}"
    text = f"{files} files in {count}" if isinstance(files, int) and files > 1 else count
    beds = {_bed(d) or _testbed(recorded.get(f"data{i}")) for i, d in enumerate(dirs)}
    beds.discard("")
    parts = [text + (f" on {'+'.join(sorted(beds))}" if beds else "")]
    for role in ("wal", "temp"):
        given = params.get(f"{role}_dir")
        if given:
            bed = _bed(given) or _testbed(recorded.get(role))
            parts.append(f"{role} on {bed}" if bed else f"{role} apart")
    return ", ".join(parts)


def _bed(path: object) -> str:
    """The testbed device a ``device:NAME/...`` path names, else ""."""
    text = str(path)
    return text[len(DEVICE_PREFIX) :].split("/", 1)[0] if text.startswith(DEVICE_PREFIX) else ""


def _testbed(rec: object) -> str:
    """The name of the testbed device a role's storage was on, else ""."""
    bed = rec.get("testbed") if isinstance(rec, Mapping) else None
    return str(bed.get("name") or "") if isinstance(bed, Mapping) else ""


def _device(rec: object) -> str:
    """The block device a role's storage was on (``memory`` for a tmpfs), else ""."""
    if not isinstance(rec, Mapping):
        return ""
    if rec.get("memory_backed"):
        return "memory"
    device = rec.get("device")
    return str(device.get("name") or "") if isinstance(device, Mapping) else ""


def minute(stamp: str | None) -> str:
    """A stored time (ISO 8601, UTC) to the minute: ``2026-11-24 05:00``; "-" for none."""
    return stamp[:16].replace("T", " ") if stamp else "-"


def short_minute(stamp: str | None) -> str:
    """A stored time (ISO 8601, UTC) to the minute, without its year: ``11-24 05:00Z``."""
    return minute(stamp)[5:] + "Z" if stamp else "-"


def glance(run: RunRecord, environment: Mapping[str, Any]) -> Glance:
    engine = run.params.get("engine")
    return Glance(run, str(engine or ""), layout(run.params, environment), figure(run))


def glances(
    store: Store, limit: int | None = None, experiments: Sequence[ExperimentId] | None = None
) -> list[Glance]:
    """The runs at a glance, newest first (at most ``limit``; of ``experiments`` only)."""
    environments: dict[EnvId, dict[str, Any]] = {}
    out = []
    for run in store.runs(limit, experiments):
        env: Mapping[str, Any] = {}
        if run.env_id:
            if run.env_id not in environments:
                environments[run.env_id] = store.environment(run.env_id)
            env = environments[run.env_id]
        out.append(glance(run, env))
    return out


def runs_table(runs: Sequence[Glance]) -> Table:
    """``iolab results list``'s table, one row a run in 100 columns (a long layout or name
    wraps within its column): its result is the headline number of a run that finished, else
    its status and, on the same line, why it stopped (``iolab results show ID`` has the rest)."""
    table = Table(title=f"runs ({len(runs)} shown)", title_justify="left", box=None, pad_edge=False)
    table.add_column("id", justify="right")
    table.add_column("started", no_wrap=True)
    table.add_column("workload")
    table.add_column("engine")
    # no minimum width: with one, rich's table outgrows the terminal and the line is cut
    table.add_column("layout", max_width=26)
    table.add_column("result", max_width=28)
    table.add_column("experiment", max_width=24, overflow="fold")
    for g in runs:
        table.add_row(
            str(g.run.id),
            short_minute(g.run.started_at),
            g.run.workload,
            escape(g.engine) or "-",
            escape(g.layout),
            _result(g),
            escape(g.run.experiment),
        )
    return table


def _result(g: Glance) -> str | Text:
    if g.figure is not None:
        return escape(g.figure.text)
    if g.run.status is RunStatus.DONE:
        return "-"
    said = f"{g.run.status.value}: {g.run.error}" if g.run.error else g.run.status.value
    style = "red" if g.run.status in (RunStatus.FAILED, RunStatus.ABORTED) else ""
    return Text(said, style=style, no_wrap=True, overflow="ellipsis")
