"""A run's latency histograms in HdrHistogram's interval log format (``iolab export
--histograms``): a populate run's operations, a disk run's commit-test fdatasyncs. Readable
by HdrHistogram's own tools (HistogramLogProcessor) and by the ``hdrhistogram`` package's
``HistogramLogReader``.

One log per run and operation kind. Each interval has an untagged line, every loader's histogram
merged (what the tools total by default), then one line per loader tagged ``loader-N``. Values
are microseconds; the ``Interval_Max`` column is in milliseconds. Timestamps are seconds from
the start of the load (``BaseTime`` = ``StartTime``).
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator, Sequence

from iolab.latency.data import LatencyData
from iolab.latency.histogram import Histogram
from iolab.latency.recording import Interval
from iolab.results import SyncHistogram

FORMAT_VERSION = "1.3"


def kinds(data: LatencyData) -> list[str]:
    """The operation kinds the run timed."""
    return sorted({i.kind.value for i in data.intervals})


def interval_log(data: LatencyData, kind: str, title: str) -> str:
    """The interval log of one operation kind of a run."""
    start = datetime.datetime.fromtimestamp(data.start_unix, tz=datetime.UTC)
    lines = [f"#[{title}: {kind} latency, values in microseconds, Interval_Max in milliseconds]"]
    if data.warmup_s is not None:
        lines.append(f"#[warm-up: the first {data.warmup_s:.3f} s, left out of iolab's results]")
    lines += [
        f"#[Histogram log format version {FORMAT_VERSION}]",
        f"#[StartTime: {data.start_unix:.3f} (seconds since epoch), {start.isoformat(' ')}]",
        f"#[BaseTime: {data.start_unix:.3f} (seconds since epoch)]",
        '"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"',
    ]
    for start_s, end_s, parts in _by_interval(data, kind):
        merged = Histogram.merged(p.histogram for p in parts)
        lines.append(_line(None, start_s, end_s, merged))
        lines += [_line(f"loader-{p.loader}", start_s, end_s, p.histogram) for p in parts]
    return "\n".join(lines) + "\n"


def passes_log(passes: Sequence[SyncHistogram], test: str, title: str) -> str:
    """The interval log of a disk run's ``test`` (the commit test): one line per pass of its
    ``fdatasync`` latencies, tagged ``warmup`` for the discarded pass 0. fio keeps no time per
    bin, so the timestamps count passes: pass N is the interval from N to N + 1."""
    lines = [
        f"#[{title}: {test} fdatasync latency, values in microseconds, Interval_Max in "
        "milliseconds]",
        "#[timestamps are pass numbers: fio's bins hold no time; pass 0, tagged warmup, is "
        "left out of iolab's results]",
        f"#[Histogram log format version {FORMAT_VERSION}]",
        "#[StartTime: 0.000 (seconds since epoch)]",
        "#[BaseTime: 0.000 (seconds since epoch)]",
        '"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"',
    ]
    for p in sorted((p for p in passes if p.test == test), key=lambda p: p.pass_no):
        lines.append(
            _line("warmup" if p.discarded else None, p.pass_no, p.pass_no + 1, p.histogram)
        )
    return "\n".join(lines) + "\n"


def _by_interval(data: LatencyData, kind: str) -> Iterator[tuple[float, float, list[Interval]]]:
    groups: dict[tuple[int, bool], list[Interval]] = {}
    for i in data.intervals:
        if i.kind.value == kind:
            groups.setdefault((i.seq, not i.warmup), []).append(i)
    for key in sorted(groups):
        parts = sorted(groups[key], key=lambda i: i.loader)
        yield min(p.start_s for p in parts), max(p.end_s for p in parts), parts


def _line(tag: str | None, start_s: float, end_s: float, h: Histogram) -> str:
    payload = h.to_hdr().encode().decode()
    text = f"{start_s:.3f},{end_s - start_s:.3f},{h.max_us / 1000:.3f},{payload}"
    return f"Tag={tag},{text}" if tag else text
