"""The verdict of what limited a run, on synthetic probe data: the mapping of wait events to
resources, each threshold on both sides, cells and findings."""

from __future__ import annotations

import html

from iolab.analysis import diagnosis as dx
from iolab.analysis.findings import CellData, analyse
from iolab.probes.data import ProbeData, Series
from iolab.probes.interface import Checkpoint, Kind, SeriesKey, WaitStat


def series(probe: str, name: str, mean: float, subject: str, role: str = "") -> Series:
    kind = Kind.RATE if name.endswith(("iops", "mbps")) else Kind.RATIO
    key = SeriesKey(probe, name, "", kind, subject=subject, role=role)
    return Series(key, 0.0, 1.0, 10.0, 10, mean * 10, 10.0, mean)


def device(dev: str, role: str, *, util: float = 10, write_iops: float = 100) -> list[Series]:
    return [
        series("device", "util_pct", util, dev, role),
        series("device", "aqu_sz", 0.5, dev, role),
        series("device", "write_iops", write_iops, dev, role),
        series("device", "read_iops", 0, dev, role),
        series("device", "write_await_ms", 0.4, dev, role),
        series("device", "write_mbps", 1, dev, role),
    ]


def host(busy: float) -> list[Series]:
    return [
        series("host", "cpu_user_pct", busy / 2, "all"),
        series("host", "cpu_system_pct", busy / 2, "all"),
    ]


def pg_waits(**shares: float) -> tuple[WaitStat, ...]:
    """Wait table from {"LWLock:WALWrite": 0.6, ...}: 1000 session-samples at 10 Hz."""
    out = []
    for name, share in shares.items():
        cls, event = name.split(":")
        out.append(WaitStat("pg_stat_activity", cls, event, int(share * 1000), share, share * 100))
    return tuple(out)


def probes(*parts: list[Series], waits: tuple[WaitStat, ...] = (), **kw: object) -> ProbeData:
    return ProbeData(1.0, 0.1, 10.0, tuple(s for p in parts for s in p), waits, **kw)  # type: ignore[arg-type]


def env_cap(dev: str, role: str, write_iops: int) -> dict[str, object]:
    limits = {"read_iops": None, "write_iops": write_iops, "read_bps": None, "write_bps": None}
    return {
        "storage": {role: {"device": {"name": dev}, "testbed": {"name": "slow", "limits": limits}}}
    }


PG = dx.RunFacts("postgres", "populate", {"connections": 8})


def test_postgres_events_map_to_resources() -> None:
    r = dx.resource_of
    assert r("pg_stat_activity", "LWLock", "WALWrite") == dx.WAL
    assert r("pg_stat_activity", "IO", "WalSync") == dx.WAL
    assert r("pg_stat_activity", "IO", "DataFileRead") == dx.DATA
    assert r("pg_stat_activity", "IO", "BufFileWrite") == dx.TEMP  # up to PostgreSQL 16
    assert r("pg_stat_activity", "IO", "BuffileRead") == dx.TEMP  # 17 on (pg_wait_events)
    assert r("pg_stat_activity", "IO", "SharedFileSet") == dx.TEMP
    assert r("pg_stat_activity", "CPU", "running") == dx.CPU
    assert r("pg_stat_activity", "Client", "ClientRead") == dx.CLIENT
    assert r("pg_stat_activity", "Lock", "tuple") == dx.CONTENTION
    assert r("pg_stat_activity", "Lock", "extend") == dx.CONTENTION  # unless the device is full
    assert r("pg_stat_activity", "LWLock", "LockManager") == dx.CONTENTION
    assert r("pg_stat_activity", "IPC", "ExecuteGather") is None


def test_mariadb_events_map_to_resources() -> None:
    r = dx.resource_of
    ps = "performance_schema"
    assert r(ps, "wait/io/file", "innodb/innodb_log_file") == dx.WAL
    assert r(ps, "wait/io/file", "innodb/innodb_data_file") == dx.DATA
    assert r(ps, "wait/io/file", "innodb/innodb_temp_file") == dx.TEMP
    assert r(ps, "wait/synch/sxlock", "innodb/index_tree_rw_lock") == dx.CONTENTION
    assert r(ps, "wait/lock/metadata", "sql/mdl") == dx.CONTENTION
    assert r(ps, "wait/io/socket", "sql/client_connection") == dx.CLIENT
    assert r(ps, "wait/io/table", "sql/handler") is None  # nests the file waits


def test_wal_waits_with_the_wal_device_at_its_cap() -> None:
    p = probes(
        device("loop0", "wal", util=2, write_iops=98),
        device("vda", "data"),
        host(40),
        waits=pg_waits(**{"LWLock:WALWrite": 0.55, "IO:WalSync": 0.1, "CPU:running": 0.35}),
    )
    facts = dx.RunFacts("postgres", "populate", {}, {}, env_cap("loop0", "wal", 100))
    d = dx.diagnose(p, facts)
    assert d is not None and d.limit == dx.WAL
    assert d.share is not None and abs(d.share - 0.65) < 1e-9
    names = {e.name: (e.value, e.unit) for e in d.evidence}
    assert names["wal.cap_share"] == (98.0, "%")
    assert names["wal-device.session_share"][1] == "%"
    assert "98% of its write IOPS cap" in " ".join(d.sentences())
    assert d.line == "limited by wal-device (65% of session time)"


def test_a_device_at_its_cap_that_sessions_barely_wait_on_is_not_the_limit() -> None:
    p = probes(
        device("loop0", "wal", write_iops=99),
        host(95),
        waits=pg_waits(**{"CPU:running": 0.9, "IO:WalSync": 0.1}),
    )
    facts = dx.RunFacts("postgres", "populate", {}, {}, env_cap("loop0", "wal", 100))
    d = dx.diagnose(p, facts)
    assert d is not None and d.limit == dx.CPU


def test_uninstrumented_redo_waits_leave_the_device_cap_to_speak() -> None:
    waits = (WaitStat("performance_schema", "wait/io/table", "sql/handler", 100, 0.9, 0.5),)
    p = probes(device("loop0", "wal", write_iops=100), host(30), waits=waits)
    facts = dx.RunFacts("mariadb", "populate", {"connections": 8}, {}, env_cap("loop0", "wal", 100))
    d = dx.diagnose(p, facts)
    assert d is not None and d.limit == dx.WAL and d.share is None
    assert any("does not time" in n for n in d.notes)


def test_the_lead_threshold_on_both_sides() -> None:
    # 0.45 against 0.28: 1.6x the next, over LEAD_SHARE -> contention
    p = probes(
        host(60), waits=pg_waits(**{"Lock:tuple": 0.45, "CPU:running": 0.28, "IO:WalSync": 0.27})
    )
    d = dx.diagnose(p, PG)
    assert d is not None and d.limit == dx.CONTENTION
    # 0.45 against 0.35: 1.3x the next -> none, with both candidates
    p = probes(
        host(60), waits=pg_waits(**{"Lock:tuple": 0.45, "CPU:running": 0.35, "IO:WalSync": 0.2})
    )
    d = dx.diagnose(p, PG)
    assert d is not None and d.limit == dx.NONE
    assert [c.limit for c in d.candidates] == [dx.CONTENTION, dx.CPU]
    assert d.as_json()["candidates"][0]["share"] == 0.45


def test_a_cpu_lead_on_an_idle_host_is_contradicted() -> None:
    p = probes(host(30), waits=pg_waits(**{"CPU:running": 0.8, "Lock:tuple": 0.2}))
    d = dx.diagnose(p, PG)
    assert d is not None and d.limit == dx.NONE
    p = probes(host(70), waits=pg_waits(**{"CPU:running": 0.8, "Lock:tuple": 0.2}))
    d = dx.diagnose(p, PG)
    assert d is not None and d.limit == dx.CPU


def test_a_rate_held_is_rate_and_one_missed_is_diagnosed() -> None:
    p = probes(host(20), waits=pg_waits(**{"Client:ClientRead": 1.0}))
    held = dx.RunFacts("postgres", "populate", {"rate": 50.0}, {"rows_per_second": 49.9})
    d = dx.diagnose(p, held)
    assert d is not None and d.limit == dx.RATE
    assert {e.name for e in d.evidence} >= {"rate.offered", "rate.achieved"}
    missed = dx.RunFacts("postgres", "populate", {"rate": 50.0}, {"rows_per_second": 30.0})
    d = dx.diagnose(p, missed)
    assert d is not None and d.limit == dx.CLIENT


def test_the_host_alone_names_the_cpu_for_mariadb() -> None:
    waits = (WaitStat("performance_schema", "wait/synch/mutex", "innodb/x", 10, 1.0, 0.2),)
    facts = dx.RunFacts("mariadb", "populate", {"connections": 8})
    d = dx.diagnose(probes(host(90), waits=waits), facts)
    assert d is not None and d.limit == dx.CPU
    d = dx.diagnose(probes(host(60), waits=waits), facts)
    assert d is not None and d.limit == dx.NONE


def test_a_dsn_server_is_judged_by_its_waits_alone() -> None:
    p = probes(device("vda", "data", util=99), host(99), waits=pg_waits(**{"IO:DataFileRead": 0.9}))
    facts = dx.RunFacts("postgres", "populate", {"dsn": "postgresql://x@h/db"})
    d = dx.diagnose(p, facts)
    assert d is not None and d.limit == dx.DATA
    assert not any(e.name.startswith("data.") for e in d.evidence)
    assert any("--dsn" in n for n in d.notes)


def test_checkpoints_share_counts_overlaps_once() -> None:
    cps = (
        Checkpoint(1.0, 4.0, 10, "time"),
        Checkpoint(3.0, 5.0, 10, "wal"),
        Checkpoint(9.0, None, None, "time"),
    )
    assert abs(dx.checkpoint_share(probes(checkpoints=cps)) - 0.5) < 1e-9


def test_disk_profiles_get_the_device_side() -> None:
    p = probes(device("loop0", "target", util=97, write_iops=100), host(20))
    facts = dx.RunFacts("", "disk", {}, {}, env_cap("loop0", "target", 100))
    d = dx.diagnose(p, facts)
    assert d is not None and d.limit == dx.DEVICE
    assert any(e.name == "target.cap_share" and e.value == 100.0 for e in d.evidence)


def test_cell_verdicts_and_finding_whys() -> None:
    cpu = dx.Diagnosis(dx.CPU, 0.8, (dx.Evidence("host.cpu_busy", 95, "%", "host 95 % busy"),))
    wal = dx.Diagnosis(dx.WAL, 0.6, ())
    a = dx.cell_verdict("separate WAL", [cpu, cpu, wal])
    b = dx.cell_verdict("shared", [cpu, cpu, cpu])
    assert a.limit == dx.CPU and a.text == "cpu (2 of 3 runs)"
    assert dx.cell_verdict("x", [cpu, wal]).limit == dx.VARIES
    why = dx.finding_why(a, b, times="1.02x faster", significant=False, key="wal_dir")
    assert why.text == (
        "separate WAL 1.02x faster than shared (not significant): both cells were limited by cpu "
        "(host 95 % busy)"
    )
    assert not why.flagged
    walled = dx.cell_verdict("wal on ssd", [wal, wal])
    hdd = dx.cell_verdict("wal on hdd", [wal])
    # a faster WAL device, both WAL-bound: consistent
    why = dx.finding_why(walled, hdd, times="1.50x faster", significant=True, key="wal_dir")
    assert not why.flagged
    # more data files, both WAL-bound, yet significant: the change did not touch the limit
    why = dx.finding_why(walled, hdd, times="1.50x faster", significant=True, key="files")
    assert why.flagged and "files does not move the wal device" in why.text
    moved = dx.finding_why(walled, b, times="1.30x faster", significant=True)
    assert "moved from cpu (shared) to wal-device (wal on ssd)" in moved.text


def test_on_a_saturated_host_waits_on_an_uncapped_device_or_the_client_are_the_cpus() -> None:
    waits = pg_waits(**{"LWLock:WALWrite": 0.6, "Client:ClientRead": 0.38, "CPU:running": 0.02})
    p = probes(device("vda", "data+wal", util=65, write_iops=2000), host(95), waits=waits)
    d = dx.diagnose(p, PG)
    assert d is not None and d.limit == dx.CPU
    assert d.share is not None and abs(d.share - 1.0) < 1e-9
    assert {"wal-device.session_share", "client.session_share", "host.cpu_busy"} <= {
        e.name for e in d.evidence
    }
    # the same waits on a host with CPU to spare: the WAL device, when it was busy most of
    # the run
    d = dx.diagnose(probes(device("vda", "data+wal", util=85), host(50), waits=waits), PG)
    assert d is not None and d.limit == dx.WAL
    # idle a third of the run or more, it had capacity to spare: the sessions waited on its
    # latency, not on its capacity (an uncapped loop device of the truth bench, 61 % busy, with
    # 83 % of the session time on the WAL): the WAL's latency, not the WAL device
    d = dx.diagnose(probes(device("vda", "data+wal", util=61), host(50), waits=waits), PG)
    assert d is not None and d.limit == dx.WAL_LATENCY
    # and a device at its cap stays the limit however busy the host
    p = probes(device("loop0", "wal", write_iops=100), host(95), waits=waits)
    facts = dx.RunFacts("postgres", "populate", {}, {}, env_cap("loop0", "wal", 100))
    d = dx.diagnose(p, facts)
    assert d is not None and d.limit == dx.WAL


def test_the_extension_lock_is_contention_unless_the_data_device_is_at_its_cap() -> None:
    waits = pg_waits(**{"Lock:extend": 0.77, "IO:DataFileExtend": 0.11, "CPU:running": 0.12})
    p = probes(device("loop3", "data", write_iops=300), host(40), waits=waits)
    d = dx.diagnose(p, PG)
    assert d is not None and d.limit == dx.CONTENTION
    env = {
        "storage": {
            "data0": {
                "device": {"name": "loop3"},
                "testbed": {"name": "slow", "limits": {"write_bps": 1_000_000}},
            }
        }
    }
    p = probes(
        [*device("loop3", "data", write_iops=300), series("device", "write_mbps", 1.0, "loop3")],
        host(40),
        waits=waits,
    )
    d = dx.diagnose(p, dx.RunFacts("postgres", "populate", {}, {}, env))
    assert d is not None and d.limit == dx.DATA
    assert d.share is not None and abs(d.share - 0.88) < 1e-9
    assert d.evidence[0].name == "data-device.held_lock_share"


def test_the_why_section_renders_cells_and_flagged_findings() -> None:
    from iolab.report import why as why_report

    wal = dx.Diagnosis(dx.WAL, 0.6, (dx.Evidence("x", 1, "%", "the <wal> device 94 % busy"),))
    a = dx.cell_verdict("ssd", [wal, wal])
    b = dx.cell_verdict("hdd", [wal])
    finding = dx.finding_why(a, b, times="1.40x faster", significant=True, key="files")
    assert finding.reason == "yet files does not move the wal device"
    w = dx.Why((a, b), (finding,))
    page = why_report.html_section(w)
    assert "<section id='why'>" in page and "the &lt;wal&gt; device 94 % busy" in page
    # with the findings: each significant difference, what became of the limit, the flag
    ssd, hdd = (10.0, 10.2, 9.8), (14.0, 14.3, 13.7)  # elapsed seconds: ssd 1.40x faster
    f = analyse(
        [CellData("ssd", {"files": 2}, ssd), CellData("hdd", {"files": 1}, hdd)],
        "elapsed_seconds",
        True,
    )
    page = why_report.html_section(w, f)
    line = next(x for x in why_report.finding_lines(f, w) if x.ratio is not None)
    assert line.flagged and line.moved == "both limited by wal-device"
    assert line.text.startswith("ssd was 1.40x faster than hdd (95% CI ")
    assert line.text.endswith(
        "; both limited by wal-device; yet files does not move the wal device"
    )
    assert f"<li class='warn'>flagged: {html.escape(line.text)}</li>" in page
    doc = why_report.document(w)
    assert doc is not None
    assert doc["cells"][0] == {  # type: ignore[index]
        "cell": "ssd",
        "limit": "wal-device",
        "runs": 2,
        "counts": {"wal-device": 2},
        "evidence": ["the <wal> device 94 % busy"],
    }
    assert doc["findings"][0]["flagged"] is True  # type: ignore[index]
    assert why_report.run_limits(w)["hdd"].startswith("cell limited by wal-device (1 of 1 runs)")
    # the terminal's Why: each cell's verdict (the findings above it carry the flag)
    lines = [t.plain for t in why_report.text(w)]
    assert lines == [
        "Why",
        "  ssd: limited by wal-device (2 of 2 runs)",
        "    the <wal> device 94 % busy",
        "  hdd: limited by wal-device (1 of 1 runs)",
        "    the <wal> device 94 % busy",
    ]


def test_mariadb_waits_without_a_session_count_are_not_weighed() -> None:
    waits = (WaitStat("performance_schema", "wait/synch/mutex", "innodb/x", 10, 1.0, 30.0),)
    facts = dx.RunFacts("mariadb", "sysbench", {"threads": None})
    d = dx.diagnose(probes(host(60), waits=waits), facts)
    assert d is not None and d.limit == dx.NONE
    assert any("not weighed" in n for n in d.notes)
    d = dx.diagnose(
        probes(host(60), waits=waits), dx.RunFacts("mariadb", "sysbench", {"threads": 4})
    )
    assert d is not None and d.limit == dx.CONTENTION and d.share == 0.75


def test_a_handful_of_wait_samples_is_not_weighed() -> None:
    few = (
        WaitStat("pg_stat_activity", "IO", "DataFileRead", 1, 0.5, 0.1),
        WaitStat("pg_stat_activity", "Client", "ClientRead", 1, 0.5, 0.1),
    )
    d = dx.diagnose(probes(host(40), waits=few), PG)
    assert d is not None and d.limit == dx.NONE
    assert any("sampled 2 times" in n for n in d.notes)


def cgroup(used: float, limit: float, throttled: float) -> list[Series]:
    return [
        series("cgroup", "cpu_cores", used, "engine"),
        series("cgroup", "cpu_limit_cores", limit, "engine"),
        series("cgroup", "throttled_periods_per_s", throttled, "engine"),
    ]


def test_a_cpu_cap_that_held_the_engine_is_the_cpu_on_an_idle_host() -> None:
    waits = pg_waits(**{"CPU:running": 0.5, "LWLock:WALWrite": 0.3, "Client:ClientRead": 0.2})
    capped = probes(
        device("vda", "data+wal", util=40), host(30), cgroup(0.49, 0.5, 8.0), waits=waits
    )
    d = dx.diagnose(capped, PG)
    assert d is not None and d.limit == dx.CPU
    # a report reads only dx.SERIES (store.probes(names=...)): the same verdict from them
    kept = [s for s in capped.series if (s.key.probe, s.key.name) in dx.SERIES]
    assert len(kept) == len(capped.series)
    found = {e.name: e for e in d.evidence}
    assert round(found["cpu_cap.share"].value) == 98
    assert "0.49 of its 0.5 CPU cores" in found["cpu_cap.share"].text
    # a cap far above what the engine used: the host decides as without one
    loose = probes(
        device("vda", "data+wal", util=40), host(30), cgroup(0.49, 2.0, 0.0), waits=waits
    )
    d = dx.diagnose(loose, PG)
    assert d is not None and d.limit != dx.CPU


def test_a_quota_run_out_of_in_most_periods_held_the_engine() -> None:
    # MariaDB under --cpus 0.25 on a host 80 % busy (2026-11-25): the group used 0.20 of its
    # 0.25 cores on the whole-run mean, its quota run out of in 6.4 of its 10 periods a second
    facts = dx.RunFacts("mariadb", "populate", {"connections": 4})
    waits = (
        WaitStat("performance_schema", "wait/io/file", "innodb/innodb_data_file", 4, 0.2, 0.1),
    )
    d = dx.diagnose(probes(host(80), cgroup(0.20, 0.25, 6.4), waits=waits), facts)
    assert d is not None and d.limit == dx.CPU
    found = {e.name: e for e in d.evidence}
    assert round(found["cpu_cap.share"].value) == 80
    assert found["cpu_cap.throttled_periods"].value == 6.4
    # throttled now and then, far below its quota: not held
    d = dx.diagnose(probes(host(80), cgroup(0.10, 0.25, 2.0), waits=waits), facts)
    assert d is not None and d.limit != dx.CPU


def test_two_cells_without_a_single_limit_are_not_said_to_move() -> None:
    a = dx.cell_verdict("A", [dx.Diagnosis(dx.NONE, None, ())])
    b = dx.cell_verdict("B", [dx.Diagnosis(dx.NONE, None, ())])
    why = dx.finding_why(a, b, times="1.10x slower", significant=False)
    said = "both cells had no single limit, so the evidence does not say why"
    assert why.text == f"A 1.10x slower than B (not significant): {said}"
    assert "moved" not in why.text


def bursts(dev: str, role: str, write_mbps: list[float]) -> list[Series]:
    """A device writing in bursts: one sample a second, MB/s each."""
    key = SeriesKey("device", "write_mbps", "MB/s", Kind.RATE, subject=dev, role=role)
    n = len(write_mbps)
    rate = Series(key, 0.0, 1.0, float(n), n, sum(write_mbps), float(n), max(write_mbps))
    return [
        series("device", "util_pct", 60, dev, role),
        series("device", "write_iops", 50, dev, role),
        Series(**{**rate.__dict__, "values": tuple(write_mbps)}),
    ]


def env_mbps_cap(dev: str, role: str, write_mbps: float) -> dict[str, object]:
    limits = {
        "read_iops": None,
        "write_iops": None,
        "read_bps": None,
        "write_bps": write_mbps * 1e6,
    }
    return {
        "storage": {role: {"device": {"name": dev}, "testbed": {"name": "slow", "limits": limits}}}
    }


def test_a_device_at_its_cap_in_bursts_is_the_limit_though_its_mean_is_lower() -> None:
    """Checkpoint flushes at a write cap: 80 % of the samples at the cap, a mean of 85 %."""
    waits = (
        WaitStat(
            "performance_schema", "wait/synch/sxlock", "innodb/index_tree_rw_lock", 90, 0.3, 1
        ),
    )
    facts = dx.RunFacts(
        "mariadb", "populate", {"connections": 8}, {}, env_mbps_cap("loop1", "data", 10)
    )
    at_cap = [10.0] * 8 + [3.0, 2.0]
    d = dx.diagnose(probes(bursts("loop1", "data", at_cap), host(40), waits=waits), facts)
    assert d is not None and d.limit == dx.DATA
    names = {e.name: e.value for e in d.evidence}
    assert round(names["data.cap_share"]) == 85
    assert names["data.time_at_cap"] == 80.0
    assert "at 90% of that cap or more in 80% of the samples" in " ".join(d.sentences())
    # the same mean held steadily below the cap is not at it
    steady = [8.5] * 10
    d = dx.diagnose(probes(bursts("loop1", "data", steady), host(40), waits=waits), facts)
    assert d is not None and d.limit != dx.DATA
    # without the samples (a report reads the means only), they are read from ``samples``
    means = probes(
        [series("device", "util_pct", 60, "loop1", "data")]
        + [Series(**{**s.__dict__, "values": ()}) for s in bursts("loop1", "data", at_cap)[1:]],
        host(40),
        waits=waits,
    )
    d = dx.diagnose(means, facts, None, probes(bursts("loop1", "data", at_cap)))
    assert d is not None and d.limit == dx.DATA


# -- a device's latency (issue 46 item 2) -------------------------------------------------------


def reads(dev: str, role: str, *, util: float, read_iops: float, read_ms: float) -> list[Series]:
    """A device that mostly reads: ``read_iops`` at ``read_ms`` each, a few writes."""
    return [
        series("device", "util_pct", util, dev, role),
        series("device", "aqu_sz", 0.9, dev, role),
        series("device", "read_iops", read_iops, dev, role),
        series("device", "read_mbps", read_iops * 8 / 1000, dev, role),
        series("device", "read_await_ms", read_ms, dev, role),
        series("device", "write_iops", 20, dev, role),
        series("device", "write_await_ms", 0.3, dev, role),
    ]


BEST = "best measured"  # what an iolab disk run's caps are (dx.disk_test_caps)

# the demo's PostgreSQL populate at 8 connections (issue 46): 62 % of the sessions' time on the
# WAL, the rest on the client and the CPU, its WAL device far from busy
DEMO_WAITS = {
    "LWLock:WALWrite": 0.52,
    "IO:WalSync": 0.10,
    "Client:ClientRead": 0.25,
    "CPU:running": 0.13,
}


def test_sessions_mostly_waiting_on_a_wal_device_far_from_its_capacity_read_wal_latency() -> None:
    p = probes(
        device("vdb", "wal", util=38, write_iops=1900),
        device("vda", "data", util=12),
        host(55),
        waits=pg_waits(**DEMO_WAITS),
    )
    d = dx.diagnose(p, PG)
    assert d is not None and d.limit == dx.WAL_LATENCY
    assert d.share is not None and abs(d.share - 0.62) < 1e-9
    assert d.line == "limited by wal-latency (62% of session time)"
    names = {e.name: (e.value, e.unit) for e in d.evidence}
    assert names["wal-device.session_share"] == (62.0, "%")
    assert names["wal.busy"] == (38.0, "%")
    assert names["wal.write_ms"] == (0.4, "ms")  # the latency of each flush the sessions waited on
    assert names["wal.capacity_share"] == (38.0, "%")
    said = d.sentences()
    assert said[0] == (
        "sessions waited on the WAL / redo log 62% of their sampled time "
        "(LWLock WALWrite 52%, IO WalSync 10%)"
    )
    assert said[1] == (
        "the wal device vdb was busy 38 %, queue 0.5, 1,900 writes/s, 1.00 MB/s, 0.40 ms per write"
    )
    assert said[2] == (
        "the wal device vdb used at most 38% of its capacity (its busy time): the sessions "
        "waited on how long each write took, not on how many it could do"
    )
    doc = d.as_json()
    assert doc["limit"] == "wal-latency" and doc["share"] == 0.62 and "candidates" not in doc
    # kept with the run and read back as it was computed
    assert dx.Diagnosis.from_record(d.record()) == d


def test_a_wal_device_far_from_the_best_iops_measured_reads_wal_latency_with_that_share() -> None:
    caps = {"vdb": dx.Caps(None, 20_000, None, None, "the best test of iolab disk run 3", BEST)}
    p = probes(
        device("vdb", "wal", util=38, write_iops=1900), host(55), waits=pg_waits(**DEMO_WAITS)
    )
    d = dx.diagnose(p, PG, caps)
    assert d is not None and d.limit == dx.WAL_LATENCY
    names = {e.name: e.value for e in d.evidence}
    assert round(names["wal.cap_share"]) == 10
    assert names["wal.capacity_share"] == 38.0  # its busy time: the larger of the two
    # a testbed throttle of 20,000 write IOPS, the device 3 % busy (the throttle holds requests
    # before the device counts them): its share of the cap is what it used
    facts = dx.RunFacts(
        "postgres", "populate", {"connections": 8}, {}, env_cap("vdb", "wal", 20000)
    )
    p = probes(
        device("vdb", "wal", util=3, write_iops=1900), host(55), waits=pg_waits(**DEMO_WAITS)
    )
    d = dx.diagnose(p, facts)
    assert d is not None and d.limit == dx.WAL_LATENCY
    assert "used at most 10% of its capacity (its share of its write IOPS cap)" in " ".join(
        d.sentences()
    )


def test_a_wal_device_at_its_iops_cap_still_reads_wal_device() -> None:
    waits = pg_waits(**DEMO_WAITS)
    # a testbed throttle of 2,000 write IOPS it did 1,900 of, while 38 % busy
    facts = dx.RunFacts("postgres", "populate", {"connections": 8}, {}, env_cap("vdb", "wal", 2000))
    p = probes(device("vdb", "wal", util=38, write_iops=1900), host(55), waits=waits)
    d = dx.diagnose(p, facts)
    assert d is not None and d.limit == dx.WAL
    assert d.line == "limited by wal-device (62% of session time)"
    # the best an iolab disk run measured of it, 2,000 write IOPS: at it too
    caps = {"vdb": dx.Caps(None, 2000, None, None, "the best test of iolab disk run 3", BEST)}
    d = dx.diagnose(p, PG, caps)
    assert d is not None and d.limit == dx.WAL
    # busy most of the run (no cap known): its capacity, as before
    d = dx.diagnose(probes(device("vdb", "wal", util=85), host(55), waits=waits), PG)
    assert d is not None and d.limit == dx.WAL


def test_reads_of_a_data_device_with_spare_time_read_data_latency() -> None:
    waits = pg_waits(**{"IO:DataFileRead": 0.71, "CPU:running": 0.17, "Client:ClientRead": 0.12})
    p = probes(reads("vdc", "data", util=45, read_iops=900, read_ms=4.2), host(30), waits=waits)
    d = dx.diagnose(p, PG)
    assert d is not None and d.limit == dx.DATA_LATENCY
    assert d.line == "limited by data-latency (71% of session time)"
    names = {e.name: (e.value, e.unit) for e in d.evidence}
    assert names["data.read_ms"] == (4.2, "ms")  # the reads' latency, not the writes'
    assert names["data.read_iops"] == (900.0, "IO/s")
    assert "data.write_ms" not in names
    assert names["data.capacity_share"] == (45.0, "%")
    assert "waited on how long each read took" in " ".join(d.sentences())
    # the same device at its read MB/s throttle: its capacity
    limits = {"read_iops": None, "write_iops": None, "read_bps": 7_500_000, "write_bps": None}
    env = {
        "storage": {"data": {"device": {"name": "vdc"}, "testbed": {"name": "t", "limits": limits}}}
    }
    d = dx.diagnose(p, dx.RunFacts("postgres", "populate", {"connections": 8}, {}, env))
    assert d is not None and d.limit == dx.DATA
    # a data device's latency on writes the sessions make themselves (extensions): writes
    waits = pg_waits(**{"IO:DataFileExtend": 0.6, "CPU:running": 0.3, "Client:ClientRead": 0.1})
    p = probes(device("vdc", "data", util=20, write_iops=400), host(30), waits=waits)
    d = dx.diagnose(p, PG)
    assert d is not None and d.limit == dx.DATA_LATENCY
    assert "data.write_ms" in {e.name for e in d.evidence}


def test_without_a_dominant_device_wait_the_verdicts_are_unchanged() -> None:
    idle_wal = device("vdb", "wal", util=38, write_iops=1900)
    # the WAL leads with 45 %, not most of the time: none, between the WAL and the client
    waits = pg_waits(**{"IO:WalSync": 0.45, "Client:ClientRead": 0.28, "CPU:running": 0.27})
    d = dx.diagnose(probes(idle_wal, host(55), waits=waits), PG)
    assert d is not None and d.limit == dx.NONE
    assert [c.limit for c in d.candidates] == [dx.WAL, dx.CLIENT]
    # most of the time on the WAL, but the client close behind (1.3x): none
    waits = pg_waits(**{"IO:WalSync": 0.52, "Client:ClientRead": 0.40, "CPU:running": 0.08})
    d = dx.diagnose(probes(idle_wal, host(55), waits=waits), PG)
    assert d is not None and d.limit == dx.NONE
    # the demo's waits on a saturated host: the CPU's (the flusher waits for a CPU)
    d = dx.diagnose(probes(idle_wal, host(95), waits=pg_waits(**DEMO_WAITS)), PG)
    assert d is not None and d.limit == dx.CPU
    # the temp device has no latency verdict: an idle one that sessions wait on stays none
    waits = pg_waits(**{"IO:BuffileRead": 0.7, "CPU:running": 0.3})
    d = dx.diagnose(probes(device("vde", "temp", util=10), host(55), waits=waits), PG)
    assert d is not None and d.limit == dx.NONE
    # no device recorded (a --dsn server elsewhere): its waits alone, as before
    remote = dx.RunFacts("postgres", "populate", {"dsn": "postgresql://x@h/db", "connections": 8})
    d = dx.diagnose(probes(idle_wal, host(55), waits=pg_waits(**DEMO_WAITS)), remote)
    assert d is not None and d.limit == dx.WAL
    # locks lead: contention, whatever the devices
    waits = pg_waits(**{"Lock:tuple": 0.7, "IO:WalSync": 0.2, "CPU:running": 0.1})
    d = dx.diagnose(probes(idle_wal, host(55), waits=waits), PG)
    assert d is not None and d.limit == dx.CONTENTION


def test_findings_between_latency_bound_cells() -> None:
    lat = dx.Diagnosis(dx.WAL_LATENCY, 0.62, ())
    a = dx.cell_verdict("wal on nvme", [lat, lat])
    b = dx.cell_verdict("wal on ssd", [lat])
    # moving the WAL, both held by its latency: consistent
    why = dx.finding_why(a, b, times="1.40x faster", significant=True, key="wal_dir")
    assert not why.flagged
    assert why.text.startswith(
        "wal on nvme 1.40x faster than wal on ssd: both cells were limited by wal-latency"
    )
    # more data files, both held by the WAL's latency, yet significant: flagged
    why = dx.finding_why(a, b, times="1.40x faster", significant=True, key="files")
    assert why.flagged and "files does not move the wal device" in why.text
    cap = dx.cell_verdict("wal on hdd", [dx.Diagnosis(dx.WAL, 0.9, ())])
    moved = dx.finding_why(a, cap, times="3.00x faster", significant=True)
    assert "moved from wal-device (wal on hdd) to wal-latency (wal on nvme)" in moved.text
