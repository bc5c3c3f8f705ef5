"""The verdict of runs stored as the runner stores them (issue 43 item 16): an open-loop load
held at its offered rate (TPC-C's ``--rate``, a driver's rate) reads ``rate``, whatever its
sessions waited on; a ``--dsn`` server on this machine (a unix socket, a loopback address) has
this machine's host and devices behind it, one elsewhere only its waits. Each run goes through
the results database (Store API) and back, to :func:`iolab.report.why.run_diagnosis`."""

from __future__ import annotations

from typing import Any

import pytest

from iolab.analysis import diagnosis as dx
from iolab.engines.external import dsn_is_local, local_host, parse_dsn
from iolab.probes.data import ProbeData, Series
from iolab.probes.interface import Kind, SeriesKey, WaitStat
from iolab.report.why import run_diagnosis, show_lines
from iolab.results import CellId, RunOutcome, RunStatus
from iolab.store import Store
from iolab.workloads.tpcc.options import TpccWorkload

SOCKET_DSN = "postgresql:///iolab?host=/tmp/iolab-pg&port=5433"
LOOPBACK_MARIADB = "mysql://bench@127.0.0.1:3307/iolab"
REMOTE_DSN = "postgresql://bench@db.example.net/iolab"


def series(probe: str, name: str, mean: float, subject: str, role: str = "") -> Series:
    """Ten one-second samples of ``mean``, as a probe records them."""
    kind = Kind.RATE if name.endswith(("iops", "mbps")) else Kind.RATIO
    key = SeriesKey(probe, name, "", kind, subject=subject, role=role)
    return Series(key, 0.0, 1.0, 10.0, 10, mean * 10, 10.0, mean, [mean] * 10)


def device(dev: str, role: str, util: float) -> list[Series]:
    return [
        series("device", "util_pct", util, dev, role),
        series("device", "aqu_sz", 0.4, dev, role),
        series("device", "write_iops", 300, dev, role),
        series("device", "read_iops", 5, dev, role),
        series("device", "write_await_ms", 0.9, dev, role),
        series("device", "write_mbps", 4, dev, role),
    ]


def host(busy: float) -> list[Series]:
    return [
        series("host", "cpu_user_pct", busy * 0.7, "all"),
        series("host", "cpu_system_pct", busy * 0.3, "all"),
    ]


def pg_waits(**shares: float) -> tuple[WaitStat, ...]:
    """pg_stat_activity's samples at 10 Hz over 10 s of 4 sessions: 400 session-samples."""
    return tuple(
        WaitStat("pg_stat_activity", *name.split(":"), int(share * 400), share, share * 40)
        for name, share in shares.items()
    )


def tpcc_params(engine: str = "postgres", **given: Any) -> dict[str, Any]:
    """The parameters ``iolab tpcc`` stores: the model's dump, the layout, the DSN."""
    model = TpccWorkload.model_validate({"kind": "tpcc", "engine": engine, **given})
    return {
        **model.model_dump(),
        "data_dirs": [],
        "files": 1,
        "wal_dir": None,
        "temp_dir": None,
        "settings": {},
        "dsn": None,
        "keep": False,
        "sample_interval": 1.0,
    }


def tpcc_summary(per_second: float, seconds: float = 60.0, **extra: Any) -> dict[str, Any]:
    """TPC-C's summary of a window in which ``per_second`` transactions ended (the mix's
    shares, 1 % of New-Orders rolled back, a few retries that took no slot of the schedule)."""
    n = per_second * seconds
    shares = {"new_order": 45, "payment": 43, "order_status": 4, "delivery": 4, "stock_level": 4}
    kinds = {}
    for kind, share in shares.items():
        ended = n * share / 100
        rollbacks = round(ended / 100) if kind == "new_order" else 0
        kinds[kind] = {
            "count": ended - rollbacks,
            "rollbacks": rollbacks,
            "retries": 3,
            "p50_us": 2100,
            "p95_us": 5400,
            "p99_us": 8000,
            "p999_us": 9900,
            "max_us": 12000,
        }
    nopm = 60 * kinds["new_order"]["count"] / seconds
    return {
        "nopm": nopm,
        "nopm_client": nopm,
        "nopm_orders": nopm,
        "tpm": 60 * (n + 15) / seconds,
        "tpm_source": "database",
        "tpm_client": 60 * (n + 15) / seconds,
        "measured_seconds": seconds,
        "transactions": kinds,
        "rate": None,
        "warehouses": 1,
        "connections": 4,
        **extra,
    }


def stored(
    store: Store,
    workload: str,
    params: dict[str, Any],
    summary: dict[str, Any],
    probes: ProbeData,
) -> dx.Diagnosis:
    """Store one done run as the runner does and diagnose it as `results show` does."""
    exp = store.create_experiment(f"{workload} run", "command", {"workload": workload})
    cell = CellId(workload.ljust(16, "0")[:16])
    store.ensure_cell(exp, cell, workload, {"kind": workload, **params})
    run = store.start_run(exp, cell, 1, store.save_environment({"storage": {}}))
    store.finish_run(run, RunOutcome(RunStatus.DONE, summary, probes=probes))
    found = run_diagnosis(store, store.run(int(run)))
    assert found is not None
    return found


def probes(*parts: list[Series], waits: tuple[WaitStat, ...] = ()) -> ProbeData:
    return ProbeData(1.0, 0.1, 10.0, tuple(s for p in parts for s in p), waits)


# -- an offered rate ------------------------------------------------------------------------

# sessions of an open-loop load at a low rate wait on the client nearly all the time
IDLE_SESSIONS = {"Client:ClientRead": 0.97, "CPU:running": 0.03}


def test_tpcc_held_at_its_rate_is_limited_by_the_rate(store: Store) -> None:
    """Issue 43: `tpcc --rate 20` at 100 % of its rate read `limited by client (100 %)`."""
    params = tpcc_params(rate=20.0, connections=4)
    p = probes(device("vda", "data+wal", 6), host(20), waits=pg_waits(**IDLE_SESSIONS))
    d = stored(store, "tpcc", params, tpcc_summary(20.0, rate=20.0), p)
    assert d.limit == dx.RATE
    assert d.line == "limited by rate (held its offered 20 tx/s)"
    numbers = {e.name: (e.value, e.unit) for e in d.evidence}
    assert numbers["rate.offered"] == (20.0, "tx/s")
    assert numbers["rate.achieved"] == (pytest.approx(20.0), "tx/s")  # retries take no slot
    assert d.sentences()[:2] == ["offered 20 tx/s", "achieved 20 tx/s (100%)"]
    assert show_lines(d)[0] == "[bold]limited by rate (held its offered 20 tx/s)[/]"


def test_tpcc_short_of_its_rate_is_diagnosed_as_any_run(store: Store) -> None:
    params = tpcc_params(rate=20.0, connections=4)
    p = probes(device("vda", "data+wal", 6), host(20), waits=pg_waits(**IDLE_SESSIONS))
    d = stored(store, "tpcc", params, tpcc_summary(18.0, rate=20.0), p)  # 90 %
    assert d.limit == dx.CLIENT
    assert not any(e.name.startswith("rate.") for e in d.evidence)
    # without a rate (a closed loop), the same waits are the client's
    d = stored(store, "tpcc", tpcc_params(connections=4), tpcc_summary(20.0), p)
    assert d.limit == dx.CLIENT


@pytest.mark.parametrize("workload", ["pgbench", "sysbench"])
def test_a_drivers_rate_stored_as_populate_stores_its_own_is_read(
    store: Store, workload: str
) -> None:
    """pgbench's `-R` and sysbench's `--rate`: the run's parameter ``rate`` (populate's
    shape), held against the driver's tps; a run that stored none falls back to the waits."""
    p = probes(host(15), waits=pg_waits(**IDLE_SESSIONS))
    summary = {"tps": 19.7, "transactions": 1182, "latency_avg_ms": 1.9}
    d = stored(store, workload, {"engine": "postgres", "clients": 4, "rate": 20.0}, summary, p)
    assert d.limit == dx.RATE
    assert d.line == "limited by rate (held its offered 20 tx/s)"
    assert d.sentences()[1] == "achieved 19.7 tx/s (98%)"
    d = stored(store, workload, {"engine": "postgres", "clients": 4}, summary, p)
    assert d.limit == dx.CLIENT


@pytest.mark.parametrize("workload", ["pgbench", "sysbench"])
def test_a_random_schedule_is_held_within_its_counts_spread(store: Store, workload: str) -> None:
    """pgbench's -R and sysbench's --rate draw their arrivals at random: 52 transactions in 3 s
    at 20 tx/s (17.3 tx/s, 13 % short; three standard deviations of 60 arrivals are 39 %) held
    the rate; 30 (10 tx/s) did not, and the waits speak (a run in the CI read 'client' at 5 %)."""
    p = probes(host(15), waits=pg_waits(**IDLE_SESSIONS))
    params = {"engine": "postgres", "clients": 2, "rate": 20.0}
    d = stored(store, workload, params, {"tps": 17.3, "transactions": 52}, p)
    assert d.limit == dx.RATE
    d = stored(store, workload, params, {"tps": 10.0, "transactions": 30}, p)
    assert d.limit == dx.CLIENT
    d = stored(store, "populate", {**params, "connections": 2}, {"rows_per_second": 17.3}, p)
    assert d.limit != dx.RATE  # a fixed schedule: 5 %


def test_populate_keeps_its_rows_a_second(store: Store) -> None:
    p = probes(host(15), waits=pg_waits(**IDLE_SESSIONS))
    params = {"engine": "postgres", "connections": 2, "rate": 0.5}
    d = stored(store, "populate", params, {"rows_per_second": 0.5}, p)
    assert d.line == "limited by rate (held its offered 0.5 rows/s)"  # not rounded to 0


def test_a_rate_that_is_not_a_number_is_no_rate(store: Store) -> None:
    p = probes(host(15), waits=pg_waits(**IDLE_SESSIONS))
    for rate in (True, None, float("nan")):
        params = {"engine": "postgres", "clients": 4, "rate": rate}
        d = stored(store, "pgbench", params, {"tps": 20.0}, p)
        assert d.limit == dx.CLIENT, rate


# -- a --dsn server on this machine -----------------------------------------------------------

# sessions of a closed loop: WAL 40 %, the rest spread (a lead on its own)
SPREAD = {
    "IO:WalSync": 0.40,
    "CPU:running": 0.25,
    "Client:ClientRead": 0.20,
    "LWLock:BufferContent": 0.15,
}


def test_a_local_dsn_server_is_judged_with_this_machines_host_and_devices(store: Store) -> None:
    """Issue 43: over a unix socket, host and vda recorded, it read `wal-device (40 %)` on a
    saturated host: its devices and host were dropped as "not this machine's"."""
    p = probes(device("vda", "data+wal", 35), host(96), waits=pg_waits(**SPREAD))
    params = {**tpcc_params(connections=4), "dsn": SOCKET_DSN}
    d = stored(store, "tpcc", params, tpcc_summary(300.0, server_local=True), p)
    assert d.limit == dx.CPU
    names = {e.name for e in d.evidence}
    assert {"host.cpu_busy", "wal.busy", "wal-device.session_share"} <= names
    assert not any("not this machine's" in n for n in d.notes)
    # the same run from another host: its waits alone
    params = {**params, "dsn": REMOTE_DSN}
    d = stored(store, "tpcc", params, tpcc_summary(300.0, server_local=False), p)
    assert d.line == "limited by wal-device (40% of session time)"
    assert not any(e.name.startswith(("wal.", "host.")) for e in d.evidence)
    assert any("on another host" in n for n in d.notes)


def test_a_local_mariadb_dsn_server_gets_its_hosts_cpu(store: Store) -> None:
    """Issue 43: MariaDB over 127.0.0.1 on a saturated host read `candidate data-device (0 %)`."""
    waits = (
        WaitStat("performance_schema", "wait/io/file", "innodb/innodb_data_file", 40, 0.5, 0.01),
        WaitStat("performance_schema", "wait/synch/mutex", "innodb/buf_pool", 90, 0.5, 0.01),
    )
    p = probes(device("vda", "data+wal", 20), host(94), waits=waits)
    params = {**tpcc_params("mariadb", connections=4), "dsn": LOOPBACK_MARIADB}
    d = stored(store, "tpcc", params, tpcc_summary(250.0, server_local=True), p)
    assert d.line == "limited by cpu"
    first = d.evidence[0]
    assert (first.name, first.value) == ("host.cpu_busy", pytest.approx(94))


def test_a_local_server_whose_directory_was_not_found_has_unknown_devices(store: Store) -> None:
    """No data directory read (no right to read data_directory): no device series; the host
    is still this machine's, and the notes say the devices are unknown."""
    p = probes(host(95), waits=pg_waits(**SPREAD))
    params = {**tpcc_params(connections=4), "dsn": SOCKET_DSN}
    d = stored(store, "tpcc", params, tpcc_summary(300.0, server_local=True), p)
    assert d.limit == dx.CPU
    assert any("its devices are unknown" in n for n in d.notes)


def test_a_run_that_did_not_record_where_its_server_was_is_read_from_its_dsn(
    store: Store,
) -> None:
    """Runs stored before ``server_local``: the DSN's socket or loopback host says local;
    another name, or none (libpq's defaults were the connecting process's), says remote."""
    p = probes(device("vda", "data+wal", 35), host(96), waits=pg_waits(**SPREAD))
    for dsn, limit in (
        (SOCKET_DSN, dx.CPU),
        ("postgresql://bench@[::1]:5433/iolab", dx.CPU),
        (REMOTE_DSN, dx.WAL),
        ("postgresql:///iolab", dx.WAL),
    ):
        params = {**tpcc_params(connections=4), "dsn": dsn}
        d = stored(store, "tpcc", params, tpcc_summary(300.0), p)
        assert d.limit == limit, dsn


def test_where_a_dsn_names_its_server() -> None:
    for host in ("/run/postgresql", "@abstract", "localhost", "127.0.0.1", "127.8.9.1", "::1"):
        assert local_host(host), host
    for host in (None, "", "db.example.net", "10.0.0.5", "fd77::1", "localhost.example.com"):
        assert not local_host(host), host
    local = (
        SOCKET_DSN,
        LOOPBACK_MARIADB,
        "mysql://u@db.example.net/x?unix_socket=/run/mysqld/mysqld.sock",
        "postgresql://u@%2Frun%2Fpostgresql/x",
        "postgresql://u@localhost/x?host=/tmp,/run/postgresql",
    )
    for dsn in local:
        assert dsn_is_local(parse_dsn(dsn)), dsn
    remote = (REMOTE_DSN, "postgresql:///x", "postgresql://u@localhost/x?host=/tmp,db.example.net")
    for dsn in remote:
        assert not dsn_is_local(parse_dsn(dsn)), dsn


def test_a_wal_latency_bound_run_reads_back_as_results_show_prints_it(store: Store) -> None:
    """Issue 46 item 2: the demo's PostgreSQL populate at 8 connections, 62 % of its sessions'
    time on the WAL (LWLock WALWrite 52 %, IO WalSync 10 %), its WAL device 35 % busy, read
    `none singled out (candidates: wal-device or client)`; it reads the WAL's latency."""
    waits = pg_waits(
        **{
            "LWLock:WALWrite": 0.52,
            "IO:WalSync": 0.10,
            "Client:ClientRead": 0.26,
            "CPU:running": 0.12,
        }
    )
    p = probes(device("vda", "data+wal", 35), host(45), waits=waits)
    params = {"engine": "postgres", "connections": 8}
    d = stored(store, "populate", params, {"rows_per_second": 2400.0}, p)
    assert d.limit == dx.WAL_LATENCY
    lines = show_lines(d)
    assert lines[0] == "[bold]limited by wal-latency (62% of session time)[/]"
    assert lines[2] == (
        "  the wal device vda was busy 35 %, queue 0.4, 300 writes/s, 4.00 MB/s, 0.90 ms per write"
    )
    assert lines[3].startswith("  the wal device vda used at most 35% of its capacity")
    assert d.as_json()["numbers"][-1] == {"name": "wal.capacity_share", "value": 35.0, "unit": "%"}
