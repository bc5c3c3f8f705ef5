"""fio job building and JSON parsing, on JSON recorded from real fio 3.33 runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from iolab.fio.jobs import DataPattern, FioJob, command
from iolab.fio.parse import histogram_percentile, load, summarize

DATA = Path(__file__).parent.parent / "data"


def test_command_for_random_read() -> None:
    job = FioJob(
        "t", Path("/mnt/x/f"), "randread", 4096, 1 << 30, iodepth=32, numjobs=16, runtime=5
    )
    args = command(job)
    assert args[0] == "fio"
    for expected in (
        "--rw=randread",
        "--bs=4096",
        "--iodepth=32",
        "--numjobs=16",
        "--direct=1",
        "--time_based=1",
        "--runtime=5",
        "--output-format=json+",
        "--lat_percentiles=1",
        "--percentile_list=50:99:99.9",
        "--filename=/mnt/x/f",
        "--group_reporting=1",
    ):
        assert expected in args
    assert not any("buffers" in a for a in args)  # reads need no data


def test_command_for_writes_and_commits() -> None:
    zero = command(FioJob("w", Path("f"), "write", 1 << 20, 1 << 30, data=DataPattern.ZERO))
    assert "--zero_buffers=1" in zero
    assert not any(a.startswith("--time_based") for a in zero)  # size-bound: lays out the file
    rnd = command(FioJob("w", Path("f"), "write", 8192, 1 << 20, fdatasync=1, runtime=0.5))
    assert not any("refill" in a for a in rnd)  # fio's random buffers, scrambled per write
    assert "--fdatasync=1" in rnd
    assert "--runtime=500ms" in rnd


def test_job_rejects_mix_without_mixed_mode() -> None:
    with pytest.raises(ValueError, match="rwmixread"):
        FioJob("x", Path("f"), "randread", 4096, 1, rwmixread=70)


def test_summary_of_group_reported_random_read() -> None:
    s = summarize(load((DATA / "fio-randread-q4t2.json").read_text()))
    assert s.fio_version == "fio-3.33"
    assert s.mbps == pytest.approx(297.150273)  # decimal MB/s from bw_bytes
    assert s.iops == pytest.approx(72546.453546)
    assert s.seconds == pytest.approx(1.0, abs=0.01)  # wall time, not the threads' sum
    assert s.write_bytes == 0
    assert s.sync is None
    assert 0 < s.lat.p50 <= s.lat.p99 <= s.lat.p999
    assert s.lat.mean > 0


def test_mixed_job_merges_both_directions() -> None:
    text = (DATA / "fio-randrw70.json").read_text()
    data = load(text)
    s = summarize(data)
    job = data["jobs"][0]
    assert s.mbps == pytest.approx((137553582 + 58894833) / 1e6)
    assert s.iops == pytest.approx(33582.417582 + 14378.621379)
    r, w = job["read"]["lat_ns"], job["write"]["lat_ns"]
    expected_mean = (r["mean"] * r["N"] + w["mean"] * w["N"]) / (r["N"] + w["N"]) / 1000
    assert s.lat.mean == pytest.approx(expected_mean)
    # the merged median lies between the two directions' medians
    lo, hi = sorted([r["percentile"]["50.000000"] / 1000, w["percentile"]["50.000000"] / 1000])
    assert lo <= s.lat.p50 <= hi


def test_commit_job_reports_sync_latency() -> None:
    s = summarize(load((DATA / "fio-commit.json").read_text()))
    assert s.iops == pytest.approx(6974.025974)  # commits per second
    assert s.sync is not None
    # the recorded fdatasync latencies, ns -> µs
    assert s.sync.p50 == pytest.approx(62.208)
    assert s.sync.p99 == pytest.approx(288.768)
    assert s.sync.p999 == pytest.approx(610.304)
    assert s.sync.mean == pytest.approx(69.551368911)


def test_histogram_percentile_matches_fio() -> None:
    data = load((DATA / "fio-randread-q4t2.json").read_text())
    lat = data["jobs"][0]["read"]["lat_ns"]
    bins = {int(k): v for k, v in lat["bins"].items()}
    for p in (50.0, 99.0, 99.9):
        assert histogram_percentile(bins, p) == lat["percentile"][f"{p:.6f}"]


def test_load_skips_warnings_and_rejects_garbage() -> None:
    text = "fio: some warning\n" + (DATA / "fio-commit.json").read_text()
    assert load(text)["fio version"] == "fio-3.33"
    from iolab.errors import RunFailed

    with pytest.raises(RunFailed, match="no JSON"):
        load("fio: file:filesetup.c:240, func=open, error=Invalid argument")
