"""Charts as plain SVG: no JavaScript, no fonts or files to fetch, readable as text.

Primitives, general enough for a timeline and for bar charts with error bars:

- :func:`nice_ticks` picks round tick values; :func:`tick_label` writes them with a unit prefix;
- a :class:`Plot` is one panel: a y axis with a label and unit, :class:`Line` series (drawn as
  polylines, with a legend), :class:`Band` intervals shaded across the panel (checkpoints) and
  :class:`Bar` values with optional error bars;
- :func:`stack` draws plots one above the other on one shared x axis (a timeline);
  :func:`bar_chart` draws one plot of bars on a categorical x axis.

Long series are thinned to at most two points per pixel column (the minimum and maximum of
each column), so spikes stay visible and a 10-hour run stays a small file.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from xml.sax.saxutils import escape

PALETTE = (
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#ff7f0e",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#7f7f7f",
    "#bcbd22",
)
BAND_COLOR = "#999999"
FONT = 'font-family="DejaVu Sans, Arial, Helvetica, sans-serif"'


@dataclass(frozen=True)
class Line:
    label: str
    xs: Sequence[float]
    ys: Sequence[float]  # NaN breaks the line
    color: str | None = None
    dashed: bool = False


@dataclass(frozen=True)
class Band:
    """A shaded interval of x (a checkpoint); ``x1`` None runs to the end of the axis."""

    x0: float
    x1: float | None
    label: str = ""


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    low: float | None = None  # error bar, e.g. a confidence interval
    high: float | None = None
    color: str | None = None


@dataclass(frozen=True)
class Plot:
    title: str
    y_label: str  # with its unit, e.g. "write MB/s"
    lines: Sequence[Line] = ()
    bands: Sequence[Band] = ()
    bars: Sequence[Bar] = ()
    y_min: float | None = 0.0  # None: from the data
    height: int = 160


@dataclass(frozen=True)
class Frame:
    """The size of a figure and its margins, in pixels."""

    width: int = 1000
    left: int = 78
    right: int = 200  # room for the legend
    top: int = 36
    gap: int = 46
    bottom: int = 48

    @property
    def inner(self) -> int:
        return self.width - self.left - self.right


@dataclass
class _Svg:
    parts: list[str] = field(default_factory=list)

    def add(self, text: str) -> None:
        self.parts.append(text)

    def text(
        self,
        x: float,
        y: float,
        s: str,
        *,
        size: int = 12,
        anchor: str = "start",
        weight: str = "normal",
        rotate: bool = False,
        color: str = "#222",
    ) -> None:
        transform = f' transform="rotate(-90 {x:.1f} {y:.1f})"' if rotate else ""
        self.add(
            f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" '
            f'font-weight="{weight}" fill="{color}" {FONT}{transform}>{escape(s)}</text>'
        )

    def line(
        self, x1: float, y1: float, x2: float, y2: float, color: str, width: float = 1
    ) -> None:
        self.add(
            f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" '
            f'stroke="{color}" stroke-width="{width}"/>'
        )

    def rect(self, x: float, y: float, w: float, h: float, fill: str, opacity: float = 1.0) -> None:
        self.add(
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(w, 0.0):.1f}" height="{max(h, 0.0):.1f}" '
            f'fill="{fill}" fill-opacity="{opacity}"/>'
        )

    def document(self, width: int, height: int, title: str) -> str:
        head = (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img"><title>{escape(title)}</title>'
            f'<rect width="{width}" height="{height}" fill="white"/>'
        )
        return head + "".join(self.parts) + "</svg>"


# --- ticks ------------------------------------------------------------------------------------


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round values (1, 2, 2.5 or 5 times a power of ten) covering [lo, hi] in about ``count``
    steps; the first tick is at or below ``lo`` and the last at or above ``hi``."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return [0.0, 1.0]
    if hi <= lo:
        hi = lo + (abs(lo) if lo else 1.0)
    raw = (hi - lo) / max(count, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    first = math.floor(lo / step + 1e-9) * step
    ticks = []
    value = first
    while value < hi - 1e-9 * step:
        ticks.append(round(value, 12))
        value += step
    ticks.append(round(value, 12))
    return ticks


def tick_label(value: float, unit: str = "") -> str:
    """``12k``, ``1.5M``, ``0.25``, with the unit appended when given."""
    size = abs(value)
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if size >= scale:
            text = f"{value / scale:.3g}{suffix}"
            break
    else:
        text = f"{value:.3g}" if value else "0"
    return f"{text} {unit}".strip()


def duration_label(seconds: float) -> str:
    """Tick labels of a time axis: seconds, or h:mm:ss beyond ten minutes."""
    if seconds < 600:
        return f"{seconds:g}"
    whole = round(seconds)
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


def time_ticks(hi: float) -> list[float]:
    """Ticks for 0..hi seconds on whole seconds, minutes or hours where they fit."""
    if hi <= 600:
        return nice_ticks(0.0, hi, 8)
    for step in (60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600):
        if hi / step <= 10:
            return [i * step for i in range(int(hi // step) + 2)]
    step = 43200
    return [i * step for i in range(int(hi // step) + 2)]


# --- thinning ---------------------------------------------------------------------------------


def thin(xs: Sequence[float], ys: Sequence[float], columns: int) -> tuple[list[float], list[float]]:
    """At most two points (the lowest and highest y) per x column; NaN gaps are kept."""
    n = len(xs)
    if n <= 2 * columns or n == 0:
        return list(xs), list(ys)
    lo_x, hi_x = xs[0], xs[-1]
    width = (hi_x - lo_x) / columns if hi_x > lo_x else 1.0
    out_x: list[float] = []
    out_y: list[float] = []
    bucket: list[tuple[float, float]] = []
    current = 0

    def flush() -> None:
        finite = [p for p in bucket if not math.isnan(p[1])]
        if not finite:
            if bucket:
                out_x.append(bucket[0][0])
                out_y.append(math.nan)
            return
        low = min(finite, key=lambda p: p[1])
        high = max(finite, key=lambda p: p[1])
        for p in sorted({low, high}):
            out_x.append(p[0])
            out_y.append(p[1])

    for x, y in zip(xs, ys, strict=True):
        column = min(columns - 1, int((x - lo_x) / width))
        if column != current and bucket:
            flush()
            bucket = []
        current = column
        bucket.append((x, y))
    flush()
    return out_x, out_y


# --- drawing ----------------------------------------------------------------------------------


def _y_range(plot: Plot) -> tuple[float, float]:
    values = [y for line in plot.lines for y in line.ys if math.isfinite(y)]
    values += [b.value for b in plot.bars if math.isfinite(b.value)]
    values += [b.high for b in plot.bars if b.high is not None and math.isfinite(b.high)]
    lo = min(values) if values else 0.0
    hi = max(values) if values else 1.0
    if plot.y_min is not None:
        lo = min(lo, plot.y_min)
    if hi <= lo:
        hi = lo + 1.0
    return lo, hi


def _draw_plot(
    svg: _Svg,
    plot: Plot,
    frame: Frame,
    top: float,
    x_lo: float,
    x_hi: float,
    x_ticks: Sequence[float],
    x_text: Sequence[str],
) -> None:
    left, width, height = frame.left, frame.inner, plot.height
    lo, hi = _y_range(plot)
    ticks = nice_ticks(lo, hi, 4)
    lo, hi = ticks[0], ticks[-1]

    def sx(x: float) -> float:
        return left + (x - x_lo) / (x_hi - x_lo) * width if x_hi > x_lo else left

    def sy(y: float) -> float:
        return top + height - (y - lo) / (hi - lo) * height

    svg.text(left, top - 8, plot.title, size=13, weight="bold")
    for band in plot.bands:
        x0 = max(x_lo, band.x0)
        x1 = min(x_hi, band.x1 if band.x1 is not None else x_hi)
        if x1 >= x0:
            svg.rect(sx(x0), top, max(sx(x1) - sx(x0), 1.5), height, BAND_COLOR, 0.25)
    for t in ticks:
        y = sy(t)
        svg.line(left, y, left + width, y, "#e6e6e6")
        svg.text(left - 6, y + 4, tick_label(t), size=11, anchor="end", color="#444")
    for t, label in zip(x_ticks, x_text, strict=True):
        x = sx(t)
        svg.line(x, top, x, top + height, "#f0f0f0")
        svg.line(x, top + height, x, top + height + 4, "#444")
        svg.text(x, top + height + 16, label, size=11, anchor="middle", color="#444")
    svg.line(left, top + height, left + width, top + height, "#444")
    svg.line(left, top, left, top + height, "#444")
    svg.text(left - 56, top + height / 2, plot.y_label, size=11, anchor="middle", rotate=True)
    if plot.bars:
        _draw_bars(svg, plot, left, width, sy)
    legend_y = top + 4
    for i, line in enumerate(plot.lines):
        color = line.color or PALETTE[i % len(PALETTE)]
        xs, ys = thin(line.xs, line.ys, max(1, width))
        dash = ' stroke-dasharray="5 3"' if line.dashed else ""
        for segment in _segments(xs, ys):
            points = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in segment)
            if len(segment) == 1:
                x, y = segment[0]
                svg.add(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="1.8" fill="{color}"/>')
            else:
                svg.add(
                    f'<polyline points="{points}" fill="none" stroke="{color}" '
                    f'stroke-width="1.4" stroke-linejoin="round"{dash}/>'
                )
        lx = left + width + 14
        svg.line(lx, legend_y + 4, lx + 18, legend_y + 4, color, 2.5)
        svg.text(lx + 24, legend_y + 8, line.label, size=11)
        legend_y += 16
    if plot.bands and any(b.label for b in plot.bands):
        lx = left + width + 14
        svg.rect(lx, legend_y, 18, 9, BAND_COLOR, 0.35)
        svg.text(lx + 24, legend_y + 8, plot.bands[0].label, size=11)


def _segments(xs: Sequence[float], ys: Sequence[float]) -> list[list[tuple[float, float]]]:
    out: list[list[tuple[float, float]]] = []
    current: list[tuple[float, float]] = []
    for x, y in zip(xs, ys, strict=True):
        if math.isfinite(y):
            current.append((x, y))
        elif current:
            out.append(current)
            current = []
    if current:
        out.append(current)
    return out


def _draw_bars(
    svg: _Svg, plot: Plot, left: float, width: float, sy: Callable[[float], float]
) -> None:
    n = len(plot.bars)
    slot = width / n
    for i, bar in enumerate(plot.bars):
        color = bar.color or PALETTE[i % len(PALETTE)]
        x = left + i * slot + slot * 0.15
        w = slot * 0.7
        base = sy(max(plot.y_min or 0.0, 0.0))
        svg.rect(x, sy(bar.value), w, base - sy(bar.value), color, 0.85)
        if bar.low is not None and bar.high is not None:
            cx = x + w / 2
            svg.line(cx, sy(bar.low), cx, sy(bar.high), "#222", 1.2)
            svg.line(cx - w / 6, sy(bar.low), cx + w / 6, sy(bar.low), "#222", 1.2)
            svg.line(cx - w / 6, sy(bar.high), cx + w / 6, sy(bar.high), "#222", 1.2)
        svg.text(x + w / 2, sy(0.0) + 16, bar.label, size=11, anchor="middle")


def stack(
    plots: Sequence[Plot],
    *,
    x_max: float,
    x_label: str = "seconds from the start",
    title: str = "",
    frame: Frame | None = None,
) -> str:
    """Plots one above the other on one time axis from 0 to ``x_max`` seconds, as SVG."""
    frame = frame or Frame()
    x_ticks = time_ticks(max(x_max, 1e-9))
    x_hi = x_ticks[-1]
    labels = [duration_label(t) for t in x_ticks]
    svg = _Svg()
    y = float(frame.top + (24 if title else 0))
    if title:
        svg.text(frame.left, 22, title, size=15, weight="bold")
    for plot in plots:
        y += 18
        _draw_plot(svg, plot, frame, y, 0.0, x_hi, x_ticks, labels)
        y += plot.height + frame.gap
    unit = " (h:mm:ss)" if x_hi >= 600 else ""
    svg.text(frame.left + frame.inner / 2, y - frame.gap + 38, x_label + unit, anchor="middle")
    height = int(y - frame.gap + frame.bottom)
    return svg.document(frame.width, height, title or "timeline")


def bar_chart(plot: Plot, *, title: str = "", frame: Frame | None = None) -> str:
    """One plot of bars (with error bars where given) on a categorical x axis, as SVG."""
    frame = frame or Frame(right=40)
    svg = _Svg()
    top = float(frame.top + (24 if title else 0)) + 18
    if title:
        svg.text(frame.left, 22, title, size=15, weight="bold")
    _draw_plot(svg, plot, frame, top, 0.0, 1.0, [], [])
    height = int(top + plot.height + frame.bottom)
    return svg.document(frame.width, height, title or plot.title)
