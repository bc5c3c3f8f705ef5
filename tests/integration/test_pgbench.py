"""pgbench run by iolab on a PostgreSQL it provisioned: the numbers iolab records are pgbench's
own, its progress adds up to its count, iolab's percentiles of its transaction log agree with its
average, the scripts are kept with the run, and a failing pgbench fails the run with its own
words and leaves nothing behind. Real PostgreSQL, real pgbench (scale 1, 3 s)."""

from __future__ import annotations

import hashlib
import re
from dataclasses import replace
from pathlib import Path

import pytest

from iolab.engines import catalog
from iolab.engines.interface import Layout, running
from iolab.errors import RunFailed
from iolab.events import Collect
from iolab.results import RunOutcome, RunStatus
from iolab.workloads.drivers import Disagree
from iolab.workloads.pgbench.run import PgbenchOptions, drive, program_of, run_pgbench
from tests.conftest import make_dirs

pytestmark = pytest.mark.integration

APP = """\\set aid random(1, 100000 * :scale)
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
"""


def _printed(text: str, pattern: str) -> float:
    found = re.search(pattern, text, re.MULTILINE)
    assert found is not None, text
    return float(found.group(1))


def test_pgbench_numbers_are_its_own_and_add_up(open_tmp: Path) -> None:
    data, wal, scripts = make_dirs(open_tmp, "data", "wal", "scripts")
    app = scripts / "app.sql"
    app.write_text(APP)
    run_args = ("-c", "2", "-j", "2", "-T", "3", "-b", "tpcb-like@2", "-f", f"{app}@1")
    options = PgbenchOptions("postgres", Layout((data,), wal_dir=wal), run_args, ("-i", "-s", "1"))
    outcome = RunOutcome(RunStatus.RUNNING)
    run_pgbench(options, outcome, Collect())
    s = outcome.summary
    printed = outcome.logs["pgbench"]

    # the tps and the count are pgbench's, to its printed precision
    assert s["tps"] == _printed(printed, r"^tps = ([\d.]+) \(without initial connection time\)")
    assert s["transactions"] == _printed(
        printed, r"^number of transactions actually processed: (\d+)"
    )
    assert s["latency_avg_ms"] == _printed(printed, r"^latency average = ([\d.]+) ms")
    assert s["failed"] == 0 and s["clients"] == 2 and s["threads"] == 2
    # its per-second progress, on the probes' time axis, adds up to its count within a second's
    assert outcome.probes is not None
    (tps,) = outcome.probes.find("pgbench", "tps")
    assert tps.n >= 2
    assert abs(tps.total - s["transactions"]) <= s["tps"] * 1.0
    # iolab's histogram of every logged transaction: its mean is pgbench's average within 1 %
    overall = s["latency"]["transaction"]
    assert overall["count"] == s["transactions"]
    assert abs(overall["mean_us"] / 1000 - s["latency_avg_ms"]) <= 0.01 * s["latency_avg_ms"]
    assert overall["p50_us"] <= overall["p99_us"] <= overall["max_us"]
    tpcb, mine = s["scripts"]
    assert tpcb["name"] == "<builtin: TPC-B (sort of)>" and mine["name"] == str(app)
    # each script's count is its transaction log's: pgbench's own can miss one its two threads
    # finished at once (it adds to them without a lock), the total cannot
    assert tpcb["transactions"] + mine["transactions"] == s["transactions"]
    for script in (tpcb, mine):  # pgbench prints no percentile per script; iolab does
        mean_ms = script["latency"]["mean_us"] / 1000
        assert script["latency"]["count"] == script["transactions"]
        assert (
            0
            <= script["transactions"] - script.get("pgbench_transactions", script["transactions"])
            <= 3
        )
        assert abs(mean_ms - script["latency_avg_ms"]) <= 0.01 * script["latency_avg_ms"]
    assert tpcb["latency"]["p50_us"] > mine["latency"]["p50_us"]  # 5 statements against 1
    # the custom script is kept with the run: its text and its hash
    (stored,) = s["script_files"]
    assert stored["sha256"] == hashlib.sha256(APP.encode()).hexdigest()
    assert outcome.logs["script app.sql"] == APP
    # the probes recorded the devices underneath, the WAL's among them
    assert any(x.key.probe == "device" and "wal" in x.key.role for x in outcome.probes.series)
    assert any(x.key.probe == "latency" and x.key.name == "p99_ms" for x in outcome.probes.series)
    assert s["init_args"] == ["-i", "-s", "1"] and "pgbench init" in outcome.logs
    assert list(data.iterdir()) == [] and list(wal.iterdir()) == []


def test_a_failing_pgbench_fails_the_run_with_its_own_words(open_tmp: Path) -> None:
    (data,) = make_dirs(open_tmp, "data")
    bad = open_tmp / "bad.sql"
    bad.write_text("SELECT no_such_column FROM pgbench_branches;\n")
    run_args = ("-c", "1", "-t", "5", "-f", str(bad))
    options = PgbenchOptions("postgres", Layout((data,)), run_args)
    outcome = RunOutcome(RunStatus.RUNNING)
    with pytest.raises(RunFailed) as failed:
        run_pgbench(options, outcome, Collect())
    assert "pgbench failed (exit 2)" in str(failed.value)
    assert "no_such_column" in str(failed.value)
    assert outcome.probes is not None  # what was recorded until it failed is kept
    assert list(data.iterdir()) == []


def test_a_log_pgbench_wrote_otherwise_fails_the_run_instead_of_being_stored(
    open_tmp: Path,
) -> None:
    """The refusals keep --aggregate-interval out; given anyway, pgbench logs one line per
    second instead of one per transaction, and iolab's count of its log is not pgbench's."""
    (data,) = make_dirs(open_tmp, "data")
    options = PgbenchOptions("postgres", Layout((data,)), ("-c", "2", "-T", "2"))
    checked = options.validate()
    forced = replace(checked, run=(*checked.run, "--aggregate-interval=1"))
    engine = catalog.create("postgres", options.layout)
    outcome = RunOutcome(RunStatus.RUNNING)
    with running(engine, "the test") as placement, pytest.raises(Disagree) as failed:
        drive(engine, placement, program_of(engine), options, forced, outcome, Collect())
    printed = outcome.logs["pgbench"]
    count = int(_printed(printed, r"^number of transactions actually processed: (\d+)"))
    assert count > 100
    said = re.match(
        r"pgbench: transactions (\d+) in its -l log, ([\d,]+) in its report; ", str(failed.value)
    )
    assert said is not None, str(failed.value)
    assert int(said.group(1)) < 10 and said.group(2) == f"{count:,}"  # a line per second
    assert "iolab stores no numbers it cannot match with the tool's own" in str(failed.value)
    assert "tps" not in outcome.summary and "latency" not in outcome.summary
    assert list(data.iterdir()) == []
