"""The drivers' command lines (pgbench, sysbench): what passes through, what iolab owns and
refuses with one line, and pgbench's printed report and progress lines read back to the digit."""

from __future__ import annotations

from pathlib import Path

import pytest

from iolab.engines.interface import Layout
from iolab.errors import BadInput
from iolab.workloads.drivers import Progress, parse_options, with_tail
from iolab.workloads.pgbench import output
from iolab.workloads.pgbench.arguments import split_init
from iolab.workloads.pgbench.run import PgbenchOptions


def _pgbench(run: tuple[str, ...], init: tuple[str, ...] = ("-i",), engine: str = "postgres"):
    return PgbenchOptions(engine, Layout((Path("/var/tmp"),)), run, init, cwd=Path("/"))


@pytest.mark.parametrize(
    ("run", "init", "line"),
    [
        (("-h", "/tmp"), ("-i",), "pgbench arguments: '-h /tmp' is not allowed; iolab connects"),
        (("--port=5433",), ("-i",), "pgbench arguments: '--port=5433' is not allowed"),
        (("-Ubob",), ("-i",), "pgbench arguments: '-Ubob' is not allowed"),
        (("-c", "2", "mydb"), ("-i",), "pgbench arguments: 'mydb' is not allowed; iolab connects"),
        (("-d", "mydb"), ("-i",), "pgbench arguments: '-d mydb' is not allowed"),
        (("-T", "3"), ("-i", "-h", "x"), "--init-args: '-h x' is not allowed"),
        (("-i", "-s", "2"), ("-i",), "pgbench arguments: '-i' is not allowed; give the init"),
        (("--log-prefix=/x",), ("-i",), "'--log-prefix=/x' is not allowed; iolab keeps the -l"),
        (("-P", "0"), ("-i",), "pgbench arguments -P: '0' is not allowed; give whole seconds"),
        (
            ("-f", "/nonexistent/app.sql@3"),
            ("-i",),
            "pgbench arguments -f: '/nonexistent/app.sql' is not allowed; give an existing",
        ),
    ],
)
def test_pgbench_refuses_with_one_line(run: tuple[str, ...], init: tuple[str, ...], line: str):
    with pytest.raises(BadInput) as refused:
        _pgbench(run, init).validate()
    assert line in str(refused.value)
    assert "\n" not in str(refused.value)


def test_pgbench_drives_postgres_only() -> None:
    with pytest.raises(BadInput) as refused:
        _pgbench(("-T", "3"), engine="mariadb").validate()
    assert str(refused.value) == "--engine: 'mariadb' is not allowed; pgbench drives postgres only"


def test_pgbench_arguments_pass_through_unchanged(tmp_path: Path) -> None:
    app = tmp_path / "app.sql"
    app.write_text("SELECT 1;\n")
    run = ("-c8", "-j", "2", "-T", "30", "-P", "5", "-M", "prepared", "-f", f"{app}@5", "-nS")
    checked = PgbenchOptions("postgres", Layout((tmp_path,)), run, cwd=tmp_path).validate()
    assert checked.run == run and checked.progress_s == 5.0
    assert [s.path for s in checked.scripts] == [app]
    assert checked.scripts[0].text == "SELECT 1;\n" and len(checked.scripts[0].sha256) == 64
    # a relative script is read where pgbench runs
    rel = PgbenchOptions("postgres", Layout((tmp_path,)), ("-f", "app.sql"), cwd=tmp_path)
    assert rel.validate().scripts[0].path == app


def test_init_args_get_their_initialize() -> None:
    assert split_init("-s 10 --foreign-keys") == ("-i", "-s", "10", "--foreign-keys")
    assert split_init("-i -s 10") == ("-i", "-s", "10")
    assert split_init("--initialize -I dtg") == ("--initialize", "-I", "dtg")


def test_options_are_split_as_getopt_does() -> None:
    parsed = parse_options(["-c8", "-nS", "--time=3", "--rate", "50", "--", "x"], "cT", ["--rate"])
    assert [(o.name, o.value) for o in parsed.options] == [
        ("-c", "8"),
        ("-n", None),
        ("-S", None),
        ("--time", "3"),
        ("--rate", "50"),
    ]
    assert parsed.positional == ("x",)


REPORT = """\
pgbench (18.6)
transaction type: multiple scripts
scaling factor: 1
query mode: simple
number of clients: 2
number of threads: 2
maximum number of tries: 3
duration: 3 s
number of transactions actually processed: 4620
number of failed transactions: 0 (0.000%)
number of transactions retried: 1 (0.022%)
total number of retries: 2
latency average = 1.292 ms
latency stddev = 1.498 ms
initial connection time = 6.281 ms
tps = 1541.534341 (without initial connection time)
SQL script 1: <builtin: TPC-B (sort of)>
 - weight: 2 (targets 66.7% of total)
 - 3041 transactions (65.8% of total)
 - number of transactions actually processed: 3041 (tps = 1014.676608)
 - number of failed transactions: 0 (0.000%)
 - latency average = 1.850 ms
 - latency stddev = 1.569 ms
SQL script 2: <builtin: select only>
 - weight: 1 (targets 33.3% of total)
 - 1579 transactions (34.2% of total)
 - number of transactions actually processed: 1579 (tps = 526.857732)
 - latency average = 0.217 ms
"""
PROGRESS = """\
pgbench: starting vacuum...end.
progress: 1.0 s, 1123.8 tps, lat 1.762 ms stddev 1.604, 0 failed, 1 retried, 2 retries
progress: 2.0 s, 1316.2 tps, lat 1.515 ms stddev 1.365, lag 0.120 ms, 2 failed, 0 retried
"""


def test_pgbench_report_is_read_to_its_printed_digits() -> None:
    found = output.summary(REPORT)
    n = found.numbers
    assert n["tps"] == 1541.534341 and n["transactions"] == 4620 and n["retried"] == 1
    assert n["retries"] == 2 and n["latency_avg_ms"] == 1.292 and n["clients"] == 2
    assert [s.name for s in found.scripts] == [
        "<builtin: TPC-B (sort of)>",
        "<builtin: select only>",
    ]
    assert found.scripts[0].numbers == {
        "weight": 2,
        "transactions": 3041,
        "tps": 1014.676608,
        "failed": 0,
        "latency_avg_ms": 1.85,
    }


def test_pgbench_progress_lines() -> None:
    lines = output.progress(PROGRESS)
    assert [p.t for p in lines] == [1.0, 2.0]
    assert lines[0].values == {
        "tps": 1123.8,
        "latency_ms": 1.762,
        "latency_stddev_ms": 1.604,
        "failed_per_s": 0.0,
        "retried_per_s": 1.0,
    }
    assert lines[1].values["lag_ms"] == 0.12 and lines[1].values["failed_per_s"] == 2.0


def test_the_unreported_last_interval_holds_the_rest_of_the_count() -> None:
    lines = [Progress(1.0, 1.0, {"tps": 100.0}), Progress(2.0, 1.0, {"tps": 120.0})]
    filled = with_tail(lines, "tps", 270.0, 2.5)
    assert filled[-1] == Progress(2.5, 0.5, {"tps": 100.0})
    assert with_tail(lines, "tps", 220.0, 2.001) == lines
