"""The HTML report in a real headless Chromium: it renders, the charts have data, the findings
are there; a screenshot is kept in test-artifacts/."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.conftest import make_dirs
from tests.integration.test_populate_cli import iolab

pytestmark = pytest.mark.integration
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
CHROMIUM = next(
    (shutil.which(n) for n in ("chromium", "chromium-browser") if shutil.which(n)), None
)


def chromium(*args: str) -> subprocess.CompletedProcess[str]:
    """Headless Chromium with a profile of its own, removed after: it leaves nothing in ~."""
    assert CHROMIUM is not None
    with tempfile.TemporaryDirectory(prefix="iolab-test-chromium-") as home:
        return subprocess.run(
            [
                CHROMIUM,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                f"--user-data-dir={home}/profile",
                "--enable-logging=stderr",
                "--v=0",
                *args,
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env={**os.environ, "HOME": home},
        )


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_report_html_renders_with_charts_findings_and_timelines(
    open_tmp: Path, results_db: Path
) -> None:
    make_dirs(open_tmp, "a", "b")
    exp = open_tmp / "exp.toml"
    exp.write_text(
        """
[experiment]
name = "html"
repetitions = 2
baseline = { layout = "one", connections = 2 }
baseline_every = 2
[workload]
kind = "populate"
engine = "sqlite"
rows = 3000
[layouts.one]
data_dirs = ["a"]
[layouts.two]
data_dirs = ["a", "b"]
files = 2
[isolation]
settle_seconds = 0
drop_caches = false
[matrix]
layout = ["one", "two"]
connections = [2, 4]
"""
    )
    # the device's sequential write, for the efficiency section
    quick = ["--size", "16MiB", "--runs", "1", "--duration", "1", "--interval", "0"]
    disk = iolab("disk", str(open_tmp / "a"), "--profile", "real", *quick, "--json")
    assert disk.returncode == 0, disk.stderr
    assert iolab("run", str(exp)).returncode == 0
    page = open_tmp / "report.html"
    done = iolab("report", str(exp), "--html", str(page))
    assert done.returncode == 0, done.stderr
    assert "of its sequential write" in done.stdout  # the best cell's efficiency
    assert "baseline layout=one connections=2" in done.stdout  # its drift, either verdict
    report = json.loads(iolab("report", str(exp), "--json").stdout)
    eff = report["efficiency"]
    assert {e["cell"] for e in eff} == {c["label"] for c in report["cells"]}
    for e in eff:
        assert e["limit_test"] == "SEQ1M Q1T1 write" and e["limit_disk_run"] == 1
        assert e["write_mb_per_second"] > 0
        assert e["share"] == pytest.approx(e["write_mb_per_second"] / e["limit_mb_per_second"])
    drift = report["drift"]
    assert drift["cell"] == "layout=one connections=2"
    assert len(drift["values"]) >= 3 and drift["hours"][0] == 0.0
    baseline_runs = next(c for c in report["cells"] if c["label"] == drift["cell"])["runs"]
    assert sorted(drift["values"]) == sorted(baseline_runs)
    # the disk profile as CrystalDiskMark shows it; every chart as PNG and SVG for slides
    slides, with_disk = open_tmp / "slides", open_tmp / "with-disk.html"
    done = iolab("report", str(exp), "--with-disk", "1", "--html", str(with_disk), "--png",
                 str(slides))  # fmt: skip
    assert done.returncode == 0, done.stderr
    text = with_disk.read_text()
    assert "<table class='cdm'>" in text and "<th class='test'>SEQ1M Q1T1</th>" in text
    assert "XMLSerializer" in text  # each static chart gets its save: SVG / PNG links
    pngs = sorted(slides.glob("*.png"))
    static = text.count('<svg xmlns="http://www.w3.org/2000/svg"')
    assert len(pngs) == static  # the page's charts, the four cells' timelines among them
    assert len(re.findall(r"<title>[^<]* · run \d+</title>", text)) == 4
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    assert sorted(p.stem for p in slides.glob("*.svg")) == [p.stem for p in pngs]
    assert pngs[0].name.startswith("01-elapsed-seconds")
    again = iolab("report", str(exp), "--png", str(slides))
    assert again.returncode == 2 and "give an empty or new directory" in again.stderr
    by = open_tmp / "by.html"
    assert iolab("report", str(exp), "--html", str(by), "--chart-by", "connections").returncode == 0
    assert ">elapsed_seconds by connections and layout</text>" in by.read_text()
    bad = iolab("report", str(exp), "--html", str(by), "--chart-by", "files")
    assert (
        bad.returncode == 2 and "--chart-by" in bad.stderr and "layout, connections" in bad.stderr
    )
    every = open_tmp / "every.html"
    assert iolab("report", str(exp), "--html", str(every), "--timelines", "all").returncode == 0
    done_runs = sum(len(c["runs"]) for c in report["cells"])
    assert len(re.findall(r"<h3>[^<]* · run \d+</h3>", every.read_text())) == done_runs
    assert "Runs underneath (every run)" in every.read_text()
    text = page.read_text()
    # self-contained and small: no script from anywhere, no Plotly (4.8 MB): the timelines are
    # SVG, each series thinned to at most MAX_POINTS points
    assert not re.search(r"<script[^>]*src=", text) and "plotly" not in text.lower()
    assert not re.search(r"""(src|href)=["']?https?:""", text)
    assert len(text.encode()) < 1_000_000
    # the interactive timeline, every sample: `iolab timeline RUN -o FILE.html`; sampled at
    # 10 Hz, a run of a second or two is a line of many points, not a dot
    run = re.search(r"<h3>[^<]* · run (\d+)</h3>", text)
    assert run is not None
    one = open_tmp / f"run-{run[1]}.html"
    assert iolab("timeline", run[1], "-o", str(one)).returncode == 0
    figures = re.findall(
        r"<script type='application/json' id='(timeline-\d+)'>(.*?)</script>", one.read_text()
    )
    assert len(figures) == 1
    throughput = json.loads(figures[0][1])["data"][0]
    # a line, not a dot: as many points as tenths of a second the run lasted (a fast machine
    # loads 3,000 rows in well under a second)
    assert throughput["name"] == "rows committed/s" and len(throughput["y"]) >= 4
    assert throughput["dx"] == pytest.approx(0.1)  # the page's script makes x of x0, dx, xlast
    span = (throughput["xlast"] - throughput["x0"]) / throughput["dx"]
    assert len(throughput["y"]) == pytest.approx(span + 1, abs=1)

    dom = chromium("--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert "CONSOLE" not in dom.stderr and "Uncaught" not in dom.stderr
    html = dom.stdout
    assert "Findings" in html and "best: " in html
    assert re.search(r"layout=(one|two) connections=\d was \d|no significant difference", html)
    charts = re.findall(r"<svg.*?</svg>", html, re.S)
    assert len(charts) >= 4  # the grouped chart, the speed-ups, the drift, and timelines
    assert ">elapsed_seconds by layout and connections</text>" in charts[0]
    bars = re.findall(r"<rect[^>]*fill=\"#[0-9a-f]{6}\"", charts[0])
    assert len(bars) >= 4 + 2  # one bar per cell, each with data, and the legend's two swatches
    assert ">connections</text>" in charts[0] and ">4</text>" in charts[0]  # the legend
    assert "elapsed_seconds (s)" in charts[0]  # the axis says its unit
    assert "speed-up against layout=one connections=2" in charts[1] and ">base<" in charts[1]
    assert "One bar: one cell, the mean elapsed_seconds of its" in html
    assert html.count("Runs underneath (the median run of each cell)") == 1
    assert len(re.findall(r"<h3>[^<]* · run \d+</h3>", html)) == 4  # one per cell
    assert "rows/s" in html  # the timelines' throughput series
    assert "environment of the first run" in html
    assert "Efficiency against the device" in html and "SEQ1M Q1T1 write, disk run 1" in html
    assert "drift of the baseline layout=one connections=2" in html

    first_chart_on_the_first_screen(page)
    zoom_and_hover(one)

    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "report.png"
    taken = chromium(f"--screenshot={shot}", "--window-size=1200,3000", page.as_uri())
    assert taken.returncode == 0, taken.stderr[-2000:]
    assert shot.stat().st_size > 20_000


# Where the first chart's top is on the page, and the width the first row of charts takes
FIRST_CHART = """() => {
  const svg = document.querySelector('#charts svg');
  const row = [...document.querySelectorAll('#charts figure')]
    .filter(f => f.getBoundingClientRect().top === svg.parentNode.getBoundingClientRect().top);
  const width = row.reduce((w, f) => w + f.getBoundingClientRect().width, 0);
  return {top: svg.getBoundingClientRect().top + scrollY, row: width,
          main: document.querySelector('main').getBoundingClientRect().width};
}"""


def first_chart_on_the_first_screen(page: Path) -> None:
    """Issue 47: in a 1280x800 window the first chart starts within the first 1,200 px (it
    was about 2,000 px down, after the findings, warnings and the Why), and the first row of
    charts takes most of the page's width (each took 40 %)."""
    from playwright.sync_api import sync_playwright

    assert CHROMIUM is not None
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            tab = browser.new_page(viewport={"width": 1280, "height": 800})
            errors: list[str] = []
            tab.on("pageerror", lambda e: errors.append(str(e)))
            tab.goto(page.as_uri())
            found = tab.evaluate(FIRST_CHART)
            assert 0 < found["top"] < 1200, found
            assert found["row"] > 0.9 * found["main"], found
            assert not errors, errors
        finally:
            browser.close()


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_the_first_chart_of_a_report_is_on_the_first_screen(tmp_path: Path) -> None:
    """A report of a small experiment (four cells of three 5-second runs with their probes,
    stored as the runner stores them) in a 1280x800 window."""
    from iolab import report
    from iolab.report import html as html_report
    from iolab.store import open_store
    from tests.unit.test_report_page import seed

    with open_store(tmp_path / "results.db") as store:
        seed(store, 5.0)
        built = report.build(store, "layouts", timelines="median")
    page = tmp_path / "report.html"
    page.write_text(html_report.report_page(built, "now"))
    first_chart_on_the_first_screen(page)


def zoom_and_hover(page: Path) -> None:
    """A timeline in a real browser (Playwright driving Debian's Chromium, no network): drawn
    when scrolled to, a drag on one panel zooms every panel's time axis, the mouse reads a
    value, a legend entry hides its series."""
    from playwright.sync_api import sync_playwright

    assert CHROMIUM is not None
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            tab = browser.new_page(viewport={"width": 1200, "height": 900})
            errors: list[str] = []
            asked: list[str] = []
            tab.on("pageerror", lambda e: errors.append(str(e)))
            tab.on("request", lambda r: asked.append(r.url))
            tab.goto(page.as_uri())
            box = tab.locator(".iplot").first
            box.scroll_into_view_if_needed()
            tab.wait_for_selector(".iplot .main-svg")
            full = box.evaluate("g => g._fullLayout.xaxis.range.slice()")
            xs = box.evaluate("g => g.data[0].x")  # made by the page's script of x0, dx, xlast
            assert len(xs) >= 4 and xs == sorted(xs) and xs[-1] <= full[1] + 1e-9
            panel = box.locator(".nsewdrag").first  # the first panel's plotting area
            panel.scroll_into_view_if_needed()
            drag = panel.bounding_box()
            assert drag is not None
            y = drag["y"] + drag["height"] / 2
            tab.mouse.move(drag["x"] + drag["width"] * 0.3, y)
            tab.mouse.down()
            tab.mouse.move(drag["x"] + drag["width"] * 0.5, y, steps=8)
            tab.mouse.up()
            tab.wait_for_timeout(500)
            ranges = box.evaluate(
                "g => Object.keys(g._fullLayout).filter(k => /^xaxis\\d*$/.test(k))"
                ".map(k => g._fullLayout[k].range.slice())"
            )
            assert len(ranges) >= 4  # throughput, pages, device MB/s, latency, ...
            zoomed = ranges[0]
            assert zoomed[1] - zoomed[0] < (full[1] - full[0]) * 0.5
            assert all(r == pytest.approx(zoomed) for r in ranges)  # every panel followed
            tab.mouse.move(drag["x"] + drag["width"] * 0.4, y)
            hover = tab.wait_for_selector(
                ".iplot .hoverlayer .legend, .iplot .hoverlayer .hovertext"
            )
            assert hover is not None
            said = hover.text_content() or ""
            assert re.search(r"rows committed/s", said) and re.search(r"\d", said), said
            box.locator(".legend .traces .legendtoggle").first.click()
            tab.wait_for_timeout(800)  # Plotly waits to tell a click from a double click
            assert box.evaluate("g => g.data[0].visible") == "legendonly"
            assert not errors, errors
            assert all(u.startswith("file:") or u.startswith("data:") for u in asked), asked
        finally:
            browser.close()
