"""The percentile-spectrum chart of a real experiment: PostgreSQL populating with its WAL in
two directories, and `iolab disk`'s commit test on the WAL's device in the same results
database; the HTML report draws both cells' commit latency and fio's fdatasync latency."""

from __future__ import annotations

import html
import json
import math
import re
import shutil
from pathlib import Path

import pytest
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader

from iolab.latency.histogram import Histogram
from iolab.results import RunId
from iolab.store import open_store
from tests.conftest import make_dirs
from tests.integration.test_populate_cli import iolab
from tests.integration.test_report_html import ARTIFACTS, CHROMIUM, chromium

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed"),
]
QUICK = ["--size", "16MiB", "--runs", "1", "--duration", "1", "--interval", "0"]
COMMIT_TEST = "COMMIT8K Q1T1 fdatasync"


def test_report_draws_each_cells_commit_spectrum_beside_the_devices_fdatasync(
    open_tmp: Path, results_db: Path
) -> None:
    make_dirs(open_tmp, "data", "wal1", "wal2")
    exp = open_tmp / "exp.toml"
    exp.write_text(
        """
[experiment]
name = "two-wal"
repetitions = 2
[workload]
kind = "populate"
engine = "postgres"
rows = 1500
connections = 2
commit_every = 10
[layouts.w1]
data_dirs = ["data"]
wal_dir = "wal1"
[layouts.w2]
data_dirs = ["data"]
wal_dir = "wal2"
[isolation]
settle_seconds = 0
drop_caches = false
[matrix]
layout = ["w1", "w2"]
"""
    )
    ran = iolab("run", str(exp), "--json")
    assert ran.returncode == 0, ran.stderr
    page = open_tmp / "before.html"
    done = iolab("report", str(exp), "--html", str(page))
    assert done.returncode == 0, done.stderr
    text = page.read_text()
    assert "commit latency by percentile" in text
    device = re.search(r"measured the commit test on (\S+?):", text)
    assert device is not None  # no disk run yet: the caption says how to add one
    assert "<code>iolab disk --profile db DIR</code> with DIR on " + device[1] in text
    assert "fio commit test on" not in text

    disk = iolab("disk", str(open_tmp / "wal1"), "--profile", "db", *QUICK, "--json")
    assert disk.returncode == 0, disk.stderr
    disk_run = json.loads(disk.stdout)["run"]
    assert iolab("report", str(exp), "--html", str(page)).returncode == 0
    text = html.unescape(page.read_text())
    assert "measured the commit test on" not in text
    spectrum = text[text.index("<section id='spectrum'>") :]
    spectrum = spectrum[: spectrum.index("</section>")]
    charts = re.findall(r"<svg.*?</svg>", spectrum, re.S)
    titles = [re.search(r"<title>([^<]*)</title>", c)[1] for c in charts]  # type: ignore[index]
    assert titles == ["commit latency by percentile", "statement latency by percentile"]
    commit = charts[0]
    for label in ("0", "90", "99", "99.9", "99.99", "99.999"):
        assert f">{label}</text>" in commit

    runs = json.loads(iolab("results", "list", "--json").stdout)
    with open_store(results_db, create=False) as store:
        for layout in ("w1", "w2"):
            mine = [
                r
                for r in runs
                if r["workload"] == "populate"
                and r["params"]["layout"] == layout
                and r["status"] == "done"
            ]
            assert len(mine) == 2
            # every commit of the cell's two runs, as their summaries count them
            commits = sum(r["summary"]["latency"]["commit"]["count"] for r in mine)
            assert commits == 2 * 1500 // 10
            parts = [store.latency(RunId(r["id"])) for r in mine]
            merged = Histogram.merged(p.merged()["commit"] for p in parts if p is not None)
            p99 = merged.percentile(99.0) / 1000
            legend = f"layout={layout}: 2 runs, {commits:,} commits, p99 {p99:.3g} ms"
            assert legend in commit
        synced = [s for s in store.sync_histograms(RunId(disk_run)) if s.test == COMMIT_TEST]
    assert [s.pass_no for s in synced] == [0, 1]  # the warm-up pass and the measured one
    measured = synced[1].histogram
    shown = json.loads(iolab("results", "show", str(disk_run), "--json").stdout)
    fio_pass = next(
        p for p in shown["disk"]["passes"] if p["test"] == COMMIT_TEST and not p["discarded"]
    )
    # fio's own p99 of the pass's fdatasyncs (the value of rank ceil(99% of the count)), read
    # again from its bins as stored (rounded to microseconds, HdrHistogram's buckets)
    rank = math.ceil(0.99 * measured.total)
    again = measured.percentile(100.0 * rank / measured.total)
    assert again == pytest.approx(fio_pass["sync"]["p99"], rel=0.002, abs=1)
    assert (
        f"fio commit test on {device[1]} (run {disk_run}): 1 pass, "
        f"{measured.total:,} fdatasyncs, p99 {measured.percentile(99.0) / 1000:.3g} ms"
    ) in commit
    assert commit.count('stroke-dasharray="6 4"') == 2  # the dashed line and its legend
    assert "The dashed line is the device holding the WAL" in spectrum
    statement = charts[1]
    assert "fio commit test" not in statement

    if CHROMIUM is None:
        return  # the HTML is checked above; a browser, where there is one, renders it
    dom = chromium("--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert "Latency by percentile" in dom.stdout
    assert f"fio commit test on {device[1]} (run {disk_run})" in html.unescape(dom.stdout)
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "spectrum.png"
    taken = chromium(f"--screenshot={shot}", "--window-size=1200,4000", page.as_uri())
    assert taken.returncode == 0, taken.stderr[-2000:]
    assert shot.stat().st_size > 20_000

    # the same numbers in `iolab report --json`: per kind, each cell's runs merged, and the
    # device's commit test beside the commit latencies
    doc = json.loads(iolab("report", str(exp), "--json").stdout)
    kinds = {k["kind"]: k for k in doc["latency"]}
    assert sorted(kinds) == ["commit", "statement"]
    commits_json = {c["cell"]: c for c in kinds["commit"]["cells"]}
    assert sorted(commits_json) == ["layout=w1", "layout=w2"]
    for cell in commits_json.values():
        assert (cell["runs"], cell["count"]) == (2, 2 * 1500 // 10)
        assert cell["p50_us"] <= cell["p99_us"] <= cell["max_us"]
    (test,) = kinds["commit"]["commit_tests"]
    assert (test["disk_run"], test["passes"], test["count"]) == (disk_run, 1, measured.total)
    assert test["p99_us"] == measured.percentile(99.0)
    assert kinds["commit"]["untested_wal_devices"] == []
    assert kinds["statement"]["commit_tests"] == []

    # and in `iolab export --histograms`: the disk run's commit test as an interval log, a
    # line per pass (the warm-up pass tagged), read back by HdrHistogram's reader
    (listed,) = [r for r in runs if r["id"] == disk_run]
    out = open_tmp / "hist"
    done = iolab("export", listed["experiment"], "--histograms", str(out))
    assert done.returncode == 0, done.stderr
    log = out / f"run-{disk_run}-{COMMIT_TEST}-fdatasync.hlog"
    assert log.name in [p.name for p in out.iterdir()]
    total = HdrHistogram(1, 3_600_000_000, 3)
    reader = HistogramLogReader(str(log), total)
    tags = []
    while (h := reader.get_next_interval_histogram()) is not None:
        tags.append(h.get_tag())
        if h.get_tag() is None:
            total.add(h)
    assert tags == ["warmup", None]
    assert total.get_total_count() == measured.total
    assert total.get_value_at_percentile(99.0) == pytest.approx(measured.percentile(99.0), rel=0.01)
