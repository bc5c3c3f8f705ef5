"""The drivers' command lines (pgbench, sysbench): what passes through, what iolab owns and
refuses with one line, and pgbench's printed report and progress lines read back to the digit."""

from __future__ import annotations

from pathlib import Path

import pytest

from iolab.engines.interface import Layout
from iolab.errors import BadInput
from iolab.workloads.drivers import Disagree, Progress, agree_progress, with_tail
from iolab.workloads.pgbench import output
from iolab.workloads.pgbench.arguments import parse, split_init
from iolab.workloads.pgbench.run import PgbenchOptions
from iolab.workloads.sysbench import output as sysbench_output
from iolab.workloads.sysbench.arguments import SCRIPT_DIR
from iolab.workloads.sysbench.run import SysbenchOptions


def _pgbench(
    run: tuple[str, ...], init: tuple[str, ...] = ("-i",), engine: str = "postgres"
) -> PgbenchOptions:
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
        (("--log-prefix=/x",), ("-i",), "'--log-prefix=/x' is not allowed; iolab reads every"),
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


def test_pgbench_arguments_are_read_as_its_getopt_long_reads_them() -> None:
    words = ["-c4", "-c", "3", "--cl=2", "--client", "1", "-nS", "-j2", "--log", "--progress", "5"]
    assert [(o.name, o.value, o.typed) for o in parse(words).options] == [
        ("--client", "4", "-c4"),  # a clustered value
        ("--client", "3", "-c 3"),  # the next word
        ("--client", "2", "--cl=2"),  # a unique prefix, with =
        ("--client", "1", "--client 1"),
        ("--no-vacuum", None, "-nS"),  # clustered flags
        ("--select-only", None, "-nS"),
        ("--jobs", "2", "-j2"),
        ("--log", None, "--log"),  # the exact name wins over --log-prefix
        ("--progress", "5", "--progress 5"),  # and over --progress-timestamp
    ]
    # a value is the next word whatever it looks like; -- ends the options
    assert [(o.name, o.value) for o in parse(["-D", "-h", "--", "-h"]).options] == [
        ("--define", "-h")
    ]
    assert parse(["-T", "3", "--", "-h"]).positional == ("-h",)


@pytest.mark.parametrize(
    ("run", "line"),
    [
        (
            ("--pro", "2"),
            "'--pro' is not allowed; pgbench reads it as any of --progress, "
            "--protocol, --progress-timestamp; give one in full",
        ),
        (("--p=3",), "'--p=3' is not allowed; pgbench reads it as any of --port, --progress"),
        (("--continue-on-error",), "'--continue-on-error' is not allowed; pgbench has no such"),
        (("--connect=1",), "'--connect=1' is not allowed; --connect takes no value"),
        (("-T", "3", "-c"), "'-c' is not allowed; -c (--client) needs a value"),
        (("-x",), "'-x' is not allowed; pgbench has no option -x"),
        (("-T", "3", "--"), "'--' is not allowed; iolab gives pgbench its connection after"),
    ],
)
def test_pgbench_refuses_what_it_would_refuse_itself(run: tuple[str, ...], line: str) -> None:
    with pytest.raises(BadInput) as refused:
        _pgbench(run).validate()
    assert "pgbench arguments: " + line in str(refused.value)


CONNECTION = "iolab connects pgbench to the engine's private socket"
LOG = "iolab reads every transaction's line of the -l log it keeps itself"


@pytest.mark.parametrize(
    ("run", "why"),
    [
        # the spellings: each an abbreviation pgbench takes
        (("--ho=/tmp/nonexist",), CONNECTION),
        (("--user=nobody",), CONNECTION),
        (("--aggregate=1",), LOG + "; leave out --aggregate-interval"),
        (("--progress-t",), "iolab puts the progress on the run's time axis"),
        (("--log-p=",), LOG + "; leave out --log-prefix"),
        # and the others of each: short, clustered, long in full, the value in the next word
        (("-nSh", "/tmp"), CONNECTION),
        (("-p5433",), CONNECTION),
        (("--po", "5433"), CONNECTION),
        (("--dbn=other",), CONNECTION),
        (("-dother",), CONNECTION),
        (("--username", "nobody"), CONNECTION),
        (("--samp=0.5",), LOG + "; leave out --sampling-rate"),
        (("--log-prefix", "/tmp/x"), LOG + "; leave out --log-prefix"),
        (("--initi",), "give the initialisation in --init-args"),
        (("--show=tpcb-like",), "it runs nothing"),
    ],
)
def test_pgbench_refuses_every_spelling_of_what_iolab_owns(run: tuple[str, ...], why: str):
    with pytest.raises(BadInput) as refused:
        _pgbench(("-T", "3", *run)).validate()
    assert str(refused.value).startswith(f"pgbench arguments: {' '.join(run)!r} is not allowed; ")
    assert why in str(refused.value) and "\n" not in str(refused.value)
    if run != ("--initi",):  # the init's words alike
        with pytest.raises(BadInput) as in_init:
            _pgbench(("-T", "3"), ("-i", *run)).validate()
        assert str(in_init.value).startswith("--init-args: ")


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ("--mysql_socket=/tmp/x/my.sock",),
            "'--mysql_socket=/tmp/x/my.sock' is not allowed; iolab connects sysbench",
        ),
        (("--mysql-socket",), "'--mysql-socket' is not allowed; iolab connects"),  # emptied
        (("--mysql_host=10.0.0.1",), "'--mysql_host=10.0.0.1' is not allowed; iolab connects"),
        (("--pgsql_db=other",), "'--pgsql_db=other' is not allowed; iolab connects"),
        (("--db_driver=pgsql",), "'--db_driver=pgsql' is not allowed; iolab connects"),
        (("--mysql_dry_run=on",), "'--mysql_dry_run=on' is not allowed; it runs nothing"),
        (("--test=oltp_point_select",), "'--test=oltp_point_select' is not allowed; give the"),
        (("--config_file=/tmp/opts",), "'--config_file=/tmp/opts' is not allowed; iolab passes"),
        (("--report_checkpoints=2",), "'--report_checkpoints=2' is not allowed; iolab reads"),
        (("--verbosity=2",), "'--verbosity=2' is not allowed; iolab reads sysbench's one final"),
        (("--verbosity",), "'--verbosity' is not allowed; iolab reads sysbench's one final"),
        (("--histogram=off",), "'--histogram=off' is not allowed; iolab turns"),
    ],
)
def test_sysbench_refuses_dashes_and_underscores_alike(args: tuple[str, ...], line: str):
    with pytest.raises(BadInput) as refused:
        _sysbench(("oltp_read_write", "--threads=2", *args)).validate()
    assert str(refused.value).startswith("sysbench arguments: " + line)


def test_sysbench_passes_its_scripts_own_underscored_options() -> None:
    words = ("oltp_read_write", "--mysql_storage_engine=innodb", "--table_size=10", "--verbosity=4")
    assert _sysbench(words).validate().args == words[1:]


@pytest.mark.parametrize(
    ("kind", "fields", "rate"),
    [
        ("pgbench", {"args": ["-c", "2", "-R", "20"]}, 20.0),
        ("pgbench", {"args": ["-R20"]}, 20.0),
        ("pgbench", {"args": ["--ra=20"]}, None),  # ambiguous: refused by the run's check
        ("pgbench", {"args": ["--rate", "20"], "rate": 5}, 20.0),  # pgbench takes the last
        ("pgbench", {"rate": 5, "args": ["-c", "2"]}, 5.0),
        ("sysbench", {"script": "x.lua", "args": ["--rate=20"]}, 20.0),
        ("sysbench", {"script": "x.lua", "args": ["--rate=10", "--tx_rate=50"]}, 50.0),
        ("sysbench", {"script": "x.lua", "args": ["--rate=0"], "rate": 20}, None),  # unlimited
        ("sysbench", {"script": "x.lua", "args": ["--tx-rate=0"], "rate": 20}, 20.0),
    ],
)
def test_a_rate_in_the_tools_arguments_is_the_runs_offered_rate(
    kind: str, fields: dict[str, object], rate: float | None
) -> None:
    from iolab.workloads.registry import WORKLOADS

    params = WORKLOADS[kind].model.model_validate({"kind": kind, **fields}).model_dump()
    assert params["rate"] == rate  # stored with the run's parameters, where the diagnosis reads it


def test_the_rate_is_given_to_the_tool_once() -> None:
    from iolab.workloads.pgbench.options import PgbenchWorkload
    from iolab.workloads.pgbench.workload import run_args
    from iolab.workloads.sysbench.options import SysbenchWorkload
    from iolab.workloads.sysbench.workload import words

    assert run_args(PgbenchWorkload(kind="pgbench", rate=5, args=["-R", "20"])) == ("-R", "20")
    assert run_args(PgbenchWorkload(kind="pgbench", rate=5)) == ("-R", "5")
    found = words(SysbenchWorkload(kind="sysbench", script="x.lua", rate=5, args=["--rate=9"]))
    assert found == ("x.lua", "--rate=9")


def test_no_init_without_a_server_of_yours_is_refused_before_anything_is_made() -> None:
    options = PgbenchOptions("postgres", Layout((Path("/var/tmp"),)), ("-T", "3"), init=False)
    with pytest.raises(BadInput) as refused:
        options.validate()
    assert str(refused.value).startswith(
        "--no-init: 'without --dsn' is not allowed; the engine iolab provisions is empty"
    )
    words = ("oltp_read_write",)
    with pytest.raises(BadInput) as also:
        SysbenchOptions("mariadb", Layout((Path("/var/tmp"),)), words, init=False).validate()
    assert str(also.value) == str(refused.value)


def test_progress_that_counts_more_than_the_tool_fails_the_run() -> None:
    # --progress-timestamp's epoch seconds read as the run's: 2e12 transactions for 4,793
    lines = [Progress(1.7e9, 1.7e9, {"tps": 1258.0}), Progress(1.7e9 + 1, 1.0, {"tps": 1300.0})]
    with pytest.raises(Disagree) as failed:
        agree_progress("pgbench", lines, "tps", 4793, 1)
    assert str(failed.value).startswith(
        "pgbench: transactions 2.1386e+12 in its progress lines, 4,793 in its report; iolab "
        "stores no numbers it cannot match with the tool's own"
    )
    ok = [Progress(1.0, 1.0, {"tps": 1600.4}), Progress(2.0, 1.0, {"tps": 1597.1})]
    agree_progress("pgbench", ok, "tps", 4793, 1)  # two of three seconds: the rest is the tail


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


def _sysbench(
    words: tuple[str, ...], engine: str = "mariadb", cwd: Path = Path("/")
) -> SysbenchOptions:
    return SysbenchOptions(engine, Layout((Path("/var/tmp"),)), words, cwd=cwd)


needs_sysbench = pytest.mark.skipif(not SCRIPT_DIR.is_dir(), reason="sysbench is not installed")


@needs_sysbench
@pytest.mark.parametrize(
    ("words", "line"),
    [
        (("oltp_read_write", "--mysql-socket=/tmp/s"), "'--mysql-socket=/tmp/s' is not allowed"),
        (("oltp_read_write", "--pgsql-host=x"), "'--pgsql-host=x' is not allowed; iolab connects"),
        (("oltp_read_write", "--db-driver=mysql"), "'--db-driver=mysql' is not allowed"),
        (("oltp_read_write", "--mysql-password=pw"), "'--mysql-password=pw' is not allowed"),
        (
            ("oltp_read_write", "run"),
            "sysbench arguments: 'run' is not allowed; iolab runs prepare",
        ),
        (("oltp_read_write", "--histogram"), "'--histogram' is not allowed; iolab turns"),
        (("--threads=4",), "sysbench SCRIPT: missing; give the script first"),
        (("oltp_nonsense",), "sysbench SCRIPT: 'oltp_nonsense' is not allowed; give a Lua file"),
        (("/nonexistent/app.lua",), "sysbench SCRIPT: '/nonexistent/app.lua' is not allowed"),
        (("oltp_read_write", "--report-interval=0"), "--report-interval: '0' is not allowed"),
        (
            ("oltp_read_write", "--tables", "4"),
            "'--tables 4' is not allowed; sysbench takes --tables=4",
        ),
    ],
)
def test_sysbench_refuses_with_one_line(words: tuple[str, ...], line: str) -> None:
    with pytest.raises(BadInput) as refused:
        _sysbench(words).validate()
    assert line in str(refused.value)
    assert "\n" not in str(refused.value)


def test_sysbench_drives_servers_only() -> None:
    with pytest.raises(BadInput) as refused:
        _sysbench(("oltp_read_write",), engine="sqlite").validate()
    assert str(refused.value) == (
        "--engine: 'sqlite' is not allowed; sysbench drives mariadb or postgres only"
    )


@needs_sysbench
def test_sysbench_arguments_pass_through(tmp_path: Path) -> None:
    words = ("oltp_read_write", "--tables=4", "--table-size=100000", "--threads=8", "--time=30")
    checked = _sysbench(words).validate()
    assert checked.args == words[1:] and checked.builtin and checked.report_s == 1.0
    assert checked.script.path == SCRIPT_DIR / "oltp_read_write.lua"
    (tmp_path / "app.lua").write_text("function event() end\n")
    mine = _sysbench(("./app.lua", "--report-interval=5"), cwd=tmp_path).validate()
    assert not mine.builtin and mine.report_s == 5.0 and mine.script.text.startswith("function")


SYSBENCH_OUT = (
    "[ 1s ] thds: 2 tps: 379.74 qps: 7615.70 (r/w/o: 5335.28/1518.94/761.47) "
    "lat (ms,95%): 10.65 err/s: 0.00 reconn/s: 0.00\n"
    "[ 2s ] thds: 2 tps: 407.07 qps: 8155.45 (r/w/o: 5711.02/1629.29/815.15) "
    "lat (ms,95%): 12.08 err/s: 1.00 reconn/s: 0.00\n"
    """\
Latency histogram (values are in milliseconds)
       value  ------------- distribution ------------- count
       1.025 |**                                       1
       2.032 |*********                                3

SQL statistics:
    queries performed:
        read:                            7126
        write:                           2036
        other:                           1018
        total:                           10180
    transactions:                        509    (169.44 per sec.)
    queries:                             10180  (3388.79 per sec.)
    ignored errors:                      0      (0.00 per sec.)
    reconnects:                          0      (0.00 per sec.)

General statistics:
    total time:                          3.0037s
    total number of events:              509

Latency (ms):
         min:                                    1.08
         avg:                                   11.79
         max:                                   54.07
         99th percentile:                       27.17
         sum:                                 5999.65
"""
)


def test_sysbench_report_progress_and_histogram() -> None:
    n = sysbench_output.summary(SYSBENCH_OUT)
    assert n["tps"] == 169.44 and n["transactions"] == 509 and n["qps"] == 3388.79
    assert n["reads"] == 7126 and n["writes"] == 2036 and n["total_seconds"] == 3.0037
    assert n["latency_avg_ms"] == 11.79 and n["percentile"] == 99 and n["latency_pct_ms"] == 27.17
    lines = sysbench_output.progress(SYSBENCH_OUT)
    assert [(p.t, p.values["tps"], p.values["errors_per_s"]) for p in lines] == [
        (1.0, 379.74, 0.0),
        (2.0, 407.07, 1.0),
    ]
    h = sysbench_output.histogram(SYSBENCH_OUT)
    assert h.total == 4 and h.min_us == 1025 and h.max_us == 2032


def test_the_wal_device_example_is_four_cells_of_pgbench_arguments(tmp_path: Path) -> None:
    from iolab.config import experiment as config
    from iolab.workloads.interface import layout_of
    from iolab.workloads.pgbench.workload import pgbench_options

    text = (
        Path(__file__).resolve().parents[2] / "examples" / "pgbench-wal-device.toml"
    ).read_text()
    for name in ("data", "wal"):  # the devices under test: here two directories
        (tmp_path / name).mkdir()
        text = text.replace(f'"/mnt/{name}"', f'"{tmp_path / name}"')
    (tmp_path / "exp.toml").write_text(text)
    exp = config.load(tmp_path / "exp.toml")
    assert len(exp.cells) == 4
    assert {(c.values["layout"], c.values["clients"]) for c in exp.cells} == {
        (layout, clients) for layout in ("wal_beside", "wal_apart") for clients in (8, 32)
    }
    cell = next(c for c in exp.cells if c.values == {"layout": "wal_apart", "clients": 32})
    options = pgbench_options(cell.params, layout_of(cell.params, Path))
    assert options.run_args == ("-c", "32", "-j", "2", "-T", "30", "-b", "tpcb-like")
    assert options.init_args == ("-i", "-s", "10")
    assert options.layout.wal_dir == tmp_path / "wal"


EXPERIMENT = """
[experiment]
name = "scripts"
[workload]
{workload}
[layouts.here]
data_dirs = ["{data}"]
"""


def test_an_experiments_scripts_are_read_in_its_directory_which_names_no_cell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from iolab.config import experiment as config
    from iolab.results import cell_id
    from iolab.workloads.interface import WORKDIR, layout_of
    from iolab.workloads.pgbench.workload import pgbench_options
    from iolab.workloads.sysbench.workload import sysbench_options

    data = tmp_path / "data"
    data.mkdir()
    workloads = {
        "pgbench": 'kind = "pgbench"\nscript = ["app.sql@2"]\nargs = ["-f", "extra.sql"]',
        "sysbench": 'kind = "sysbench"\nscript = "bench.lua"',
    }
    for folder in ("exp", "copy", "elsewhere"):
        (tmp_path / folder).mkdir()
        for name in ("app.sql", "extra.sql", "bench.lua"):
            (tmp_path / folder / name).write_text(f"-- {name} of {folder}\n")
        for kind, workload in workloads.items():
            text = EXPERIMENT.format(workload=workload, data=data)
            (tmp_path / folder / f"{kind}.toml").write_text(text)
    monkeypatch.chdir(tmp_path / "elsewhere")  # where iolab runs: scripts of the same names

    for kind in workloads:
        (cell,) = config.load(Path(f"../exp/{kind}.toml")).cells
        (moved,) = config.load(tmp_path / "copy" / f"{kind}.toml").cells
        assert cell.workdir == str(tmp_path / "exp")
        # the directory is handed to the workload beside the parameters, not one of them: a
        # cell's name does not change with it (nor for files with no relative scripts)
        assert WORKDIR not in cell.params and cell.id == cell_id(cell.params) == moved.id
        assert cell.run_params == {**cell.params, WORKDIR: str(tmp_path / "exp")}

    def read(params: dict[str, object], kind: str) -> list[str]:
        layout = layout_of(params, Path)
        if kind == "pgbench":
            return [s.text for s in pgbench_options(params, layout).validate().scripts]
        return [sysbench_options(params, layout).validate().script.text]

    for folder in ("exp", "copy"):
        (pg,) = config.load(tmp_path / folder / "pgbench.toml").cells
        (sb,) = config.load(tmp_path / folder / "sysbench.toml").cells
        assert read(pg.run_params, "pgbench") == [
            f"-- app.sql of {folder}\n",
            f"-- extra.sql of {folder}\n",
        ]
        assert read(sb.run_params, "sysbench") == [f"-- bench.lua of {folder}\n"]
        assert (
            pgbench_options(pg.run_params, layout_of(pg.params, Path)).workdir == tmp_path / folder
        )
    # a single command's parameters name no directory: its own, where it runs
    assert read(pg.params, "pgbench") == [
        "-- app.sql of elsewhere\n",
        "-- extra.sql of elsewhere\n",
    ]
    assert read(sb.params, "sysbench") == ["-- bench.lua of elsewhere\n"]


def test_a_sysbench_histogram_short_of_its_count_fails_the_run() -> None:
    from iolab.workloads.sysbench.run import _agree

    numbers = sysbench_output.summary(SYSBENCH_OUT)
    found = sysbench_output.histogram(SYSBENCH_OUT)
    with pytest.raises(Disagree) as failed:
        _agree(numbers, found, sysbench_output.progress(SYSBENCH_OUT))
    assert str(failed.value).startswith(
        "sysbench: events 4 in its histogram, 509 in its report; iolab stores no numbers"
    )
