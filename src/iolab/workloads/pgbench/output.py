"""What pgbench prints and logs, parsed: the summary (stdout), the ``-P`` progress lines (stderr)
and the ``-l`` per-transaction logs (one file per thread).

The summary's numbers are pgbench's own, to its printed precision. The percentiles are iolab's:
every transaction's latency of the ``-l`` logs goes into HdrHistogram buckets
(:mod:`iolab.latency.histogram`), one per script and second, from which percentiles are exact to
the buckets' 3 significant digits; pgbench prints only the average and the standard deviation.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iolab.errors import RunFailed
from iolab.latency.histogram import Histogram
from iolab.latency.recording import Interval, OpKind
from iolab.workloads.drivers import Progress, Quantity

PROBE = "pgbench"
QUANTITIES = (
    Quantity("tps", "tx/s", rate=True),
    Quantity("latency_ms", "ms", rate=False),
    Quantity("latency_stddev_ms", "ms", rate=False),
    Quantity("lag_ms", "ms", rate=False),
    Quantity("failed_per_s", "tx/s", rate=True),
    Quantity("retried_per_s", "tx/s", rate=True),
    Quantity("skipped_per_s", "tx/s", rate=True),
)

_PROGRESS = re.compile(r"^progress: (?P<t>[\d.]+) s, (?P<rest>.*)$")
_FIELDS = {
    "tps": re.compile(r"(?:^|, )(?P<v>[\d.]+|nan|-?inf) tps"),
    "latency_ms": re.compile(r"lat (?P<v>[\d.]+|nan) ms"),
    "latency_stddev_ms": re.compile(r"stddev (?P<v>[\d.]+|nan)"),
    "lag_ms": re.compile(r"lag (?P<v>[\d.]+|nan) ms"),
    "failed": re.compile(r"(?P<v>\d+) failed"),
    "retried": re.compile(r"(?P<v>\d+) retried"),
    "skipped": re.compile(r"(?P<v>\d+) skipped"),
}
_NUMBER = r"(?P<v>[\d.]+)"
_SUMMARY = {
    "transactions": re.compile(r"^number of transactions actually processed: (?P<v>\d+)"),
    "failed": re.compile(r"^number of failed transactions: (?P<v>\d+)"),
    "retried": re.compile(r"^number of transactions retried: (?P<v>\d+)"),
    "retries": re.compile(r"^total number of retries: (?P<v>\d+)"),
    "skipped": re.compile(r"^number of transactions skipped: (?P<v>\d+)"),
    "late": re.compile(r"^number of transactions above the [\d.]+ ms latency limit: (?P<v>\d+)"),
    "latency_avg_ms": re.compile(rf"^latency average = {_NUMBER} ms"),
    "latency_stddev_ms": re.compile(rf"^latency stddev = {_NUMBER} ms"),
    "lag_avg_ms": re.compile(rf"^rate limit schedule lag: avg {_NUMBER} "),
    "initial_connection_ms": re.compile(rf"^initial connection time = {_NUMBER} ms"),
    "tps": re.compile(rf"^tps = {_NUMBER} \(without initial connection time\)"),
    "clients": re.compile(r"^number of clients: (?P<v>\d+)"),
    "threads": re.compile(r"^number of threads: (?P<v>\d+)"),
    "scale": re.compile(r"^scaling factor: (?P<v>\d+)"),
}
_SCRIPT = re.compile(r"^SQL script (?P<n>\d+): (?P<name>.*)$")
_TYPE = re.compile(r"^transaction type: (?P<name>.*)$")
_SCRIPT_FIELDS = {
    "transactions": re.compile(r"^ - number of transactions actually processed: (?P<v>\d+)"),
    "tps": re.compile(rf"^ - number of transactions actually processed: \d+ \(tps = {_NUMBER}\)"),
    "failed": re.compile(r"^ - number of failed transactions: (?P<v>\d+)"),
    "latency_avg_ms": re.compile(rf"^ - latency average = {_NUMBER} ms"),
    "weight": re.compile(r"^ - weight: (?P<v>\d+)"),
}


def _number(text: str) -> float | int:
    return int(text) if text.isdigit() else float(text)


def progress(stderr: str) -> list[Progress]:
    """pgbench's ``progress:`` lines, each interval's numbers (failures as rates per second)."""
    lines: list[Progress] = []
    last = 0.0
    for line in stderr.splitlines():
        m = _PROGRESS.match(line.strip())
        if m is None:
            continue
        t = float(m.group("t"))
        rest = m.group("rest")
        seconds = t - last
        last = t
        values: dict[str, float] = {}
        for name, pattern in _FIELDS.items():
            found = pattern.search(rest)
            if found is None:
                continue
            value = float(found.group("v"))
            if name in ("failed", "retried", "skipped"):
                values[f"{name}_per_s"] = value / seconds if seconds > 0 else math.nan
            else:
                values[name] = value
        lines.append(Progress(t, seconds, values))
    return lines


@dataclass
class ScriptResult:
    """One script of the run as pgbench reported it, and its latencies from the ``-l`` log."""

    number: int  # 0-based, as in the log
    name: str
    numbers: dict[str, float | int] = field(default_factory=dict)
    histogram: Histogram = field(default_factory=Histogram)

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"script": self.number, "name": self.name, **self.numbers}
        if self.histogram.total:
            out["latency"] = self.histogram.stats()
        return out


@dataclass(frozen=True)
class Summary:
    numbers: dict[str, float | int]
    scripts: list[ScriptResult]


def summary(stdout: str) -> Summary:
    """pgbench's closing report: the run's numbers and each script's (one script: the run's)."""
    numbers: dict[str, float | int] = {}
    scripts: list[ScriptResult] = []
    kind: str | None = None
    for raw in stdout.splitlines():
        line = raw.rstrip()
        m = _SCRIPT.match(line)
        if m is not None:
            scripts.append(ScriptResult(int(m.group("n")) - 1, m.group("name")))
            continue
        if scripts:
            for name, pattern in _SCRIPT_FIELDS.items():
                found = pattern.match(line)
                if found is not None:
                    scripts[-1].numbers[name] = _number(found.group("v"))
            continue
        t = _TYPE.match(line)
        if t is not None:
            kind = t.group("name")
        for name, pattern in _SUMMARY.items():
            found = pattern.match(line)
            if found is not None:
                numbers[name] = _number(found.group("v"))
    if "tps" not in numbers or "transactions" not in numbers:
        raise RunFailed("pgbench printed no tps line: " + " | ".join(stdout.splitlines()[-5:]))
    if not scripts:
        keep = ("transactions", "tps", "failed", "latency_avg_ms")
        one = ScriptResult(0, kind or "", {k: numbers[k] for k in keep if k in numbers})
        scripts.append(one)
    return Summary(numbers, scripts)


@dataclass(frozen=True)
class TransactionLog:
    """The ``-l`` logs read into histograms: per script (0-based) over the run, and per script
    and second from ``start_unix`` as latency intervals (a loader is a script)."""

    per_script: dict[int, Histogram]
    intervals: tuple[Interval, ...]
    failed: int
    skipped: int
    count: int  # the transactions with a latency (pgbench's "actually processed")
    latency_sum_us: int  # their latencies' sum, as logged

    @property
    def latency_avg_ms(self) -> float:
        return self.latency_sum_us / self.count / 1000 if self.count else math.nan


def read_logs(files: Iterable[Path], start_unix: float) -> TransactionLog:
    """Each line ``client tx latency_us script epoch_s epoch_us [lag_us] [retries]`` of every
    thread's log: a latency per transaction (``failed`` and ``skipped`` ones are counted)."""
    values: dict[tuple[int, int], list[int]] = defaultdict(list)
    failed = skipped = count = total = 0
    for path in files:
        with path.open() as f:
            for line in f:
                parts = line.split()
                if len(parts) < 6:
                    continue
                latency = parts[2]
                if not latency.isdigit():
                    failed += latency == "failed"
                    skipped += latency == "skipped"
                    continue
                script = int(parts[3])
                count += 1
                total += int(latency)
                end = int(parts[4]) + int(parts[5]) / 1e6
                second = max(0, int(end - start_unix))
                values[(script, second)].append(int(latency))
    per_script: dict[int, Histogram] = {}
    intervals: list[Interval] = []
    for (script, second), found in sorted(values.items()):
        h = Histogram()
        h.add_values(found)
        per_script.setdefault(script, Histogram()).add(h)
        start, end = float(second), float(second + 1)
        intervals.append(Interval(script, OpKind.TRANSACTION, second, False, start, end, h))
    return TransactionLog(per_script, tuple(intervals), failed, skipped, count, total)
