"""The "limited by" verdict on limits iolab induces itself (the short version of
bench/diagnosis_truth.py): per engine, the WAL / redo log on a testbed device throttled to 100
write IOPS must read ``wal-device``, and an open-loop ``--rate`` far below capacity ``rate``,
each with its evidence in ``iolab results show --json`` and in the text; TPC-C's ``--rate`` on
a ``--dsn`` server of this machine reads ``rate``, with this machine's host and devices."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from iolab import testbed
from iolab.engines.interface import Layout, running
from iolab.engines.postgres import PORT, PostgresEngine
from iolab.system.devices import describe
from tests.conftest import make_dirs, requires_mariadb
from tests.integration.conftest import private_testbed

pytestmark = pytest.mark.integration
NO_TESTBED = testbed.unavailable_reason(limits=True)

DEVICES = """
[devices.whywal]
size = "256MiB"  # MariaDB preallocates a 96 MiB redo log
write_iops = 100
"""


def iolab(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "iolab", *args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env=env,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def walbed(open_tmp: Path, results_db: Path) -> Iterator[dict[str, str]]:
    """A private testbed with one WAL device capped at 100 write IOPS; taken down after."""
    with private_testbed(open_tmp, DEVICES) as env:
        yield env


def diagnosis(run: int, env: dict[str, str]) -> tuple[dict[str, object], str]:
    shown = iolab("results", "show", str(run), "--json", env=env)
    assert shown.returncode == 0, shown.stderr
    text = iolab("results", "show", str(run), env=env)
    return json.loads(shown.stdout)["diagnosis"], " ".join(text.stdout.split())


@pytest.mark.skipif(NO_TESTBED is not None, reason=str(NO_TESTBED))
@pytest.mark.parametrize("engine", ["postgres", pytest.param("mariadb", marks=requires_mariadb)])
def test_a_capped_wal_device_and_a_held_rate_are_named(engine: str, walbed: dict[str, str]) -> None:
    env = walbed
    capped = iolab(
        "populate", "--engine", engine, "--wal-dir", "device:whywal", "--rows", "600",
        "--connections", "4", env=env,
    )  # fmt: skip
    assert capped.returncode == 0, capped.stderr
    d, text = diagnosis(1, env)
    assert d["limit"] == "wal-device", d
    numbers = {n["name"]: n for n in d["numbers"]}  # type: ignore[attr-defined]
    cap = numbers["wal.cap_share"]
    assert cap["unit"] == "%" and cap["value"] >= 90, cap
    assert "of its write IOPS cap (testbed throttle of whywal)" in text
    assert "limited by wal-device" in text
    if engine == "postgres":  # MariaDB 10.8+ times no redo log wait: the cap speaks alone
        assert d["share"] is not None and d["share"] >= 0.5, d
        assert "sessions waited on the WAL / redo log" in text

    rate = iolab(
        "populate", "--engine", engine, "--rate", "40", "--rows", "120", "--connections", "2",
        env=env,
    )  # fmt: skip
    assert rate.returncode == 0, rate.stderr
    d, text = diagnosis(2, env)
    assert d["limit"] == "rate", d
    numbers = {n["name"]: n for n in d["numbers"]}  # type: ignore[attr-defined]
    assert numbers["rate.offered"] == {"name": "rate.offered", "value": 40.0, "unit": "rows/s"}
    assert "limited by rate" in text and "offered 40 rows/s" in text

    # iolab compare says each side's limit and that it moved
    compared = iolab(
        "compare", "1", "2", "--metric", "latency.transaction.p99_us", "--json", env=env
    )
    assert compared.returncode == 0, compared.stderr
    why = json.loads(compared.stdout)["why"]
    assert (why["a"]["limit"], why["b"]["limit"]) == ("wal-device", "rate")
    assert "the limit moved from rate (runs 2) to wal-device (runs 1)" in why["why"]


def test_tpcc_at_a_rate_on_a_server_of_yours_on_this_machine(
    cache: Path, open_tmp: Path, results_db: Path
) -> None:
    """Issue 43: `iolab tpcc --dsn` over a unix socket at a rate the server holds read
    `limited by client (100 % of session time)`, and the server, on this machine, was taken
    for another host's. The verdict is the rate, and the server's host and devices are this
    machine's: its data directory's device recorded, no "another host" note."""
    (d,) = make_dirs(open_tmp, "server")
    server = PostgresEngine(Layout(data_dirs=(d,)))
    with running(server):
        dsn = f"postgresql://{server.user.name}@/iolab?host={server.socket_dir}&port={PORT}"
        done = iolab(
            "tpcc", "--dsn", dsn, "--rate", "10", "--connections", "2", "--warmup", "1s",
            "--duration", "8s", "--json", env=dict(os.environ),
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)
    shown = iolab("results", "show", str(run["run"]), "--json", env=dict(os.environ))
    assert shown.returncode == 0, shown.stderr
    doc = json.loads(shown.stdout)
    dx = doc["diagnosis"]
    assert dx["limit"] == "rate", dx
    numbers = {n["name"]: (n["value"], n["unit"]) for n in dx["numbers"]}
    assert numbers["rate.offered"] == (10.0, "tx/s")
    assert 9.5 <= numbers["rate.achieved"][0] <= 10.5, numbers
    assert not any("another host" in n or "unknown" in n for n in dx["notes"]), dx["notes"]
    assert run["server_local"] is True
    # the server's data directory, read from the server, is on a device of this machine
    device = describe(d).device
    assert device is not None, "the test's directory is on a block device (/var/tmp)"
    roles = {r["role"]: r["device"] for r in doc["probes"]["roles"]}
    assert roles.get("data") == device.name, roles
    subjects = {(s["probe"], s["subject"]) for s in doc["probes"]["series"]}
    assert ("device", device.name) in subjects and ("host", "all") in subjects
    text = iolab("results", "show", str(run["run"]), env=dict(os.environ))
    assert "limited by rate (held its offered 10 tx/s)" in " ".join(text.stdout.split())
