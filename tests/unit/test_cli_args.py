"""Every command's argument handling, in-process (tests/unit/cli.py): bad options and values
end in exit 2 and one line ``error: FIELD: VALUE is not allowed; WHAT IS`` (what the parser
itself refuses too: an unknown option or command, with the closest name), nothing recorded;
--help names the key options; --version. No program starts (:func:`no_programs`); the same
refusals through a real process, with servers where the check needs one, are in
tests/integration/test_bad_input_*.py."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from iolab import __version__
from iolab.cli.main import COMMANDS
from iolab.results import RunOutcome
from iolab.runner.single import CommandRun, execute
from iolab.store import open_store
from iolab.workloads.caps import CPUS_HELP, MEMORY_HELP
from tests.unit.cli import Result, iolab, needs, no_programs

NOT_ALLOWED = "is not allowed;"
SIZE = "use a whole number of bytes or a number with a unit: 4k, 512MiB, 1GiB, 10GB"
DURATION = "use seconds or a number with a unit: 500ms, 5s, 2m (or 2min), 1h"
WARMUP = 'give rows (a whole number, e.g. 10000) or a duration with its unit (e.g. "30s")'
INT_LIST = "use whole numbers >= 1, comma-separated (1,8,32)"
RUN_ID = "give a run id from `iolab results list`: a whole number from 1 to 9223372036854775807"
RATE = (
    "give rows per second over all loaders, more than 0 and at most 1,000,000 (the most one "
    "process's schedule places)"
)
SET = "write NAME=VALUE, e.g. --set max_wal_size=4GB"
NO_DEVICE = "no testbed device is up; bring some up with `iolab testbed up TESTBED.toml`"
NO_RUN = "runs are numbered 1 to 1 in {db} (see `iolab results list`)"
NO_EXPERIMENT = "give an experiment file, name or id in {db}: 1 'populate sqlite'"
RESULTS_DB = "it is the results database ({db} or its -wal, -shm or -journal); name another file"
NOT_OURS = (
    "it holds something iolab did not write (not one of its reports, timelines, charts or "
    "exports); iolab leaves it as it is: name a new file, or remove it first"
)
SIZE_MIN = "give at least {0} ({1} bytes): the test file is written and read in blocks of up to {0}"
NOT_BOOL = "give a whole number, not true or false"


@pytest.fixture(autouse=True)
def _no_programs(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    with no_programs(monkeypatch):
        yield


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A results database with one finished populate run (run 1, experiment "populate
    sqlite"), recorded as `iolab populate` records it, by a body that starts nothing."""
    db = tmp_path_factory.mktemp("seed") / "seed.db"

    def body(outcome: RunOutcome) -> None:
        outcome.summary.update({"elapsed_seconds": 1.5, "rows": 200, "rows_per_second": 133.0})

    spec = CommandRun("populate sqlite", "populate", {"engine": "sqlite", "rows": 200}, {}, {})
    with open_store(db) as store:
        execute(store, spec, body)
    return db


@pytest.fixture
def place(tmp_path: Path, seeded: Path) -> dict[str, str]:
    """``{tmp}``: a directory with ``data``, ``wal`` (empty), ``full`` (holding a file), a
    plain ``file`` and ``bin/fio`` (a stub); ``{db}``: a copy of the seeded results database."""
    for name in ("data", "wal", "full"):
        (tmp_path / name).mkdir()
    (tmp_path / "full" / "theirs.txt").write_text("not iolab's\n")
    (tmp_path / "file").write_text("not a directory, not a database\n")
    db = tmp_path / "results.db"
    db.write_bytes(seeded.read_bytes())
    stub = tmp_path / "bin" / "fio"  # `iolab disk` looks for fio first; it is never started
    stub.parent.mkdir()
    stub.write_text("#!/bin/sh\nexit 99\n")
    stub.chmod(0o755)
    return {"tmp": str(tmp_path), "db": str(db)}


def counts(db: Path) -> tuple[int, int]:
    """(experiments, runs) in a results database."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        experiments = conn.execute("SELECT COUNT(*) FROM experiments").fetchone()[0]
        runs = conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
    return int(experiments), int(runs)


def refused(argv: list[str], place: dict[str, str]) -> Result:
    """Run ``argv`` (with ``{tmp}`` and ``{db}`` filled in; IOLAB_RESULTS is a fresh file in
    ``{tmp}`` unless --results names one, and the testbed's state and the TPC-H cache are
    ``{tmp}``'s) and check that nothing was recorded."""
    args = [a.format(**place) for a in argv]
    fresh = Path(place["tmp"]) / "fresh.db"
    before = counts(Path(place["db"]))
    env = {
        "PATH": f"{place['tmp']}/bin:{os.environ.get('PATH', '')}",  # fio found, on any machine
        "IOLAB_RESULTS": str(fresh),
        "IOLAB_TESTBED_DIR": str(Path(place["tmp"], "testbed-state")),  # no device is up
        "IOLAB_CACHE": str(Path(place["tmp"], "cache")),
    }
    done = iolab(*args, env=env)
    assert counts(Path(place["db"])) == before
    assert not fresh.exists() or counts(fresh) == (0, 0)
    assert list((Path(place["tmp"]) / "data").iterdir()) == []
    return done


def assert_one_line(done: Result, line: str) -> None:
    assert (done.code, done.error_lines, done.stdout) == (2, [line], ""), done


# --- iolab's own refusals: exit 2 and one line ------------------------------------------------

T = "{tmp}"
DB = ["--results", "{db}"]
# (argv, the whole error line)
DISK: list[tuple[list[str], str]] = [
    (
        ["disk", T, "--profile", "nope"],
        "--profile: 'nope' {} choose one of: default, nvme, peak, real, db, quick, sweep",
    ),
    (["disk", T, "--size", "lots"], f"--size: 'lots' {{}} {SIZE}"),
    (["disk", T, "--size", "-1GiB"], f"--size: '-1GiB' {{}} {SIZE}"),
    (["disk", T, "--runs", "0"], "--runs: 0 {} give at least 1 measured pass"),
    (["disk", T, "--duration", "0"], "--duration: '0' {} give at least 1 s"),
    (["disk", T, "--duration", "abc"], f"--duration: 'abc' {{}} {DURATION}"),
    (["disk", T, "--duration", "-5s"], f"--duration: '-5s' {{}} {DURATION}"),
    (["disk", T, "--interval", "soon"], f"--interval: 'soon' {{}} {DURATION}"),
    (["disk", T, "--data", "zeros-ish"], "--data: 'zeros-ish' {} choose one of: random, zero"),
    (
        ["disk", T, "--bs", "4k"],
        "--bs: '4k' {} goes with the sweep profile only",
    ),
    (["disk", T, "--profile", "sweep", "--bs", "big"], f"--bs: 'big' {{}} {SIZE}"),
    (["disk", T, "--profile", "sweep", "--qd", "0"], f"--qd: '0' {{}} {INT_LIST}"),
    (["disk", T, "--profile", "sweep", "--qd", "x"], f"--qd: 'x' {{}} {INT_LIST}"),
    (
        ["disk", T, "--profile", "sweep", "--qd", "1000000"],
        "--qd: '1000000' {} give queue depths from 1 to 1024",
    ),
    (["disk", T, "--profile", "sweep", "--threads", "0"], f"--threads: '0' {{}} {INT_LIST}"),
    (
        ["disk", T, "--profile", "sweep", "--rw", "sideways"],
        "--rw: 'sideways' {} choose one of: randread, randwrite, read, write",
    ),
    (
        ["disk", T, "--profile", "sweep", "--rwmix", "101"],
        "--rwmix: 101 {} give the read share in percent, 0 to 100",
    ),
    (["disk", T, "--sample-interval", "0.001"], "--sample-interval: '0.001' {} give 100ms or more"),
    (["disk", T, "--sample-interval", "often"], f"--sample-interval: 'often' {{}} {DURATION}"),
    (["disk", "{tmp}/missing"], "PATH: '{tmp}/missing' {} give an existing directory to test"),
    (
        ["disk", "{tmp}/file"],
        "PATH: '{tmp}/file' {} give a directory; iolab creates its test file there",
    ),
    (["disk", "device:nosuchdevice"], f"PATH: 'device:nosuchdevice' {{}} {NO_DEVICE}"),
    (["disk", T, "--size", "1"], f"--size: 1 {{}} {SIZE_MIN.format('1.0 MiB', '1,048,576')}"),
    (
        ["disk", T, "--size", "4097"],
        f"--size: 4097 {{}} {SIZE_MIN.format('1.0 MiB', '1,048,576')}",
    ),
    (
        ["disk", T, "--size", "2MiB", "--profile", "sweep", "--bs", "4MiB"],
        f"--size: 2097152 {{}} {SIZE_MIN.format('4.0 MiB', '4,194,304')}",
    ),
]
POPULATE: list[tuple[list[str], str]] = [
    (["populate", "--rows", "0"], "--rows: 0 {} give 1 or more rows"),
    (["populate", "--rows", "-5"], "--rows: -5 {} give 1 or more rows"),
    (
        ["populate", "--rows", "4", "--connections", "8"],
        "--rows: 4 {} give at least one row per connection (>= 8)",
    ),
    (
        ["populate", "--rows", "100", "--bytes", "1MB"],
        "--rows: 100 {} give either --rows or --bytes, not both",
    ),
    (["populate", "--bytes", "lots"], f"--bytes: 'lots' {{}} {SIZE}"),
    (["populate", "--connections", "0"], "--connections: 0 {} give at least 1 loader connection"),
    (["populate", "--commit-every", "0"], "--commit-every: 0 {} give 1 or more rows per commit"),
    (["populate", "--batch", "0"], "--batch: 0 {} give 1 or more rows per statement"),
    (["populate", "--files", "0"], "--files: 0 {} give a whole number of data files, 1 or more"),
    (["populate", "--method", "bulk"], "--method: 'bulk' {} choose one of: insert, multirow, copy"),
    (
        ["populate", "--method", "copy"],
        "--method (with sqlite): 'copy' {} choose one of: insert, multirow",
    ),
    (
        ["populate", "--engine", "postgres", "--method", "copy", "--mode", "server"],
        "--method: 'copy' {} COPY is a client path; use --mode client",
    ),
    (["populate", "--mode", "proc"], "--mode: 'proc' {} choose one of: client, server"),
    (
        ["populate", "--key", "uuid"],
        "--key: 'uuid' {} choose one of: sequential, random, ordered-uuid",
    ),
    (
        ["populate", "--engine", "oracle"],
        "--engine: 'oracle' {} choose one of: sqlite, postgres, mariadb",
    ),
    (
        ["populate", "--engine", "duckdb"],
        "--engine: 'duckdb' {} choose one of: sqlite, postgres, mariadb",
    ),
    (["populate", "--set", "journal_mode"], f"--set: 'journal_mode' {{}} {SET}"),
    (["populate", "--set", "=wal"], f"--set: '=wal' {{}} {SET}"),
    (["populate", "--sample-interval", "1ms"], "--sample-interval: '1ms' {} give 100ms or more"),
    (["populate", "--rate", "0"], f"--rate: 0.0 {{}} {RATE}"),
    (["populate", "--rate", "nan", "--duration", "3s"], f"--rate: nan {{}} {RATE}"),
    (["populate", "--rate", "inf", "--duration", "3s"], f"--rate: inf {{}} {RATE}"),
    (["populate", "--rate", "inf"], f"--rate: inf {{}} {RATE}"),
    (["populate", "--rate", "-1e-300"], f"--rate: -1e-300 {{}} {RATE}"),
    # more than a schedule places (it printed a 300-digit due_rows), a duration its clock
    # cannot time (an OverflowError at the end of the run)
    (["populate", "--rate", "1e308", "--duration", "3s"], f"--rate: 1e+308 {{}} {RATE}"),
    (["populate", "--rate", "1000001"], f"--rate: 1000001.0 {{}} {RATE}"),
    (
        ["populate", "--duration", "1000000000h"],
        "--duration: '1000000000h' {} give at most 8760h",
    ),
    (["populate", "--warmup", "0.5"], f"--warmup: '0.5' {{}} {WARMUP}"),
    (
        ["populate", "--duration", "10s", "--rows", "100"],
        "--duration: '10s' {} give either rows/bytes or a duration, not both",
    ),
    (["populate", "--duration", "0"], "--duration: '0' {} give more than 0 s"),
    (["populate", "--duration", "soon"], f"--duration: 'soon' {{}} {DURATION}"),
    (
        ["populate", "--duration", "5s", "--mode", "server"],
        "--duration: '5s' {} a duration needs mode client (a server loop runs a fixed count)",
    ),
    (
        ["populate", "--rate", "100", "--mode", "server"],
        "--rate: 100.0 {} a rate needs mode client (each statement is paced from iolab)",
    ),
    (["populate", "--warmup", "-5s"], f"--warmup: '-5s' {{}} {WARMUP}"),
    (["populate", "--warmup", "lots"], f"--warmup: 'lots' {{}} {WARMUP}"),
    (
        ["populate", "--warmup", "10s", "--duration", "10s"],
        "--warmup: '10s' {} the warm-up is as long as the run (10 s) or longer",
    ),
    (
        ["populate", "--warmup", "500", "--rows", "400"],
        "--warmup: '500' {} the warm-up is as long as the run (400 rows) or longer",
    ),
    (
        ["populate", "--data-dir", "/nonexistent/iolab"],
        "--data-dir: '/nonexistent/iolab' {} give an existing directory",
    ),
    (
        ["populate", "--data-dir", "device:nothere"],
        f"--data-dir: 'device:nothere' {{}} {NO_DEVICE}",
    ),
    (
        ["populate", "--dsn", "oracle://x@y/z"],
        "--dsn: 'oracle://x@y/z' {} postgresql://USER@"
        "HOST:PORT/DB or mysql://USER@HOST:PORT/DB (schemes: mariadb, mysql, postgres, "
        "postgresql)",
    ),
    (
        ["populate", "--dsn", "postgresql://u@h/db", "--engine", "mariadb"],
        "--engine: 'mariadb' {} postgres, the engine of the --dsn given",
    ),
    (
        ["populate", "--dsn", "postgresql://u@h/db", "--data-dir", "{tmp}/data"],
        "--data-dir: "
        "'{tmp}/data' {} nothing: with --dsn iolab does not manage the server, so its layout and "
        "settings are the server's own (configure them on the server)",
    ),
    (["populate", "--memory", "lots"], f"--memory: 'lots' {{}} {MEMORY_HELP}"),
    (["populate", "--cpus", "0"], f"--cpus: '0' {{}} {CPUS_HELP}"),
    (["populate", "--cpus", "many"], f"--cpus: 'many' {{}} {CPUS_HELP}"),
    # below the kernel's least quota (1 ms per 100 ms period): it held 0.01 CPU and the run
    # was named cpus=1e-09
    (["populate", "--cpus", "1e-9"], f"--cpus: '1e-9' {{}} {CPUS_HELP}"),
    (["populate", "--cpus", "0.001"], f"--cpus: '0.001' {{}} {CPUS_HELP}"),
    (["populate", "--cpus", "0.0099"], f"--cpus: '0.0099' {{}} {CPUS_HELP}"),
]
TPCH: list[tuple[list[str], str]] = [
    (
        ["tpch", "--engine", "oracle"],
        "--engine: 'oracle' {} choose one of: duckdb, postgres, mariadb",
    ),
    (
        ["tpch", "--engine", "sqlite"],
        "--engine: 'sqlite' {} choose one of: duckdb, postgres, mariadb",
    ),
    (["tpch", "--sf", "0"], "--sf: '0' {} give a positive scale factor, e.g. 1 or 0.01"),
    (["tpch", "--sf", "-1"], "--sf: '-1' {} give a positive scale factor, e.g. 1 or 0.01"),
    (["tpch", "--sf", "huge"], "--sf: 'huge' {} give a positive scale factor, e.g. 1 or 0.01"),
    (["tpch", "--sf", "nan"], "--sf: 'nan' {} give a positive scale factor, e.g. 1 or 0.01"),
    (["tpch", "--files", "0"], "--files: 0 {} give a whole number of data files, 1 or more"),
    (
        ["tpch", "--compression", "maybe"],
        "--compression: 'maybe' {} choose one of: on, off, default",
    ),
    (
        ["tpch", "--engine", "postgres", "--compression", "on"],
        "--compression: 'on' {} "
        "PostgreSQL cannot compress TPC-H's rows (TOAST compresses only values over about 2 KB); "
        "use --compression off",
    ),
    (["tpch", "--timeout", "0"], "--timeout: '0' {} give more than 0 s"),
    (["tpch", "--timeout", "never"], f"--timeout: 'never' {{}} {DURATION}"),
    (["tpch", "--queries", "0"], f"--queries: '0' {{}} {INT_LIST}"),
    (["tpch", "--queries", "one"], f"--queries: 'one' {{}} {INT_LIST}"),
    (["tpch", "--queries", "23"], "--queries: 23 {} give query numbers from 1 to 22, e.g. 1,3,6"),
    (["tpch", "--queries", "1,1"], "--queries: '1,1' {} name each query once"),
    (
        ["tpch", "--queries", ""],
        "--queries: '' {} give a comma-separated list of whole numbers >= 1",
    ),
    (["tpch", "--loaders", "0"], "--loaders: 0 {} give 1 or more loader connections"),
    (["tpch", "--pg-bin", T], "--pg-bin: '{tmp}' {} --pg-bin goes with --engine postgres"),
    (["tpch", "--set", "threads"], f"--set: 'threads' {{}} {SET}"),
    (
        ["tpch", "--set", "force_compression=zstd"],
        "--set: 'force_compression' {} use --compression on|off",
    ),
    (["tpch", "--sample-interval", "0.01"], "--sample-interval: '0.01' {} give 100ms or more"),
]
DEMO: list[tuple[list[str], str]] = [
    (
        ["demo", "--rows", "0"],
        "--rows: 0 {} give at least 8 rows (one per loader of the demo)",
    ),
    (
        ["demo", "--rows", "-5"],
        "--rows: -5 {} give at least 8 rows (one per loader of the demo)",
    ),
    (
        ["demo", "--html", "/proc/x.html"],
        "--html: '/proc/x.html' {} name a file you can write (No such file or directory)",
    ),
    (["demo", "--html", T], "--html: '{tmp}' {} name a file to write, not a directory"),
    (["demo", "--html", "{db}", *DB], f"--html: '{{db}}' {{}} {RESULTS_DB}"),
    (["demo", "--html", "{tmp}/file"], f"--html: '{{tmp}}/file' {{}} {NOT_OURS}"),
]
RESULTS: list[tuple[list[str], str]] = [
    (["results", "show", "0", *DB], f"RUN: 0 {{}} {RUN_ID}"),
    (["results", "show", "99999999999999999999", *DB], f"RUN: 99999999999999999999 {{}} {RUN_ID}"),
    (["results", "show", "777", *DB], f"RUN: 777 {{}} {NO_RUN}"),
    (["results", "log", "0", *DB], f"RUN: 0 {{}} {RUN_ID}"),
    (["results", "log", "777", *DB], f"RUN: 777 {{}} {NO_RUN}"),
    (["results", "log", "1", "--name", "x", *DB], "--name: 'x' {} run 1 kept no log"),
    (
        ["results", "list", "--results", "{tmp}/missing.db"],
        "--results: '{tmp}/missing.db' {} "
        "no results database there; run a benchmark first or name an existing file with "
        "--results or IOLAB_RESULTS",
    ),
    (
        ["results", "list", "--results", "{tmp}/file"],
        "--results: '{tmp}/file' {} it is not an "
        "iolab results database (not an SQLite file); name another file, or a new one",
    ),
]
REPORT: list[tuple[list[str], str]] = [
    (
        ["report", "no such experiment", *DB],
        f"EXPERIMENT: 'no such experiment' {{}} {NO_EXPERIMENT}",
    ),
    (
        ["report", "{tmp}/missing.toml", *DB],
        f"EXPERIMENT: '{{tmp}}/missing.toml' {{}} {NO_EXPERIMENT}",
    ),
    (
        ["report", "populate sqlite", "--metric", "nope", *DB],
        "--metric: 'nope' {} give a number the runs record: elapsed_seconds, rows_per_second",
    ),
    (
        ["report", "populate sqlite", "--timelines", "some", *DB],
        "--timelines: 'some' {} give median or all",
    ),
    (
        ["report", "populate sqlite", "--html", "/proc/x.html", *DB],
        "--html: '/proc/x.html' {} name a file you can write (No such file or directory)",
    ),
    (
        ["report", "populate sqlite", "--html", T, *DB],
        "--html: '{tmp}' {} name a file to write, not a directory",
    ),
    (["report", "populate sqlite", "--html", "{db}", *DB], f"--html: '{{db}}' {{}} {RESULTS_DB}"),
    (
        ["report", "populate sqlite", "--html", "{tmp}/file", *DB],
        f"--html: '{{tmp}}/file' {{}} {NOT_OURS}",
    ),
    (
        ["compare", "1-99999999999", "1", *DB],
        "A: '1-99999999999' {} give run ids from 1 to 1 "
        "(see `iolab results list`), e.g. 3,4,9 or 3-7",
    ),
    (
        ["compare", "777", "1", *DB],
        "A: '777' {} give run ids from 1 to 1 (see `iolab results list`), e.g. 3,4,9 or 3-7",
    ),
    (
        ["compare", "3-1", "1", *DB],
        "A: '3-1' {} give run ids from 1 to 1 (see `iolab results list`), e.g. 3,4,9 or 3-7",
    ),
    (
        ["compare", "1", "no such experiment", *DB],
        f"EXPERIMENT: 'no such experiment' {{}} {NO_EXPERIMENT}",
    ),
    (
        ["compare", "1", "1", "--metric", "nope", *DB],
        "--metric: 'nope' {} give a number the runs record: elapsed_seconds, rows_per_second",
    ),
    (
        ["export", "populate sqlite", "--format", "xml", *DB],
        "--format: 'xml' {} choose one of: csv, json, parquet",
    ),
    (
        ["export", "populate sqlite", "-o", "/proc/x.csv", *DB],
        "--output: '/proc/x.csv' {} name a file you can write (No such file or directory)",
    ),
    (
        ["export", "populate sqlite", "--format", "parquet", "-o", T, *DB],
        "--output: '{tmp}' {} name a file to write, not a directory",
    ),
    (
        ["export", "no such experiment", *DB],
        f"EXPERIMENT: 'no such experiment' {{}} {NO_EXPERIMENT}",
    ),
    (["export", "populate sqlite", "-o", "{db}", *DB], f"--output: '{{db}}' {{}} {RESULTS_DB}"),
    (
        ["export", "populate sqlite", "-o", "{db}-shm", *DB],
        f"--output: '{{db}}-shm' {{}} {RESULTS_DB}",
    ),
    (
        ["export", "populate sqlite", "-o", "{tmp}/full/theirs.txt", *DB],
        f"--output: '{{tmp}}/full/theirs.txt' {{}} {NOT_OURS}",
    ),
    (["timeline", "0", "-o", "{tmp}/t.html", *DB], f"RUN: 0 {{}} {RUN_ID}"),
    (["timeline", "777", "-o", "{tmp}/t.html", *DB], f"RUN: 777 {{}} {NO_RUN}"),
    (
        ["timeline", "1", "-o", "{tmp}/t.txt", *DB],
        "--output: '{tmp}/t.txt' {} name a .html, .svg or .png file",
    ),
    (
        ["timeline", "1", "-o", "/proc/x.html", *DB],
        "--output: '/proc/x.html' {} name a file you can write (No such file or directory)",
    ),
    (
        ["timeline", "1", "-o", "{tmp}/t.html", *DB],
        "RUN: 1 {} this run has no probe series "
        "(recorded with --no-probes, or before probes existed); pick another with `iolab results "
        "list`",
    ),
]
FILES: list[tuple[list[str], str]] = [
    (
        ["testbed", "up", "{tmp}/missing.toml"],
        "TESTBED: '{tmp}/missing.toml' {} give an existing TOML file",
    ),
    (
        ["testbed", "up", "{tmp}/file"],
        "TESTBED: '{tmp}/file' {} fix the TOML syntax: Expected "
        "'=' after a key in a key/value pair (at line 1, column 5)",
    ),
    (
        ["plan", "{tmp}/missing.toml"],
        "EXPERIMENT: '{tmp}/missing.toml' {} give an existing experiment file (.toml)",
    ),
    (
        ["run", "{tmp}/missing.toml"],
        "EXPERIMENT: '{tmp}/missing.toml' {} give an existing experiment file (.toml)",
    ),
    (
        ["plan", "/dev/zero"],
        "EXPERIMENT: '/dev/zero' {} give an experiment file (.toml): a regular file, not a "
        "character device",
    ),
    (
        ["run", "/dev/zero"],
        "EXPERIMENT: '/dev/zero' {} give an experiment file (.toml): a regular file, not a "
        "character device",
    ),
    (["plan", T], "EXPERIMENT: '{tmp}' {} give an experiment file (.toml), not a directory"),
    *[
        (
            [*command, "/proc/self/mem"],  # a regular file whose read fails
            f"{argument}: '/proc/self/mem' {{}} give {what} you can read (reading it: "
            "Input/output error)",
        )
        for command, argument, what in (
            (["plan"], "EXPERIMENT", "an experiment file (.toml)"),
            (["run"], "EXPERIMENT", "an experiment file (.toml)"),
            (["testbed", "up"], "TESTBED", "a TOML file"),
        )
    ],
    (
        ["testbed", "up", "/dev/zero"],
        "TESTBED: '/dev/zero' {} give a TOML file: a regular file, not a character device",
    ),
    (["testbed", "up", T], "TESTBED: '{tmp}' {} give a TOML file, not a directory"),
]
HOST_NAME = "give a host name of 1 to 64 letters, digits, '-', '_' or '.'"
ADDRESS = (
    "give HOST:PORT (HOST a name or an IPv4 address, or an IPv6 address in brackets, e.g. "
    "[fd00::1]:6379; PORT 1 to 65535)"
)
FLEET_ADDRESS = ADDRESS + ", ray://HOST:PORT or auto"
HEAD = "127.0.0.1:6379"
# the fleet's names and addresses, refused before Ray is asked (no port is opened)
FLEET: list[tuple[list[str], str]] = [
    *[
        (["fleet", "join", HEAD, "--name", name], f"--name: {name!r} {{}} {HOST_NAME}")
        for name in ("a/b", "<script>alert(1)</script>", "x\ny", "", "a b", "db1:x", "é", "x" * 65)
    ],
    (["fleet", "start", "--name", "a/b"], f"--name: 'a/b' {{}} {HOST_NAME}"),
    *[
        (["fleet", "join", head, "--name", "zz"], f"HEAD: {head!r} {{}} {ADDRESS}")
        for head in (
            "nohost",
            "auto",
            "foo bar:6379",
            "127.0.0.1:0",
            "127.0.0.1:65536",
            "127.0.0.1:http",
            "300.1.2.3:6379",
            "::1:6379",
            "[::1:6379",
            "[nope]:6379",
            "a..b:6379",
            "ray://127.0.0.1:10001",
        )
    ],
    *[
        (["fleet", "status", "--address", a], f"--address: {a!r} {{}} {FLEET_ADDRESS}")
        for a in ("foo:bar", "foo bar", "", "ray://", "127.0.0.1:99999")
    ],
    *[
        (
            ["fleet", "start", "--port", port],
            f"--port: {int(port)} {{}} give a port from 1 to 65535",
        )
        for port in ("99999", "0", "-1", "65536")
    ],
    (
        ["fleet", "start", "--node-ip-address", "notanip"],
        "--node-ip-address: 'notanip' {} give an IP address of this machine, e.g. 10.0.0.11",
    ),
    (
        ["fleet", "start", "--node-ip-address", "192.0.2.77"],
        "--node-ip-address: '192.0.2.77' {} give an IP address of this machine "
        "(`ip -brief address` lists them)",
    ),
    (
        ["fleet", "join", HEAD, "--name", "zz", "--node-ip-address", "10.0.0.300"],
        "--node-ip-address: '10.0.0.300' {} give an IP address of this machine, e.g. 10.0.0.11",
    ),
]
TPCC: list[tuple[list[str], str]] = [
    (
        ["tpcc", "--engine", "duckdb"],
        "--engine: 'duckdb' {} choose one of: postgres, mariadb, sqlite",
    ),
    (["tpcc", "--warehouses", "0"], "--warehouses: 0 {} give 1 to 100,000 warehouses"),
    (
        ["tpcc", "--warehouses", "1000000000"],
        "--warehouses: 1000000000 {} give 1 to 100,000 warehouses",
    ),
    (
        ["tpcc", "--duration", "1000000000h"],
        "--duration: '1000000000h' {} give at most 7 days (604,800 s), e.g. 8h",
    ),
    (
        ["tpcc", "--warmup", "200h"],
        "--warmup: '200h' {} give at most 7 days (604,800 s), e.g. 8h",
    ),
    (
        ["tpcc", "--think", "--rate", "10"],
        "--think: True {} give --think or --rate, not both: with --think each user waits its "
        "keying and thinking times, so an open loop's due times would count that waiting as "
        "latency",
    ),
    (
        ["tpcc", "--set", "max_connections=5", "--connections", "8", "--loaders", "2"],
        "--set: 'max_connections=5' {} the run opens up to 11 connections at once (8 users and "
        "3 beside them, or 2 loaders): give max_connections=11 or more, or fewer --connections",
    ),
    (
        ["tpcc", "--engine", "postgres", "--data-dir", "{tmp}/data", "--files", "0"],
        "--files: 0 {} give a whole number of data files, 1 or more",
    ),
    (["tpcc", "--connections", "0"], "--connections: 0 {} give 1 to 1000 virtual users"),
    (
        ["tpcc", "--mix", "50,40,4,4,4"],
        "--mix: '50,40,4,4,4' {} the shares sum to 102; give five whole percentages for "
        "new_order,payment,order_status,delivery,stock_level that sum to 100, e.g. 45,43,4,4,4",
    ),
    (
        ["tpcc", "--engine", "sqlite", "--mode", "server"],
        "--mode: 'server' {} SQLite runs TPC-C in client mode only (it has no server-side "
        "routines)",
    ),
    (["tpcc", "--mode", "fast"], "--mode: 'fast' {} choose one of: server, client, default"),
    (["tpcc", "--warmup", "soon"], f"--warmup: 'soon' {{}} {DURATION}"),
    (["tpcc", "--duration", "0"], "--duration: '0' {} give more than 0 s"),
    (["tpcc", "--rate", "0"], "--rate: 0.0 {} give a positive number of transactions a second"),
    (["tpcc", "--memory", "lots"], f"--memory: 'lots' {{}} {MEMORY_HELP}"),
    (["tpcc", "--cpus", "0"], f"--cpus: '0' {{}} {CPUS_HELP}"),
    (
        ["tpcc", "--keep"],
        "--keep: 'on' {} --keep goes with --dsn (iolab removes the servers it starts)",
    ),
    (
        ["tpcc", "--dsn", "postgresql://u@h/db", "--wal-dir", "{tmp}"],
        "--wal-dir: '{tmp}' {} nothing: with --dsn iolab does not manage the server, so its "
        "layout and settings are the server's own (configure them on the server)",
    ),
]
CONNECTION_PG = (
    "iolab connects pgbench to the engine's private socket; give no host, port, user or database"
)
CONNECTION_SB = (
    "iolab connects sysbench to the engine's private socket; give no driver, host, port, "
    "socket, user, password or database"
)
DRIVERS: list[tuple[list[str], str]] = [
    (
        ["pgbench", "--", "-h", "/tmp", "-T", "3"],
        "pgbench arguments: '-h /tmp' {} " + CONNECTION_PG,
    ),
    (["pgbench", "--", "--port=5433"], "pgbench arguments: '--port=5433' {} " + CONNECTION_PG),
    (["pgbench", "--", "-c", "2", "mydb"], "pgbench arguments: 'mydb' {} " + CONNECTION_PG),
    (["pgbench", "--init-args", "-i -U bob"], "--init-args: '-U bob' {} " + CONNECTION_PG),
    (
        ["pgbench", "--", "-i", "-s", "2"],
        "pgbench arguments: '-i' {} give the initialisation in --init-args, e.g. "
        "--init-args '-i -s 10'",
    ),
    (
        ["pgbench", "--", "-f", "{tmp}/missing.sql@2"],
        "pgbench arguments -f: '{tmp}/missing.sql' {} give an existing script file",
    ),
    (["pgbench", "--engine", "mariadb"], "--engine: 'mariadb' {} choose one of: postgres"),
    (
        ["pgbench", "--dsn", "postgresql://u:pw@h/db", "--", "-T", "3"],
        "--dsn: 'postgresql://u@h/db' {} give --no-init with it: pgbench -i drops and remakes the "
        "pgbench_* tables, and iolab never deletes what it did not create; initialise the "
        "server's database yourself",
    ),
    (
        ["pgbench", "--dsn", "postgresql://u@h/db", "--no-init", "--wal-dir", "{tmp}"],
        "--wal-dir: '{tmp}' {} nothing: with --dsn iolab does not manage the server, so its "
        "layout and settings are the server's own (configure them on the server)",
    ),
    (
        ["sysbench", "--engine", "sqlite", "--", "oltp_read_write"],
        "--engine: 'sqlite' {} choose one of: mariadb, postgres",
    ),
    (["sysbench"], "sysbench SCRIPT: missing; give the script after --, e.g. -- oltp_read_write"),
    (
        ["sysbench", "--", "{tmp}/missing.lua", "--threads=2"],
        "sysbench SCRIPT: '{tmp}/missing.lua' {} give an existing script file",
    ),
    (
        ["sysbench", "--", "{tmp}/x.lua", "--mysql-socket=/x"],
        "sysbench arguments: '--mysql-socket=/x' {} " + CONNECTION_SB,
    ),
    (
        ["sysbench", "--engine", "postgres", "--", "{tmp}/x.lua", "--pgsql-password=pw"],
        "sysbench arguments: '--pgsql-password=***' {} " + CONNECTION_SB,
    ),
    (
        ["sysbench", "--", "{tmp}/x.lua", "run"],
        "sysbench arguments: 'run' {} iolab runs prepare, then run; give neither",
    ),
]
COUNT = "give a whole number, e.g. {} for {}; a count takes no unit"
# what typer's parser refuses before iolab's checks (it drew a usage box: "Input should be a
# valid integer", "No such option: --threads (Possible options: --bytes)"): the same one line
PARSER: list[tuple[list[str], str]] = [
    # a value of the wrong type; a count with a unit names the number it would be
    (["populate", "--rows", "10k"], "--rows: '10k' {} " + COUNT.format(10000, "10k")),
    (["populate", "--rows", "1.5M"], "--rows: '1.5M' {} " + COUNT.format(1500000, "1.5M")),
    (["populate", "--rows", "2G"], "--rows: '2G' {} " + COUNT.format(2000000000, "2G")),
    (["populate", "--rows", "10m"], "--rows: '10m' {} give a whole number"),  # minutes?
    (["populate", "--rows", "many"], "--rows: 'many' {} give a whole number"),
    (["populate", "--rows", "1e30"], "--rows: '1e30' {} give a whole number"),
    (["populate", "--files", "many"], "--files: 'many' {} give a whole number, e.g. 1"),
    (["populate", "--connections", "2.5"], "--connections: '2.5' {} give a whole number, e.g. 16"),
    (["populate", "--rate", "fast"], "--rate: 'fast' {} give a number, e.g. 1 or 0.01"),
    (["demo", "--rows", "10k"], "--rows: '10k' {} " + COUNT.format(10000, "10k")),
    (["disk", T, "--runs", "abc"], "--runs: 'abc' {} give a whole number, e.g. 5"),
    (["results", "show", "x", *DB], "RUN: 'x' {} give a whole number"),
    (["results", "list", "--limit", "0", *DB], "--limit: '0' {} give 1 or more"),
    # an unknown option: the command's closest, or its word for the same idea
    (
        ["populate", "--threads", "4"],
        "iolab populate: '--threads' {} no such option; did you mean --connections?",
    ),
    (["populate", "--row", "5"], "iolab populate: '--row' {} no such option; did you mean --rows?"),
    (
        ["populate", "--warm-up", "5s"],
        "iolab populate: '--warm-up' {} no such option; did you mean --warmup?",
    ),
    (
        ["tpcc", "--ramp-up", "5s"],
        "iolab tpcc: '--ramp-up' {} no such option; did you mean --warmup?",
    ),
    (
        ["disk", T, "--thread", "4"],
        "iolab disk: '--thread' {} no such option; did you mean --threads?",
    ),
    (
        ["populate", "--frobnicate"],
        "iolab populate: '--frobnicate' {} no such option; see `iolab populate --help`",
    ),
    (["--nope"], "iolab: '--nope' {} no such option; see `iolab --help`"),
    (["populate", "--json=1"], "--json: '1' {} --json takes no value: give it alone"),
    # an unknown command
    (["popluate"], "iolab: 'popluate' {} no such command; did you mean populate?"),
    (
        ["nosuchcommand"],
        "iolab: 'nosuchcommand' {} no such command; choose one of: " + ", ".join(COMMANDS),
    ),
    (["results", "lsit"], "iolab results: 'lsit' {} no such command; did you mean list?"),
    # a value missing after its option, a missing argument or required option
    (["tpch", "--sf"], "--sf: missing; give a value after it, e.g. --sf 1"),
    (["populate", "--rows"], "--rows: missing; give a whole number after it"),
    (
        ["results", "list", "--limit"],
        "--limit: missing; give a whole number after it, e.g. --limit 50",
    ),
    (["timeline", "1", "-o"], "--output: missing; give a path after it"),
    (["disk"], "PATH: missing; give it after the command: iolab disk PATH"),
    (["plan"], "FILE: missing; give it after the command: iolab plan FILE"),
    (["compare", "1"], "B: missing; give it after the command: iolab compare A B"),
    (["timeline", "1"], "--output: missing; iolab timeline needs it; see `iolab timeline --help`"),
    # an extra argument
    (
        ["results", "show", "1", "2", *DB],
        "iolab results show: '2' {} extra argument; it takes RUN (see `iolab results show --help`)",
    ),
    (
        ["populate", "--rows", "10", "000"],
        "iolab populate: '000' {} extra argument; it takes options only (see `iolab populate "
        "--help`)",
    ),
    (
        ["compare", "1", "2", "3", "4"],
        "iolab compare: '3 4' {} extra arguments; it takes A B (see `iolab compare --help`)",
    ),
]
ERRORS = DISK + POPULATE + TPCH + TPCC + DEMO + RESULTS + REPORT + FILES + FLEET + DRIVERS + PARSER


@pytest.mark.parametrize(("argv", "line"), ERRORS, ids=[" ".join(a) for a, _ in ERRORS])
def test_bad_value_is_one_line_naming_it(argv: list[str], line: str, place: dict[str, str]) -> None:
    done = refused(argv, place)
    expected = "error: " + line.replace("{}", NOT_ALLOWED).format(**place)
    assert_one_line(done, expected)


def test_every_command_has_refusals_here() -> None:
    commands = {a[0] for a, _ in ERRORS}
    assert commands >= {"disk", "populate", "tpch", "tpcc", "demo", "results", "report"}
    assert "compare" in commands
    assert commands >= {"export", "timeline", "testbed", "plan", "run", "fleet"}
    assert commands >= {"pgbench", "sysbench"}
    assert len(ERRORS) >= 100


def test_an_input_file_that_is_a_fifo_or_too_large_is_refused_unread(
    place: dict[str, str],
) -> None:
    fifo = Path(place["tmp"], "exp.toml")
    os.mkfifo(fifo)  # no writer: reading it would wait for ever
    big = Path(place["tmp"], "big.toml")
    big.write_text("# " + "x" * 2**20 + "\n")
    for argv, line in (
        (
            ["plan", str(fifo)],
            f"EXPERIMENT: '{fifo}' {{}} give an experiment file (.toml): a regular file, not a "
            "FIFO (named pipe)",
        ),
        (
            ["testbed", "up", str(fifo)],
            f"TESTBED: '{fifo}' {{}} give a TOML file: a regular file, not a FIFO (named pipe)",
        ),
        (
            ["plan", str(big)],
            f"EXPERIMENT: '{big}' {{}} give an experiment file (.toml) of at most 1.0 MiB (this "
            "one has 1.0 MiB)",
        ),
        (
            ["testbed", "up", str(big)],
            f"TESTBED: '{big}' {{}} give a TOML file of at most 1.0 MiB (this one has 1.0 MiB)",
        ),
    ):
        assert_one_line(refused(argv, place), "error: " + line.replace("{}", NOT_ALLOWED))


@pytest.mark.parametrize("table", ["experiments", "cells", "series", "latency_totals"])
def test_a_results_database_missing_a_table_is_refused_naming_it(
    table: str, place: dict[str, str]
) -> None:
    with sqlite3.connect(place["db"]) as conn:
        conn.execute(f"DROP TABLE {table}")
    said = (
        "--results: '{db}' {} it is not a whole iolab results database: the table "
        f"{table} is missing (dropped or damaged); restore it from a copy, or name another file"
    )
    before = Path(place["db"]).read_bytes()
    for argv in (["results", "list"], ["results", "show", "1"], ["populate", "--rows", "20"]):
        done = iolab(*argv, "--results", place["db"])
        assert_one_line(done, "error: " + said.replace("{}", NOT_ALLOWED).format(**place))
    assert Path(place["db"]).read_bytes() == before  # nothing written, nothing run


def test_a_results_database_missing_a_column_is_refused_naming_it(place: dict[str, str]) -> None:
    with sqlite3.connect(place["db"]) as conn:
        conn.execute("ALTER TABLE runs DROP COLUMN summary")
        conn.execute("DROP TABLE series")
    done = iolab("results", "list", *["--results", place["db"]])
    assert_one_line(
        done,
        f"error: --results: '{place['db']}' {NOT_ALLOWED} it is not a whole iolab results "
        "database: the table series and the column runs.summary are missing (dropped or "
        "damaged); restore it from a copy, or name another file",
    )


@needs("duckdb", "engines")  # the default engine of tpch
def test_an_unusable_tpch_cache_is_named_by_what_it_is(place: dict[str, str]) -> None:
    tmp = place["tmp"]
    given = iolab("tpch", env={"IOLAB_CACHE": f"{tmp}/file/cache", "IOLAB_RESULTS": f"{tmp}/r.db"})
    assert_one_line(
        given,
        f"error: IOLAB_CACHE: '{tmp}/file/cache' {NOT_ALLOWED} give a directory iolab can "
        f"create and write: {tmp}/file is not a directory",
    )
    unset = iolab(
        "tpch",
        env={"IOLAB_CACHE": None, "XDG_CACHE_HOME": f"{tmp}/file", "IOLAB_RESULTS": f"{tmp}/r.db"},
    )
    assert_one_line(
        unset,
        f"error: the TPC-H data cache {tmp}/file/iolab/tpch is not available here: {tmp}/file is "
        "not a directory; set IOLAB_CACHE to a directory iolab can create and write",
    )
    assert not Path(tmp, "r.db").exists()  # refused before the run is recorded


@needs("ray", "fleet")
def test_a_missing_fleet_token_is_named_by_what_it_is(place: dict[str, str]) -> None:
    tmp = place["tmp"]
    unset = iolab("fleet", "status", env={"HOME": tmp, "IOLAB_FLEET_TOKEN": None})
    token = f"{tmp}/.config/iolab/fleet-token"
    assert_one_line(
        unset,
        f"error: the fleet's token file is not available here: {token} does not exist; copy "
        "the fleet's token file from the head host (made by `iolab fleet start`) to "
        f"{token}, or point IOLAB_FLEET_TOKEN at it",
    )
    given = iolab("fleet", "status", env={"IOLAB_FLEET_TOKEN": f"{tmp}/nope"})
    assert_one_line(
        given,
        f"error: IOLAB_FLEET_TOKEN: '{tmp}/nope' {NOT_ALLOWED} there is no such file; copy the "
        "fleet's token file from the head host (made by `iolab fleet start`) there",
    )


def test_a_refusal_before_any_step_is_one_line_without_a_blank_one(
    place: dict[str, str],
) -> None:
    testbed = Path(place["tmp"], "testbed.toml")
    testbed.write_text(f'[devices.big]\nsize = "1PiB"\nbacking_dir = "{place["tmp"]}"\n')
    done = refused(["testbed", "up", str(testbed)], place)
    assert done.code == 2, done
    assert done.stderr.startswith("error: devices.big.size: '1024.0 TiB' is not allowed; "), done
    assert done.stderr.count("\n") == 1 and done.stderr.endswith("\n"), done.stderr


# --- what typer's parser refuses: one line too, whatever the terminal -------------------------

BOX = ("╭", "│", "╰", "─", "Usage:", "Try '")


@pytest.mark.parametrize("color", [{"NO_COLOR": "1"}, {"NO_COLOR": None, "FORCE_COLOR": "1"}])
@pytest.mark.parametrize("columns", ["200", "40"])
@pytest.mark.parametrize(
    "argv",
    [["populate", "--rows", "10k"], ["populate", "--threads", "4"], ["nosuch"], ["tpch", "--sf"]],
    ids=" ".join,
)
def test_a_parser_refusal_draws_no_box_in_any_terminal(
    argv: list[str], columns: str, color: dict[str, str | None], place: dict[str, str]
) -> None:
    """With or without colour, wide or narrow (a box wrapped the message at the width): one
    line, `error: ` and no usage, box or escape code."""
    done = iolab(*argv, env={"COLUMNS": columns, **color})
    assert (done.code, done.stdout) == (2, ""), done
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in done.error_lines]  # colour
    assert len(lines) == 1 and lines[0].startswith("error: "), done
    assert [b for b in BOX if b in done.stderr] == [], done.stderr


# --- experiment files: `iolab plan FILE` names the key ----------------------------------------

POP = 'kind = "populate"\nrows = 100\nconnections = 2'
DISK_W = 'kind = "disk"\nsize = "16MiB"\nruns = 1\nduration = 1'
TPCH_W = 'kind = "tpch"\nscale_factor = 0.01'


def exp(
    workload: str = POP, layout: str = 'data_dirs = ["data"]', experiment: str = "", extra: str = ""
) -> str:
    return (
        f'[experiment]\nname = "bad"\n{experiment}\n[workload]\n{workload}\n'
        f"[layouts.a]\n{layout}\n[isolation]\nsettle_seconds = 0\n{extra}\n"
    )


def matrix(body: str) -> str:
    return exp(extra=f"[matrix]\n{body}")


UNKNOWN = "unknown key; check its spelling in docs/experiments.md"
UNKNOWN_CLOSE = "unknown key; did you mean {}? (see docs/experiments.md)"
# (id, file text, the whole error line)
EXPERIMENT_FILES: list[tuple[str, str, str]] = [
    (
        "no-experiment",
        '[workload]\nkind = "disk"\n[layouts.a]\ndata_dirs = ["data"]\n',
        "experiment: missing; this key is required",
    ),
    (
        "no-layouts",
        '[experiment]\nname = "bad"\n[workload]\nkind = "disk"\n',
        "layouts: missing; this key is required",
    ),
    (
        "repetitions-zero",
        exp(experiment="repetitions = 0"),
        'experiment.repetitions: 0 {} give 1 or more, or "auto"',
    ),
    (
        "order",
        exp(experiment='order = "random"'),
        "experiment.order: 'random' {} choose one of: shuffled, sequential",
    ),
    (
        "on-failure",
        exp(experiment='on_failure = "ignore"'),
        "experiment.on_failure: 'ignore' {} choose one of: retry, skip, stop",
    ),
    ("retries", exp(experiment="retries = -1"), "experiment.retries: -1 {} give 0 or more"),
    (
        "timeout-word",
        exp(experiment='timeout = "forever"'),
        f"experiment.timeout: 'forever' {{}} {DURATION}",
    ),
    (
        "timeout-zero",
        exp(experiment="timeout = 0"),
        'experiment.timeout: 0 {} give a duration above zero, e.g. "10min" or 600',
    ),
    (
        "ci-target",
        exp(experiment="ci_target = 2"),
        "experiment.ci_target: 2 {} Input should be less than 1",
    ),
    (
        "min-repetitions",
        exp(experiment="min_repetitions = 1"),
        "experiment.min_repetitions: 1 {} give 2 or more",
    ),
    (
        "min-above-max",
        exp(experiment="min_repetitions = 5\nmax_repetitions = 3"),
        "experiment.min_repetitions: 5 {} give at most max_repetitions",
    ),
    (
        "unknown-experiment-key",
        exp(experiment='colour = "red"'),
        f"experiment.colour: 'red' {{}} {UNKNOWN}",
    ),
    (
        "misspelled-experiment-key",
        exp(experiment="repetitons = 5"),
        f"experiment.repetitons: 5 {{}} {UNKNOWN_CLOSE.format('repetitions')}",
    ),
    (
        # the misspelled table, not the one it left missing
        "misspelled-table",
        exp().replace("[experiment]", "[experimnet]"),
        f"experimnet: {{{{'name': 'bad'}}}} {{}} {UNKNOWN_CLOSE.format('experiment')}",
    ),
    (
        "misspelled-isolation-key",
        exp().replace("settle_seconds", "settle_second"),
        f"isolation.settle_second: 0 {{}} {UNKNOWN_CLOSE.format('settle_seconds')}",
    ),
    (
        "baseline-every",
        exp(experiment="baseline_every = -1"),
        "experiment.baseline_every: -1 {} give 0 or more",
    ),
    (
        "auto-with-disk",
        exp(DISK_W, experiment='repetitions = "auto"'),
        "experiment.repetitions: 'auto' {} a disk workload has no single metric to judge: give a "
        "number",
    ),
    (
        "no-kind",
        exp("rows = 100"),
        "workload.kind: missing; choose one of: populate, disk, tpch, tpcc, pgbench, sysbench",
    ),
    (
        "kind",
        exp('kind = "fio"'),
        "workload.kind: 'fio' {} choose one of: populate, disk, tpch, tpcc, pgbench, sysbench",
    ),
    (
        "engine",
        exp('kind = "populate"\nengine = "oracle"'),
        "workload.engine: 'oracle' {} choose one of: sqlite, postgres, mariadb",
    ),
    ("rows-zero", exp('kind = "populate"\nrows = 0'), "workload.rows: 0 {} give 1 or more rows"),
    (
        "rows-word",
        exp('kind = "populate"\nrows = "many"'),
        "workload.rows: 'many' {} give 1 or more rows",
    ),
    (
        "rows-below-connections",
        exp('kind = "populate"\nrows = 4'),
        "workload.rows: 4 {} give at least one row per connection (>= 16)",
    ),
    ("bytes-word", exp('kind = "populate"\nbytes = "lots"'), f"workload.bytes: 'lots' {{}} {SIZE}"),
    (
        "method",
        exp(POP + '\nmethod = "bulk"'),
        "workload.method: 'bulk' {} choose one of: insert, multirow, copy",
    ),
    (
        "method-copy-sqlite",
        exp(POP + '\nmethod = "copy"'),
        "workload.method: 'copy' {} choose one of: insert, multirow",
    ),
    (
        "unknown-workload-key",
        exp(POP + "\nrowz = 5"),
        f"workload.rowz: 5 {{}} {UNKNOWN_CLOSE.format('rows')}",
    ),
    (
        "unknown-workload-key-far",
        exp(POP + "\ncolour = 5"),
        f"workload.colour: 5 {{}} {UNKNOWN}",
    ),
    (
        "pg-bin-with-sqlite",
        exp(POP + '\npg_bin = "/usr/bin"'),
        "workload.pg_bin: '/usr/bin' {} --pg-bin goes with --engine postgres",
    ),
    (
        "disk-duration-short",
        exp('kind = "disk"\nduration = "0.5s"'),
        "workload.duration: '0.5s' {} give at least 1 s",
    ),
    (
        "disk-profile",
        exp('kind = "disk"\nprofile = "fast"'),
        "workload.profile: 'fast' {} choose one of: default, nvme, peak, real, db, quick, sweep",
    ),
    ("disk-size-word", exp('kind = "disk"\nsize = "huge"'), f"workload.size: 'huge' {{}} {SIZE}"),
    (
        "tpch-sf",
        exp('kind = "tpch"\nscale_factor = 0'),
        "workload.scale_factor: 0 {} give a positive scale factor, e.g. 1 or 0.01",
    ),
    (
        "tpch-engine",
        exp('kind = "tpch"\nengine = "sqlite"'),
        "workload.engine: 'sqlite' {} choose one of: duckdb, postgres, mariadb",
    ),
    (
        "tpch-queries",
        exp(TPCH_W + "\nqueries = [23]"),
        "workload.queries: 23 {} give query numbers from 1 to 22, e.g. 1,3,6",
    ),
    (
        "data-dirs-empty",
        exp(layout="data_dirs = []"),
        "layouts.a.data_dirs: [] {} List should have at least 1 item after validation, not 0",
    ),
    (
        "data-dir-missing",
        exp(layout='data_dirs = ["nowhere"]'),
        "layouts.a.data_dirs[0]: 'nowhere' {} give an existing directory",
    ),
    (
        "data-dir-not-empty",
        exp(layout='data_dirs = ["full"]'),
        "layouts.a.data_dirs: '{tmp}/full' {} give an empty directory; it holds files iolab did "
        "not create (theirs.txt)",
    ),
    (
        "files-zero",
        exp(layout='data_dirs = ["data"]\nfiles = 0'),
        "layouts.a.files: 0 {} give 1 or more",
    ),
    (
        "unknown-layout-key",
        exp(layout='data_dirs = ["data"]\nspeed = 5'),
        f"layouts.a.speed: 5 {{}} {UNKNOWN}",
    ),
    (
        "misspelled-layout-key",
        exp(layout='data_dirs = ["data"]\nwal_dri = "wal"'),
        f"layouts.a.wal_dri: 'wal' {{}} {UNKNOWN_CLOSE.format('wal_dir')}",
    ),
    (
        "wal-dir-sqlite",
        exp(layout='data_dirs = ["data"]\nwal_dir = "wal"'),
        "layouts.a.wal_dir: '{tmp}/wal' {} SQLite keeps its WAL beside each database file and "
        "cannot put it elsewhere; leave the WAL dir out",
    ),
    (
        "device-unknown",
        exp(layout='data_dirs = ["device:nothere"]'),
        "layouts.a.data_dirs[0]: 'device:nothere' {} name a device of the [devices] section "
        "(there is none)",
    ),
    (
        "sqlite-setting-value",
        exp(layout='data_dirs = ["data"]\nsettings = { journal_mode = "banana" }'),
        "layouts.a.settings.journal_mode: 'banana' {} choose one of: delete, "
        "truncate, persist, memory, wal, off",
    ),
    ("matrix-layout", matrix('layout = ["b"]'), "matrix.layout[0]: 'b' {} choose one of: a"),
    (
        "matrix-host-markup",
        matrix('host = ["db1", "<script>alert(1)</script>"]'),
        f"matrix.host[1]: '<script>alert(1)</script>' {{}} {HOST_NAME}",
    ),
    (
        "matrix-host-newline",
        matrix('host = ["x\\ny"]'),
        f"matrix.host[0]: 'x\\ny' {{}} {HOST_NAME}",
    ),
    ("matrix-host-slash", matrix('host = ["a/b"]'), f"matrix.host[0]: 'a/b' {{}} {HOST_NAME}"),
    ("matrix-host-number", matrix("host = [1]"), f"matrix.host[0]: 1 {{}} {HOST_NAME}"),
    (
        "fleet-hosts",
        exp(extra='[fleet]\nhosts = ["db1", "db 2"]'),
        f"fleet.hosts[1]: 'db 2' {{}} {HOST_NAME}",
    ),
    (
        "fleet-address",
        exp(extra='[fleet]\naddress = "not an address"'),
        f"fleet.address: 'not an address' {{}} {FLEET_ADDRESS}",
    ),
    (
        "fleet-address-port",
        exp(extra='[fleet]\naddress = "10.0.0.1:0"'),
        f"fleet.address: '10.0.0.1:0' {{}} {FLEET_ADDRESS}",
    ),
    (
        "matrix-empty",
        matrix("files = []"),
        "matrix.files: [] {} give at least one value; the matrix expands to nothing",
    ),
    ("matrix-twice", matrix("files = [1, 1]"), "matrix.files: [1, 1] {} give each value once"),
    ("matrix-rows-zero", matrix("rows = [0]"), "matrix (rows=0).rows: 0 {} give 1 or more rows"),
    (
        "matrix-connections",
        matrix("connections = [2, 0]"),
        "matrix (connections=0).connections: 0 {} give at least 1 loader connection",
    ),
    (
        "rows-true",
        exp(workload='kind = "populate"\nrows = true'),
        f"workload.rows: True {{}} {NOT_BOOL}",
    ),
    (
        "connections-false",
        exp(workload='kind = "populate"\nconnections = false'),
        f"workload.connections: False {{}} {NOT_BOOL}",
    ),
    (
        "repetitions-true",
        exp(experiment="repetitions = true"),
        f"experiment.repetitions: True {{}} {NOT_BOOL}",
    ),
    ("seed-true", exp(experiment="seed = true"), f"experiment.seed: True {{}} {NOT_BOOL}"),
    (
        "files-true",
        exp(layout='data_dirs = ["data"]\nfiles = true'),
        f"layouts.a.files: True {{}} {NOT_BOOL}",
    ),
    (
        "matrix-connections-true",
        matrix("connections = [true]"),
        f"matrix (connections=True).connections: True {{}} {NOT_BOOL}",
    ),
    (
        "tpch-queries-true",
        exp(workload='kind = "tpch"\nqueries = [1, true]'),
        f"workload.queries: [1, True] {{}} {NOT_BOOL}",
    ),
    (
        "tpch-sf-true",
        exp(workload='kind = "tpch"\nscale_factor = true'),
        "workload.scale_factor: True {} give a number, not true or false",
    ),
    (
        "disk-size-small",
        exp(workload='kind = "disk"\nsize = "4k"'),
        f"workload.size: 4096 {{}} {SIZE_MIN.format('1.0 MiB', '1,048,576')}",
    ),
    (
        "two-layouts-no-matrix",
        exp(extra='[layouts.b]\ndata_dirs = ["data"]'),
        "matrix.layout: missing; the file names 2 layouts (a, b): say which to run, e.g. layout = "
        '["a", "b"]',
    ),
    (
        "settle",
        exp().replace("settle_seconds = 0", "settle_seconds = -1"),
        "isolation.settle_seconds: -1 {} give 0 or more",
    ),
    (
        "drop-caches",
        exp().replace("settle_seconds = 0", 'drop_caches = "perhaps"'),
        "isolation.drop_caches: 'perhaps' {} give true or false",
    ),
    (
        "hook",
        exp(extra="[hooks]\non_complete = 5"),
        "hooks.on_complete: 5 {} give text in quotes",
    ),
    (
        "device-size",
        exp(extra='[devices.ssd]\nfilesystem = "ext4"'),
        'devices.ssd.size: missing; give the device size, e.g. size = "20GiB"',
    ),
    (
        "device-mbps-nan",
        exp(extra='[devices.ssd]\nsize = "1GiB"\nread_mbps = nan'),
        "devices.ssd.read_mbps: nan {} give MB/s (decimal megabytes) > 0, e.g. 150 or 0.5, or "
        "leave the key out for no limit",
    ),
    (
        "device-iops-above-the-kernel",
        exp(extra='[devices.ssd]\nsize = "1GiB"\nread_iops = 4294967301'),
        "devices.ssd.read_iops: 4294967301 {} give at most 4294967294 I/Os per second (the "
        "kernel's limit holds no more), or leave the key out for no limit",
    ),
    (
        "device-read-only",
        exp(extra='[devices.ssd]\nsize = "1GiB"\nmount_options = "ro"'),
        "devices.ssd.mount_options: 'ro' {} leave out 'ro': iolab writes to a testbed device "
        "(its mount point, then the runs' files), so it is mounted read-write",
    ),
    (
        "device-null-member",
        exp(
            extra='[devices.ssd]\nsize = "1GiB"\nmodel = "raid0"\nmembers = 2\n'
            'member = { model = "null" }'
        ),
        "devices.ssd.member.model: 'null' {} a member is one device: 'hdd' or 'ssd'",
    ),
    (
        "toml-syntax",
        exp() + "\n[broken\n",
        "{tmp}/exp.toml: 'TOML' {} fix the syntax: Expected ']' at the end of a table declaration "
        "(at line 14, column 8)",
    ),
]


@pytest.mark.parametrize(
    ("text", "line"), [c[1:] for c in EXPERIMENT_FILES], ids=[c[0] for c in EXPERIMENT_FILES]
)
def test_bad_experiment_file_is_refused_by_plan_naming_the_key(
    text: str, line: str, place: dict[str, str]
) -> None:
    Path(place["tmp"], "exp.toml").write_text(text)
    done = refused(["plan", "{tmp}/exp.toml"], place)
    assert_one_line(done, "error: " + line.replace("{}", NOT_ALLOWED).format(**place))


@pytest.mark.parametrize(
    ("text", "start"),
    [
        (
            matrix("conections = [1, 2]"),
            f"matrix.conections: 'conections' {NOT_ALLOWED} did you mean connections? choose "
            "one of: batch, bytes, ",
        ),
        (
            exp(extra='[devices.ssd]\nsize = "1GiB"\nwrite_iop = 5'),
            f"devices.ssd.write_iop: 5 {NOT_ALLOWED} did you mean write_iops? allowed keys: size, ",
        ),
        (
            exp(experiment="baseline = { conections = 1 }", extra="[matrix]\nconnections = [1, 2]"),
            f"experiment.baseline.conections: 'conections' {NOT_ALLOWED} did you mean "
            "connections? choose one of: connections",
        ),
    ],
    ids=["matrix", "device", "baseline"],
)
def test_a_misspelled_key_of_many_says_the_closest_first(
    text: str, start: str, place: dict[str, str]
) -> None:
    """Where the refusal lists every key allowed (the matrix's, a device's), the closest comes
    first; the rest of the list is checked where each is made."""
    Path(place["tmp"], "exp.toml").write_text(text)
    done = refused(["plan", "{tmp}/exp.toml"], place)
    assert done.code == 2 and len(done.error_lines) == 1, done
    assert done.error_lines[0].startswith("error: " + start), done.stderr


@pytest.mark.parametrize(
    ("text", "field", "value"),
    [
        # the key path names the union's branch ("...repetitions.int") and a baseline key
        # missing from the matrix lists no choices: checked only for the field and the value
        (exp(experiment='repetitions = "many"'), "experiment.repetitions", "'many'"),
        (exp(experiment="baseline = { files = 1 }"), "experiment.baseline.files", "'files'"),
        (matrix("colour = [1]"), "matrix.colour", "'colour'"),
        (
            exp(layout='data_dirs = ["data"]\nsettings = { shared_buffers = "1GB" }'),
            "layouts.a.settings.shared_buffers",
            "'shared_buffers'",
        ),
    ],
    ids=["repetitions-word", "baseline-not-in-matrix", "matrix-unknown", "sqlite-setting"],
)
def test_bad_experiment_file_names_field_and_value(
    text: str, field: str, value: str, place: dict[str, str]
) -> None:
    Path(place["tmp"], "exp.toml").write_text(text)
    for command in ("plan", "run"):
        done = refused([command, "{tmp}/exp.toml"], place)
        assert done.code == 2 and len(done.error_lines) == 1, done
        assert done.error_lines[0].startswith(f"error: {field}"), done.stderr
        assert f": {value} is not allowed; " in done.error_lines[0], done.stderr


def test_run_refuses_a_bad_file_as_plan_does(place: dict[str, str]) -> None:
    Path(place["tmp"], "exp.toml").write_text(exp(experiment='order = "random"'))
    by_plan = refused(["plan", "{tmp}/exp.toml"], place)
    by_run = refused(["run", "{tmp}/exp.toml"], place)
    assert by_run == by_plan
    assert by_run.error_lines == [
        "error: experiment.order: 'random' is not allowed; choose one of: shuffled, sequential"
    ]


@pytest.mark.parametrize("address", ["foo bar", "10.0.0.1", "10.0.0.1:70000", "ray://x"])
def test_run_refuses_a_bad_fleet_address_before_anything(
    address: str, place: dict[str, str]
) -> None:
    Path(place["tmp"], "exp.toml").write_text(exp())
    done = refused(["run", "{tmp}/exp.toml", "--fleet", address], place)
    assert_one_line(done, f"error: --fleet: {address!r} {NOT_ALLOWED} {FLEET_ADDRESS}")
    assert not Path(place["tmp"], "fresh.db").exists()


def test_plan_of_a_good_file_lists_its_cells(place: dict[str, str]) -> None:
    Path(place["tmp"], "exp.toml").write_text(matrix("connections = [1, 2]"))
    done = iolab("plan", "{tmp}/exp.toml".format(**place), "--json", *["--results", place["db"]])
    assert done.code == 0, done
    doc = json.loads(done.stdout)
    assert (doc["experiment"], doc["workload"], doc["runs"], doc["kept"]) == (
        "bad",
        "populate",
        6,
        0,
    )
    assert [(c["label"], c["done"], c["to_run"]) for c in doc["cells"]] == [
        ("connections=1", 0, 3),
        ("connections=2", 0, 3),
    ]


# --- help and version -------------------------------------------------------------------------

HELP: list[tuple[list[str], list[str]]] = [
    (
        [],
        [
            "disk",
            "populate",
            "tpch",
            "plan",
            "run",
            "report",
            "compare",
            "export",
            "results",
            "timeline",
            "testbed",
            "demo",
            "--version",
        ],
    ),
    (
        ["disk"],
        [
            "PATH",
            "--profile",
            "--size",
            "--runs",
            "--duration",
            "--bs",
            "--qd",
            "--threads",
            "--rw",
            "--results",
            "--json",
        ],
    ),
    (
        ["populate"],
        [
            "--engine",
            "--data-dir",
            "--files",
            "--wal-dir",
            "--rows",
            "--bytes",
            "--connections",
            "--commit-every",
            "--set",
            "--dsn",
            "--results",
        ],
    ),
    (
        ["tpch"],
        [
            "--engine",
            "--sf",
            "--data-dir",
            "--compression",
            "--cold",
            "--warm",
            "--timeout",
            "--queries",
            "--results",
        ],
    ),
    (["plan"], ["{file}", "experiment file", "--results", "--json"]),
    (["run"], ["{file}", "Run it again to resume", "--results", "--json"]),
    (["report"], ["--html", "--with-disk", "--metric", "--timelines", "--results"]),
    (["compare"], ["--metric", "--results"]),
    (["export"], ["--format", "--output", "--results"]),
    (["timeline"], ["RUN", "--output", "--results"]),
    (["demo"], ["--html", "--rows", "--skip-disk", "--details", "--results"]),
    (["results"], ["list", "show", "log"]),
    (["results", "show"], ["RUN", "--results", "--json"]),
    (["results", "list"], ["--limit", "--results", "--json"]),
    (["testbed"], ["up", "down", "status"]),
]


@pytest.mark.parametrize(("command", "names"), HELP, ids=[" ".join(c) or "iolab" for c, _ in HELP])
def test_help_names_the_key_options(command: list[str], names: list[str]) -> None:
    done = iolab(*command, "--help")
    assert (done.code, done.stderr) == (0, ""), done
    text = done.stdout
    assert f"Usage: iolab {' '.join(command)}".replace("  ", " ") in text
    missing = [n for n in names if n not in text]
    assert missing == [], text


def test_no_arguments_shows_help_and_exits_2() -> None:
    done = iolab()
    assert done.code == 2
    assert "Usage: iolab [OPTIONS] COMMAND [ARGS]..." in done.stdout
    assert "populate" in done.stdout


def test_version() -> None:
    done = iolab("--version")
    assert done == Result(0, f"iolab {__version__}\n", "")


def test_a_program_started_by_mistake_fails_the_test() -> None:
    with pytest.raises(AssertionError, match="a unit test started a program"):
        subprocess.run(["true"], check=False)
