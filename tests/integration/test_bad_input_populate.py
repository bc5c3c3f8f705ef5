"""Bad `iolab populate` options, as data: each row is an argument list and the option the
error must name. Each must exit 2 with one line naming it (the argument parser's refusals as
iolab's own), no traceback, nothing recorded, and nothing left in the data directory.
``{data}`` is an empty directory, ``{full}`` one holding a file, ``{wal}`` empty.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.bad_input import assert_refused, iolab

pytestmark = pytest.mark.integration

D = ["--data-dir", "{data}"]
SMALL = ["--rows", "100", "--connections", "2"]
PG = ["--engine", "postgres", *D, *SMALL]
MARIADB = ["--engine", "mariadb", *D, *SMALL]

# (id, argv, what the message names)
CASES: list[tuple[str, list[str], str]] = [
    ("rows-zero", [*D, "--rows", "0"], "--rows"),
    ("rows-negative", [*D, "--rows", "-5"], "--rows"),
    ("rows-float", [*D, "--rows", "1e30"], "--rows"),
    ("rows-word", [*D, "--rows", "many"], "--rows"),
    ("rows-too-many", [*D, "--rows", "1000000000000000"], "--data-dir"),
    ("rows-too-many-default-dir", ["--rows", "1000000000000000"], "the load needs at least"),
    ("bytes-too-many", [*D, "--bytes", "1PB"], "--data-dir"),
    ("bytes-word", [*D, "--bytes", "lots"], "--bytes"),
    ("bytes-zero", [*D, "--bytes", "0"], "--bytes"),
    ("rows-and-bytes", [*D, "--rows", "100", "--bytes", "1MB"], "--rows"),
    ("connections-zero", [*D, "--connections", "0"], "--connections"),
    ("rows-below-connections", [*D, "--rows", "4", "--connections", "8"], "--rows"),
    ("commit-every", [*D, *SMALL, "--commit-every", "0"], "--commit-every"),
    ("batch", [*D, *SMALL, "--batch", "0"], "--batch"),
    ("rate-inf-timed", [*D, "--duration", "3s", "--rate", "inf"], "--rate"),
    ("rate-nan-timed", [*D, "--duration", "3s", "--rate", "nan"], "--rate"),
    ("method", [*D, *SMALL, "--method", "bulk"], "--method"),
    ("method-copy-sqlite", [*D, *SMALL, "--method", "copy"], "--method"),
    ("mode", [*D, *SMALL, "--mode", "proc"], "--mode"),
    ("key", [*D, *SMALL, "--key", "uuid"], "--key"),
    ("engine", [*D, *SMALL, "--engine", "oracle"], "--engine"),
    ("engine-duckdb", [*D, *SMALL, "--engine", "duckdb"], "--engine"),
    ("files-zero", [*D, *SMALL, "--files", "0"], "--files"),
    ("files-word", [*D, *SMALL, "--files", "many"], "--files"),
    ("files-too-many-sqlite", [*D, *SMALL, "--files", "1000"], "--files"),
    ("data-dir-missing", ["--data-dir", "/nonexistent/iolab", *SMALL], "--data-dir"),
    ("data-dir-not-empty", ["--data-dir", "{full}", *SMALL], "--data-dir"),
    ("data-dir-a-file", ["--data-dir", "{full}/theirs.txt", *SMALL], "--data-dir"),
    ("data-dir-device", ["--data-dir", "device:nothere", *SMALL], "--data-dir"),
    ("wal-dir-sqlite", [*D, *SMALL, "--wal-dir", "{wal}"], "--wal-dir"),
    ("wal-dir-missing", [*D, *SMALL, "--wal-dir", "/nonexistent/iolab"], "--wal-dir"),
    ("temp-dir-missing", [*D, *SMALL, "--temp-dir", "/nonexistent/iolab"], "--temp-dir"),
    ("set-no-equals", [*D, *SMALL, "--set", "journal_mode"], "--set"),
    ("set-no-name", [*D, *SMALL, "--set", "=wal"], "--set"),
    ("sqlite-unknown", [*D, *SMALL, "--set", "shared_buffers=1GB"], "--set"),
    ("sqlite-value", [*D, *SMALL, "--set", "journal_mode=banana"], "--set journal_mode"),
    ("sqlite-page-size", [*D, *SMALL, "--set", "page_size=1000"], "--set page_size"),
    ("pg-banana", [*PG, "--set", "shared_buffers=banana"], "--set shared_buffers"),
    ("pg-range", [*PG, "--set", "work_mem=1"], "--set work_mem"),
    ("pg-enum", [*PG, "--set", "wal_level=most"], "--set wal_level"),
    ("pg-bool", [*PG, "--set", "fsync=perhaps"], "--set fsync"),
    ("pg-unknown", [*PG, "--set", "shared_bufers=1GB"], "shared_bufers"),
    ("pg-controlled", [*PG, "--set", "port=6000"], "--set"),
    ("pg-two-lines", [*PG, "--set", "work_mem=4MB\nfsync=off"], "--set work_mem"),
    ("pg-copy-server-mode", [*PG, "--method", "copy", "--mode", "server"], "--method"),
    (
        "mariadb-banana",
        [*MARIADB, "--set", "innodb_buffer_pool_size=banana"],
        "--set innodb_buffer_pool_size",
    ),
    (
        "mariadb-enum",
        [*MARIADB, "--set", "innodb_flush_method=foo"],
        "--set innodb_flush_method",
    ),
    ("mariadb-unsigned", [*MARIADB, "--set", "max_connections=-5"], "--set max_connections"),
    ("mariadb-unknown", [*MARIADB, "--set", "innodb_bufer=1"], "--set"),
    ("mariadb-layout", [*MARIADB, "--set", "datadir=/tmp"], "--set"),
    ("mariadb-copy", [*MARIADB, "--method", "copy"], "--method"),
    ("pg-bin-sqlite", [*D, *SMALL, "--pg-bin", "/usr/bin"], "--pg-bin"),
    (
        "sample-interval-short",
        [*D, *SMALL, "--sample-interval", "10ms"],
        "--sample-interval",
    ),
    ("sample-interval-word", [*D, *SMALL, "--sample-interval", "soon"], "--sample-interval"),
    ("dsn-garbage", ["--dsn", "not a dsn", *SMALL], "--dsn"),
    (
        "dsn-with-data-dir",
        ["--dsn", "postgresql://u@127.0.0.1:1/x", *D, *SMALL],
        "--data-dir",
    ),
    (
        "dsn-engine-mismatch",
        ["--dsn", "postgresql://u@127.0.0.1:1/x", "--engine", "mariadb", *SMALL],
        "--engine",
    ),
    ("unknown-option", [*D, "--rowz", "5"], "--rowz"),
    # seed 003's variations (issue 20)
    ("checkpoint-every-zero", [*D, *SMALL, "--checkpoint-every", "0"], "--checkpoint-every"),
    (
        "checkpoint-every-word",
        [*D, *SMALL, "--checkpoint-every", "soon"],
        "--checkpoint-every",
    ),
    ("presize-word", [*D, *SMALL, "--presize-wal", "lots"], "--presize-wal"),
    ("presize-zero", [*D, *SMALL, "--presize-wal", "0"], "--presize-wal"),
    ("presize-too-large", [*D, *SMALL, "--presize-wal", "1000TiB"], "--presize-wal"),
    (
        "presize-too-large-wal-dir",
        [*PG, "--wal-dir", "{wal}", "--presize-wal", "1000TiB"],
        "--presize-wal",
    ),
    (
        "presize-and-min-wal-size",
        [*PG, "--set", "min_wal_size=1GB", "--presize-wal", "64MiB"],
        "--set min_wal_size",
    ),
    (
        "presize-above-max-wal-size",
        [*PG, "--set", "max_wal_size=64MB", "--presize-wal", "1GiB"],
        "--set max_wal_size",
    ),
    (
        "presize-and-log-file-size",
        [*MARIADB, "--set", "innodb_log_file_size=1G", "--presize-wal", "64MiB"],
        "--set innodb_log_file_size",
    ),
    (
        "presize-sqlite-not-wal",
        [*D, *SMALL, "--set", "journal_mode=delete", "--presize-wal", "1MiB"],
        "--set journal_mode",
    ),
    (
        "presize-dsn",
        ["--dsn", "postgresql://u@127.0.0.1:1/x", "--presize-wal", "1MiB", *SMALL],
        "--presize-wal",
    ),
    ("steady-window", [*D, *SMALL, "--steady-window", "2"], "--steady-window"),
    ("steady-tolerance-zero", [*D, *SMALL, "--steady-tolerance", "0"], "--steady-tolerance"),
    (
        "steady-tolerance-big",
        [*D, *SMALL, "--steady-tolerance", "150"],
        "--steady-tolerance",
    ),
    # latency (--warmup, --duration, --rate), --sample-interval, and more of seed 003's options
    ("warmup-negative", [*D, *SMALL, "--warmup", "-5s"], "--warmup: '-5s' is not allowed"),
    ("warmup-word", [*D, *SMALL, "--warmup", "lots"], "--warmup: 'lots' is not allowed"),
    ("warmup-fraction", [*D, *SMALL, "--warmup", "0.5"], "--warmup: '0.5' is not allowed"),
    ("warmup-exponent", [*D, *SMALL, "--warmup", "1e3"], "--warmup: '1e3' is not allowed"),
    (
        "warmup-as-long-as-duration",
        [*D, "--connections", "2", "--duration", "5s", "--warmup", "5s"],
        "the warm-up is as long as the run (5 s) or longer",
    ),
    (
        "warmup-as-many-rows",
        [*D, *SMALL, "--warmup", "100"],
        "the warm-up is as long as the run (100 rows) or longer",
    ),
    ("duration-zero", [*D, "--duration", "0"], "--duration: '0' is not allowed"),
    ("duration-word", [*D, "--duration", "soon"], "--duration: 'soon' is not allowed"),
    ("duration-inf", [*D, "--duration", "inf"], "--duration: 'inf' is not allowed"),
    (
        "duration-and-rows",
        [*D, *SMALL, "--duration", "5s"],
        "give either rows/bytes or a duration, not both",
    ),
    (
        "duration-server-mode",
        [*D, "--duration", "5s", "--mode", "server"],
        "a duration needs mode client",
    ),
    ("rate-zero", [*D, *SMALL, "--rate", "0"], "--rate: 0.0 is not allowed"),
    ("rate-negative", [*D, *SMALL, "--rate", "-5"], "--rate: -5.0 is not allowed"),
    ("rate-inf", [*D, *SMALL, "--rate", "inf"], "--rate: inf is not allowed"),
    ("rate-nan", [*D, *SMALL, "--rate", "nan"], "--rate: nan is not allowed"),
    # before: a failed run recorded ("cannot convert float NaN to integer")
    ("rate-minus-zero", [*D, *SMALL, "--rate", "-0"], "--rate: -0.0 is not allowed"),
    ("rate-word", [*D, *SMALL, "--rate", "fast"], "--rate"),
    (
        "rate-server-mode",
        [*D, *SMALL, "--rate", "100", "--mode", "server"],
        "a rate needs mode client",
    ),
    (
        "sample-interval-zero",
        [*D, *SMALL, "--sample-interval", "0"],
        "--sample-interval: '0' is not allowed",
    ),
    (
        "sample-interval-inf",
        [*D, *SMALL, "--sample-interval", "inf"],
        "--sample-interval: 'inf' is not allowed",
    ),
    (
        "checkpoint-every-negative",
        [*D, *SMALL, "--checkpoint-every", "-1s"],
        "--checkpoint-every: '-1s' is not allowed",
    ),
    (
        "checkpoint-every-nan",
        [*D, *SMALL, "--checkpoint-every", "nan"],
        "--checkpoint-every: 'nan' is not allowed",
    ),
    (
        "presize-negative",
        [*D, *SMALL, "--presize-wal", "-1MiB"],
        "--presize-wal: '-1MiB' is not allowed",
    ),
    (
        "steady-window-negative",
        [*D, *SMALL, "--steady-window", "-3"],
        "--steady-window: -3 is not allowed",
    ),
    # --memory and --cpus (docs/caps.md): refused before a cgroup is made or a run recorded
    ("memory-word", [*PG, "--memory", "lots"], "--memory: 'lots' is not allowed"),
    ("memory-zero", [*PG, "--memory", "0"], "--memory: '0' is not allowed"),
    ("memory-below-shared-buffers", [*PG, "--memory", "64MiB"], "shared_buffers"),
    # the least cap stated is taken when given back (it walked: 1 -> 65MiB -> 72MiB -> 73MiB)
    ("memory-1-postgres", [*PG, "--memory", "1"], "give at least 73MiB"),
    ("memory-72MiB-postgres", [*PG, "--memory", "72MiB"], "give at least 73MiB"),
    # SQLite runs in iolab's process: below its floor the OOM killer ended iolab (exit 137)
    ("memory-1-sqlite", [*D, *SMALL, "--memory", "1"], "give at least 64MiB"),
    ("memory-1KiB-sqlite", [*D, *SMALL, "--memory", "1KiB"], "give at least 64MiB"),
    ("cpus-below-quota", [*PG, "--cpus", "0.001"], "give 0.01 CPUs or more"),
    ("cpus-1e-9", [*PG, "--cpus", "1e-9"], "give 0.01 CPUs or more"),
    (
        "memory-below-set-shared-buffers",
        [*PG, "--memory", "300MiB", "--set", "shared_buffers=256MB"],
        "give at least 320MiB",
    ),
    ("memory-below-buffer-pool", [*MARIADB, "--memory", "150MiB"], "innodb_buffer_pool"),
    (
        "memory-below-mariadb-beside-pool",  # killed at start under 176 MiB with a 16 MiB pool
        [*MARIADB, "--memory", "176MiB", "--set", "innodb_buffer_pool_size=16M"],
        "give at least 208MiB",
    ),
    ("memory-above-machine", [*PG, "--memory", "64TiB"], "this machine has"),
    ("cpus-zero", [*PG, "--cpus", "0"], "--cpus: '0' is not allowed"),
    ("cpus-negative", [*PG, "--cpus", "-1"], "--cpus: '-1' is not allowed"),
    ("cpus-word", [*PG, "--cpus", "half"], "--cpus: 'half' is not allowed"),
    ("cpus-nan", [*PG, "--cpus", "nan"], "--cpus: 'nan' is not allowed"),
    ("cpus-above-machine", [*PG, "--cpus", "4096"], "--cpus: 4096.0 is not allowed"),
    (
        "memory-with-dsn",
        ["--dsn", "postgresql://iolab@localhost/none", *SMALL, "--memory", "1GiB"],
        "not one named by --dsn",
    ),
    (
        "cpus-with-dsn",
        ["--dsn", "postgresql://iolab@localhost/none", *SMALL, "--cpus", "1"],
        "--cpus: 1.0 is not allowed",
    ),
    (
        "steady-tolerance-nan",
        [*D, *SMALL, "--steady-tolerance", "nan"],
        "--steady-tolerance: nan is not allowed",
    ),
]


@pytest.fixture
def dirs(open_tmp: Path) -> dict[str, Path]:
    made = {name: open_tmp / name for name in ("data", "wal", "full")}
    for path in made.values():
        path.mkdir(mode=0o755)
    (made["full"] / "theirs.txt").write_text("not iolab's")
    return made


@pytest.mark.parametrize(("argv", "names"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_bad_option_is_refused_before_any_run(
    dirs: dict[str, Path], tmp_path: Path, argv: list[str], names: str
) -> None:
    args = [a.format(**{k: str(v) for k, v in dirs.items()}) for a in argv]
    results = tmp_path / "results.db"
    done = iolab("populate", *args, cwd=tmp_path, results=results)
    assert_refused(done, names, results)
    assert list(dirs["data"].iterdir()) == []
    assert list(dirs["wal"].iterdir()) == []
    assert [p.name for p in dirs["full"].iterdir()] == ["theirs.txt"]


def test_the_size_check_names_the_estimate_and_the_free_space(
    dirs: dict[str, Path], tmp_path: Path
) -> None:
    results = tmp_path / "results.db"
    done = iolab(
        "populate",
        "--data-dir",
        str(dirs["data"]),
        "--rows",
        "1000000000000000",
        cwd=tmp_path,
        results=results,
    )
    assert_refused(done, f"--data-dir: '{dirs['data']}' is not allowed", results)
    assert "1,000,000,000,000,000 rows of 8.0 KiB each" in done.stderr
    assert "free; load fewer rows" in done.stderr


def test_a_presize_larger_than_the_free_space_names_the_directory(
    dirs: dict[str, Path], tmp_path: Path
) -> None:
    results = tmp_path / "results.db"
    done = iolab(
        "populate",
        *["--data-dir", str(dirs["data"]), "--rows", "100", "--presize-wal", "1000TiB"],
        cwd=tmp_path,
        results=results,
    )
    assert_refused(done, "--presize-wal: '1000.0 TiB' is not allowed", results)
    assert f"the log's directory {dirs['data']} has " in done.stderr
    assert "free; give a size that fits in it" in done.stderr


def test_the_table_has_enough_rows() -> None:
    assert len(CASES) >= 50
    assert len({c[0] for c in CASES}) == len(CASES)
