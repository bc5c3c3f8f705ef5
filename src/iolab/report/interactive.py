"""Interactive timelines for HTML pages, drawn in the browser by Plotly's JavaScript.

The JavaScript is the copy the ``plotly`` package ships (``plotly/package_data/plotly.min.js``),
written once into each page: no network, no CDN. A timeline is the same panels as the SVG one
(:func:`iolab.report.timeline.plots`), as one Plotly figure: a panel per y axis, every panel's
time axis matched to the first (zoom or pan one and all follow), the values of every series at
the mouse on hover, a legend per panel whose entries toggle their series, checkpoints as shaded
bands across all panels and a TPC-H run's query starts as dashed lines. The mode bar saves the
chart as PNG or SVG.

Each figure is a JSON block beside an empty box of its final height; a short script draws a box
when it comes near the screen (and every box before printing), so a page with a hundred
timelines opens as fast as one with a few. Series longer than ``max_points`` are thinned as the
SVG's are (each column's lowest and highest value); a regular series is written as its first
time, step and last time (the script makes its x of them) with values to four significant
figures.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Sequence
from functools import lru_cache
from importlib import resources

from iolab.report.charts import PALETTE, Band, Plot, thin

MAX_POINTS = 600  # per series and panel in a report: each of 300 slices' lowest and highest
PANEL_HEIGHT = 170  # pixels per panel
GAP = 0.06  # share of the figure between two panels


@lru_cache(maxsize=1)
def plotly_js() -> str:
    """Plotly's own minified JavaScript, from the installed ``plotly`` package."""
    return (resources.files("plotly") / "package_data" / "plotly.min.js").read_text("utf-8")


_WRITTEN: dict[float, str] = {}  # numbers already written: a timeline's rounded values repeat
_WRITTEN_MAX = 1 << 16


def _num(value: float) -> str:
    """A number for the figure's JSON: six significant figures at most, NaN as null."""
    text = _WRITTEN.get(value)  # NaN is never found: NaN != NaN
    if text is not None:
        return text
    if not math.isfinite(value):
        return "null"
    text = f"{value:.6g}"
    if "e" in text:
        text = text.replace("e+0", "e").replace("e+", "e").replace("e-0", "e-")
    if value and len(_WRITTEN) < _WRITTEN_MAX:  # not 0.0: -0.0 equals it and writes "-0"
        _WRITTEN[value] = text
    return text


def _dump(value: object) -> str:
    """JSON with short numbers; no ``</`` inside, so it can sit in a ``<script>`` block."""
    return _json(value).replace("</", "<\\/")  # once: no "</" spans two JSON tokens


def _json(value: object) -> str:
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, float):
        return _num(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(str(k))}:{_json(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        if all(type(v) is float for v in value):  # a series' values: the bulk of a page
            return "[" + ",".join(map(_num, value)) + "]"
        return "[" + ",".join(_json(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} into a figure")


def _regular(xs: Sequence[float]) -> float | None:
    """The step of an x evenly spaced but for its last value (a run's last sample ends with
    the run, before a whole interval), or None."""
    if len(xs) < 3:
        return None
    step = (xs[-2] - xs[0]) / (len(xs) - 2)
    tolerance = abs(step) * 1e-6 + 1e-9
    if step > 0 and all(abs(xs[i] - xs[0] - i * step) <= tolerance for i in range(len(xs) - 1)):
        return step
    return None


WARMUP = "warm-up (left out of the results)"  # the band of a run's warm-up
WARMUP_COLOUR = "#4c78a8"
STEADY = "steady part"  # the band of a populate run's steady state (iolab.analysis.steady)
STEADY_COLOUR = "#2a9d8f"
COLOUR_NAMES = {"#999": "grey", WARMUP_COLOUR: "blue", STEADY_COLOUR: "green"}


def _merged(bands: Sequence[Band], x_max: float) -> list[tuple[float, float]]:
    """Bands as (start, end), merged where they touch on a 2,000-column axis."""
    close = x_max / 2000.0
    out: list[tuple[float, float]] = []
    for b in sorted(bands, key=lambda b: b.x0):
        x1 = b.x1 if b.x1 is not None else x_max
        if out and b.x0 <= out[-1][1] + close:
            out[-1] = (out[-1][0], max(out[-1][1], x1))
        else:
            out.append((b.x0, max(x1, b.x0 + close)))
    return out


def height(panels: int) -> int:
    """The height in pixels of a figure of ``panels`` panels."""
    return PANEL_HEIGHT * panels + 60 * (panels - 1) + 145


def figure(
    plots: Sequence[Plot], x_max: float, title: str, max_points: int = MAX_POINTS
) -> dict[str, object]:
    """The Plotly figure (data and layout) of a timeline's panels."""
    n = len(plots)
    share = (1.0 - GAP * (n - 1)) / n if n else 1.0
    data: list[object] = []
    layout: dict[str, object] = {
        "height": height(n),
        "margin": {"l": 70, "r": 230, "t": 95, "b": 50},
        "hovermode": "x unified",
        "hoverdistance": -1,  # the nearest sample, however far: zoomed in, samples are sparse
        "font": {"family": "DejaVu Sans, Arial, sans-serif", "size": 11},
        "plot_bgcolor": "white",
        "showlegend": True,
    }
    annotations: list[object] = []
    shapes: list[object] = []
    for i, plot in enumerate(plots):
        axis = "" if i == 0 else str(i + 1)
        top = 1.0 - i * (share + GAP)
        bottom = max(0.0, top - share)
        layout[f"xaxis{axis}"] = {
            "domain": [0, 1],
            "anchor": f"y{axis}",
            "range": [0, x_max],
            "showgrid": True,
            "gridcolor": "#eee",
            "linecolor": "#444",
            **({"matches": "x"} if i else {}),
            **({"title": {"text": "seconds from the start"}} if i == n - 1 else {}),
        }
        layout[f"yaxis{axis}"] = {
            "domain": [bottom, top],
            "anchor": f"x{axis}",
            "title": {"text": plot.y_label},
            "gridcolor": "#eee",
            "linecolor": "#444",
            "rangemode": "tozero" if plot.y_min == 0 else "normal",
            "fixedrange": False,
        }
        legend = "legend" if i == 0 else f"legend{i + 1}"
        layout[legend] = {"x": 1.02, "y": top, "yanchor": "top", "bgcolor": "rgba(0,0,0,0)"}
        annotations.append(
            {
                "text": f"<b>{html.escape(plot.title)}</b>",
                "xref": "paper",
                "yref": "paper",
                "x": 0,
                "y": top,
                "yanchor": "bottom",
                "xanchor": "left",
                "showarrow": False,
                "font": {"size": 13},
            }
        )
        for k, line in enumerate(plot.lines):
            xs, ys = line.xs, line.ys
            if len(xs) > max_points:
                xs, ys = thin(xs, ys, max_points // 2)
            trace: dict[str, object] = {
                "type": "scatter",
                "mode": "lines+markers" if len(xs) < 3 else "lines",
                "name": line.label,
                "xaxis": f"x{axis}",
                "yaxis": f"y{axis}",
                "legend": legend,
                "line": {
                    "color": line.color or PALETTE[k % len(PALETTE)],
                    "width": 1.5,
                    **({"dash": "dash"} if line.dashed else {}),
                },
                "y": [float(f"{y:.4g}") for y in ys],
                "hovertemplate": "%{y:.4g}",
            }
            step = _regular(xs)
            if step is not None:  # the page's script makes x of them
                trace["x0"] = float(xs[0])
                trace["dx"] = step
                trace["xlast"] = float(xs[-1])
            else:
                trace["x"] = [round(float(x), 2) for x in xs]
            data.append(trace)
    first = [b for p in plots[:1] for b in p.bands]
    groups: dict[str, list[Band]] = {}
    for b in first:
        groups.setdefault(b.color or "#999", []).append(b)
    spans = [(span, colour) for colour, g in groups.items() for span in _merged(g, x_max)]
    for (x0, x1), colour in spans:
        shapes.append(
            {
                "type": "rect",
                "xref": "x",
                "yref": "paper",
                "x0": x0,
                "x1": x1,
                "y0": 0,
                "y1": 1,
                "fillcolor": colour,
                "opacity": 0.22,
                "line": {"width": 0},
                "layer": "below",
            }
        )
    for mark in plots[0].marks if plots else ():
        shapes.append(
            {
                "type": "line",
                "xref": "x",
                "yref": "paper",
                "x0": mark.x,
                "x1": mark.x,
                "y0": 0,
                "y1": 1,
                "line": {"color": "#7a5195", "width": 0.8, "dash": "dot"},
            }
        )
        annotations.append(
            {
                "text": html.escape(mark.label),
                "xref": "x",
                "yref": "paper",
                "x": mark.x,
                "y": 1,
                "yanchor": "bottom",
                "showarrow": False,
                "font": {"size": 9, "color": "#7a5195"},
            }
        )
    subtitle = (
        "drag to zoom (all panels follow), double-click to reset; click a legend entry to hide it"
    )
    for colour, group in groups.items():
        what = "checkpoints" if colour == "#999" else group[0].label
        subtitle += f"; {COLOUR_NAMES.get(colour, 'shaded')}: {what}"
    layout["title"] = {
        "text": f"<b>{html.escape(title)}</b>",
        "xref": "paper",
        "x": 0,
        "xanchor": "left",
        "yref": "container",
        "y": 1,
        "yanchor": "top",
        "pad": {"t": 12},
        "font": {"size": 15},
    }
    inner = int(str(layout["height"])) - 95 - 50  # the plotting area's height in pixels
    annotations.append(
        {
            "text": subtitle,
            "xref": "paper",
            "yref": "paper",
            "x": 0,
            "y": 1 + 48 / inner,
            "xanchor": "left",
            "yanchor": "bottom",
            "showarrow": False,
            "font": {"size": 11, "color": "#555"},
        }
    )
    layout["annotations"] = annotations
    layout["shapes"] = shapes
    return {"data": data, "layout": layout}


def figure_json(fig: dict[str, object]) -> str:
    """A figure as compact JSON (what :func:`block` embeds; ``iolab serve``'s live timeline
    sends it), its series in the short form :data:`SCRIPT` expands."""
    return _dump(fig)


def block(
    ident: str, plots: Sequence[Plot], x_max: float, title: str, max_points: int = MAX_POINTS
) -> str:
    """A timeline as an HTML box and its figure as JSON, drawn by :data:`SCRIPT`."""
    fig = figure(plots, x_max, title, max_points)
    height = fig["layout"]["height"] if isinstance(fig["layout"], dict) else 400
    return (
        f"<div class='iplot' data-fig='{ident}' style='height:{height}px'></div>"
        f"<script type='application/json' id='{ident}'>{_dump(fig)}</script>"
    )


def fetched(ident: str, src: str, panels: int) -> str:
    """A timeline box whose figure (:func:`figure_json`) :data:`SCRIPT` fetches from ``src``
    when the box nears the screen: ``iolab serve``'s pages, which then need not build every
    figure before the first byte."""
    return (
        f"<div class='iplot' data-fig='{ident}' data-src='{html.escape(src, quote=True)}' "
        f"style='height:{height(panels)}px'></div>"
    )


# Draws each box as it comes near the screen (its figure in the page, or fetched from its
# data-src), and all of them before printing. In a file's page it sits in a <script>;
# ``iolab serve`` serves it as a file (/static/timelines.js), as its policy runs no inline script.
JS = """(function(){
var config={responsive:true,displaylogo:false,toImageButtonOptions:{format:'png',scale:2},
modeBarButtonsToAdd:[{name:'Download plot as SVG',icon:Plotly.Icons.disk,click:function(gd){
Plotly.downloadImage(gd,{format:'svg',filename:gd.dataset.fig});}}]};
function plot(el,f){
f.data.forEach(function(t){if(t.xlast===undefined)return;var n=t.y.length,x=new Array(n);
for(var i=0;i<n-1;i++)x[i]=t.x0+i*t.dx;x[n-1]=t.xlast;t.x=x;
delete t.x0;delete t.dx;delete t.xlast;});
Plotly.newPlot(el,f.data,f.layout,config);}
function draw(el){if(el.dataset.drawn)return;el.dataset.drawn='1';
if(el.dataset.src){fetch(el.dataset.src,{credentials:'same-origin'}).then(function(r){
if(!r.ok)throw new Error(r.status);return r.json();}).then(function(f){plot(el,f);})
.catch(function(e){el.textContent='the timeline could not be loaded ('+e.message+')';});
return;}
plot(el,JSON.parse(document.getElementById(el.dataset.fig).textContent));}
var boxes=Array.prototype.slice.call(document.querySelectorAll('.iplot'));
if('IntersectionObserver' in window){var seen=new IntersectionObserver(function(es){
es.forEach(function(e){if(e.isIntersecting){seen.unobserve(e.target);draw(e.target);}});},
{rootMargin:'600px'});boxes.forEach(function(b){seen.observe(b);});}
else{boxes.forEach(draw);}
window.addEventListener('beforeprint',function(){boxes.forEach(draw);});
})();"""
SCRIPT = f"<script>{JS}</script>"


def head(at: str | None = None) -> str:
    """What a page with interactive timelines carries once: Plotly's JavaScript, in the page,
    or with ``at`` (where a server serves its scripts: ``iolab serve``'s /static) by
    reference."""
    if at is not None:
        return f"<script src='{at}/plotly.min.js'></script>"
    return f"<script>{plotly_js()}</script>"


def script(at: str | None = None) -> str:
    """:data:`JS` in the page, or with ``at`` by reference (``at``/timelines.js)."""
    return SCRIPT if at is None else f"<script src='{at}/timelines.js'></script>"
