"""What an experiment is judged by follows what it fixed (``judged`` of
workloads/interface.py): a timed load (``duration``) lasts its duration whatever the engine
does, so report, compare, export's reader `iolab run --json`, the HTML report and `iolab
serve`'s page rank it by rows/s, and refuse the times it holds constant; an offered load
(``rate``) by its commits' p99 latency, refusing its rows/s. Real SQLite runs of 1 s."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from iolab.results import ExperimentId
from iolab.serve import app as serve_app
from iolab.store import open_store

pytestmark = pytest.mark.integration
IOLAB = [sys.executable, "-m", "iolab"]

TIMED = """
[experiment]
name = "{name}"
repetitions = 2
order = "sequential"

[workload]
kind = "populate"
engine = "sqlite"
duration = "1s"
{extra}

[layouts.a]
data_dirs = ["data"]

[matrix]
connections = [1, 4]

[isolation]
drop_caches = false
settle_seconds = 0
"""


def iolab(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*IOLAB, *args], capture_output=True, text=True, timeout=600, check=False, cwd=cwd
    )


def held_line(metric: str, why: str, instead: str) -> str:
    return (
        f"error: --metric: '{metric}' is not allowed; the experiment holds it constant by design "
        f"({why}); give a number it measures, e.g. {instead}"
    )


def test_a_timed_experiment_is_ranked_by_rows_per_second(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    exp = tmp_path / "dur.toml"
    exp.write_text(TIMED.format(name="dur", extra=""))
    db = ["--results", str(tmp_path / "r.db")]
    ran = iolab("run", str(exp), "--json", *db, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["metric"] == "rows_per_second"

    rows = json.loads(iolab("export", "dur", "--format", "json", *db, cwd=tmp_path).stdout)
    assert {r["status"] for r in rows} == {"done"} and len(rows) == 4
    assert all(r["elapsed_seconds"] > 0.9 for r in rows), rows  # each lasted about 1 s
    by_cell: dict[int, list[float]] = {}
    for r in rows:
        by_cell.setdefault(r["connections"], []).append(r["rows_per_second"])
    means = {c: sum(v) / len(v) for c, v in by_cell.items()}
    best = max(means, key=lambda c: means[c])

    done = iolab("report", "dur", "--json", *db, cwd=tmp_path)
    doc = json.loads(done.stdout)
    assert (doc["metric"], doc["lower_is_better"], doc["best"]) == (
        "rows_per_second",
        False,
        f"connections={best}",
    )
    text = iolab("report", "dur", *db, cwd=tmp_path).stdout
    assert text.splitlines()[0] == "dur · rows_per_second (higher is better)"
    assert f"best: connections={best}: rows_per_second " in text

    why = "each run lasts its duration, 1 s"
    for metric in ("elapsed_seconds", "first_finished_seconds", "wall_seconds"):
        refused = iolab("report", "dur", "--metric", metric, *db, cwd=tmp_path)
        assert (refused.returncode, refused.stderr.strip()) == (
            2,
            held_line(metric, why, "rows_per_second"),
        )
    refused = iolab("compare", "1,2", "3,4", "--metric", "elapsed_seconds", *db, cwd=tmp_path)
    assert refused.stderr.strip() == held_line("elapsed_seconds", why, "rows_per_second")

    compared = iolab("compare", "dur:connections=1", "dur:connections=4", *db, cwd=tmp_path)
    assert compared.stdout.startswith(
        "rows_per_second (higher is better): dur connections=1: mean "
    )
    by_ids = iolab("compare", "1,2", "3,4", "--json", *db, cwd=tmp_path)
    assert json.loads(by_ids.stdout)["metric"] == "rows_per_second"

    page = tmp_path / "dur.html"
    assert iolab("report", "dur", "--html", str(page), *db, cwd=tmp_path).returncode == 0
    html = page.read_text()
    assert "rows_per_second" in html and "elapsed_seconds (" not in html

    with open_store(tmp_path / "r.db", create=False) as store:  # serve's experiment page
        served = serve_app._experiment_page(store, ExperimentId(1))
    assert f"connections={best}" in served
    assert "rows_per_second" in served and "elapsed_seconds (" not in served


def test_an_offered_load_is_judged_by_its_latency(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    exp = tmp_path / "rate.toml"
    exp.write_text(TIMED.format(name="rate", extra="rate = 40"))
    db = ["--results", str(tmp_path / "r.db")]
    assert iolab("run", str(exp), *db, cwd=tmp_path).returncode == 0
    doc = json.loads(iolab("report", "rate", "--json", *db, cwd=tmp_path).stdout)
    assert (doc["metric"], doc["lower_is_better"]) == ("latency.transaction.p99_us", True)
    refused = iolab("report", "rate", "--metric", "rows_per_second", *db, cwd=tmp_path)
    assert (refused.returncode, refused.stderr.strip()) == (
        2,
        held_line(
            "rows_per_second",
            "each run is offered 40 rows/s, its rate",
            "latency.transaction.p99_us",
        ),
    )
