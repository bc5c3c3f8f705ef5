"""What sysbench prints, parsed: its report (transactions and queries per second, latency
average and percentile, errors), its ``--report-interval`` lines and its ``--histogram``.

sysbench logs no transaction by itself: the histogram's buckets (about 2 % wide, each printed
with one value in ms) are all there is of the latency distribution, so iolab's percentiles of a
sysbench run are read from those buckets, each count at its printed value, and say so
(``latency_source``).
"""

from __future__ import annotations

import re

from iolab.errors import RunFailed
from iolab.latency.histogram import Histogram
from iolab.workloads.drivers import Progress, Quantity

PROBE = "sysbench"
QUANTITIES = (
    Quantity("tps", "tx/s", rate=True),
    Quantity("qps", "queries/s", rate=True),
    Quantity("reads_per_s", "queries/s", rate=True),
    Quantity("writes_per_s", "queries/s", rate=True),
    Quantity("latency_pct_ms", "ms", rate=False),
    Quantity("errors_per_s", "errors/s", rate=True),
    Quantity("reconnects_per_s", "reconnects/s", rate=True),
)
_N = r"([\d.]+)"
_PROGRESS = re.compile(
    rf"^\[ *(\d+)s \] thds: \d+ tps: {_N} qps: {_N} \(r/w/o: {_N}/{_N}/{_N}\) "
    rf"lat \(ms,([\d.]+)%\): {_N} err/s: {_N} reconn/s: {_N}"
)
_SUMMARY = {
    "transactions": re.compile(r"^\s*transactions:\s+(\d+)\s+\(([\d.]+) per sec\.\)"),
    "queries": re.compile(r"^\s*queries:\s+(\d+)\s+\(([\d.]+) per sec\.\)"),
    "errors": re.compile(r"^\s*ignored errors:\s+(\d+)\s+\(([\d.]+) per sec\.\)"),
    "reconnects": re.compile(r"^\s*reconnects:\s+(\d+)\s+\(([\d.]+) per sec\.\)"),
}
_SINGLE = {
    "reads": re.compile(r"^\s*read:\s+(\d+)$"),
    "writes": re.compile(r"^\s*write:\s+(\d+)$"),
    "total_seconds": re.compile(r"^\s*total time:\s+([\d.]+)s$"),
    "events": re.compile(r"^\s*total number of events:\s+(\d+)$"),
    "latency_min_ms": re.compile(r"^\s*min:\s+([\d.]+)$"),
    "latency_avg_ms": re.compile(r"^\s*avg:\s+([\d.]+)$"),
    "latency_max_ms": re.compile(r"^\s*max:\s+([\d.]+)$"),
    "latency_sum_ms": re.compile(r"^\s*sum:\s+([\d.]+)$"),
}
_PERCENTILE = re.compile(r"^\s*(\d+(?:\.\d+)?)th percentile:\s+([\d.]+)$")
_BUCKET = re.compile(r"^\s*([\d.]+) \|\**\s+(\d+)$")
RATES = {"transactions": "tps", "queries": "qps", "errors": "errors_per_s"}


def _number(text: str) -> float | int:
    return int(text) if text.isdigit() else float(text)


def progress(stdout: str) -> list[Progress]:
    """sysbench's ``[ Ns ]`` lines, each interval's numbers."""
    lines: list[Progress] = []
    last = 0.0
    for line in stdout.splitlines():
        m = _PROGRESS.match(line.strip())
        if m is None:
            continue
        t = float(m.group(1))
        tps, qps, r, w, _o, _pct, lat, err, reconn = (float(g) for g in m.groups()[1:])
        values = {
            "tps": tps,
            "qps": qps,
            "reads_per_s": r,
            "writes_per_s": w,
            "latency_pct_ms": lat,
            "errors_per_s": err,
            "reconnects_per_s": reconn,
        }
        lines.append(Progress(t, t - last, values))
        last = t
    return lines


def summary(stdout: str) -> dict[str, float | int]:
    """sysbench's closing report: counts, their rates, latency min/avg/max/percentile."""
    numbers: dict[str, float | int] = {}
    for line in stdout.splitlines():
        for name, pattern in _SUMMARY.items():
            m = pattern.match(line)
            if m is not None:
                numbers[name] = int(m.group(1))
                numbers[RATES.get(name, f"{name}_per_s")] = float(m.group(2))
        for name, pattern in _SINGLE.items():
            m = pattern.match(line)
            if m is not None and name not in numbers:
                numbers[name] = _number(m.group(1))
        p = _PERCENTILE.match(line)
        if p is not None:
            numbers["percentile"] = _number(p.group(1))
            numbers["latency_pct_ms"] = float(p.group(2))
    if "tps" not in numbers:
        raise RunFailed("sysbench printed no transactions line: " + stdout.strip()[-300:])
    return numbers


def histogram(stdout: str) -> Histogram:
    """The ``--histogram`` buckets (value in ms, count) in iolab's buckets, each count at its
    printed value."""
    pairs: list[tuple[int, int]] = []
    inside = False
    for line in stdout.splitlines():
        if line.startswith("Latency histogram"):
            inside = True
            continue
        if not inside:
            continue
        m = _BUCKET.match(line)
        if m is not None:
            pairs.append((round(float(m.group(1)) * 1000), int(m.group(2))))
        elif pairs and not line.strip():
            break
    return Histogram.from_buckets(pairs)
