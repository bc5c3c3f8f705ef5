"""`iolab tpch --engine mariadb` end to end at SF 0.01 against a real mariadbd: every answer
checked, each table split over the data directories, page compression taking less room, a
query over its timeout reported as such, and nothing left behind.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import make_dirs, requires_mariadb
from tests.integration.conftest import SF, check_answers, iolab, placed_under, tpch_json

pytestmark = [pytest.mark.integration, requires_mariadb]

pytest.importorskip("pymysql")


def punch_hole_refused(directory: Path) -> str | None:
    """Why the filesystem of ``directory`` cannot punch holes into a file (None: it can).

    InnoDB's page compression saves room only by punching a hole for the unused end of each
    page it writes, so without that its files are as large as uncompressed ones.
    """
    probe = directory / "punch-hole-probe"
    try:
        with probe.open("wb") as f:
            f.write(os.urandom(256 * 1024))
            f.flush()
            os.fsync(f.fileno())
        before = probe.stat().st_blocks
        done = subprocess.run(
            ["fallocate", "--punch-hole", "--offset", "0", "--length", str(128 * 1024), str(probe)],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            return f"the filesystem of {directory} cannot punch holes: {done.stderr.strip()}"
        if probe.stat().st_blocks >= before:
            return f"the filesystem of {directory} kept the blocks of a punched hole"
        return None
    except FileNotFoundError:
        return "fallocate (util-linux) is not installed: cannot tell whether holes can be punched"
    finally:
        probe.unlink(missing_ok=True)


def test_mariadb_answers_all_22_with_each_table_split_over_two_dirs(
    cache: Path, open_tmp: Path, results_db: Path
) -> None:
    a, b, temp = make_dirs(open_tmp, "a", "b", "temp")
    doc = tpch_json(
        "--engine",
        "mariadb",
        "--data-dir",
        str(a),
        "--data-dir",
        str(b),
        "--files",
        "2",
        "--temp-dir",
        str(temp),
        "--loaders",
        "2",
    )
    check_answers(doc)
    assert doc["engine"] == "mariadb" and doc["mode"] == "cold" and doc["compression"] is False
    assert str(doc["engine_version"]).startswith(("10.", "11."))
    assert doc["loaders"] == 2
    # every table is hash-partitioned over both directories, so each holds about half of it
    in_a, in_b = placed_under(doc, a), placed_under(doc, b)
    assert in_a > 5_000_000 and in_b > 5_000_000, doc["placement"]
    assert 0.5 < in_a / in_b < 2
    assert doc["on_disk_bytes"] == in_a + in_b
    assert doc["load_seconds"] > 0 and doc["index_seconds"] > 0  # type: ignore[operator]
    settings = doc["settings"]
    assert isinstance(settings, dict)
    assert Path(settings["tmpdir"]).parent == temp
    for d in (a, b, temp):
        assert list(d.iterdir()) == []
    # the per-query results are stored with the run
    stored = json.loads(iolab("results", "show", str(doc["run"]), "--json").stdout)
    assert [q["answer_ok"] for q in stored["query_results"]] == [True] * 22


def test_page_compression_takes_less_room(cache: Path, open_tmp: Path, results_db: Path) -> None:
    reason = punch_hole_refused(open_tmp)
    if reason is not None:
        pytest.skip(reason)
    sizes = {}
    for setting in ("on", "off"):
        (data,) = make_dirs(open_tmp, setting)
        doc = tpch_json(
            "--engine",
            "mariadb",
            "--data-dir",
            str(data),
            "--compression",
            setting,
            "--queries",
            "1,6",
            "--warm",
        )
        assert [q["answer_ok"] for q in doc["queries"]] == [True, True]  # type: ignore[attr-defined]
        assert doc["compression"] is (setting == "on")
        assert doc["settings"]["innodb_compression_algorithm"] == "zlib"  # type: ignore[index]
        sizes[setting] = doc["on_disk_bytes"]
        assert doc["compression_ratio"] == pytest.approx(doc["data_bytes"] / doc["on_disk_bytes"])  # type: ignore[operator]
        assert list(data.iterdir()) == []
    # InnoDB reserves file space in extents; uncompressed files have it allocated, page
    # compressed ones hold only the compressed pages: measured 39.9 MB against 8.0 MB
    assert sizes["on"] < 0.5 * sizes["off"]  # type: ignore[operator]


def test_queries_over_the_timeout_are_reported_and_stored(
    cache: Path, open_tmp: Path, results_db: Path
) -> None:
    """A 1 ms timeout stops each query (the lightest of these takes 10 ms or more); the run
    goes on with the next one, and fails at the end with every query listed."""
    done = iolab(
        "tpch",
        "--engine",
        "mariadb",
        "--sf",
        SF,
        "--data-dir",
        str(open_tmp),
        "--timeout",
        "0.001",
        "--queries",
        "9,18,21",
        "--json",
    )
    assert done.returncode == 1, done.stderr
    doc = json.loads(done.stdout)
    assert doc["status"] == "failed"
    message = "timed out: stopped after 0.001 s"
    assert doc["error"] == f"3 of 3 queries failed: Q9: {message}; Q18: {message}; Q21: {message}"
    assert [(q["query"], q["seconds"], q["error"]) for q in doc["queries"]] == [
        (9, None, message),
        (18, None, message),
        (21, None, message),
    ]
    assert "error: 3 of 3 queries failed: Q9: timed out" in done.stderr
    assert "Traceback" not in done.stderr
    (run,) = json.loads(iolab("results", "list", "--json").stdout)
    assert run["status"] == "failed"
    stored = json.loads(iolab("results", "show", str(run["id"]), "--json").stdout)
    assert [q["error"] for q in stored["query_results"]] == [message] * 3
    assert list(open_tmp.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--set", "no_such_thing=1"], "--set: 'no_such_thing' is not allowed; 'no_such_thing' is"),
        (["--set", "datadir=/tmp"], "iolab sets datadir itself from the layout"),
        (["--loaders", "0"], "--loaders: 0 is not allowed; give 1 or more loader connections"),
    ],
)
def test_bad_input_is_refused_before_anything_is_recorded(
    cache: Path, open_tmp: Path, results_db: Path, args: list[str], message: str
) -> None:
    done = iolab("tpch", "--engine", "mariadb", "--data-dir", str(open_tmp), "--sf", SF, *args)
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr.replace("\n", " ")
    assert "Traceback" not in done.stderr
    assert list(open_tmp.iterdir()) == []
    assert not results_db.exists() or "tpch" not in iolab("results", "list").stdout
