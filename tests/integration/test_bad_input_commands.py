"""Bad input to every command but populate, plan and run (their own modules): each case must exit
2 with a message naming the option or argument, print no traceback and record nothing.

The cases are data: a new option gets a row. ``{tmp}`` is a fresh directory of the test, ``{db}``
a results database holding one finished populate run (run 1, experiment "populate sqlite").
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
IOLAB = [sys.executable, "-m", "iolab"]

# (argv, what the message must name)
DISK = [
    (["disk", "{tmp}", "--profile", "nope"], "--profile"),
    (["disk", "{tmp}", "--size", "0"], "--size"),
    (["disk", "{tmp}", "--size", "-1GiB"], "--size"),
    (["disk", "{tmp}", "--size", "lots"], "--size"),
    (["disk", "{tmp}", "--size", "1PB"], "--size"),
    (["disk", "{tmp}", "--runs", "0"], "--runs"),
    (["disk", "{tmp}", "--runs", "-2"], "--runs"),
    (["disk", "{tmp}", "--runs", "abc"], "--runs"),
    (["disk", "{tmp}", "--duration", "0"], "--duration"),
    (["disk", "{tmp}", "--duration", "abc"], "--duration"),
    (["disk", "{tmp}", "--duration", "-5s"], "--duration"),
    (["disk", "{tmp}", "--interval", "-1"], "--interval"),
    (["disk", "{tmp}", "--interval", "soon"], "--interval"),
    (["disk", "{tmp}", "--data", "zeros-ish"], "--data"),
    (["disk", "{tmp}", "--profile", "sweep", "--bs", "0"], "--bs"),
    (["disk", "{tmp}", "--profile", "sweep", "--bs", "big"], "--bs"),
    (["disk", "{tmp}", "--profile", "sweep", "--qd", "0"], "--qd"),
    (["disk", "{tmp}", "--profile", "sweep", "--qd", "x"], "--qd"),
    (["disk", "{tmp}", "--profile", "sweep", "--qd", "1000000"], "--qd"),
    (["disk", "{tmp}", "--profile", "sweep", "--threads", "0"], "--threads"),
    (["disk", "{tmp}", "--profile", "sweep", "--threads", "100000"], "--threads"),
    (["disk", "{tmp}", "--profile", "sweep", "--rw", "sideways"], "--rw"),
    (["disk", "{tmp}", "--profile", "sweep", "--rwmix", "101"], "--rwmix"),
    (["disk", "{tmp}", "--profile", "sweep", "--rwmix", "-1"], "--rwmix"),
    (["disk", "{tmp}", "--sample-interval", "0.001"], "--sample-interval"),
    (["disk", "{tmp}", "--sample-interval", "often"], "--sample-interval"),
    (["disk", "{tmp}/missing"], "missing"),
    (["disk", "{tmp}/file"], "file"),
    (["disk", "device:nosuchdevice"], "nosuchdevice"),
    (["disk", "{tmp}", "--results", "/proc/r.db"], "--results"),
    (["disk", "{tmp}", "--results", "{tmp}"], "--results"),
]
TPCH = [
    (["tpch", "--engine", "oracle"], "--engine"),
    (["tpch", "--engine", "sqlite"], "--engine"),
    (["tpch", "--sf", "0"], "--sf"),
    (["tpch", "--sf", "-1"], "--sf"),
    (["tpch", "--sf", "huge"], "--sf"),
    (["tpch", "--sf", "1e9"], "--sf"),
    (["tpch", "--sf", "nan"], "--sf"),
    (["tpch", "--files", "0"], "--files"),
    (["tpch", "--compression", "maybe"], "--compression"),
    (["tpch", "--engine", "postgres", "--compression", "on"], "--compression"),
    (["tpch", "--timeout", "0"], "--timeout"),
    (["tpch", "--timeout", "never"], "--timeout"),
    (["tpch", "--queries", "0"], "--queries"),
    (["tpch", "--queries", "23"], "--queries"),
    (["tpch", "--queries", "one"], "--queries"),
    (["tpch", "--queries", "1,1"], "--queries"),
    (["tpch", "--queries", ""], "--queries"),
    (["tpch", "--loaders", "0"], "--loaders"),
    (["tpch", "--memory", "lots"], "--memory"),
    (["tpch", "--cpus", "0"], "--cpus"),
    (["tpch", "--engine", "postgres", "--memory", "64MiB"], "--memory"),
    (["tpch", "--engine", "mariadb", "--memory", "64TiB"], "--memory"),
    (["tpch", "--cpus", "4096"], "--cpus"),
    (["tpch", "--pg-bin", "{tmp}"], "--pg-bin"),
    (["tpch", "--set", "threads"], "--set"),
    (["tpch", "--set", "force_compression=zstd"], "--set"),
    (["tpch", "--data-dir", "{tmp}/missing"], "--data-dir"),
    (["tpch", "--data-dir", "{tmp}/file"], "--data-dir"),
    (["tpch", "--temp-dir", "{tmp}/missing"], "--temp-dir"),
    (["tpch", "--sample-interval", "0.01"], "--sample-interval"),
    (["tpch", "--results", "/proc/r.db"], "--results"),
]
RESULTS = [
    (["results", "show", "0", "--results", "{db}"], "0"),
    (["results", "show", "777", "--results", "{db}"], "777"),
    (["results", "show", "99999999999999999999", "--results", "{db}"], "99999999999999999999"),
    (["results", "show", "x", "--results", "{db}"], "RUN"),
    (["results", "list", "--limit", "0", "--results", "{db}"], "--limit"),
    (["results", "list", "--results", "{tmp}/missing.db"], "--results"),
    (["results", "list", "--results", "{tmp}/file"], "--results"),
    (["results", "log", "777", "--results", "{db}"], "777"),
]
REPORT = [
    (["report", "no such experiment", "--results", "{db}"], "no such experiment"),
    (["report", "{tmp}/missing.toml", "--results", "{db}"], "missing.toml"),
    (["report", "populate sqlite", "--metric", "nope", "--results", "{db}"], "--metric"),
    (["report", "populate sqlite", "--timelines", "some", "--results", "{db}"], "--timelines"),
    (["report", "populate sqlite", "--html", "/proc/x.html", "--results", "{db}"], "--html"),
    (["report", "populate sqlite", "--html", "{tmp}", "--results", "{db}"], "--html"),
    (["report", "populate sqlite", "--html", "{db}", "--results", "{db}"], "results database"),
    (["report", "populate sqlite", "--html", "{tmp}/file", "--results", "{db}"], "did not write"),
    (["report", "populate sqlite", "--with-disk", "777", "--results", "{db}"], "--with-disk"),
    (["report", "populate sqlite", "--with-disk", "1", "--results", "{db}"], "--with-disk"),
    (["report", "populate sqlite", "--png", "{tmp}/file", "--results", "{db}"], "--png"),
    (["report", "populate sqlite", "--png", "/proc/x", "--results", "{db}"], "--png"),
]
COMPARE = [
    (["compare", "1-99999999999", "1", "--results", "{db}"], "1-99999999999"),
    (["compare", "777", "1", "--results", "{db}"], "777"),
    (["compare", "1", "no such experiment", "--results", "{db}"], "no such experiment"),
    (["compare", "3-1", "1", "--results", "{db}"], "3-1"),
    (["compare", "1", "1", "--metric", "nope", "--results", "{db}"], "--metric"),
    (["compare", "x,y", "1", "--results", "{db}"], "x,y"),
    # across kinds: run 2 is a disk run
    (["compare", "2", "1", "--results", "{db}"], "B: '1' is not allowed; give runs measuring"),
    (["compare", "1", "2", "--results", "{db}"], "B: '2' is not allowed; give runs measuring"),
    (["compare", "1,2", "1", "--results", "{db}"], "A: '1,2' is not allowed; give runs of one"),
    (["compare", "2", "populate sqlite", "--results", "{db}"], "give runs measuring"),
]
EXPORT = [
    (["export", "populate sqlite", "--format", "xml", "--results", "{db}"], "--format"),
    (["export", "populate sqlite", "-o", "/proc/x.csv", "--results", "{db}"], "--output"),
    (["export", "populate sqlite", "--format", "parquet", "--results", "{db}"], "--output"),
    (
        ["export", "populate sqlite", "--format", "parquet", "-o", "{tmp}", "--results", "{db}"],
        "--output",
    ),
    (["export", "no such experiment", "--results", "{db}"], "no such experiment"),
    (["export", "populate sqlite", "-o", "{db}", "--results", "{db}"], "results database"),
    (["export", "populate sqlite", "-o", "{db}-wal", "--results", "{db}"], "results database"),
    (["export", "populate sqlite", "-o", "{tmp}/file", "--results", "{db}"], "did not write"),
    (
        ["export", "populate sqlite", "--histograms", "{tmp}/file", "--results", "{db}"],
        "--histograms",
    ),
    (["export", "populate sqlite", "--histograms", "/proc/x", "--results", "{db}"], "--histograms"),
]
TIMELINE = [
    (["timeline", "777", "-o", "{tmp}/t.html", "--results", "{db}"], "777"),
    (["timeline", "1", "-o", "{tmp}/t.txt", "--results", "{db}"], "--output"),
    (["timeline", "1", "-o", "/proc/x.html", "--results", "{db}"], "--output"),
    (["timeline", "1", "-o", "{tmp}", "--results", "{db}"], "--output"),
    (["timeline", "1", "-o", "{tmp}/page.html", "--results", "{db}"], "did not write"),
]
TESTBED = [
    (["testbed", "up", "{tmp}/missing.toml"], "missing.toml"),
    (["testbed", "up", "{tmp}/file"], "file"),
    (["testbed", "up", "{tmp}/bad-size.toml"], "size"),
    (["testbed", "up", "{tmp}/bad-key.toml"], "sise"),
    (["testbed", "up", "{tmp}/bad-fs.toml"], "filesystem"),
    (["testbed", "up", "{tmp}/bad-iops.toml"], "write_iops"),
    (["testbed", "up", "{tmp}/bad-fault.toml"], "devices.a.fault.error: 'EBUSY'"),
    (["testbed", "up", "{tmp}/nan-mbps.toml"], "devices.a.read_mbps: nan"),
    (["testbed", "up", "{tmp}/inf-mbps.toml"], "devices.a.write_mbps: inf"),
    (["testbed", "up", "{tmp}/read-only.toml"], "devices.a.mount_options: 'ro'"),
    (["testbed", "up", "{tmp}/wrapping-iops.toml"], "devices.a.read_iops: 4294967301"),
    (["testbed", "up", "{tmp}/null-member.toml"], "devices.a.member.model: 'null'"),
    (["testbed", "up", "{tmp}/bad-model.toml"], "devices.a.model: 'floppy' is not allowed"),
    (["testbed", "up", "{tmp}/bad-rpm.toml"], "devices.a.rpm: 'fast' is not allowed"),
    (["testbed", "up", "{tmp}/bad-raid10.toml"], "devices.a.members: 3 is not allowed"),
    (["testbed", "up", "{tmp}/bad-member.toml"], "devices.a.member.model: 'raid0'"),
    (["testbed", "up", "{tmp}/bad-fault-rate.toml"], "devices.a.fault.rate: 2 is not allowed"),
    (["testbed", "up", "{tmp}/bad-fault-key.toml"], "devices.a.fault.when: 3 is not allowed"),
    (["testbed", "up", "{tmp}/fault-no-model.toml"], "a fault needs a model device"),
    (["testbed", "up", "{tmp}/fault-text.toml"], "devices.a.fault: 'EIO' is not allowed"),
]
DEMO = [
    (["demo", "--rows", "0"], "--rows"),
    (["demo", "--rows", "-5"], "--rows"),
    (["demo", "--rows", "many"], "--rows"),
    (["demo", "--html", "/proc/x.html"], "--html"),
    (["demo", "--html", "{db}", "--results", "{db}"], "results database"),
]
# the fleet's names and addresses: refused before Ray is asked, so no Ray process starts and
# no port opens (nothing here needs the fleet tests' network namespace)
HEAD = "127.0.0.1:6379"
FLEET = [
    (["fleet", "join", HEAD, "--name", "a/b"], "--name: 'a/b'"),
    (["fleet", "join", HEAD, "--name", "<script>alert(1)</script>"], "--name: '<script>"),
    (["fleet", "join", HEAD, "--name", "x\ny"], "--name: 'x\\ny'"),
    (["fleet", "join", HEAD, "--name", ""], "--name: ''"),
    (["fleet", "start", "--name", "a b"], "--name: 'a b'"),
    (["fleet", "join", "nohost", "--name", "zz"], "HEAD: 'nohost'"),
    (["fleet", "join", "127.0.0.1:0", "--name", "zz"], "HEAD: '127.0.0.1:0'"),
    (["fleet", "join", "[::1:6379", "--name", "zz"], "HEAD: '[::1:6379'"),
    (["fleet", "status", "--address", "foo:bar"], "--address: 'foo:bar'"),
    (["fleet", "status", "--address", "foo bar"], "--address: 'foo bar'"),
    (["fleet", "start", "--port", "99999"], "--port: 99999"),
    (["fleet", "start", "--port", "0"], "--port: 0"),
    (["fleet", "start", "--node-ip-address", "notanip"], "--node-ip-address: 'notanip'"),
    (["fleet", "start", "--node-ip-address", "192.0.2.77"], "--node-ip-address: '192.0.2.77'"),
    (
        ["fleet", "join", HEAD, "--name", "zz", "--node-ip-address", "1.2.3"],
        "--node-ip-address: '1.2.3'",
    ),
]
TPCC = [
    (["tpcc", "--engine", "duckdb"], "--engine"),
    (["tpcc", "--warehouses", "0"], "--warehouses"),
    (["tpcc", "--memory", "lots"], "--memory"),
    (["tpcc", "--engine", "postgres", "--memory", "64MiB"], "--memory"),
    (["tpcc", "--cpus", "4096"], "--cpus"),
    (["tpcc", "--dsn", "postgresql://u@h/db", "--memory", "1GiB"], "--memory"),
    (["tpcc", "--mix", "50,50,1,0,0"], "--mix"),
    (["tpcc", "--engine", "sqlite", "--mode", "server"], "--mode"),
    (["tpcc", "--warmup", "soon"], "--warmup"),
    (["tpcc", "--duration", "never"], "--duration"),
]
DRIVERS = [
    (["pgbench", "--", "-h", "/tmp", "-T", "3"], "'-h /tmp'"),
    (["pgbench", "--", "-c", "2", "mydb"], "'mydb'"),
    (["pgbench", "--init-args", "-i -p 5433"], "--init-args"),
    (["pgbench", "--", "-f", "{tmp}/missing.sql"], "missing.sql"),
    (["pgbench", "--engine", "mariadb", "--", "-T", "3"], "--engine"),
    (["sysbench", "--engine", "sqlite", "--", "oltp_read_write"], "--engine"),
    (["sysbench", "--", "oltp_read_write", "--mysql-socket=/tmp/x"], "--mysql-socket"),
    (["sysbench", "--", "{tmp}/missing.lua"], "missing.lua"),
    (["sysbench"], "sysbench SCRIPT"),
    (["sysbench", "--dsn", "mysql://u@h/db", "--", "oltp_read_write"], "--dsn"),  # --no-init
    (
        ["sysbench", "--dsn", "postgresql://u@h/db", "--no-init", "--", "oltp_read_write"],
        "--engine",
    ),
    (
        ["sysbench", "--dsn", "mysql://u@h/db", "--no-init", "--data-dir", "{tmp}", "--", "x"],
        "--data-dir",
    ),
]
RECORDING = ("disk", "tpch", "tpcc", "pgbench", "sysbench")  # commands that would record a run
CASES = DISK + TPCH + RESULTS + REPORT + COMPARE + EXPORT + TIMELINE + TESTBED + DEMO + FLEET
CASES += TPCC + DRIVERS
TESTBEDS = {
    "bad-size.toml": '[devices.a]\nsize = "0"\n',
    "bad-key.toml": '[devices.a]\nsise = "64MiB"\n',
    "bad-fs.toml": '[devices.a]\nsize = "64MiB"\nfilesystem = "fat12"\n',
    "bad-iops.toml": '[devices.a]\nsize = "64MiB"\nwrite_iops = -3\n',
    "bad-fault.toml": '[devices.a]\nsize = "64MiB"\nmodel = "null"\nfault = { error = "EBUSY" }\n',
    "nan-mbps.toml": '[devices.a]\nsize = "64MiB"\nread_mbps = nan\n',
    "inf-mbps.toml": '[devices.a]\nsize = "64MiB"\nwrite_mbps = inf\n',
    "read-only.toml": '[devices.a]\nsize = "64MiB"\nmount_options = "ro"\n',
    "wrapping-iops.toml": '[devices.a]\nsize = "64MiB"\nread_iops = 4294967301\n',
    "null-member.toml": (
        '[devices.a]\nsize = "64MiB"\nmodel = "raid0"\nmembers = 2\nmember = { model = "null" }\n'
    ),
    "bad-model.toml": '[devices.a]\nsize = "64MiB"\nmodel = "floppy"\n',
    "bad-rpm.toml": '[devices.a]\nsize = "64MiB"\nmodel = "hdd"\nrpm = "fast"\n',
    "bad-raid10.toml": (
        '[devices.a]\nsize = "64MiB"\nmodel = "raid10"\nmembers = 3\nmember = { model = "hdd" }\n'
    ),
    "bad-member.toml": (
        '[devices.a]\nsize = "64MiB"\nmodel = "raid1"\nmembers = 2\nmember = { model = "raid0" }\n'
    ),
    "bad-fault-rate.toml": '[devices.a]\nsize = "64MiB"\nmodel = "null"\nfault = { rate = 2 }\n',
    "bad-fault-key.toml": '[devices.a]\nsize = "64MiB"\nmodel = "null"\nfault = { when = 3 }\n',
    "fault-no-model.toml": '[devices.a]\nsize = "64MiB"\nfault = { op = "write" }\n',
    "fault-text.toml": '[devices.a]\nsize = "64MiB"\nmodel = "null"\nfault = "EIO"\n',
}


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A results database with one finished populate run of SQLite (run 1) and one disk run
    (run 2)."""
    base = tmp_path_factory.mktemp("seed")
    db = base / "seed.db"
    (base / "disk").mkdir()
    for argv in (
        ["populate", "--rows", "200", "--connections", "2"],
        [
            *["disk", str(base / "disk"), "--size", "16MiB"],
            *["--runs", "1", "--duration", "1", "--interval", "0"],
        ],
    ):
        done = subprocess.run(
            [*IOLAB, *argv, "--results", str(db)],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stderr
    return db


@pytest.fixture
def place(tmp_path: Path, seeded: Path) -> dict[str, str]:
    (tmp_path / "file").write_text("not a directory, not a database\n")
    (tmp_path / "page.html").write_text("<!DOCTYPE html><title>not iolab's</title>\n")
    for name, text in TESTBEDS.items():
        (tmp_path / name).write_text(text)
    db = tmp_path / "results.db"
    shutil.copy(seeded, db)
    return {"tmp": str(tmp_path), "db": str(db)}


def run_counts(db: Path) -> tuple[int, int]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        runs = conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
        experiments = conn.execute("SELECT COUNT(*) FROM experiments").fetchone()[0]
    return int(runs), int(experiments)


@pytest.mark.parametrize(("argv", "named"), CASES, ids=[" ".join(a) for a, _ in CASES])
def test_bad_input_is_refused_in_one_line(
    argv: list[str], named: str, place: dict[str, str], tmp_path: Path
) -> None:
    args = [a.format(**place) for a in argv]
    if "--results" not in args and args[0] in RECORDING:  # a database of their own, given
        args[1:1] = ["--results", str(tmp_path / "fresh.db")]  # before a driver's `--`
    db = Path(place["db"])
    before = run_counts(db)
    done = subprocess.run(
        [*IOLAB, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
        env=_env(tmp_path),
    )
    err = done.stderr
    assert done.returncode == 2, f"exit {done.returncode}: {err}{done.stdout}"
    assert "Traceback" not in err
    assert named.format(**place) in err, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    # one line, iolab's own refusals and the argument parser's alike (no usage box)
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert run_counts(db) == before
    fresh = tmp_path / "fresh.db"
    assert not fresh.exists() or run_counts(fresh)[0] == 0
    assert not list(tmp_path.glob(".iolab-*")), "a leftover in the directory under test"


def _env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("IOLAB_RESULTS", None)
    env["IOLAB_TESTBED_DIR"] = str(tmp_path / "testbed-state")
    env["IOLAB_CACHE"] = str(tmp_path / "cache")
    return env
