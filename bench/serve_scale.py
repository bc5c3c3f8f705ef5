"""Does ``iolab serve`` stay fast on a big results database? bench/report_scale.py's 1,000 runs.

Issue 19 asks that the experiments list and an experiment's page of ``bench/report_scale.py``'s
fixture (one populate experiment on PostgreSQL: 50 cells x 20 runs of 10 minutes, 1 s samples,
54 to 70 series per run) render in under 1 s each.

The fixture (not timed) is built by report_scale.py's own code in a fresh temporary directory
under ``/var/tmp`` (removed at the end, on Ctrl-C and errors too). Then ``iolab serve`` (the
installed CLI) is started on 127.0.0.1, a free port, and these pages are fetched over HTTP,
whole, ``--rounds`` times each in turn: ``/`` (the experiments list), ``/experiments/1`` (the
report page with its 50 median-run timelines: once as built, with a fresh server each round,
then again from the server's page cache; the page holds each timeline's box, and its figure is
fetched as the box nears the screen), the first timeline's figure as the page fetches it
(``/runs/N/figure.json``), ``/runs/N`` (one run's page) and
``/runs/N/timeline.json`` (what a live page polls every second). Beside them, as the peer
measured in the same run, ``iolab report EXP --html FILE`` (the same page written to a file
by the CLI, Python start-up included): the ratio says how the served page compares. Printed:
each page's median seconds and size, PASS when the list and the experiment page are under 1 s.
Checked: the list names the experiment with its 50 cells and 1,000 runs done, the experiment
page has a timeline per cell. Exits 0 whatever the verdict (2 on bad input, 1 when it could
not run).

    .venv/bin/python bench/serve_scale.py [--repetitions 20] [--rounds 5] [--json]
"""

from __future__ import annotations

import argparse
import html
import json
import re
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from compare import mark
from harness import one_line, scratch_dir
from iolab.errors import BadInput, IolabError
from report_scale import CONNECTIONS, FILES, LAYOUTS, NAME, build, progress

TARGET_SECONDS = 1.0
IOLAB = [sys.executable, "-m", "iolab"]
LIST = "experiments list (/)"
BUILT = "experiment page, built (/experiments/1)"
CACHED = "experiment page, again (cached)"
FIGURE = "a timeline's figure (/runs/N/figure.json)"


def fetch(url: str) -> tuple[float, bytes]:
    start = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as response:
        body = response.read()
    return time.perf_counter() - start, body


def serve(db: Path) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [*IOLAB, "serve", "--results", str(db), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    found = re.search(r"http://\S+/", proc.stdout.readline())
    if found is None:
        proc.kill()
        raise IolabError(f"iolab serve did not start: {proc.stderr.read() if proc.stderr else ''}")
    return proc, found.group(0)


def measure(base: Path, db: Path, runs: int, cells: int, rounds: int) -> dict[str, Any]:
    """Each round: a fresh server (so the experiment page is built, not taken from its cache),
    every page fetched once, the experiment page twice (built, then cached); then the peer."""
    paths = {
        LIST: "",
        BUILT: "experiments/1",
        CACHED: "experiments/1",
        "run page (/runs/500)": "runs/500",
        "live timeline (/runs/500/timeline.json)": "runs/500/timeline.json",
    }
    seconds: dict[str, list[float]] = {name: [] for name in [*paths, FIGURE]}
    sizes: dict[str, int] = {}
    bodies: dict[str, str] = {}
    cli: list[float] = []
    for _ in range(rounds):
        proc, url = serve(db)
        try:
            fetch(url + "static/plotly.min.js")  # once, as a browser caches it
            for name, path in paths.items():
                took, body = fetch(url + path)
                seconds[name].append(took)
                sizes[name], bodies[name] = len(body), body.decode()
            src = re.search(r"data-src='([^']+)'", bodies[BUILT])  # the first timeline's figure
            if src is None:
                raise IolabError("the experiment page fetches no timeline figure")
            took, body = fetch(url + html.unescape(src[1]).lstrip("/"))
            seconds[FIGURE].append(took)
            sizes[FIGURE] = len(body)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        out = base / "report.html"
        out.unlink(missing_ok=True)
        start = time.perf_counter()
        done = subprocess.run(
            [*IOLAB, "report", NAME, "--results", str(db), "--html", str(out)],
            capture_output=True,
            text=True,
            check=False,
        )
        cli.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise IolabError(f"iolab report --html exited {done.returncode}: {done.stderr}")
    listing = bodies[LIST]
    row = f">{NAME}</a></td><td>experiment</td><td>populate</td><td>postgres</td>"
    if row not in listing or f"<td>{cells}</td><td>{runs}</td>" not in listing:
        raise IolabError("the experiments list does not show the fixture's cells and runs")
    timelines = bodies[BUILT].count("class='iplot'")
    if timelines != cells or bodies[CACHED] != bodies[BUILT]:
        raise IolabError(f"the experiment page has {timelines} timelines, expected {cells}")
    return {
        "pages": {
            name: {"median_s": statistics.median(s), "seconds": s, "bytes": sizes[name]}
            for name, s in seconds.items()
        },
        "report_html_cli": {"median_s": statistics.median(cli), "seconds": cli},
    }


def render(result: dict[str, Any], runs: int, cells: int, rounds: int) -> str:
    pages = result["pages"]
    cli = result["report_html_cli"]["median_s"]
    lines = [f"iolab serve on {runs:,} runs in {cells} cells; medians of {rounds}:"]
    for name, p in pages.items():
        gated = name in (LIST, BUILT)
        verdict = (
            f"  {mark(p['median_s'] < TARGET_SECONDS)} (< {TARGET_SECONDS:g} s)" if gated else ""
        )
        lines.append(f"  {name:42} {p['median_s']:6.3f} s  {p['bytes'] / 1e6:6.2f} MB{verdict}")
    page = pages[BUILT]["median_s"]
    lines.append(f"  {'peer: iolab report EXP --html FILE':42} {cli:6.3f} s")
    lines.append(f"  experiment page / report --html: {page / cli:.2f}")
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="time iolab serve's pages on 1,000 runs")
    parser.add_argument("--repetitions", type=int, default=20, help="runs per cell (20: 1,000)")
    parser.add_argument("--rounds", type=int, default=5, help="fetches of each page (5)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    return parser.parse_args(argv)


@one_line
def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.repetitions < 1:
        raise BadInput("--repetitions", args.repetitions, "give at least 1")
    if args.rounds < 1:
        raise BadInput("--rounds", args.rounds, "give at least 1 round")
    with scratch_dir("iolab-bench-serve-") as base:
        progress(f"building report_scale.py's experiment in {base} (not timed)")
        db, runs = build(base, args.repetitions, 600.0, 1.0)
        cells = len(LAYOUTS) * len(FILES) * len(CONNECTIONS)
        result = measure(base, db, runs, cells, args.rounds)
    if args.json:
        print(json.dumps({"runs": runs, "cells": cells, "rounds": args.rounds, **result}, indent=2))
    else:
        print(render(result, runs, cells, args.rounds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
