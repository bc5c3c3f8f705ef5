"""`iolab run` / `iolab plan` on real engines: cells, repetitions, resume after SIGKILL,
failure policies, hooks; nothing left behind."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import make_dirs
from tests.integration.test_populate_cli import iolab, servers_of

pytestmark = pytest.mark.integration


def write(root: Path, text: str) -> Path:
    path = root / "exp.toml"
    path.write_text(text)
    return path


def statuses(db: Path) -> list[tuple[str, str]]:
    """(cell, status) of every run; none while the runner is still creating the database."""
    try:
        with sqlite3.connect(db) as conn:
            rows = conn.execute("SELECT cell_id, status FROM runs ORDER BY id").fetchall()
    except sqlite3.OperationalError:  # the schema is not there yet
        return []
    return [(str(c), str(s)) for c, s in rows]


def test_sqlite_and_postgres_cells_then_a_rerun_keeps_them(
    open_tmp: Path, results_db: Path
) -> None:
    make_dirs(open_tmp, "a", "b")
    exp = write(
        open_tmp,
        """
[experiment]
name = "two-engines"
repetitions = 2
[workload]
kind = "populate"
rows = 240
connections = 2
[layouts.one]
data_dirs = ["a"]
[layouts.two]
data_dirs = ["a", "b"]
files = 2
[isolation]
settle_seconds = 0
[matrix]
engine = ["sqlite", "postgres"]
layout = ["one", "two"]
""",
    )
    planned = json.loads(iolab("plan", str(exp), "--json").stdout)
    assert planned["runs"] == 8
    assert [c["label"] for c in planned["cells"]] == [
        "engine=sqlite layout=one",
        "engine=sqlite layout=two",
        "engine=postgres layout=one",
        "engine=postgres layout=two",
    ]
    assert not results_db.exists()  # plan writes nothing

    done = iolab("run", str(exp), "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert (doc["done"], doc["failed"], doc["kept"]) == (8, 0, 0)
    assert doc["metric"] == "elapsed_seconds"
    for cell in doc["cells"]:
        assert cell["runs"] == {"done": 2}
        assert cell["mean"] > 0
        assert cell["ci_low"] <= cell["mean"] <= cell["ci_high"]
    runs = json.loads(iolab("results", "list", "--json").stdout)
    assert len(runs) == 8
    assert {r["summary"]["rows"] for r in runs} == {240}
    assert {r["summary"]["engine"] for r in runs} == {"sqlite", "postgres"}
    two = [r for r in runs if r["params"]["layout"] == "two"]
    assert all(len(r["summary"]["placement"]["data"]) == 2 for r in two)
    # nothing left: no server, no file in the layout's directories
    assert servers_of(open_tmp) == []
    assert sorted(p.name for p in (open_tmp / "a").iterdir()) == []
    assert sorted(p.name for p in (open_tmp / "b").iterdir()) == []

    again = iolab("run", str(exp), "--json")
    assert again.returncode == 0, again.stderr
    assert (json.loads(again.stdout)["done"], json.loads(again.stdout)["kept"]) == (0, 8)
    # one more repetition: only the new runs happen
    exp.write_text(exp.read_text().replace("repetitions = 2", "repetitions = 3"))
    plan_text = iolab("plan", str(exp)).stdout
    assert "4 runs to do" in plan_text
    assert "8 finished runs are kept" in plan_text


def test_resume_after_sigkill_runs_every_run_exactly_once(open_tmp: Path, results_db: Path) -> None:
    make_dirs(open_tmp, "a")
    exp = write(
        open_tmp,
        """
[experiment]
name = "resume"
repetitions = 2
order = "sequential"
[workload]
kind = "populate"
engine = "sqlite"
rows = 20_000
connections = 2
[layouts.a]
data_dirs = ["a"]
[isolation]
settle_seconds = 0
drop_caches = false
[matrix]
key = ["sequential", "random"]
""",
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "iolab", "run", str(exp)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ},
    )
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            assert proc.poll() is None, "the experiment ended before it could be killed"
            # held still while its state is read, so that the run seen is the run killed (on a
            # busy machine a run could end, and the next be claimed, between a look and a kill)
            proc.send_signal(signal.SIGSTOP)
            seen = statuses(results_db) if results_db.exists() else []
            started = any(p.name.startswith(".iolab-") for p in (open_tmp / "a").iterdir())
            if [s for _, s in seen].count("done") >= 1 and seen[-1][1] == "running" and started:
                proc.send_signal(signal.SIGKILL)  # a run claimed and its instance made
                break
            proc.send_signal(signal.SIGCONT)
            time.sleep(0.05)
        else:
            pytest.fail("no run was in progress to kill")
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    killed = statuses(results_db)
    assert killed[-1][1] == "running"
    # the killed run left its files behind (named for iolab and the dead pid)
    assert any(p.name.startswith(".iolab-") for p in (open_tmp / "a").iterdir())

    done = iolab("run", str(exp), "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    after = statuses(results_db)
    assert [s for _, s in after].count("aborted") == 1
    for cell in doc["cells"]:
        assert cell["runs"]["done"] == 2  # exactly the repetitions, none twice
    assert doc["done"] == 4 - len([s for _, s in killed if s == "done"])
    assert list((open_tmp / "a").iterdir()) == []  # the leftovers were reaped


def test_timeouts_fail_runs_and_the_policy_and_hooks_follow(
    open_tmp: Path, results_db: Path
) -> None:
    make_dirs(open_tmp, "a")
    failures, complete = open_tmp / "failures.jsonl", open_tmp / "complete.json"
    text = f"""
[experiment]
name = "policy"
repetitions = 2
order = "sequential"
timeout = "1s"
on_failure = "retry"
retries = 1
[workload]
kind = "populate"
engine = "sqlite"
connections = 2
[layouts.a]
data_dirs = ["a"]
[isolation]
settle_seconds = 0
drop_caches = false
[hooks]
on_failure = "cat >> {failures}"
on_complete = "cat > {complete}"
[matrix]
rows = [100, 5_000_000]
"""
    exp = write(open_tmp, text)
    done = iolab("run", str(exp), "--json")
    assert done.returncode == 1  # a cell was given up
    doc = json.loads(done.stdout)
    assert doc["done"] == 2
    assert doc["failed"] == 2  # the first try and one retry
    assert doc["skipped_cells"] == ["rows=5000000"]
    assert all("timed out after 1 s" in f["error"] for f in doc["failures"])
    lines = [json.loads(x) for x in failures.read_text().splitlines() if x.strip()]
    assert [x["cell"] for x in lines] == ["rows=5000000", "rows=5000000"]
    summary = json.loads(complete.read_text())
    assert (summary["experiment"], summary["done"], summary["failed"]) == ("policy", 2, 2)
    assert list((open_tmp / "a").iterdir()) == []

    stop = write(
        open_tmp,
        text.replace('on_failure = "retry"', 'on_failure = "stop"')
        .replace('name = "policy"', 'name = "policy-stop"')
        .replace("[100, 5_000_000]", "[5_000_000, 100]"),
    )
    stopped = iolab("run", str(stop))
    assert stopped.returncode == 1
    assert 'stopped: a run of rows=5000000 failed and on_failure = "stop"' in stopped.stdout
    assert "0 runs done, 1 failed" in stopped.stdout


def test_bad_experiment_file_is_one_line(open_tmp: Path, results_db: Path) -> None:
    exp = write(open_tmp, '[experiment]\nname = "x"\nrepetitons = 3\n')
    done = iolab("run", str(exp))
    assert done.returncode == 2
    assert done.stderr.startswith("error: experiment.repetitons: 3 is not allowed; unknown key")
    assert "Traceback" not in done.stderr
    assert not results_db.exists()


def test_report_compare_and_export_read_the_experiment(open_tmp: Path, results_db: Path) -> None:
    make_dirs(open_tmp, "a")
    exp = write(
        open_tmp,
        """
[experiment]
name = "sizes"
repetitions = 3
[workload]
kind = "populate"
engine = "sqlite"
connections = 2
[layouts.a]
data_dirs = ["a"]
[isolation]
settle_seconds = 0
drop_caches = false
[matrix]
rows = [100, 6000]
""",
    )
    ran = iolab("run", str(exp))
    assert ran.returncode == 0, ran.stderr
    # the run ends with its answer: the significant difference, better cell first, with what
    # became of the limit between the cells' stored verdicts
    moved = (
        r"(; (the limit moved from \S+ to \S+|both limited by \S+"
        r"|neither cell had a single limit))?"
    )
    said = re.search(
        r"^  rows=100 was [\d.]+x faster than rows=6000 \(95% CI .*\)" + moved + "$",
        ran.stdout,
        re.M,
    )
    assert said, ran.stdout
    done = iolab("report", str(exp), "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["metric"] == "elapsed_seconds"
    assert doc["best"] == "rows=100"
    (first,) = doc["answer"]["significant"]
    assert (first["a"], first["b"], first["direction"]) == ("rows=100", "rows=6000", "faster")
    assert first["line"] == said.group(0).strip()
    assert doc["answer"]["not_significant"] == {
        "pairs": 0,
        "untested": 0,
        "sentence": "",
        "power": None,
    }
    (ratio,) = doc["best_vs"]
    assert ratio["a"] == "rows=100" and ratio["b"] == "rows=6000"
    assert ratio["significant"] is True
    assert ratio["speedup"] > 2
    assert ratio["ci_low"] > 1
    assert ratio["sentence"].startswith("rows=100 was ")
    assert [c["n"] for c in doc["cells"]] == [3, 3]
    text = iolab("report", "sizes").stdout
    assert "best: rows=100" in text
    assert said.group(0) in text.splitlines()

    compared = json.loads(iolab("compare", "sizes:rows=6000", "sizes:rows=100", "--json").stdout)
    assert compared["speedup"] < 1
    assert compared["significant"] is True
    assert len(compared["a_values"]) == 3

    csv_text = iolab("export", "sizes", "--format", "csv").stdout.splitlines()
    assert csv_text[0].startswith("run,cell,status,rows,")
    assert len(csv_text) == 7
    exported = json.loads(iolab("export", "sizes", "--format", "json").stdout)
    assert sorted({r["rows"] for r in exported}) == [100, 6000]
    parquet = open_tmp / "runs.parquet"
    assert iolab("export", "sizes", "--format", "parquet", "-o", str(parquet)).returncode == 0
    import duckdb

    assert duckdb.sql(f"SELECT count(*) FROM '{parquet}'").fetchall() == [(6,)]
    bad = iolab("report", "nope")
    assert bad.returncode == 2
    assert "EXPERIMENT: 'nope' is not allowed" in bad.stderr
    assert "sizes" in bad.stderr


def test_tpch_experiment_on_duckdb(open_tmp: Path, results_db: Path, cache: Path) -> None:
    make_dirs(open_tmp, "a", "b")
    exp = write(
        open_tmp,
        """
[experiment]
name = "tpch-small"
repetitions = 2
[workload]
kind = "tpch"
engine = "duckdb"
scale_factor = 0.01
queries = [1, 6]
[layouts.one]
data_dirs = ["a"]
[layouts.two]
data_dirs = ["a", "b"]
files = 2
[isolation]
settle_seconds = 0
[matrix]
layout = ["one", "two"]
""",
    )
    done = iolab("run", str(exp), "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert (doc["done"], doc["metric"]) == (4, "total_seconds")
    runs = json.loads(iolab("results", "list", "--json").stdout)
    assert all(r["summary"]["total_seconds"] > 0 for r in runs)
    # the report shows each query's median seconds per cell
    report = json.loads(iolab("report", str(exp), "--json").stdout)
    per_query = {q["cell"]: q for q in report["queries"]}
    assert set(per_query) == {"layout=one", "layout=two"}
    for q in per_query.values():
        assert q["runs"] == 2
        assert set(q["median_seconds"]) == {"1", "6"}
        assert all(v > 0 for v in q["median_seconds"].values())
    text = iolab("report", str(exp)).stdout
    assert "median seconds per query" in text and "Q6" in text
    assert list((open_tmp / "a").iterdir()) == []
    assert list((open_tmp / "b").iterdir()) == []


def _testbed_refused() -> str | None:
    from iolab.testbed import unavailable_reason

    return unavailable_reason()


@pytest.mark.skipif(_testbed_refused() is not None, reason=str(_testbed_refused()))
def test_devices_section_is_brought_up_and_down_around_the_runs(
    open_tmp: Path, results_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("IOLAB_TESTBED_DIR", str(open_tmp / "testbed"))
    exp = write(
        open_tmp,
        f"""
[experiment]
name = "devices"
repetitions = 1
order = "sequential"
[workload]
kind = "populate"
engine = "sqlite"
rows = 150
connections = 1
[devices.fast]
size = "64MiB"
backing_dir = "{open_tmp}"
[devices.slow]
size = "64MiB"
backing_dir = "{open_tmp}"
write_iops = 40
[layouts.fast]
data_dirs = ["device:fast"]
settings = {{ synchronous = "full", journal_mode = "delete" }}
[layouts.slow]
data_dirs = ["device:slow"]
settings = {{ synchronous = "full", journal_mode = "delete" }}
[isolation]
settle_seconds = 0
drop_caches = false
[matrix]
layout = ["fast", "slow"]
""",
    )
    done = iolab("run", str(exp), "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["done"] == 2
    fast, slow = (c["mean"] for c in doc["cells"])
    assert slow > 2 * fast  # 40 write IOPS for a commit per row
    status = json.loads(iolab("testbed", "status", "--json").stdout)
    assert status == [] or all(not d.get("up") for d in status)
    assert not any(p.suffix == ".img" or "loop" in p.name for p in open_tmp.iterdir())


def test_disk_experiment_report_and_any_metric(open_tmp: Path, results_db: Path) -> None:
    make_dirs(open_tmp, "a", "b")
    exp = write(
        open_tmp,
        """
[experiment]
name = "disks"
repetitions = 2
[workload]
kind = "disk"
profile = "real"
size = "16MiB"
runs = 1
duration = 1
interval = 0
[layouts.a]
data_dirs = ["a"]
[layouts.b]
data_dirs = ["b"]
[isolation]
settle_seconds = 0
drop_caches = false
[matrix]
layout = ["a", "b"]
""",
    )
    assert iolab("run", str(exp)).returncode == 0
    # a disk experiment compares its profile's first test, CrystalDiskMark's first row
    doc = json.loads(iolab("report", str(exp), "--json").stdout)
    assert (doc["metric"], doc["lower_is_better"]) == ("tests.SEQ1M Q1T1 read.mbps", False)
    runs = json.loads(iolab("results", "list", "--json").stdout)
    for cell in doc["cells"]:
        layout = cell["values"]["layout"]
        mine = [
            r["summary"]["tests"]["SEQ1M Q1T1 read"]["mbps"]
            for r in runs
            if r["params"]["layout"] == layout
        ]
        assert sorted(cell["runs"]) == sorted(mine)
    # any number the runs record, with its direction
    lat = json.loads(
        iolab("report", str(exp), "--json", "--metric", "tests.RND4K Q1T1 read.lat_p99_us").stdout
    )
    assert lat["lower_is_better"] is True and all(c["n"] == 2 for c in lat["cells"])
    page = open_tmp / "disks.html"
    assert iolab("report", str(exp), "--html", str(page)).returncode == 0
    assert page.read_text().count("MB/s median") == 2  # each cell's CrystalDiskMark grid
    bad = iolab("report", str(exp), "--metric", "nope")
    assert bad.returncode == 2
    assert "--metric: 'nope' is not allowed" in bad.stderr
    assert "tests.TEST.iops|lat_p99_us|mbps with TEST one of: RND4K Q1T1 read" in bad.stderr
    # a single `iolab disk` of the same profile stores the same summary shape, so the command's
    # runs compare with the experiment's
    single = iolab(
        "disk", str(open_tmp / "a"), "--profile", "real", "--size", "16MiB", "--runs", "1",
        "--duration", "1", "--interval", "0", "--json",
    )  # fmt: skip
    assert single.returncode == 0, single.stderr
    runs = json.loads(iolab("results", "list", "--json").stdout)
    command_run = next(r for r in runs if r["experiment"].startswith("disk "))
    experiment_run = next(r for r in runs if r["experiment"] == "disks")
    assert set(command_run["summary"]) == set(experiment_run["summary"])
    assert set(command_run["summary"]["tests"]) == set(experiment_run["summary"]["tests"])
    compared = iolab("compare", str(command_run["id"]), str(experiment_run["id"]), "--json")
    assert compared.returncode == 0, compared.stderr
    assert json.loads(compared.stdout)["metric"] == "tests.SEQ1M Q1T1 read.mbps"
