"""How close a workload came to what its device can do, and whether the baseline drifted.

Efficiency: a populate run writes ``devices[NAME].write_bytes`` to each block device behind its
layout in ``elapsed_seconds``; an `iolab disk` run of the same device measured its sequential
write MB/s. The share of one in the other says how much of the device the database used: near
100% the device is the limit, far below it the engine, the CPU or the commit path is.

Devices are matched by name (``vda``, ``nvme0n1p2``, ...), or by testbed name for emulated
devices, whose loop numbers change each time the testbed comes up. The limit is the highest
median MB/s over the disk run's sequential write tests (CrystalDiskMark's SEQ1M rows).

Drift: the baseline cell's metric over its runs' start times; a slope whose 95% test rejects
zero means the machine changed under the experiment (caches, thermal, neighbours).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from iolab.analysis.disk import DiskTestSummary
from iolab.analysis.stats import Trend, trend


def device_key(name: str, testbed: str | None) -> str:
    """How a device is matched across runs: ``device:NAME`` for testbed devices."""
    return f"device:{testbed}" if testbed else name


@dataclass(frozen=True)
class Limit:
    """A device's sequential write MB/s, as an `iolab disk` run measured it."""

    device: str  # device_key
    mbps: float
    test: str
    run_id: int


@dataclass(frozen=True)
class Efficiency:
    """One cell on one device: the MB/s it wrote (median over its done runs) against the limit."""

    cell: str
    device: str
    roles: tuple[str, ...]
    mbps: float
    runs: int
    limit: Limit

    @property
    def share(self) -> float:
        return self.mbps / self.limit.mbps


def disk_device(environment: Mapping[str, Any]) -> str | None:
    """The device key of a disk run's target, from its environment snapshot."""
    target = (environment.get("storage") or {}).get("target") or {}
    device = target.get("device") or {}
    if not device.get("name"):
        return None
    return device_key(str(device["name"]), (target.get("testbed") or {}).get("name"))


def seq_write_limit(run_id: int, device: str, summaries: Sequence[DiskTestSummary]) -> Limit | None:
    """The best median MB/s over the run's sequential write tests; None if it ran none."""
    writes = [s for s in summaries if s.rw == "write"]
    if not writes:
        return None
    top = max(writes, key=lambda s: s.median.mbps)
    return Limit(device, top.median.mbps, top.test, run_id)


def populate_efficiency(
    cells: Sequence[tuple[str, Sequence[Mapping[str, Any]]]], limits: Mapping[str, Limit]
) -> list[Efficiency]:
    """For each cell (label, summaries of its done runs) and each device it wrote to that has
    a limit: the median over runs of bytes written / elapsed, in MB/s."""
    out = []
    for label, summaries in cells:
        rates: dict[str, list[float]] = {}
        roles: dict[str, tuple[str, ...]] = {}
        for s in summaries:
            elapsed = s.get("elapsed_seconds")
            if not isinstance(elapsed, int | float) or elapsed <= 0:
                continue
            for name, d in (s.get("devices") or {}).items():
                key = device_key(name, d.get("testbed"))
                if key not in limits or not isinstance(d.get("write_bytes"), int | float):
                    continue
                rates.setdefault(key, []).append(d["write_bytes"] / elapsed / 1e6)
                roles[key] = tuple(d.get("roles") or ())
        for key, values in rates.items():
            out.append(
                Efficiency(
                    label, key, roles[key], statistics.median(values), len(values), limits[key]
                )
            )
    return out


def efficiency_sentence(e: Efficiency) -> str:
    roles = "+".join(e.roles) or "?"
    return (
        f"{e.cell}: wrote {e.mbps:,.1f} MB/s to {e.device} ({roles}), {e.share:.0%} of its "
        f"sequential write ({e.limit.mbps:,.0f} MB/s, {e.limit.test}, disk run {e.limit.run_id})"
    )


@dataclass(frozen=True)
class Drift:
    """The baseline cell's metric over the experiment: hours since its first run, and values."""

    cell: str
    hours: tuple[float, ...]
    values: tuple[float, ...]
    trend: Trend


def baseline_drift(cell: str, runs: Sequence[tuple[str, float]], minimum: int = 3) -> Drift | None:
    """``runs``: (ISO start time, metric) of the baseline's done runs. None with fewer than
    ``minimum`` runs or all at one instant."""
    if len(runs) < minimum:
        return None
    ordered = sorted((datetime.fromisoformat(t), v) for t, v in runs)
    t0 = ordered[0][0]
    hours = tuple((t - t0).total_seconds() / 3600.0 for t, _ in ordered)
    values = tuple(v for _, v in ordered)
    if max(hours) == min(hours):
        return None
    return Drift(cell, hours, values, trend(hours, values))


def _span(hours: float) -> str:
    seconds = hours * 3600.0
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{hours:.1f} h"


def drift_sentence(d: Drift, metric: str) -> str:
    span = _span(max(d.hours))
    change = d.trend.change
    p = d.trend.p_value
    tested = f"p = {p:.2g}" if p is not None else "too few runs to test"
    if not d.trend.significant:
        return (
            f"baseline {d.cell}: no significant drift of {metric} over {d.trend.n} runs in "
            f"{span} ({change:+.1%}, {tested})"
        )
    return (
        f"baseline {d.cell}: {metric} drifted {change:+.1%} over {d.trend.n} runs in "
        f"{span} ({tested}): the machine changed under the experiment; compare cells "
        "that ran close in time, or re-run with isolation settled and the machine quiet"
    )
