"""SVG to PNG through a headless Chromium: the browser draws iolab's own SVG, so the PNG is the
picture the HTML shows (no second drawing library)."""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

from iolab.errors import MissingTool, RunFailed
from iolab.process import run
from iolab.report.signature import sign_png

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")
_SIZE = re.compile(r'<svg[^>]*\swidth="(\d+)"[^>]*\sheight="(\d+)"')


def browser() -> str:
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    raise MissingTool(
        "chromium",
        "PNG output draws the SVG in a headless browser: apt-get install chromium, "
        "or write .html instead",
    )


def svg_to_png(svg: str) -> bytes:
    """The PNG of ``svg`` as Chromium draws it, marked as iolab's (:func:`sign_png`); the
    caller writes it where it goes."""
    m = _SIZE.search(svg)
    if m is None:
        raise RunFailed("the SVG has no width and height")
    width, height = int(m.group(1)), int(m.group(2))
    program = browser()
    with tempfile.TemporaryDirectory(prefix="iolab-png-") as scratch:
        page = Path(scratch) / "timeline.svg"
        page.write_text(svg)
        shot = Path(scratch) / "timeline.png"
        run(
            [
                program,
                "--headless",
                "--no-sandbox",  # root cannot use the sandbox; the page is iolab's own SVG
                "--disable-gpu",
                "--hide-scrollbars",
                "--no-first-run",  # and no traffic of its own: it only draws a local file
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                f"--user-data-dir={scratch}/profile",
                f"--window-size={width},{height}",
                f"--screenshot={shot}",
                page.as_uri(),
            ],
            timeout=120,
            env={"PATH": "/usr/bin:/bin", "HOME": scratch},
        )
        if not shot.exists() or shot.stat().st_size == 0:
            raise RunFailed(f"{Path(program).name} wrote no screenshot")
        return sign_png(shot.read_bytes())
