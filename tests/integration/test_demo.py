"""Issue 47, item 1: `iolab demo` prints its headline and one layout finding with its why on one
screen, `--details` prints every table, and its report shows the first chart on the first
screen. Small sizes: the shape is what is checked, not the machine's figures."""

from __future__ import annotations

import math
import re
import shutil
from pathlib import Path

import pytest

from tests.integration.test_populate_cli import iolab
from tests.integration.test_report_html import CHROMIUM, first_chart_on_the_first_screen

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed"),
]
NUMBER = r"[0-9][0-9,]*(?:\.[0-9]+)?"
SCREEN = 30  # lines of 100 columns
HEADLINE = [
    rf"sequential 1 MiB, queue 8 +read +{NUMBER} MB/s +write +{NUMBER} MB/s",
    rf"random 4 KiB, queue 1 +read +{NUMBER} IOPS +write +{NUMBER} IOPS",
    rf"commits \(8 KiB \+ fdatasync\) +{NUMBER} /s +fdatasync p99 {NUMBER} ms",
]


def screen_lines(text: str, width: int = 100) -> int:
    return sum(max(1, math.ceil(len(line) / width)) for line in text.splitlines())


def test_the_demo_fits_one_screen_with_its_headline_and_one_finding(
    open_tmp: Path, results_db: Path
) -> None:
    page = open_tmp / "report.html"
    done = iolab("demo", "--rows", "800", "--html", str(page), cwd=open_tmp)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert screen_lines(out) <= SCREEN, out
    for pattern in HEADLINE:
        assert re.search(pattern, out), (pattern, out)
    assert "Where PostgreSQL's WAL goes: beside the data, or " in out
    cells = re.findall(
        rf"^  WAL (?:beside the data|on a 7,200 rpm disk|in memory) +{NUMBER} s", out, re.M
    )
    assert len(cells) == 2, out
    findings = [
        line
        for line in out.splitlines()
        if line.startswith("  → ") or "no significant difference between the layouts" in line
    ]
    assert len(findings) == 1, out
    if findings[0].startswith("  → "):  # a significant finding comes with its why
        assert re.search(r"x (faster|slower) than WAL", findings[0]), out
        assert re.search(r"^    why: ", out, re.M), out
    assert "iolab demo --details" in out
    assert f"charts: {page}" in out
    # the commands' own tables and progress stay behind: three steps on stderr
    assert "┏" not in out, out
    assert len(done.stderr.splitlines()) <= 6, done.stderr
    assert list(p.name for p in open_tmp.iterdir()) == ["report.html"]
    if CHROMIUM is not None:
        first_chart_on_the_first_screen(page)


def test_details_prints_every_table(open_tmp: Path, results_db: Path) -> None:
    page = open_tmp / "report.html"
    done = iolab(
        "demo", "--details", "--skip-disk", "--rows", "200", "--html", str(page), cwd=open_tmp
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    for part in ("2. Where PostgreSQL's WAL goes", "3. the findings", "mean elapsed s", "Why"):
        assert part in out, (part, out)
    assert "provisioning postgres" in done.stderr  # the commands' progress, as they print it
    assert "every table and comparison: iolab demo --details" in out  # the screen comes last
