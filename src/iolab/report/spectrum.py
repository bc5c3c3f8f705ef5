"""The percentile-spectrum chart of the HTML report: latency by percentile, one line per cell,
and the fdatasync latency of the WAL device's commit test (fio) beside it.

x is the percentile on a log scale of 1 / (1 - p): 0, 90, 99, 99.9, 99.99 and 99.999 are equally
spaced, so the tail gets as much room as the body (HdrHistogram's own plots read so). y is the
latency in ms on a log scale: a device's fdatasync (tens of microseconds) and a database's
commit (a millisecond, with a tail of hundreds) differ by orders of magnitude, and on a linear
axis the faster line would lie flat on zero; on a log axis one step up is one ratio everywhere.

Each cell's line is the histogram of every done run of the cell merged exactly (bucket counts
added, warm-up left out: each run's stored total per kind, then :meth:`Histogram.merged`),
drawn as the step it is, each bucket's upper edge over the percentiles whose value it holds,
so reading the line at 99 gives the cell's p99 as the summaries compute it (HdrHistogram's
rank rounding).
One chart per operation kind (commit, transaction, statement). On the commit and transaction
charts (the kinds that include a commit), a dashed line is the disk run (given with
--with-disk, else the newest `iolab disk` run in the same results database finished by the
experiment's end, or the first one since) that measured the commit test (8K write + fdatasync)
on the device holding the WAL of the cells' runs: its measured passes' fdatasync histograms
merged.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass

from iolab.analysis.efficiency import device_key, disk_device
from iolab.latency.histogram import Histogram, highest
from iolab.report.charts import PALETTE, _Svg, line_path, num
from iolab.results import RunId
from iolab.store import Store
from iolab.store import experiments as store_experiments
from iolab.store.experiments import StoredCell, StoredRun

KINDS = ("commit", "transaction", "statement")  # the order of the charts
WITH_DISK = ("commit", "transaction")  # kinds whose operations include a commit
NOUNS = {"commit": "commits", "transaction": "transactions", "statement": "statements"}
X_MAX = 5.0  # 99.999: 1 / (1 - p) = 10^5
X_TICKS = ((0.0, "0"), (1.0, "90"), (2.0, "99"), (3.0, "99.9"), (4.0, "99.99"), (5.0, "99.999"))
FLOOR_MS = 0.001  # 1 us: the histograms' lowest value (0 means under 1 us)
DISK_COLOR = "#222222"


def x_of(p: float) -> float:
    """Where percentile ``p`` (0..100) sits on the x axis: log10(1 / (1 - p/100)), at most
    :data:`X_MAX` (99.999 and above, the maximum included, sit at the right edge)."""
    rest = 1.0 - p / 100.0
    if rest <= 10**-X_MAX:
        return X_MAX
    return min(X_MAX, -math.log10(rest))


def steps(h: Histogram) -> list[tuple[float, float]]:
    """The spectrum of ``h`` as a step line of (x, latency ms) points, bucket by bucket at its
    upper edge (never above the maximum), so that the line read at any percentile p is
    :meth:`Histogram.percentile` of p, the summaries' p99 at 99: that is the bucket holding
    the value of rank round(p% of the count), so bucket i holds from the share
    (before_i + 0.5) / count to (before_i + count_i + 0.5) / count."""
    out: list[tuple[float, float]] = []
    seen = 0
    x0 = 0.0
    for i in sorted(h.counts):
        seen += h.counts[i]
        y = max(min(highest(i), h.max_us) / 1000, FLOOR_MS)
        x1 = x_of(100.0 * (seen + 0.5) / h.total) if seen < h.total else X_MAX
        out += [(x0, y), (x1, y)]
        x0 = x1
        if x1 >= X_MAX:
            break
    return out


def value_at(points: Sequence[tuple[float, float]], p: float) -> float:
    """What a step line reads at percentile ``p``: the first step that ends beyond x(p) (a
    step's end belongs to the next one, as rank p% of the count rounds half up)."""
    x = x_of(p)
    return next((y for px, y in points[1::2] if px > x), points[-1][1])


def y_ticks(lo: float, hi: float) -> list[float]:
    """Ticks of a log axis covering [lo, hi] ms: each power of ten, and 2 and 5 times it
    when the axis spans three decades or fewer."""
    first = math.floor(math.log10(max(lo, FLOOR_MS)) + 1e-9)
    last = math.ceil(math.log10(max(hi, lo * 1.001, FLOOR_MS)) - 1e-9)
    last = max(last, first + 1)
    mantissas = (1, 2, 5) if last - first <= 3 else (1,)
    ticks = [m * 10.0**e for e in range(first, last) for m in mantissas]
    return [round(t, 12) for t in [*ticks, 10.0**last]]


def ms_label(value: float) -> str:
    return f"{value:g}"


@dataclass(frozen=True)
class SpectrumLine:
    """One line: a cell's merged histogram, or a disk run's fdatasync histogram (dashed)."""

    label: str
    histogram: Histogram
    runs: int  # the done runs (a cell) or measured passes (a disk run) merged into it
    disk_run: int | None = None  # the `iolab disk` run it comes from

    @property
    def dashed(self) -> bool:
        return self.disk_run is not None

    def points(self) -> list[tuple[float, float]]:
        return steps(self.histogram)

    @property
    def p99_ms(self) -> float:
        return self.histogram.percentile(99.0) / 1000


@dataclass(frozen=True)
class Spectrum:
    """The chart of one operation kind: the cells' lines, the WAL devices' commit tests, and
    the WAL devices no disk run measured (the caption says how to add one)."""

    kind: str
    lines: tuple[SpectrumLine, ...]
    disks: tuple[SpectrumLine, ...] = ()
    missing: tuple[str, ...] = ()  # WAL devices without a commit test in the results database

    @property
    def title(self) -> str:
        return f"{self.kind} latency by percentile"


# --- reading ----------------------------------------------------------------------------------


def read(
    store: Store,
    cells: Sequence[tuple[str, StoredCell]],
    disk_runs: Sequence[int] = (),
    by: str | None = None,
) -> tuple[Spectrum, ...]:
    """The charts of an experiment's cells (label, cell): one per operation kind the done runs
    timed, with the commit tests of the devices holding their WAL (from ``disk_runs`` first,
    the report's --with-disk, then the newest disk run that measured each device and had
    finished by ``by``, the experiment's end, or the first one since)."""
    merged: dict[str, list[SpectrumLine]] = {}
    wal: list[str] = []  # device keys, in the order the cells name them
    for label, cell in cells:
        done = [r for r in cell.runs if r.done]
        by_kind: dict[str, list[Histogram]] = {}
        for run in done:
            totals = store.latency_totals(run.id)  # one row per kind, warm-up left out
            if not totals:
                continue
            for kind, h in totals.items():
                by_kind.setdefault(kind, []).append(h)
            wal += [d for d in wal_devices(store, run) if d not in wal]
        for kind, parts in by_kind.items():
            h = Histogram.merged(parts)
            if h.total:
                merged.setdefault(kind, []).append(SpectrumLine(label, h, len(parts)))
    if not merged:
        return ()
    tests = commit_tests(store, wal, disk_runs, by) if any(k in merged for k in WITH_DISK) else {}
    out = []
    for kind in [*KINDS, *sorted(set(merged) - set(KINDS))]:
        if kind not in merged:
            continue
        with_disk = kind in WITH_DISK
        out.append(
            Spectrum(
                kind,
                tuple(merged[kind]),
                tuple(tests[d] for d in wal if d in tests) if with_disk else (),
                tuple(d for d in wal if d not in tests) if with_disk else (),
            )
        )
    return tuple(out)


def wal_devices(store: Store, run: StoredRun) -> list[str]:
    """The device keys holding a run's WAL: its probes' ``wal`` role (or, where the engine
    keeps its WAL beside the data, as SQLite does, the data's), else the summary's devices."""
    testbeds = {
        name: (d.get("testbed") if isinstance(d, dict) else None)
        for name, d in (run.summary.get("devices") or {}).items()
    }
    probes = store.probes(run.id, values=False)
    found: list[tuple[str, list[str]]] = []
    if probes is not None:
        found = [(r.device, r.role.split("+")) for r in probes.roles if r.device]
    if not found:
        found = [
            (name, list(d.get("roles") or []))
            for name, d in (run.summary.get("devices") or {}).items()
            if isinstance(d, dict)
        ]
    names = [name for name, roles in found if "wal" in roles]
    if not names:  # no WAL of its own: it is written beside the data
        names = [name for name, roles in found if any(r.startswith("data") for r in roles)]
    return list(dict.fromkeys(device_key(n, testbeds.get(n)) for n in names))


def commit_tests(
    store: Store, devices: Sequence[str], given: Sequence[int] = (), by: str | None = None
) -> dict[str, SpectrumLine]:
    """For each device key: the disk run that measured its commit test (of ``given`` first,
    else the newest one in the results database finished by ``by``, or the first since), as a
    dashed line of its measured passes' fdatasync histograms."""
    wanted = set(devices)
    out: dict[str, SpectrumLine] = {}
    envs = dict(store_experiments.done_disk_runs(store))
    chosen = [(RunId(r), envs.get(RunId(r))) for r in given if RunId(r) in envs]
    chosen += [r for r in store_experiments.disk_runs_for(store, by) if r[0] not in given]
    for run_id, env_id in chosen:
        if out.keys() >= wanted:
            break
        device = disk_device(store.environment(env_id)) if env_id is not None else None
        if device is None or device in out or device not in wanted:
            continue
        passes = [s for s in store.sync_histograms(run_id) if not s.discarded]
        if not passes:
            continue  # this run did not run the commit test: an older one may have
        h = Histogram.merged(s.histogram for s in passes)
        name = device.removeprefix("device:")
        out[device] = SpectrumLine(
            f"fio commit test on {name} (run {run_id})", h, len(passes), disk_run=run_id
        )
    return out


# --- drawing ----------------------------------------------------------------------------------

WIDTH = 900
LEFT = 70
RIGHT = 30
TOP = 44
HEIGHT = 300
LEGEND_ROW = 17


def legend_label(line: SpectrumLine, kind: str) -> str:
    """A line's legend: its label, what was merged into it and its p99."""
    if line.dashed:
        what = f"{line.runs} pass{'es' if line.runs != 1 else ''}, "
        what += f"{line.histogram.total:,} fdatasyncs"
    else:
        what = f"{line.runs} run{'s' if line.runs != 1 else ''}, "
        what += f"{line.histogram.total:,} {NOUNS.get(kind, kind)}"
    return f"{line.label}: {what}, p99 {line.p99_ms:.3g} ms"


def thin(points: Sequence[tuple[float, float]], sx: float) -> list[tuple[float, float]]:
    """A step line (x non-decreasing) with only the first and last point of each half-pixel
    column (``sx`` pixels per x unit): a histogram's hundreds of buckets stay a small path."""
    out: list[tuple[float, float]] = []
    column = None
    run = 0  # points of the current column in ``out``
    for x, y in points:
        c = math.floor(x * sx * 2)
        if c == column and run >= 2:
            out[-1] = (x, y)
        else:
            run = run + 1 if c == column else 1
            out.append((x, y))
        column = c
    return out


def svg(spectrum: Spectrum) -> str:
    """The chart of one operation kind, as SVG (legend below the plot)."""
    lines = [*spectrum.lines, *spectrum.disks]
    points = [line.points() for line in lines]
    ys = [y for ps in points for _, y in ps]
    ticks = y_ticks(min(ys), max(ys))
    lo, hi = math.log10(ticks[0]), math.log10(ticks[-1])
    inner = WIDTH - LEFT - RIGHT
    per_x = inner / X_MAX

    def sx(x: float) -> float:
        return LEFT + x * per_x

    def sy(y: float) -> float:
        return TOP + HEIGHT - (math.log10(max(y, FLOOR_MS)) - lo) / (hi - lo) * HEIGHT

    out = _Svg()
    out.text(LEFT, 24, spectrum.title, size=15, weight="bold")
    bottom = TOP + HEIGHT
    out.strokes(
        " ".join(f"M{num(LEFT)} {num(sy(t))}H{num(LEFT + inner)}" for t in ticks), "#e6e6e6"
    )
    out.strokes(" ".join(f"M{num(sx(x))} {num(TOP)}V{num(bottom)}" for x, _ in X_TICKS), "#eeeeee")
    for t in ticks:
        out.text(LEFT - 6, sy(t) + 4, ms_label(t), size=11, anchor="end", color="#444")
    for x, label in X_TICKS:
        out.text(sx(x), bottom + 16, label, size=11, anchor="middle", color="#444")
    out.strokes(f"M{num(LEFT)} {num(TOP)}V{num(bottom)}H{num(LEFT + inner)}", "#444")
    out.text(
        LEFT - 50,
        TOP + HEIGHT / 2,
        "latency (ms, log scale)",
        size=11,
        anchor="middle",
        rotate=True,
    )
    out.text(
        LEFT + inner / 2, bottom + 36, "percentile (log scale of 1 / (1 - p))", anchor="middle"
    )
    legend_y = bottom + 56
    cells = 0
    for line, ps in zip(lines, points, strict=True):
        color = DISK_COLOR if line.dashed else PALETTE[cells % len(PALETTE)]
        cells += 0 if line.dashed else 1
        dash = ' stroke-dasharray="6 4"' if line.dashed else ""
        d, _ = line_path([thin(ps, per_x)], sx, sy)
        out.add(
            f'<path d="{d}" fill="none" stroke="{color}" stroke-width="1.6" '
            f'stroke-linejoin="round"{dash}><title>{html.escape(line.label)}</title></path>'
        )
        out.add(
            f'<path d="M{num(LEFT)} {num(legend_y)}h24" stroke="{color}" stroke-width="2.5"{dash}/>'
        )
        out.text(LEFT + 32, legend_y + 4, legend_label(line, spectrum.kind), size=11)
        legend_y += LEGEND_ROW
    return out.document(WIDTH, int(legend_y + 8), spectrum.title)


def caption(spectrum: Spectrum) -> str:
    """What a line is, as HTML: the cells' lines, the dashed line, or how to add one."""
    noun = NOUNS.get(spectrum.kind, spectrum.kind)
    text = (
        f"Each solid line is one cell: the latency of its {noun}, every done run's histogram "
        "merged exactly (bucket counts added, the warm-up left out), read at each percentile: "
        f"at 99 it is the latency 99% of the {noun} stayed at or under. "
    )
    text = html.escape(text)
    if spectrum.disks:
        text += (
            "The dashed line is the device holding the WAL: the fdatasync latency after each "
            "8K write of the commit test of <code>iolab disk</code> (one job at queue depth 1, "
            "from fio&#x27;s json+ bins, its measured passes merged), the floor a commit on that "
            "device pays. "
        )
    for device in spectrum.missing:
        name = html.escape(device.removeprefix("device:"))
        text += (
            f"No <code>iolab disk</code> run in this results database measured the commit test "
            f"on {name}: run <code>iolab disk --profile db DIR</code> with DIR on {name}, "
            "into the same <code>--results</code> database, to draw its fdatasync latency here. "
        )
    return f"<p>{text.strip()}</p>"


def section(spectra: Sequence[Spectrum]) -> str:
    """The report's section: one chart and caption per operation kind (nothing without any)."""
    if not spectra:
        return ""
    return (
        "<section id='spectrum'><h2>Latency by percentile</h2>"
        + "".join(svg(s) + caption(s) for s in spectra)
        + "</section>"
    )
