"""`iolab pgbench` and an experiment of kind "pgbench" end to end, as subprocesses: the run is
stored with the tool's numbers, its per-second series and the devices' series, and an
experiment over two WAL placements reports tps, the default metric, per cell; a server of the
user's is driven through a DSN, its password never stored. Real PostgreSQL, real pgbench (scale
1, 2 s per run)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from iolab.engines.interface import Layout, running
from iolab.engines.postgres import PORT, PostgresEngine
from tests.conftest import make_dirs
from tests.integration.conftest import iolab

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
