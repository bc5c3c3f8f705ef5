"""`iolab pgbench` and an experiment of kind "pgbench" end to end, as subprocesses: the run is
stored with the tool's numbers, its per-second series and the devices' series, and an
experiment over two WAL placements reports tps, the default metric, per cell; a server of the
user's is driven through a DSN, its password never stored; an experiment's scripts are read
beside its file, and the tool runs there, wherever `iolab run` is started. Real PostgreSQL, real
pgbench (scale 1, 2 s per run), Debian's sysbench."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from iolab.engines.interface import Layout, running
from iolab.engines.postgres import PORT, PostgresEngine
from iolab.workloads.sysbench.arguments import SCRIPT_DIR
from tests.conftest import make_dirs
from tests.integration.conftest import IOLAB, iolab

pytestmark = pytest.mark.integration

EXPERIMENT = """
[experiment]
name = "pgbench-wal"
repetitions = 1
order = "sequential"
[isolation]
drop_caches = false
settle_seconds = 0
[workload]
kind = "pgbench"
duration = 2
scale = 1
script = ["tpcb-like"]
[layouts.beside]
data_dirs = ["{data}"]
[layouts.apart]
data_dirs = ["{data}"]
wal_dir = "{wal}"
[matrix]
layout = ["beside", "apart"]
clients = [2]
"""


def test_iolab_pgbench_stores_the_tools_numbers_and_the_series_underneath(
    open_tmp: Path, results_db: Path
) -> None:
    data, wal = make_dirs(open_tmp, "data", "wal")
    done = iolab(
        "pgbench", "--data-dir", str(data), "--wal-dir", str(wal), "--init-args", "-s 1",
        "--json", "--", "-c", "2", "-j", "2", "-T", "2",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["status"] == "done" and doc["tool"] == "pgbench" and doc["tps"] > 0
    shown = json.loads(iolab("results", "show", str(doc["run"]), "--json").stdout)
    assert shown["summary"]["tps"] == doc["tps"]
    assert shown["summary"]["init_args"] == ["-i", "-s", "1"]
    keys = {(s["probe"], s["name"]) for s in doc["probes"]["series"]}
    assert ("pgbench", "tps") in keys and ("latency", "p99_ms") in keys
    assert any(probe == "device" for probe, _ in keys)
    assert list(data.iterdir()) == [] and list(wal.iterdir()) == []


def test_an_experiment_over_two_wal_placements_reports_tps(
    open_tmp: Path, results_db: Path
) -> None:
    data, wal = make_dirs(open_tmp, "data", "wal")
    exp = open_tmp / "exp.toml"
    exp.write_text(EXPERIMENT.format(data=data, wal=wal))
    ran = iolab("run", str(exp), "--json")
    assert ran.returncode == 0, ran.stderr
    report = iolab("report", "pgbench-wal", "--json")
    assert report.returncode == 0, report.stderr
    doc = json.loads(report.stdout)
    assert doc["metric"] == "tps"
    cells = {c["label"]: c for c in doc["cells"]}
    assert set(cells) == {"layout=beside clients=2", "layout=apart clients=2"}
    assert all(c["n"] == 1 and c["mean"] > 0 for c in cells.values())


SCRIPTS = """
[experiment]
name = "{name}"
repetitions = 1
[isolation]
drop_caches = false
settle_seconds = 0
[workload]
duration = 1
{workload}
[layouts.here]
data_dirs = ["data"]
"""
PGBENCH = """kind = "pgbench"
clients = 1
scale = 1
script = ["app.sql@1"]
args = ["-r", "-f", "extra.sql@1"]
"""
SYSBENCH = """kind = "sysbench"
engine = "postgres"
script = "bench.lua"
"""
# sysbench's require reads ./helper.lua, in the directory sysbench runs in
BENCH_LUA = """\
require("helper")
print("bench.lua of the {where}")
function thread_init()
  drv = sysbench.sql.driver()
  con = drv:connect()
end
function event()
  con:query("SELECT 1")
end
function thread_done()
  con:disconnect()
end
"""


def _only_run(db: Path, name: str) -> tuple[int, dict[str, object]]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT r.id, r.status, r.summary FROM runs r JOIN experiments e"
            " ON e.id = r.experiment_id WHERE e.name = ?",
            (name,),
        ).fetchall()
    ((run, status, summary),) = rows
    assert status == "done"
    return int(run), json.loads(summary)


@pytest.mark.skipif(not SCRIPT_DIR.is_dir(), reason="sysbench is not installed")
def test_an_experiments_scripts_are_read_beside_its_file_and_the_tool_runs_there(
    open_tmp: Path, results_db: Path
) -> None:
    here, elsewhere = make_dirs(open_tmp, "exp", "elsewhere")
    make_dirs(here, "data")
    # files of the same names where `iolab run` is started, doing other things
    for where, folder in (("experiment directory", here), ("run directory", elsewhere)):
        (folder / "app.sql").write_text(f"SELECT 'app.sql of the {where}';\n")
        (folder / "extra.sql").write_text(f"SELECT 'extra.sql of the {where}';\n")
        (folder / "bench.lua").write_text(BENCH_LUA.format(where=where))
        (folder / "helper.lua").write_text(f'print("helper.lua of the {where}")\n')
    for name, workload in (("scripts-pgbench", PGBENCH), ("scripts-sysbench", SYSBENCH)):
        (here / f"{name}.toml").write_text(SCRIPTS.format(name=name, workload=workload))
        ran = iolab("run", f"../exp/{name}.toml", "--json", cwd=elsewhere)
        assert ran.returncode == 0, ran.stderr

    run, summary = _only_run(results_db, "scripts-pgbench")
    app, extra = here / "app.sql", here / "extra.sql"
    assert summary["script_files"] == [
        {"given": "app.sql@1", "path": str(app), "sha256": _sha256(app)},
        {"given": "extra.sql@1", "path": str(extra), "sha256": _sha256(extra)},
    ]
    said = _log(run, "pgbench")  # -r: pgbench's latency of each statement, by its text
    assert "SELECT 'app.sql of the experiment directory';" in said, said
    assert "SELECT 'extra.sql of the experiment directory';" in said
    assert "run directory" not in said
    assert _log(run, "script app.sql") == app.read_text()

    run, summary = _only_run(results_db, "scripts-sysbench")
    script = here / "bench.lua"
    assert summary["script"] == {
        "given": "bench.lua",
        "path": str(script),
        "sha256": _sha256(script),
        "builtin": False,
    }
    said = _log(run, "sysbench")
    assert "bench.lua of the experiment directory" in said, said
    assert "helper.lua of the experiment directory" in said  # sysbench ran there
    assert "run directory" not in said


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _log(run: int, name: str) -> str:
    shown = iolab("results", "log", str(run), "--name", name)
    assert shown.returncode == 0, shown.stderr
    return shown.stdout


SECRET = "s3cret-Pw-never-stored"


def test_pgbench_on_a_server_of_yours_through_a_dsn(open_tmp: Path, results_db: Path) -> None:
    (data,) = make_dirs(open_tmp, "data")
    engine = PostgresEngine(Layout(data_dirs=(data,)))
    with running(engine):
        # the user's server, initialised by the user (pgbench -i drops pgbench_* tables)
        subprocess.run(
            [str(engine.bin_dir / "pgbench"), "-i", "-h", str(engine.socket_dir), "-p",
             str(PORT), "-U", engine.user.name, "iolab"],
            check=True, capture_output=True,
        )  # fmt: skip
        dsn = (
            f"postgresql://{engine.user.name}:{SECRET}@/iolab?host={engine.socket_dir}&port={PORT}"
        )
        refused = iolab("pgbench", "--dsn", dsn, "--", "-T", "1")
        assert refused.returncode == 2 and "give --no-init with it" in refused.stderr
        assert SECRET not in refused.stderr
        done = iolab("pgbench", "--dsn", dsn, "--no-init", "--json", "--", "-c", "2", "-T", "2")
        assert done.returncode == 0, done.stderr
        doc = json.loads(done.stdout)
        assert doc["status"] == "done" and doc["tps"] > 0 and doc["init_args"] is None
        assert (
            doc["dsn"]
            == f"postgresql://{engine.user.name}@/iolab?host={engine.socket_dir}&port={PORT}"
        )
        with engine.connect() as conn:  # what was there is there still
            row = conn.execute("SELECT count(*) FROM pgbench_accounts").fetchone()
        assert row is not None and row[0] == 100_000
    assert SECRET not in results_db.read_bytes().decode(errors="replace")


LOG = "iolab reads every transaction's line of the -l log it keeps itself"


@pytest.mark.parametrize(
    ("kind", "words", "why"),
    [
        # the spellings, each of which reached the tool: refused before anything is made
        ("pgbench", ("-T", "2", "--ho=/tmp/nonexist"), "iolab connects pgbench to the engine's"),
        ("pgbench", ("-T", "2", "--user=nobody"), "iolab connects pgbench to the engine's"),
        ("pgbench", ("-T", "2", "--aggregate=1"), LOG + "; leave out --aggregate-interval"),
        ("pgbench", ("-T", "2", "--progress-t"), "iolab puts the progress on the run's time"),
        ("pgbench", ("-T", "2", "--log-p="), LOG + "; leave out --log-prefix"),
        (
            "sysbench",
            ("oltp_read_write", "--time=2", "--mysql_socket=/tmp/x/my.sock"),
            "iolab connects sysbench to the engine's private socket",
        ),
    ],
)
def test_what_iolab_owns_is_refused_in_every_spelling_the_tool_takes(
    results_db: Path, kind: str, words: tuple[str, ...], why: str
) -> None:
    refused = iolab(kind, "--json", "--", *words)
    assert refused.returncode == 2, refused.stderr
    assert f"{kind} arguments: {words[-1]!r} is not allowed; {why}" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    assert refused.stdout == "" and not results_db.exists()  # nothing made, nothing stored


def test_no_init_without_a_server_of_yours_is_refused_before_provisioning(results_db: Path):
    for kind, words in (("pgbench", ("-T", "2")), ("sysbench", ("oltp_read_write",))):
        refused = iolab(kind, "--no-init", "--", *words)
        assert refused.returncode == 2, refused.stderr
        assert "--no-init: 'without --dsn' is not allowed; the engine iolab provisions is " in (
            refused.stderr
        )
        assert len(refused.stderr.strip().splitlines()) == 1


def test_a_rate_after_the_double_dash_is_the_runs_offered_rate(
    open_tmp: Path, results_db: Path
) -> None:
    (data,) = make_dirs(open_tmp, "data")
    done = iolab(
        "pgbench", "--data-dir", str(data), "--json", "--", "-c", "2", "-T", "3", "-R", "20"
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["run_args"] == ["-c", "2", "-T", "3", "-R", "20"]  # as given, -R once
    shown = json.loads(iolab("results", "show", str(doc["run"]), "--json").stdout)
    assert shown["params"]["rate"] == 20.0  # where the diagnosis reads an offered rate
    assert shown["diagnosis"]["limit"] == "rate", shown["diagnosis"]


def test_a_killed_pgbench_leaves_its_transaction_logs_to_the_next_run(
    open_tmp: Path, results_db: Path
) -> None:
    data, other = make_dirs(open_tmp, "data", "other")
    temp = Path(tempfile.gettempdir())
    first = subprocess.Popen(
        [*IOLAB, "pgbench", "--data-dir", str(data), "--", "-c", "1", "-T", "600"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        pattern = f".iolab-pgbenchlog-{first.pid}-*"
        while not list(temp.glob(pattern)) and first.poll() is None:
            time.sleep(0.2)
        (left,) = temp.glob(pattern)
        while not list(left.glob("pgbench_log.*")) and first.poll() is None:  # pgbench's log
            time.sleep(0.2)
    finally:
        first.kill()
        first.wait()
    assert left.is_dir()  # SIGKILL: nothing of iolab's ran to remove it
    beside = temp / "iolab-pgbench-mine"  # not iolab's name: never removed
    beside.mkdir(exist_ok=True)
    try:
        done = iolab("pgbench", "--data-dir", str(other), "--", "-c", "1", "-T", "1")
        assert done.returncode == 0, done.stderr
        assert not left.exists() and beside.is_dir()
        assert not list(temp.glob(".iolab-pgbenchlog-*"))  # the second run's went with it
    finally:
        beside.rmdir()
