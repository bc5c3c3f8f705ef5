"""Reading fio's JSON (json+) output into plain numbers.

MB/s is decimal (bw_bytes / 10^6), as CrystalDiskMark prints it. Latencies are total latency
(submission + completion) in microseconds. For mixed read/write jobs the latency histograms of
both directions are merged, so the percentiles are those of all I/Os, not an average of two.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from iolab.errors import RunFailed
from iolab.latency.histogram import Histogram
from iolab.results import Latency


@dataclass(frozen=True)
class FioSummary:
    fio_version: str
    seconds: float  # runtime of the job as fio measured it
    io_bytes: int  # read + written
    mbps: float
    iops: float
    lat: Latency
    sync: Latency | None  # fdatasync latency, when the job syncs
    read_bytes: int
    write_bytes: int
    sync_histogram: Histogram | None = None  # the fdatasync latencies, from the json+ bins


def load(text: str) -> dict[str, Any]:
    """Parse fio's JSON, skipping any warning lines fio printed before it."""
    start = text.find("{")
    if start < 0:
        raise RunFailed(f"fio printed no JSON: {text.strip()[:200] or '(nothing)'}")
    try:
        data = json.loads(text[start:])
    except json.JSONDecodeError as exc:
        raise RunFailed(f"fio printed JSON that could not be read: {exc}") from exc
    if not isinstance(data, dict) or not data.get("jobs"):
        raise RunFailed("fio's JSON holds no job results")
    return data


def _percentile_key(p: float) -> str:
    return f"{p:.6f}"


def _latency_from_fio(lat_ns: dict[str, Any]) -> Latency:
    pct = lat_ns.get("percentile", {})
    return Latency(
        mean=float(lat_ns.get("mean", 0.0)) / 1000,
        p50=float(pct.get(_percentile_key(50.0), 0)) / 1000,
        p99=float(pct.get(_percentile_key(99.0), 0)) / 1000,
        p999=float(pct.get(_percentile_key(99.9), 0)) / 1000,
    )


def histogram_percentile(bins: dict[int, int], p: float) -> float:
    """The value (ns) below or at which ``p`` percent of the samples lie, as fio computes it."""
    total = sum(bins.values())
    if total == 0:
        return 0.0
    rank = max(1, math.ceil(total * p / 100.0))
    seen = 0
    for value in sorted(bins):
        seen += bins[value]
        if seen >= rank:
            return float(value)
    return float(max(bins))


def merged_latency(sections: list[dict[str, Any]]) -> Latency:
    """Latency over several directions' ``lat_ns`` objects (json+ bins required for percentiles)."""
    used = [s for s in sections if s.get("N", 0)]
    if not used:
        return Latency(0.0, 0.0, 0.0, 0.0)
    if len(used) == 1:
        return _latency_from_fio(used[0])
    count = sum(int(s["N"]) for s in used)
    mean = sum(float(s["mean"]) * int(s["N"]) for s in used) / count
    bins: dict[int, int] = {}
    for s in used:
        if "bins" not in s:
            raise RunFailed("fio output has no latency bins; iolab needs --output-format=json+")
        for value, n in s["bins"].items():
            bins[int(value)] = bins.get(int(value), 0) + int(n)
    return Latency(
        mean=mean / 1000,
        p50=histogram_percentile(bins, 50.0) / 1000,
        p99=histogram_percentile(bins, 99.0) / 1000,
        p999=histogram_percentile(bins, 99.9) / 1000,
    )


def bins_histogram(sections: list[dict[str, Any]]) -> Histogram | None:
    """The ``lat_ns`` objects' json+ bins as one :class:`Histogram` in microseconds (None when
    no section has bins).

    fio keeps its latencies in log-linear bins of its own (64 per power of two, so about 1.6%
    wide) and writes each non-empty bin as its middle value in ns with its count: each value
    becomes whole microseconds (rounded) and lands in HdrHistogram's bucket of that value. The
    count and the percentiles keep fio's resolution; the sum (the mean) is that of the bins'
    middles, not fio's exact mean."""
    pairs: dict[int, int] = {}
    for s in sections:
        for value, n in (s.get("bins") or {}).items():
            us = round(int(value) / 1000)
            pairs[us] = pairs.get(us, 0) + int(n)
    return Histogram.from_buckets(sorted(pairs.items())) if pairs else None


def summarize(data: dict[str, Any]) -> FioSummary:
    """One summary of a group-reported fio run (all jobs of the invocation together)."""
    jobs = data["jobs"]
    for job in jobs:
        if job.get("error"):
            raise RunFailed(f"fio job {job.get('jobname')} failed with error {job['error']}")
    # With group_reporting there is one entry; otherwise add the jobs up.
    read = [j["read"] for j in jobs]
    write = [j["write"] for j in jobs]
    read_bytes = sum(int(r["io_bytes"]) for r in read)
    write_bytes = sum(int(w["io_bytes"]) for w in write)
    bw = sum(float(r["bw_bytes"]) for r in read) + sum(float(w["bw_bytes"]) for w in write)
    iops = sum(float(r["iops"]) for r in read) + sum(float(w["iops"]) for w in write)
    # job_runtime adds up the threads of a group; a direction's runtime is the wall time
    seconds = max(float(s.get("runtime", 0)) for s in read + write) / 1000
    sections = [s["lat_ns"] for s in read + write if s.get("total_ios", 0)]
    lat = merged_latency(sections)
    syncs = [j["sync"]["lat_ns"] for j in jobs if j.get("sync", {}).get("lat_ns", {}).get("N", 0)]
    return FioSummary(
        fio_version=str(data.get("fio version", "unknown")),
        seconds=seconds,
        io_bytes=read_bytes + write_bytes,
        mbps=bw / 1e6,
        iops=iops,
        lat=lat,
        sync=merged_latency(syncs) if syncs else None,
        read_bytes=read_bytes,
        write_bytes=write_bytes,
        sync_histogram=bins_histogram(syncs),
    )
