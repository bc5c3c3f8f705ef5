"""Charts as plain SVG: no JavaScript, no fonts or files to fetch, readable as text.

Primitives, general enough for a timeline and for bar charts with error bars:

- :func:`nice_ticks` picks round tick values; :func:`tick_label` writes them with a unit prefix;
- a :class:`Plot` is one panel: a y axis with a label and unit, :class:`Line` series (drawn as
  polylines, with a legend), :class:`Band` intervals shaded across the panel (checkpoints) and
  :class:`Bar` values with optional error bars;
- :func:`stack` draws plots one above the other on one shared x axis (a timeline);
  :func:`bar_chart` draws one plot of bars on a categorical x axis.

Long series are thinned to at most two points per two pixel columns (the minimum and maximum
of each), so spikes stay visible and a 10-hour run stays a small file; checkpoint bands that
overlap on screen are drawn as one. The SVG is written
compactly, since a report holds one timeline per cell: coordinates to a tenth of a pixel without
trailing zeros; a line is one path, absolute at the start of each segment and relative steps
after it; grid lines, ticks and checkpoint bands are one path each per panel; what every text
shares (the font) is said once, on the root element.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from xml.sax.saxutils import escape

from iolab.report.signature import SVG_MARK

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
LINE_WIDTH = 1.4
DOT_SIZE = 3.6  # a lone point between gaps: a round dot this wide


@lru_cache(maxsize=8192)
def _tenths(value: int) -> str:
    """A length in tenths of a pixel as SVG text: ``12`` -> ``1.2``, ``-3`` -> ``-.3``."""
    whole, frac = divmod(abs(value), 10)
    sign = "-" if value < 0 else ""
    return f"{sign}{whole}" if not frac else f"{sign}{whole or ''}.{frac}"


def num(value: float) -> str:
    """A coordinate to a tenth of a pixel, as short as SVG allows (``78``, ``.5``, ``-3.2``)."""
    return _tenths(round(value * 10))


def _path(commands: Iterable[str]) -> str:
    """Path data: a minus sign separates numbers by itself."""
    return " ".join(commands).replace(" -", "-")


@dataclass(frozen=True)
class Line:
    label: str
    xs: Sequence[float]
    ys: Sequence[float]  # NaN breaks the line
    color: str | None = None
    dashed: bool = False


@dataclass(frozen=True)
class Band:
    """A shaded interval of x (a checkpoint, a warm-up, a steady part); ``x1`` None runs to the
    end of the axis; ``color`` None is checkpoints' grey."""

    x0: float
    x1: float | None
    label: str = ""
    color: str | None = None


@dataclass(frozen=True)
class Mark:
    """A moment on the x axis (a query's start), drawn as a thin line with a short label."""

    x: float
    label: str


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
    marks: Sequence[Mark] = ()
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
        transform = f' transform="rotate(-90 {num(x)} {num(y)})"' if rotate else ""
        extra = "" if anchor == "start" else f' text-anchor="{anchor}"'
        extra += "" if weight == "normal" else f' font-weight="{weight}"'
        self.add(
            f'<text x="{num(x)}" y="{num(y)}" font-size="{size}" fill="{color}"{extra}'
            f"{transform}>{escape(s)}</text>"
        )

    def line(
        self, x1: float, y1: float, x2: float, y2: float, color: str, width: float = 1
    ) -> None:
        self.add(
            f'<line x1="{num(x1)}" y1="{num(y1)}" x2="{num(x2)}" y2="{num(y2)}" '
            f'stroke="{color}" stroke-width="{width}"/>'
        )

    def rect(self, x: float, y: float, w: float, h: float, fill: str, opacity: float = 1.0) -> None:
        self.add(
            f'<rect x="{num(x)}" y="{num(y)}" width="{num(max(w, 0.0))}" '
            f'height="{num(max(h, 0.0))}" fill="{fill}" fill-opacity="{opacity}"/>'
        )

    def strokes(self, d: str, color: str, width: float = 1) -> None:
        """Straight strokes of one colour (grid lines, ticks, axes) as one path."""
        if d:
            self.add(f'<path d="{d}" fill="none" stroke="{color}" stroke-width="{width}"/>')

    def document(self, width: int, height: int, title: str) -> str:
        head = (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img" {FONT} {SVG_MARK}>'
            f"<title>{escape(title)}</title>"
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


def duration_label(seconds: float, clock: bool) -> str:
    """A tick label of a time axis: seconds, or h:mm:ss on a ``clock`` axis (one that runs
    beyond ten minutes: every label of an axis takes the same form)."""
    if not clock:
        return f"{seconds:g}"
    whole = round(seconds)
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


CLOCK_AXIS = 600.0  # seconds: a time axis longer than this is labelled h:mm:ss


def time_ticks(hi: float) -> list[float]:
    """Ticks for 0..hi seconds on whole seconds, minutes or hours where they fit."""
    if hi <= CLOCK_AXIS:
        return nice_ticks(0.0, hi, 8)
    for step in (60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600):
        if hi / step <= 10:
            return [i * step for i in range(int(hi // step) + 2)]
    step = 43200
    return [i * step for i in range(int(hi // step) + 2)]


# --- thinning ---------------------------------------------------------------------------------


def thin(xs: Sequence[float], ys: Sequence[float], columns: int) -> tuple[list[float], list[float]]:
    """At most two points (the lowest and highest y) per x column; NaN gaps are kept.

    ``xs`` must be sorted. Columns are cut by bisection and each is scanned by ``min``/``max``,
    so thinning a 10-hour run (36,000 samples a series) takes milliseconds."""
    n = len(xs)
    if n <= 2 * columns or n == 0:
        return list(xs), list(ys)
    lo_x, hi_x = xs[0], xs[-1]
    width = (hi_x - lo_x) / columns if hi_x > lo_x else 1.0
    out_x: list[float] = []
    out_y: list[float] = []
    start = 0
    for k in range(1, columns + 1):
        end = n if k == columns else bisect_left(xs, lo_x + k * width, start)
        if end == start:
            continue
        column = ys[start:end]
        # a sum is NaN only if a value is: the common case needs no filtering
        finite = column if not math.isnan(sum(column)) else [y for y in column if not math.isnan(y)]
        if not finite:
            out_x.append(xs[start])
            out_y.append(math.nan)
        else:
            low = start + column.index(min(finite))
            high = start + column.index(max(finite))
            for i in sorted({low, high}):
                out_x.append(xs[i])
                out_y.append(ys[i])
        start = end
    return out_x, out_y


# --- drawing ----------------------------------------------------------------------------------


def _y_range(plot: Plot, lines: Sequence[Sequence[float]]) -> tuple[float, float]:
    values = [y for ys in lines for y in ys if math.isfinite(y)]
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
    # thinning keeps each column's extremes, so the thinned lines have the same y range
    thinned = [thin(line.xs, line.ys, max(1, width // 2)) for line in plot.lines]
    lo, hi = _y_range(plot, [ys for _, ys in thinned])
    ticks = nice_ticks(lo, hi, 4)
    lo, hi = ticks[0], ticks[-1]

    def sx(x: float) -> float:
        return left + (x - x_lo) / (x_hi - x_lo) * width if x_hi > x_lo else left

    def sy(y: float) -> float:
        return top + height - (y - lo) / (hi - lo) * height

    svg.text(left, top - 8, plot.title, size=13, weight="bold")
    for color, group in _band_groups(plot.bands):
        bands = [
            f"M{num(x0)} {num(top)}h{num(x1 - x0)}v{num(height)}h{num(x0 - x1)}z"
            for x0, x1 in _band_pixels(group, x_lo, x_hi, sx)
        ]
        if bands:
            svg.add(f'<path d="{_path(bands)}" fill="{color}" fill-opacity="0.25"/>')
    bottom, right = num(top + height), num(left + width)
    _draw_marks(svg, plot.marks, x_lo, x_hi, sx, top, height)
    svg.strokes(_path(f"M{num(left)} {num(sy(t))}H{right}" for t in ticks), "#e6e6e6")
    for t in ticks:
        svg.text(left - 6, sy(t) + 4, tick_label(t), size=11, anchor="end", color="#444")
    tick_xs = [num(sx(t)) for t in x_ticks]
    svg.strokes(_path(f"M{x} {num(top)}V{bottom}" for x in tick_xs), "#f0f0f0")
    svg.strokes(_path(f"M{x} {bottom}v4" for x in tick_xs), "#444")
    for t, label in zip(x_ticks, x_text, strict=True):
        svg.text(sx(t), top + height + 16, label, size=11, anchor="middle", color="#444")
    svg.strokes(f"M{num(left)} {num(top)}V{bottom}H{right}", "#444")
    svg.text(left - 56, top + height / 2, plot.y_label, size=11, anchor="middle", rotate=True)
    if plot.bars:
        _draw_bars(svg, plot, left, width, sy)
    legend_y = top + 4
    for i, (line, (xs, ys)) in enumerate(zip(plot.lines, thinned, strict=True)):
        color = line.color or PALETTE[i % len(PALETTE)]
        dash = ' stroke-dasharray="5 3"' if line.dashed else ""
        d, dots = line_path(_segments(xs, ys), sx, sy)
        if d:
            svg.add(
                f'<path d="{d}" fill="none" stroke="{color}" stroke-width="{LINE_WIDTH}" '
                f'stroke-linejoin="round"{dash}/>'
            )
        if dots:
            svg.add(
                f'<path d="{dots}" stroke="{color}" stroke-width="{DOT_SIZE}" '
                'stroke-linecap="round"/>'
            )
        lx = left + width + 14
        svg.line(lx, legend_y + 4, lx + 18, legend_y + 4, color, 2.5)
        svg.text(lx + 24, legend_y + 8, line.label, size=11)
        legend_y += 16
    for color, group in _band_groups(plot.bands):
        if group[0].label:
            lx = left + width + 14
            svg.rect(lx, legend_y, 18, 9, color, 0.35)
            svg.text(lx + 24, legend_y + 8, group[0].label, size=11)
            legend_y += 16


def _band_groups(bands: Sequence[Band]) -> list[tuple[str, list[Band]]]:
    """Bands by colour, in order of first appearance (one path and one legend entry each)."""
    groups: dict[str, list[Band]] = {}
    for b in bands:
        groups.setdefault(b.color or BAND_COLOR, []).append(b)
    return list(groups.items())


MARK_COLOR = "#7a5195"
MARK_LABEL_GAP = 16.0  # pixels: a mark's label is left out when it would touch the previous one


def _draw_marks(
    svg: _Svg,
    marks: Sequence[Mark],
    x_lo: float,
    x_hi: float,
    sx: Callable[[float], float],
    top: float,
    height: float,
) -> None:
    """Thin dashed lines at the marks, labelled inside the top of the panel where room allows."""
    shown = [m for m in marks if x_lo <= m.x <= x_hi]
    if not shown:
        return
    lines = _path(f"M{num(sx(m.x))} {num(top)}v{num(height)}" for m in shown)
    svg.add(f'<path d="{lines}" stroke="{MARK_COLOR}" stroke-width="0.8" stroke-dasharray="2 2"/>')
    last = -math.inf
    for m in shown:
        x = sx(m.x)
        if x - last >= MARK_LABEL_GAP:
            svg.text(x + 2, top + 10, m.label, size=9, color=MARK_COLOR)
            last = x


def _band_pixels(
    bands: Sequence[Band], x_lo: float, x_hi: float, sx: Callable[[float], float]
) -> list[tuple[float, float]]:
    """The bands' spans in pixels, at least 1.5 px wide, merged where they overlap: a 10-hour
    run's 1,400 checkpoints are a few shaded stretches, not 1,400 darkening layers."""
    spans = []
    for band in bands:
        x0 = max(x_lo, band.x0)
        x1 = min(x_hi, band.x1 if band.x1 is not None else x_hi)
        if x1 >= x0:
            left = sx(x0)
            spans.append((left, max(sx(x1), left + 1.5)))
    merged: list[tuple[float, float]] = []
    for x0, x1 in sorted(spans):
        if merged and x0 <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], x1))
        else:
            merged.append((x0, x1))
    return merged


def line_path(
    segments: Sequence[Sequence[tuple[float, float]]],
    sx: Callable[[float], float],
    sy: Callable[[float], float],
) -> tuple[str, str]:
    """Path data of a line's segments, and of its lone points (zero-length subpaths that a round
    cap draws as dots). Positions are rounded to tenths of a pixel once, and each step is the
    difference of two rounded positions, so the relative steps never drift."""
    line = []
    dots = []
    for segment in segments:
        points = [(round(sx(x) * 10), round(sy(y) * 10)) for x, y in segment]
        x0, y0 = points[0]
        start = f"M{_tenths(x0)} {_tenths(y0)}"
        if len(points) == 1:
            dots.append(start + "h0")
            continue
        steps = []
        for x, y in points[1:]:
            steps.append(f"{_tenths(x - x0)} {_tenths(y - y0)}")
            x0, y0 = x, y
        line.append(start + "l" + " ".join(steps))
    return _path(line), _path(dots)


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
    labels = [duration_label(t, x_hi > CLOCK_AXIS) for t in x_ticks]
    svg = _Svg()
    y = float(frame.top + (24 if title else 0))
    if title:
        svg.text(frame.left, 22, title, size=15, weight="bold")
    for plot in plots:
        y += 18
        _draw_plot(svg, plot, frame, y, 0.0, x_hi, x_ticks, labels)
        y += plot.height + frame.gap
    unit = " (h:mm:ss)" if x_hi > CLOCK_AXIS else ""
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


# --- grouped bars -----------------------------------------------------------------------------

CHAR_WIDTH = 0.6  # a character of the font is about this many font sizes wide


@dataclass(frozen=True)
class GroupedBar:
    """One bar of a grouped chart: its place on the x axis (``category``), its colour in the
    legend (``series``), the value with an optional interval, and the text written on it."""

    category: str
    series: str
    value: float
    low: float | None = None
    high: float | None = None
    text: str = ""  # default: the value with three significant figures; "\n" breaks a line


def text_width(s: str, size: float) -> float:
    """About how many pixels ``s`` takes at font ``size`` (a sans font's average glyph)."""
    return len(s) * size * CHAR_WIDTH


def wrap(s: str, width: float, size: float, lines: int = 3) -> list[str]:
    """``s`` in lines of at most ``width`` pixels, broken at spaces, at most ``lines`` lines;
    a word too long for a line, or text beyond the last line, ends in an ellipsis."""
    most = max(3, int(width / (size * CHAR_WIDTH)))
    out: list[str] = []
    for word in s.split():
        if out and len(out[-1]) + 1 + len(word) <= most:
            out[-1] += " " + word
        else:
            out.append(word)
    out = [line if len(line) <= most else line[: most - 1] + "…" for line in out]
    if len(out) > lines:
        out = [*out[: lines - 1], out[lines - 1][: most - 1] + "…"]
    return out


def _bar_lines(text: str, width: float) -> list[str]:
    """A bar's text in the lines it is written in above the bar: its own lines, each broken at
    spaces where wider than ``width``; empty when a word alone is wider (written upright)."""
    out: list[str] = []
    for line in text.split("\n"):
        words = line.split()
        if any(text_width(w, 10) > width for w in words):
            return []
        lines: list[str] = []
        for w in words:
            if lines and text_width(f"{lines[-1]} {w}", 10) <= width:
                lines[-1] += f" {w}"
            else:
                lines.append(w)
        out += lines
    return out


def grouped_bar_chart(
    bars: Sequence[GroupedBar],
    *,
    title: str,
    y_label: str,
    x_label: str = "",
    legend_title: str = "",
    reference: float | None = None,
    height: int = 240,
) -> str:
    """Bars grouped by category on the x axis, one colour per series with a legend, error bars
    where given, the value written above each bar, and a dashed line at ``reference`` (1.0 on
    a speed-up chart). Category labels wrap under their group (three lines at most, the full
    text in a tooltip); a bar's text stands above it in its lines ("2.27x slower" over "n.s."),
    broken at spaces where a line is wider than the bar, and upright where a word is."""
    categories = list(dict.fromkeys(b.category for b in bars))
    series = list(dict.fromkeys(b.series for b in bars))
    colors = {s: PALETTE[i % len(PALETTE)] for i, s in enumerate(series)}
    legend_width = max([text_width(s, 11) for s in [*series, legend_title]] + [60.0]) + 50
    per_group = max(70.0, 34.0 * len(series) + 16)
    frame = Frame(
        width=int(min(1100, max(640, 78 + per_group * len(categories) + legend_width))),
        right=int(legend_width),
    )
    titles = wrap(title, frame.width - frame.left - 10, 15, lines=3)
    left, width = frame.left, frame.inner
    top = frame.top + 20 * len(titles) + 10
    values = [b.value for b in bars] + [b.high for b in bars if b.high is not None]
    values += [b.low for b in bars if b.low is not None]
    values += [reference] if reference is not None else []
    finite = [v for v in values if math.isfinite(v)]
    low = min([0.0, *finite])
    slot = frame.inner / max(len(categories), 1)
    bar_w = min(60.0, slot * 0.8 / max(len(series), 1))
    texts = [_bar_lines(b.text or tick_label(b.value), bar_w + 4) for b in bars]
    room = 0.12 + 0.05 * (max((len(t) for t in texts if t), default=1) - 1)  # lines above a bar
    ticks = nice_ticks(low, max([*finite, 1e-9]) * (1 + room) - low * room, 4)
    lo, hi = ticks[0], ticks[-1]

    def sy(y: float) -> float:
        return top + height - (y - lo) / (hi - lo) * height

    svg = _Svg()
    for k, line in enumerate(titles):
        svg.text(left, 22 + 20 * k, line, size=15, weight="bold")
    svg.strokes(_path(f"M{num(left)} {num(sy(t))}H{num(left + width)}" for t in ticks), "#e6e6e6")
    for t in ticks:
        svg.text(left - 6, sy(t) + 4, tick_label(t), size=11, anchor="end", color="#444")
    svg.text(left - 56, top + height / 2, y_label, size=11, anchor="middle", rotate=True)
    label_lines = 1
    for i, category in enumerate(categories):
        in_group = [(b, t) for b, t in zip(bars, texts, strict=True) if b.category == category]
        x0 = left + i * slot + (slot - bar_w * len(in_group)) / 2
        for j, (bar, stacked) in enumerate(in_group):
            x = x0 + j * bar_w
            svg.rect(
                x + 1,
                sy(bar.value),
                bar_w - 2,
                sy(max(lo, 0.0)) - sy(bar.value),
                colors[bar.series],
                0.85,
            )
            cx = x + bar_w / 2
            top_y = sy(bar.value)
            if bar.low is not None and bar.high is not None:
                cap = min(6.0, bar_w / 4)
                svg.strokes(
                    f"M{num(cx)} {num(sy(bar.low))}V{num(sy(bar.high))}"
                    f"M{num(cx - cap)} {num(sy(bar.low))}h{num(2 * cap)}"
                    f"M{num(cx - cap)} {num(sy(bar.high))}h{num(2 * cap)}",
                    "#222",
                    1.2,
                )
                top_y = min(top_y, sy(bar.high))
            if len(stacked) == 1:
                svg.text(cx, top_y - 4, stacked[0], size=10, anchor="middle")
            elif stacked:  # one text of its lines, read as one ("2.00x slower n.s.")
                spans = _tspans(cx, stacked, 11)
                svg.add(
                    f'<text x="{num(cx)}" y="{num(top_y - 4 - 11 * (len(stacked) - 1))}" '
                    f'font-size="10" fill="#222" text-anchor="middle">{spans}</text>'
                )
            else:
                text = " ".join((bar.text or tick_label(bar.value)).split())
                svg.text(cx + 3, top_y - 4, text, size=10, rotate=True)
        lines = wrap(category, slot - 6, 11)
        label_lines = max(label_lines, len(lines))
        cx = left + (i + 0.5) * slot
        parts = _tspans(cx, lines, 13)
        svg.add(
            f'<text x="{num(cx)}" y="{num(top + height + 16)}" font-size="11" fill="#222" '
            f'text-anchor="middle"><title>{escape(category)}</title>{parts}</text>'
        )
    if reference is not None and lo <= reference <= hi:
        svg.add(
            f'<path d="M{num(left)} {num(sy(reference))}H{num(left + width)}" stroke="#444" '
            'stroke-width="1" stroke-dasharray="4 3"/>'
        )
    bottom = num(top + height)
    svg.strokes(f"M{num(left)} {num(top)}V{bottom}H{num(left + width)}", "#444")
    below = top + height + 16 + 13 * label_lines
    if x_label:
        svg.text(left + width / 2, below + 6, x_label, size=12, anchor="middle")
    lx, ly = left + width + 16, top + 4
    if legend_title:
        svg.text(lx, ly + 8, legend_title, size=11, weight="bold")
        ly += 18
    for s in series:
        svg.rect(lx, ly, 14, 10, colors[s], 0.85)
        svg.text(lx + 20, ly + 9, s, size=11)
        ly += 17
    total = int(max(below + (24 if x_label else 8), ly + 8) + 8)
    return svg.document(frame.width, total, title)


def _tspans(x: float, lines: Sequence[str], step: int) -> str:
    """Lines of one SVG text, each at ``x``, ``step`` px below the one before."""
    return "".join(
        f'<tspan x="{num(x)}" dy="{0 if k == 0 else step}">{escape(line)}</tspan>'
        for k, line in enumerate(lines)
    )
