"""What the `iolab tpch` tests of every engine share: one generated data cache for the session
(SF 0.01, made once by the first test that needs it), the CLI, and the checks of a power run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from iolab.engines.mariadb import MariaDBEngine
from iolab.engines.postgres import PostgresEngine

IOLAB = [sys.executable, "-m", "iolab"]
SF = "0.01"
# rows of each query's answer at SF 0.01 (the reference's)
ROWS = {1: 4, 2: 4, 3: 10, 9: 173, 11: 359, 13: 33, 16: 296, 22: 7}


@pytest.fixture(scope="session")
def tpch_cache_root() -> Iterator[Path]:
    """The TPC-H data cache the tests share, removed at the end of the session."""
    path = Path(tempfile.mkdtemp(prefix="iolab-test-cache-", dir="/var/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def cache(tpch_cache_root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """IOLAB_CACHE set to the shared cache for this test (and the commands it runs)."""
    monkeypatch.setenv("IOLAB_CACHE", str(tpch_cache_root))
    return tpch_cache_root


def iolab(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*IOLAB, *args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )


@contextmanager
def private_testbed(directory: Path, devices: str) -> Iterator[dict[str, str]]:
    """``devices`` (a [devices] TOML) up in a testbed of ``directory``'s own, taken down after;
    the environment that points iolab at it."""
    env = {"IOLAB_TESTBED_DIR": str(directory / "testbed")}
    spec = directory / "bed.toml"
    spec.write_text(devices)
    up = iolab("testbed", "up", str(spec), env=env)
    assert up.returncode == 0, up.stderr
    try:
        yield {**os.environ, **env}
    finally:
        down = iolab("testbed", "down", env=env)
        assert down.returncode == 0, down.stderr


def tpch_json(*args: str) -> dict[str, object]:
    """``iolab tpch --sf 0.01 --json ARGS``, which must succeed: its document."""
    done = iolab("tpch", "--sf", SF, "--json", *args)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert isinstance(doc, dict)
    return doc


def check_answers(doc: dict[str, object]) -> None:
    """A done power run of all 22 queries at SF 0.01, every answer checked and right."""
    assert doc["status"] == "done"
    queries = doc["queries"]
    assert isinstance(queries, list)
    assert [q["query"] for q in queries] == list(range(1, 23))
    assert all(q["answer_ok"] is True and q["error"] is None for q in queries), queries
    for q in queries:
        if q["query"] in ROWS:
            assert q["rows"] == ROWS[q["query"]]
    assert doc["queries_ok"] == 22
    assert doc["total_seconds"] == pytest.approx(sum(q["seconds"] for q in queries))
    assert 0 < doc["geomean_seconds"] <= max(q["seconds"] for q in queries)  # type: ignore[operator]
    assert doc["reference"] == "SF 0.01, checked against DuckDB's tpch_answers()"
    assert doc["data_rows"] == {
        "lineitem": 60175,
        "orders": 15000,
        "partsupp": 8000,
        "part": 2000,
        "customer": 1500,
        "supplier": 100,
        "nation": 25,
        "region": 5,
    }
    assert doc["data_bytes"] == 10670284  # tpchgen-cli's CSV at SF 0.01


def placed_under(doc: dict[str, object], directory: Path) -> int:
    """On-disk bytes of the run's data files under ``directory``."""
    placement = doc["placement"]
    assert isinstance(placement, dict)
    return sum(p["bytes"] for p in placement["data"] if Path(p["path"]).is_relative_to(directory))


def log_of_stop_restart_destroy(engine: PostgresEngine | MariaDBEngine) -> str:
    """The server's log through provision, start, stop(), start and destroy(), read through a
    descriptor opened before destroy() removed it."""
    try:
        engine.provision()
        engine.start()
        engine.stop()
        engine.start()
        assert engine.log_path is not None
        with engine.log_path.open() as log:
            engine.destroy()
            return log.read()
    finally:
        engine.destroy()
